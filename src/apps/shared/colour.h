// Colour in human output: only when stdout is a terminal, never with
// NO_COLOR set (https://no-color.org) or TERM=dumb, never in --json.
//
// Guarantees: Paint returns `text` unchanged when colour is off, so output
// piped to a file or a script has no escape sequences; the decision is made
// once per process.
#ifndef DPUAUDIT_APPS_SHARED_COLOUR_H_
#define DPUAUDIT_APPS_SHARED_COLOUR_H_

#include <string>
#include <string_view>

namespace dpuaudit::apps {

enum class Colour { kRed, kGreen, kYellow, kBold };

// isatty(stdout) && NO_COLOR unset or empty && TERM != "dumb".
bool ColourOn();
// `text` wrapped in the ANSI SGR sequence for `c` when ColourOn().
std::string Paint(Colour c, std::string_view text);
// For a verdict or decision word: fail/deny/unknown red, warn yellow,
// pass/admit green.
std::string PaintVerdict(std::string_view word, std::string_view text);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_COLOUR_H_
