#include "bluefield/lspci.h"

#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

using text::Line;

constexpr std::string_view kWhat = "lspci output";
constexpr std::string_view kVpdCapability = "Vital Product Data";
constexpr std::string_view kProductName = "Product Name:";

// Leading blank width in columns; a tab advances to the next multiple of 8
// (lspci indents with tabs, captured output often with spaces).
size_t Indent(std::string_view line) {
  size_t col = 0;
  for (char c : line) {
    if (c == ' ') {
      ++col;
    } else if (c == '\t') {
      col = (col / 8 + 1) * 8;
    } else {
      break;
    }
  }
  return col;
}

bool IsKeywordChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c >= 'a' && c <= 'z');
}

// "[PN] Part number: MBF2M516A-EEEOT" -> field; `trimmed` starts with '['.
StatusOr<LspciVpdField> ParseField(std::string_view trimmed, int line) {
  if (trimmed.size() < 4 || trimmed[3] != ']' || !IsKeywordChar(trimmed[1]) ||
      !IsKeywordChar(trimmed[2])) {
    return text::LineError(kWhat, line, "VPD field '" + text::Excerpt(trimmed) +
                               "' has no two-character [XX] keyword.");
  }
  LspciVpdField f;
  f.keyword = std::string(trimmed.substr(1, 2));
  f.line = line;
  std::string_view rest = text::Trim(trimmed.substr(4));
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) {
    return text::LineError(kWhat, line, "VPD field [" + f.keyword + "] has no ':'.");
  }
  f.label = std::string(text::Trim(rest.substr(0, colon)));
  f.value = std::string(text::Trim(rest.substr(colon + 1)));
  return f;
}

}  // namespace

std::string LspciVpd::Value(std::string_view keyword) const {
  for (const LspciVpdField& f : fields) {
    if (f.keyword == keyword) return f.value;
  }
  return "";
}

StatusOr<LspciVpd> ParseLspciVpd(std::string_view text) {
  StatusOr<std::vector<Line>> lines = text::SplitLines(text, kWhat);
  if (!lines.ok()) return lines.status();
  bool any_text = false;
  for (const Line& l : *lines)
    any_text = any_text || !text::IsBlank(l.text);
  if (!any_text) return InvalidArgumentError("lspci output is empty.");

  LspciVpd vpd;
  bool access_denied = false;
  bool in_block = false;
  size_t block_indent = 0;
  for (const Line& l : *lines) {
    std::string_view trimmed = text::Trim(l.text);
    if (trimmed.empty()) continue;
    const size_t indent = Indent(l.text);
    if (in_block && indent <= block_indent) {
      in_block = false;  // a new capability or device ends the block
    }
    if (!in_block) {
      if (text::StartsWith(trimmed, "Capabilities:") &&
          trimmed.find("<access denied>") != std::string_view::npos) {
        access_denied = true;
      }
      if (text::StartsWith(trimmed, "Capabilities:") &&
          trimmed.find(kVpdCapability) != std::string_view::npos) {
        if (vpd.has_vpd_capability) {
          return text::LineError(kWhat, l.number, "a second Vital Product Data block.");
        }
        vpd.has_vpd_capability = true;
        in_block = true;
        block_indent = indent;
      }
      continue;
    }
    if (trimmed == "End") {
      in_block = false;
      continue;
    }
    if (text::StartsWith(trimmed, kProductName)) {
      if (!vpd.product_name.empty()) {
        return text::LineError(kWhat, l.number, "a second Product Name.");
      }
      vpd.product_name =
          std::string(text::Trim(trimmed.substr(kProductName.size())));
      continue;
    }
    if (trimmed.front() != '[') continue;  // "Read-only fields:" and the like
    StatusOr<LspciVpdField> f = ParseField(trimmed, l.number);
    if (!f.ok()) return f.status();
    for (const LspciVpdField& seen : vpd.fields) {
      if (seen.keyword == f->keyword) {
        return text::LineError(kWhat, l.number, "VPD field [" + f->keyword +
                                       "] repeats line " +
                                       std::to_string(seen.line) + ".");
      }
    }
    vpd.fields.push_back(std::move(f).value());
  }
  vpd.part_number = vpd.Value("PN");
  vpd.serial_number = vpd.Value("SN");
  vpd.engineering_changes = vpd.Value("EC");
  if (!vpd.has_vpd_capability) {
    vpd.note = access_denied
                   ? "lspci could not read the capabilities (<access "
                     "denied>; needs root)"
                   : "no Vital Product Data capability in lspci output";
  } else if (vpd.fields.empty() && vpd.product_name.empty()) {
    vpd.note = "the Vital Product Data block is empty";
  }
  return vpd;
}

}  // namespace dpuaudit::bluefield
