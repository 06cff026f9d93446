// Unicode encodings: UTF-8 decoding and validation, UTF-8 encoding, and
// UTF-16LE (as UEFI firmware writes it) to UTF-8.
//
// Guarantees: "well-formed UTF-8" is Unicode 15.0 Table 3-7 exactly (no
// overlongs, no surrogates, nothing above U+10FFFF); every decoder is
// bounds-checked and reads only its input. The strict UTF-16 decoder
// rejects what the lossy one repairs, and its errors name `what` and the
// offset (decimal, `offset` plus the byte index) of the offending unit.
// Does not: normalise, or judge whether text is printable (SafeText does).
#ifndef DPUAUDIT_COMMON_UTF_H_
#define DPUAUDIT_COMMON_UTF_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit {

// One step of the UTF-8 decoder at `at` (< text.size()): `len` bytes form
// one well-formed character `cp`, or (`ok` false) one maximal subpart of an
// ill-formed sequence (Unicode 15.0 §3.9), the unit U+FFFD replaces.
struct Utf8Char {
  uint32_t cp = 0;
  size_t len = 1;
  bool ok = false;
};
Utf8Char DecodeUtf8Char(std::string_view text, size_t at);

// Offset of the first byte of the first ill-formed sequence, or npos.
size_t InvalidUtf8At(std::string_view text);
inline bool IsValidUtf8(std::string_view text) {
  return InvalidUtf8At(text) == std::string_view::npos;
}

// Appends the UTF-8 form of `cp`, a Unicode scalar value (not a surrogate,
// at most U+10FFFF).
void AppendUtf8(uint32_t cp, std::string& out);

// Strict UTF-16LE to UTF-8, the whole of `data` (surrogate pairs decoded).
// INVALID_ARGUMENT, `at` being `offset` + the unit's byte index:
//   "<what> is N bytes, not whole UTF-16 code units."
//   "<what> has a NUL at offset <at>."  (strip terminators first)
//   "<what> has an unpaired surrogate 0xDC00 at offset <at>."
StatusOr<std::string> Utf16LeToUtf8(ByteView data, std::string_view what,
                                    size_t offset = 0);

// Lossy UTF-16LE to UTF-8 for display: stops at the first NUL unit, a lone
// surrogate becomes U+FFFD, a C0 control or DEL a space; an odd last byte
// is ignored. The result is well-formed UTF-8.
std::string Utf16LeToUtf8Lossy(ByteView data);

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_UTF_H_
