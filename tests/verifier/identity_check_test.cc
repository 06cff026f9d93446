#include "verifier/identity_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;

report::DeviceInfo Bf3() {
  return {"BlueField-3", "MT2334X00001", "900-9D3B6-00CV-AA0",
          "MT_0000000884", "b8:3f:d2:00:00:00", "32.41.1000"};
}

TEST(IdentityCheckTest, IdenticalIdentityIsConsistent) {
  EXPECT_TRUE(CheckReportedIdentity(Bf3(), Bf3(), "").empty());
  EXPECT_TRUE(CheckReportedIdentity(Bf3(), Bf3(), "MT2334X00001").empty());
}

TEST(IdentityCheckTest, EveryDifferingFieldIsNamedWithBothValues) {
  report::DeviceInfo claimed = Bf3();
  claimed.serial = "MT9999X99999";
  claimed.psid = "MT_0000000001";
  auto reasons = CheckReportedIdentity(claimed, Bf3(), "");
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[0].rule_id, "device.identity");
  EXPECT_EQ(reasons[0].verdict, Verdict::kFail);
  EXPECT_EQ(reasons[0].expected, "evidence: serial \"MT2334X00001\"");
  EXPECT_EQ(reasons[0].observed, "report device.serial \"MT9999X99999\"");
  EXPECT_THAT(reasons[0].reason, HasSubstr("another DPU"));
  EXPECT_EQ(reasons[1].expected, "evidence: psid \"MT_0000000884\"");
  EXPECT_EQ(reasons[1].observed, "report device.psid \"MT_0000000001\"");
  for (const char* field : {"model", "part_number", "base_mac", "fw_version"}) {
    report::DeviceInfo c = Bf3();
    std::string* f = std::string(field) == "model"         ? &c.model
                     : std::string(field) == "part_number" ? &c.part_number
                     : std::string(field) == "base_mac"    ? &c.base_mac
                                                           : &c.fw_version;
    *f = "";
    auto r = CheckReportedIdentity(c, Bf3(), "");
    ASSERT_EQ(r.size(), 1u) << field;
    EXPECT_THAT(r[0].observed, HasSubstr("(none)")) << field;
    EXPECT_THAT(r[0].expected, HasSubstr(field)) << field;
  }
}

TEST(IdentityCheckTest, PinnedSerialMustBeTheEvidenceSerial) {
  // The report is consistent with its evidence, but it is another DPU than
  // the one enrolled.
  auto r = CheckReportedIdentity(Bf3(), Bf3(), "MT2334X00002");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].verdict, Verdict::kFail);
  EXPECT_EQ(r[0].expected, "enrolled serial \"MT2334X00002\"");
  EXPECT_EQ(r[0].observed, "evidence: serial \"MT2334X00001\"");
  // Evidence without a serial cannot show it is the enrolled DPU.
  report::DeviceInfo none = Bf3();
  none.serial = "";
  r = CheckReportedIdentity(none, none, "MT2334X00002");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(r[0].reason, HasSubstr("shows no serial"));
}

}  // namespace
}  // namespace dpuaudit::verifier
