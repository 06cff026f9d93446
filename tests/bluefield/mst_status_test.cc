#include "bluefield/mst_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "isolation/shared_fixtures.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MstStatusTest, SharedBf2HostFixture) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-mst-status-v-bf2.txt");
  StatusOr<MstStatus> s = ParseMstStatus(text);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->devices.size(), text_expected["devices"].get<size_t>());
  // The listing shows the second PF (.1) first.
  const MstDevice& second = s->devices[0];
  const MstDevice& first = s->devices[1];
  EXPECT_EQ(second.mst_path, "/dev/mst/mt41686_pciconf0.1");
  EXPECT_EQ(first.mst_path,
            text_expected["first_pf_mst_device"].get<std::string>());
  EXPECT_EQ(first.pci, text_expected["first_pf_pci"].get<std::string>());
  EXPECT_EQ(first.device_type, "BlueField2");
  EXPECT_EQ(first.revision, 1);
  EXPECT_EQ(first.rdma, "mlx5_0");
  EXPECT_THAT(first.net, ElementsAre("ens7f0"));
  EXPECT_EQ(first.numa, 1);
  EXPECT_EQ(first.generation, Generation::kBlueField2);
}

TEST(MstStatusTest, ProjectFixtureBf3Arm) {
  auto text = testing::ReadTextFile(
      testing::ProjectFixturePath("bf3-zero-trust/out/mst-status-v.txt"));
  ASSERT_TRUE(text.has_value());
  StatusOr<MstStatus> s = ParseMstStatus(*text);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->devices.size(), 2u);
  const MstDevice& d = s->devices[1];
  EXPECT_EQ(d.device_type, "BlueField3");
  EXPECT_EQ(d.mst_path, "/dev/mst/mt41692_pciconf0");
  EXPECT_EQ(d.pci, "03:00.0");
  EXPECT_EQ(d.rdma, "mlx5_0");
  EXPECT_THAT(d.net, ElementsAre("pf0hpf", "en3f0pf0sf0", "p0"));
  EXPECT_EQ(d.numa, -1);
  EXPECT_EQ(d.generation, Generation::kBlueField3);
}

TEST(MstStatusTest, RowWithoutDriverColumns) {
  StatusOr<MstStatus> s = ParseMstStatus(
      "PCI devices:\n------------\n"
      "DEVICE_TYPE   MST                         PCI       RDMA  NET  NUMA\n"
      "BlueField3(rev:1)  /dev/mst/mt41692_pciconf0  0000:03:00.0  -1\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->devices.size(), 1u);
  EXPECT_EQ(s->devices[0].pci, "0000:03:00.0");
  EXPECT_TRUE(s->devices[0].rdma.empty());
  EXPECT_TRUE(s->devices[0].net.empty());
  EXPECT_EQ(s->devices[0].numa, -1);
}

TEST(MstStatusTest, TableWithNoDevicesAndLaterSection) {
  StatusOr<MstStatus> s = ParseMstStatus(
      "DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA\n\nCable devices:\n---\n"
      "mt41692_pciconf0_cable_0\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->devices.empty());
}

TEST(MstStatusTest, GenerationFromName) {
  EXPECT_EQ(GenerationFromMstName("/dev/mst/mt41692_pciconf0"),
            Generation::kBlueField3);
  EXPECT_EQ(GenerationFromMstName("mt41686_pciconf0.1"),
            Generation::kBlueField2);
  EXPECT_EQ(GenerationFromMstName("mt41682_pciconf0"), Generation::kBlueField1);
  EXPECT_EQ(GenerationFromMstName("mt4125_pciconf0"), Generation::kUnknown);
  EXPECT_EQ(GenerationModel(Generation::kBlueField3), "BlueField-3");
  EXPECT_EQ(GenerationName(Generation::kBlueField2), "BF2");
}

struct ErrorCase {
  const char* name;
  std::string text;
  const char* message;
};

class MstStatusErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(MstStatusErrorTest, Rejects) {
  StatusOr<MstStatus> s = ParseMstStatus(GetParam().text);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr(GetParam().message));
}

const std::string kHead = "DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, MstStatusErrorTest,
    ::testing::Values(
        ErrorCase{"Empty", "", "no 'DEVICE_TYPE MST PCI' table header"},
        ErrorCase{"NotVerbose",
                  "MST devices:\n------------\n/dev/mst/mt41692_pciconf0  - "
                  "PCI configuration cr-space access.\n",
                  "no 'DEVICE_TYPE MST PCI' table header"},
        ErrorCase{"BadHeader", "DEVICE_TYPE PCI MST\n", "line 1: table header"},
        ErrorCase{"BadPath", kHead + "BlueField3 /tmp/x 03:00.0\n",
                  "line 2: MST path '/tmp/x' is not under /dev/mst/"},
        ErrorCase{"BadPci", kHead + "BlueField3 /dev/mst/mt41692_pciconf0 zz\n",
                  "line 2: PCI address 'zz' is malformed"},
        ErrorCase{"BadRev", kHead + "BlueField3(rev:x) /dev/mst/m 03:00.0\n",
                  "line 2: device type 'BlueField3(rev:x)' has a malformed"},
        ErrorCase{"ShortRow", kHead + "BlueField3 /dev/mst/m\n",
                  "line 2: expected 'TYPE MST PCI ...'"},
        ErrorCase{"ExtraColumn",
                  kHead + "B /dev/mst/m 03:00.0 mlx5_0 net-a mlx5_9 -1\n",
                  "line 2: unexpected column 'mlx5_9'"}),
    [](const ::testing::TestParamInfo<ErrorCase>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace dpuaudit::bluefield
