#include "common/utf.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dpuaudit {
namespace {

Bytes Le(const std::vector<uint16_t>& units) {
  Bytes b;
  for (uint16_t u : units) {
    b.push_back(static_cast<uint8_t>(u & 0xff));
    b.push_back(static_cast<uint8_t>(u >> 8));
  }
  return b;
}

TEST(Utf8Test, Validation) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_EQ(InvalidUtf8At("ab\xc0\xaf"), 2u);          // overlong '/'
  EXPECT_EQ(InvalidUtf8At("a\xed\xa0\x80"), 1u);       // a surrogate
  EXPECT_EQ(InvalidUtf8At("\xf4\x90\x80\x80"), 0u);    // above U+10FFFF
  EXPECT_EQ(InvalidUtf8At("abc\xe2\x82"), 3u);         // cut short
  EXPECT_EQ(InvalidUtf8At("\x80"), 0u);                // lone continuation
  const Utf8Char c = DecodeUtf8Char("\xe2\x82\xac!", 0);
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.cp, 0x20acu);
  EXPECT_EQ(c.len, 3u);
  const Utf8Char bad = DecodeUtf8Char("\xe2\x28", 0);  // maximal subpart: 1
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.len, 1u);
}

TEST(Utf8Test, AppendRoundTrips) {
  for (uint32_t cp : {0x24u, 0xa2u, 0x7ffu, 0x800u, 0x20acu, 0xfffdu,
                      0x10000u, 0x10348u, 0x10ffffu}) {
    std::string s;
    AppendUtf8(cp, s);
    const Utf8Char c = DecodeUtf8Char(s, 0);
    EXPECT_TRUE(c.ok) << cp;
    EXPECT_EQ(c.cp, cp);
    EXPECT_EQ(c.len, s.size());
  }
}

TEST(Utf16LeTest, StrictDecodes) {
  // "Boot" + U+00E9 + U+1F600 (a surrogate pair).
  auto s = Utf16LeToUtf8(Le({'B', 'o', 'o', 't', 0xe9, 0xd83d, 0xde00}), "d");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, "Boot\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(*Utf16LeToUtf8({}, "d"), "");
}

TEST(Utf16LeTest, StrictRejects) {
  EXPECT_EQ(Utf16LeToUtf8(Le({'a', 0, 'b'}), "description", 10)
                .status()
                .message(),
            "description has a NUL at offset 12.");
  EXPECT_EQ(Utf16LeToUtf8(Le({'a', 0xdc00}), "p", 4).status().message(),
            "p has an unpaired surrogate 0xDC00 at offset 6.");
  EXPECT_EQ(Utf16LeToUtf8(Le({0xd83d, 'a'}), "p").status().message(),
            "p has an unpaired surrogate 0xD83D at offset 0.");
  EXPECT_EQ(Utf16LeToUtf8(Le({'a', 0xdbff}), "p").status().message(),
            "p has an unpaired surrogate 0xDBFF at offset 2.");
  const Bytes odd = {'a', 0, 'b'};
  EXPECT_EQ(Utf16LeToUtf8(odd, "p").status().message(),
            "p is 3 bytes, not whole UTF-16 code units.");
  EXPECT_EQ(Utf16LeToUtf8(odd, "p").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(Utf16LeTest, LossyRepairs) {
  EXPECT_EQ(Utf16LeToUtf8Lossy(Le({'a', 'b', 0, 'c'})), "ab");  // stops at NUL
  EXPECT_EQ(Utf16LeToUtf8Lossy(Le({'a', 0xdc00, 'b'})), "a\xef\xbf\xbd" "b");
  EXPECT_EQ(Utf16LeToUtf8Lossy(Le({0xd800})), "\xef\xbf\xbd");
  EXPECT_EQ(Utf16LeToUtf8Lossy(Le({'a', '\t', 0x7f, 'b'})), "a  b");
  EXPECT_EQ(Utf16LeToUtf8Lossy(Le({0xd83d, 0xde00})), "\xf0\x9f\x98\x80");
  Bytes odd = Le({'x'});
  odd.push_back('y');  // an odd last byte is ignored
  EXPECT_EQ(Utf16LeToUtf8Lossy(odd), "x");
  EXPECT_TRUE(IsValidUtf8(Utf16LeToUtf8Lossy(Le({0xdfff, 0xd800, 0xffff}))));
}

}  // namespace
}  // namespace dpuaudit
