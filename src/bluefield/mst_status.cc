#include "bluefield/mst_status.h"

#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

using text::Line;

constexpr std::string_view kWhat = "mst status output";
constexpr std::string_view kMstPrefix = "/dev/mst/";

// Small signed decimal ("-1", "0", "1"); nullopt otherwise.
std::optional<int> SmallInt(std::string_view s) {
  bool negative = !s.empty() && s[0] == '-';
  if (negative) s.remove_prefix(1);
  if (s.empty() || s.size() > 4 ||
      s.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return negative ? -v : v;
}

// PCI address "bb:dd.f" or "dddd:bb:dd.f" (hex digits).
bool LooksLikePci(std::string_view s) {
  size_t dot = s.rfind('.');
  if (dot == std::string_view::npos || s.find(':') == std::string_view::npos) {
    return false;
  }
  return s.find_first_not_of("0123456789abcdefABCDEF:.") ==
         std::string_view::npos;
}

StatusOr<MstDevice> ParseRow(const Line& l) {
  std::vector<std::string_view> tok = text::SplitWhitespace(l.text);
  if (tok.size() < 3) {
    return text::LineError(kWhat, l.number, "expected 'TYPE MST PCI ...', got '" +
                                   text::Excerpt(l.text) + "'.");
  }
  MstDevice dev;
  dev.line = l.number;
  std::string_view type = tok[0];
  size_t paren = type.find('(');
  if (paren != std::string_view::npos) {
    std::string_view rev = type.substr(paren);
    if (!text::StartsWith(rev, "(rev:") || rev.back() != ')') {
      return text::LineError(kWhat, l.number, "device type '" + text::Excerpt(type) +
                                     "' has a malformed revision.");
    }
    std::optional<int> r = SmallInt(rev.substr(5, rev.size() - 6));
    if (!r || *r < 0) {
      return text::LineError(kWhat, l.number, "device type '" + text::Excerpt(type) +
                                     "' has a malformed revision.");
    }
    dev.revision = r;
    type = type.substr(0, paren);
  }
  dev.device_type = std::string(type);
  if (!text::StartsWith(tok[1], kMstPrefix) ||
      tok[1].size() == kMstPrefix.size()) {
    return text::LineError(kWhat, l.number, "MST path '" + text::Excerpt(tok[1]) +
                                   "' is not under /dev/mst/.");
  }
  dev.mst_path = std::string(tok[1]);
  dev.generation = GenerationFromMstName(dev.mst_path);
  if (!LooksLikePci(tok[2])) {
    return text::LineError(kWhat, l.number, "PCI address '" + text::Excerpt(tok[2]) +
                                   "' is malformed.");
  }
  dev.pci = std::string(tok[2]);
  for (size_t i = 3; i < tok.size(); ++i) {
    std::string_view t = tok[i];
    if (i + 1 == tok.size() && SmallInt(t)) {
      dev.numa = SmallInt(t);
    } else if (text::StartsWith(t, "net-")) {
      size_t b = 0;
      while (b <= t.size()) {
        size_t e = t.find(',', b);
        if (e == std::string_view::npos) e = t.size();
        std::string_view name = t.substr(b, e - b);
        if (text::StartsWith(name, "net-")) name.remove_prefix(4);
        if (!name.empty()) dev.net.emplace_back(name);
        b = e + 1;
      }
    } else if (dev.rdma.empty() && dev.net.empty()) {
      dev.rdma = std::string(t);
    } else {
      return text::LineError(kWhat, l.number,
                       "unexpected column '" + text::Excerpt(t) + "'.");
    }
  }
  return dev;
}

}  // namespace

std::string_view GenerationName(Generation generation) {
  switch (generation) {
    case Generation::kBlueField1:
      return "BF1";
    case Generation::kBlueField2:
      return "BF2";
    case Generation::kBlueField3:
      return "BF3";
    case Generation::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view GenerationModel(Generation generation) {
  switch (generation) {
    case Generation::kBlueField1:
      return "BlueField";
    case Generation::kBlueField2:
      return "BlueField-2";
    case Generation::kBlueField3:
      return "BlueField-3";
    case Generation::kUnknown:
      return "";
  }
  return "";
}

Generation GenerationFromMstName(std::string_view name_or_path) {
  size_t slash = name_or_path.rfind('/');
  std::string_view name = slash == std::string_view::npos
                              ? name_or_path
                              : name_or_path.substr(slash + 1);
  // PCI device ids (docs/bluefield.md#mst-devices): 0xa2d2 = 41682,
  // 0xa2d6 = 41686, 0xa2dc = 41692.
  if (text::StartsWith(name, "mt41682_")) return Generation::kBlueField1;
  if (text::StartsWith(name, "mt41686_")) return Generation::kBlueField2;
  if (text::StartsWith(name, "mt41692_")) return Generation::kBlueField3;
  return Generation::kUnknown;
}

StatusOr<MstStatus> ParseMstStatus(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(std::vector<Line> lines,
                       text::SplitLines(text, kWhat));
  MstStatus status;
  bool have_header = false;
  bool in_table = false;
  for (const Line& l : lines) {
    std::string_view t = text::Trim(l.text);
    if (!in_table) {
      if (text::StartsWith(t, "DEVICE_TYPE")) {
        std::vector<std::string_view> cols = text::SplitWhitespace(t);
        if (cols.size() < 3 || cols[1] != "MST" || cols[2] != "PCI") {
          return text::LineError(kWhat, l.number, "table header '" + text::Excerpt(t) +
                                         "' lacks MST and PCI columns.");
        }
        have_header = in_table = true;
      }
      continue;
    }
    if (t.empty()) continue;
    // A new section ("Cable devices:") ends the PCI table.
    if (t.back() == ':' || text::IsDashRule(t)) {
      in_table = false;
      continue;
    }
    DPA_ASSIGN_OR_RETURN(MstDevice dev, ParseRow(l));
    status.devices.push_back(std::move(dev));
  }
  if (!have_header) {
    return InvalidArgumentError(std::string(kWhat) +
                                ": no 'DEVICE_TYPE MST PCI' table header.");
  }
  return status;
}

}  // namespace dpuaudit::bluefield
