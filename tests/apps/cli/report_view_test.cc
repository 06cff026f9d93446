// apps/cli/report_view.h: grouping, the EAR collateral and the releases
// named in refval reasons (issue 16 §5).
#include "apps/cli/report_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

const std::string kHex(64, 'a');

TEST(CollateralTest, AbsentInOlderEarsIsNotRecorded) {
  json payload = {{"dpuaudit", {{"node_id", "n"}, {"policy", {{"name", "zt"}}}}}};
  json c = CollateralJson(payload);
  EXPECT_EQ(c["recorded"], false);
  EXPECT_EQ(c["policy"]["name"], "zt");
  EXPECT_THAT(CollateralText(c), HasSubstr("collateral: not recorded"));
  EXPECT_EQ(CollateralJson(json())["recorded"], false);
}

TEST(CollateralTest, PresentMemberIsShownWithMatchedReleasesAndAnchors) {
  json payload = {{"dpuaudit",
                   {{"collateral",
                     {{"refvals",
                       {{"sha256", kHex},
                        {"matched", {{{"release", "bf-bundle-2.9.1-40"}, {"sha256", kHex}}}}}},
                      {"trust_anchors",
                       {{{"set", "ek-ca"}, {"sha256", kHex}},
                        {{"set", "dice-roots"}, {"sha256", "not-hex"}}}}}}}}};
  json c = CollateralJson(payload);
  EXPECT_EQ(c["recorded"], true);
  EXPECT_EQ(c["refvals_sha256"], kHex);
  ASSERT_EQ(c["matched"].size(), 1u);
  EXPECT_EQ(c["matched"][0]["release"], "bf-bundle-2.9.1-40");
  ASSERT_EQ(c["trust_anchors"].size(), 2u);
  EXPECT_TRUE(c["trust_anchors"][1]["sha256"].is_null());
  const std::string text = CollateralText(c);
  EXPECT_THAT(text, HasSubstr("reference values  sha256:" + kHex));
  EXPECT_THAT(text, HasSubstr("matched release   bf-bundle-2.9.1-40"));
  EXPECT_THAT(text, HasSubstr("trust anchors     ek-ca"));
}

TEST(CollateralTest, MalformedMembersAreSaidNotTrusted) {
  json c = CollateralJson({{"dpuaudit", {{"collateral", "x"}}}});
  EXPECT_EQ(c["recorded"], true);
  EXPECT_EQ(c["error"], "dpuaudit.collateral is not an object.");
  json d = CollateralJson(
      {{"dpuaudit", {{"collateral", {{"refvals", {{"sha256", "12"}, {"matched", {{{"x", 1}}}}}}}}}}});
  EXPECT_TRUE(d["refvals_sha256"].is_null());
  EXPECT_TRUE(d["matched"].empty());
  EXPECT_THAT(CollateralText(d), HasSubstr("malformed:"));
}

std::vector<FindingView> Sample() {
  return {{"a.pass", Verdict::kPass, "x", "x", "self-reported", "src-a", "ok", ""},
          {"b.fail", Verdict::kFail, "PRIVILEGED", "RESTRICTED", "corroborated", "mlxprivhost",
           "level is PRIVILEGED", ""},
          {"c.unknown", Verdict::kUnknown, "", "enabled", "self-reported", "mokutil", "no tool",
           "re-derived: fail"},
          {"d.fail", Verdict::kFail, "1", "0", "hardware-rooted", "tpm", "", ""}};
}

TEST(GroupedFindingsTest, FailThenUnknownThenPassWithTierAndSource) {
  const std::string t = GroupedFindingsText(Sample());
  const size_t f = t.find("fail (2):");
  const size_t u = t.find("unknown (1):");
  const size_t p = t.find("pass (1):");
  ASSERT_NE(f, std::string::npos) << t;
  ASSERT_NE(u, std::string::npos) << t;
  ASSERT_NE(p, std::string::npos) << t;
  EXPECT_LT(f, u);
  EXPECT_LT(u, p);
  EXPECT_THAT(t, HasSubstr("  b.fail: observed \"PRIVILEGED\", expected \"RESTRICTED\"\n"
                           "      tier corroborated, source mlxprivhost\n"
                           "      level is PRIVILEGED\n"));
  EXPECT_THAT(t, HasSubstr("c.unknown: observed \"\", expected \"enabled\" (re-derived: fail)"));
  EXPECT_LT(t.find("b.fail"), t.find("d.fail"));  // order kept within a group
  EXPECT_THAT(t.substr(p), HasSubstr("  a.pass\n"));
  json g = GroupedFindingsJson(Sample());
  EXPECT_EQ(g["fail"], json({"b.fail", "d.fail"}));
  EXPECT_EQ(g["unknown"], json({"c.unknown"}));
  EXPECT_EQ(g["pass"], json({"a.pass"}));
  EXPECT_THAT(GroupedFindingsText({}), HasSubstr("fail (0)\nunknown (0)\npass (0)\n"));
}

TEST(ReleasesNamedTest, FromRefvalReasonsOnlyEachOnce) {
  std::vector<report::DecisionReason> r(3);
  r[0].rule_id = "refval.arm_firmware";
  r[0].reason = "atf v2 matches release bf-bundle-2.9.1-40 (active by x); uefi u matches "
                "release bf-bundle-2.9.1-40 (active by x).";
  r[1].rule_id = "refval.os_boot";
  r[1].reason = "os:kernel sha384 ab matches release ubuntu-22.04-5.15.0-1035-bluefield.";
  r[2].rule_id = "host.privilege_level";
  r[2].reason = "matches release nope";
  EXPECT_EQ(ReleasesNamedInReasons(r),
            (std::vector<std::string>{"bf-bundle-2.9.1-40", "ubuntu-22.04-5.15.0-1035-bluefield"}));
}

}  // namespace
}  // namespace dpuaudit::apps
