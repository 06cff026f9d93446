#include "bluefield/mlxconfig.h"

#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

// mlxconfig prints each value with "%-16s": a value of 16 characters or
// more (SEPARATED_HOST(0) is 17) runs into the next one with no space,
// e.g. "SEPARATED_HOST(0)SEPARATED_HOST(0)SEPARATED_HOST(0)". Such a token
// is split after each "SYMBOL(n)" when it is made only of those.
std::vector<std::string_view> SplitGluedValues(
    const std::vector<std::string_view>& values) {
  std::vector<std::string_view> out;
  for (std::string_view v : values) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    bool ok = true;
    while (start < v.size()) {
      size_t open = v.find('(', start);
      size_t close = open == std::string_view::npos ? open : v.find(')', open);
      if (close == std::string_view::npos || open == start) {
        ok = false;
        break;
      }
      for (size_t k = open + 1; k < close; ++k) {
        if (v[k] < '0' || v[k] > '9') ok = false;
      }
      if (!ok || close == open + 1) {
        ok = false;
        break;
      }
      parts.push_back(v.substr(start, close + 1 - start));
      start = close + 1;
    }
    if (ok && parts.size() > 1) {
      out.insert(out.end(), parts.begin(), parts.end());
    } else {
      out.push_back(v);
    }
  }
  return out;
}

using text::Line;

constexpr std::string_view kWhat = "mlxconfig output";

bool IsParamName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '[' || c == ']' ||
              c == '.';
    if (!ok) return false;
  }
  return true;
}

enum class Section { kPreamble, kHeader, kTable, kFooter };

}  // namespace

const MlxconfigParam* MlxconfigQuery::Find(std::string_view param_name) const {
  for (const MlxconfigParam& p : params) {
    if (p.name == param_name) return &p;
  }
  return nullptr;
}

Generation GenerationFromDeviceType(std::string_view device_type) {
  if (device_type == "BlueField") return Generation::kBlueField1;
  if (device_type == "BlueField2") return Generation::kBlueField2;
  if (device_type == "BlueField3") return Generation::kBlueField3;
  return Generation::kUnknown;
}

StatusOr<MlxconfigQuery> ParseMlxconfigQuery(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(std::vector<Line> lines,
                       text::SplitLines(text, kWhat));
  MlxconfigQuery q;
  Section section = Section::kPreamble;
  bool have_type = false, have_name = false, have_desc = false,
       have_device = false;
  size_t columns = 0;
  for (const Line& l : lines) {
    std::string_view t = text::Trim(l.text);
    if (t.empty() || text::IsDashRule(t)) continue;
    if (text::StartsWith(t, "Device #")) {
      if (section != Section::kPreamble) {
        return text::LineError(kWhat, l.number, "a second device; only one is supported.");
      }
      section = Section::kHeader;
      continue;
    }
    if (section == Section::kPreamble) {
      return text::LineError(kWhat, l.number, "expected 'Device #1:', got '" +
                                     text::Excerpt(t) + "'.");
    }
    if (section == Section::kHeader) {
      size_t colon = t.find(':');
      if (colon == std::string_view::npos) {
        return text::LineError(kWhat, l.number,
                         "expected a 'Field: value' header line, "
                         "got '" +
                             text::Excerpt(t) + "'.");
      }
      std::string_view key = t.substr(0, colon);
      std::string value(text::Trim(t.substr(colon + 1)));
      if (key == "Device type") {
        q.device_type = value;
        have_type = true;
      } else if (key == "Name") {
        q.name = value;
        have_name = true;
      } else if (key == "Description") {
        q.description = value;
        have_desc = true;
      } else if (key == "Device") {
        q.device = value;
        have_device = true;
      } else if (key == "Configurations") {
        if (!have_type || !have_name || !have_desc || !have_device) {
          return text::LineError(kWhat, l.number,
                           "header lacks one of 'Device type', 'Name', "
                           "'Description', 'Device'.");
        }
        std::vector<std::string_view> cols = text::SplitWhitespace(value);
        if (cols.size() == 2 && cols[0] == "Next" && cols[1] == "Boot") {
          columns = 1;
        } else if (cols.size() == 4 && cols[0] == "Default" &&
                   cols[1] == "Current" && cols[2] == "Next" &&
                   cols[3] == "Boot") {
          columns = 3;
          q.has_current = true;
        } else {
          return text::LineError(kWhat, l.number, "unknown column header '" +
                                         text::Excerpt(value) + "'.");
        }
        section = Section::kTable;
      } else {
        return text::LineError(kWhat, 
            l.number, "unknown header field '" + text::Excerpt(key) + "'.");
      }
      continue;
    }
    // Footer notes: "The '*' shows ..." and "The 'RO' shows ...".
    if (text::StartsWith(t, "The '")) {
      section = Section::kFooter;
      continue;
    }
    if (section == Section::kFooter) {
      return text::LineError(kWhat, l.number, "unexpected line after the table footer: '" +
                                     text::Excerpt(t) + "'.");
    }
    std::vector<std::string_view> tok = text::SplitWhitespace(t);
    MlxconfigParam p;
    p.line = l.number;
    size_t i = 0;
    if (tok[i] == "*" || tok[i] == "*RO") {
      p.modified = true;
      p.read_only = tok[i] == "*RO";
      ++i;
    }
    if (i < tok.size() && tok[i] == "RO") {
      p.read_only = true;
      ++i;
    }
    if (i >= tok.size() || !IsParamName(tok[i])) {
      return text::LineError(kWhat, l.number, "expected a parameter row, got '" +
                                     text::Excerpt(t) + "'.");
    }
    p.name = std::string(tok[i++]);
    std::vector<std::string_view> vals(tok.begin() + static_cast<long>(i),
                                       tok.end());
    if (vals.size() < columns) vals = SplitGluedValues(vals);
    i = 0;
    tok = std::move(vals);
    size_t got = tok.size();
    if (got != columns) {
      return text::LineError(kWhat, l.number,
                       p.name + " has " + std::to_string(got) +
                           " values, expected " + std::to_string(columns) +
                           (columns == 3 ? " (Default, Current, Next Boot)."
                                         : " (Next Boot)."));
    }
    if (columns == 3) {
      p.default_value = std::string(tok[i]);
      p.current_value = std::string(tok[i + 1]);
      p.next_boot_value = std::string(tok[i + 2]);
    } else {
      p.next_boot_value = std::string(tok[i]);
    }
    if (const MlxconfigParam* prev = q.Find(p.name)) {
      return text::LineError(kWhat, l.number, p.name + " repeated (first on line " +
                                     std::to_string(prev->line) + ").");
    }
    q.params.push_back(std::move(p));
  }
  if (section == Section::kPreamble) {
    return InvalidArgumentError(std::string(kWhat) +
                                ": no 'Device #1:' block.");
  }
  if (section == Section::kHeader) {
    return InvalidArgumentError(std::string(kWhat) +
                                ": no 'Configurations:' table.");
  }
  return q;
}

std::string_view OperationModeName(OperationMode mode) {
  switch (mode) {
    case OperationMode::kDpu:
      return "dpu";
    case OperationMode::kNic:
      return "nic";
    case OperationMode::kSeparatedHost:
      return "separated_host";
    case OperationMode::kUnknown:
      return "unknown";
  }
  return "unknown";
}

ModeClassification ClassifyOperationMode(const MlxconfigQuery& query,
                                         Generation generation) {
  // docs/bluefield.md#operation-mode: parameter names and enum values.
  constexpr std::string_view kModel = "INTERNAL_CPU_MODEL";
  constexpr std::string_view kOwners[] = {"INTERNAL_CPU_PAGE_SUPPLIER",
                                          "INTERNAL_CPU_ESWITCH_MANAGER",
                                          "INTERNAL_CPU_IB_VPORT0"};
  constexpr std::string_view kOffload = "INTERNAL_CPU_OFFLOAD_ENGINE";
  ModeClassification out;
  if (!query.has_current) {
    out.detail =
        "output has no Current column (plain `q` prints only Next Boot, "
        "which may hold a change not yet in effect)";
    return out;
  }
  auto current = [&](std::string_view name) -> std::optional<std::string> {
    const MlxconfigParam* p = query.Find(name);
    if (p == nullptr) return std::nullopt;
    return p->current_value;
  };
  std::string values;
  auto note = [&](std::string_view name, const std::optional<std::string>& v) {
    if (!values.empty()) values += ", ";
    values += std::string(name) + "=" + (v ? *v : std::string("<absent>"));
  };
  std::optional<std::string> model = current(kModel);
  note(kModel, model);
  if (!model) {
    out.detail = "no INTERNAL_CPU_MODEL row";
    return out;
  }
  if (*model == "SEPARATED_HOST(0)") {
    out.mode = OperationMode::kSeparatedHost;
    out.detail = values;
    return out;
  }
  if (*model != "EMBEDDED_CPU(1)") {
    out.detail = "unrecognised INTERNAL_CPU_MODEL value; " + values;
    return out;
  }
  size_t ecpf = 0, ext = 0, absent = 0;
  for (std::string_view name : kOwners) {
    std::optional<std::string> v = current(name);
    note(name, v);
    if (!v) {
      ++absent;
    } else if (*v == "ECPF(0)") {
      ++ecpf;
    } else if (*v == "EXT_HOST_PF(1)") {
      ++ext;
    }
  }
  std::optional<std::string> offload = current(kOffload);
  note(kOffload, offload);
  out.detail = values;
  if (!offload) {
    out.detail = "no INTERNAL_CPU_OFFLOAD_ENGINE row; " + values;
    return out;
  }
  bool enabled = *offload == "ENABLED(0)";
  bool disabled = *offload == "DISABLED(1)";
  if (generation == Generation::kBlueField3) {
    // BF3: NIC mode is INTERNAL_CPU_OFFLOAD_ENGINE=DISABLED(1).
    if (disabled) {
      out.mode = OperationMode::kNic;
    } else if (enabled && ext == 0 && ecpf + absent == 3) {
      out.mode = OperationMode::kDpu;
    } else {
      out.detail = "inconsistent BlueField-3 mode values; " + values;
    }
    return out;
  }
  // BF2 rules (also applied when the generation is unknown).
  if (enabled && ecpf == 3) {
    out.mode = OperationMode::kDpu;
  } else if (disabled && ext == 3) {
    out.mode = OperationMode::kNic;
  } else {
    out.detail = "values match neither DPU nor NIC mode; " + values;
  }
  return out;
}

}  // namespace dpuaudit::bluefield
