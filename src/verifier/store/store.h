// Store: the verifier's persistent state (enrolled nodes, challenge nonces,
// received reports, appraisal results) behind one backend-neutral interface.
// SqliteStore (sqlite_store.h) is the embedded default; a PostgreSQL backend
// shared by several verifier replicas implements the same contract
// (docs/architecture.md#storage).
//
// Guarantees (every implementation):
//  - Thread safety: all methods may be called concurrently from any number of
//    threads, and from several processes/replicas sharing one database.
//  - Atomicity: every method is all-or-nothing. A method that returns an
//    error has changed nothing (e.g. a refused CreateNode leaves the existing
//    node as it was; a failed InsertResult stores neither result nor report).
//  - Nonces are single use across all threads and replicas: of any number of
//    concurrent ConsumeNonce calls for one nonce, at most one returns OK.
//    A refused consume (wrong node, expired, unknown) does not spend the
//    nonce: a nonce issued to node A and probed by node B stays usable by A.
//  - Durability: an OK return means the change is committed to stable
//    storage.
//  - Errors: NOT_FOUND / ALREADY_EXISTS / FAILED_PRECONDITION /
//    PERMISSION_DENIED / DEADLINE_EXCEEDED / INVALID_ARGUMENT as documented
//    per method; backend trouble is UNAVAILABLE (busy, I/O, disk full, out
//    of memory), DATA_LOSS (corruption) or INTERNAL.
//
// Does not: verify keys, signatures, JWTs or JSON (reasons_json, ear_jwt and
// jws are stored as given); decide whether a node may be challenged (that is
// the appraisal pipeline's call: the store only requires it to be enrolled);
// keep the hash-chained audit log (a later addition,
// docs/architecture.md#audit-log).
// Times are Unix seconds supplied by the caller; the store reads no clock.
#ifndef DPUAUDIT_VERIFIER_STORE_STORE_H_
#define DPUAUDIT_VERIFIER_STORE_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "verifier/refvals/model.h"

namespace dpuaudit::verifier {

enum class NodeState { kPending, kApproved, kRevoked };

std::string_view NodeStateName(NodeState s);  // "pending" | "approved" | ...
std::optional<NodeState> ParseNodeState(std::string_view s);

struct NodeRecord {
  std::string node_id;
  std::string public_key_pem;  // SubjectPublicKeyInfo PEM (EcPublicKey)
  std::string key_thumbprint;  // RFC 7638 JWK thumbprint; identifies the key
  std::string alg = "ES256";   // pinned signature algorithm for this key
  NodeState state = NodeState::kPending;
  int64_t enrolled_at = 0;
  std::optional<int64_t> approved_at;  // set by the first ApproveNode
  // Issue 12. The device serial pinned at approval (by a serial-bound
  // enrollment token, `approve --serial`, or the claimed serial the
  // approval confirmed); "" = none pinned.
  std::string device_serial;
  // The device identity the enrollment request claimed (unverified; shown
  // to the operator who approves).
  std::string claimed_serial;
  std::string claimed_psid;
  std::string claimed_model;
  std::string approved_by;  // who approved ("" before approval)
  // Set by RevokeNodeFor: when, by whom and why the node was revoked.
  std::optional<int64_t> revoked_at;
  std::string revoked_by;
  std::string revoke_reason;
  // Results with id <= this were made before the node's current key (an
  // admin re-enrollment after revocation): they never count for admission.
  int64_t stale_result_id = 0;

  bool operator==(const NodeRecord&) const = default;
};

// One line of a node's history (issue 12): enrolled, approved, key
// replaced, rejected, expired, revoked, re-enrolled. Kept when the node is
// removed, so a rejected or expired squatter stays visible.
struct NodeEvent {
  int64_t id = 0;  // assigned by the store
  std::string node_id;
  int64_t at = 0;
  std::string event;   // "enrolled" | "approved" | "key_replaced" | ...
  std::string actor;   // who ("" when the request was anonymous)
  std::string detail;  // what, in one sentence

  bool operator==(const NodeEvent&) const = default;
};

// A per-node, single-use enrollment token (issue 12). The token itself is
// never stored: only its hex SHA-256, and token_id (the first 16 hex
// digits of that hash) to name it in listings.
struct EnrollmentToken {
  std::string token_sha256;
  std::string token_id;
  std::string node_id;     // the only node id it enrolls
  std::string serial;      // "" = any device; else the serial it must state
  std::string created_by;
  int64_t created_at = 0;
  int64_t expires_at = 0;  // unusable once now >= expires_at
  std::optional<int64_t> used_at;
  std::string used_key_thumbprint;  // the key it enrolled ("" unused)
  std::optional<int64_t> revoked_at;
  std::string revoked_by;

  bool operator==(const EnrollmentToken&) const = default;
};

// token_sha256 64 lowercase hex digits, token_id its first 16; node_id and
// created_by non-empty; expires_at > created_at; unused and unrevoked.
Status ValidateEnrollmentToken(const EnrollmentToken& t);

// Whether token `t` may enroll `node_id` for a device stating `serial` at
// `now`: UNAUTHENTICATED when it was revoked, used or has expired;
// PERMISSION_DENIED when it is for another node id, or bound to a serial
// the enrollment does not state. Messages name the token by token_id.
Status CheckEnrollmentToken(const EnrollmentToken& t, std::string_view node_id,
                            std::string_view serial, int64_t now);

// Who vouches for an enrollment (Store::CreateNodeWithTpmBinding,
// Store::EnrollNode).
enum class EnrollAuthority {
  // A token was presented and checked: the fleet-wide bootstrap token
  // (explicit opt-in) or a per-node enrollment token (EnrollGrant). May
  // replace the node's TPM binding while it is pending (never activated),
  // whoever made it.
  kBootstrapToken,
  kNone,  // nobody: the node waits for operator approval
};

// Store::EnrollNode: what authorises an enrollment, and the limits on
// anonymous ones.
struct EnrollGrant {
  EnrollAuthority authority = EnrollAuthority::kNone;
  // Hex SHA-256 of a per-node enrollment token, checked and spent in the
  // enrollment's transaction; "" for the fleet token or none.
  std::string token_sha256;
  std::string actor;  // recorded as approved_by / in the history
  int64_t now = 0;
  // A pending node enrolled at or before now - pending_ttl_seconds has
  // expired (0: pending nodes never expire).
  int64_t pending_ttl_seconds = 0;
  // Most pending (unexpired) nodes at once; a new anonymous enrollment
  // beyond it is UNAVAILABLE (0: no cap).
  int64_t max_pending = 0;
};

// Store::ApproveEnrollment arguments.
struct ApprovalRequest {
  std::string key_thumbprint;  // must equal the stored one
  std::string serial;          // "" = pin the claimed serial, if any
  std::string by;              // who approves (required)
  std::string reason;
  int64_t now = 0;
  int64_t pending_ttl_seconds = 0;  // as EnrollGrant
};

// One received report, accepted or not. Every report the verifier receives is
// appended (docs/architecture.md#audit-log), including ones rejected before
// parsing.
struct ReportRecord {
  int64_t id = 0;       // assigned by the store; ignored on insert
  std::string node_id;  // as claimed; need not be an enrolled node
  std::string jws;      // the exact received bytes
  std::string sha256;   // hex SHA-256 of `jws`
  int64_t received_at = 0;
  bool accepted = false;  // signature, nonce and format were good
  std::string error;      // why it was rejected ("" when accepted)
  // Size of the received body; 0 means jws.size(). A refused report is kept
  // as a bounded record (issue 12): `jws` is then only a prefix of at most
  // kRefusedReportPrefixBytes, and sha256 is the digest of the whole body.
  int64_t received_bytes = 0;

  bool operator==(const ReportRecord&) const = default;
};

// How much of a refused report's body is stored, and of its error text.
inline constexpr size_t kRefusedReportPrefixBytes = 4096;
inline constexpr size_t kMaxReportErrorBytes = 1024;

// Retention of accepted reports and results (Store::PruneReports). 0 turns
// a limit off. Whatever the limits, pruning never deletes a node's latest
// result, a result whose decision differs from that node's previous result
// (a decision change; a node's first result counts as one), or the report
// rows (digest, size, time) of the results it keeps; the body of the latest
// result's report is kept too.
struct RetentionPolicy {
  int64_t keep_reports = 0;  // latest N accepted report bodies per node
  int64_t keep_seconds = 0;  // bodies and results younger than this
};

struct PruneCounts {
  int64_t results_deleted = 0;   // results (and their reports) deleted
  int64_t bodies_dropped = 0;    // kept report rows whose body was dropped
  int64_t refused_deleted = 0;   // refused-report records deleted
  int64_t nonces_deleted = 0;    // expired nonces (PurgeExpiredNonces)

  bool operator==(const PruneCounts&) const = default;
};

inline constexpr std::string_view kDecisionAdmit = "admit";
inline constexpr std::string_view kDecisionDeny = "deny";

struct ResultRecord {
  int64_t id = 0;                 // assigned by the store; ignored on insert
  std::string node_id;            // must be enrolled
  std::string decision;           // kDecisionAdmit | kDecisionDeny
  std::string ear_jwt;            // signed EAR (docs/architecture.md)
  std::string reasons_json;       // per-rule results, as JSON text
  std::string report_jws_sha256;  // sha256 of the report this appraises
  int64_t created_at = 0;
  int64_t expires_at = 0;  // decision falls back to deny after this
  // The appraisal context (verifier/bundle.h AppraisalContextJson,
  // canonical JSON): what the appraisal read besides the report, kept so an
  // auditor can re-appraise it offline (issue 16). "" when not recorded
  // (results made before issue 16).
  std::string context_json;

  bool operator==(const ResultRecord&) const = default;
};

// One stored entry of the hash-chained audit log (verifier/audit_chain.h).
struct AuditLogRow {
  int64_t seq = 0;
  int64_t time = 0;
  std::string kind;
  std::string node_id;
  std::string entry;  // canonical bytes
  std::string prev_hash;
  std::string entry_hash;
  bool operator==(const AuditLogRow&) const = default;
};

// The log's size (its last seq, 0 when empty) and head hash
// (kAuditGenesisHash when empty).
struct AuditLogHead {
  int64_t size = 0;
  std::string head_hash;
};

// A signed checkpoint {size, head_hash, time} (verifier/audit_chain.h).
struct CheckpointRecord {
  int64_t size = 0;
  std::string head_hash;
  int64_t time = 0;
  std::string jws;
  bool operator==(const CheckpointRecord&) const = default;
};

// A node's TPM (issue 5): its EK, and the AK the verifier bound to it by
// credential activation. A binding is "pending" from enrollment until the
// agent proves the credential, then "active"; only an active binding's AK
// may sign quotes for the node.
enum class TpmBindingState { kPending, kActive };
std::string_view TpmBindingStateName(
    TpmBindingState s);  // "pending" | "active"

struct TpmBinding {
  std::string node_id;
  std::string ek_public_b64;   // marshalled TPM2B_PUBLIC, base64
  std::string ek_sha256;       // hex SHA-256 of the EK's TPM name; one TPM
  std::string ek_cert_pem;     // "" when the node has none (policy allowed it)
  std::string ek_cert_issuer;  // "" without a certificate
  std::string ak_public_b64;   // marshalled TPM2B_PUBLIC, base64
  std::string ak_name_hex;     // TPM name of the AK
  TpmBindingState state = TpmBindingState::kPending;
  // Pending only: hex SHA-256 of the credential the agent must return, and
  // until when it may.
  std::string credential_sha256;
  int64_t challenge_expires_at = 0;
  int64_t created_at = 0;
  std::optional<int64_t> activated_at;

  bool operator==(const TpmBinding&) const = default;
};

Status ValidateTpmBinding(const TpmBinding& b);

// A node's hardware-path record (issue 14, docs/spdm.md#baselines): its
// BMC and IRoT identity binding, or one SPDM target's measurement
// baseline. `value_json` is canonical JSON written and re-validated by the
// verifier (verifier/bmc_state.h); the store keeps it as given.
struct HardwareRecord {
  std::string node_id;
  std::string kind;        // kHardwareRecordKinds
  std::string value_json;  // non-empty, at most kMaxHardwareRecordBytes
  int64_t set_at = 0;
  std::string set_by;  // "first-seen", or the administrator who approved it
  std::string reason;  // why (first seen: what was recorded)
  bool operator==(const HardwareRecord&) const = default;
};
inline constexpr std::string_view kHardwareRecordKinds[] = {
    "bmc-binding", "irot-baseline", "erot-baseline"};
inline constexpr size_t kMaxHardwareRecordBytes = 64 * 1024;
// INVALID_ARGUMENT naming the field: node_id or kind empty or kind unknown,
// value_json empty or over the cap, set_at < 0, set_by empty.
Status ValidateHardwareRecord(const HardwareRecord& r);
// NOT_FOUND "node X has no <kind>."
Status NoHardwareRecordError(std::string_view node_id, std::string_view kind);

// --- Node attestation status, decision events, webhook outbox (issue 15) ---
// docs/events.md. A node's status is what a relying party acts on; it is
// derived by verifier/node_status.h and stored here with the durable
// timestamps its timers run from, so a restart neither revives a stale node
// nor forgets a deadline.
inline constexpr std::string_view kNodeStatuses[] = {
    "unattested", "admitted", "failed", "stale", "held", "revoked"};
struct NodeStatusRecord {
  std::string node_id;
  std::string status;             // kNodeStatuses
  int64_t since = 0;              // when it entered `status`
  std::string last_decision;      // "admit" | "deny" | "" (no result yet)
  int64_t last_appraisal_at = 0;  // created_at of the latest result (0: none)
  int64_t last_admit_at = 0;      // created_at of the latest admit (0: none)
  int64_t last_result_id = 0;     // the latest result it has judged
  // Status "held" (a sticky failure): the rules, comma-separated, and the
  // result that failed them; cleared only by an acknowledgement.
  std::string held_rules;
  int64_t held_result_id = 0;
  int64_t updated_at = 0;
  bool operator==(const NodeStatusRecord&) const = default;
};
// INVALID_ARGUMENT naming the field: node_id empty, status or
// last_decision unknown, negative times, held_rules set unless held.
Status ValidateNodeStatus(const NodeStatusRecord& s);

// One change of a node's status: what a webhook delivers.
struct DecisionEvent {
  int64_t seq = 0;           // assigned by the store; increasing
  std::string event_id;      // 32 lowercase hex digits, unique
  std::string node_id;
  std::string type;          // "node.admitted", "node.denied", ...
  int64_t at = 0;
  std::string payload_json;  // the body delivered (docs/events.md)
  bool operator==(const DecisionEvent&) const = default;
};
inline constexpr size_t kMaxEventPayloadBytes = 256 * 1024;
Status ValidateDecisionEvent(const DecisionEvent& e);

// One delivery of one event to one webhook endpoint (the durable outbox).
struct OutboxEntry {
  int64_t id = 0;             // assigned by the store
  std::string event_id;
  std::string endpoint;       // the endpoint's name in the webhook config
  int64_t created_at = 0;
  int64_t next_attempt_at = 0;
  int64_t attempts = 0;
  std::string last_error;     // "" before the first failure
  std::optional<int64_t> last_attempt_at;
  std::optional<int64_t> delivered_at;
  bool operator==(const OutboxEntry&) const = default;
};
// An outbox entry with what it delivers.
struct OutboxDelivery {
  OutboxEntry entry;
  DecisionEvent event;
};
struct OutboxEndpointStats {
  std::string endpoint;
  int64_t pending = 0;        // not delivered yet
  int64_t failing = 0;        // pending with at least one failed attempt
  int64_t delivered = 0;
  std::optional<int64_t> oldest_pending_at;  // created_at of the oldest pending
  std::optional<int64_t> last_delivered_at;
  std::string last_error;     // of the most recent failed attempt
  bool operator==(const OutboxEndpointStats&) const = default;
};

// Store::ApplyNodeTransition: the node's new status, and the event (with
// one outbox row per endpoint) when the status changed, all in one
// transaction.
struct NodeTransition {
  NodeStatusRecord status;
  std::optional<DecisionEvent> event;
  std::vector<std::string> endpoints;
};

// Input checks every backend applies before touching the database, so all
// backends refuse the same records with the same messages.
Status ValidateNodeRecord(const NodeRecord& node);
Status ValidateReportRecord(const ReportRecord& report);
Status ValidateResultRecord(const ResultRecord& result,
                            const ReportRecord& report);
// RecordNodeRelease arguments: node_id, kind and release non-empty; release
// a valid release label; at >= 0.
Status ValidateNodeRelease(std::string_view node_id, std::string_view kind,
                           std::string_view release, int64_t at);
// PutRelease content equality: release, model, psids, values, upgrade_from,
// compatible_with and expires_at (lists compared as sets); state, history
// and created_at are not compared.
bool SameReleaseContent(const RefRelease& a, const RefRelease& b);

// --- Rules every backend shares ---------------------------------------------
// What a Store decides, as opposed to what it stores: a backend reads the
// rows, asks these, and writes what they say, so every backend refuses the
// same requests, in the same order, with the same messages, and keeps the
// same history. None of them touches a database or reads a clock.

// The NOT_FOUND / UNAUTHENTICATED answers the Store contract spells out.
Status NodeNotEnrolledError(std::string_view node_id);  // "node X is not enrolled."
Status NoTpmBindingError(std::string_view node_id);
Status TpmBoundToNodeError(std::string_view owner);  // ALREADY_EXISTS
Status ReleaseNotKnownError(std::string_view release);
Status NoNodeReleaseError(std::string_view node_id, std::string_view kind);
Status NoResultError(std::string_view node_id);
Status NoAcceptedReportError(std::string_view node_id, std::string_view sha256);
Status EnrollmentTokenNotKnownError();                       // by hash
Status EnrollmentTokenIdNotKnownError(std::string_view token_id);
Status InvalidEnrollmentTokenError();  // UNAUTHENTICATED: a grant's unknown token

// Nodes. CreateNode over an existing node: OK (idempotent, nothing to
// write) for the same key_thumbprint and alg, ALREADY_EXISTS otherwise.
Status CheckReEnrollment(const NodeRecord& existing, const NodeRecord& node);
// ApproveNode on `node`: true when it changed (pending -> approved at
// `now`), false when it was approved already; FAILED_PRECONDITION revoked.
StatusOr<bool> ApplyApproveNode(NodeRecord& node, int64_t now);
// RevokeNode on `node`: true when it changed (-> revoked).
bool ApplyRevokeNode(NodeRecord& node);

// Nonces: InsertNonce's and InsertNonceCapped's arguments.
Status ValidateNonce(std::string_view nonce, std::string_view node_id,
                     int64_t issued_at, int64_t expires_at);
Status ValidateNonceCap(int64_t max_outstanding);
// How many of a node's `outstanding` nonces InsertNonceCapped evicts
// (oldest first) before adding one.
int64_t NoncesToEvict(int64_t outstanding, int64_t max_outstanding);
// A stored nonce as the refusals below see it.
struct StoredNonce {
  std::string node_id;
  int64_t issued_at = 0;
  int64_t expires_at = 0;
  bool used = false;
};
// Why a spend of a nonce for `node_id` at `now` was refused, in
// ConsumeNonce's order (nullopt: unknown); OK when none of its refusals
// applies (the backend then says why it could not spend it).
Status NonceRefusal(const std::optional<StoredNonce>& stored,
                    std::string_view node_id, int64_t now);
// NonceIssuedAt's answer.
StatusOr<int64_t> NonceIssuedAtFor(const std::optional<StoredNonce>& stored,
                                   std::string_view node_id);

// Reports and quotas. The quota measure of a record: body plus error.
int64_t ReportStoredBytes(const ReportRecord& report);
// InsertRefusedReport's argument checks (ValidateReportRecord included).
Status ValidateRefusedReport(const ReportRecord& report);
// RESOURCE_EXHAUSTED when storing `report` takes a node that has `used`
// bytes over `quota_bytes` (0: no quota).
Status CheckRefusedReportQuota(const ReportRecord& report, int64_t used,
                               int64_t quota_bytes);
// RESOURCE_EXHAUSTED when `report` alone exceeds `quota_bytes`.
Status CheckReportFitsQuota(const ReportRecord& report, int64_t quota_bytes);
// The storage primitives MakeReportRoom runs: each frees the node's oldest
// record of its kind and returns the bytes it freed, or nullopt when the
// node has none.
struct ReportRoom {
  std::function<StatusOr<std::optional<int64_t>>()> delete_oldest_refused;
  std::function<StatusOr<std::optional<int64_t>>()> drop_oldest_body;
};
// Makes room for `report` in a node that has `used` of `quota_bytes`:
// refused-report records go first, oldest first, then the bodies of its
// oldest accepted reports; RESOURCE_EXHAUSTED when nothing is left to
// free. quota_bytes 0: nothing to do.
Status MakeReportRoom(const ReportRecord& report, int64_t used,
                      int64_t quota_bytes, const ReportRoom& room);

// Retention (PruneReports). INVALID_ARGUMENT for negative limits.
Status ValidateRetentionPolicy(const RetentionPolicy& policy);
// Records older than this are outside keep_seconds (nullopt: no limit).
std::optional<int64_t> RetentionCutoff(const RetentionPolicy& policy,
                                       int64_t now);
// One result as retention sees it: its place in its node's history.
struct RetentionCandidate {
  int64_t result_id = 0;
  int64_t report_id = 0;
  int64_t rank = 0;  // 1 = the node's latest result (by created_at, id)
  std::string decision;
  std::optional<std::string> previous_decision;  // nullopt: the first
  int64_t created_at = 0;
};
enum class RetentionAction { kKeep, kDropBody, kDelete };
// kKeep inside the limits and for the latest result; outside them a
// decision change (the first result, or a decision unlike the previous)
// keeps its row but not its report's body; any other result is deleted
// with its report.
RetentionAction RetentionActionFor(const RetentionCandidate& c,
                                   const RetentionPolicy& policy, int64_t now);

// Reference values. PutReleases' checks, naming the index ("releases[i]").
Status ValidateReleases(const std::vector<RefRelease>& releases);
// PutRelease over a stored release of the label: OK (nothing to write)
// when equal in content, ALREADY_EXISTS otherwise.
Status CheckReleaseReput(const RefRelease& stored, const RefRelease& release);
// ListReleases' model filter: "" for all, else the canonical model.
StatusOr<std::string> ReleaseModelFilter(std::string_view model);
// TransitionRelease on `release`: the state change and its history record,
// re-validated; FAILED_PRECONDITION when RefTransitionAllowed refuses.
Status ApplyReleaseTransition(RefRelease& release, const RefApproval& approval);

// TPM bindings. PutTpmBinding's argument checks (state pending included).
Status ValidatePendingTpmBinding(const TpmBinding& binding);
// CreateNodeWithTpmBinding's / EnrollNode's argument checks.
Status ValidateNodeWithTpmBinding(const NodeRecord& node,
                                  const TpmBinding& binding);
// PutTpmBinding over the node's stored binding: true to write `binding`,
// false to leave an active binding of the same EK and AK as it is;
// ALREADY_EXISTS for an active binding of another TPM. (The EK being
// active on another node is the backend's look-up: TpmBoundToNodeError.)
StatusOr<bool> TpmBindingNeedsWrite(const std::optional<TpmBinding>& stored,
                                    const TpmBinding& binding);
// What an enrollment nobody vouched for (EnrollAuthority::kNone) may do to
// the TPM binding of `existing`: see Store::CreateNodeWithTpmBinding.
Status CheckUnvouchedTpmEnrollment(const NodeRecord& existing,
                                   const std::optional<TpmBinding>& stored,
                                   const TpmBinding& binding);
// ActivateTpmBinding's refusals, in order (the EK check is the backend's).
Status CheckTpmActivation(const std::optional<TpmBinding>& stored,
                          std::string_view node_id,
                          std::string_view credential_sha256, int64_t now);
// DeleteTpmBinding's refusals.
Status CheckTpmBindingDeletion(const std::optional<TpmBinding>& stored,
                               std::string_view node_id, bool allow_active);

// Enrollment and identity. EnrollNode's argument checks.
Status ValidateEnrollRequest(const NodeRecord& node,
                             const std::optional<TpmBinding>& binding,
                             const EnrollGrant& grant);
// A pending node enrolled at or before now - ttl (ttl 0: never expires).
bool PendingExpired(const NodeRecord& node, int64_t now, int64_t ttl_seconds);
// Pending nodes enrolled after this are unexpired (the pending cap counts
// them).
int64_t UnexpiredPendingAfter(int64_t now, int64_t ttl_seconds);
// Whether EnrollNode of a new node counts against grant.max_pending.
bool PendingCapApplies(const EnrollGrant& grant);
// UNAVAILABLE when `pending` unexpired pending nodes fill the cap.
Status CheckPendingCap(int64_t pending, const EnrollGrant& grant);
// Who the history names for an enrollment with `token`.
std::string TokenActor(const EnrollmentToken& token);
// What EnrollNode does with the (unexpired) node of that id.
enum class EnrollAction {
  kCreate,           // no such node, or the same node (CreateNode rules)
  kReEnrollRevoked,  // revoked: new key, no TPM binding, approved again
  kTakeOver,         // pending, never approved, another key: replaced
};
// PERMISSION_DENIED for a revoked node without a per-node token;
// ALREADY_EXISTS for an approved node with another key and a token.
StatusOr<EnrollAction> PlanEnrollment(const std::optional<NodeRecord>& existing,
                                      const NodeRecord& node, bool has_token);
// ApproveEnrollment's argument checks.
Status ValidateApprovalRequest(const ApprovalRequest& req);
// ApproveEnrollment on `node`: true when it changed (approved, approver
// and device serial pinned), false when approved already with that key.
StatusOr<bool> ApplyEnrollmentApproval(NodeRecord& node,
                                       const ApprovalRequest& req);
// RejectNode's checks (`by` required; only a pending node).
Status ValidateRejection(std::string_view by);
Status CheckRejection(const NodeRecord& node);
// RevokeNodeFor's checks, and the revocation: true when `node` changed.
Status ValidateRevocation(std::string_view by, std::string_view reason);
bool ApplyRevocationFor(NodeRecord& node, std::string_view by,
                        std::string_view reason, int64_t now);
// Who revoked a node's unused tokens when the node was revoked by `by`.
std::string TokenRevocationActor(std::string_view by);
// RevokeEnrollmentToken's checks, and the revocation: true when `token`
// changed, false when it was revoked already; FAILED_PRECONDITION used.
Status ValidateTokenRevocation(std::string_view by);
StatusOr<bool> ApplyTokenRevocation(EnrollmentToken& token,
                                    std::string_view by, int64_t now);

// The history lines every backend appends (node_id, at, event, actor and
// detail; id is the store's).
NodeEvent EnrolledEvent(const NodeRecord& node, bool with_tpm,
                        std::string_view actor, int64_t at);
NodeEvent ApprovedEvent(const NodeRecord& node, std::string_view actor,
                        std::string_view reason, int64_t at);
NodeEvent ExpiredOnEnrollEvent(const NodeRecord& expired, int64_t at);
NodeEvent ExpiredPendingEvent(std::string_view node_id, int64_t at);
NodeEvent ReEnrolledEvent(const NodeRecord& revoked, const NodeRecord& node,
                          std::string_view actor, int64_t at);
NodeEvent KeyReplacedEvent(const NodeRecord& squatter, const NodeRecord& node,
                           std::string_view actor, int64_t at);
NodeEvent RejectedEvent(const NodeRecord& node, std::string_view by,
                        std::string_view reason, int64_t at);
// `was`: the state before the revocation.
NodeEvent RevokedEvent(const NodeRecord& node, NodeState was,
                       std::string_view by, std::string_view reason,
                       int64_t at);


// Issue 15 (keys): one key the verifier has signed EARs with. public_jwk
// is the JWK text (report::PublicJwk); kid its RFC 7638 thumbprint.
// last_used_at is an upper bound on the last time it signed (the service
// raises it ahead of use); every result it signed has expired by
// last_used_at + max_result_ttl_seconds (the longest result lifetime it was
// used with). The current key is the one with the greatest seq.
struct SigningKeyRecord {
  std::string kid;
  std::string public_jwk;
  int64_t first_used_at = 0;
  int64_t last_used_at = 0;
  int64_t max_result_ttl_seconds = 0;
  int64_t seq = 0;  // assigned by the store at each RegisterSigningKey

  int64_t published_until() const {
    return last_used_at + max_result_ttl_seconds;
  }
  bool operator==(const SigningKeyRecord&) const = default;
};

// Issue 15 (keys): Store::RekeyNode's new key.
struct NodeRekey {
  std::string old_thumbprint;  // must still be the node's key
  std::string public_key_pem;
  std::string key_thumbprint;
  std::string alg = "ES256";
  int64_t now = 0;
};

// Fleet report (issue 16 §7): one node_releases row, and the admit/deny
// counts of one time bucket (Store::ListNodeReleases, Store::CountDecisions).
struct NodeReleaseRecord {
  std::string node_id;
  std::string kind;  // "arm"
  std::string release;
  int64_t at = 0;
  bool operator==(const NodeReleaseRecord&) const = default;
};
struct DecisionBucket {
  int64_t start = 0;  // multiple of the bucket width (Unix seconds)
  int64_t admit = 0;
  int64_t deny = 0;
  bool operator==(const DecisionBucket&) const = default;
};

class Store {
 public:
  virtual ~Store() = default;

  // --- Nodes ---------------------------------------------------------------

  // Enrolls `node` (state and approved_at as given; normally kPending).
  // Returns the stored record. Re-enrolling an existing node_id with the same
  // key_thumbprint and alg is idempotent: OK, returning the existing record
  // unchanged (its state is NOT reset). A different key or alg:
  // ALREADY_EXISTS. Empty node_id, public_key_pem or key_thumbprint:
  // INVALID_ARGUMENT.
  virtual StatusOr<NodeRecord> CreateNode(const NodeRecord& node) = 0;

  // NOT_FOUND "node X is not enrolled."
  virtual StatusOr<NodeRecord> GetNode(std::string_view node_id) = 0;

  // kPending -> kApproved with approved_at = now. Approving an approved node
  // is OK and keeps the first approved_at. NOT_FOUND if not enrolled;
  // FAILED_PRECONDITION if revoked (a revoked node must re-enroll under a new
  // id). Returns the stored record.
  virtual StatusOr<NodeRecord> ApproveNode(std::string_view node_id,
                                           int64_t now) = 0;

  // Any state -> kRevoked (idempotent). NOT_FOUND if not enrolled. Results
  // already stored are kept; callers must check the state before admitting.
  virtual StatusOr<NodeRecord> RevokeNode(std::string_view node_id) = 0;

  // All nodes, ordered by node_id.
  virtual StatusOr<std::vector<NodeRecord>> ListNodes() = 0;

  // --- Enrollment and identity (issue 12) ---------------------------------

  // One enrollment, in one transaction (all or nothing: a refusal or a
  // failed write stores nothing and leaves the token unspent):
  //  1. an expired pending node of this id is removed first (its id is free);
  //  2. grant.token_sha256, when set, must name a stored token that is
  //     unused, unrevoked and unexpired (UNAUTHENTICATED otherwise), for
  //     node.node_id and, when serial-bound, for node.claimed_serial
  //     (PERMISSION_DENIED otherwise);
  //  3. a revoked node: PERMISSION_DENIED naming the revocation, unless a
  //     per-node token is spent: then its key is replaced, its TPM binding
  //     dropped and it is approved again (history records both);
  //  4. a pending (never approved) node with another key and a per-node
  //     token: its key and its TPM binding are replaced (the squatter loses
  //     the id); an approved node with another key stays ALREADY_EXISTS
  //     (revoke it first);
  //  5. a new anonymous node when grant.max_pending unexpired pending nodes
  //     exist: UNAVAILABLE;
  //  6. then CreateNode, or with `binding` the body of
  //     CreateNodeWithTpmBinding (same checks for kNone), and with authority
  //     kBootstrapToken the approval (pinning the token's serial).
  // Returns the stored node.
  virtual StatusOr<NodeRecord> EnrollNode(
      const NodeRecord& node, const std::optional<TpmBinding>& binding,
      const EnrollGrant& grant) = 0;
  // Pending -> approved only for the key the operator names:
  // INVALID_ARGUMENT without req.by or req.key_thumbprint; NOT_FOUND;
  // FAILED_PRECONDITION if revoked, if the stored thumbprint differs (the
  // message shows the stored thumbprint and claimed serial), or if
  // req.serial differs from a claimed serial; DEADLINE_EXCEEDED if the
  // pending enrollment expired. Pins req.serial, else the claimed serial.
  // An approved node with the same key is returned unchanged.
  virtual StatusOr<NodeRecord> ApproveEnrollment(
      std::string_view node_id, const ApprovalRequest& req) = 0;
  // Removes a pending node with its TPM binding (history kept).
  // NOT_FOUND; FAILED_PRECONDITION for an approved or revoked node ("use
  // revoke"); INVALID_ARGUMENT without `by`.
  virtual Status RejectNode(std::string_view node_id, std::string_view by,
                            std::string_view reason, int64_t now) = 0;
  // Any state -> revoked, recording when, by whom and why, and revoking
  // every unused enrollment token of the node (so re-enrolling needs one
  // issued after the revocation). Revoking a revoked node is OK and keeps
  // the first record. INVALID_ARGUMENT
  // without `by` or `reason`; NOT_FOUND.
  virtual StatusOr<NodeRecord> RevokeNodeFor(std::string_view node_id,
                                             std::string_view by,
                                             std::string_view reason,
                                             int64_t now) = 0;
  // Removes every pending node enrolled at or before now - ttl_seconds
  // (with its TPM binding); returns how many.
  virtual StatusOr<int64_t> PurgeExpiredPendingNodes(int64_t now,
                                                     int64_t ttl_seconds) = 0;
  // The node's history, oldest first (also for removed nodes).
  virtual StatusOr<std::vector<NodeEvent>> NodeHistory(
      std::string_view node_id) = 0;

  // Stores a new token (ValidateEnrollmentToken: INVALID_ARGUMENT;
  // ALREADY_EXISTS if its hash or id is stored).
  virtual Status PutEnrollmentToken(const EnrollmentToken& token) = 0;
  // NOT_FOUND "enrollment token is not known."
  virtual StatusOr<EnrollmentToken> GetEnrollmentToken(
      std::string_view token_sha256) = 0;
  // Every token, newest first.
  virtual StatusOr<std::vector<EnrollmentToken>> ListEnrollmentTokens() = 0;
  // Makes an unused token unusable. NOT_FOUND by token_id;
  // FAILED_PRECONDITION if it was used; revoking twice is OK.
  virtual StatusOr<EnrollmentToken> RevokeEnrollmentToken(
      std::string_view token_id, std::string_view by, int64_t now) = 0;

  // --- Nonces --------------------------------------------------------------

  // Records a nonce issued to `node_id`, valid while now < expires_at.
  // NOT_FOUND if the node is not enrolled; ALREADY_EXISTS if the nonce
  // string was issued before; INVALID_ARGUMENT if empty or
  // expires_at <= issued_at.
  virtual Status InsertNonce(std::string_view nonce, std::string_view node_id,
                             int64_t issued_at, int64_t expires_at) = 0;

  // Atomically spends `nonce` for `node_id` at time `now`. Errors are checked
  // in this order, and none of them changes state:
  //   NOT_FOUND          "unknown nonce."
  //   PERMISSION_DENIED  "nonce was issued to another node." (the other
  //                      node's id is not revealed, nor whether it was used)
  //   FAILED_PRECONDITION "nonce already used." (replay)
  //   DEADLINE_EXCEEDED  "nonce expired at T." (now >= expires_at)
  virtual Status ConsumeNonce(std::string_view nonce, std::string_view node_id,
                              int64_t now) = 0;

  // When `nonce` was issued (the issued_at given to InsertNonce), whether
  // or not it is used or expired; changes nothing. NOT_FOUND "unknown
  // nonce."; PERMISSION_DENIED "nonce was issued to another node." (as
  // ConsumeNonce, the other node is not revealed).
  virtual StatusOr<int64_t> NonceIssuedAt(std::string_view nonce,
                                          std::string_view node_id) = 0;

  // Deletes every nonce (used or not) with expires_at <= now; returns how
  // many. A purged nonce then reads as "unknown nonce." — still refused.
  virtual StatusOr<int64_t> PurgeExpiredNonces(int64_t now) = 0;

  // InsertNonce, keeping at most `max_outstanding` (>= 1) unspent,
  // unexpired nonces for the node at issued_at: when the node already has
  // that many, its oldest ones are deleted first (FIFO) in the same
  // transaction, so outstanding nonces cannot grow between purges. Returns
  // how many were deleted. Same errors as InsertNonce, plus
  // INVALID_ARGUMENT for max_outstanding < 1.
  virtual StatusOr<int64_t> InsertNonceCapped(std::string_view nonce,
                                              std::string_view node_id,
                                              int64_t issued_at,
                                              int64_t expires_at,
                                              int64_t max_outstanding) = 0;

  // --- Reports and results -------------------------------------------------

  // Appends a received report; returns its id. INVALID_ARGUMENT if sha256 is
  // empty or an accepted report carries an error / a rejected one none.
  virtual StatusOr<int64_t> InsertReport(const ReportRecord& report) = 0;

  // Appends `report` and the `result` appraising it in one transaction;
  // returns the result id. INVALID_ARGUMENT unless: decision is "admit" or
  // "deny"; report.accepted; report and result name the same node;
  // result.report_jws_sha256 == report.sha256; expires_at >= created_at.
  // NOT_FOUND if the node is not enrolled. On any error nothing is stored.
  virtual StatusOr<int64_t> InsertResult(const ResultRecord& result,
                                         const ReportRecord& report) = 0;

  // Spends `nonce` for result.node_id at `now` (as ConsumeNonce) and appends
  // `report` and `result` (as InsertResult) in one transaction, so a nonce
  // is never spent without its result stored: if the result cannot be
  // stored (disk full, crash) the nonce stays usable. Validates as
  // InsertResult first, then refuses with ConsumeNonce's errors, in its
  // order and with its messages; on any error nothing is stored and the
  // nonce is unchanged.
  virtual StatusOr<int64_t> InsertResultSpendingNonce(
      const ResultRecord& result, const ReportRecord& report,
      std::string_view nonce, int64_t now) = 0;

  // Bytes of report bodies and errors stored for `node_id` (the quota
  // measure below): sum of length(jws) + length(error) over its reports.
  virtual StatusOr<int64_t> ReportBytes(std::string_view node_id) = 0;

  // Stores a refused report as a bounded record, within the node's quota:
  // INVALID_ARGUMENT unless !report.accepted, jws.size() <=
  // kRefusedReportPrefixBytes, error.size() <= kMaxReportErrorBytes and
  // received_bytes >= jws.size(); RESOURCE_EXHAUSTED "node X has used N of
  // its Q bytes of report storage; ..." when storing it would take the
  // node's ReportBytes over `quota_bytes` (0: no quota). The check and the
  // insert are one transaction. Returns the report id.
  virtual StatusOr<int64_t> InsertRefusedReport(const ReportRecord& report,
                                                int64_t quota_bytes) = 0;

  // InsertResultSpendingNonce within the node's quota (0: no quota), in one
  // transaction: when the new report would take the node over `quota_bytes`
  // the node's own oldest records make room first — refused-report records,
  // oldest first, then bodies of its oldest accepted reports (rows, digests
  // and results stay) — so an honest node is never locked out by its own
  // history. RESOURCE_EXHAUSTED when the report alone does not fit. On any
  // error nothing is stored or deleted and the nonce is unchanged.
  // With `transition` (issue 15) the node's status, event and outbox rows
  // are written in the same transaction; transition->status.last_result_id
  // is set to the new result's id.
  virtual StatusOr<int64_t> InsertResultSpendingNonceWithinQuota(
      const ResultRecord& result, const ReportRecord& report,
      std::string_view nonce, int64_t now, int64_t quota_bytes,
      const NodeTransition* transition = nullptr) = 0;

  // Applies `policy` at `now` (see RetentionPolicy for what is never
  // deleted): results outside the latest keep_reports per node or older
  // than keep_seconds are deleted with their reports unless kept; kept
  // results' report bodies outside the limits are dropped (the row, digest
  // and size stay); refused-report records outside the same limits are
  // deleted. One transaction. Does not purge nonces (nonces_deleted is 0).
  virtual StatusOr<PruneCounts> PruneReports(const RetentionPolicy& policy,
                                             int64_t now) = 0;

  // The result stored last for the node (greatest id: ids are a monotonic
  // sequence in commit order), whether or not it has expired, and whatever
  // its created_at says: a verifier whose clock stepped back must not let
  // an older result with a larger timestamp hide a newer one.
  // NOT_FOUND "no result for node X."
  virtual StatusOr<ResultRecord> LatestResult(std::string_view node_id) = 0;

  // The accepted report of `node_id` whose sha256 is `sha256` (the last
  // stored, should the same bytes have been stored twice). NOT_FOUND "no
  // accepted report X of node Y is stored."
  virtual StatusOr<ReportRecord> GetAcceptedReport(std::string_view node_id,
                                                   std::string_view sha256) = 0;

  // Appends a result that re-appraises a report already stored (a
  // reference-value change withdrew an admission): the result row points at
  // the node's accepted report whose sha256 is result.report_jws_sha256,
  // and nothing else is written. INVALID_ARGUMENT as InsertResult's result
  // checks; NOT_FOUND when no such accepted report is stored.
  // `transition` as InsertResultSpendingNonceWithinQuota.
  virtual StatusOr<int64_t> InsertReappraisal(
      const ResultRecord& result,
      const NodeTransition* transition = nullptr) = 0;

  // --- Reference values (verifier/refvals/model.h)
  // ----------------------------------

  // Stores a new release (ValidateRelease first: INVALID_ARGUMENT). Putting
  // a release whose label exists is OK and changes nothing if it is equal
  // in content (release, model, psids, values, upgrade_from,
  // compatible_with, expires_at);
  // ALREADY_EXISTS naming the label otherwise.
  virtual Status PutRelease(const RefRelease& release) = 0;
  // Several releases in one transaction: all stored or none (same rules).
  virtual Status PutReleases(const std::vector<RefRelease>& releases) = 0;
  // NOT_FOUND "reference release X is not known."
  virtual StatusOr<RefRelease> GetRelease(std::string_view release) = 0;
  // All releases ordered by (model, created_at, release); only `model`'s
  // when it is non-empty.
  virtual StatusOr<std::vector<RefRelease>> ListReleases(
      std::string_view model) = 0;
  // Atomically moves a release to `approval.state`, appending `approval`
  // to its history. NOT_FOUND if unknown; FAILED_PRECONDITION "release X is
  // revoked; cannot move it to active." if RefTransitionAllowed is false;
  // moving to the current state is FAILED_PRECONDITION too. INVALID_ARGUMENT
  // for an empty approval.by. Returns the stored release.
  virtual StatusOr<RefRelease> TransitionRelease(
      std::string_view release, const RefApproval& approval) = 0;
  // A monotonically increasing counter bumped by every change to reference
  // values (so the verifier can cache its RefIndex).
  virtual StatusOr<int64_t> RefvalsGeneration() = 0;

  // The release a node was last seen running (for upgrade edges), per kind
  // ("arm"). NOT_FOUND when none was recorded. RecordNodeRelease keeps the
  // record with the greatest `at` (a call with an older `at` is OK and
  // changes nothing); NOT_FOUND if the node is not enrolled;
  // INVALID_ARGUMENT per ValidateNodeRelease.
  virtual Status RecordNodeRelease(std::string_view node_id,
                                   std::string_view kind,
                                   std::string_view release, int64_t at) = 0;
  virtual StatusOr<std::string> LastNodeRelease(std::string_view node_id,
                                                std::string_view kind) = 0;

  // --- TPM bindings
  // -----------------------------------------------------------

  // Stores a pending binding for an enrolled node (NOT_FOUND otherwise),
  // replacing any pending one of that node. INVALID_ARGUMENT per
  // ValidateTpmBinding or when `binding.state` is not pending.
  // ALREADY_EXISTS when the node already has an active binding with a
  // different AK or EK ("node X is bound to another TPM."), or when the EK
  // (ek_sha256) is actively bound to another node ("this TPM is bound to
  // node Y."). An active binding with the same EK and AK is left as it is
  // and the call is OK (re-enrolling the same TPM is idempotent).
  virtual Status PutTpmBinding(const TpmBinding& binding) = 0;
  // Enrollment with a TPM in one transaction: CreateNode(node), then
  // PutTpmBinding(binding), then, when `approve_at` is set and the node is
  // pending, its approval as ApproveNode(node.node_id, *approve_at) (an
  // approved node keeps its first approved_at; a revoked node stays revoked
  // and is not refused). Same idempotency, refusals and messages as those
  // calls (an existing node with another key: ALREADY_EXISTS; the EK active
  // on another node: ALREADY_EXISTS "this TPM is bound to node \"Y\"."),
  // plus INVALID_ARGUMENT when binding.node_id is not node.node_id. All or
  // nothing: on any error (a refusal, a full disk) neither the node, nor the
  // binding, nor the approval is stored, so no enrollment is left pending
  // without its TPM. Returns the stored node record.
  //
  // `authority` kBootstrapToken replaces a pending binding of the node
  // whatever its EK and AK (PutTpmBinding), so a token holder clears a
  // binding an outsider made; an active binding of another TPM still
  // refuses (ALREADY_EXISTS; the operator's DeleteTpmBinding first).
  // `authority` kNone (an enrollment without the bootstrap token: a node's
  // public key is public, so such a request proves nothing about an existing
  // node) adds, checked in the same transaction when the node exists:
  // FAILED_PRECONDITION "node X is bound to another TPM; rebinding it needs
  // the bootstrap token." when its binding has another EK or AK;
  // FAILED_PRECONDITION "node X has a TPM credential challenge outstanding
  // until T; ..." when its pending binding has not expired at
  // binding.created_at; PERMISSION_DENIED "node X is approved; adding a TPM
  // to it needs the bootstrap token." when it has no binding and is not
  // pending. An identical active binding is returned as it is.
  virtual StatusOr<NodeRecord> CreateNodeWithTpmBinding(
      const NodeRecord& node, const TpmBinding& binding,
      std::optional<int64_t> approve_at, EnrollAuthority authority) = 0;
  // Pending -> active when `credential_sha256` matches (constant-time) and
  // now < challenge_expires_at; the credential hash is then cleared.
  // NOT_FOUND "node X has no TPM binding."; FAILED_PRECONDITION
  // "TPM binding of node X is already active." / "credential does not
  // match." / DEADLINE_EXCEEDED "credential challenge expired at T.".
  // A refused activation changes nothing. Returns the stored binding.
  virtual StatusOr<TpmBinding> ActivateTpmBinding(
      std::string_view node_id, std::string_view credential_sha256,
      int64_t now) = 0;
  // NOT_FOUND "node X has no TPM binding."
  virtual StatusOr<TpmBinding> GetTpmBinding(std::string_view node_id) = 0;
  // The operator's reset (`dpuaudit-verifier tpm reset`): deletes the TPM
  // binding of `node_id` in one transaction and returns what it deleted. A
  // pending binding (never activated: nothing proved it is the node's TPM)
  // is always deleted; an active one only with `allow_active` (FAILED_
  // PRECONDITION "TPM binding of node X is active; ..." otherwise). The
  // node itself, its state and its results are kept; with no binding the
  // node enrolls its TPM again like a new one. NOT_FOUND "node X has no TPM
  // binding." (or is not enrolled).
  virtual StatusOr<TpmBinding> DeleteTpmBinding(std::string_view node_id,
                                                bool allow_active) = 0;
  // For readiness probes (GET /readyz): OK when the store can be read and
  // its write lock taken now (a transaction begun and rolled back; nothing
  // is written). UNAVAILABLE (busy, I/O, disk) or DATA_LOSS otherwise.
  virtual Status CheckWritable() = 0;

  // --- Hardware-path records (issue 14)
  // ---------------------------------------------------

  // First seen: stores `r` unless the node already has a record of that
  // kind, and returns the stored record (the existing one, unchanged, when
  // there was one), with node event "<kind>-first-seen" when it stored.
  // NOT_FOUND when the node is not enrolled; INVALID_ARGUMENT per
  // ValidateHardwareRecord.
  virtual StatusOr<HardwareRecord> PutHardwareRecordIfAbsent(
      const HardwareRecord& r) = 0;
  // An administrator's re-approval or re-binding: replaces the node's
  // record of that kind (or stores the first), in one transaction with node
  // event "<kind>-approved" (actor set_by, detail the reason). The reason
  // must be non-empty and set_by must not be "first-seen"
  // (INVALID_ARGUMENT). Returns the stored record.
  virtual StatusOr<HardwareRecord> ReplaceHardwareRecord(
      const HardwareRecord& r) = 0;
  // NOT_FOUND per NoHardwareRecordError.
  virtual StatusOr<HardwareRecord> GetHardwareRecord(std::string_view node_id,
                                                     std::string_view kind) = 0;
  // --- Node status, decision events, webhook outbox (issue 15) -------------

  // NOT_FOUND "node X has no status yet." when none was stored.
  virtual StatusOr<NodeStatusRecord> GetNodeStatus(std::string_view node_id) = 0;
  virtual StatusOr<std::vector<NodeStatusRecord>> ListNodeStatuses() = 0;
  // Nodes whose status is unattested, admitted or failed and whose last
  // activity (last_appraisal_at, or `since` before the first result) is at
  // or before `cutoff`: the candidates for "stale".
  virtual StatusOr<std::vector<NodeStatusRecord>> ListStaleCandidates(
      int64_t cutoff) = 0;
  // Upserts t.status; with t.event appends it and one outbox entry per
  // endpoint (next attempt at event.at). NOT_FOUND when the node is not
  // enrolled; INVALID_ARGUMENT per ValidateNodeStatus /
  // ValidateDecisionEvent; ALREADY_EXISTS for a repeated event_id.
  virtual Status ApplyNodeTransition(const NodeTransition& t) = 0;
  // Events after `after_seq`, oldest first, at most `limit` (1..1000);
  // node_id "" for every node.
  virtual StatusOr<std::vector<DecisionEvent>> ListDecisionEvents(
      std::string_view node_id, int64_t after_seq, int64_t limit) = 0;
  // Undelivered entries due at `now` (next_attempt_at <= now), oldest
  // first, at most `limit`, with their events. Per node and endpoint in
  // order: an entry is not due while an earlier undelivered entry for the
  // same node and endpoint exists (a receiver never gets a node's "admitted"
  // after the "denied" that followed it).
  virtual StatusOr<std::vector<OutboxDelivery>> DueOutbox(int64_t now,
                                                          int64_t limit) = 0;
  // The entries DueOutbox(now, limit) would return, for a dispatcher that
  // is about to send them. On a store several verifier replicas share
  // (PostgreSQL) they are claimed until now + lease_seconds: locked with
  // SELECT ... FOR UPDATE SKIP LOCKED and marked claimed in one statement,
  // so no entry is returned by two calls (on any replica) while its claim
  // runs; MarkOutboxDelivered / MarkOutboxFailed end the claim, and an entry
  // whose claimer died is due again when the lease runs out. A claimed
  // entry still holds back the later entries of its node and endpoint. The
  // default (SQLite: one verifier per file) is DueOutbox, without claims.
  // INVALID_ARGUMENT for lease_seconds < 1 where claims are made.
  virtual StatusOr<std::vector<OutboxDelivery>> ClaimDueOutbox(
      int64_t now, int64_t limit, int64_t lease_seconds) {
    (void)lease_seconds;
    return DueOutbox(now, limit);
  }
  // Undelivered entries, oldest first, at most `limit` (due or not).
  virtual StatusOr<std::vector<OutboxEntry>> PendingOutbox(int64_t limit) = 0;
  // Delivered at `now`. NOT_FOUND for an unknown id; delivering twice is
  // OK and keeps the first time.
  virtual Status MarkOutboxDelivered(int64_t id, int64_t now) = 0;
  // A failed attempt at `now`: attempts + 1, the error (truncated to
  // kMaxReportErrorBytes) and the next attempt time.
  virtual Status MarkOutboxFailed(int64_t id, int64_t now,
                                  int64_t next_attempt_at,
                                  std::string_view error) = 0;
  // Per endpoint, sorted by name.
  virtual StatusOr<std::vector<OutboxEndpointStats>> OutboxStats() = 0;


  // --- Verifier signing keys and node re-key (issue 15, keys part) --------

  // The verifier signs with `k` from now on (start-up): stores it, or when
  // its kid is known checks the same public_jwk (FAILED_PRECONDITION
  // otherwise) and raises last_used_at and max_result_ttl_seconds to at
  // least k's (first_used_at kept). Either way it gets the next seq, so it
  // is the current key. INVALID_ARGUMENT for an empty kid or public_jwk,
  // last_used_at < first_used_at or a negative TTL. Returns the stored row.
  virtual StatusOr<SigningKeyRecord> RegisterSigningKey(
      const SigningKeyRecord& k) = 0;
  // Raises last_used_at of `kid` to at least `last_used_at` (never lowers
  // it). NOT_FOUND "signing key X is not recorded."
  virtual Status ExtendSigningKeyUse(std::string_view kid,
                                     int64_t last_used_at) = 0;
  // Every recorded key, the current one (greatest seq) first.
  virtual StatusOr<std::vector<SigningKeyRecord>> ListSigningKeys() = 0;
  // A node's own re-key (POST /v1/nodes/{id}/rekey, verifier/rekey.cc), in
  // one transaction: NOT_FOUND; PERMISSION_DENIED "node X is revoked; ..."
  // for a revoked node, FAILED_PRECONDITION for a pending one;
  // FAILED_PRECONDITION "node X's key changed ..." unless its thumbprint is
  // still r.old_thumbprint (two concurrent re-keys: one wins). Replaces the
  // key (state, enrolled_at, approved_at, TPM binding kept), sets
  // stale_result_id to the node's latest result (results made under the old
  // key never count for admission), deletes its unspent nonces (issued to
  // the old key) and records node event "key_rotated". INVALID_ARGUMENT for
  // an empty key or a thumbprint equal to the old one. Returns the node.
  virtual StatusOr<NodeRecord> RekeyNode(std::string_view node_id,
                                         const NodeRekey& r) = 0;

  // --- Audit log, collateral and bundles (issue 16) -------------------------
  // Every write above that the audit log records (docs/audit.md#kinds)
  // appends its entry in the same transaction: no change exists without its
  // entry. Entries are never pruned.
  // Up to `limit` entries from seq `from_seq` on, in order.
  virtual StatusOr<std::vector<AuditLogRow>> ListAuditLog(int64_t from_seq,
                                                          int64_t limit) = 0;
  virtual StatusOr<AuditLogHead> GetAuditLogHead() = 0;
  // The first seq of an entry about `node_id` at or after `since`; 0 when
  // there is none.
  virtual StatusOr<int64_t> FirstAuditSeqForNode(std::string_view node_id,
                                                 int64_t since) = 0;
  // Stores a signed checkpoint; ALREADY_EXISTS for a size already
  // checkpointed with another head; FAILED_PRECONDITION when `size`/
  // `head_hash` are not the log's entry at that size.
  virtual Status PutCheckpoint(const CheckpointRecord& cp) = 0;
  // Newest first, at most `limit`.
  virtual StatusOr<std::vector<CheckpointRecord>> ListCheckpoints(int64_t limit) = 0;
  // The policy document the verifier now judges with: stored as collateral
  // and, when it differs from the last one recorded, a "policy.loaded"
  // entry. Returns true when an entry was appended.
  virtual StatusOr<bool> RecordPolicy(std::string_view name, std::string_view sha256,
                                      std::string_view document, int64_t now) = 0;
  // Content-addressed collateral ("policy" | "refvals"): idempotent; the
  // body must hash to `sha256` (INVALID_ARGUMENT otherwise).
  virtual Status PutCollateral(std::string_view kind, std::string_view sha256,
                               std::string_view body, int64_t now) = 0;
  // NOT_FOUND when absent. `kind` receives its kind.
  virtual StatusOr<std::string> GetCollateral(std::string_view sha256,
                                              std::string* kind) = 0;
  // A node's reports (accepted and refused, bodies as stored) and results
  // (with their contexts) received / made in [since, until], oldest first.
  virtual StatusOr<std::vector<ReportRecord>> ListNodeReports(std::string_view node_id,
                                                              int64_t since,
                                                              int64_t until) = 0;
  virtual StatusOr<std::vector<ResultRecord>> ListNodeResults(std::string_view node_id,
                                                              int64_t since,
                                                              int64_t until) = 0;
  // Withdraw a pending release (issue 16 §6)
  // Deletes `release` while it is still pending (an import made by
  // mistake), in one transaction with a generation bump, and returns it as
  // it was stored. NOT_FOUND "release X is not known."; FAILED_PRECONDITION
  // "release X is active; only a pending release can be withdrawn (...)"
  // for any other state. The label may then be imported again. The
  // withdrawal is a "refvals.changed" audit log entry (issue 16 §1); the
  // caller also writes the audit-stream event.
  virtual StatusOr<RefRelease> WithdrawPendingRelease(std::string_view release) = 0;
  // --- Fleet report (issue 16 §7) ------------------------------------------
  // Read-only, one query each (verifier/fleet.h builds the report from them
  // and one GetAcceptedReport per node).

  // Calls `visit` with the latest result of every node that has one
  // (greatest id per node, as LatestResult), in node id order, its ear_jwt
  // left empty (not read: the report needs the reasons, not the EAR). Rows
  // are read in pages of a few hundred nodes, so memory and the time the
  // store is locked stay bounded whatever the fleet size; `visit` runs
  // outside the lock (it may call the store). Each page is one consistent
  // read, the whole scan is not a snapshot. The first error of `visit`
  // stops the scan and is returned.
  virtual Status ForEachLatestResult(
      const std::function<Status(const ResultRecord&)>& visit) = 0;
  // Every node_releases row (RecordNodeRelease), ordered by node id, kind.
  virtual StatusOr<std::vector<NodeReleaseRecord>> ListNodeReleases() = 0;
  // Admit and deny counts of the results with created_at >= since, per
  // bucket of `bucket_seconds` (start = floor(created_at / bucket_seconds)
  // * bucket_seconds), ordered by start; buckets without results are left
  // out. INVALID_ARGUMENT when bucket_seconds <= 0.
  virtual StatusOr<std::vector<DecisionBucket>> CountDecisions(
      int64_t since, int64_t bucket_seconds) = 0;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_STORE_STORE_H_
