// SqlStore: the one implementation of the Store contract over the
// backend-neutral SQL layer (verifier/store/sql.h), shared by the SQLite
// backend (SqliteStore, verifier/store/sqlite_store.h) and the PostgreSQL
// backend (PgStore, verifier/store/pg_store.h); docs/architecture.md#storage.
//
// Guarantees, beyond the Store contract:
//  - Every method runs on one connection leased from the store's pool; every
//    write runs in one exclusive write transaction (sql::Transaction: SQLite
//    BEGIN IMMEDIATE, PostgreSQL BEGIN plus a transaction-scoped advisory
//    lock), so the read-check-write rules (single-use nonces, the audit
//    chain's head, quotas) hold across connections, processes and replicas.
//  - Where the two SQL dialects differ the statement text is kept side by
//    side and chosen by the connection's dialect; everything else is one
//    text.
//  - The writes every attestation makes (issuing a nonce; storing the
//    result, its report and status with the nonce spent; a refused report;
//    the node's release) are group-committed (verifier/store/group_commit.h):
//    concurrent callers share one transaction and one fsync, each under its
//    own savepoint, and each returns only once that transaction committed.
//  - Every statement runs with bound parameters; no value is ever spliced
//    into SQL text.
// Does not: open a database (the backends' Open functions do); retry a
// transaction that failed.
#ifndef DPUAUDIT_VERIFIER_STORE_SQL_STORE_H_
#define DPUAUDIT_VERIFIER_STORE_SQL_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "verifier/store/group_commit.h"
#include "verifier/store/sql.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

class SqlStore : public Store {
 public:
  ~SqlStore() override;
  SqlStore(const SqlStore&) = delete;
  SqlStore& operator=(const SqlStore&) = delete;

  // The SQL dialect of the backend.
  sql::Dialect dialect() const { return pool_->dialect(); }

  // Batches of the group-committed writes so far (verifier/store/
  // group_commit.h): issuing a nonce, storing a result with its nonce
  // spent, a refused report, a node's release.
  sql::GroupCommitter::Stats GroupCommitStats() const {
    return group_->stats();
  }

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
  // PostgreSQL: one UPDATE over SELECT ... FOR UPDATE SKIP LOCKED (not
  // under the write lock; see Store::ClaimDueOutbox). SQLite: DueOutbox.
  StatusOr<std::vector<OutboxDelivery>> ClaimDueOutbox(
      int64_t now, int64_t limit, int64_t lease_seconds) override;
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

 protected:
  explicit SqlStore(std::unique_ptr<sql::Pool> pool);

 private:
  std::unique_ptr<sql::Pool> pool_;
  // The hot writes of every attestation share transactions (group commit).
  std::unique_ptr<sql::GroupCommitter> group_;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_STORE_SQL_STORE_H_
