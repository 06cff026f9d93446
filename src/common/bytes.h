// Byte buffers and their text encodings (hex, base64, base64url), plus a
// bounds-checked ByteReader for binary parsing.
//
// Guarantees: decoders are strict. Base64url rejects padding and any
// character outside the URL-safe alphabet; base64 requires canonical padding;
// hex requires an even number of [0-9a-fA-F]. Errors name the offset.
// Hex numbers (HexDigits, HexNumber) print as printf's %x / %X would.
// Does not: allocate more than the input implies.
#ifndef DPUAUDIT_COMMON_BYTES_H_
#define DPUAUDIT_COMMON_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dpuaudit {

using Bytes = std::vector<uint8_t>;
using ByteView = std::span<const uint8_t>;

inline ByteView AsBytes(std::string_view s) {
  return ByteView(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
inline Bytes ToBytes(std::string_view s) {
  return Bytes(s.begin(), s.end());
}
inline std::string ToString(ByteView b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::string HexEncode(ByteView data);  // lower case
StatusOr<Bytes> HexDecode(std::string_view hex);

// Only [0-9a-f] (an empty string is lower hex; callers check the length).
bool IsLowerHex(std::string_view s);
// Exactly `digits` characters of [0-9a-f] (a SHA-256 is 64).
bool IsLowerHexOfLength(std::string_view s, size_t digits);

// A number in hex, zero-padded to at least `min_digits` digits, no prefix:
// HexDigits(0x1f, 4) == "001f"; HexDigits(0xab, 4, HexCase::kUpper) == "00AB".
enum class HexCase { kLower, kUpper };
std::string HexDigits(uint64_t v, size_t min_digits = 1,
                      HexCase hex_case = HexCase::kLower);
// The same with "0x" before it: HexNumber(0x1f) == "0x1f" (printf "0x%llx").
std::string HexNumber(uint64_t v, size_t min_digits = 1,
                      HexCase hex_case = HexCase::kLower);
// printf "0x%04x" and "0x%08x".
inline std::string Hex16(uint16_t v) { return HexNumber(v, 4); }
inline std::string Hex32(uint32_t v) { return HexNumber(v, 8); }

std::string Base64Encode(ByteView data);  // RFC 4648 §4, padded
StatusOr<Bytes> Base64Decode(std::string_view text);
std::string Base64UrlEncode(ByteView data);  // RFC 4648 §5, no padding
StatusOr<Bytes> Base64UrlDecode(std::string_view text);
// Whether Base64UrlDecode would accept `text`, with the same error, without
// decoding it (no allocation).
Status CheckBase64Url(std::string_view text);

// Constant-time comparison for secrets (tokens, MACs).
bool ConstantTimeEquals(ByteView a, ByteView b);

// Little-endian, bounds-checked reader. Every failed read leaves the offset
// unchanged and returns an OUT_OF_RANGE error naming `what` and the offset.
class ByteReader {
 public:
  explicit ByteReader(ByteView data) : data_(data) {}
  size_t offset() const { return offset_; }
  size_t remaining() const { return data_.size() - offset_; }
  bool empty() const { return remaining() == 0; }

  StatusOr<uint8_t> U8(std::string_view what);
  StatusOr<uint16_t> U16Le(std::string_view what);
  StatusOr<uint32_t> U32Le(std::string_view what);
  StatusOr<uint64_t> U64Le(std::string_view what);
  StatusOr<uint16_t> U16Be(std::string_view what);
  StatusOr<uint32_t> U32Be(std::string_view what);
  StatusOr<ByteView> Take(size_t n, std::string_view what);
  Status Skip(size_t n, std::string_view what);

 private:
  Status Need(size_t n, std::string_view what) const;
  ByteView data_;
  size_t offset_ = 0;
};

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_BYTES_H_
