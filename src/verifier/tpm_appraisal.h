// The verifier's TPM appraisal (issue 5): enrollment checks, credential
// activation material, and the eight ordered steps of attest/quote.h turned
// into findings, tiers and the EAR "tpm" submod.
//
// Findings (policy rule ids):
//   tpm.ak_bound .. tpm.replay   "verified" | "failed", in step order; the
//                                first failing step fails with the reason,
//                                every later step is unknown ("not reached:
//                                <step> failed"), so a deny names the step.
//   tpm.reference_values         a lifecycle state (verifier/refvals.h)
//   tpm.ek_certificate           "trusted" (chains to a configured
//                                manufacturer CA) | "absent" (enrolled under
//                                allow_uncertified_ek)
//   tpm.secure_boot              "enabled" | "disabled", from the verified
//                                SecureBoot variable event only
// Tier: every tpm.* finding is hardware-rooted when the node's EK has a
// trusted certificate, self-reported otherwise (an uncertified EK may be a
// software TPM under the attacker's control).
#ifndef DPUAUDIT_VERIFIER_TPM_APPRAISAL_H_
#define DPUAUDIT_VERIFIER_TPM_APPRAISAL_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attest/quote.h"
#include "attest/tpm_structs.h"
#include "common/finding.h"
#include "common/status.h"
#include "report/ear.h"
#include "report/tpm_claims.h"
#include "verifier/policy.h"
#include "verifier/refvals.h"
#include "verifier/store.h"

namespace dpuaudit::verifier {

// Every tpm.* rule id with its allowed values (for KnownRules()).
std::vector<RuleSpec> TpmRuleSpecs();

// What enrollment checked: the EK and AK decoded, the AK's attributes, the
// EK certificate (or its absence under allow_uncertified_ek).
struct CheckedTpmEnrollment {
  attest::TpmPublic ek;
  attest::TpmPublic ak;
  std::string ek_cert_pem;     // "" when absent
  std::string ek_cert_issuer;
};

// The "tpm" member of an enrollment request:
// {"ek_public_b64": "...", "ak_public_b64": "...", "ek_cert_b64": "..."}
// (ek_cert_b64: DER, optional). INVALID_ARGUMENT for malformed members or
// an AK that is not a restricted signing key; UNAUTHENTICATED when the EK
// certificate does not verify against `ek_ca_dir`; PERMISSION_DENIED when
// there is no certificate and the policy does not allow uncertified EKs.
StatusOr<CheckedTpmEnrollment> CheckTpmEnrollment(const nlohmann::json& tpm,
                                                  const TpmPolicy& policy,
                                                  const std::string& ek_ca_dir,
                                                  int64_t now);

struct TpmStepFailure {
  attest::TpmStep step;
  std::string reason;
};

struct TpmAppraisalInput {
  const TpmBinding* binding = nullptr;          // the node's, if any
  const report::TpmClaims* claims = nullptr;    // the report's, if any
  Bytes expected_qualifying_data;
  const TpmPolicy* policy = nullptr;
  const RefIndex* refs = nullptr;
  std::string model;  // canonical model, for reference values
  std::string psid;
  bool bluefield = false;  // the device is a BlueField (its TPM is an fTPM)
  int64_t now = 0;
};

struct TpmAppraisal {
  std::vector<Finding> findings;
  std::map<std::string, Tier> tiers;
  report::Submod submod;
  std::optional<TpmStepFailure> failure;  // the failing step, if any
  std::vector<std::string> quirks_applied;
};

TpmAppraisal AppraiseTpm(const TpmAppraisalInput& in);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_TPM_APPRAISAL_H_
