// SqliteStore: the embedded Store backend, one SQLite file (ARCHITECTURE §8).
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
//  - Every SQLite error becomes a Status in one place (SqliteStatus).
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
// Does not: encrypt the file or set its permissions (the operator chooses
// the directory); vacuum; migrate from older schema versions (there are
// none yet).
#ifndef DPUAUDIT_VERIFIER_SQLITE_STORE_H_
#define DPUAUDIT_VERIFIER_SQLITE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "verifier/store.h"

namespace dpuaudit::verifier {
namespace internal {
class SqliteConnection;
}  // namespace internal

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

  StatusOr<int64_t> InsertReport(const ReportRecord& report) override;
  StatusOr<int64_t> InsertResult(const ResultRecord& result,
                                 const ReportRecord& report) override;
  StatusOr<int64_t> InsertResultSpendingNonce(const ResultRecord& result,
                                              const ReportRecord& report,
                                              std::string_view nonce,
                                              int64_t now) override;
  StatusOr<ResultRecord> LatestResult(std::string_view node_id) override;

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
  StatusOr<TpmBinding> ActivateTpmBinding(std::string_view node_id,
                                          std::string_view credential_sha256,
                                          int64_t now) override;
  StatusOr<TpmBinding> GetTpmBinding(std::string_view node_id) override;
  StatusOr<TpmBinding> DeleteTpmBinding(std::string_view node_id,
                                        bool allow_active) override;

 private:
  explicit SqliteStore(std::unique_ptr<internal::SqliteConnection> conn);
  std::unique_ptr<internal::SqliteConnection> conn_;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_SQLITE_STORE_H_
