#include "bluefield/flint.h"

#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

using text::Line;

constexpr std::string_view kWhat = "flint output";
constexpr std::string_view kRomInfo = "Rom Info";

// A key starts with a letter and holds letters, digits, spaces and a few
// punctuation marks; it is followed by ':' and then blank or end of line.
bool SplitKey(std::string_view line, std::string_view* key,
              std::string_view* value) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  char first = line[0];
  if (!((first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z'))) {
    return false;
  }
  for (size_t i = 0; i < colon; ++i) {
    char c = line[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == ' ' || c == '_' || c == '-' ||
              c == '(' || c == ')' || c == '/' || c == '.';
    if (!ok) return false;
  }
  if (colon + 1 < line.size() && line[colon + 1] != ' ' &&
      line[colon + 1] != '\t') {
    return false;
  }
  *key = text::Trim(line.substr(0, colon));
  *value = text::Trim(line.substr(colon + 1));
  return true;
}

}  // namespace

const FlintField* FlintQuery::Find(std::string_view key) const {
  for (const FlintField& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::string FlintQuery::Value(std::string_view key) const {
  const FlintField* f = Find(key);
  return f == nullptr ? std::string() : f->value;
}

std::string FirstToken(std::string_view value) {
  std::vector<std::string_view> tok = text::SplitWhitespace(value);
  return tok.empty() ? std::string() : std::string(tok[0]);
}

StatusOr<FlintQuery> ParseFlintQuery(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(std::vector<Line> lines,
                       text::SplitLines(text, kWhat));
  FlintQuery q;
  for (const Line& l : lines) {
    if (text::IsBlank(l.text)) continue;
    bool indented = l.text[0] == ' ' || l.text[0] == '\t';
    std::string_view key, value;
    if (!indented && SplitKey(l.text, &key, &value)) {
      q.fields.push_back(
          FlintField{std::string(key), std::string(value), l.number});
      if (key == kRomInfo && !value.empty()) q.rom_info.emplace_back(value);
      continue;
    }
    // Continuation: any indented line after a field, or a column-0 line
    // right after `Rom Info` lines (BF2 fixture, docs/bluefield.md#flint).
    bool after_rom = !q.fields.empty() && q.fields.back().key == kRomInfo;
    if (q.fields.empty() || (!indented && !after_rom)) {
      return text::LineError(kWhat, l.number, "expected 'Key: value', got '" +
                                     text::Excerpt(l.text) + "'.");
    }
    std::string_view cont = text::Trim(l.text);
    FlintField& last = q.fields.back();
    if (!last.value.empty()) last.value += "\n";
    last.value += std::string(cont);
    if (after_rom) q.rom_info.emplace_back(cont);
  }
  if (q.fields.empty()) {
    return InvalidArgumentError(std::string(kWhat) + ": no fields.");
  }
  return q;
}

}  // namespace dpuaudit::bluefield
