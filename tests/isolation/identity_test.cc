#include "isolation/identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "device/canonical_commands.h"
#include "isolation/fake_device_source.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::isolation {
namespace {

using ::testing::Contains;
using testing::FakeDeviceSource;
using ::testing::HasSubstr;

ProbeContext Context(const std::string& path, Generation g) {
  ProbeContext ctx;
  ctx.mst = MstDeviceInfo{path, g, "/dev/mst"};
  return ctx;
}

TEST(IdentityTest, Bf2FromSharedFlintFixture) {
  SHARED_FIXTURE_OR_SKIP(text, "bmm-flint-q-full-bf2.txt");
  const std::string mst = "/dev/mst/mt41686_pciconf0";
  FakeDeviceSource src;
  src.Command(device::FlintQueryArgv(mst), text);
  src.File(kBootctlSerialPath, "MT2050X00614\n");
  DeviceIdentity id =
      CollectIdentity(src, Context(mst, Generation::kBlueField2));
  EXPECT_EQ(id.model, "BlueField-2");
  EXPECT_EQ(id.serial, "MT2050X00614");
  EXPECT_EQ(id.psid, text_expected["PSID"].get<std::string>());
  EXPECT_EQ(id.base_mac, text_expected["Base MAC"].get<std::string>());
  EXPECT_EQ(id.part_number, text_expected["Part Number"].get<std::string>());
  EXPECT_EQ(id.fw_version, text_expected["FW Version"].get<std::string>());
  EXPECT_TRUE(id.notes.empty());
}

TEST(IdentityTest, MissingPiecesStayEmptyWithNotes) {
  const std::string mst = "/dev/mst/mt41692_pciconf0";
  FakeDeviceSource src;  // no sn file, flint lacks Part Number
  src.Command(device::FlintQueryArgv(mst),
              "FW Version:            32.41.1000\n"
              "PSID:                  MT_0000000998\n"
              "Base MAC:              946dae4f296a            38\n");
  DeviceIdentity id =
      CollectIdentity(src, Context(mst, Generation::kBlueField3));
  EXPECT_EQ(id.model, "BlueField-3");
  EXPECT_EQ(id.serial, "");
  EXPECT_EQ(id.part_number, "");
  EXPECT_EQ(id.base_mac, "946dae4f296a");
  EXPECT_THAT(id.notes, Contains("Part Number: absent from `flint -d "
                                 "/dev/mst/mt41692_pciconf0 q full`"));
  EXPECT_THAT(id.notes, Contains(HasSubstr("serial: NOT_FOUND")));
}

TEST(IdentityTest, FlintFailureLeavesFlintFieldsEmpty) {
  const std::string mst = "/dev/mst/mt41692_pciconf0";
  device::CommandResult r;
  r.exit_code = 1;
  r.stderr_bytes = ToBytes("-E- HW access is disabled on the device.\n");
  FakeDeviceSource src;
  src.Result(device::FlintQueryArgv(mst), r);
  src.File(kBootctlSerialPath, "MT2334X00009\n");
  DeviceIdentity id =
      CollectIdentity(src, Context(mst, Generation::kBlueField3));
  EXPECT_EQ(id.model, "BlueField-3");
  EXPECT_EQ(id.serial, "MT2334X00009");
  EXPECT_TRUE(id.psid.empty());
  EXPECT_TRUE(id.fw_version.empty());
  EXPECT_THAT(id.notes,
              Contains("flint fields: `flint -d /dev/mst/mt41692_pciconf0 q "
                       "full` exited with status 1: -E- HW access is "
                       "disabled on the device."));
}

TEST(IdentityTest, NoMstDevice) {
  ProbeContext ctx;
  ctx.discovery_status = NotFoundError("none.");
  FakeDeviceSource src;
  DeviceIdentity id = CollectIdentity(src, ctx);
  EXPECT_TRUE(id.model.empty());
  EXPECT_TRUE(id.psid.empty());
  EXPECT_THAT(id.notes, Contains("model: no MST device (none.)"));
}

}  // namespace
}  // namespace dpuaudit::isolation
