#include "common/safe_text.h"

#include <cstdint>
#include <cstdio>

namespace dpuaudit {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view kEllipsis = "...";

// One step of the UTF-8 decoder: `len` bytes of `text` from the current
// position form one well-formed character `cp`, or (`ok` false) one maximal
// subpart of an ill-formed sequence.
struct Step {
  uint32_t cp = 0;
  size_t len = 1;
  bool ok = false;
};

// Unicode 15.0 Table 3-7 (well-formed UTF-8 byte sequences): the range of
// the second byte depends on the first; later bytes are 80..BF.
Step Decode(std::string_view text, size_t at) {
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

bool IsControl(uint32_t cp) { return cp < 0x20 || cp == 0x7F; }

bool NeedsUnicodeEscape(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

size_t Clamp(size_t max_bytes) {
  return max_bytes < kMinSafeTextBytes ? kMinSafeTextBytes : max_bytes;
}

}  // namespace

std::string SafeText(std::string_view text, size_t max_bytes) {
  max_bytes = Clamp(max_bytes);
  const size_t fits = max_bytes - kEllipsis.size();
  std::string out;
  out.reserve(text.size() < max_bytes ? text.size() : max_bytes);
  size_t cut = 0;  // out's length at the last character boundary <= fits
  char escape[16];
  for (size_t at = 0; at < text.size();) {
    const Step s = Decode(text, at);
    std::string_view piece;
    if (!s.ok) {
      piece = kReplacement;
    } else if (IsControl(s.cp)) {
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(s.cp));
      piece = escape;
    } else if (NeedsUnicodeEscape(s.cp)) {
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(s.cp));
      piece = escape;
    } else {
      piece = text.substr(at, s.len);
    }
    at += s.len;
    out.append(piece);
    if (out.size() <= fits) cut = out.size();
    if (out.size() > max_bytes) {
      out.resize(cut);
      out.append(kEllipsis);
      return out;
    }
  }
  return out;
}

bool IsSafeText(std::string_view text, size_t max_bytes) {
  if (text.size() > Clamp(max_bytes)) return false;
  for (size_t at = 0; at < text.size();) {
    const Step s = Decode(text, at);
    if (!s.ok || IsControl(s.cp) || NeedsUnicodeEscape(s.cp)) return false;
    at += s.len;
  }
  return true;
}

}  // namespace dpuaudit
