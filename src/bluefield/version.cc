#include "bluefield/version.h"

#include <algorithm>
#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

constexpr size_t kMaxFieldDigits = 9;
// A git abbreviated hash: git never abbreviates below 4 hex digits.
constexpr size_t kMinHashDigits = 4;
constexpr size_t kMaxHashDigits = 40;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

Status Invalid(std::string_view component, std::string_view text,
               std::string_view why) {
  return InvalidArgumentError(std::string(component) + " version '" +
                              text::Excerpt(text) + "' " + std::string(why) +
                              ".");
}

// One field: 1-9 decimal digits.
bool ParseField(std::string_view field, uint64_t* out) {
  if (field.empty() || field.size() > kMaxFieldDigits) return false;
  uint64_t v = 0;
  for (char c : field) {
    if (!IsDigit(c)) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// "32.41.1000" -> [32, 41, 1000]. `component`/`whole` are for messages.
Status ParseDotted(std::string_view dotted, std::string_view component,
                   std::string_view whole, std::vector<uint64_t>* parts) {
  if (dotted.empty()) return Invalid(component, whole, "has no fields");
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string_view field = dotted.substr(start, dot == std::string_view::npos
                                                      ? std::string_view::npos
                                                      : dot - start);
    uint64_t v = 0;
    if (!ParseField(field, &v)) {
      return Invalid(component, whole,
                     "has field '" + text::Excerpt(field) +
                         "', not 1 to 9 decimal digits");
    }
    parts->push_back(v);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return OkStatus();
}

// "<dotted>[-<commits>][-g<hash>]" (git describe of a release tag).
Status ParseUefi(std::string_view version, std::string_view component,
                 std::string_view whole, std::vector<uint64_t>* parts) {
  size_t dash = version.find('-');
  DPA_RETURN_IF_ERROR(
      ParseDotted(version.substr(0, dash), component, whole, parts));
  if (dash == std::string_view::npos) return OkStatus();
  std::string_view rest = version.substr(dash + 1);
  if (!rest.empty() && rest[0] != 'g') {
    size_t next = rest.find('-');
    uint64_t commits = 0;
    if (!ParseField(rest.substr(0, next), &commits)) {
      return Invalid(component, whole,
                     "has commit count '" +
                         text::Excerpt(rest.substr(0, next)) +
                         "', not 1 to 9 decimal digits");
    }
    parts->push_back(commits);
    if (next == std::string_view::npos) return OkStatus();
    rest = rest.substr(next + 1);
  }
  // What is left must be "g<hash>".
  if (rest.size() < 1 + kMinHashDigits || rest.size() > 1 + kMaxHashDigits ||
      rest[0] != 'g' ||
      !IsLowerHex(rest.substr(1))) {
    return Invalid(component, whole,
                   "has suffix '" + text::Excerpt(rest) +
                       "', not g<4 to 40 lower-case hex digits>");
  }
  return OkStatus();
}

}  // namespace

bool IsOrderedComponent(std::string_view component) {
  return component == "nic-fw" || component == "bsp" || component == "dotted" ||
         component == "atf" || component == "uefi";
}

StatusOr<ComparableVersion> ParseComparableVersion(std::string_view component,
                                                   std::string_view text) {
  if (!IsOrderedComponent(component)) {
    return InvalidArgumentError("unknown version component '" +
                                text::Excerpt(component) + "' for version '" +
                                text::Excerpt(text) + "'.");
  }
  ComparableVersion v;
  v.text = std::string(text);
  if (component == "atf") {
    size_t colon = text.find(':');
    if (colon == std::string_view::npos) {
      return Invalid(component, text, "has no ':' before the build version");
    }
    DPA_RETURN_IF_ERROR(
        ParseUefi(text.substr(colon + 1), component, text, &v.parts));
  } else if (component == "uefi") {
    DPA_RETURN_IF_ERROR(ParseUefi(text, component, text, &v.parts));
  } else {
    DPA_RETURN_IF_ERROR(ParseDotted(text, component, text, &v.parts));
  }
  return v;
}

int CompareVersions(const ComparableVersion& a, const ComparableVersion& b) {
  const size_t n = std::max(a.parts.size(), b.parts.size());
  for (size_t i = 0; i < n; ++i) {
    uint64_t x = i < a.parts.size() ? a.parts[i] : 0;
    uint64_t y = i < b.parts.size() ? b.parts[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

}  // namespace dpuaudit::bluefield
