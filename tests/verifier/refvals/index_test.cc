// Reference values, the index: lookups by version, digest and label,
// filtered by model and PSID.
#include "verifier/refvals/index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "verifier/refvals/test_releases.h"

namespace dpuaudit::verifier {
namespace {

using refvals_testing::kAtf;
using refvals_testing::kNic;
using refvals_testing::Hex;
using refvals_testing::MakeRelease;

// --- Matching
// ---------------------------------------------------------------------

TEST(RefIndexTest, FindVersionFiltersByModelAndPsid) {
  RefRelease any =
      MakeRelease("any", RefState::kActive, {{"nic-fw", kNic, "", ""}});
  RefRelease only_a = MakeRelease("only-a", RefState::kActive,
                                  {{"nic-fw", kNic, "", ""}}, {"MT_A"});
  RefRelease bf2 =
      MakeRelease("bf2", RefState::kActive, {{"nic-fw", kNic, "", ""}});
  bf2.model = "BlueField-2";
  RefIndex index({any, only_a, bf2});

  auto labels = [](const std::vector<const RefRelease*>& v) {
    std::vector<std::string> out;
    for (const RefRelease* r : v) out.push_back(r->release);
    return out;
  };
  EXPECT_EQ(labels(index.FindVersion("BlueField-3", "MT_A", "nic-fw", kNic)),
            (std::vector<std::string>{"any", "only-a"}));
  EXPECT_EQ(labels(index.FindVersion("BF3", "MT_B", "nic-fw", kNic)),
            (std::vector<std::string>{"any"}));
  EXPECT_EQ(labels(index.FindVersion("BlueField-3", "", "nic-fw", kNic)),
            (std::vector<std::string>{"any"}));
  EXPECT_EQ(labels(index.FindVersion("BlueField-2", "MT_A", "nic-fw", kNic)),
            (std::vector<std::string>{"bf2"}));
  EXPECT_TRUE(
      index.FindVersion("BlueField-3", "MT_A", "nic-fw", "32.43.1009").empty());
  EXPECT_TRUE(index.FindVersion("BlueField-3", "MT_A", "atf", kNic).empty());
}

TEST(RefIndexTest, FindDigestIsCaseInsensitiveOnTheQueryAndPerComponent) {
  RefRelease r = MakeRelease(
      "r", RefState::kActive,
      {{"bfb:bl31", "", Hex('a'), ""}, {"bfb:bl33", "", Hex('b'), ""}});
  RefIndex index({r});
  EXPECT_EQ(index.FindDigest("BlueField-3", "", "bfb:bl31", Hex('A')).size(),
            1u);
  EXPECT_EQ(index.FindDigest("BlueField-3", "", "bfb:bl31", Hex('a')).size(),
            1u);
  EXPECT_TRUE(
      index.FindDigest("BlueField-3", "", "bfb:bl33", Hex('a')).empty());
  EXPECT_TRUE(
      index.FindDigest("BlueField-3", "", "bfb:bl31", Hex('b')).empty());
  // A version is not a digest.
  EXPECT_TRUE(
      index.FindVersion("BlueField-3", "", "bfb:bl31", Hex('a')).empty());
}

TEST(RefIndexTest, ReleaseWithTwoValuesOfOneComponentIsFoundOnce) {
  RefRelease r = MakeRelease(
      "r", RefState::kActive,
      {{"bfb:bl31", "", Hex('a'), ""}, {"bfb:bl31", "1.0", Hex('a'), ""}});
  RefIndex index({r});
  EXPECT_EQ(index.FindDigest("BlueField-3", "", "bfb:bl31", Hex('a')).size(),
            1u);
}

TEST(RefIndexTest, FindByLabel) {
  RefIndex index(
      {MakeRelease("r1", RefState::kActive, {{"atf", kAtf, "", ""}}),
       MakeRelease("r2", RefState::kActive, {{"atf", kAtf, "", ""}})});
  ASSERT_NE(index.Find("r2"), nullptr);
  EXPECT_EQ(index.Find("r2")->release, "r2");
  EXPECT_EQ(index.Find("r3"), nullptr);
  EXPECT_EQ(index.releases().size(), 2u);
}
}  // namespace
}  // namespace dpuaudit::verifier
