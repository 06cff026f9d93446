#include "common/bytes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;

TEST(HexTest, RoundTrip) {
  Bytes b = {0x00, 0x01, 0xab, 0xff};
  EXPECT_EQ(HexEncode(b), "0001abff");
  auto d = HexDecode("0001ABff");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, b);
}

TEST(HexTest, RejectsOddLengthAndBadCharacters) {
  auto odd = HexDecode("abc");
  EXPECT_EQ(odd.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(odd.status().message(), HasSubstr("odd length 3"));
  auto bad = HexDecode("00zz");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("offset 2"));
}

struct B64Case {
  std::string plain, b64, b64url;
};

class Base64Test : public ::testing::TestWithParam<B64Case> {};

// RFC 4648 §10 test vectors.
INSTANTIATE_TEST_SUITE_P(Rfc4648, Base64Test,
                         ::testing::Values(B64Case{"", "", ""},
                                           B64Case{"f", "Zg==", "Zg"},
                                           B64Case{"fo", "Zm8=", "Zm8"},
                                           B64Case{"foo", "Zm9v", "Zm9v"},
                                           B64Case{"foob", "Zm9vYg==", "Zm9vYg"},
                                           B64Case{"fooba", "Zm9vYmE=", "Zm9vYmE"},
                                           B64Case{"foobar", "Zm9vYmFy", "Zm9vYmFy"}));

TEST_P(Base64Test, EncodesAndDecodes) {
  const auto& c = GetParam();
  EXPECT_EQ(Base64Encode(AsBytes(c.plain)), c.b64);
  EXPECT_EQ(Base64UrlEncode(AsBytes(c.plain)), c.b64url);
  auto d1 = Base64Decode(c.b64);
  ASSERT_TRUE(d1.ok());
  EXPECT_EQ(ToString(*d1), c.plain);
  auto d2 = Base64UrlDecode(c.b64url);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(ToString(*d2), c.plain);
}

TEST(Base64UrlTest, UsesUrlAlphabetAndRejectsStandardOne) {
  Bytes b = {0xfb, 0xff};
  EXPECT_EQ(Base64UrlEncode(b), "-_8");
  EXPECT_EQ(Base64Encode(b), "+/8=");
  auto plus = Base64UrlDecode("+/8");
  EXPECT_EQ(plus.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(plus.status().message(), HasSubstr("invalid character at offset 0"));
}

TEST(Base64UrlTest, RejectsPaddingImpossibleLengthAndNonCanonicalBits) {
  EXPECT_FALSE(Base64UrlDecode("Zg==").ok());
  auto len = Base64UrlDecode("Zm9vY");
  EXPECT_THAT(len.status().message(), HasSubstr("length 5 is impossible"));
  // "Zh" decodes to 'f' with non-zero trailing bits: must be rejected.
  auto nc = Base64UrlDecode("Zh");
  EXPECT_EQ(nc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(nc.status().message(), HasSubstr("non-canonical"));
}

// CheckBase64Url (issue 17: routing checks a report's payload without
// decoding it) accepts and refuses exactly what Base64UrlDecode does, with
// the same message, for every length up to 9 over a small alphabet that
// includes invalid characters; decoding four characters at a time gives the
// same bytes as the encoder's inverse.
TEST(Base64UrlTest, CheckAgreesWithDecode) {
  const std::string alphabet = "AQgw_-=+.";
  std::vector<std::string> inputs = {""};
  for (int len = 1; len <= 5; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : inputs) {
      if (static_cast<int>(s.size()) != len - 1) continue;
      for (char c : alphabet) next.push_back(s + c);
    }
    inputs.insert(inputs.end(), next.begin(), next.end());
  }
  inputs.push_back("AAAAAAAA!AAA");
  inputs.push_back("AAAAAAAAAAA!");
  for (const std::string& s : inputs) {
    auto decoded = Base64UrlDecode(s);
    Status checked = CheckBase64Url(s);
    ASSERT_EQ(decoded.ok(), checked.ok()) << s;
    if (!checked.ok()) EXPECT_EQ(decoded.status().message(), checked.message()) << s;
  }
  Bytes all(300);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint8_t>(i * 7 + 3);
  for (size_t n = 0; n <= all.size(); n += 1) {
    Bytes part(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    auto back = Base64UrlDecode(Base64UrlEncode(part));
    ASSERT_TRUE(back.ok()) << n;
    EXPECT_EQ(*back, part) << n;
  }
  EXPECT_EQ(CheckBase64Url("AAA.AAAA").message(), "base64url: invalid character at offset 3.");
}

TEST(Base64Test, RejectsUnpaddedInput) {
  auto s = Base64Decode("Zg");
  EXPECT_THAT(s.status().message(), HasSubstr("not a multiple of 4"));
}

TEST(ConstantTimeEqualsTest, ComparesContentAndLength) {
  EXPECT_TRUE(ConstantTimeEquals(AsBytes("abc"), AsBytes("abc")));
  EXPECT_FALSE(ConstantTimeEquals(AsBytes("abc"), AsBytes("abd")));
  EXPECT_FALSE(ConstantTimeEquals(AsBytes("abc"), AsBytes("ab")));
}

TEST(ByteReaderTest, ReadsLittleAndBigEndian) {
  Bytes b = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};
  ByteReader r(b);
  EXPECT_EQ(*r.U8("a"), 0x01);
  EXPECT_EQ(*r.U16Le("b"), 0x0302);
  EXPECT_EQ(*r.U32Be("c"), 0x04050607u);
  EXPECT_EQ(r.offset(), 7u);
  EXPECT_EQ(r.remaining(), 2u);
}

TEST(ByteReaderTest, OutOfRangeNamesFieldAndOffsetAndKeepsPosition) {
  Bytes b = {0x01, 0x02, 0x03};
  ByteReader r(b);
  ASSERT_TRUE(r.Skip(2, "header").ok());
  auto v = r.U32Le("digest count");
  EXPECT_EQ(v.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(v.status().message(),
            "digest count at offset 0x2: need 4 bytes, 1 left.");
  EXPECT_EQ(r.offset(), 2u);
  auto t = r.Take(1, "tail");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0], 0x03);
  EXPECT_TRUE(r.empty());
}

}  // namespace
}  // namespace dpuaudit
