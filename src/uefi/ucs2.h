// UCS-2 / UTF-16LE text as UEFI stores it (CHAR16 strings: load option
// descriptions, device-path file names, variable names) to UTF-8.
//
// One decoder, two policies:
//  - Ucs2ToUtf8 (strict, for values that are reported as-is): every code
//    unit must decode. A NUL unit, an unpaired surrogate or an odd byte
//    count is INVALID_ARGUMENT naming `what` and the byte offset
//    (`offset` is the offset of units[0] in the caller's data):
//    "description has an unpaired surrogate 0xDC00 at offset 12."
//    Surrogate pairs are accepted. Callers strip terminators first.
//  - Ucs2ToUtf8Lossy (for descriptions of untrusted event data): decodes up
//    to the first NUL; a lone surrogate becomes U+FFFD, a control character
//    (below 0x20, or 0x7f) a space; an odd last byte is ignored. Never fails.
// Guarantees: the result is valid UTF-8.
// Does not: normalise, or trim.
#ifndef DPUAUDIT_UEFI_UCS2_H_
#define DPUAUDIT_UEFI_UCS2_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::uefi {

StatusOr<std::string> Ucs2ToUtf8(ByteView le, size_t offset,
                                 std::string_view what);
std::string Ucs2ToUtf8Lossy(ByteView le);

}  // namespace dpuaudit::uefi

#endif  // DPUAUDIT_UEFI_UCS2_H_
