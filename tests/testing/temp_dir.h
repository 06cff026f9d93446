// A mkdtemp directory for a test, removed with its contents at the end.
#ifndef DPUAUDIT_TESTS_TESTING_TEMP_DIR_H_
#define DPUAUDIT_TESTS_TESTING_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace dpuaudit::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "dpuaudit-test") {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" +
                       std::string(prefix) + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const {
    return path_ + "/" + std::string(name);
  }
  std::string operator/(std::string_view rel) const { return File(rel); }

 private:
  std::string path_;
};

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_TESTING_TEMP_DIR_H_
