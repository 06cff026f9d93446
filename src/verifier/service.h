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
//   6. nonce: issued to this node, unexpired, unused — consumed atomically;
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
#include "verifier/store.h"

namespace dpuaudit::verifier {

struct ServiceOptions {
  std::string verifier_build = "dpuaudit-verifier";
  size_t max_report_bytes = 4 << 20;
  int64_t nonce_ttl_seconds = 60;
  // Bootstrap token for self-service enrollment; empty disables it (every
  // enrollment then waits for `dpuaudit-verifier approve`).
  std::string bootstrap_token;
};

struct EnrollResult {
  NodeRecord node;
  bool created = false;
};

struct Challenge {
  std::string nonce;
  int64_t expires_at = 0;
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
  // {"node_id": "...", "public_key": <JWK, P-256>}; `bearer` the token from
  // the Authorization header, if any. With a valid bootstrap token the node
  // is approved at once; without one it is created pending; with a wrong
  // one nothing is stored (UNAUTHENTICATED).
  StatusOr<EnrollResult> Enroll(std::string_view body,
                                std::optional<std::string> bearer);
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

  const Policy& policy() const { return policy_; }
  std::string signing_kid() const { return kid_; }
  Store& store() { return *store_; }

 private:
  VerifierService(std::unique_ptr<Store> store, Policy policy,
                  EcPrivateKey key, std::unique_ptr<Signer> signer,
                  const Clock& clock, ServiceOptions options);
  StatusOr<AppraisalOutcome> Appraise(std::string_view jws, std::string* node);
  StatusOr<std::shared_ptr<const Verifier>> NodeVerifier(const NodeRecord& n);

  std::unique_ptr<Store> store_;
  Policy policy_;
  EcPrivateKey key_;
  std::unique_ptr<Signer> signer_;
  std::string kid_;
  const Clock& clock_;
  ServiceOptions options_;
  NonceService nonces_;
  std::mutex cache_mu_;
  // Parsed node keys, keyed by node id + thumbprint (parsing costs ~38 µs).
  std::map<std::string, std::shared_ptr<const Verifier>> verifier_cache_;
};

// The probe catalogue as policy rule specs (ids and allowed values).
std::vector<RuleSpec> KnownRules();

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_SERVICE_H_
