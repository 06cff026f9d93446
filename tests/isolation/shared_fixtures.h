// Access to the real public BlueField samples in
// DPUAUDIT_SHARED_DIR/fixtures/bluefield/ and their expected.json.
// Tests call these through SHARED_FIXTURE_OR_SKIP so that a checkout
// without the shared folder skips with the reason instead of passing.
#ifndef DPUAUDIT_TESTS_ISOLATION_SHARED_FIXTURES_H_
#define DPUAUDIT_TESTS_ISOLATION_SHARED_FIXTURES_H_

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

namespace dpuaudit::testing {

inline std::string SharedFixturePath(const std::string& name) {
  return std::string(DPUAUDIT_SHARED_DIR) + "/fixtures/bluefield/" + name;
}

inline std::optional<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The "expected" object for `name` in expected.json; null if unavailable.
inline nlohmann::json SharedExpected(const std::string& name) {
  std::optional<std::string> text =
      ReadTextFile(SharedFixturePath("expected.json"));
  if (!text) return nullptr;
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.contains(name)) return nullptr;
  return doc[name]["expected"];
}

inline std::string ProjectFixturePath(const std::string& rel) {
  return std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/devices/" + rel;
}

}  // namespace dpuaudit::testing

// Declares `std::string var` (the file) and `nlohmann::json var##_expected`,
// or skips the test with the reason.
#define SHARED_FIXTURE_OR_SKIP(var, name)                                   \
  std::string var;                                                          \
  nlohmann::json var##_expected;                                            \
  do {                                                                      \
    auto dpa_text_ = ::dpuaudit::testing::ReadTextFile(                     \
        ::dpuaudit::testing::SharedFixturePath(name));                      \
    var##_expected = ::dpuaudit::testing::SharedExpected(name);             \
    if (!dpa_text_ || var##_expected.is_null()) {                           \
      GTEST_SKIP() << "shared fixture " << name << " or its expected.json " \
                   << "entry is absent under " DPUAUDIT_SHARED_DIR;         \
    }                                                                       \
    var = *dpa_text_;                                                       \
  } while (false)

#endif  // DPUAUDIT_TESTS_ISOLATION_SHARED_FIXTURES_H_
