#include "firmware/inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/files.h"
#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "testing/fake_device_source.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::firmware {
namespace {

using testing::FakeDeviceSource;

constexpr char kMst[] = "/dev/mst/mt41692_pciconf0";

TEST(FirmwareTest, RecordedZeroTrustDevice) {
  StatusOr<std::unique_ptr<device::DeviceSource>> src =
      device::NewRecordedDeviceSource(
          testing::ProjectFixturePath("bf3-zero-trust"));
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  FirmwareInfo fw = CollectFirmware(**src, kMst);
  ASSERT_TRUE(fw.bfver_status.ok()) << fw.bfver_status.ToString();
  EXPECT_EQ(fw.bfver.atf_version, "v2.2(release):4.9.1-21-gfc25b08d9");
  EXPECT_EQ(fw.bfver.atf_build, bluefield::AtfBuild::kRelease);
  EXPECT_EQ(fw.bfver.bsp_version, "4.9.1.13442");
  EXPECT_EQ(fw.bfver_source, "bfver");
  EXPECT_EQ(fw.bfver_evidence_id,
            device::EvidenceIdForCommand(device::BfverArgv()));
  ASSERT_TRUE(fw.nic_fw_status.ok()) << fw.nic_fw_status.ToString();
  EXPECT_EQ(fw.nic_fw_version, "32.43.2402");
  EXPECT_EQ(fw.nic_fw_source, "flint -d /dev/mst/mt41692_pciconf0 q full");
}

TEST(FirmwareTest, SharedBf2FlintFwVersion) {
  SHARED_FIXTURE_OR_SKIP(text, "bmm-flint-q-full-bf2.txt");
  const std::string mst = "/dev/mst/mt41686_pciconf0";
  FakeDeviceSource src;
  src.Command(device::FlintQueryArgv(mst), text);
  FirmwareInfo fw = CollectFirmware(src, mst);
  EXPECT_EQ(fw.nic_fw_version, text_expected["FW Version"].get<std::string>());
  // bfver absent: fail closed with the reason.
  EXPECT_EQ(fw.bfver_status.code(), StatusCode::kNotFound);
  EXPECT_EQ(fw.bfver_status.message(), "`bfver` is not installed (exit 127)");
}

TEST(FirmwareTest, NoMstDevice) {
  FakeDeviceSource src;
  FirmwareInfo fw = CollectFirmware(src);
  EXPECT_EQ(fw.nic_fw_status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(fw.nic_fw_status.message(), "no MST device to query the NIC firmware on.");
  EXPECT_EQ(fw.mlxfw_status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fw.nic_fw_source.empty());
}

TEST(FirmwareTest, FailClosedReasons) {
  device::CommandResult timeout;
  timeout.exit_code = -1;
  timeout.timed_out = true;
  device::CommandResult truncated;
  truncated.exit_code = 0;
  truncated.truncated = true;
  truncated.stdout_bytes = ToBytes("FW Version:  32.1");
  FakeDeviceSource src;
  src.Result(device::BfverArgv(), timeout);
  src.Result(device::FlintQueryArgv(kMst), truncated);
  FirmwareInfo fw = CollectFirmware(src, kMst);
  EXPECT_EQ(fw.bfver_status.message(), "`bfver` timed out");
  EXPECT_EQ(fw.nic_fw_status.message(),
            "output of `flint -d /dev/mst/mt41692_pciconf0 q full` was "
            "truncated at 17 bytes");
  EXPECT_TRUE(fw.nic_fw_version.empty());

  device::CommandResult failed;
  failed.exit_code = 2;
  FakeDeviceSource src2;
  src2.Result(device::BfverArgv(), failed);
  src2.Command(device::FlintQueryArgv(kMst), "Image type:  FS4\n");
  fw = CollectFirmware(src2, kMst);
  EXPECT_EQ(fw.bfver_status.message(), "`bfver` exited with status 2");
  EXPECT_EQ(fw.nic_fw_status.message(),
            "flint output has no 'FW Version' line.");

  FakeDeviceSource src3;
  src3.Command(device::BfverArgv(), "garbage\n");
  src3.Command(device::FlintQueryArgv(kMst), "FW Version:  abc\n");
  fw = CollectFirmware(src3, kMst);
  EXPECT_EQ(fw.bfver_status.message(),
            "bfver output line 1: expected 'Key: value', got 'garbage'.");
  EXPECT_EQ(fw.nic_fw_status.message(),
            "flint 'FW Version' value 'abc' is not a dotted number.");
}

TEST(FirmwareTest, RecordedDeviceHasEverySource) {
  auto src = device::NewRecordedDeviceSource(testing::ProjectFixturePath("bf3-zero-trust"));
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  FirmwareInfo fw = CollectFirmware(**src, kMst);
  ASSERT_TRUE(fw.mlxfw_status.ok()) << fw.mlxfw_status.ToString();
  EXPECT_EQ(fw.mlxfw_source, "mlxfwmanager --query --query-format XML");
  EXPECT_EQ(fw.MlxfwCurrent(), "32.43.2402");
  EXPECT_EQ(fw.MlxfwAvailable(), "N/A");
  EXPECT_EQ(fw.psid, "MT_0000009001");
  ASSERT_TRUE(fw.sysfs_status.ok()) << fw.sysfs_status.ToString();
  ASSERT_EQ(fw.sysfs_fw_ver.size(), 2u);
  EXPECT_EQ(fw.sysfs_fw_ver[0].first, "mlx5_0");
  EXPECT_EQ(fw.sysfs_fw_ver[0].second, "32.43.2402");
  ASSERT_TRUE(fw.mlnx_release_status.ok());
  EXPECT_EQ(fw.mlnx_release, "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod");
  NicFwConsistency c = CheckNicFwConsistency(fw);
  ASSERT_TRUE(c.consistent.has_value()) << c.detail;
  EXPECT_TRUE(*c.consistent);
  EXPECT_EQ(c.detail,
            "flint 32.43.2402, sysfs mlx5_0 32.43.2402, sysfs mlx5_1 32.43.2402, "
            "mlxfwmanager 32.43.2402");
  nlohmann::json j = FirmwareJson(fw);
  EXPECT_EQ(j["nic"]["running"], "32.43.2402");
  EXPECT_EQ(j["arm"]["atf_build"], "release");
}

TEST(FirmwareTest, MixedVersionsAreInconsistentAndStagedIsShown) {
  auto src = device::NewRecordedDeviceSource(testing::ProjectFixturePath("bf3-fw-mixed"));
  ASSERT_TRUE(src.ok());
  FirmwareInfo fw = CollectFirmware(**src, kMst);
  NicFwConsistency c = CheckNicFwConsistency(fw);
  ASSERT_TRUE(c.consistent.has_value()) << c.detail;
  EXPECT_FALSE(*c.consistent);
  EXPECT_EQ(c.detail,
            "flint 32.43.1008, sysfs mlx5_0 32.43.2402, sysfs mlx5_1 32.43.2402, "
            "mlxfwmanager 32.43.1008");
  EXPECT_EQ(fw.MlxfwAvailable(), "32.43.2402");
}

TEST(FirmwareTest, ConsistencyNeedsTwoSources) {
  FakeDeviceSource src;
  src.Command(device::FlintQueryArgv(kMst), "FW Version:  32.43.2402\nPSID:  MT_1\n");
  FirmwareInfo fw = CollectFirmware(src, kMst);
  NicFwConsistency c = CheckNicFwConsistency(fw);
  EXPECT_FALSE(c.consistent.has_value());
  EXPECT_THAT(c.detail, ::testing::HasSubstr("fewer than two readable NIC firmware sources"));
  EXPECT_THAT(c.detail, ::testing::HasSubstr("mlxfwmanager: `mlxfwmanager` is not installed"));
}

TEST(FirmwareTest, MlxfwmanagerTextFallbackWhenXmlFails) {
  // The Dell BF2 sample (docs/bluefield.md#mlxfwmanager; ROM names with
  // spaces).
  auto text = ReadFileLimited(std::string(DPUAUDIT_SOURCE_DIR) +
                                  "/tests/fixtures/bluefield/mlxfwmanager-query-dell-bf2.txt",
                              65536);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const std::string mst = "/dev/mst/mt41686_pciconf0";
  FakeDeviceSource src;
  device::CommandResult failed;
  failed.exit_code = 1;
  src.Result(device::MlxfwmanagerQueryXmlArgv(), failed);
  src.Command(device::MlxfwmanagerQueryArgv(), ToString(*text));
  FirmwareInfo fw = CollectFirmware(src, mst);
  ASSERT_TRUE(fw.mlxfw_status.ok()) << fw.mlxfw_status.ToString();
  EXPECT_EQ(fw.mlxfw_source, "mlxfwmanager --query");
  EXPECT_EQ(fw.MlxfwCurrent(), "24.36.7506");
  ASSERT_NE(fw.mlxfw->Find("UEFI Virtio blk"), nullptr);
}

}  // namespace
}  // namespace dpuaudit::firmware
