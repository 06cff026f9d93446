// VerifierService: the verifier's API (ARCHITECTURE.md §7) without HTTP.
// The HTTP server in src/apps maps each call to a route and each Status
// code to an HTTP status; this class owns the appraisal pipeline.
//
// Pipeline for a report (SubmitReport), in this order, each step failing
// closed with a precise Status and leaving stored state intact:
//   1. size limit (RESOURCE_EXHAUSTED) — before anything is parsed;
//   2. unverified JWS header peek, only to find the node by `kid`;
//   3. node must exist (NOT_FOUND) and be approved (FAILED_PRECONDITION);
//   4. JWS signature over the received bytes with the node's pinned key and
//      algorithm (UNAUTHENTICATED) — the claims are not parsed before this;
//   5. strict claims parse (INVALID_ARGUMENT), claims.node_id == kid;
//   6. nonce: issued to this node (checked here), unexpired and unused —
//      spent atomically with storing the result in step 8, so a result
//      that cannot be stored leaves the nonce unspent;
//   7. re-derivation of every finding from the raw evidence with the same
//      probes the agent runs; the agent's own verdicts are advisory and any
//      disagreement is reported;
//   8. policy → decision; EAR signed by the verifier key; stored.
// Rejected reports from known nodes are stored (accepted = false) with the
// error, so an auditor sees attempts as well as results.
//
// Thread-safe: the store serialises writes; everything else is immutable.
#ifndef DPUAUDIT_VERIFIER_SERVICE_H_
#define DPUAUDIT_VERIFIER_SERVICE_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/status.h"
#include "report/ear.h"
#include "verifier/nonce.h"
#include "verifier/policy.h"
#include "verifier/refvals.h"
#include "verifier/rate_limit.h"
#include "verifier/store.h"
#include "verifier/work_budget.h"

namespace dpuaudit::verifier {

struct ServiceOptions {
  std::string verifier_build = "dpuaudit-verifier";
  size_t max_report_bytes = 4 << 20;
  int64_t nonce_ttl_seconds = 60;
  // Bootstrap token for self-service enrollment; empty disables it (every
  // enrollment then waits for `dpuaudit-verifier approve`).
  std::string bootstrap_token;
  // Bearer token for the admin API (reference values); empty disables the
  // admin API (every admin call is PERMISSION_DENIED).
  std::string admin_token;
  size_t max_refvals_bytes = 4 << 20;
  // Trusted TPM manufacturer CAs (every *.pem/*.crt/*.der file) for EK
  // certificates; empty: no EK certificate verifies.
  std::string ek_ca_dir;
  // How long an agent has to activate its TPM credential after enrolling.
  int64_t tpm_challenge_ttl_seconds = 300;
  // Per-node budgets (token buckets, burst = the per-minute value); 0 turns
  // a limit off. Over budget: RATE_LIMITED (HTTP 429). Reports are counted
  // only once their signature verified, so nobody can spend another node's
  // budget.
  uint32_t challenges_per_minute = 60;
  uint32_t reports_per_minute = 60;
  // Process-wide budget (verifier/work_budget.h) for the expensive checks of
  // requests nobody vouched for (an enrollment without a token: the RSA
  // compositeness test of its TPM keys): CPU-milliseconds per second (0 =
  // no limit) and how many may run at once. Over budget: RATE_LIMITED.
  uint32_t unauthenticated_cpu_ms_per_second = 200;
  uint32_t unauthenticated_max_concurrent = 1;
};

// Credential activation material for a TPM enrollment (issue 5): the agent
// runs TPM2_ActivateCredential on it and returns the credential.
struct TpmChallenge {
  std::string credential_blob_b64;   // TPM2B_ID_OBJECT
  std::string encrypted_secret_b64;  // TPM2B_ENCRYPTED_SECRET
  std::string ak_name_hex;
  int64_t expires_at = 0;
};

struct EnrollResult {
  NodeRecord node;
  bool created = false;
  // Set when the request carried a TPM whose binding is not active yet.
  std::optional<TpmChallenge> tpm_challenge;
  std::string tpm_state;  // "" (no TPM) | "pending" | "active"
};

struct Challenge {
  std::string nonce;
  int64_t expires_at = 0;
  std::string pcr_selection;  // what a TPM must quote ("sha256:0,1,...")
};

struct AppraisalOutcome {
  std::string ear_jwt;
  report::AttestationResult result;
};

// What a relying party reads: the latest decision, or deny with a reason
// when there is none or it has expired.
struct Admission {
  std::string node_id;
  std::string decision;  // "admit" | "deny"
  std::string reason;    // why deny, when not from the EAR
  int64_t expires_at = 0;
  std::string ear_jwt;   // empty when there is no result
  std::optional<report::AttestationResult> result;
};

class VerifierService {
 public:
  static StatusOr<std::unique_ptr<VerifierService>> New(
      std::unique_ptr<Store> store, Policy policy, EcPrivateKey signing_key,
      const Clock& clock, ServiceOptions options);

  // POST /v1/nodes. `body` is the JSON request
  // {"node_id": "...", "public_key": <JWK, P-256>, "tpm": {...}}; `bearer` the token from
  // the Authorization header, if any. With a valid bootstrap token the node
  // is approved at once; without one it is created pending; with a wrong
  // one nothing is stored (UNAUTHENTICATED). The optional "tpm" member
  // (verifier/tpm_appraisal.h CheckTpmEnrollment) is checked before the
  // node is stored; a TPM whose binding is not active gets a credential
  // challenge (MakeCredential in software) to activate.
  StatusOr<EnrollResult> Enroll(std::string_view body,
                                std::optional<std::string> bearer);
  // POST /v1/nodes/{id}/tpm/activate: body {"credential_b64": "..."}, the
  // credential the TPM recovered. Returns the now-active binding.
  StatusOr<TpmBinding> ActivateTpm(const std::string& node_id, std::string_view body);
  // `dpuaudit-verifier approve NODE`.
  Status Approve(const std::string& node_id);
  // POST /v1/challenges: body {"node_id": "..."}.
  StatusOr<Challenge> IssueChallenge(std::string_view body);
  // POST /v1/reports: body is the JWS (compact or flattened JSON).
  StatusOr<AppraisalOutcome> SubmitReport(std::string_view jws);
  // GET /v1/nodes/{id}.
  StatusOr<nlohmann::json> NodeView(const std::string& node_id);
  // GET /v1/nodes/{id}/admission.
  StatusOr<Admission> GetAdmission(const std::string& node_id);
  // GET /.well-known/jwks.json.
  nlohmann::json Jwks() const;

  // Admin API for reference values (verifier/refvals.h); each call needs the
  // admin bearer token (UNAUTHENTICATED without or with a wrong one,
  // PERMISSION_DENIED when the admin API is disabled).
  // POST /v1/refvals: body is a manifest; all releases stored or none.
  // Returns {"imported": ["release", ...]}.
  StatusOr<nlohmann::json> ImportRefvals(std::string_view body,
                                         std::optional<std::string> bearer);
  // GET /v1/refvals[?model=BF3]: the manifest of every release (export).
  StatusOr<nlohmann::json> ListRefvals(std::string_view model,
                                       std::optional<std::string> bearer);
  // POST /v1/refvals/{release}/{promote|obsolete|revoke|reinstate}: body
  // {"by": "...", "reason": "..."}. promote: pending -> active; with
  // "obsolete_previous": true also moves every other active release of the
  // same model to obsolete, in the same call (each move atomic on its own).
  // Returns {"changed": [{"release", "state"}, ...]}.
  StatusOr<nlohmann::json> TransitionRefval(const std::string& release,
                                            std::string_view action,
                                            std::string_view body,
                                            std::optional<std::string> bearer);

  const Policy& policy() const { return policy_; }
  std::string signing_kid() const { return kid_; }
  Store& store() { return *store_; }

 private:
  VerifierService(std::unique_ptr<Store> store, Policy policy,
                  EcPrivateKey key, std::unique_ptr<Signer> signer,
                  const Clock& clock, ServiceOptions options);
  // *node is set once the kid names an enrolled node, *authenticated once
  // the report's signature verified under that node's key.
  StatusOr<AppraisalOutcome> Appraise(std::string_view jws, std::string* node,
                                      bool* authenticated);
  StatusOr<std::shared_ptr<const Verifier>> NodeVerifier(const NodeRecord& n);
  Status CheckAdmin(const std::optional<std::string>& bearer) const;
  // The reference values, re-read only when the store's generation moved.
  StatusOr<std::shared_ptr<const RefIndex>> CurrentRefIndex();

  std::unique_ptr<Store> store_;
  Policy policy_;
  EcPrivateKey key_;
  std::unique_ptr<Signer> signer_;
  std::string kid_;
  const Clock& clock_;
  ServiceOptions options_;
  NonceService nonces_;
  RateLimiter challenge_limit_;
  RateLimiter report_limit_;
  WorkBudget unauthenticated_work_;
  std::mutex cache_mu_;
  // Parsed node keys, keyed by node id + thumbprint (parsing costs ~38 µs).
  std::map<std::string, std::shared_ptr<const Verifier>> verifier_cache_;
  std::shared_ptr<const RefIndex> ref_index_;
  int64_t ref_generation_ = -1;
};

// The probe catalogue as policy rule specs (ids and allowed values).
std::vector<RuleSpec> KnownRules();

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_SERVICE_H_
