#include "uefi/ucs2.h"

#include <gtest/gtest.h>

#include <string>

namespace dpuaudit::uefi {
namespace {

Bytes Le(const std::u16string& s) {
  Bytes b;
  for (char16_t c : s) {
    b.push_back(static_cast<uint8_t>(c));
    b.push_back(static_cast<uint8_t>(c >> 8));
  }
  return b;
}

TEST(Ucs2StrictTest, DecodesBmpAndSurrogatePairs) {
  StatusOr<std::string> s =
      Ucs2ToUtf8(Le(u"Ubuntu \u00e9 \U0001D11E\x01"), 10, "description");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, "Ubuntu \xc3\xa9 \xf0\x9d\x84\x9e\x01");  // controls kept
  EXPECT_EQ(Ucs2ToUtf8({}, 0, "x").value(), "");
}

TEST(Ucs2StrictTest, ErrorsNameWhatAndTheOffset) {
  const std::u16string lone_high = {u'a', 0xd800, u'b'};
  const std::u16string lone_low = {u'a', 0xdc00};
  const std::u16string high_at_end = {0xdbff};
  const std::u16string nul = {u'a', 0};
  struct Case {
    Bytes in;
    std::string message;
  } cases[] = {
      {Le(lone_high), "d has an unpaired surrogate 0xD800 at offset 12."},
      {Le(lone_low), "d has an unpaired surrogate 0xDC00 at offset 12."},
      {Le(high_at_end), "d has an unpaired surrogate 0xDBFF at offset 10."},
      {Le(nul), "d has a NUL at offset 12."},
      {Bytes{'a', 0, 'b'}, "d has an odd length 3 at offset 10."},
  };
  for (const Case& c : cases) {
    StatusOr<std::string> s = Ucs2ToUtf8(c.in, 10, "d");
    ASSERT_FALSE(s.ok()) << c.message;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), c.message);
  }
}

TEST(Ucs2LossyTest, StopsAtNulReplacesAndIgnoresAnOddByte) {
  const std::u16string text = {u'a', 0xd800, u'b',   0xdc00, u'\t',
                               0x7f, 0xd834, 0xdd1e, 0,      u'z'};
  EXPECT_EQ(Ucs2ToUtf8Lossy(Le(text)),
            "a\xef\xbf\xbd"
            "b\xef\xbf\xbd  \xf0\x9d\x84\x9e");
  Bytes odd = Le(u"ab");
  odd.push_back('c');
  EXPECT_EQ(Ucs2ToUtf8Lossy(odd), "ab");
  const std::u16string high_then_nul = {0xd800, 0, u'x'};
  EXPECT_EQ(Ucs2ToUtf8Lossy(Le(high_then_nul)), "\xef\xbf\xbd");
  EXPECT_EQ(Ucs2ToUtf8Lossy({}), "");
}

}  // namespace
}  // namespace dpuaudit::uefi
