#include "bluefield/mlxfwmanager.h"

#include <optional>
#include <pugixml.hpp>
#include <set>
#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

using text::Line;

constexpr std::string_view kTextWhat = "mlxfwmanager output";
constexpr std::string_view kXmlWhat = "mlxfwmanager XML";
constexpr size_t kMaxXmlBytes = 1 << 20;  // 1 MiB
constexpr std::string_view kNa = "N/A";

// "N/A", or a version token: starts with a digit, then digits, letters,
// '.', '-' or '_' ("24.36.7506", "3.7.0200"). Anything else means the row
// was not split into name / current / available as printed.
bool IsVersionToken(std::string_view t) {
  if (t == kNa) return true;
  if (t.empty() || t[0] < '0' || t[0] > '9') return false;
  for (char c : t) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
              (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

// "Device #<n>:" with n decimal, 1 to 4 digits.
bool ParseDeviceHeader(std::string_view t, int* n) {
  constexpr std::string_view kPrefix = "Device #";
  if (!text::StartsWith(t, kPrefix) || t.size() < kPrefix.size() + 2 ||
      t.back() != ':') {
    return false;
  }
  std::string_view digits =
      t.substr(kPrefix.size(), t.size() - kPrefix.size() - 1);
  if (digits.empty() || digits.size() > 4) return false;
  int v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *n = v;
  return true;
}

// "Key:   value" (trimmed line). A key starts with a letter and holds
// letters, digits, spaces and _ - / ( ) .; ':' is followed by blank or end.
bool SplitField(std::string_view t, std::string_view* key,
                std::string_view* value) {
  size_t colon = t.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  char first = t[0];
  if (!((first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z'))) {
    return false;
  }
  for (size_t i = 0; i < colon; ++i) {
    char c = t[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == ' ' || c == '_' || c == '-' ||
              c == '/' || c == '(' || c == ')' || c == '.';
    if (!ok) return false;
  }
  if (colon + 1 < t.size() && t[colon + 1] != ' ' && t[colon + 1] != '\t') {
    return false;
  }
  *key = text::Trim(t.substr(0, colon));
  *value = text::Trim(t.substr(colon + 1));
  return true;
}

// The member for a known field name; nullptr for names we do not keep.
std::string* FieldMember(MlxfwDevice& d, std::string_view key) {
  if (key == "Device Type") return &d.device_type;
  if (key == "Part Number") return &d.part_number;
  if (key == "Description") return &d.description;
  if (key == "PSID") return &d.psid;
  if (key == "PCI Device Name") return &d.pci_device_name;
  if (key == "Base GUID") return &d.base_guid;
  if (key == "Base MAC") return &d.base_mac;
  if (key == "Status") return &d.status;
  return nullptr;
}

// Both forms end with the same check: a PSID and an "FW" row.
Status CheckDevice(const MlxfwDevice& d, const std::string& where) {
  if (d.psid.empty()) return InvalidArgumentError(where + " has no PSID.");
  if (d.Find("FW") == nullptr) {
    return InvalidArgumentError(where + " has no FW version row.");
  }
  return OkStatus();
}

struct TextDevice {
  MlxfwDevice device;
  int number = 0;
  int line = 0;
  std::set<std::string, std::less<>> fields;
};

Status FinishTextDevice(TextDevice& d, std::vector<MlxfwDevice>& out) {
  DPA_RETURN_IF_ERROR(
      CheckDevice(d.device, std::string(kTextWhat) + ": device #" +
                                std::to_string(d.number) + " (line " +
                                std::to_string(d.line) + ")"));
  out.push_back(std::move(d.device));
  return OkStatus();
}

// Splits a version row: the last two tokens are current and available, the
// rest (joined by single spaces) is the name.
Status ParseVersionRow(const Line& l, MlxfwDevice& d) {
  std::vector<std::string_view> tok = text::SplitWhitespace(l.text);
  if (tok.size() < 3) {
    return text::LineError(kTextWhat, l.number, "version row '" + text::Excerpt(l.text) +
                                   "' has " + std::to_string(tok.size()) +
                                   " tokens; expected a name, a current and "
                                   "an available version.");
  }
  FwVersionRow row;
  for (size_t i = 0; i + 2 < tok.size(); ++i) {
    if (i > 0) row.name += " ";
    row.name += std::string(tok[i]);
  }
  row.current = std::string(tok[tok.size() - 2]);
  row.available = std::string(tok.back());
  if (!IsVersionToken(row.current) || !IsVersionToken(row.available)) {
    return text::LineError(kTextWhat, l.number, "version row '" + text::Excerpt(l.text) +
                                   "' does not end with two versions "
                                   "(current, available; \"N/A\" allowed).");
  }
  if (d.Find(row.name) != nullptr) {
    return text::LineError(kTextWhat, 
        l.number, "duplicate version row '" + text::Excerpt(row.name) + "'.");
  }
  d.versions.push_back(std::move(row));
  return OkStatus();
}

// ---- XML ----

std::string XmlWhere(size_t index, const pugi::xml_node& device) {
  std::string where =
      std::string(kXmlWhat) + ": Devices/Device[" + std::to_string(index) + "]";
  const char* pci = device.attribute("pciName").value();
  if (*pci != '\0') where += " (pciName " + text::Excerpt(pci) + ")";
  return where;
}

// Attributes must be unique (pugixml does not check).
Status CheckUniqueAttributes(const pugi::xml_node& n,
                             const std::string& where) {
  std::set<std::string_view> seen;
  for (const pugi::xml_attribute& a : n.attributes()) {
    if (!seen.insert(a.name()).second) {
      return InvalidArgumentError(where + ": attribute '" +
                                  text::Excerpt(a.name()) + "' is repeated.");
    }
  }
  return OkStatus();
}

bool IsBlankText(const pugi::xml_node& n) {
  return (n.type() == pugi::node_pcdata || n.type() == pugi::node_cdata) &&
         text::IsBlank(n.value());
}

Status ParseXmlVersions(const pugi::xml_node& versions,
                        const std::string& where, MlxfwDevice& d) {
  for (const pugi::xml_node& row : versions.children()) {
    if (IsBlankText(row) || row.type() == pugi::node_comment) continue;
    if (row.type() != pugi::node_element) {
      return InvalidArgumentError(where +
                                  "/Versions holds text; expected "
                                  "only row elements.");
    }
    const std::string row_where =
        where + "/Versions/" + text::Excerpt(row.name());
    DPA_RETURN_IF_ERROR(CheckUniqueAttributes(row, row_where));
    FwVersionRow r;
    r.name = row.name();
    for (char& c : r.name) {
      if (c == '_') c = ' ';
    }
    pugi::xml_attribute cur = row.attribute("current");
    pugi::xml_attribute avail = row.attribute("available");
    if (!cur || !avail) {
      return InvalidArgumentError(
          row_where + " needs 'current' and 'available' attributes.");
    }
    r.current = std::string(text::Trim(cur.value()));
    r.available = std::string(text::Trim(avail.value()));
    if (!IsVersionToken(r.current) || !IsVersionToken(r.available)) {
      return InvalidArgumentError(row_where + " has current '" +
                                  text::Excerpt(r.current) + "', available '" +
                                  text::Excerpt(r.available) +
                                  "'; expected versions or \"N/A\".");
    }
    if (d.Find(r.name) != nullptr) {
      return InvalidArgumentError(row_where + " is repeated.");
    }
    d.versions.push_back(std::move(r));
  }
  return OkStatus();
}

StatusOr<MlxfwDevice> ParseXmlDevice(const pugi::xml_node& node, size_t index) {
  const std::string where = XmlWhere(index, node);
  DPA_RETURN_IF_ERROR(CheckUniqueAttributes(node, where));
  MlxfwDevice d;
  d.pci_device_name =
      std::string(text::Trim(node.attribute("pciName").value()));
  d.device_type = std::string(text::Trim(node.attribute("type").value()));
  d.psid = std::string(text::Trim(node.attribute("psid").value()));
  d.part_number = std::string(text::Trim(node.attribute("partNumber").value()));
  std::set<std::string_view> seen;
  for (const pugi::xml_node& child : node.children()) {
    if (IsBlankText(child) || child.type() == pugi::node_comment) continue;
    if (child.type() != pugi::node_element) {
      return InvalidArgumentError(where + " holds text; expected elements.");
    }
    std::string_view name = child.name();
    bool known = name == "Versions" || name == "MACs" || name == "Status" ||
                 name == "Description";
    if (!known) continue;  // unknown elements are not ours to interpret
    if (!seen.insert(name).second) {
      return InvalidArgumentError(where + "/" + std::string(name) +
                                  " is repeated.");
    }
    if (name == "Versions") {
      DPA_RETURN_IF_ERROR(ParseXmlVersions(child, where, d));
    } else if (name == "MACs") {
      DPA_RETURN_IF_ERROR(CheckUniqueAttributes(child, where + "/MACs"));
      d.base_mac = std::string(text::Trim(child.attribute("Base_Mac").value()));
    } else if (name == "Status") {
      d.status = std::string(text::Trim(child.text().get()));
    } else {
      d.description = std::string(text::Trim(child.text().get()));
    }
  }
  DPA_RETURN_IF_ERROR(CheckDevice(d, where));
  return d;
}

}  // namespace

const FwVersionRow* MlxfwDevice::Find(std::string_view name) const {
  for (const FwVersionRow& r : versions) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

StatusOr<std::vector<MlxfwDevice>> ParseMlxfwmanagerText(
    std::string_view text) {
  DPA_ASSIGN_OR_RETURN(std::vector<Line> lines,
                       text::SplitLines(text, kTextWhat));
  enum class State { kPreamble, kDeviceHeader, kFields, kVersions };
  State state = State::kPreamble;
  std::vector<MlxfwDevice> out;
  std::optional<TextDevice> cur;
  for (const Line& l : lines) {
    std::string_view t = text::Trim(l.text);
    if (t.empty()) {
      if (state == State::kVersions) state = State::kFields;
      continue;
    }
    int number = 0;
    if (ParseDeviceHeader(t, &number)) {
      if (cur) DPA_RETURN_IF_ERROR(FinishTextDevice(*cur, out));
      const int expected = static_cast<int>(out.size()) + 1;
      if (number != expected) {
        return text::LineError(kTextWhat, l.number, "'" + std::string(t) +
                                       "' out of order; "
                                       "expected Device #" +
                                       std::to_string(expected) + ".");
      }
      cur.emplace();
      cur->number = number;
      cur->line = l.number;
      state = State::kDeviceHeader;
      continue;
    }
    if (state == State::kPreamble) {
      if (text::StartsWith(t, "Querying Mellanox devices firmware")) continue;
      return text::LineError(kTextWhat, l.number, "unexpected '" + text::Excerpt(t) +
                                     "' before the first 'Device #1:'.");
    }
    if (state == State::kDeviceHeader && text::IsDashRule(t)) {
      state = State::kFields;
      continue;
    }
    std::string_view key, value;
    if (SplitField(t, &key, &value)) {
      if (!cur->fields.insert(std::string(key)).second) {
        return text::LineError(kTextWhat, l.number,
                         "duplicate field '" + text::Excerpt(key) + "'.");
      }
      if (key == "Versions") {
        std::vector<std::string_view> head = text::SplitWhitespace(value);
        if (head.size() != 2 || head[0] != "Current" ||
            head[1] != "Available") {
          return text::LineError(kTextWhat, l.number, "'Versions:' header is '" +
                                         text::Excerpt(value) +
                                         "'; expected 'Current Available'.");
        }
        state = State::kVersions;
        continue;
      }
      if (std::string* member = FieldMember(cur->device, key)) {
        *member = std::string(value);
      }
      state = State::kFields;
      continue;
    }
    if (state == State::kVersions) {
      DPA_RETURN_IF_ERROR(ParseVersionRow(l, cur->device));
      continue;
    }
    return text::LineError(kTextWhat, l.number, "unexpected '" + text::Excerpt(t) +
                                   "' inside device #" +
                                   std::to_string(cur->number) + ".");
  }
  if (!cur) {
    return InvalidArgumentError(std::string(kTextWhat) +
                                ": no 'Device #1:' block.");
  }
  DPA_RETURN_IF_ERROR(FinishTextDevice(*cur, out));
  return out;
}

StatusOr<std::vector<MlxfwDevice>> ParseMlxfwmanagerXml(std::string_view text) {
  if (text.size() > kMaxXmlBytes) {
    return ResourceExhaustedError(std::string(kXmlWhat) + " is " +
                                  std::to_string(text.size()) +
                                  " bytes; the limit is 1 MiB.");
  }
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return InvalidArgumentError(std::string(kXmlWhat) +
                                ": NUL byte at offset " + std::to_string(nul) +
                                ".");
  }
  pugi::xml_document doc;
  // parse_default: no DOCTYPE node, no PIs; only the XML built-in entities
  // and character references are expanded. pugixml never fetches anything.
  pugi::xml_parse_result r = doc.load_buffer(
      text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!r) {
    return InvalidArgumentError(std::string(kXmlWhat) + " at offset " +
                                std::to_string(r.offset) + ": " +
                                r.description() + ".");
  }
  pugi::xml_node root;
  for (const pugi::xml_node& n : doc.children()) {
    if (n.type() != pugi::node_element) continue;
    if (root) {
      return InvalidArgumentError(std::string(kXmlWhat) +
                                  ": more than one top-level element.");
    }
    root = n;
  }
  if (!root || std::string_view(root.name()) != "Devices") {
    return InvalidArgumentError(std::string(kXmlWhat) +
                                ": the top-level element is not <Devices>.");
  }
  std::vector<MlxfwDevice> out;
  for (const pugi::xml_node& n : root.children()) {
    if (IsBlankText(n) || n.type() == pugi::node_comment) continue;
    if (n.type() != pugi::node_element ||
        std::string_view(n.name()) != "Device") {
      return InvalidArgumentError(
          std::string(kXmlWhat) + ": Devices/" +
          (n.type() == pugi::node_element ? text::Excerpt(n.name())
                                          : std::string("text()")) +
          " at device " + std::to_string(out.size() + 1) +
          " is not a <Device>.");
    }
    DPA_ASSIGN_OR_RETURN(MlxfwDevice d, ParseXmlDevice(n, out.size() + 1));
    out.push_back(std::move(d));
  }
  if (out.empty()) {
    return InvalidArgumentError(std::string(kXmlWhat) +
                                ": <Devices> holds no <Device>.");
  }
  return out;
}

}  // namespace dpuaudit::bluefield
