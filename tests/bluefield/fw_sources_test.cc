#include "bluefield/fw_sources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bluefield/version.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::bluefield {
namespace {

TEST(SysfsFwVerTest, AcceptsKernelFormat) {
  // docs/bluefield.md#sysfs-fw-ver: "%d.%d.%04d", e.g. 32.43.2402.
  for (const auto& [text, want] :
       std::vector<std::pair<std::string, std::string>>{
           {"32.43.2402\n", "32.43.2402"},
           {"32.43.2402", "32.43.2402"},
           {"24.35.0020\n", "24.35.0020"},
           {"16.0.65535\n", "16.0.65535"}}) {
    StatusOr<std::string> v = ParseSysfsFwVer(text);
    ASSERT_TRUE(v.ok()) << text << ": " << v.status().ToString();
    EXPECT_EQ(*v, want);
    EXPECT_TRUE(ParseComparableVersion("nic-fw", *v).ok()) << *v;
  }
}

TEST(SysfsFwVerTest, ProjectFixture) {
  auto text = testing::ReadTextFile(testing::ProjectFixturePath(
      "bf3-zero-trust/fs/sys/class/infiniband/mlx5_0/fw_ver"));
  ASSERT_TRUE(text.has_value());
  StatusOr<std::string> v = ParseSysfsFwVer(*text);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "32.43.2402");
}

TEST(SysfsFwVerTest, RejectsAnythingElse) {
  const std::string three =
      "is not three dot-separated fields (major.minor.subminor).";
  const std::string digits = "has a field that is not 1 to 9 decimal digits.";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "fw_ver '' " + three},
      {"\n", "fw_ver '?' " + three},
      {"32.43", "fw_ver '32.43' " + three},
      {"32.43.2402.1", "fw_ver '32.43.2402.1' " + three},
      {"32.43.240",
       "fw_ver '32.43.240' has a subminor of fewer than 4 "
       "digits (the kernel prints %04d)."},
      {"32.43.2402\n\n",
       "fw_ver '32.43.2402?"
       "?' " +
           digits},
      {"32.43.2402 \n", "fw_ver '32.43.2402 ?' " + digits},
      {" 32.43.2402", "fw_ver ' 32.43.2402' " + digits},
      {"32..2402", "fw_ver '32..2402' " + digits},
      {"32.4a.2402", "fw_ver '32.4a.2402' " + digits},
      {"-1.43.2402", "fw_ver '-1.43.2402' " + digits},
      {"32.43.2402 (MT_0000000768)",
       "fw_ver '32.43.2402 (MT_0000000768)' " + digits},
      {"1234567890.1.0001", "fw_ver '1234567890.1.0001' " + digits},
      {std::string("32.43.2402\0", 11), "fw_ver '32.43.2402?' " + digits},
  };
  for (const auto& [text, message] : cases) {
    StatusOr<std::string> v = ParseSysfsFwVer(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(v.status().message(), message);
  }
}

TEST(MlnxReleaseTest, AcceptsOneLine) {
  // docs/bluefield.md#mlnx-release (bfver "OS Release Version") and the cheat
  // sheet.
  for (const auto& [text, want] :
       std::vector<std::pair<std::string, std::string>>{
           {"bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod\n",
            "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod"},
           {"DOCA_1.3.0_BSP_3.9.0_Ubuntu_20.04-6.signed",
            "DOCA_1.3.0_BSP_3.9.0_Ubuntu_20.04-6.signed"},
           {"x", "x"}}) {
    StatusOr<std::string> v = ParseMlnxRelease(text);
    ASSERT_TRUE(v.ok()) << text << ": " << v.status().ToString();
    EXPECT_EQ(*v, want);
  }
}

TEST(MlnxReleaseTest, ProjectFixture) {
  auto text = testing::ReadTextFile(
      testing::ProjectFixturePath("bf3-zero-trust/fs/etc/mlnx-release"));
  ASSERT_TRUE(text.has_value());
  StatusOr<std::string> v = ParseMlnxRelease(*text);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod");
}

TEST(MlnxReleaseTest, RejectsAnythingElse) {
  const std::string tail =
      "; expected one line of printable ASCII without spaces.";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "/etc/mlnx-release is empty."},
      {"\n", "/etc/mlnx-release is empty."},
      {"a b", "/etc/mlnx-release 'a b' has byte 0x20 at offset 1" + tail},
      {"a\n\n",
       "/etc/mlnx-release 'a?"
       "?' has byte 0x0a at offset 1" +
           tail},
      {"a\nb\n", "/etc/mlnx-release 'a?b?' has byte 0x0a at offset 1" + tail},
      {"a\r\n",
       "/etc/mlnx-release 'a?"
       "?' has byte 0x0d at offset 1" +
           tail},
      {"a\tb", "/etc/mlnx-release 'a?b' has byte 0x09 at offset 1" + tail},
      {"caf\xc3\xa9",
       "/etc/mlnx-release 'caf?"
       "?' has byte 0xc3 at offset 3" +
           tail},
      {std::string("a\0", 2),
       "/etc/mlnx-release 'a?' has byte 0x00 at offset 1" + tail},
      {"\x7f", "/etc/mlnx-release '?' has byte 0x7f at offset 0" + tail},
  };
  for (const auto& [text, message] : cases) {
    StatusOr<std::string> v = ParseMlnxRelease(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(v.status().message(), message);
  }
}

}  // namespace
}  // namespace dpuaudit::bluefield
