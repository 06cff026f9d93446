// End-to-end: probes, identity and discovery over the recorded fixture
// folders tests/fixtures/devices/bf3-* through device::NewRecordedDeviceSource.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "device/canonical_commands.h"
#include "device/device_source.h"
#include "device/evidence.h"
#include "isolation/identity.h"
#include "isolation/probes.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::isolation {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<device::DeviceSource> Open(const std::string& node) {
  StatusOr<std::unique_ptr<device::DeviceSource>> src =
      device::NewRecordedDeviceSource(testing::ProjectFixturePath(node));
  EXPECT_TRUE(src.ok()) << node << ": " << src.status().ToString();
  return src.ok() ? std::move(src).value() : nullptr;
}

const Finding* ById(const std::vector<Finding>& fs, const std::string& id) {
  for (const Finding& f : fs) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

TEST(RecordedDevicesTest, ZeroTrustPassesEverything) {
  auto src = Open("bf3-zero-trust");
  ASSERT_NE(src, nullptr);
  StatusOr<MstDeviceInfo> mst = DiscoverMstDevice(*src);
  ASSERT_TRUE(mst.ok()) << mst.status().ToString();
  EXPECT_EQ(mst->path, "/dev/mst/mt41692_pciconf0");
  EXPECT_EQ(mst->generation, bluefield::Generation::kBlueField3);

  std::vector<Finding> findings = RunProbes(*src);
  ASSERT_EQ(findings.size(), ProbeCatalogue().size());
  for (const Finding& f : findings) {
    EXPECT_EQ(f.verdict, Verdict::kPass) << f.id << ": " << f.reason;
    EXPECT_FALSE(f.evidence_id.empty());
  }
  EXPECT_EQ(ById(findings, "host.privilege_level")->observed, "RESTRICTED");
  EXPECT_EQ(ById(findings, "dpu.operation_mode")->observed, "dpu");
  EXPECT_EQ(ById(findings, "dpu.operation_mode")->source,
            "mlxconfig -d /dev/mst/mt41692_pciconf0 -e q");

  DeviceIdentity id = CollectIdentity(*src, ProbeContext::Discover(*src));
  EXPECT_EQ(id.model, "BlueField-3");
  EXPECT_EQ(id.serial, "MT2334X00001");
  EXPECT_EQ(id.psid, "MT_0000009001");
  EXPECT_EQ(id.base_mac, "0200a1000001");
  EXPECT_EQ(id.part_number, "900-9D3B6-00CV-AA0_Ax");
  EXPECT_EQ(id.fw_version, "32.43.2402");
  EXPECT_TRUE(id.notes.empty());
}

TEST(RecordedDevicesTest, PrivilegedHostFailsHostProbesOnly) {
  auto src = Open("bf3-privileged-host");
  ASSERT_NE(src, nullptr);
  std::vector<Finding> findings = RunProbes(*src);
  ASSERT_EQ(findings.size(), ProbeCatalogue().size());
  for (const Finding& f : findings) {
    if (f.id.rfind("host.", 0) == 0) {
      EXPECT_EQ(f.verdict, Verdict::kFail) << f.id << ": " << f.reason;
    } else {
      EXPECT_EQ(f.verdict, Verdict::kPass) << f.id << ": " << f.reason;
    }
    if (f.id == "dpu.operation_mode") EXPECT_EQ(f.observed, "dpu");
  }
  const Finding* level = ById(findings, "host.privilege_level");
  ASSERT_NE(level, nullptr);
  EXPECT_EQ(level->observed, "PRIVILEGED");
  EXPECT_THAT(level->reason, HasSubstr("NV-config read fails"));
  EXPECT_EQ(ById(findings, "host.rshim_disabled")->observed, "FALSE");

  DeviceIdentity id = CollectIdentity(*src, ProbeContext::Discover(*src));
  EXPECT_EQ(id.serial, "MT2334X00002");
  EXPECT_EQ(id.psid, "MT_0000009002");
  EXPECT_EQ(id.base_mac, "0200a1000002");
}

// The captured evidence of a probe run replays to the same findings (what
// the verifier does with a report's evidence).
TEST(RecordedDevicesTest, EvidenceReplayGivesSameFindings) {
  auto src = Open("bf3-zero-trust");
  ASSERT_NE(src, nullptr);
  device::CapturingDeviceSource capture(*src);
  std::vector<Finding> first = RunProbes(capture);
  StatusOr<std::unique_ptr<device::DeviceSource>> replay =
      device::NewEvidenceDeviceSource(capture.evidence());
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  EXPECT_EQ(RunProbes(**replay), first);
  bool has_privhost = false;
  for (const device::Evidence& e : capture.evidence()) {
    has_privhost |=
        e.id == device::EvidenceIdForCommand(
                    device::MlxprivhostQueryArgv("/dev/mst/mt41692_pciconf0"));
  }
  EXPECT_TRUE(has_privhost);
}

}  // namespace
}  // namespace dpuaudit::isolation
