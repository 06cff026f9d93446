// SqliteStore: the embedded Store backend, one SQLite file
// (docs/architecture.md#storage). Its logic is SqlStore's
// (verifier/store/sql_store.h), shared with the PostgreSQL backend.
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

#include <memory>
#include <string>
#include <utility>

#include "verifier/store/sql_store.h"

namespace dpuaudit::verifier {

class SqliteStore final : public SqlStore {
 public:
  static constexpr int kSchemaVersion = 1;
  static constexpr int kBusyTimeoutMs = 5000;

  // Opens (creating if needed) the database at `path`.
  static StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path);

 private:
  explicit SqliteStore(std::unique_ptr<sql::Pool> pool)
      : SqlStore(std::move(pool)) {}
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_STORE_SQLITE_STORE_H_
