// SafeText: evidence-derived text made safe to carry in a finding, a
// decision reason, a JSON document, a log line or a terminal.
//
// Tool output and files on the DPU are bytes, not text: `bfver` may print a
// Latin-1 byte, a file may hold a NUL or an escape sequence. Every string
// derived from such evidence passes through SafeText where it enters a
// Finding, FirmwareFacts or DecisionReason (MakeSafe in common/finding.h),
// so that nothing downstream (a strict JSON dump, a log, a table) has to
// cope with it.
//
// Guarantees: the result is well-formed UTF-8 and holds no C0 control
// (U+0000-U+001F), DEL, C1 control (U+0080-U+009F), bidirectional
// formatting character (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069) or line/paragraph separator (U+2028, U+2029); it is at
// most `max_bytes` bytes long (when `max_bytes` >= kMinSafeTextBytes).
//  - An ill-formed UTF-8 sequence becomes U+FFFD, one per maximal subpart
//    (Unicode 15.0 §3.9, "U+FFFD Substitution of Maximal Subparts"), which
//    is also what nlohmann::json's error_handler_t::replace produces: text
//    repaired by either is the same.
//  - A control byte becomes `\xNN` (two lower-case hex digits), any other
//    character above is `\uNNNN`.
//  - Text longer than `max_bytes` is cut at a character boundary and ends
//    in "..." (counted within `max_bytes`).
//  - Idempotent: SafeText(SafeText(s)) == SafeText(s), so text that was
//    already made safe (a finding that crossed a JSON round trip, a reason
//    built from safe findings) is unchanged by another pass. A backslash is
//    therefore not escaped: "\x07" in the result may be an escaped BEL or
//    the four characters the evidence held.
// Does not: keep the original bytes (the evidence entry holds them, with
// its SHA-256), or make text safe for a shell or HTML.
#ifndef DPUAUDIT_COMMON_SAFE_TEXT_H_
#define DPUAUDIT_COMMON_SAFE_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace dpuaudit {

// Enough for any finding field the probes write (the longest are parser
// errors quoting a line); evidence itself is carried as bytes, not here.
inline constexpr size_t kMaxSafeTextBytes = 4096;
// Room for one escaped character and the "..." marker.
inline constexpr size_t kMinSafeTextBytes = 16;

std::string SafeText(std::string_view text,
                     size_t max_bytes = kMaxSafeTextBytes);

// True iff SafeText(text, max_bytes) == text (no allocation).
bool IsSafeText(std::string_view text, size_t max_bytes = kMaxSafeTextBytes);

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_SAFE_TEXT_H_
