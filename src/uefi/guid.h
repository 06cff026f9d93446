// EFI_GUID, and the named GUIDs dpuaudit uses.
//
// Byte order (UEFI 2.10 Appendix A): the text form
// "8be4df61-93ca-11d2-aa0d-00e098032b8c" is Data1 (UINT32) - Data2 (UINT16)
// - Data3 (UINT16) - Data4 (8 bytes); in memory and in every UEFI structure
// Data1, Data2 and Data3 are little-endian and Data4 is stored as written:
//   61 df e4 8b  ca 93  d2 11  aa 0d 00 e0 98 03 2b 8c
//
// Guarantees: ParseGuid accepts exactly the 36-character text form (either
// case) and rejects anything else with INVALID_ARGUMENT; ToString() is
// lower-case, so ToString(ParseGuid(s)) == lower-case s. Each named GUID's
// text is written once below; its bytes are derived from it at compile time.
// Does not: know what a GUID names beyond the constants below.
#ifndef DPUAUDIT_UEFI_GUID_H_
#define DPUAUDIT_UEFI_GUID_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::uefi {

inline constexpr size_t kGuidBytes = 16;
inline constexpr size_t kGuidTextLength = 36;

struct Guid {
  std::array<uint8_t, kGuidBytes> bytes{};  // as stored (mixed-endian)

  // The first 16 bytes of `b` (zero-padded if shorter): a stored EFI_GUID.
  static Guid FromBytes(ByteView b);
  // "8be4df61-93ca-11d2-aa0d-00e098032b8c", lower-case.
  std::string ToString() const;
  bool operator==(const Guid&) const = default;
};

namespace internal {
constexpr int HexDigit(char c) {
  return (c >= '0' && c <= '9')   ? c - '0'
         : (c >= 'a' && c <= 'f') ? c - 'a' + 10
         : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                  : -1;
}
// The text form to stored bytes; nullopt unless `text` is exactly
// xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
constexpr std::optional<Guid> GuidFromText(std::string_view text) {
  if (text.size() != kGuidTextLength) return std::nullopt;
  // Position in `text` of the high nibble of each stored byte.
  constexpr size_t kAt[kGuidBytes] = {6,  4,  2,  0,  11, 9,  16, 14,
                                      19, 21, 24, 26, 28, 30, 32, 34};
  for (size_t dash : {size_t{8}, size_t{13}, size_t{18}, size_t{23}}) {
    if (text[dash] != '-') return std::nullopt;
  }
  Guid g;
  for (size_t i = 0; i < kGuidBytes; ++i) {
    const int hi = HexDigit(text[kAt[i]]);
    const int lo = HexDigit(text[kAt[i] + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    g.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return g;
}
void InvalidGuidLiteral();  // never defined: a bad literal fails to compile
consteval Guid GuidLiteral(std::string_view text) {
  const std::optional<Guid> g = GuidFromText(text);
  if (!g) InvalidGuidLiteral();
  return *g;
}
}  // namespace internal

// The text form (either case) to a Guid; INVALID_ARGUMENT otherwise.
StatusOr<Guid> ParseGuid(std::string_view text);

// ---- named GUIDs ----

// EFI_GLOBAL_VARIABLE (UEFI 2.10 §3.3): SecureBoot, SetupMode, PK, KEK,
// BootCurrent, BootOrder, Boot####.
inline constexpr char kEfiGlobalVariableText[] =
    "8be4df61-93ca-11d2-aa0d-00e098032b8c";
inline constexpr Guid kEfiGlobalVariable =
    internal::GuidLiteral(kEfiGlobalVariableText);
// EFI_IMAGE_SECURITY_DATABASE_GUID (UEFI 2.10 §32.6.1): db, dbx.
inline constexpr Guid kEfiImageSecurityDatabase =
    internal::GuidLiteral("d719b2cb-3d3a-4596-a3bc-dad00e67656f");
// EFI_CERT_X509_GUID (UEFI 2.10 §32.4.1): a DER certificate.
inline constexpr Guid kEfiCertX509 =
    internal::GuidLiteral("a5c059a1-94e4-4aa7-87b5-ab155c2bf072");
// EFI_CERT_SHA256_GUID (UEFI 2.10 §32.4.1): a SHA-256 image hash.
inline constexpr Guid kEfiCertSha256 =
    internal::GuidLiteral("c1c41626-504c-4092-aca9-41f936934328");

}  // namespace dpuaudit::uefi

#endif  // DPUAUDIT_UEFI_GUID_H_
