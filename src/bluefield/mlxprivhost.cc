#include "bluefield/mlxprivhost.h"

#include <map>
#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

using text::Line;

constexpr std::string_view kWhat = "mlxprivhost output";
// Titles and headings (docs/bluefield.md#query-output, mstprivhost.py
// printConfOut).
constexpr std::string_view kTitleNew = "Host configurations";
constexpr std::string_view kTitleOld = "Current device configurations:";
constexpr std::string_view kPortHeading = "Port functions status:";

struct Row {
  int line = 0;
  std::vector<std::string_view> values;
};

StatusOr<bool> ParseBool(const Row& row, std::string_view name,
                         std::string_view value) {
  if (value == "TRUE") return true;
  if (value == "FALSE") return false;
  return text::LineError(kWhat, row.line, std::string(name) + " value '" +
                                 text::Excerpt(value) +
                                 "' is neither TRUE nor FALSE.");
}

Status ReadFlag(const std::map<std::string, Row, std::less<>>& rows,
                std::string_view name, size_t host, std::optional<bool>* out) {
  auto it = rows.find(name);
  if (it == rows.end()) return OkStatus();
  DPA_ASSIGN_OR_RETURN(*out,
                       ParseBool(it->second, name, it->second.values[host]));
  return OkStatus();
}

}  // namespace

std::string_view PrivilegeLevelName(PrivilegeLevel level) {
  switch (level) {
    case PrivilegeLevel::kRestricted:
      return "RESTRICTED";
    case PrivilegeLevel::kPrivileged:
      return "PRIVILEGED";
  }
  return "PRIVILEGED";
}

StatusOr<MlxprivhostQuery> ParseMlxprivhostQuery(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(std::vector<Line> lines,
                       text::SplitLines(text, kWhat));
  MlxprivhostQuery query;
  bool have_title = false;
  std::map<std::string, Row, std::less<>> rows;
  for (const Line& l : lines) {
    std::string_view t = text::Trim(l.text);
    if (t.empty() || text::IsDashRule(t) || t == kPortHeading) continue;
    if (t == kTitleNew || t == kTitleOld) {
      if (have_title) return text::LineError(kWhat, l.number, "second title line.");
      have_title = true;
      query.title = t == kTitleNew
                        ? MlxprivhostTitle::kHostConfigurations
                        : MlxprivhostTitle::kCurrentDeviceConfigurations;
      continue;
    }
    size_t colon = t.find(':');
    if (colon == std::string_view::npos) {
      return text::LineError(kWhat, l.number, "expected 'name : value', got '" +
                                     text::Excerpt(t) + "'.");
    }
    if (!have_title) {
      return text::LineError(kWhat, 
          l.number, "row before the '" + std::string(kTitleNew) + "' title.");
    }
    std::string_view name = text::Trim(t.substr(0, colon));
    std::vector<std::string_view> values =
        text::SplitWhitespace(t.substr(colon + 1));
    if (name.empty() || values.empty()) {
      return text::LineError(kWhat, l.number, "expected 'name : value', got '" +
                                     text::Excerpt(t) + "'.");
    }
    bool known = name == "host index" || name == "level" ||
                 name == "disable_rshim" || name == "disable_tracer" ||
                 name == "disable_port_owner" || name == "disable_counter_rd";
    if (!known) {
      query.other_rows.emplace_back(
          std::string(name), std::string(text::Trim(t.substr(colon + 1))));
      continue;
    }
    if (rows.count(name) != 0) {
      return text::LineError(kWhat, l.number,
                       "'" + std::string(name) + "' repeated (first on line " +
                           std::to_string(rows.find(name)->second.line) + ").");
    }
    rows.emplace(std::string(name), Row{l.number, std::move(values)});
  }
  if (!have_title) {
    return InvalidArgumentError(std::string(kWhat) +
                                ": no 'Host configurations' title.");
  }
  auto level_it = rows.find("level");
  if (level_it == rows.end()) {
    return InvalidArgumentError(std::string(kWhat) + ": no 'level' line.");
  }
  const size_t host_count = level_it->second.values.size();
  for (const auto& [name, row] : rows) {
    if (row.values.size() != host_count) {
      return text::LineError(kWhat, row.line, "'" + name + "' has " +
                                     std::to_string(row.values.size()) +
                                     " values but 'level' has " +
                                     std::to_string(host_count) + ".");
    }
  }
  auto index_it = rows.find("host index");
  query.full = index_it != rows.end();
  for (size_t h = 0; h < host_count; ++h) {
    HostPrivilege host;
    if (query.full) {
      std::string_view v = index_it->second.values[h];
      int index = 0;
      if (v.empty() || v.size() > 3 ||
          v.find_first_not_of("0123456789") != std::string_view::npos) {
        return text::LineError(kWhat, index_it->second.line,
                         "host index '" + text::Excerpt(v) +
                             "' is not a small decimal number.");
      }
      for (char c : v) index = index * 10 + (c - '0');
      host.host_index = index;
    }
    std::string_view level = level_it->second.values[h];
    if (level == "RESTRICTED") {
      host.level = PrivilegeLevel::kRestricted;
    } else if (level == "PRIVILEGED") {
      host.level = PrivilegeLevel::kPrivileged;
    } else {
      return text::LineError(kWhat, level_it->second.line,
                       "level value '" + text::Excerpt(level) +
                           "' is neither RESTRICTED nor PRIVILEGED.");
    }
    DPA_RETURN_IF_ERROR(
        ReadFlag(rows, "disable_rshim", h, &host.disable_rshim));
    DPA_RETURN_IF_ERROR(
        ReadFlag(rows, "disable_tracer", h, &host.disable_tracer));
    DPA_RETURN_IF_ERROR(
        ReadFlag(rows, "disable_port_owner", h, &host.disable_port_owner));
    DPA_RETURN_IF_ERROR(
        ReadFlag(rows, "disable_counter_rd", h, &host.disable_counter_rd));
    query.hosts.push_back(host);
  }
  return query;
}

}  // namespace dpuaudit::bluefield
