// Plain-text tables for terminals: columns sized to content, cells cut at a
// maximum width with "…", no colour (pipes and logs stay clean).
#ifndef DPUAUDIT_APPS_SHARED_TABLE_H_
#define DPUAUDIT_APPS_SHARED_TABLE_H_

#include <string>
#include <vector>

namespace dpuaudit::apps {

class Table {
 public:
  explicit Table(std::vector<std::string> header, size_t max_cell = 60)
      : header_(std::move(header)), max_cell_(max_cell) {}
  void AddRow(std::vector<std::string> row);
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  size_t max_cell_;
};

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_TABLE_H_
