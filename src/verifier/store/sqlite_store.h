// SqliteStore: the embedded Store backend, one SQLite file
// (docs/architecture.md#storage).
//
// Guarantees, beyond the Store contract:
//  - The file is opened with journal_mode=WAL (Open fails if SQLite does not
//    confirm WAL, e.g. for ":memory:"), synchronous=FULL, foreign_keys=ON,
//    a busy timeout of kBusyTimeoutMs, and SQLITE_DBCONFIG_DEFENSIVE.
//  - The schema is versioned with PRAGMA user_version and created inside one
//    BEGIN IMMEDIATE transaction; a file with a newer schema version, or
//    that is not a database, is refused (FAILED_PRECONDITION / DATA_LOSS).
//  - Every statement is prepared once and run with bound parameters; no
//    value is ever spliced into SQL text.
//  - One connection per SqliteStore, guarded by a mutex; writes run in
//    BEGIN IMMEDIATE transactions, so several SqliteStore objects (or
//    processes) on the same file also keep nonces single use.
//  - Every SQLite error becomes a Status in one place (sqlite::ErrorStatus,
//    verifier/store/sqlite.h); the schema and its additions live in
//    verifier/store/schema.h; every decision that is policy rather than
//    storage is one of the shared rules in verifier/store/store.h.
//  - Reference values (tables ref_releases, ref_generation, node_releases)
//    are created with CREATE TABLE IF NOT EXISTS when a schema-1 file is
//    opened, so files made before they existed keep working. A release is
//    stored as its canonical one-release manifest (RefManifestJson) and
//    re-validated by ParseRefManifest on every read: a row that does not
//    parse, or disagrees with its indexed columns, is DATA_LOSS.
//  - TPM bindings (table tpm_bindings, one row per node) are added the same
//    way. A partial UNIQUE index on ek_sha256 WHERE state = 'active' makes
//    "one TPM, one node" hold even against writers that skip the checks.
//    PutTpmBinding treats an active binding as "the same TPM" only when EK
//    (ek_sha256, ek_public_b64) and AK (ak_name_hex, ak_public_b64) all
//    match. ActivateTpmBinding checks, in order: no binding (NOT_FOUND),
//    already active, credential mismatch (constant-time), expiry, and the EK
//    being active on another node (ALREADY_EXISTS "this TPM is bound to node
//    Y."). Every row read is re-checked with ValidateTpmBinding: a row that
//    fails is DATA_LOSS. CreateNodeWithTpmBinding runs the bodies of
//    CreateNode, PutTpmBinding and the approval in one BEGIN IMMEDIATE
//    transaction, rolled back on any error.
//  - Enrollment and identity (issue 12): tables node_details (pinned and
//    claimed device identity, approver, revocation; a node without a row
//    reads as empty), node_events (history, no foreign key so it outlives
//    a removed node) and enrollment_tokens (SHA-256 only), plus the index
//    nodes_by_state, added the same way. EnrollNode runs the body of
//    CreateNodeWithTpmBinding (or CreateNode) with the token check, key
//    takeover, pending cap and token spend in one transaction.
//  - File modes (issue 12): Open creates the database file 0600 before
//    SQLite opens it (SQLite gives -wal and -shm the database's mode), and
//    tightens an existing database, -wal or -shm file readable by group or
//    others to owner-only; a file it cannot tighten (another owner) is
//    refused with PERMISSION_DENIED naming the file and its mode.
//  - Storage bounds (column reports.received_bytes, indexes nonces_by_node
//    and results_by_report) are added to schema-1 files the same way as
//    the tables above, under the write lock.
//  - Hardware-path records (issue 14): table hardware_records, one row per
//    (node, kind), added the same way; the value is stored as given and
//    re-checked with ValidateHardwareRecord on every read (DATA_LOSS).
//  - Node status, decision events and the webhook outbox (issue 15):
//    tables node_status, decision_events, webhook_outbox, added the same
//    way; a transition that rides on a result insert is written in that
//    insert's transaction (verifier/store/sqlite_status.h).
// Does not: encrypt the file; vacuum (pruned pages are reused by later
// writes, the file does not shrink); migrate from older schema versions (there are
// none yet).
#ifndef DPUAUDIT_VERIFIER_STORE_SQLITE_STORE_H_
#define DPUAUDIT_VERIFIER_STORE_SQLITE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "verifier/store/store.h"

namespace dpuaudit::verifier {
namespace sqlite {
class Connection;
}  // namespace sqlite

class SqliteStore final : public Store {
 public:
  static constexpr int kSchemaVersion = 1;
  static constexpr int kBusyTimeoutMs = 5000;

  // Opens (creating if needed) the database at `path`.
  static StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path);

  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  StatusOr<NodeRecord> CreateNode(const NodeRecord& node) override;
  StatusOr<NodeRecord> GetNode(std::string_view node_id) override;
  StatusOr<NodeRecord> ApproveNode(std::string_view node_id,
                                   int64_t now) override;
  StatusOr<NodeRecord> RevokeNode(std::string_view node_id) override;
  StatusOr<std::vector<NodeRecord>> ListNodes() override;

  Status InsertNonce(std::string_view nonce, std::string_view node_id,
                     int64_t issued_at, int64_t expires_at) override;
  Status ConsumeNonce(std::string_view nonce, std::string_view node_id,
                      int64_t now) override;
  StatusOr<int64_t> NonceIssuedAt(std::string_view nonce,
                                  std::string_view node_id) override;
  StatusOr<int64_t> PurgeExpiredNonces(int64_t now) override;
  StatusOr<int64_t> InsertNonceCapped(std::string_view nonce,
                                      std::string_view node_id,
                                      int64_t issued_at, int64_t expires_at,
                                      int64_t max_outstanding) override;

  StatusOr<int64_t> InsertReport(const ReportRecord& report) override;
  StatusOr<int64_t> InsertResult(const ResultRecord& result,
                                 const ReportRecord& report) override;
  StatusOr<int64_t> InsertResultSpendingNonce(const ResultRecord& result,
                                              const ReportRecord& report,
                                              std::string_view nonce,
                                              int64_t now) override;
  StatusOr<int64_t> ReportBytes(std::string_view node_id) override;
  StatusOr<int64_t> InsertRefusedReport(const ReportRecord& report,
                                        int64_t quota_bytes) override;
  StatusOr<int64_t> InsertResultSpendingNonceWithinQuota(
      const ResultRecord& result, const ReportRecord& report,
      std::string_view nonce, int64_t now, int64_t quota_bytes,
      const NodeTransition* transition = nullptr) override;
  StatusOr<PruneCounts> PruneReports(const RetentionPolicy& policy,
                                     int64_t now) override;
  StatusOr<ResultRecord> LatestResult(std::string_view node_id) override;
  StatusOr<ReportRecord> GetAcceptedReport(std::string_view node_id,
                                           std::string_view sha256) override;
  StatusOr<int64_t> InsertReappraisal(
      const ResultRecord& result,
      const NodeTransition* transition = nullptr) override;

  Status PutRelease(const RefRelease& release) override;
  Status PutReleases(const std::vector<RefRelease>& releases) override;
  StatusOr<RefRelease> GetRelease(std::string_view release) override;
  StatusOr<std::vector<RefRelease>> ListReleases(
      std::string_view model) override;
  StatusOr<RefRelease> TransitionRelease(std::string_view release,
                                         const RefApproval& approval) override;
  StatusOr<int64_t> RefvalsGeneration() override;
  Status RecordNodeRelease(std::string_view node_id, std::string_view kind,
                           std::string_view release, int64_t at) override;
  StatusOr<std::string> LastNodeRelease(std::string_view node_id,
                                        std::string_view kind) override;

  Status PutTpmBinding(const TpmBinding& binding) override;
  StatusOr<NodeRecord> CreateNodeWithTpmBinding(
      const NodeRecord& node, const TpmBinding& binding,
      std::optional<int64_t> approve_at, EnrollAuthority authority) override;
  Status CheckWritable() override;
  StatusOr<HardwareRecord> PutHardwareRecordIfAbsent(
      const HardwareRecord& r) override;
  StatusOr<HardwareRecord> ReplaceHardwareRecord(
      const HardwareRecord& r) override;
  StatusOr<HardwareRecord> GetHardwareRecord(std::string_view node_id,
                                             std::string_view kind) override;

  // Issue 15 (verifier/store/sqlite_status.cc).
  StatusOr<NodeStatusRecord> GetNodeStatus(std::string_view node_id) override;
  StatusOr<std::vector<NodeStatusRecord>> ListNodeStatuses() override;
  StatusOr<std::vector<NodeStatusRecord>> ListStaleCandidates(
      int64_t cutoff) override;
  Status ApplyNodeTransition(const NodeTransition& t) override;
  StatusOr<std::vector<DecisionEvent>> ListDecisionEvents(
      std::string_view node_id, int64_t after_seq, int64_t limit) override;
  StatusOr<std::vector<OutboxDelivery>> DueOutbox(int64_t now,
                                                  int64_t limit) override;
  StatusOr<std::vector<OutboxEntry>> PendingOutbox(int64_t limit) override;
  Status MarkOutboxDelivered(int64_t id, int64_t now) override;
  Status MarkOutboxFailed(int64_t id, int64_t now, int64_t next_attempt_at,
                          std::string_view error) override;
  StatusOr<std::vector<OutboxEndpointStats>> OutboxStats() override;

  // Issue 15, keys part.
  StatusOr<SigningKeyRecord> RegisterSigningKey(
      const SigningKeyRecord& k) override;
  Status ExtendSigningKeyUse(std::string_view kid,
                             int64_t last_used_at) override;
  StatusOr<std::vector<SigningKeyRecord>> ListSigningKeys() override;
  StatusOr<NodeRecord> RekeyNode(std::string_view node_id,
                                 const NodeRekey& r) override;
  StatusOr<TpmBinding> ActivateTpmBinding(std::string_view node_id,
                                          std::string_view credential_sha256,
                                          int64_t now) override;
  StatusOr<TpmBinding> GetTpmBinding(std::string_view node_id) override;
  StatusOr<TpmBinding> DeleteTpmBinding(std::string_view node_id,
                                        bool allow_active) override;

  StatusOr<NodeRecord> EnrollNode(const NodeRecord& node,
                                  const std::optional<TpmBinding>& binding,
                                  const EnrollGrant& grant) override;
  StatusOr<NodeRecord> ApproveEnrollment(std::string_view node_id,
                                         const ApprovalRequest& req) override;
  Status RejectNode(std::string_view node_id, std::string_view by,
                    std::string_view reason, int64_t now) override;
  StatusOr<NodeRecord> RevokeNodeFor(std::string_view node_id,
                                     std::string_view by,
                                     std::string_view reason,
                                     int64_t now) override;
  StatusOr<int64_t> PurgeExpiredPendingNodes(int64_t now,
                                             int64_t ttl_seconds) override;
  StatusOr<std::vector<NodeEvent>> NodeHistory(
      std::string_view node_id) override;
  Status PutEnrollmentToken(const EnrollmentToken& token) override;
  StatusOr<EnrollmentToken> GetEnrollmentToken(
      std::string_view token_sha256) override;
  StatusOr<std::vector<EnrollmentToken>> ListEnrollmentTokens() override;
  StatusOr<EnrollmentToken> RevokeEnrollmentToken(std::string_view token_id,
                                                  std::string_view by,
                                                  int64_t now) override;

  // Audit log, collateral and bundles (issue 16; sqlite_audit.cc).
  StatusOr<std::vector<AuditLogRow>> ListAuditLog(int64_t from_seq,
                                                  int64_t limit) override;
  StatusOr<AuditLogHead> GetAuditLogHead() override;
  StatusOr<int64_t> FirstAuditSeqForNode(std::string_view node_id,
                                         int64_t since) override;
  Status PutCheckpoint(const CheckpointRecord& cp) override;
  StatusOr<std::vector<CheckpointRecord>> ListCheckpoints(int64_t limit) override;
  StatusOr<bool> RecordPolicy(std::string_view name, std::string_view sha256,
                              std::string_view document, int64_t now) override;
  Status PutCollateral(std::string_view kind, std::string_view sha256,
                       std::string_view body, int64_t now) override;
  StatusOr<std::string> GetCollateral(std::string_view sha256,
                                      std::string* kind) override;
  StatusOr<std::vector<ReportRecord>> ListNodeReports(std::string_view node_id,
                                                      int64_t since,
                                                      int64_t until) override;
  StatusOr<std::vector<ResultRecord>> ListNodeResults(std::string_view node_id,
                                                      int64_t since,
                                                      int64_t until) override;
  // Withdraw a pending release (issue 16 §6)
  StatusOr<RefRelease> WithdrawPendingRelease(std::string_view release) override;
  // Fleet report (issue 16 §7).
  Status ForEachLatestResult(
      const std::function<Status(const ResultRecord&)>& visit) override;
  StatusOr<std::vector<NodeReleaseRecord>> ListNodeReleases() override;
  StatusOr<std::vector<DecisionBucket>> CountDecisions(
      int64_t since, int64_t bucket_seconds) override;

 private:
  explicit SqliteStore(std::unique_ptr<sqlite::Connection> conn);
  std::unique_ptr<sqlite::Connection> conn_;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_STORE_SQLITE_STORE_H_
