#include "common/bytes.h"

#include <array>
#include <cstdio>

namespace dpuaudit {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr char kHexUpper[] = "0123456789ABCDEF";
constexpr char kB64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kB64Url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::array<int8_t, 256> ReverseTable(const char* alphabet) {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int i = 0; i < 64; ++i) {
    t[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
  }
  return t;
}

std::string Encode64(ByteView in, const char* alphabet, bool pad) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    out.push_back(alphabet[v & 63]);
  }
  size_t rest = in.size() - i;
  if (rest == 1) {
    uint32_t v = uint32_t{in[i]} << 16;
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    if (pad) out.append("==");
  } else if (rest == 2) {
    uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8);
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    if (pad) out.push_back('=');
  }
  return out;
}

// Checks unpadded text (padding already stripped and checked by caller) and,
// when `out` is not null, decodes it into *out. Four characters at a time
// into a buffer sized once; the first invalid character is named by offset.
Status Decode64Into(std::string_view in, const std::array<int8_t, 256>& t,
                    std::string_view name, Bytes* out) {
  if (in.size() % 4 == 1) {
    return InvalidArgumentError(std::string(name) + " length " +
                                std::to_string(in.size()) + " is impossible.");
  }
  auto invalid_at = [&](size_t from) {
    size_t i = from;
    while (t[static_cast<uint8_t>(in[i])] >= 0) ++i;
    return InvalidArgumentError(std::string(name) + ": invalid character at offset " +
                                std::to_string(i) + ".");
  };
  const size_t full = in.size() / 4;
  const size_t rest = in.size() % 4;  // 0, 2 or 3 characters left
  uint8_t* dst = nullptr;
  if (out != nullptr) {
    out->resize(full * 3 + (rest == 0 ? 0 : rest - 1));
    dst = out->data();
  }
  const auto* src = reinterpret_cast<const uint8_t*>(in.data());
  for (size_t q = 0; q < full; ++q, src += 4) {
    const int32_t a = t[src[0]], b = t[src[1]], c = t[src[2]], d = t[src[3]];
    if ((a | b | c | d) < 0) return invalid_at(q * 4);
    if (dst != nullptr) {
      const uint32_t v = (static_cast<uint32_t>(a) << 18) | (static_cast<uint32_t>(b) << 12) |
                         (static_cast<uint32_t>(c) << 6) | static_cast<uint32_t>(d);
      dst[0] = static_cast<uint8_t>(v >> 16);
      dst[1] = static_cast<uint8_t>(v >> 8);
      dst[2] = static_cast<uint8_t>(v);
      dst += 3;
    }
  }
  if (rest == 0) return OkStatus();
  uint32_t v = 0;
  for (size_t i = 0; i < rest; ++i) {
    const int32_t x = t[src[i]];
    if (x < 0) return invalid_at(full * 4);
    v = (v << 6) | static_cast<uint32_t>(x);
  }
  // Non-canonical encodings (non-zero leftover bits) are rejected.
  const int bits = rest == 2 ? 4 : 2;  // 12 bits hold 1 byte, 18 hold 2
  if ((v & ((1u << bits) - 1)) != 0) {
    return InvalidArgumentError(std::string(name) +
                                ": non-zero trailing bits (non-canonical encoding).");
  }
  v >>= bits;
  if (dst != nullptr) {
    if (rest == 3) {
      dst[0] = static_cast<uint8_t>(v >> 8);
      dst[1] = static_cast<uint8_t>(v);
    } else {
      dst[0] = static_cast<uint8_t>(v);
    }
  }
  return OkStatus();
}

StatusOr<Bytes> Decode64(std::string_view in, const std::array<int8_t, 256>& t,
                         std::string_view name) {
  Bytes out;
  DPA_RETURN_IF_ERROR(Decode64Into(in, t, name, &out));
  return out;
}

}  // namespace

std::string HexEncode(ByteView data) {
  std::string out;
  out.reserve(data.size() * 2);
  for (uint8_t b : data) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsLowerHexOfLength(std::string_view s, size_t digits) {
  return s.size() == digits && IsLowerHex(s);
}

std::string HexDigits(uint64_t v, size_t min_digits, HexCase hex_case) {
  const char* digits = hex_case == HexCase::kUpper ? kHexUpper : kHex;
  char buf[16];
  size_t n = 0;
  do {
    buf[n++] = digits[v & 0xf];
    v >>= 4;
  } while (v != 0);
  std::string out(min_digits > n ? min_digits - n : 0, '0');
  while (n > 0) out.push_back(buf[--n]);
  return out;
}

std::string HexNumber(uint64_t v, size_t min_digits, HexCase hex_case) {
  return "0x" + HexDigits(v, min_digits, hex_case);
}

StatusOr<Bytes> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return InvalidArgumentError("hex string has odd length " +
                                std::to_string(hex.size()) + ".");
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Bytes out(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      return InvalidArgumentError("hex string: invalid character at offset " +
                                  std::to_string(hi < 0 ? i : i + 1) + ".");
    }
    out[i / 2] = static_cast<uint8_t>((hi << 4) | lo);
  }
  return out;
}

std::string Base64Encode(ByteView data) { return Encode64(data, kB64, true); }

StatusOr<Bytes> Base64Decode(std::string_view text) {
  static const auto table = ReverseTable(kB64);
  if (text.size() % 4 != 0) {
    return InvalidArgumentError("base64 length " + std::to_string(text.size()) +
                                " is not a multiple of 4.");
  }
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  return Decode64(text.substr(0, text.size() - pad), table, "base64");
}

std::string Base64UrlEncode(ByteView data) {
  return Encode64(data, kB64Url, false);
}

StatusOr<Bytes> Base64UrlDecode(std::string_view text) {
  static const auto table = ReverseTable(kB64Url);
  return Decode64(text, table, "base64url");
}

Status CheckBase64Url(std::string_view text) {
  static const auto table = ReverseTable(kB64Url);
  return Decode64Into(text, table, "base64url", nullptr);
}

bool ConstantTimeEquals(ByteView a, ByteView b) {
  if (a.size() != b.size()) return false;
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

Status ByteReader::Need(size_t n, std::string_view what) const {
  if (n > remaining()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.*s at offset 0x%zx: need %zu bytes, %zu left.",
                  static_cast<int>(what.size()), what.data(), offset_, n,
                  remaining());
    return OutOfRangeError(buf);
  }
  return OkStatus();
}

StatusOr<uint8_t> ByteReader::U8(std::string_view what) {
  DPA_RETURN_IF_ERROR(Need(1, what));
  return data_[offset_++];
}

StatusOr<uint16_t> ByteReader::U16Le(std::string_view what) {
  DPA_RETURN_IF_ERROR(Need(2, what));
  uint16_t v = static_cast<uint16_t>(data_[offset_] | (data_[offset_ + 1] << 8));
  offset_ += 2;
  return v;
}

StatusOr<uint32_t> ByteReader::U32Le(std::string_view what) {
  DPA_RETURN_IF_ERROR(Need(4, what));
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | data_[offset_ + static_cast<size_t>(i)];
  offset_ += 4;
  return v;
}

StatusOr<uint64_t> ByteReader::U64Le(std::string_view what) {
  DPA_RETURN_IF_ERROR(Need(8, what));
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | data_[offset_ + static_cast<size_t>(i)];
  offset_ += 8;
  return v;
}

StatusOr<uint16_t> ByteReader::U16Be(std::string_view what) {
  DPA_RETURN_IF_ERROR(Need(2, what));
  uint16_t v = static_cast<uint16_t>((data_[offset_] << 8) | data_[offset_ + 1]);
  offset_ += 2;
  return v;
}

StatusOr<uint32_t> ByteReader::U32Be(std::string_view what) {
  DPA_RETURN_IF_ERROR(Need(4, what));
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | data_[offset_ + static_cast<size_t>(i)];
  offset_ += 4;
  return v;
}

StatusOr<ByteView> ByteReader::Take(size_t n, std::string_view what) {
  DPA_RETURN_IF_ERROR(Need(n, what));
  ByteView v = data_.subspan(offset_, n);
  offset_ += n;
  return v;
}

Status ByteReader::Skip(size_t n, std::string_view what) {
  DPA_RETURN_IF_ERROR(Need(n, what));
  offset_ += n;
  return OkStatus();
}

}  // namespace dpuaudit
