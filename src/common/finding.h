// Finding: the result of one posture probe. Shared by the agent (which
// reports it), the verifier (which re-derives it from raw evidence) and the
// CLI (which shows it).
//
// Guarantees (by convention, checked by MakeUnknown and the report parser):
// a kUnknown finding always has a non-empty reason; every finding names its
// evidence source (a command line or a path). Every finding that leaves its
// producer (isolation::RunProbes, firmware::BootChainFindings, the report
// parser) has been through MakeSafe: its text fields are SafeText
// (common/safe_text.h), whatever bytes the evidence held.
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

// Every text field of `f` replaced by SafeText of it (idempotent). Where
// evidence-derived text enters a finding that leaves its producer.
void MakeSafe(Finding& f);
// True iff MakeSafe would change nothing.
bool IsSafe(const Finding& f);
// An unknown finding with its reason, made safe (MakeSafe): what an
// appraisal says when its evidence is missing.
Finding UnknownFinding(std::string id, std::string source, std::string reason);

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_FINDING_H_
