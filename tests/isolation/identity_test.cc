#include "isolation/identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "device/canonical_commands.h"
#include "testing/fake_device_source.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::isolation {
namespace {

using ::testing::Contains;
using testing::FakeDeviceSource;
using ::testing::HasSubstr;

ProbeContext Context(const std::string& path, bluefield::Generation g) {
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
      CollectIdentity(src, Context(mst, bluefield::Generation::kBlueField2));
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
      CollectIdentity(src, Context(mst, bluefield::Generation::kBlueField3));
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
      CollectIdentity(src, Context(mst, bluefield::Generation::kBlueField3));
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

// ---- lspci VPD fallback ----

constexpr char kMstStatusBf2[] =
    "MST modules:\n------------\n    MST PCI configuration module loaded\n"
    "PCI devices:\n------------\n"
    "DEVICE_TYPE        MST                          PCI      RDMA   NET  "
    " NUMA\n"
    "BlueField2(rev:1)  /dev/mst/mt41686_pciconf0.1  e2:00.1  mlx5_1 net-p1 "
    "-1\n"
    "BlueField2(rev:1)  /dev/mst/mt41686_pciconf0    e2:00.0  mlx5_0 net-p0 "
    "-1\n";

constexpr char kVpd[] =
    "e2:00.0 Ethernet controller: Mellanox\n"
    "\tCapabilities: [48] Vital Product Data\n"
    "\t\tRead-only fields:\n"
    "\t\t\t[PN] Part number: MBF2M516A-EEEOT\n"
    "\t\t\t[SN] Serial number: MT2050X00614\n"
    "\t\tEnd\n";

TEST(IdentityLspciTest, FillsMissingSerialAndPartKeepsNotes) {
  const std::string mst = "/dev/mst/mt41686_pciconf0";
  FakeDeviceSource src;  // no sn file; flint lacks Part Number
  src.Command(device::FlintQueryArgv(mst), "PSID:    MT_0000000768\n");
  src.Command(device::MstStatusArgv(), kMstStatusBf2);
  src.Command(device::LspciVpdArgv("e2:00.0"), kVpd);
  DeviceIdentity id =
      CollectIdentity(src, Context(mst, bluefield::Generation::kBlueField2));
  EXPECT_EQ(id.serial, "MT2050X00614");
  EXPECT_EQ(id.part_number, "MBF2M516A-EEEOT");
  EXPECT_EQ(id.psid, "MT_0000000768");
  EXPECT_THAT(id.notes, Contains(HasSubstr("serial: NOT_FOUND")));
  EXPECT_THAT(id.notes, Contains(HasSubstr("Part Number: absent from")));
  EXPECT_THAT(id.notes,
              Contains("serial: from VPD of `lspci -vvv -s e2:00.0`"));
  EXPECT_THAT(id.notes,
              Contains("part number: from VPD of `lspci -vvv -s e2:00.0`"));
}

TEST(IdentityLspciTest, FlintPartNumberIsNotOverwritten) {
  SHARED_FIXTURE_OR_SKIP(text, "bmm-flint-q-full-bf2.txt");
  const std::string mst = "/dev/mst/mt41686_pciconf0";
  FakeDeviceSource src;  // serial missing only
  src.Command(device::FlintQueryArgv(mst), text);
  src.Command(device::MstStatusArgv(), kMstStatusBf2);
  src.Command(device::LspciVpdArgv("e2:00.0"), kVpd);
  DeviceIdentity id =
      CollectIdentity(src, Context(mst, bluefield::Generation::kBlueField2));
  EXPECT_EQ(id.serial, "MT2050X00614");
  EXPECT_EQ(id.part_number, "MBF2H536C-CECO_Ax_Bx");  // flint wins
}

TEST(IdentityLspciTest, NotRunWhenNothingMissing) {
  const std::string mst = "/dev/mst/mt41686_pciconf0";
  FakeDeviceSource src;
  src.File(kBootctlSerialPath, "MT1\n");
  src.Command(device::FlintQueryArgv(mst), "Part Number:   P1\n");
  CollectIdentity(src, Context(mst, bluefield::Generation::kBlueField2));
  EXPECT_EQ(src.runs(device::MstStatusArgv()), 0);
}

struct LspciFailure {
  const char* name;
  bool mst_status;       // configure `mst status -v`
  std::string mst_path;  // device to look up
  std::string lspci;     // lspci output; "" = not installed
  const char* note;
};

class IdentityLspciFailureTest
    : public ::testing::TestWithParam<LspciFailure> {};

TEST_P(IdentityLspciFailureTest, LeavesFieldsEmptyWithNote) {
  const LspciFailure& c = GetParam();
  FakeDeviceSource src;
  if (c.mst_status) src.Command(device::MstStatusArgv(), kMstStatusBf2);
  if (!c.lspci.empty()) src.Command(device::LspciVpdArgv("e2:00.0"), c.lspci);
  DeviceIdentity id =
      CollectIdentity(src, Context(c.mst_path, bluefield::Generation::kBlueField2));
  EXPECT_EQ(id.serial, "");
  EXPECT_EQ(id.part_number, "");
  EXPECT_THAT(id.notes, Contains(HasSubstr(c.note)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, IdentityLspciFailureTest,
    ::testing::Values(
        LspciFailure{"MstStatusMissing", false, "/dev/mst/mt41686_pciconf0",
                     "", "lspci VPD: no PCI address: `mst` is not installed"},
        LspciFailure{"DeviceNotListed", true, "/dev/mst/mt41692_pciconf0", "",
                     "lspci VPD: no PCI address: /dev/mst/mt41692_pciconf0 "
                     "is not listed by `mst status -v`"},
        LspciFailure{"LspciMissing", true, "/dev/mst/mt41686_pciconf0", "",
                     "lspci VPD: `lspci` is not installed (exit 127)"},
        LspciFailure{"EmptyVpd", true, "/dev/mst/mt41686_pciconf0",
                     "e2:00.0 x\n\tCapabilities: [48] Vital Product Data\n"
                     "\t\tEnd\n",
                     "lspci VPD: the Vital Product Data block is empty "
                     "(`lspci -vvv -s e2:00.0`)"},
        LspciFailure{"Unparseable", true, "/dev/mst/mt41686_pciconf0",
                     "e2:00.0 x\n\tCapabilities: [48] Vital Product Data\n"
                     "\t\t[S] bad\n",
                     "lspci VPD: lspci output line 3"}),
    [](const ::testing::TestParamInfo<LspciFailure>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace dpuaudit::isolation
