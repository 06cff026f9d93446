// VerifierService: the verifier's API (docs/architecture.md#http-api) without
// HTTP. The HTTP server in src/apps maps each call to a route and each Status
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
// Rejected reports from known nodes whose signature verified are stored
// (accepted = false) as a bounded record — digest, size, error and the
// first kRefusedReportPrefixBytes — within the node's report quota, so an
// auditor sees attempts as well as results and one node cannot fill the
// disk (Store::InsertRefusedReport; a record over quota is dropped).
// Accepted reports are stored within the same per-node quota; the node's
// own oldest records make room (Store::InsertResultSpendingNonceWithinQuota).
//
// Challenges (IssueChallenge) need a proof signed by the node's own key
// (report/challenge_proof.h): iat within kChallengeProofSkewSeconds of the
// verifier's clock and a jti not seen before for that node within that
// window (remembered in memory, at most kMaxSeenProofsPerNode per node).
// Only a valid proof spends the node's challenge budget; every refused
// challenge request is charged to the client address instead, so nobody
// can starve a node of challenges.
//
// Thread-safe: the store serialises writes; the policy and the bearer
// tokens can be replaced while serving (SetPolicy, SetTokens: SIGHUP);
// everything else is immutable.
#ifndef DPUAUDIT_VERIFIER_SERVICE_H_
#define DPUAUDIT_VERIFIER_SERVICE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/crypto.h"
#include "firmware/boot_chain.h"
#include "common/status.h"
#include "report/ear.h"
#include "report/claims.h"
#include "attest/tpm_claims.h"
#include "verifier/audit_events.h"
#include "verifier/bmc_monitor.h"
#include "verifier/derivation_cache.h"
#include "verifier/evidence_cache.h"
#include "verifier/nonce.h"
#include "verifier/policy.h"
#include "verifier/refvals/index.h"
#include "verifier/rate_limit.h"
#include "verifier/store/store.h"
#include "verifier/webhooks.h"
#include "verifier/work_budget.h"
#include "verifier/node_status.h"

namespace dpuaudit::verifier {

struct ServiceOptions {
  std::string verifier_build = "dpuaudit-verifier";
  // This deployment's name, carried in every EAR's ear.verifier-id
  // "instance" (report::VerifierId) so that `dpuaudit admit --verifier-id`
  // can insist on it; [A-Za-z0-9._-]{1,128}.
  std::string verifier_id = "dpuaudit-verifier";
  size_t max_report_bytes = 4 << 20;
  int64_t nonce_ttl_seconds = 60;
  // Shared fleet enrollment token: an explicit, documented opt-in
  // (--bootstrap-token-file). Any holder can enroll, approved, any unused
  // node id; empty disables it. Without it a device enrolls with its
  // per-node enrollment token (IssueEnrollmentToken) or waits for
  // `dpuaudit-verifier approve NODE --thumbprint T`.
  std::string bootstrap_token;
  // A pending (unapproved) enrollment expires this long after it was made:
  // it cannot be approved, is purged, and its id is free again (0: never).
  int64_t pending_ttl_seconds = 24 * 3600;
  // Most pending enrollments at once; an anonymous enrollment beyond it is
  // UNAVAILABLE (HTTP 503). 0: no cap.
  int64_t max_pending_nodes = 10000;
  // Bearer token for the admin API (reference values); empty disables the
  // admin API (every admin call is PERMISSION_DENIED).
  std::string admin_token;
  // Bearer token for reading node state (GET /v1/nodes/{id} and
  // /v1/nodes/{id}/admission); the admin token is accepted too. Empty: only
  // the admin token reads. Must differ from the other tokens.
  std::string reader_token;
  // Explicit opt-in (`--public-admission`): GET /v1/nodes/{id}/admission
  // without any token. The node view stays behind the reader token.
  bool public_admission = false;
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
  // Refused challenge requests (no or bad proof, unknown node, ...) per
  // client address per minute; 0 turns it off. Over budget: RATE_LIMITED.
  uint32_t refused_challenges_per_client_minute = 600;
  // Unspent, unexpired nonces kept per node (the oldest are dropped); 0: no
  // cap.
  int64_t max_outstanding_nonces = 16;
  // Bytes of report bodies and errors stored per node (0: no quota).
  int64_t report_quota_bytes = int64_t{64} << 20;
  // Process-wide budget (verifier/work_budget.h) for the expensive checks of
  // requests nobody vouched for (an enrollment without a token: the RSA
  // compositeness test of its TPM keys): CPU-milliseconds per second (0 =
  // no limit) and how many may run at once. Over budget: RATE_LIMITED.
  uint32_t unauthenticated_cpu_ms_per_second = 200;
  uint32_t unauthenticated_max_concurrent = 1;
  // Issue 15 (verifier/node_status.h): a node whose latest appraisal is
  // this old is stale and denied (0: never).
  int64_t stale_after_seconds = 300;
  // Webhook endpoints (verifier/webhooks.h): each decision event gets one
  // outbox entry per endpoint that takes its type. No endpoints: events are
  // still stored (GET /v1/events) but delivered nowhere.
  WebhookConfig webhooks;
};

inline constexpr int64_t kChallengeProofSkewSeconds = 300;
inline constexpr size_t kMaxSeenProofsPerNode = 4096;

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
  // Issue 15: the node's status (verifier/node_status.h) as admission sees
  // it: admitted | failed | stale | held | unattested | pending | revoked.
  std::string status;
};

class VerifierService {
 public:
  static StatusOr<std::unique_ptr<VerifierService>> New(
      std::unique_ptr<Store> store, Policy policy, EcPrivateKey signing_key,
      const Clock& clock, ServiceOptions options);

  // POST /v1/nodes. `body` is the JSON request
  // {"node_id": "...", "public_key": <JWK, P-256>, "tpm": {...},
  //  "device": {"serial": "...", "psid": "...", "model": "..."}}; `bearer`
  // the token from the Authorization header, if any. With a valid
  // per-node enrollment token for this node id (and serial, when bound),
  // or the fleet bootstrap token when enabled, the node is approved at
  // once (Store::EnrollNode: a per-node token also takes the id over from
  // a never-approved squatter, and re-enrolls a revoked node); without a
  // token it is created pending; with a wrong one nothing is stored
  // (UNAUTHENTICATED / PERMISSION_DENIED, the token unspent). The
  // optional "device" member is stored as claimed. The optional "tpm" member
  // (verifier/tpm_appraisal.h CheckTpmEnrollment) is checked before the
  // node is stored; a TPM whose binding is not active gets a credential
  // challenge (MakeCredential in software) to activate.
  StatusOr<EnrollResult> Enroll(std::string_view body,
                                std::optional<std::string> bearer);
  // POST /v1/nodes/{id}/tpm/activate: body {"credential_b64": "..."}, the
  // credential the TPM recovered. Returns the now-active binding.
  StatusOr<TpmBinding> ActivateTpm(const std::string& node_id, std::string_view body);
  // `dpuaudit-verifier approve NODE --thumbprint T` (Store::
  // ApproveEnrollment; now and the pending TTL are filled in here).
  StatusOr<NodeRecord> Approve(const std::string& node_id,
                               ApprovalRequest req);
  // Removes expired pending enrollments (serve runs it on a schedule).
  StatusOr<int64_t> PurgeExpiredPending();
  // POST /v1/challenges: body {"node_id": "...", "proof": "<JWS>"}
  // (report::ChallengeRequestBody). `client` is the requester's address,
  // the key refused requests are charged to. Checks, in order: body
  // (INVALID_ARGUMENT), node enrolled (NOT_FOUND) and approved
  // (FAILED_PRECONDITION / PERMISSION_DENIED), proof present, signed by the
  // node's pinned key, for this node (UNAUTHENTICATED), iat within the skew
  // (UNAUTHENTICATED), jti unused (UNAUTHENTICATED "challenge proof was
  // already used."), then the node's budget (RATE_LIMITED). Any refusal
  // before the node's budget is charged to `client`; once the client's
  // budget is spent its refusals are RATE_LIMITED.
  StatusOr<Challenge> IssueChallenge(std::string_view body,
                                     std::string_view client = "");
  // POST /v1/reports: body is the JWS (compact or flattened JSON).
  // A dpuaudit-report/2 report's by-digest items are resolved after its
  // signature verified and its claims parsed, against the node's base
  // report (verifier/evidence_cache.h): an item that does not resolve is
  // FAILED_PRECONDITION "evidence_unknown: ..." with its id in
  // *evidence_unknown (when given), and nothing is stored or spent — not
  // even a refused-report record: the agent resends in full.
  StatusOr<AppraisalOutcome> SubmitReport(
      std::string_view jws, std::vector<std::string>* evidence_unknown = nullptr);
  // The evidence cache, for tests and metrics.
  const EvidenceCache& evidence_cache() const { return evidence_cache_; }
  const DerivationCache& derivation_cache() const { return derivation_cache_; }
  // GET /v1/nodes/{id}: needs the reader or the admin token
  // (UNAUTHENTICATED without or with a wrong one), checked before the node
  // id is even looked at.
  StatusOr<nlohmann::json> NodeView(const std::string& node_id,
                                    const std::optional<std::string>& bearer);
  // GET /v1/nodes/{id}/admission: the reader or the admin token, unless
  // ServiceOptions.public_admission.
  StatusOr<Admission> GetAdmission(const std::string& node_id,
                                   const std::optional<std::string>& bearer);
  // --- Node status, decision events, webhooks (issue 15, lead) -----------
  // verifier/node_status.h, docs/events.md. Called after a decision event
  // was stored (the webhook dispatcher's Notify); set once before serving.
  void SetEventListener(std::function<void()> on_event);
  // Marks stale every node whose latest appraisal is older than
  // stale_after_seconds (event node.stale each); returns how many.
  StatusOr<int64_t> SweepStale();
  // Brings node status in line with node records changed outside this
  // process (the local operator commands): approved nodes without a status
  // get one (from their latest result; with `emit_events` node.approved),
  // revoked nodes node.revoked, re-approved ones node.reapproved.
  StatusOr<int64_t> ReconcileStatuses(bool emit_events);
  // POST /v1/nodes/{id}/acknowledge {"by", "reason"} (admin): a held node
  // (sticky failure) becomes failed; a fresh passing report admits it.
  StatusOr<nlohmann::json> AcknowledgeNode(const std::string& node_id,
                                           std::string_view body,
                                           std::optional<std::string> bearer);
  // GET /v1/events?after=SEQ&node=ID&limit=N (reader): stored events.
  StatusOr<nlohmann::json> ListEvents(const std::string& node_id,
                                      int64_t after_seq, int64_t limit,
                                      const std::optional<std::string>& bearer);
  // GET /v1/webhooks (admin): per endpoint pending / failing / delivered,
  // the oldest undelivered entry and the last error; the stuck entries.
  StatusOr<nlohmann::json> WebhookStatus(const std::optional<std::string>& bearer);
  // The node's status as stored, or as it would be first written.
  StatusOr<NodeStatusRecord> StatusOf(const NodeRecord& node);

  // GET /.well-known/jwks.json.
  nlohmann::json Jwks() const;
  // GET /readyz (anyone): {"status": "ready", "checks": {...}} when the
  // store can be written (Store::CheckWritable) and the signing key is
  // loaded; UNAVAILABLE naming the failing check otherwise (HTTP 503). The
  // store is checked at most once per kReadyCheckSeconds (the answer is
  // reused in between), so probes cannot contend with attestation writes.
  StatusOr<nlohmann::json> Ready();

  // Admin API for reference values (verifier/refvals/model.h); each call
  // needs the admin bearer token (UNAUTHENTICATED without or with a wrong
  // one, PERMISSION_DENIED when the admin API is disabled).
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

  // Admin API for enrollment and identity (issue 12), same bearer rules.
  // POST /v1/enrollment-tokens: {"node_id", "serial"?, "ttl_seconds"?,
  // "by"} -> {"token" (only here, once), "token_id", "node_id", "serial",
  // "expires_at"}.
  StatusOr<nlohmann::json> IssueEnrollmentToken(
      std::string_view body, std::optional<std::string> bearer);
  // GET /v1/enrollment-tokens: every token without its secret.
  StatusOr<nlohmann::json> ListEnrollmentTokens(
      std::optional<std::string> bearer);
  // POST /v1/enrollment-tokens/{token_id}/revoke (and DELETE
  // /v1/enrollment-tokens/{token_id}): {"by"}.
  StatusOr<nlohmann::json> RevokeEnrollmentToken(
      const std::string& token_id, std::string_view body,
      std::optional<std::string> bearer);
  // POST /v1/nodes/{id}/revoke: {"by", "reason"}. Admission is deny from
  // the next request on; challenges and reports are refused.
  StatusOr<nlohmann::json> RevokeNode(const std::string& node_id,
                                      std::string_view body,
                                      std::optional<std::string> bearer);

  // The BMC path (issue 14, verifier/bmc_monitor.h): the monitor that pulls
  // each configured node's BMC, set once before serving (nullptr: no node
  // has a BMC). Reports are then judged with the node's latest pull;
  // approvals schedule a pull; after each pull a current admit is re-judged
  // with the new verdict (OnBmcPull) and withdrawn when it no longer holds.
  void SetBmcMonitor(BmcMonitor* monitor);
  void OnBmcPull(const std::string& node_id);
  // GET /v1/nodes/{id}/bmc (reader or admin token): the latest pull's
  // verdict (verifier/bmc_state.h BmcVerdictJson), the stored binding and
  // baselines. NOT_FOUND when the node has no BMC configured.
  StatusOr<nlohmann::json> BmcStatus(const std::string& node_id,
                                     const std::optional<std::string>& bearer);
  // POST /v1/nodes/{id}/bmc/rebind {"by", "reason"} (admin): bind the node
  // to the IRoT identity its latest verified pull showed.
  StatusOr<nlohmann::json> RebindBmc(const std::string& node_id, std::string_view body,
                                     std::optional<std::string> bearer);
  // POST /v1/nodes/{id}/spdm/{irot|erot}/approve {"by", "reason"} (admin):
  // the latest verified measurements become the baseline.
  StatusOr<nlohmann::json> ApproveSpdmBaseline(const std::string& node_id,
                                               const std::string& target,
                                               std::string_view body,
                                               std::optional<std::string> bearer);

  // --- Reload (issue 15, verifier lifecycle; verifier/reload.cc) ---
  // The bearer tokens that SIGHUP re-reads (ServiceOptions has their start
  // values); "" disables one, as in ServiceOptions.
  struct Tokens {
    std::string bootstrap, admin, reader;
  };
  // The rules New applies: the reader token differs from the admin and
  // bootstrap tokens, the admin token from the bootstrap token
  // (INVALID_ARGUMENT naming which).
  static Status ValidateTokens(const Tokens& tokens);
  // Validates, then replaces all three at once: a request sees the old set
  // or the new one, never a mix. On error nothing changes.
  Status SetTokens(Tokens tokens);
  // Makes `policy` the one used by every later appraisal, re-appraisal and
  // admission; a report being appraised when it is called finishes under
  // the old policy first (SubmitReport holds reload_mu_ shared). Then, when
  // the policy's digest changed, re-appraises every current admit under the
  // new policy (ReappraiseAdmitted: an admit the new policy denies is
  // withdrawn with a deny EAR) and returns the withdrawn node ids.
  // Superseded policies stay in memory until the service is destroyed, so
  // that the reference policy() returns never dangles.
  StatusOr<std::vector<std::string>> SetPolicy(Policy policy);

  // The current policy (see SetPolicy).
  const Policy& policy() const { return *policy_.load(); }
  std::string signing_kid() const { return kid_; }
  Store& store() { return *store_; }
  const ServiceOptions& options() const { return options_; }
  // --- Issue 15 §5, the operator interface (verifier/node_admin.cc) ---
  // GET /v1/nodes?limit=N&after=ID (reader or admin token): {"nodes": [each
  // node's identity (NodeIdentityJson), "pending_expires_at" when pending,
  // "latest_decision", "latest_decision_at", "latest_expires_at" (null
  // without a result that counts), "latest_expired"], "next_after": the id
  // to pass as `after` for the next page, or null}. Ordered by node id.
  StatusOr<nlohmann::json> ListNodesPage(const std::optional<std::string>& limit,
                                         const std::optional<std::string>& after,
                                         const std::optional<std::string>& bearer);
  // POST /v1/nodes/{id}/approve {"thumbprint", "serial"?, "by", "reason"?}
  // (admin): Approve. FAILED_PRECONDITION (409) naming the stored and the
  // given thumbprint when they differ. Returns the node's identity.
  StatusOr<nlohmann::json> ApproveNode(const std::string& node_id, std::string_view body,
                                       const std::optional<std::string>& bearer);
  // POST /v1/nodes/{id}/reject {"by", "reason"} (admin): Store::RejectNode.
  StatusOr<nlohmann::json> RejectNodeByAdmin(const std::string& node_id,
                                             std::string_view body,
                                             const std::optional<std::string>& bearer);


 private:
  VerifierService(std::unique_ptr<Store> store, Policy policy,
                  EcPrivateKey key, std::unique_ptr<Signer> signer,
                  const Clock& clock, ServiceOptions options);
  // *node is set once the kid names an enrolled node, *authenticated once
  // the report's signature verified under that node's key.
  StatusOr<AppraisalOutcome> ReceiveReport(std::string_view jws,
                                           std::string* node,
                                           bool* authenticated,
                                           std::vector<std::string>* unknown);
  // Fills the by-digest items of `claims` from the node's base report
  // (cache, else the store, verified again under the node's key); the
  // unresolved ids go to *unknown (FAILED_PRECONDITION evidence_unknown).
  Status ResolveByDigest(const NodeRecord& node, const Verifier& verifier,
                         report::ReportClaims& claims,
                         std::vector<std::string>* unknown);
  // What the evidence of one authenticated report says (steps 7-8 without
  // storing): the reference values, the node's baseline release and TPM
  // binding read from the store, verifier::Appraise (verifier/appraise.h,
  // pure) over them, the EAR signed.
  struct Judgement {
    report::AttestationResult result;
    std::string ear_jwt;
    std::string arm_release;       // the release the ARM firmware matched
    std::string previous_release;  // the node's baseline before this report
    std::string context_json;      // AppraisalContextJson (issue 16)
  };
  StatusOr<Judgement> Judge(const NodeRecord& node,
                            const report::VerifiedReport& verified,
                            const std::optional<firmware::BootChainInfo>& boot,
                            const std::optional<attest::TpmClaims>& tpm_claims,
                            int64_t now);
  static ResultRecord ResultRecordOf(const Judgement& j, int64_t now);
  // Re-appraises the latest accepted report of every node whose latest
  // result is an unexpired admit (after a reference-value change) and
  // stores a deny for each one whose decision turned; returns those nodes.
  StatusOr<std::vector<std::string>> ReappraiseAdmitted(
      const std::string& why);
  StatusOr<bool> ReappraiseNode(const NodeRecord& node, const std::string& why);
  StatusOr<std::shared_ptr<const Verifier>> NodeVerifier(const NodeRecord& n);
  // IssueChallenge without the client charge; *authenticated once the
  // proof verified and was fresh.
  StatusOr<Challenge> IssueChallengeChecked(std::string_view body,
                                            bool* authenticated);
  Status CheckAdmin(const std::optional<std::string>& bearer) const;
  // The reader or the admin token (constant-time compares).
  Status CheckReader(const std::optional<std::string>& bearer) const;
  // The reference values, re-read only when the store's generation moved.
  StatusOr<std::shared_ptr<const RefIndex>> CurrentRefIndex();

  std::unique_ptr<Store> store_;
  // Reload state (verifier/reload.cc): every policy loaded, the current one
  // pointed to by policy_; the current tokens.
  void InitReloadable(Policy policy);
  std::shared_ptr<const Tokens> tokens() const { return tokens_.load(); }
  std::mutex policies_mu_;
  std::vector<std::unique_ptr<const Policy>> policies_;
  std::atomic<const Policy*> policy_{nullptr};
  std::atomic<std::shared_ptr<const Tokens>> tokens_;
  std::shared_mutex reload_mu_;
  EcPrivateKey key_;
  std::unique_ptr<Signer> signer_;
  std::string kid_;
  const Clock& clock_;
  ServiceOptions options_;
  NonceService nonces_;
  RateLimiter challenge_limit_;
  RateLimiter report_limit_;
  RateLimiter refused_challenge_limit_;
  std::mutex proof_mu_;
  // Per node: jti of each challenge proof accepted -> until when it could
  // still verify (iat + skew).
  std::map<std::string, std::map<std::string, int64_t>> seen_proofs_;
  WorkBudget unauthenticated_work_;
  std::mutex cache_mu_;
  // Parsed node keys, keyed by node id + thumbprint (parsing costs ~38 µs).
  std::map<std::string, std::shared_ptr<const Verifier>> verifier_cache_;
  std::shared_ptr<const RefIndex> ref_index_;
  int64_t ref_generation_ = -1;
  EvidenceCache evidence_cache_;
  DerivationCache derivation_cache_;
  BmcMonitor* bmc_ = nullptr;
  // Issue 15: the event a status step makes, with its payload and outbox
  // rows; and storing one on its own.
  struct EventContext {
    const report::AttestationResult* result = nullptr;
    std::string ear_jwt;
    std::string actor;
  };
  StatusOr<NodeTransition> MakeTransition(const StatusStep& step,
                                          const std::string& from,
                                          const EventContext& ctx);
  Status ApplyStep(const StatusStep& step, const std::string& from,
                   const EventContext& ctx);
  // Stores `judged` (with `insert`) and the node's next status in one
  // transaction.
  StatusOr<int64_t> StoreWithStatus(
      const NodeRecord& node, const Judgement& judged, int64_t now,
      const std::function<StatusOr<int64_t>(const NodeTransition*)>& insert);
  std::vector<std::string> StickyFailures(
      const report::AttestationResult& ar) const;
  void EventStored();
  // After an approval (by an operator or an enrollment token): the
  // node.approved / node.reapproved event. A failure is logged; the
  // reconciler writes it on its next pass.
  void RecordApproval(const NodeRecord& node, const std::string& actor);
  std::mutex status_mu_;
  std::function<void()> on_event_;
  std::mutex ready_mu_;
  int64_t ready_checked_at_ = 0;
  Status ready_status_;

  // --- Observability (issue 15 §3, part "obs"): audit events -------------
  // verifier/audit_events.h; the functions are in service_audit.cc. Each
  // audited public call above (Enroll, Approve, RevokeNode, the token,
  // reference-value and BMC admin calls) runs its *Unaudited form and emits
  // one event with its outcome; a call refused by the admin check emits
  // nothing here (the HTTP layer records it as "auth_failure").
 public:
  // Before serving; nullptr (the default): no events.
  void SetAuditSink(AuditSink* sink) { audit_ = sink; }
  // Emits `e` to the sink, with `at` (when 0), client, route and request id
  // (when empty) filled in from the clock and CurrentRequestContext().
  void Audit(AuditEvent e) const;
  // The reader (or admin) bearer check, for routes outside the service
  // (GET /metrics).
  Status CheckReaderToken(const std::optional<std::string>& bearer) const {
    return CheckReader(bearer);
  }
  // The admin bearer check, for admin routes outside the service
  // (POST /v1/refvals/{release}/withdraw, issue 16 §6).
  Status CheckAdminToken(const std::optional<std::string>& bearer) const {
    return CheckAdmin(bearer);
  }

 private:
  StatusOr<EnrollResult> EnrollUnaudited(std::string_view body,
                                         std::optional<std::string> bearer);
  StatusOr<NodeRecord> ApproveUnaudited(const std::string& node_id, ApprovalRequest req);
  StatusOr<nlohmann::json> RevokeNodeUnaudited(const std::string& node_id,
                                               std::string_view body,
                                               std::optional<std::string> bearer);
  StatusOr<nlohmann::json> IssueEnrollmentTokenUnaudited(
      std::string_view body, std::optional<std::string> bearer);
  StatusOr<nlohmann::json> RevokeEnrollmentTokenUnaudited(
      const std::string& token_id, std::string_view body,
      std::optional<std::string> bearer);
  StatusOr<nlohmann::json> ImportRefvalsUnaudited(std::string_view body,
                                                  std::optional<std::string> bearer);
  StatusOr<nlohmann::json> TransitionRefvalUnaudited(const std::string& release,
                                                     std::string_view action,
                                                     std::string_view body,
                                                     std::optional<std::string> bearer);
  StatusOr<nlohmann::json> RebindBmcUnaudited(const std::string& node_id,
                                              std::string_view body,
                                              std::optional<std::string> bearer);
  StatusOr<nlohmann::json> ApproveSpdmBaselineUnaudited(const std::string& node_id,
                                                        const std::string& target,
                                                        std::string_view body,
                                                        std::optional<std::string> bearer);
  AuditSink* audit_ = nullptr;
  // --- end of part "obs" ----------------------------------------------------

  // --- Issue 15, keys part (verifier/signing_keys.cc, verifier/rekey.cc) ---
 public:
  // POST /v1/nodes/{id}/rekey: `body` is the re-key JWS (report/rekey.h,
  // docs/rekey-schema.md). Checks, in order, each a precise 4xx with
  // nothing changed: size (RESOURCE_EXHAUSTED), node enrolled (NOT_FOUND)
  // and approved (FAILED_PRECONDITION; revoked: PERMISSION_DENIED), JWS
  // under the node's pinned key before the payload is parsed
  // (UNAUTHENTICATED; a malformed payload INVALID_ARGUMENT), node_id equal
  // to the path (UNAUTHENTICATED), iat within kChallengeProofSkewSeconds and
  // jti unused (UNAUTHENTICATED, the challenge proofs' jti memory), the
  // node's challenge budget (RATE_LIMITED), the new key a P-256 key other
  // than the old (INVALID_ARGUMENT) with a valid proof (UNAUTHENTICATED);
  // then Store::RekeyNode (atomic; results of the old key stop counting for
  // admission). Refusals before the signature verified are charged to
  // `client` as refused challenge requests. Returns the new identity.
  StatusOr<nlohmann::json> Rekey(const std::string& node_id,
                                 std::string_view body,
                                 std::string_view client = "");
  // The verifier keys GET /.well-known/jwks.json publishes at `now`: the
  // current key first, then each previous key (the most recent first) while
  // now < its published_until (Store::SigningKeyRecord).
  std::vector<report::NamedKey> PublishedKeys(int64_t now) const;

 private:
  struct PreviousKey {
    report::NamedKey key;
    int64_t published_until = 0;
  };
  // The EAR of `ar`, signed with the current key, after making sure the
  // key's recorded last_used_at covers it (ar.exp <= last_used_at +
  // max_result_ttl_seconds), raising it kSigningKeyUseAheadSeconds ahead
  // when it does not: an EAR is never signed that outlives its key's
  // publication in the JWKS.
  StatusOr<std::string> SignEarRecorded(const report::AttestationResult& ar);
  // At start-up (New): records the current key (Store::RegisterSigningKey,
  // max_result_ttl_seconds = the policy's decision TTL) and loads the
  // previous keys still to be published. DATA_LOSS if a stored key does not
  // match its kid.
  Status RegisterSigningKeys();
  // Records the current key (key_use_mu_ held); sets key_registered_.
  Status RegisterCurrentKeyLocked();
  // A verifier for one of our own stored EARs, by its header kid: the
  // current key or any previous one (DATA_LOSS for a kid we never used).
  StatusOr<std::unique_ptr<Es256Verifier>> OwnVerifierFor(
      std::string_view ear_jwt) const;
  StatusOr<nlohmann::json> RekeyChecked(const std::string& node_id,
                                        std::string_view body,
                                        bool* authenticated);
  // Every previous key, most recent first (also those no longer
  // published); set once in New.
  std::vector<PreviousKey> previous_keys_;
  std::mutex key_use_mu_;
  int64_t key_used_through_ = 0;  // the current key's stored last_used_at
  bool key_registered_ = false;   // RegisterCurrentKeyLocked succeeded
  // --- end of issue 15, keys part ---

 public:
  // --- Audit log, checkpoints and bundles (issue 16, service_bundle.cc) ---
  // A checkpoint of the log's current head, signed with the current key and
  // stored (the latest one when the head has not moved since).
  StatusOr<CheckpointRecord> Checkpoint();
  // GET /v1/nodes/{id}/bundle (admin or reader token): the node's reports,
  // results, contexts, collateral, keys and log entries in [since, until]
  // up to a fresh checkpoint (docs/audit.md#bundles), as JSON text.
  StatusOr<std::string> ExportBundle(const std::optional<std::string>& bearer,
                                     std::string_view node_id, int64_t since,
                                     int64_t until);

 private:
  // The policy document, stored as collateral with its log entry, once per
  // policy (Store::RecordPolicy).
  Status EnsurePolicyRecorded(const Policy& p);
  // The trust-anchor sets an appraisal of `node` relies on, by hash.
  std::vector<report::CollateralRef> TrustAnchorsFor(bool tpm_bound, bool bmc_configured);
  std::mutex collateral_mu_;
  const Policy* policy_recorded_ = nullptr;
  std::optional<std::string> ek_ca_sha256_, dice_roots_sha256_;
};

inline constexpr int64_t kReadyCheckSeconds = 1;
// How far ahead of use the current signing key's last_used_at is raised
// (at most one store write per this many seconds of signing).
inline constexpr int64_t kSigningKeyUseAheadSeconds = 60;

// A freshly issued per-node enrollment token: `token` is the secret, shown
// once; only its hash is stored.
struct IssuedEnrollmentToken {
  std::string token;
  EnrollmentToken record;
};
inline constexpr int64_t kDefaultEnrollmentTokenTtl = 24 * 3600;
inline constexpr int64_t kMaxEnrollmentTokenTtl = 30 * 24 * 3600;
// Issues a token for `node_id` (and `serial`, "" = any) valid for
// ttl_seconds (1 .. kMaxEnrollmentTokenTtl); INVALID_ARGUMENT naming the
// field otherwise. Shared by the admin API and `dpuaudit-verifier tokens`.
StatusOr<IssuedEnrollmentToken> IssueEnrollmentToken(
    Store& store, const std::string& node_id, const std::string& serial,
    int64_t ttl_seconds, const std::string& by, int64_t now);
// A token without its secret, with "status" (unused | used | expired |
// revoked) at `now`.
nlohmann::json EnrollmentTokenJson(const EnrollmentToken& t, int64_t now);
// The identity part of a node (no TPM, no result): state, key thumbprint,
// pinned and claimed device, approval and revocation.
nlohmann::json NodeIdentityJson(const NodeRecord& n);
// GET /v1/nodes/{id} and `dpuaudit-verifier nodes show` (one shape,
// docs/schemas/node-show.schema.json): the identity plus "alg",
// "public_key" (JWK), "pending_expires_at" (pending, pending_ttl_seconds >
// 0), "history", "tpm" (the binding, or null) and "latest" (the latest
// result, or null). NOT_FOUND for an unknown node.
StatusOr<nlohmann::json> NodeViewJson(Store& store, const std::string& node_id,
                                      int64_t pending_ttl_seconds, int64_t now);
// One entry of GET /v1/nodes and `dpuaudit-verifier nodes list`
// (docs/schemas/nodes-list.schema.json): the identity, "pending_expires_at"
// as above, "latest_decision", "latest_decision_at", "latest_expires_at"
// (null without a result that counts: none, or one made before a
// re-enrollment) and "latest_expired".
StatusOr<nlohmann::json> NodeListEntryJson(Store& store, const NodeRecord& n,
                                           int64_t pending_ttl_seconds, int64_t now);

// The probe catalogue as policy rule specs (ids and allowed values).
std::vector<RuleSpec> KnownRules();

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_SERVICE_H_
