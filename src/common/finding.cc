#include "common/finding.h"

#include <utility>

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

Finding UnknownFinding(std::string id, std::string source, std::string reason) {
  Finding f;
  f.id = std::move(id);
  f.verdict = Verdict::kUnknown;
  f.source = std::move(source);
  f.reason = std::move(reason);
  MakeSafe(f);
  return f;
}

bool IsSafe(const Finding& f) {
  for (const std::string* s : {&f.id, &f.observed, &f.expected, &f.source,
                               &f.reason, &f.evidence_id}) {
    if (!IsSafeText(*s)) return false;
  }
  return true;
}

}  // namespace dpuaudit
