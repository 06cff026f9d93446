// Line and token helpers shared by the tool-output parsers (isolation, attest).
//
// Guarantees: lines are numbered from 1; a trailing "\r" is dropped from each
// line; the empty remainder after a final "\n" is not a line. Text holding a
// NUL byte is rejected (tool output is text; a NUL means garbage).
// Does not: interpret any content, or check encodings beyond NUL bytes.
#ifndef DPUAUDIT_COMMON_TEXT_LINES_H_
#define DPUAUDIT_COMMON_TEXT_LINES_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::text {

struct Line {
  int number = 0;         // 1-based
  std::string_view text;  // without "\n" / "\r\n"
};

// Splits `text` into lines. INVALID_ARGUMENT naming `what` and the line if
// the text contains a NUL byte.
StatusOr<std::vector<Line>> SplitLines(std::string_view text,
                                       std::string_view what);

// INVALID_ARGUMENT "<what> line <line>: <message>", the one form of a
// parser's error about one line ("mst status output line 3: ...").
Status LineError(std::string_view what, int line, std::string_view message);

// Views into `text`: a trimmed copy, or the runs of non-blank characters.
std::string_view Trim(std::string_view text);
std::vector<std::string_view> SplitWhitespace(std::string_view text);

bool StartsWith(std::string_view text, std::string_view prefix);
bool IsBlank(std::string_view text);
// True for a non-empty line made only of '-' (title underlines).
bool IsDashRule(std::string_view text);

// Text for error messages: at most 60 characters, non-printable bytes as '?'.
std::string Excerpt(std::string_view text);

}  // namespace dpuaudit::text

#endif  // DPUAUDIT_COMMON_TEXT_LINES_H_
