#include "isolation/mst_discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device/canonical_commands.h"
#include "testing/fake_device_source.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::isolation {
namespace {

using testing::FakeDeviceSource;
using ::testing::HasSubstr;

struct DirCase {
  const char* name;
  std::vector<std::string> entries;
  const char* expected_path;
  bluefield::Generation generation;
};

class DiscoverFromDirTest : public ::testing::TestWithParam<DirCase> {};

TEST_P(DiscoverFromDirTest, PicksPrimaryDevice) {
  FakeDeviceSource src;
  src.Dir("/dev/mst", GetParam().entries);
  StatusOr<MstDeviceInfo> d = DiscoverMstDevice(src);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->path, GetParam().expected_path);
  EXPECT_EQ(d->generation, GetParam().generation);
  EXPECT_EQ(d->found_by, "/dev/mst");
  // /dev/mst sufficed: mst status is not run.
  EXPECT_EQ(src.runs(device::MstStatusArgv()), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DiscoverFromDirTest,
    ::testing::Values(DirCase{"Bf3BothPfs",
                              {"mt41692_pciconf0", "mt41692_pciconf0.1"},
                              "/dev/mst/mt41692_pciconf0",
                              bluefield::Generation::kBlueField3},
                      DirCase{"Bf3SecondPfListedFirst",
                              {"mt41692_pciconf0.1", "mt41692_pciconf0"},
                              "/dev/mst/mt41692_pciconf0",
                              bluefield::Generation::kBlueField3},
                      DirCase{"Bf2",
                              {"mt41686_pciconf0", "mt41686_pciconf0.1"},
                              "/dev/mst/mt41686_pciconf0",
                              bluefield::Generation::kBlueField2},
                      DirCase{"Bf1",
                              {"mt41682_pciconf0"},
                              "/dev/mst/mt41682_pciconf0",
                              bluefield::Generation::kBlueField1},
                      DirCase{"Bf3PreferredOverBf2",
                              {"mt41686_pciconf0", "mt41692_pciconf0"},
                              "/dev/mst/mt41692_pciconf0",
                              bluefield::Generation::kBlueField3},
                      DirCase{"OnlySecondPf",
                              {"mt41692_pciconf0.1"},
                              "/dev/mst/mt41692_pciconf0.1",
                              bluefield::Generation::kBlueField3},
                      DirCase{"IgnoresOtherDevices",
                              {"mt4125_pciconf0", "mt41692_pciconf0_cable_0",
                               "mt41692_pciconf0"},
                              "/dev/mst/mt41692_pciconf0",
                              bluefield::Generation::kBlueField3}),
    [](const ::testing::TestParamInfo<DirCase>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(DiscoverMstDeviceTest, FallsBackToMstStatus) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-mst-status-v-bf2.txt");
  FakeDeviceSource src;  // no /dev/mst
  src.Command(device::MstStatusArgv(), text);
  StatusOr<MstDeviceInfo> d = DiscoverMstDevice(src);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // The .1 PF is listed first; the first PF must still win.
  EXPECT_EQ(d->path, text_expected["first_pf_mst_device"].get<std::string>());
  EXPECT_EQ(d->generation, bluefield::Generation::kBlueField2);
  EXPECT_EQ(d->found_by, "mst status -v");
}

TEST(DiscoverMstDeviceTest, EmptyDirFallsBackToMstStatus) {
  FakeDeviceSource src;
  src.Dir("/dev/mst", {"mt4125_pciconf0"});
  src.Command(device::MstStatusArgv(),
              "DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA\n"
              "BlueField3(rev:1)  /dev/mst/mt41692_pciconf0  03:00.0  "
              "mlx5_0  net-p0  -1\n");
  StatusOr<MstDeviceInfo> d = DiscoverMstDevice(src);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->path, "/dev/mst/mt41692_pciconf0");
}

TEST(DiscoverMstDeviceTest, NothingFound) {
  FakeDeviceSource src;  // no /dev/mst, no mst tool
  StatusOr<MstDeviceInfo> d = DiscoverMstDevice(src);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(d.status().message(),
            "no BlueField MST device: /dev/mst unreadable (/dev/mst not "
            "found.); fallback `mst` is not installed (exit 127).");
}

TEST(DiscoverMstDeviceTest, MstStatusListsNoBlueField) {
  FakeDeviceSource src;
  src.Dir("/dev/mst", {});
  src.Command(device::MstStatusArgv(),
              "DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA\n"
              "ConnectX6DX(rev:0)  /dev/mst/mt4125_pciconf0  03:00.0\n");
  StatusOr<MstDeviceInfo> d = DiscoverMstDevice(src);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(),
              HasSubstr("/dev/mst holds no BlueField device (0 entries)"));
  EXPECT_THAT(d.status().message(),
              HasSubstr("`mst status -v` lists no BlueField device (1 "
                        "devices)"));
}

TEST(DiscoverMstDeviceTest, MstStatusFailures) {
  device::CommandResult failed;
  failed.exit_code = 1;
  FakeDeviceSource src;
  src.Result(device::MstStatusArgv(), failed);
  StatusOr<MstDeviceInfo> d = DiscoverMstDevice(src);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              HasSubstr("`mst status -v` exited with status 1"));

  device::CommandResult garbage;
  garbage.exit_code = 0;
  garbage.stdout_bytes = ToBytes("\x01\x02 nonsense\n");
  FakeDeviceSource src2;
  src2.Result(device::MstStatusArgv(), garbage);
  d = DiscoverMstDevice(src2);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              HasSubstr("no 'DEVICE_TYPE MST PCI' table header"));
}

}  // namespace
}  // namespace dpuaudit::isolation
