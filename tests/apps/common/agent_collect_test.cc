#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apps/common/agent_collect.h"
#include "device/device_source.h"
#include "report/claims.h"

namespace dpuaudit::apps {
namespace {

TEST(AgentCollectTest, CapturesEvidenceForEveryFindingOfARecordedDevice) {
  auto src = device::NewRecordedDeviceSource(std::string(DPUAUDIT_SOURCE_DIR) +
                                             "/tests/fixtures/devices/bf3-zero-trust");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  Collection c = CollectFromDevice(**src);
  EXPECT_EQ(c.device.model, "BlueField-3");
  EXPECT_EQ(c.device.serial, "MT2334X00001");
  ASSERT_FALSE(c.findings.empty());
  for (const auto& f : c.findings) {
    EXPECT_EQ(f.verdict, Verdict::kPass) << f.id << ": " << f.reason;
    bool found = false;
    for (const auto& e : c.evidence) found = found || e.id == f.evidence_id;
    EXPECT_TRUE(found) << f.id << " names evidence " << f.evidence_id;
  }
  EXPECT_EQ(c.firmware["arm"]["atf_build"], "release");
  // The claims built from it are valid as signed reports require.
  auto claims = BuildClaims(c, "n", Base64UrlEncode(Bytes(32, 1)), 1);
  EXPECT_TRUE(report::ParseClaims(AsBytes(report::SerializeClaims(claims))).ok());
}

TEST(AgentCollectTest, AnEmptyDeviceGivesUnknownFindingsNotPasses) {
  char tmpl[] = "/tmp/dpuaudit-empty-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto src = device::NewRecordedDeviceSource(dir);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  Collection c = CollectFromDevice(**src);
  ASSERT_FALSE(c.findings.empty());
  for (const auto& f : c.findings) {
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << f.id;
    EXPECT_FALSE(f.reason.empty()) << f.id;
  }
  EXPECT_TRUE(c.device.serial.empty());
  EXPECT_TRUE(c.firmware["arm"].contains("error"));
}

}  // namespace
}  // namespace dpuaudit::apps
