// Finding: the result of one posture probe. Shared by the agent (which
// reports it), the verifier (which re-derives it from raw evidence) and the
// CLI (which shows it).
//
// Guarantees (by convention, checked by MakeUnknown and the report parser):
// a kUnknown finding always has a non-empty reason; every finding names its
// evidence source (a command line or a path).
#ifndef DPUAUDIT_COMMON_FINDING_H_
#define DPUAUDIT_COMMON_FINDING_H_

#include <optional>
#include <string>
#include <string_view>

namespace dpuaudit {

enum class Verdict { kPass, kFail, kUnknown };

std::string_view VerdictName(Verdict v);  // "pass" | "fail" | "unknown"
std::optional<Verdict> ParseVerdict(std::string_view s);

struct Finding {
  std::string id;        // stable probe id, e.g. "host.privilege_level"
  Verdict verdict = Verdict::kUnknown;
  std::string observed;  // what the evidence shows ("" when unknown)
  std::string expected;  // what passes
  std::string source;    // evidence source: command line or path
  std::string reason;    // why (always set for unknown and fail)
  std::string evidence_id;  // id of the evidence entry this was derived from

  bool operator==(const Finding&) const = default;
};

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_FINDING_H_
