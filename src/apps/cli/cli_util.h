// Helpers every `dpuaudit` command shares: the exit codes, error printing,
// reading small text files (reports, EARs, keys), showing times and
// peeking at JWS payloads.
#ifndef DPUAUDIT_APPS_CLI_CLI_UTIL_H_
#define DPUAUDIT_APPS_CLI_CLI_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::apps {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDeny = 1;  // deny, refused, a finding asked about
inline constexpr int kExitError = 2;
// The largest report, EAR, key or JWKS file read.
inline constexpr size_t kMaxCliFileBytes = 16u << 20;

// Prints "dpuaudit: <message>" to stderr; returns kExitError.
int Fail(const Status& s);
// Without leading spaces and newlines, and trailing spaces, \r and \n.
std::string Trim(std::string s);
// The file (at most kMaxCliFileBytes), trimmed; "-" reads stdin.
StatusOr<std::string> ReadText(const std::string& path);
// The file's bytes, untouched (at most max_bytes); "-" reads stdin.
StatusOr<Bytes> ReadBytes(const std::string& path, size_t max_bytes);
// What a dpuaudit JWS is, told by its (unverified) header "typ": a signed
// report ("dpuaudit-report+jws"), an attestation result (EAR, "JWT"), or
// something else.
enum class JwsKind { kReport, kResult };
// OK when `jws` is of `expected` kind, or when its header cannot be read
// (the caller's own parse then reports that). Otherwise INVALID_ARGUMENT
// naming the command that reads it: "FILE is an attestation result (EAR,
// typ JWT), not a report: read it with `dpuaudit result show FILE`." and
// the reverse.
Status CheckJwsKind(std::string_view jws, JwsKind expected, const std::string& file);
// "2024-11-30T07:00:00Z (1732950000)".
std::string TimeString(int64_t unix_seconds);
// The payload of a compact or flattened JWS, signature NOT checked (for
// display only). INVALID_ARGUMENT "flattened JWS has no payload." or
// "not a JWS (needs 3 dot-separated parts)."; else as Base64UrlDecode.
StatusOr<Bytes> UnverifiedJwsPayload(std::string_view jws);
// `text` as lines of at most `width` columns (bytes), broken at spaces (a
// word longer than a line is cut), the first line after `first`, the others
// after `next`; each line ends in "\n".
std::string Wrap(std::string_view text, size_t width, std::string_view first,
                 std::string_view next);
// Display width in code points (UTF-8 continuation bytes do not count).
size_t DisplayWidth(std::string_view s);
// `text` with every line wider than `width` columns wrapped (Wrap), its
// continuation lines indented 4 more than the line itself; narrower lines
// unchanged. For terminal output that must fit a width.
std::string FitLines(std::string_view text, size_t width);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_CLI_UTIL_H_
