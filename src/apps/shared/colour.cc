#include "apps/shared/colour.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace dpuaudit::apps {

bool ColourOn() {
  static const bool on = [] {
    const char* no_colour = std::getenv("NO_COLOR");
    if (no_colour != nullptr && *no_colour != '\0') return false;
    const char* term = std::getenv("TERM");
    if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
    return isatty(STDOUT_FILENO) == 1;
  }();
  return on;
}

std::string Paint(Colour c, std::string_view text) {
  if (!ColourOn()) return std::string(text);
  const char* sgr = c == Colour::kRed      ? "\x1b[31m"
                    : c == Colour::kGreen  ? "\x1b[32m"
                    : c == Colour::kYellow ? "\x1b[33m"
                                           : "\x1b[1m";
  return std::string(sgr) + std::string(text) + "\x1b[0m";
}

std::string PaintVerdict(std::string_view word, std::string_view text) {
  if (word == "fail" || word == "deny" || word == "unknown" || word.rfind("fail/", 0) == 0 ||
      word.rfind("unknown/", 0) == 0) {
    if (word.size() > 5 && word.substr(word.size() - 5) == "/warn") {
      return Paint(Colour::kYellow, text);
    }
    return Paint(Colour::kRed, text);
  }
  if (word == "warn") return Paint(Colour::kYellow, text);
  if (word == "pass" || word == "admit") return Paint(Colour::kGreen, text);
  return std::string(text);
}

}  // namespace dpuaudit::apps
