#include "attest/firmware.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "isolation/fake_device_source.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::attest {
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
  EXPECT_EQ(fw.bfver.atf_build, AtfBuild::kRelease);
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
  EXPECT_EQ(fw.nic_fw_status.message(),
            "no MST device given for `flint q full`.");
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
            "flint 'FW Version' value is not a dotted number.");
}

}  // namespace
}  // namespace dpuaudit::attest
