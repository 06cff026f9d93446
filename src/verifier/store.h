// Store: the verifier's persistent state (enrolled nodes, challenge nonces,
// received reports, appraisal results) behind one backend-neutral interface.
// SqliteStore (sqlite_store.h) is the embedded default; a PostgreSQL backend
// shared by several verifier replicas implements the same contract
// (ARCHITECTURE §8).
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
// keep the hash-chained audit log (a later addition, ARCHITECTURE §9).
// Times are Unix seconds supplied by the caller; the store reads no clock.
#ifndef DPUAUDIT_VERIFIER_STORE_H_
#define DPUAUDIT_VERIFIER_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "verifier/refvals.h"

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

  bool operator==(const NodeRecord&) const = default;
};

// One received report, accepted or not. Every report the verifier receives
// is appended (ARCHITECTURE §9), including ones rejected before parsing.
struct ReportRecord {
  int64_t id = 0;       // assigned by the store; ignored on insert
  std::string node_id;  // as claimed; need not be an enrolled node
  std::string jws;      // the exact received bytes
  std::string sha256;   // hex SHA-256 of `jws`
  int64_t received_at = 0;
  bool accepted = false;  // signature, nonce and format were good
  std::string error;      // why it was rejected ("" when accepted)

  bool operator==(const ReportRecord&) const = default;
};

inline constexpr std::string_view kDecisionAdmit = "admit";
inline constexpr std::string_view kDecisionDeny = "deny";

struct ResultRecord {
  int64_t id = 0;                 // assigned by the store; ignored on insert
  std::string node_id;            // must be enrolled
  std::string decision;           // kDecisionAdmit | kDecisionDeny
  std::string ear_jwt;            // signed EAR (ARCHITECTURE §6)
  std::string reasons_json;       // per-rule results, as JSON text
  std::string report_jws_sha256;  // sha256 of the report this appraises
  int64_t created_at = 0;
  int64_t expires_at = 0;  // decision falls back to deny after this

  bool operator==(const ResultRecord&) const = default;
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
// PutRelease content equality: release, model, psids, values, upgrade_from
// and expires_at (lists compared as sets); state, history and created_at
// are not compared.
bool SameReleaseContent(const RefRelease& a, const RefRelease& b);

// Who vouches for an enrollment (Store::CreateNodeWithTpmBinding).
enum class EnrollAuthority {
  // A token holder: the bootstrap token was presented and checked (any
  // other credential that proves the right to enroll this node id, e.g. a
  // per-node enrollment token, maps here too). May replace the node's
  // binding while it is pending (never activated), whoever made it.
  kBootstrapToken,
  kNone,            // nobody: the node waits for operator approval
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

  // The most recent result for the node (greatest created_at, then id),
  // whether or not it has expired. NOT_FOUND "no result for node X."
  virtual StatusOr<ResultRecord> LatestResult(std::string_view node_id) = 0;

  // --- Reference values (verifier/refvals.h)
  // ----------------------------------

  // Stores a new release (ValidateRelease first: INVALID_ARGUMENT). Putting
  // a release whose label exists is OK and changes nothing if it is equal
  // in content (release, model, psids, values, upgrade_from, expires_at);
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
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_STORE_H_
