#include "common/safe_text.h"

#include <cstdint>

#include "common/bytes.h"
#include "common/utf.h"

namespace dpuaudit {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view kEllipsis = "...";

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
  std::string escape;
  for (size_t at = 0; at < text.size();) {
    const Utf8Char s = DecodeUtf8Char(text, at);
    std::string_view piece;
    if (!s.ok) {
      piece = kReplacement;
    } else if (IsControl(s.cp)) {
      escape = "\\x" + HexDigits(s.cp, 2);
      piece = escape;
    } else if (NeedsUnicodeEscape(s.cp)) {
      escape = "\\u" + HexDigits(s.cp, 4);
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
    const Utf8Char s = DecodeUtf8Char(text, at);
    if (!s.ok || IsControl(s.cp) || NeedsUnicodeEscape(s.cp)) return false;
    at += s.len;
  }
  return true;
}

}  // namespace dpuaudit
