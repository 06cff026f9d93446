// Fuzz target: Policy::Create on arbitrary bytes, then Evaluate on a fixed
// set of findings. Must never crash, throw or abort; an accepted policy must
// uphold its invariants (checked with __builtin_trap so a violation is a
// crash the fuzzer reports).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/finding.h"
#include "verifier/policy.h"

namespace {

using dpuaudit::Finding;
using dpuaudit::Verdict;
using dpuaudit::verifier::Decision;
using dpuaudit::verifier::Policy;
using dpuaudit::verifier::RuleAction;
using dpuaudit::verifier::RuleSpec;

const std::vector<RuleSpec>& Catalogue() {
  static const auto* kCatalogue = new std::vector<RuleSpec>{
      {"host.privilege_level", {"RESTRICTED", "PRIVILEGED"}},
      {"host.rshim_disabled", {"TRUE", "FALSE"}},
      {"host.tracer_disabled", {"TRUE", "FALSE"}},
      {"host.counter_read_disabled", {"TRUE", "FALSE"}},
      {"host.port_owner_disabled", {"TRUE", "FALSE"}},
      {"dpu.operation_mode", {"dpu", "nic", "separated_host"}},
  };
  return *kCatalogue;
}

const std::vector<Finding>& Findings() {
  static const auto* kFindings = new std::vector<Finding>{
      {"host.privilege_level", Verdict::kPass, "RESTRICTED", "RESTRICTED",
       "mlxprivhost", "", "e1"},
      {"host.rshim_disabled", Verdict::kFail, "FALSE", "TRUE", "mlxprivhost",
       "rshim enabled.", "e1"},
      {"dpu.operation_mode", Verdict::kUnknown, "", "dpu", "mlxconfig",
       "not readable.", "e2"},
      {"dpu.operation_mode", Verdict::kPass, "dpu", "dpu", "mlxconfig", "",
       "e2"},
  };
  return *kFindings;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto policy = Policy::Create(bytes, Catalogue());
  if (!policy.ok()) {
    if (policy.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (policy->rules().empty() || policy->sha256().size() != 64) {
    __builtin_trap();
  }
  auto outcome = policy->Evaluate(Findings());
  if (outcome.results.size() != policy->rules().size()) __builtin_trap();
  bool any_deny_not_pass = false;
  for (const auto& r : outcome.results) {
    if (r.verdict != Verdict::kPass && r.reason.empty()) __builtin_trap();
    if (r.verdict != Verdict::kPass && r.action == RuleAction::kDeny) {
      any_deny_not_pass = true;
    }
  }
  if ((outcome.decision == Decision::kDeny) != any_deny_not_pass) {
    __builtin_trap();
  }
  return 0;
}
