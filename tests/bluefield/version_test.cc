#include "bluefield/version.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dpuaudit::bluefield {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

struct ParseCase {
  const char* component;
  const char* text;
  std::vector<uint64_t> parts;
};

TEST(VersionTest, ParsesEachScheme) {
  const std::vector<ParseCase> cases = {
      {"nic-fw", "32.41.1000", {32, 41, 1000}},
      {"nic-fw", "24.35.2000", {24, 35, 2000}},
      {"bsp", "4.9.1.13442", {4, 9, 1, 13442}},
      {"dotted", "7", {7}},
      {"dotted", "999999999.0", {999999999, 0}},
      {"uefi", "4.9.1-36-g0c3239837a", {4, 9, 1, 36}},
      {"uefi", "4.9.1", {4, 9, 1}},
      {"uefi", "4.9.1-36", {4, 9, 1, 36}},
      {"uefi", "4.9.1-gabcd", {4, 9, 1}},
      // bfver sample (docs/bluefield.md#bfver) and BMC inventory (#bmc).
      {"atf", "v2.2(release):4.9.1-21-gfc25b08d9", {4, 9, 1, 21}},
      {"atf", "v2.2(release):4.9.0-25-g0ce57e322", {4, 9, 0, 25}},
      {"atf", "v2.2(debug):4.9.1", {4, 9, 1}},
  };
  for (const ParseCase& c : cases) {
    StatusOr<ComparableVersion> v = ParseComparableVersion(c.component, c.text);
    ASSERT_TRUE(v.ok()) << c.component << " " << c.text << ": "
                        << v.status().ToString();
    EXPECT_THAT(v->parts, ElementsAreArray(c.parts)) << c.text;
    EXPECT_EQ(v->text, c.text);
  }
}

struct ErrorCase {
  const char* component;
  std::string text;
  const char* message;
};

TEST(VersionTest, RejectsWithTextAndComponent) {
  const std::vector<ErrorCase> cases = {
      {"nic-fw", "", "nic-fw version '' has no fields."},
      {"nic-fw", "32..1000",
       "nic-fw version '32..1000' has field '', not 1 to 9 decimal digits."},
      {"nic-fw", "32.41.1000 ",
       "nic-fw version '32.41.1000 ' has field '1000 ', not 1 to 9 decimal "
       "digits."},
      {"bsp", "4.9.x",
       "bsp version '4.9.x' has field 'x', not 1 to 9 decimal "
       "digits."},
      {"dotted", "1234567890",
       "dotted version '1234567890' has field '1234567890', not 1 to 9 "
       "decimal digits."},
      {"dotted", "-1",
       "dotted version '-1' has field '-1', not 1 to 9 "
       "decimal digits."},
      {"uefi", "4.9.1-",
       "uefi version '4.9.1-' has suffix '', not g<4 to 40 "
       "lower-case hex digits>."},
      {"uefi", "4.9.1-36-gXYZ1",
       "uefi version '4.9.1-36-gXYZ1' has suffix 'gXYZ1', not g<4 to 40 "
       "lower-case hex digits>."},
      {"uefi", "4.9.1-36-gabc",
       "uefi version '4.9.1-36-gabc' has suffix 'gabc', not g<4 to 40 "
       "lower-case hex digits>."},
      {"uefi", "4.9.1-x-gabcd",
       "uefi version '4.9.1-x-gabcd' has commit count 'x', not 1 to 9 "
       "decimal digits."},
      {"uefi", "4.9.1-36-gabcd-dirty",
       "uefi version '4.9.1-36-gabcd-dirty' has suffix 'gabcd-dirty', not "
       "g<4 to 40 lower-case hex digits>."},
      {"atf", "4.9.1-21-gfc25b08d9",
       "atf version '4.9.1-21-gfc25b08d9' has no ':' before the build "
       "version."},
      {"atf", "v2.2(release):", "atf version 'v2.2(release):' has no fields."},
      {"os", "bf-bundle-2.9.1-40",
       "unknown version component 'os' for version 'bf-bundle-2.9.1-40'."},
  };
  for (const ErrorCase& c : cases) {
    StatusOr<ComparableVersion> v = ParseComparableVersion(c.component, c.text);
    ASSERT_FALSE(v.ok()) << c.component << " " << c.text;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(v.status().message(), c.message) << c.text;
  }
}

TEST(VersionTest, IsOrderedComponent) {
  for (const char* c : {"nic-fw", "bsp", "dotted", "atf", "uefi"}) {
    EXPECT_TRUE(IsOrderedComponent(c)) << c;
  }
  for (const char* c : {"", "os", "NIC-FW", "uefi "}) {
    EXPECT_FALSE(IsOrderedComponent(c)) << c;
  }
}

int Cmp(const char* component, const char* a, const char* b) {
  StatusOr<ComparableVersion> x = ParseComparableVersion(component, a);
  StatusOr<ComparableVersion> y = ParseComparableVersion(component, b);
  EXPECT_TRUE(x.ok() && y.ok()) << a << " " << b;
  if (!x.ok() || !y.ok()) return 99;
  return CompareVersions(*x, *y);
}

TEST(VersionTest, ComparesNumericallyAndPadsWithZeros) {
  EXPECT_EQ(Cmp("nic-fw", "32.41.1000", "32.41.1000"), 0);
  EXPECT_LT(Cmp("nic-fw", "32.41.1000", "32.43.2402"), 0);
  EXPECT_GT(Cmp("nic-fw", "32.43.2402", "32.41.1000"), 0);
  EXPECT_GT(Cmp("nic-fw", "32.41.10000", "32.41.9999"), 0);  // not textual
  EXPECT_LT(Cmp("nic-fw", "24.99.0932", "32.0.0"), 0);
  EXPECT_EQ(Cmp("uefi", "4.9.1", "4.9.1-0-g0000"), 0);  // [4,9,1] == [4,9,1,0]
  EXPECT_LT(Cmp("uefi", "4.9.1", "4.9.1-36-g0c3239837a"), 0);
  EXPECT_LT(Cmp("uefi", "4.9.0-46-g7e3911bd4d", "4.9.1-36-g0c3239837a"), 0);
  EXPECT_EQ(Cmp("uefi", "4.9.1-36-gaaaa", "4.9.1-36-gbbbb"), 0);  // hash
  EXPECT_LT(Cmp("atf", "v2.2(release):4.9.0-25-g0ce57e322",
                "v2.2(release):4.9.1-21-gfc25b08d9"),
            0);
  EXPECT_EQ(Cmp("dotted", "1.0.0.0", "1"), 0);
  EXPECT_GT(Cmp("dotted", "1.0.0.1", "1"), 0);
}

TEST(VersionTest, CompareIsAntisymmetric) {
  const char* versions[] = {"1", "1.0", "1.0.1", "1.2", "2", "10", "9.99"};
  for (const char* a : versions) {
    for (const char* b : versions) {
      EXPECT_EQ(Cmp("dotted", a, b), -Cmp("dotted", b, a)) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace dpuaudit::bluefield
