#include "uefi/guid.h"

#include <gtest/gtest.h>

namespace dpuaudit::uefi {
namespace {

TEST(GuidTest, MixedEndianBytes) {
  // EFI_GLOBAL_VARIABLE as stored: Data1..Data3 little-endian.
  const Bytes stored = {0x61, 0xdf, 0xe4, 0x8b, 0xca, 0x93, 0xd2, 0x11,
                        0xaa, 0x0d, 0x00, 0xe0, 0x98, 0x03, 0x2b, 0x8c};
  EXPECT_EQ(Guid::FromBytes(stored), kEfiGlobalVariable);
  EXPECT_EQ(kEfiGlobalVariable.ToString(), kEfiGlobalVariableText);
  EXPECT_EQ(kEfiImageSecurityDatabase.bytes[0], 0xcb);
  EXPECT_EQ(kEfiImageSecurityDatabase.ToString(),
            "d719b2cb-3d3a-4596-a3bc-dad00e67656f");
  EXPECT_EQ(kEfiCertX509.ToString(), "a5c059a1-94e4-4aa7-87b5-ab155c2bf072");
  EXPECT_EQ(kEfiCertSha256.ToString(), "c1c41626-504c-4092-aca9-41f936934328");
}

TEST(GuidTest, ParseRoundTripsAndAcceptsUpperCase) {
  StatusOr<Guid> g = ParseGuid("8BE4DF61-93CA-11D2-AA0D-00E098032B8C");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(*g, kEfiGlobalVariable);
  EXPECT_EQ(g->ToString(), "8be4df61-93ca-11d2-aa0d-00e098032b8c");
}

TEST(GuidTest, ParseRejects) {
  for (const char* bad : {"", "8be4df61-93ca-11d2-aa0d-00e098032b8",
                          "8be4df61-93ca-11d2-aa0d-00e098032b8cc",
                          "8be4df61+93ca-11d2-aa0d-00e098032b8c",
                          "8be4df61-93ca-11d2-aa0d-00e098032b8g",
                          "{8be4df61-93ca-11d2-aa0d-00e098032b8}"}) {
    StatusOr<Guid> g = ParseGuid(bad);
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseGuid("xyz").status().message(),
            "'xyz' is not a GUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx).");
}

TEST(GuidTest, FromShortBytesIsZeroPadded) {
  Guid g = Guid::FromBytes(Bytes{1, 2});
  EXPECT_EQ(g.ToString(), "00000201-0000-0000-0000-000000000000");
}

}  // namespace
}  // namespace dpuaudit::uefi
