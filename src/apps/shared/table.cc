#include "apps/shared/table.h"

#include <algorithm>

namespace dpuaudit::apps {
namespace {

// Display width in code points (UTF-8 continuation bytes do not count).
size_t Width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++w;
  }
  return w;
}

std::string Clip(std::string s, size_t max) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (Width(s) <= max) return s;
  std::string out;
  size_t w = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) {
      if (w + 1 >= max) break;
      ++w;
    }
    out.push_back(s[i]);
  }
  return out + "…";
}

}  // namespace

void Table::AddRow(std::vector<std::string> row) {
  row.resize(header_.size());
  for (auto& cell : row) cell = Clip(std::move(cell), max_cell_);
  rows_.push_back(std::move(row));
}

std::string Table::Render() const {
  std::vector<size_t> widths(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) widths[i] = Width(header_[i]);
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], Width(row[i]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      out += cells[i];
      if (i + 1 < cells.size()) out += std::string(widths[i] - Width(cells[i]) + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  for (const auto& row : rows_) out += line(row);
  return out;
}

}  // namespace dpuaudit::apps
