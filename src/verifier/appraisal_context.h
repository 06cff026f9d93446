// The appraisal context (issue 16, docs/audit.md#context): everything
// verifier::Appraise read besides the report and the collateral, recorded
// with each result so that an auditor can run the same pure appraisal
// offline (verifier/bundle.h) and get the same EAR.
//
// {"context": "dpuaudit-appraisal-context/1", "now", "verifier_id":
//  {"developer","build","instance"}, "policy_sha256", "refvals_sha256",
//  "previous_release", "node": {…NodeRecord…}, "tpm_binding": {…}|null,
//  "bmc": {"configured", "max_age_seconds", "key_sha256", "pulled_at"},
//  "trust_anchors": [{"set","sha256"}]}
//
// Guarantees: canonical (strict_json::DumpJson), and ParseAppraisalContext
// accepts exactly what AppraisalContextJson writes (strict, unknown members
// refused). Does not: carry the BMC pull itself (bmc.pulled_at only names
// it); an offline re-appraisal of a BMC-configured node re-derives the
// agent path and takes the bmc/irot/erot reasons from the signed EAR.
#ifndef DPUAUDIT_VERIFIER_APPRAISAL_CONTEXT_H_
#define DPUAUDIT_VERIFIER_APPRAISAL_CONTEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "report/ear.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

inline constexpr std::string_view kAppraisalContextFormat =
    "dpuaudit-appraisal-context/1";

struct AppraisalContext {
  int64_t now = 0;
  report::VerifierId verifier_id;
  std::string policy_sha256;
  std::string refvals_sha256;
  std::string previous_release;
  NodeRecord node;
  std::optional<TpmBinding> tpm_binding;
  bool bmc_configured = false;
  int64_t bmc_max_age_seconds = 0;
  std::string bmc_key_sha256;
  std::optional<int64_t> bmc_pulled_at;  // the pull the appraisal saw
  std::vector<report::CollateralRef> trust_anchors;
  bool operator==(const AppraisalContext&) const = default;
};

std::string AppraisalContextJson(const AppraisalContext& c);
StatusOr<AppraisalContext> ParseAppraisalContext(std::string_view json_text);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_APPRAISAL_CONTEXT_H_
