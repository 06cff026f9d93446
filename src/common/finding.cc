#include "common/finding.h"

#include <initializer_list>

#include "common/safe_text.h"

namespace dpuaudit {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kFail: return "fail";
    case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

std::optional<Verdict> ParseVerdict(std::string_view s) {
  if (s == "pass") return Verdict::kPass;
  if (s == "fail") return Verdict::kFail;
  if (s == "unknown") return Verdict::kUnknown;
  return std::nullopt;
}

void MakeSafe(Finding& f) {
  for (std::string* s : {&f.id, &f.observed, &f.expected, &f.source,
                         &f.reason, &f.evidence_id}) {
    if (!IsSafeText(*s)) *s = SafeText(*s);
  }
}

bool IsSafe(const Finding& f) {
  for (const std::string* s : {&f.id, &f.observed, &f.expected, &f.source,
                               &f.reason, &f.evidence_id}) {
    if (!IsSafeText(*s)) return false;
  }
  return true;
}

}  // namespace dpuaudit
