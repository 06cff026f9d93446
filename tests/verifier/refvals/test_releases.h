// Shared by the tests of verifier/refvals/: a fixed time, the BF3 fixture's
// firmware versions and releases built in code with a valid history.
#ifndef DPUAUDIT_TESTS_VERIFIER_REFVALS_TEST_RELEASES_H_
#define DPUAUDIT_TESTS_VERIFIER_REFVALS_TEST_RELEASES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "verifier/refvals/model.h"

namespace dpuaudit::verifier::refvals_testing {

constexpr int64_t kNow = 1'800'000'000;  // 2027-01-15T08:00:00Z

// The bfver strings of the BF3 fixture (docs/bluefield.md#bfver).
constexpr const char* kAtf = "v2.2(release):4.9.1-21-gfc25b08d9";
constexpr const char* kUefi = "4.9.1-36-g0c3239837a";
constexpr const char* kBsp = "4.9.1.13442";
constexpr const char* kOs = "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod";
constexpr const char* kNic = "32.43.1008";

inline std::string Hex(char c, size_t n = 96) { return std::string(n, c); }

// A BlueField-3 release in `state`, with a history that reaches it by
// allowed steps.
inline RefRelease MakeRelease(const std::string& label, RefState state,
                              std::vector<RefValue> values,
                              std::vector<std::string> psids = {},
                              int64_t created_at = 1000) {
  RefRelease r;
  r.release = label;
  r.model = "BlueField-3";
  r.psids = std::move(psids);
  r.values = std::move(values);
  r.created_at = created_at;
  r.history.push_back({RefState::kPending, "alice", created_at, "import"});
  if (state == RefState::kActive || state == RefState::kObsolete) {
    r.history.push_back({RefState::kActive, "alice", created_at + 10, "go"});
  }
  if (state == RefState::kObsolete) {
    r.history.push_back(
        {RefState::kObsolete, "carol", created_at + 20, "superseded"});
  }
  if (state == RefState::kRevoked) {
    r.history.push_back({RefState::kRevoked, "bob", 1796032800,
                         "CVE-2026-1234"});  // 2026-11-30T10:00:00Z
  }
  r.state = state;
  return r;
}

}  // namespace dpuaudit::verifier::refvals_testing

#endif  // DPUAUDIT_TESTS_VERIFIER_REFVALS_TEST_RELEASES_H_
