#include "common/finding.h"

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

}  // namespace dpuaudit
