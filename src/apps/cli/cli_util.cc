#include "apps/cli/cli_util.h"

#include <ctime>
#include <iostream>

#include "common/bytes.h"
#include "common/files.h"

namespace dpuaudit::apps {

int Fail(const Status& s) {
  std::cerr << "dpuaudit: " << s.message() << "\n";
  return kExitError;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
  return s.substr(i);
}

StatusOr<std::string> ReadText(const std::string& path) {
  DPA_ASSIGN_OR_RETURN(Bytes b, ReadFileLimited(path, kMaxCliFileBytes));
  return Trim(ToString(b));
}

std::string TimeString(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf) + " (" + std::to_string(t) + ")";
}

}  // namespace dpuaudit::apps
