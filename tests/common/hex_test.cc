// The hex predicates and number formatters of common/bytes.h, against
// printf's own %x / %X.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/bytes.h"

namespace dpuaudit {
namespace {

std::string Printf(const char* fmt, unsigned long long v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

TEST(HexTest, IsLowerHex) {
  EXPECT_TRUE(IsLowerHex(""));
  EXPECT_TRUE(IsLowerHex("0123456789abcdef"));
  EXPECT_FALSE(IsLowerHex("ABCDEF"));
  EXPECT_FALSE(IsLowerHex("0x12"));
  EXPECT_FALSE(IsLowerHex("12 "));
  EXPECT_FALSE(IsLowerHex(std::string("1\0", 2)));
  EXPECT_FALSE(IsLowerHex("g"));
  EXPECT_TRUE(IsLowerHexOfLength(std::string(64, 'a'), 64));
  EXPECT_FALSE(IsLowerHexOfLength(std::string(63, 'a'), 64));
  EXPECT_FALSE(IsLowerHexOfLength(std::string(63, 'a') + "A", 64));
  EXPECT_TRUE(IsLowerHexOfLength("", 0));
  EXPECT_TRUE(IsLowerHex(HexEncode(AsBytes("\x00\xff\x7f"))));
}

TEST(HexTest, MatchesPrintf) {
  const unsigned long long values[] = {0,          1,          0xf,
                                       0x10,       0xabc,      0xffff,
                                       0x10000,    0x13026642, 0xffffffff,
                                       0x100000000, ~0ull};
  for (unsigned long long v : values) {
    SCOPED_TRACE(v);
    EXPECT_EQ(HexNumber(v), Printf("0x%llx", v));
    EXPECT_EQ(HexNumber(v, 16), Printf("0x%016llx", v));
    EXPECT_EQ(HexDigits(v, 4), Printf("%04llx", v));
    EXPECT_EQ(HexDigits(v, 4, HexCase::kUpper), Printf("%04llX", v));
    EXPECT_EQ(HexNumber(v, 4, HexCase::kUpper), Printf("0x%04llX", v));
    EXPECT_EQ(HexDigits(v, 0), Printf("%llx", v));  // 0 still prints "0"
    EXPECT_EQ(Hex32(static_cast<uint32_t>(v)),
              Printf("0x%08llx", v & 0xffffffffull));
    EXPECT_EQ(Hex16(static_cast<uint16_t>(v)), Printf("0x%04llx", v & 0xffff));
  }
  EXPECT_EQ(Hex32(0x13026642), "0x13026642");
  EXPECT_EQ(Hex16(0xb), "0x000b");
  EXPECT_EQ(HexDigits(0xab, 2), "ab");
}

}  // namespace
}  // namespace dpuaudit
