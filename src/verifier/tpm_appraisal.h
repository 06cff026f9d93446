// The verifier's TPM appraisal (issue 5): enrollment checks, credential
// activation material, and the eight ordered steps of attest/quote.h turned
// into findings, tiers and the EAR "tpm" submod.
//
// Findings (policy rule ids):
//   tpm.ak_bound .. tpm.replay   "verified" | "failed", in step order; the
//                                first failing step fails with the reason,
//                                every later step is unknown ("not reached:
//                                <step> failed"), so a deny names the step.
//   tpm.reference_values         a lifecycle state
//                                (verifier/refvals/appraisal.h)
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
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attest/quote.h"
#include "attest/tpm_structs.h"
#include "common/finding.h"
#include "common/status.h"
#include "report/ear.h"
#include "attest/tpm_claims.h"
#include "verifier/policy.h"
#include "verifier/refvals/index.h"
#include "verifier/store/store.h"
#include "verifier/work_budget.h"

namespace dpuaudit::verifier {

// Every tpm.* rule id with its allowed values (for KnownRules()).
std::vector<RuleSpec> TpmRuleSpecs();

// What enrollment checked: the EK and AK decoded, the AK's attributes, the
// EK certificate (or its absence under allow_uncertified_ek).
struct CheckedTpmEnrollment {
  attest::TpmPublic ek;  // ek.key_fully_checked() is false when certified
  attest::TpmPublic ak;
  std::string ek_cert_pem;     // "" when absent
  std::string ek_cert_issuer;
};

// The "tpm" member of an enrollment request:
// {"ek_public_b64": "...", "ak_public_b64": "...", "ek_cert_b64": "..."}
// (ek_cert_b64: DER, optional). Cheapest checks first, and the one
// expensive check last:
//   1. members and base64 (INVALID_ARGUMENT);
//   2. EK and AK TPM2B_PUBLIC structure and the cheap key checks (RSA: size,
//      odd, exponent, no factor below 2000; ECC: the point is on the curve)
//      (INVALID_ARGUMENT);
//   3. the AK is a restricted signing key, the EK a restricted decryption
//      key (INVALID_ARGUMENT);
//   4. no certificate: PERMISSION_DENIED unless the policy allows
//      uncertified EKs; a certificate: its TCG EK profile
//      (INVALID_ARGUMENT), its key is the EK (FAILED_PRECONDITION), its
//      chain to `ek_ca_dir` (UNAUTHENTICATED) — attest::VerifyEkCertificate;
//   5. the RSA compositeness test (attest::TpmPublic::CheckCompositeness,
//      up to ~0.6 s of CPU for a 4096-bit prime) for an RSA AK, and for an
//      RSA EK only when it has no certificate: a certificate chaining to a
//      trusted manufacturer CA already vouches that the TPM generated the
//      key (a manufacturer that certified a prime "modulus" could as well
//      certify a key whose private half it knows; the CA is trusted for
//      exactly this statement, so the test would add nothing). When
//      `budget` is set (requests nobody vouched for: no token) this step
//      runs inside it, and RATE_LIMITED when it is spent.
// A request refused at steps 1-4 costs microseconds (step 4: one or two
// signature verifications and reading `ek_ca_dir`).
StatusOr<CheckedTpmEnrollment> CheckTpmEnrollment(const nlohmann::json& tpm,
                                                  const TpmPolicy& policy,
                                                  const std::string& ek_ca_dir,
                                                  int64_t now,
                                                  WorkBudget* budget = nullptr);

struct TpmStepFailure {
  attest::TpmStep step;
  std::string reason;
};

struct TpmAppraisalInput {
  const TpmBinding* binding = nullptr;          // the node's, if any
  const attest::TpmClaims* claims = nullptr;    // the report's, if any
  Bytes expected_qualifying_data;
  const TpmPolicy* policy = nullptr;
  const RefIndex* refs = nullptr;
  std::string model;  // canonical model, for reference values
  std::string psid;
  bool bluefield = false;  // the device is a BlueField (its TPM is an fTPM)
  int64_t now = 0;
  // Receives the releases the reference values matched (optional).
  std::set<std::string>* matched_releases = nullptr;
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
