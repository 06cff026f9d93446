#include "bluefield/bfver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "isolation/shared_fixtures.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::HasSubstr;

// BF3 sample (sigcomm26 README; docs/bluefield.md#bfver), without the prompt.
const char kDocSample[] =
    "--/dev/mmcblk0boot1\n"
    "BlueField ATF version: v2.2(release):4.9.1-21-gfc25b08d9\n"
    "BlueField UEFI version: 4.9.1-36-g0c3239837a\n"
    "BlueField BSP version: 4.9.1.13442\n"
    "\n"
    "OS Release Version: bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod\n";

TEST(BfverTest, DocSample) {
  StatusOr<BfverInfo> b = ParseBfver(kDocSample);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->boot_device, "/dev/mmcblk0boot1");
  EXPECT_EQ(b->atf_version, "v2.2(release):4.9.1-21-gfc25b08d9");
  EXPECT_EQ(b->atf_build, AtfBuild::kRelease);
  EXPECT_EQ(b->uefi_version, "4.9.1-36-g0c3239837a");
  EXPECT_EQ(b->bsp_version, "4.9.1.13442");
  EXPECT_EQ(b->os_release_label, "OS Release Version");
  EXPECT_EQ(b->os_release, "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod");
  EXPECT_TRUE(b->other.empty());
}

TEST(BfverTest, ProjectFixtures) {
  for (const char* node : {"bf3-zero-trust", "bf3-privileged-host"}) {
    auto text = testing::ReadTextFile(
        testing::ProjectFixturePath(std::string(node) + "/out/bfver.txt"));
    ASSERT_TRUE(text.has_value()) << node;
    EXPECT_EQ(*text, kDocSample) << node;
    StatusOr<BfverInfo> b = ParseBfver(*text);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b->atf_build, AtfBuild::kRelease);
  }
}

TEST(BfverTest, DebugAtfIsFlagged) {
  StatusOr<BfverInfo> b = ParseBfver(
      "--/dev/mmcblk0boot0\n"
      "BlueField ATF version: v2.2(debug):4.9.1-21-gfc25b08d9\n");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->atf_build, AtfBuild::kDebug);
  EXPECT_EQ(AtfBuildName(b->atf_build), "debug");
  EXPECT_TRUE(b->uefi_version.empty());
  EXPECT_TRUE(b->os_release_label.empty());
}

TEST(BfverTest, YoctoNoDistroAndUnknownKeys) {
  StatusOr<BfverInfo> y = ParseBfver(
      "BlueField ATF version: v2.2(release):x\r\n"
      "Yocto Release Version: 3.1\r\n");
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->os_release_label, "Yocto Release Version");
  EXPECT_EQ(y->os_release, "3.1");
  EXPECT_TRUE(y->boot_device.empty());

  StatusOr<BfverInfo> n = ParseBfver(
      "BlueField ATF version: v2.2:x\nNo distribution version file present\n"
      "BlueField SBIOS version: 1.0\n");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->atf_build, AtfBuild::kUnknown);
  EXPECT_TRUE(n->os_release.empty());
  ASSERT_EQ(n->other.size(), 1u);
  EXPECT_EQ(n->other[0].first, "BlueField SBIOS version");
}

struct ErrorCase {
  const char* name;
  std::string text;
  const char* message;
};

class BfverErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(BfverErrorTest, Rejects) {
  StatusOr<BfverInfo> b = ParseBfver(GetParam().text);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(b.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BfverErrorTest,
    ::testing::Values(
        ErrorCase{"Empty", "", "bfver output: no 'BlueField ATF version' line"},
        ErrorCase{"NoAtf", "--/dev/mmcblk0boot1\nBlueField BSP version: 1\n",
                  "no 'BlueField ATF version' line"},
        ErrorCase{"Garbage", "Permission denied\n",
                  "line 1: expected 'Key: value', got 'Permission denied'"},
        ErrorCase{"TwoPartitions",
                  std::string(kDocSample) + "--/dev/mmcblk0boot0\n",
                  "line 7: a second boot partition section"},
        ErrorCase{"RepeatedAtf",
                  "BlueField ATF version: a\nBlueField ATF version: b\n",
                  "line 2: 'BlueField ATF version' repeated"},
        ErrorCase{"RepeatedOs",
                  "BlueField ATF version: a\nOS Release Version: x\n"
                  "Yocto Release Version: y\n",
                  "line 3: OS release repeated"},
        ErrorCase{"EmptyValue", "BlueField ATF version:\n",
                  "line 1: 'BlueField ATF version' has an empty value"},
        ErrorCase{"Nul", std::string("BlueField ATF version: a\0\n", 26),
                  "line 1: contains a NUL byte"}),
    [](const ::testing::TestParamInfo<ErrorCase>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace dpuaudit::bluefield
