// Helpers for the device tests: real temporary folders and files.
#ifndef DPUAUDIT_TESTS_DEVICE_TEST_UTIL_H_
#define DPUAUDIT_TESTS_DEVICE_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "testing/temp_dir.h"

namespace dpuaudit::device::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
using TempDir = ::dpuaudit::testing::TempDir;

// Writes `content` to `path`, creating parent directories.
inline void WriteFile(const std::string& path, std::string_view content) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  ASSERT_TRUE(out.good()) << "writing " << path;
}

}  // namespace dpuaudit::device::testing

#endif  // DPUAUDIT_TESTS_DEVICE_TEST_UTIL_H_
