// ParseEfiVarU8 (uefi/efivar.h) over efivarfs blobs built in code, one
// comment per field.
#include "uefi/efivar.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace dpuaudit::uefi {
namespace {

using ::testing::HasSubstr;

// An efivarfs blob: UINT32 LE attributes, then the data bytes.
Bytes EfiVar(uint32_t attributes, std::vector<uint8_t> data) {
  Bytes b = {
      static_cast<uint8_t>(attributes & 0xff),          // attributes[7:0]
      static_cast<uint8_t>((attributes >> 8) & 0xff),   // attributes[15:8]
      static_cast<uint8_t>((attributes >> 16) & 0xff),  // attributes[23:16]
      static_cast<uint8_t>((attributes >> 24) & 0xff),  // attributes[31:24]
  };
  for (uint8_t d : data) b.push_back(d);  // variable data
  return b;
}

constexpr uint32_t kBsRt = 0x06;  // BOOTSERVICE_ACCESS | RUNTIME_ACCESS

TEST(ParseEfiVarU8Test, Accepts) {
  struct Case {
    Bytes in;
    uint32_t attributes;
    uint8_t value;
  } cases[] = {
      {EfiVar(kBsRt, {1}), kBsRt, 1},
      {EfiVar(kBsRt, {0}), kBsRt, 0},
      {EfiVar(0x80000007, {1}), 0x80000007, 1},  // NV|BS|RT + high bit
  };
  for (const Case& c : cases) {
    StatusOr<EfiVarU8> v = ParseEfiVarU8(c.in);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->attributes, c.attributes);
    EXPECT_EQ(v->value, c.value);
  }
}

TEST(ParseEfiVarU8Test, Rejects) {
  struct Case {
    Bytes in;
    std::string message;
  } cases[] = {
      {{}, "efivar is 0 bytes, expected 5"},
      {EfiVar(kBsRt, {}), "efivar is 4 bytes, expected 5"},
      {EfiVar(kBsRt, {1, 0}), "efivar is 6 bytes, expected 5"},
      {EfiVar(kBsRt, {2}), "data byte at offset 0x4 is 2, expected 0 or 1"},
      {EfiVar(kBsRt, {0xff}), "data byte at offset 0x4 is 255"},
      {EfiVar(0x02, {1}), "attributes 0x00000002 at offset 0x0 lack "
                          "RUNTIME_ACCESS"},
  };
  for (const Case& c : cases) {
    StatusOr<EfiVarU8> v = ParseEfiVarU8(c.in);
    ASSERT_FALSE(v.ok()) << c.message;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(v.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace dpuaudit::uefi
