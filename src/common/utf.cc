#include "common/utf.h"

namespace dpuaudit {
namespace {

uint32_t LoadU16Le(ByteView d, size_t at) {
  return static_cast<uint32_t>(d[at]) | (static_cast<uint32_t>(d[at + 1]) << 8);
}
bool IsHighSurrogate(uint32_t u) { return u >= 0xd800 && u <= 0xdbff; }
bool IsLowSurrogate(uint32_t u) { return u >= 0xdc00 && u <= 0xdfff; }
uint32_t Combine(uint32_t hi, uint32_t lo) {
  return 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
}

}  // namespace

// Unicode 15.0 Table 3-7 (well-formed UTF-8 byte sequences): the range of
// the second byte depends on the first; later bytes are 80..BF.
Utf8Char DecodeUtf8Char(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t b0 = byte(at);
  if (b0 < 0x80) return {b0, 1, true};
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0Fu;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07u;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {};  // 80..C1, F5..FF: never a lead byte
  }
  size_t len = 1;
  for (size_t k = 0; k < need; ++k) {
    if (at + len >= text.size()) return {0, len, false};  // cut short
    const uint8_t b = byte(at + len);
    const uint8_t min = k == 0 ? lo : 0x80;
    const uint8_t max = k == 0 ? hi : 0xBF;
    if (b < min || b > max) return {0, len, false};  // b starts anew
    cp = (cp << 6) | (b & 0x3Fu);
    ++len;
  }
  return {cp, len, true};
}

size_t InvalidUtf8At(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const Utf8Char c = DecodeUtf8Char(text, at);
    if (!c.ok) return at;
    at += c.len;
  }
  return std::string_view::npos;
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

StatusOr<std::string> Utf16LeToUtf8(ByteView data, std::string_view what,
                                    size_t offset) {
  if (data.size() % 2 != 0) {
    return InvalidArgumentError(std::string(what) + " is " +
                                std::to_string(data.size()) +
                                " bytes, not whole UTF-16 code units.");
  }
  std::string out;
  out.reserve(data.size() / 2);
  for (size_t i = 0; i < data.size(); i += 2) {
    const uint32_t u = LoadU16Le(data, i);
    const size_t at = offset + i;
    if (u == 0) {
      return InvalidArgumentError(std::string(what) + " has a NUL at offset " +
                                  std::to_string(at) + ".");
    }
    if (IsLowSurrogate(u) ||
        (IsHighSurrogate(u) &&
         (i + 3 >= data.size() || !IsLowSurrogate(LoadU16Le(data, i + 2))))) {
      return InvalidArgumentError(
          std::string(what) + " has an unpaired surrogate " +
          HexNumber(u, 4, HexCase::kUpper) + " at offset " +
          std::to_string(at) + ".");
    }
    if (IsHighSurrogate(u)) {
      AppendUtf8(Combine(u, LoadU16Le(data, i + 2)), out);
      i += 2;
      continue;
    }
    AppendUtf8(u, out);
  }
  return out;
}

std::string Utf16LeToUtf8Lossy(ByteView data) {
  constexpr uint32_t kReplacement = 0xfffd;
  std::string out;
  for (size_t i = 0; i + 1 < data.size(); i += 2) {
    const uint32_t u = LoadU16Le(data, i);
    if (u == 0) break;
    if (IsHighSurrogate(u)) {
      const uint32_t lo = i + 3 < data.size() ? LoadU16Le(data, i + 2) : 0;
      if (IsLowSurrogate(lo)) {
        AppendUtf8(Combine(u, lo), out);
        i += 2;
      } else {
        AppendUtf8(kReplacement, out);
      }
    } else if (IsLowSurrogate(u)) {
      AppendUtf8(kReplacement, out);
    } else if (u < 0x20 || u == 0x7f) {
      out.push_back(' ');
    } else {
      AppendUtf8(u, out);
    }
  }
  return out;
}

}  // namespace dpuaudit
