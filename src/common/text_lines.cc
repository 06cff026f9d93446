#include "common/text_lines.h"

#include <string>

namespace dpuaudit::text {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
         c == '\f';
}

}  // namespace

Status LineError(std::string_view what, int line, std::string_view message) {
  std::string m(what);
  m += " line ";
  m += std::to_string(line);
  m += ": ";
  m += message;
  return InvalidArgumentError(std::move(m));
}

StatusOr<std::vector<Line>> SplitLines(std::string_view text,
                                       std::string_view what) {
  std::vector<Line> lines;
  int number = 1;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\0') != std::string_view::npos) {
      return LineError(what, number, "contains a NUL byte.");
    }
    lines.push_back(Line{number, line});
    ++number;
    start = end + 1;
  }
  return lines;
}

std::string_view Trim(std::string_view text) {
  size_t b = 0;
  while (b < text.size() && IsSpace(text[b])) ++b;
  size_t e = text.size();
  while (e > b && IsSpace(text[e - 1])) --e;
  return text.substr(b, e - b);
}

std::vector<std::string_view> SplitWhitespace(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t b = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i > b) out.push_back(text.substr(b, i - b));
  }
  return out;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool IsBlank(std::string_view text) { return Trim(text).empty(); }

bool IsDashRule(std::string_view text) {
  std::string_view t = Trim(text);
  return !t.empty() && t.find_first_not_of('-') == std::string_view::npos;
}

std::string Excerpt(std::string_view text) {
  constexpr size_t kMax = 60;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  }
  if (text.size() > kMax) out += "...";
  return out;
}

}  // namespace dpuaudit::text
