#include "attest/tpm_types.h"

#include <gtest/gtest.h>

namespace dpuaudit::attest {
namespace {

TEST(HashAlgTest, SizesNamesAndParsing) {
  EXPECT_EQ(HashAlgDigestSize(kTpmAlgSha1), 20u);
  EXPECT_EQ(HashAlgDigestSize(kTpmAlgSha256), 32u);
  EXPECT_EQ(HashAlgDigestSize(kTpmAlgSha384), 48u);
  EXPECT_EQ(HashAlgDigestSize(kTpmAlgSha512), 64u);
  EXPECT_EQ(HashAlgDigestSize(kTpmAlgSm3_256), 32u);
  EXPECT_EQ(HashAlgDigestSize(0x0099), std::nullopt);
  EXPECT_EQ(HashAlgName(kTpmAlgSha256), "sha256");
  EXPECT_EQ(HashAlgName(kTpmAlgSm3_256), "sm3_256");
  EXPECT_EQ(HashAlgName(0x0099), "0x0099");
  for (uint16_t alg : {kTpmAlgSha1, kTpmAlgSha256, kTpmAlgSha384,
                       kTpmAlgSha512, kTpmAlgSm3_256}) {
    EXPECT_EQ(ParseHashAlgName(HashAlgName(alg)), alg);
  }
  EXPECT_EQ(ParseHashAlgName("SHA256"), std::nullopt);
  EXPECT_EQ(ParseHashAlgName("md5"), std::nullopt);
}

TEST(HashAlgTest, HashWithKnownAnswers) {
  // FIPS 180-2 "abc" test vectors.
  EXPECT_EQ(HexEncode(*HashWith(kTpmAlgSha1, AsBytes("abc"))),
            "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(HexEncode(*HashWith(kTpmAlgSha256, AsBytes("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HashWith(kTpmAlgSha384, AsBytes("abc"))->size(), 48u);
  EXPECT_EQ(HexEncode(*HashWith(kTpmAlgSha512, {})).substr(0, 16),
            "cf83e1357eefb8bd");
  auto sm3 = HashWith(kTpmAlgSm3_256, AsBytes("abc"));
  EXPECT_EQ(sm3.status(), InvalidArgumentError(
                              "hash algorithm sm3_256 is not supported for "
                              "hashing."));
}

TEST(PcrSelectionTest, CreateValidates) {
  EXPECT_EQ(PcrSelection::Create({{kTpmAlgSha256, {0, 24}}}).status(),
            InvalidArgumentError("PCR index 24 out of range [0, 23]."));
  EXPECT_EQ(PcrSelection::Create({{0x0099, {0}}}).status(),
            InvalidArgumentError("hash algorithm 0x0099 is not supported."));
  EXPECT_EQ(PcrSelection::Create({}).status(),
            InvalidArgumentError("the selection is empty."));
  EXPECT_EQ(PcrSelection::Create({{kTpmAlgSha256, {}}}).status(),
            InvalidArgumentError("the selection is empty."));
  // Empty banks are dropped, so equal selections compare equal.
  auto a = PcrSelection::Create({{kTpmAlgSha256, {1}}, {kTpmAlgSha1, {}}});
  auto b = PcrSelection::Create({{kTpmAlgSha256, {1}}});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(PcrSelectionTest, DefaultAndCovers) {
  PcrSelection d = PcrSelection::DefaultSha256();
  EXPECT_EQ(d.ToString(), "sha256:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
  auto small = PcrSelection::Create({{kTpmAlgSha256, {0, 7}}});
  auto other_bank = PcrSelection::Create({{kTpmAlgSha1, {0}}});
  ASSERT_TRUE(small.ok());
  ASSERT_TRUE(other_bank.ok());
  EXPECT_TRUE(d.Covers(*small));
  EXPECT_TRUE(d.Covers(d));
  EXPECT_FALSE(small->Covers(d));
  EXPECT_FALSE(d.Covers(*other_bank));
}

TEST(PcrSelectionTest, ParsesTheTpm2ToolsSyntax) {
  auto s = PcrSelection::Parse("sha256:0,1,2+sha1:7");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::map<uint16_t, std::set<uint32_t>> want = {{kTpmAlgSha256, {0, 1, 2}},
                                                 {kTpmAlgSha1, {7}}};
  EXPECT_EQ(s->banks(), want);
  EXPECT_EQ(s->ToString(), "sha1:7+sha256:0,1,2");
  EXPECT_EQ(*PcrSelection::Parse(s->ToString()), *s);
  auto range = PcrSelection::Parse("sha256:0-15");
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, PcrSelection::DefaultSha256());
  auto all = PcrSelection::Parse("sha384:all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->banks().at(kTpmAlgSha384).size(), 24u);
}

TEST(PcrSelectionTest, ParseNamesTheBadToken) {
  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {"", "the selection is empty."},
      {"sha256", "PCR bank 'sha256' lacks ':' (expected e.g. sha256:0,1,2)."},
      {"md5:0", "hash algorithm 'md5' is not supported."},
      {"sha256:0+sha256:1", "hash algorithm 'sha256' is listed twice."},
      {"sha256:x", "PCR index 'x' is not a decimal number."},
      {"sha256:1,,2", "PCR index '' is not a decimal number."},
      {"sha256:24", "PCR index 24 out of range [0, 23]."},
      {"sha256:7-3", "PCR range '7-3' is reversed."},
      {"sha256:0-30", "PCR index 30 out of range [0, 23]."},
      {"sha256:0+", "PCR bank '' lacks ':' (expected e.g. sha256:0,1,2)."},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(PcrSelection::Parse(c.text).status(),
              InvalidArgumentError(c.message));
  }
}

}  // namespace
}  // namespace dpuaudit::attest
