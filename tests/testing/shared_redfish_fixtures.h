// Readers of the Redfish captures, SPDM transcripts and their
// expected.json in the shared fixtures directory
// (DPUAUDIT_SHARED_DIR/fixtures/redfish/, the source dir's ../shared), for
// tests/redfish, tests/spdm and the integration tests. Built on
// isolation/shared_fixtures.h (same directory root, same file reader).
//
// Guarantees:
//  - a path is always DPUAUDIT_SHARED_DIR/fixtures/redfish/<rel>;
//  - a missing or unreadable file reads as std::nullopt, a file that is not
//    JSON reads as std::nullopt from ReadSharedRedfishJson;
//  - the *_OR_SKIP macros skip the test, naming the file and the directory,
//    so a checkout without the shared folder skips instead of passing.
// Does not:
//  - cache, validate or size-limit what it reads (fixtures are small and
//    trusted);
//  - parse Redfish resources (tests call redfish::ParseResource).
#ifndef DPUAUDIT_TESTS_TESTING_SHARED_REDFISH_FIXTURES_H_
#define DPUAUDIT_TESTS_TESTING_SHARED_REDFISH_FIXTURES_H_

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "isolation/shared_fixtures.h"

namespace dpuaudit::testing {

// DPUAUDIT_SHARED_DIR/fixtures/redfish/ (with the trailing slash) + rel.
inline std::string SharedRedfishPath(const std::string& rel = "") {
  return std::string(DPUAUDIT_SHARED_DIR) + "/fixtures/redfish/" + rel;
}

// The bytes of the shared Redfish fixture `rel`; nullopt if absent.
inline std::optional<std::string> ReadSharedRedfish(const std::string& rel) {
  return ReadTextFile(SharedRedfishPath(rel));
}

// The shared Redfish fixture `rel` parsed as JSON; nullopt if absent or not
// JSON.
inline std::optional<nlohmann::json> ReadSharedRedfishJson(
    const std::string& rel) {
  std::optional<std::string> text = ReadSharedRedfish(rel);
  if (!text) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace dpuaudit::testing

// Declares `std::string var` (the bytes of redfish/<rel>) or skips the test.
#define SHARED_REDFISH_OR_SKIP(var, rel)                                      \
  std::string var;                                                            \
  do {                                                                        \
    auto dpa_text_ = ::dpuaudit::testing::ReadSharedRedfish(rel);             \
    if (!dpa_text_) {                                                         \
      GTEST_SKIP() << "shared fixture redfish/" << rel << " is absent under " \
                   << DPUAUDIT_SHARED_DIR;                                    \
    }                                                                         \
    var = *dpa_text_;                                                         \
  } while (false)

// Declares `nlohmann::json var` (redfish/<rel> parsed) or skips the test.
#define SHARED_REDFISH_JSON_OR_SKIP(var, rel)                                 \
  nlohmann::json var;                                                         \
  do {                                                                        \
    auto dpa_j_ = ::dpuaudit::testing::ReadSharedRedfishJson(rel);            \
    if (!dpa_j_) {                                                            \
      GTEST_SKIP() << "shared fixture redfish/" << rel << " is absent under " \
                   << DPUAUDIT_SHARED_DIR;                                    \
    }                                                                         \
    var = *dpa_j_;                                                            \
  } while (false)

#endif  // DPUAUDIT_TESTS_TESTING_SHARED_REDFISH_FIXTURES_H_
