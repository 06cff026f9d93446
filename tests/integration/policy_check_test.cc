// `dpuaudit policy check` on the real binary: every shipped policy is valid,
// its --json follows docs/schemas/policy-check.schema.json and names the
// SHA-256 of the exact file bytes; a defect is exit 1 naming the field, an
// unreadable file exit 2; `-` reads stdin; the human output fits 100 columns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using itest::Exec;
using itest::kBin;
using itest::kSrc;
using itest::ParseJson;
using itest::Proc;

class PolicyCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-policy-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  Proc Check(std::vector<std::string> args) {
    args.insert(args.begin(), {kBin + "/dpuaudit", "policy", "check"});
    return Exec(args);
  }
  std::string dir_;
};

TEST_F(PolicyCheckTest, ShippedPoliciesAreValidAndNameTheirHash) {
  for (const char* name : {"zero-trust", "zero-trust-bmc", "host-trusted-lab"}) {
    const std::string file = kSrc + "/policies/" + name + ".json";
    Proc p = Check({file, "--json"});
    ASSERT_EQ(p.exit_code, 0) << name << p.err;
    nlohmann::json j = ParseJson(p.out);
    EXPECT_EQ(j["name"], name);
    EXPECT_EQ(j["sha256"], Sha256Hex(AsBytes(itest::ReadAll(file)))) << name;
    EXPECT_FALSE(j["rules"].empty());
    for (const auto& r : j["rules"]) EXPECT_FALSE(r["remediation"].get<std::string>().empty());
    if (itest::HaveJsonschema()) {
      EXPECT_EQ(itest::SchemaErrors(dir_, "policy-check", p.out), "") << name;
    }
    // Human output: 100 columns, the rules and the hash.
    Proc text = Check({file});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_THAT(text.out, HasSubstr("host.privilege_level"));
    EXPECT_THAT(text.out, HasSubstr(j["sha256"].get<std::string>()));
    std::istringstream lines(text.out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(line.size(), 100u) << name << ": " << line;
    }
  }
  Proc bmc = Check({kSrc + "/policies/zero-trust-bmc.json", "--json"});
  nlohmann::json j = ParseJson(bmc.out);
  EXPECT_EQ(j["require"], nlohmann::json({"bmc", "irot"}));
  // --wide adds every rule's remediation.
  Proc wide = Check({kSrc + "/policies/zero-trust.json", "--wide"});
  EXPECT_THAT(wide.out, HasSubstr("mlxprivhost"));
}

TEST_F(PolicyCheckTest, DefectsExitOneNamingTheFieldUnreadableExitTwo) {
  auto policy = ParseJson(itest::ReadAll(kSrc + "/policies/zero-trust.json"));
  policy["rules"][1]["id"] = "host.no_such_rule";
  const std::string bad = dir_ + "/bad.json";
  ASSERT_TRUE(WriteFileAtomic(bad, AsBytes(policy.dump()), 0600).ok());
  Proc p = Check({bad});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("rules[1].id"));
  EXPECT_THAT(p.err, HasSubstr("host.no_such_rule"));
  EXPECT_EQ(p.out, "");
  Proc pj = Check({bad, "--json"});
  EXPECT_EQ(pj.exit_code, 1);
  EXPECT_EQ(ParseJson(pj.out)["valid"], false);
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "policy-check", pj.out), "");
    // The schema is not one that accepts anything.
    EXPECT_NE(itest::SchemaErrors(dir_, "policy-check", R"({"file":"x","valid":true})"), "");
  }
  // A duplicate key is a defect too (the strict parser the verifier uses).
  const std::string dup = dir_ + "/dup.json";
  ASSERT_TRUE(WriteFileAtomic(dup,
                              AsBytes(R"({"schema":"dpuaudit-policy/1","name":"a","name":"b"})"),
                              0600)
                  .ok());
  Proc d = Check({dup});
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_THAT(d.err, HasSubstr("name"));
  // Not there, or larger than a policy may be: exit 2.
  EXPECT_EQ(Check({dir_ + "/missing.json"}).exit_code, 2);
  const std::string big = dir_ + "/big.json";
  ASSERT_TRUE(WriteFileAtomic(big, AsBytes(std::string(80 * 1024, ' ')), 0600).ok());
  Proc b = Check({big});
  EXPECT_NE(b.exit_code, 0);
  EXPECT_FALSE(b.err.empty());
}

TEST_F(PolicyCheckTest, DashReadsStdin) {
  const std::string file = kSrc + "/policies/zero-trust.json";
  Proc p = itest::ExecWithStdin({kBin + "/dpuaudit", "policy", "check", "-", "--json"}, file);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(ParseJson(p.out)["file"], "stdin");
  EXPECT_EQ(ParseJson(p.out)["sha256"], Sha256Hex(AsBytes(itest::ReadAll(file))));
}

}  // namespace
}  // namespace dpuaudit
