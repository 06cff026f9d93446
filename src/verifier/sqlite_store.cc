#include "verifier/sqlite_store.h"

#include <sqlite3.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "report/json_internal.h"

namespace dpuaudit::verifier {
namespace {

// "DPA1": marks the file as a dpuaudit store (PRAGMA application_id).
constexpr int kApplicationId = 0x44504131;
static_assert(SqliteStore::kSchemaVersion == 1,
              "update kSchemaV1 / the user_version pragma and add a migration");

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE nodes (
  node_id        TEXT PRIMARY KEY NOT NULL,
  public_key_pem TEXT NOT NULL,
  key_thumbprint TEXT NOT NULL,
  alg            TEXT NOT NULL,
  state          TEXT NOT NULL
                 CHECK (state IN ('pending', 'approved', 'revoked')),
  enrolled_at    INTEGER NOT NULL,
  approved_at    INTEGER
) STRICT;
CREATE TABLE nonces (
  nonce      TEXT PRIMARY KEY NOT NULL,
  node_id    TEXT NOT NULL REFERENCES nodes(node_id),
  issued_at  INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER
) STRICT;
CREATE INDEX nonces_by_expiry ON nonces(expires_at);
CREATE TABLE reports (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  node_id     TEXT NOT NULL,
  jws         BLOB NOT NULL,
  sha256      TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  accepted    INTEGER NOT NULL CHECK (accepted IN (0, 1)),
  error       TEXT NOT NULL
) STRICT;
CREATE INDEX reports_by_node ON reports(node_id, received_at);
CREATE TABLE results (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  node_id           TEXT NOT NULL REFERENCES nodes(node_id),
  report_id         INTEGER NOT NULL REFERENCES reports(id),
  decision          TEXT NOT NULL CHECK (decision IN ('admit', 'deny')),
  ear_jwt           TEXT NOT NULL,
  reasons_json      TEXT NOT NULL,
  report_jws_sha256 TEXT NOT NULL,
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL
) STRICT;
CREATE INDEX results_by_node ON results(node_id, created_at, id);
PRAGMA application_id = 1146110257;
PRAGMA user_version = 1;
)sql";
static_assert(kApplicationId == 1146110257, "keep kSchemaV1 in sync");

// Reference values (verifier/refvals.h), added to schema 1 without a version
// bump: every statement is idempotent, so it runs on new and old files.
// `body` is the release as a one-release canonical manifest
// (RefManifestJson); the other columns index it.
constexpr const char* kSchemaRefvals = R"sql(
CREATE TABLE IF NOT EXISTS ref_releases (
  release    TEXT PRIMARY KEY NOT NULL,
  model      TEXT NOT NULL,
  state      TEXT NOT NULL
             CHECK (state IN ('pending', 'active', 'obsolete', 'revoked')),
  created_at INTEGER NOT NULL,
  body       TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS ref_releases_by_model
  ON ref_releases(model, created_at, release);
CREATE TABLE IF NOT EXISTS ref_generation (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL
) STRICT;
INSERT OR IGNORE INTO ref_generation (id, generation) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS node_releases (
  node_id TEXT NOT NULL REFERENCES nodes(node_id),
  kind    TEXT NOT NULL,
  release TEXT NOT NULL,
  at      INTEGER NOT NULL,
  PRIMARY KEY (node_id, kind)
) STRICT;
)sql";

// TPM bindings (issue 5), added to schema 1 the same way. One row per node;
// an active row's credential hash is cleared. The partial unique index lets
// one TPM (ek_sha256) be active for at most one node; pending rows may share
// an EK until one of them activates.
constexpr const char* kSchemaTpmBindings = R"sql(
CREATE TABLE IF NOT EXISTS tpm_bindings (
  node_id              TEXT PRIMARY KEY NOT NULL REFERENCES nodes(node_id),
  ek_public_b64        TEXT NOT NULL,
  ek_sha256            TEXT NOT NULL,
  ek_cert_pem          TEXT NOT NULL,
  ek_cert_issuer       TEXT NOT NULL,
  ak_public_b64        TEXT NOT NULL,
  ak_name_hex          TEXT NOT NULL,
  state                TEXT NOT NULL CHECK (state IN ('pending', 'active')),
  credential_sha256    TEXT NOT NULL,
  challenge_expires_at INTEGER NOT NULL,
  created_at           INTEGER NOT NULL,
  activated_at         INTEGER,
  CHECK (state = 'pending' OR
         (activated_at IS NOT NULL AND credential_sha256 = ''))
) STRICT;
CREATE UNIQUE INDEX IF NOT EXISTS tpm_bindings_active_ek
  ON tpm_bindings(ek_sha256) WHERE state = 'active';
)sql";

// The one place SQLite result codes become a Status.
Status SqliteStatus(int rc, std::string_view what, sqlite3* db) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string msg = "sqlite: " + std::string(what) + ": " + detail + ".";
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
    // Disk full (ENOSPC) and out of memory are the server's trouble, not
    // the request's: UNAVAILABLE (HTTP 503), never RESOURCE_EXHAUSTED,
    // which the API answers with 413 "payload too large".
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return UnavailableError(std::move(msg));
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY ||
          rc == SQLITE_CONSTRAINT_UNIQUE) {
        return AlreadyExistsError(std::move(msg));
      }
      return FailedPreconditionError(std::move(msg));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLossError(std::move(msg));
    case SQLITE_TOOBIG:
      return ResourceExhaustedError(std::move(msg));
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return PermissionDeniedError(std::move(msg));
    default:
      return InternalError(std::move(msg));
  }
}

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

Status NodeNotEnrolled(std::string_view node_id) {
  return NotFoundError("node " + Quoted(node_id) + " is not enrolled.");
}

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// A borrowed, cached prepared statement. Binding errors are kept and
// reported by Step. The statement is reset and its bindings cleared when
// this object goes away, so the cache can hand it out again.
class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Stmt() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Text(int i, std::string_view v) {
    return Check(sqlite3_bind_text64(stmt_, i, v.data(), v.size(),
                                     SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  Stmt& Blob(int i, std::string_view v) {
    return Check(
        sqlite3_bind_blob64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT));
  }
  Stmt& Int(int i, int64_t v) { return Check(sqlite3_bind_int64(stmt_, i, v)); }
  Stmt& OptionalInt(int i, const std::optional<int64_t>& v) {
    return v ? Int(i, *v) : Check(sqlite3_bind_null(stmt_, i));
  }

  // true: a row is ready; false: done.
  StatusOr<bool> Step(std::string_view what) {
    if (!bind_status_.ok()) return bind_status_;
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    last_rc_ = rc;
    return SqliteStatus(rc, what, db_);
  }
  // Runs a statement that returns no rows.
  Status Run(std::string_view what) {
    DPA_ASSIGN_OR_RETURN(bool row, Step(what));
    if (row)
      return InternalError("sqlite: " + std::string(what) +
                           ": unexpected row.");
    return OkStatus();
  }
  // Extended result code of the last failed step (0 if none).
  int last_rc() const { return last_rc_; }

  std::string ColText(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    if (p == nullptr || n <= 0) return std::string();
    return std::string(reinterpret_cast<const char*>(p),
                       static_cast<size_t>(n));
  }
  std::string ColBlob(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    if (p == nullptr || n <= 0) return std::string();
    return std::string(static_cast<const char*>(p), static_cast<size_t>(n));
  }
  int64_t ColInt(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool ColIsNull(int col) const {
    return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
  }

 private:
  Stmt& Check(int rc) {
    if (rc != SQLITE_OK && bind_status_.ok()) {
      bind_status_ = SqliteStatus(rc, "binding parameter", db_);
    }
    return *this;
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  Status bind_status_;
  int last_rc_ = 0;
};

// SQL text, in one place. Each is prepared once per connection.
constexpr const char* kBegin = "BEGIN IMMEDIATE";
constexpr const char* kCommit = "COMMIT";
constexpr const char* kRollback = "ROLLBACK";
constexpr const char* kSelectNode =
    "SELECT node_id, public_key_pem, key_thumbprint, alg, state, "
    "enrolled_at, approved_at FROM nodes WHERE node_id = ?1";
constexpr const char* kListNodes =
    "SELECT node_id, public_key_pem, key_thumbprint, alg, state, "
    "enrolled_at, approved_at FROM nodes ORDER BY node_id";
constexpr const char* kInsertNode =
    "INSERT INTO nodes (node_id, public_key_pem, key_thumbprint, alg, state, "
    "enrolled_at, approved_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
constexpr const char* kSetNodeState =
    "UPDATE nodes SET state = ?2, approved_at = ?3 WHERE node_id = ?1";
constexpr const char* kInsertNonce =
    "INSERT INTO nonces (nonce, node_id, issued_at, expires_at, used_at) "
    "VALUES (?1, ?2, ?3, ?4, NULL)";
constexpr const char* kSpendNonce =
    "UPDATE nonces SET used_at = ?3 WHERE nonce = ?1 AND node_id = ?2 "
    "AND used_at IS NULL AND expires_at > ?3";
constexpr const char* kSelectNonce =
    "SELECT node_id, used_at, expires_at FROM nonces WHERE nonce = ?1";
constexpr const char* kSelectNonceIssuedAt =
    "SELECT node_id, issued_at FROM nonces WHERE nonce = ?1";
constexpr const char* kPurgeNonces =
    "DELETE FROM nonces WHERE expires_at <= ?1";
constexpr const char* kInsertReport =
    "INSERT INTO reports (node_id, jws, sha256, received_at, accepted, error) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
constexpr const char* kInsertResult =
    "INSERT INTO results (node_id, report_id, decision, ear_jwt, "
    "reasons_json, report_jws_sha256, created_at, expires_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
constexpr const char* kSelectRelease =
    "SELECT release, state, body FROM ref_releases WHERE release = ?1";
constexpr const char* kListReleases =
    "SELECT release, state, body FROM ref_releases "
    "ORDER BY model, created_at, release";
constexpr const char* kListReleasesOfModel =
    "SELECT release, state, body FROM ref_releases WHERE model = ?1 "
    "ORDER BY model, created_at, release";
constexpr const char* kInsertRelease =
    "INSERT INTO ref_releases (release, model, state, created_at, body) "
    "VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr const char* kUpdateRelease =
    "UPDATE ref_releases SET state = ?2, body = ?3 WHERE release = ?1";
constexpr const char* kSelectGeneration =
    "SELECT generation FROM ref_generation WHERE id = 1";
constexpr const char* kBumpGeneration =
    "UPDATE ref_generation SET generation = generation + 1 WHERE id = 1";
constexpr const char* kUpsertNodeRelease =
    "INSERT INTO node_releases (node_id, kind, release, at) "
    "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (node_id, kind) DO UPDATE SET "
    "release = excluded.release, at = excluded.at "
    "WHERE excluded.at >= node_releases.at";
constexpr const char* kSelectNodeRelease =
    "SELECT release FROM node_releases WHERE node_id = ?1 AND kind = ?2";
constexpr const char* kCountRefvalsTables =
    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN "
    "('ref_releases', 'ref_generation', 'node_releases')";
constexpr const char* kCountTpmBindingObjects =
    "SELECT count(*) FROM sqlite_schema WHERE "
    "(type = 'table' AND name = 'tpm_bindings') OR "
    "(type = 'index' AND name = 'tpm_bindings_active_ek')";
constexpr const char* kSelectTpmBinding =
    "SELECT node_id, ek_public_b64, ek_sha256, ek_cert_pem, ek_cert_issuer, "
    "ak_public_b64, ak_name_hex, state, credential_sha256, "
    "challenge_expires_at, created_at, activated_at "
    "FROM tpm_bindings WHERE node_id = ?1";
constexpr const char* kUpsertTpmBinding =
    "INSERT INTO tpm_bindings (node_id, ek_public_b64, ek_sha256, "
    "ek_cert_pem, ek_cert_issuer, ak_public_b64, ak_name_hex, state, "
    "credential_sha256, challenge_expires_at, created_at, activated_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
    "ON CONFLICT (node_id) DO UPDATE SET "
    "ek_public_b64 = excluded.ek_public_b64, "
    "ek_sha256 = excluded.ek_sha256, ek_cert_pem = excluded.ek_cert_pem, "
    "ek_cert_issuer = excluded.ek_cert_issuer, "
    "ak_public_b64 = excluded.ak_public_b64, "
    "ak_name_hex = excluded.ak_name_hex, state = excluded.state, "
    "credential_sha256 = excluded.credential_sha256, "
    "challenge_expires_at = excluded.challenge_expires_at, "
    "created_at = excluded.created_at, activated_at = excluded.activated_at "
    "WHERE tpm_bindings.state = 'pending'";
constexpr const char* kActivateTpmBinding =
    "UPDATE tpm_bindings SET state = 'active', activated_at = ?2, "
    "credential_sha256 = '' WHERE node_id = ?1 AND state = 'pending'";
constexpr const char* kDeleteTpmBinding =
    "DELETE FROM tpm_bindings WHERE node_id = ?1";
constexpr const char* kSelectActiveEkOwner =
    "SELECT node_id FROM tpm_bindings WHERE ek_sha256 = ?1 "
    "AND state = 'active' AND node_id <> ?2";
constexpr const char* kLatestResult =
    "SELECT id, node_id, decision, ear_jwt, reasons_json, report_jws_sha256, "
    "created_at, expires_at FROM results WHERE node_id = ?1 "
    "ORDER BY created_at DESC, id DESC LIMIT 1";

}  // namespace

namespace internal {

// One SQLite connection and its statement cache. Callers hold mu() for
// every call.
class SqliteConnection {
 public:
  explicit SqliteConnection(DbPtr db) : db_(std::move(db)) {}

  sqlite3* db() const { return db_.get(); }
  std::mutex& mu() { return mu_; }

  // At most one Stmt per SQL text may be alive at once.
  StatusOr<std::unique_ptr<Stmt>> Prepare(const char* sql) {
    auto it = cache_.find(sql);
    if (it == cache_.end()) {
      sqlite3_stmt* raw = nullptr;
      int rc = sqlite3_prepare_v3(db(), sql, -1, SQLITE_PREPARE_PERSISTENT,
                                  &raw, nullptr);
      StmtPtr stmt(raw);
      if (rc != SQLITE_OK) return SqliteStatus(rc, "preparing statement", db());
      it = cache_.emplace(sql, std::move(stmt)).first;
    }
    return std::make_unique<Stmt>(db(), it->second.get());
  }

  Status Exec(const char* sql, std::string_view what) {
    DPA_ASSIGN_OR_RETURN(auto stmt, Prepare(sql));
    return stmt->Run(what);
  }

 private:
  std::mutex mu_;
  DbPtr db_;  // declared before cache_, so statements are finalized first
  std::unordered_map<const char*, StmtPtr> cache_;
};

}  // namespace internal

namespace {

using internal::SqliteConnection;

// BEGIN IMMEDIATE (takes the write lock up front, so a concurrent writer on
// another connection waits for busy_timeout instead of failing mid-way);
// ROLLBACK on destruction unless committed.
class Transaction {
 public:
  static StatusOr<std::unique_ptr<Transaction>> Begin(SqliteConnection& c) {
    DPA_RETURN_IF_ERROR(c.Exec(kBegin, "beginning transaction"));
    return std::unique_ptr<Transaction>(new Transaction(c));
  }
  ~Transaction() {
    if (!done_) (void)conn_.Exec(kRollback, "rolling back");
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  Status Commit() {
    DPA_RETURN_IF_ERROR(conn_.Exec(kCommit, "committing"));
    done_ = true;
    return OkStatus();
  }

 private:
  explicit Transaction(SqliteConnection& c) : conn_(c) {}
  SqliteConnection& conn_;
  bool done_ = false;
};

StatusOr<NodeRecord> NodeFromRow(const Stmt& s) {
  NodeRecord n;
  n.node_id = s.ColText(0);
  n.public_key_pem = s.ColText(1);
  n.key_thumbprint = s.ColText(2);
  n.alg = s.ColText(3);
  std::optional<NodeState> state = ParseNodeState(s.ColText(4));
  if (!state) {
    return DataLossError("sqlite: node " + Quoted(n.node_id) +
                         " has unknown state " + Quoted(s.ColText(4)) + ".");
  }
  n.state = *state;
  n.enrolled_at = s.ColInt(5);
  if (!s.ColIsNull(6)) n.approved_at = s.ColInt(6);
  return n;
}

StatusOr<std::optional<NodeRecord>> FindNode(SqliteConnection& c,
                                             std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kSelectNode));
  stmt->Text(1, node_id);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading node"));
  if (!row) return std::optional<NodeRecord>();
  DPA_ASSIGN_OR_RETURN(NodeRecord node, NodeFromRow(*stmt));
  return std::optional<NodeRecord>(std::move(node));
}

Status SetNodeState(SqliteConnection& c, const NodeRecord& n) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kSetNodeState));
  stmt->Text(1, n.node_id)
      .Text(2, NodeStateName(n.state))
      .OptionalInt(3, n.approved_at);
  return stmt->Run("updating node");
}

StatusOr<int64_t> InsertReportLocked(SqliteConnection& c,
                                     const ReportRecord& r) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kInsertReport));
  stmt->Text(1, r.node_id)
      .Blob(2, r.jws)
      .Text(3, r.sha256)
      .Int(4, r.received_at)
      .Int(5, r.accepted ? 1 : 0)
      .Text(6, r.error);
  DPA_RETURN_IF_ERROR(stmt->Run("inserting report"));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(c.db()));
}

Status ReleaseNotKnown(std::string_view release) {
  return NotFoundError("reference release " + report::internal::Quote(release) +
                       " is not known.");
}

// A row of (release, state, body): the body re-parsed and re-validated.
StatusOr<RefRelease> ReleaseFromRow(const Stmt& s) {
  std::string label = s.ColText(0);
  std::string state = s.ColText(1);
  auto parsed = ParseRefManifest(s.ColText(2), 0);
  if (!parsed.ok()) {
    return DataLossError("sqlite: reference release " +
                         report::internal::Quote(label) +
                         " is corrupt: " + parsed.status().message());
  }
  if (parsed->size() != 1 || (*parsed)[0].release != label ||
      RefStateName((*parsed)[0].state) != state) {
    return DataLossError("sqlite: reference release " +
                         report::internal::Quote(label) +
                         " disagrees with its indexed columns.");
  }
  return std::move((*parsed)[0]);
}

std::string ReleaseBody(const RefRelease& r) {
  return report::internal::DumpJson(RefManifestJson({r}));
}

StatusOr<std::optional<RefRelease>> FindRelease(SqliteConnection& c,
                                                std::string_view label) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kSelectRelease));
  stmt->Text(1, label);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading reference release"));
  if (!row) return std::optional<RefRelease>();
  DPA_ASSIGN_OR_RETURN(RefRelease r, ReleaseFromRow(*stmt));
  return std::optional<RefRelease>(std::move(r));
}

Status BumpGeneration(SqliteConnection& c) {
  return c.Exec(kBumpGeneration, "bumping reference value generation");
}

// Inserts `r` unless a release with its label exists. Returns whether it
// inserted; ALREADY_EXISTS when the stored release differs in content.
StatusOr<bool> PutReleaseLocked(SqliteConnection& c, const RefRelease& r) {
  DPA_ASSIGN_OR_RETURN(std::optional<RefRelease> existing,
                       FindRelease(c, r.release));
  if (existing) {
    if (SameReleaseContent(*existing, r)) return false;
    return AlreadyExistsError("reference release " +
                              report::internal::Quote(r.release) +
                              " already exists with different content.");
  }
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kInsertRelease));
  stmt->Text(1, r.release)
      .Text(2, r.model)
      .Text(3, RefStateName(r.state))
      .Int(4, r.created_at)
      .Text(5, ReleaseBody(r));
  DPA_RETURN_IF_ERROR(stmt->Run("inserting reference release"));
  return true;
}

Status NoTpmBinding(std::string_view node_id) {
  return NotFoundError("node " + Quoted(node_id) + " has no TPM binding.");
}

Status TpmBoundToNode(std::string_view owner) {
  return AlreadyExistsError("this TPM is bound to node " + Quoted(owner) + ".");
}

// A tpm_bindings row, re-validated: a row that fails is DATA_LOSS.
StatusOr<TpmBinding> TpmBindingFromRow(const Stmt& s) {
  TpmBinding b;
  b.node_id = s.ColText(0);
  b.ek_public_b64 = s.ColText(1);
  b.ek_sha256 = s.ColText(2);
  b.ek_cert_pem = s.ColText(3);
  b.ek_cert_issuer = s.ColText(4);
  b.ak_public_b64 = s.ColText(5);
  b.ak_name_hex = s.ColText(6);
  std::string state = s.ColText(7);
  if (state == TpmBindingStateName(TpmBindingState::kPending)) {
    b.state = TpmBindingState::kPending;
  } else if (state == TpmBindingStateName(TpmBindingState::kActive)) {
    b.state = TpmBindingState::kActive;
  } else {
    return DataLossError("sqlite: TPM binding of node " + Quoted(b.node_id) +
                         " has unknown state " + Quoted(state) + ".");
  }
  b.credential_sha256 = s.ColText(8);
  b.challenge_expires_at = s.ColInt(9);
  b.created_at = s.ColInt(10);
  if (!s.ColIsNull(11)) b.activated_at = s.ColInt(11);
  Status valid = ValidateTpmBinding(b);
  if (!valid.ok()) {
    return DataLossError("sqlite: TPM binding of node " + Quoted(b.node_id) +
                         " is corrupt: " + valid.message());
  }
  return b;
}

StatusOr<std::optional<TpmBinding>> FindTpmBinding(SqliteConnection& c,
                                                   std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kSelectTpmBinding));
  stmt->Text(1, node_id);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading TPM binding"));
  if (!row) return std::optional<TpmBinding>();
  DPA_ASSIGN_OR_RETURN(TpmBinding b, TpmBindingFromRow(*stmt));
  return std::optional<TpmBinding>(std::move(b));
}

// The node other than `node_id` whose active binding holds `ek_sha256`.
StatusOr<std::optional<std::string>> ActiveEkOwner(SqliteConnection& c,
                                                   std::string_view ek_sha256,
                                                   std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kSelectActiveEkOwner));
  stmt->Text(1, ek_sha256).Text(2, node_id);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading TPM bindings by EK"));
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(stmt->ColText(0));
}

// Reads one integer-valued pragma (no user input: `sql` is a literal).
StatusOr<int64_t> PragmaInt(SqliteConnection& c, const char* sql,
                            std::string_view what) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(sql));
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step(what));
  if (!row)
    return InternalError("sqlite: " + std::string(what) + " returned no row.");
  return stmt->ColInt(0);
}

Status Configure(SqliteConnection& c) {
  sqlite3* db = c.db();
  int rc = sqlite3_busy_timeout(db, SqliteStore::kBusyTimeoutMs);
  if (rc != SQLITE_OK) return SqliteStatus(rc, "setting busy_timeout", db);
  rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, "enabling defensive mode", db);
  rc = sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, "distrusting schema", db);

  {
    DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare("PRAGMA journal_mode = WAL"));
    DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("setting journal_mode"));
    std::string mode = row ? stmt->ColText(0) : std::string();
    if (mode != "wal") {
      return FailedPreconditionError("sqlite: journal_mode is " + Quoted(mode) +
                                     ", not \"wal\".");
    }
  }
  DPA_RETURN_IF_ERROR(
      c.Exec("PRAGMA synchronous = FULL", "setting synchronous"));
  DPA_ASSIGN_OR_RETURN(
      int64_t sync, PragmaInt(c, "PRAGMA synchronous", "reading synchronous"));
  if (sync != 2) {
    return FailedPreconditionError("sqlite: synchronous is " +
                                   std::to_string(sync) + ", not FULL (2).");
  }
  DPA_RETURN_IF_ERROR(
      c.Exec("PRAGMA foreign_keys = ON", "enabling foreign_keys"));
  DPA_ASSIGN_OR_RETURN(
      int64_t fk, PragmaInt(c, "PRAGMA foreign_keys", "reading foreign_keys"));
  if (fk != 1) return FailedPreconditionError("sqlite: foreign_keys is off.");
  return OkStatus();
}

// Adds tables that joined schema 1 later (`ddl`, idempotent) to a file made
// before they existed: a no-op, without taking the write lock, when
// `count_sql` already counts `expected` schema objects.
Status EnsureAddedTables(SqliteConnection& c, const char* count_sql,
                         int64_t expected, const char* ddl,
                         std::string_view what) {
  DPA_ASSIGN_OR_RETURN(int64_t objects,
                       PragmaInt(c, count_sql, "reading sqlite_schema"));
  if (objects == expected) return OkStatus();
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(c));
  int rc = sqlite3_exec(c.db(), ddl, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, what, c.db());
  return txn->Commit();
}

Status EnsureRefvalsTables(SqliteConnection& c) {
  return EnsureAddedTables(c, kCountRefvalsTables, 3, kSchemaRefvals,
                           "creating reference value tables");
}

Status EnsureTpmBindingTables(SqliteConnection& c) {
  return EnsureAddedTables(c, kCountTpmBindingObjects, 2, kSchemaTpmBindings,
                           "creating TPM binding tables");
}

// Creates the schema in a fresh file, or checks an existing one.
Status EnsureSchema(SqliteConnection& c) {
  DPA_ASSIGN_OR_RETURN(int64_t version, PragmaInt(c, "PRAGMA user_version",
                                                  "reading user_version"));
  if (version == 0) {
    DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(c));
    // Re-read under the write lock: another process may have won the race.
    DPA_ASSIGN_OR_RETURN(
        version, PragmaInt(c, "PRAGMA user_version", "reading user_version"));
    if (version == 0) {
      DPA_ASSIGN_OR_RETURN(int64_t tables,
                           PragmaInt(c, "SELECT count(*) FROM sqlite_schema",
                                     "reading sqlite_schema"));
      if (tables != 0) {
        return FailedPreconditionError(
            "sqlite: the database has tables but no dpuaudit schema version; "
            "refusing to use it.");
      }
      // Static DDL only; sqlite3_exec runs each statement in turn.
      int rc = sqlite3_exec(c.db(), kSchemaV1, nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) return SqliteStatus(rc, "creating schema", c.db());
      rc = sqlite3_exec(c.db(), kSchemaRefvals, nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) {
        return SqliteStatus(rc, "creating reference value tables", c.db());
      }
      rc = sqlite3_exec(c.db(), kSchemaTpmBindings, nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) {
        return SqliteStatus(rc, "creating TPM binding tables", c.db());
      }
      DPA_RETURN_IF_ERROR(txn->Commit());
      return OkStatus();
    }
  }
  if (version != SqliteStore::kSchemaVersion) {
    return FailedPreconditionError(
        "sqlite: schema version " + std::to_string(version) +
        " is not supported by this build (expects " +
        std::to_string(SqliteStore::kSchemaVersion) + ").");
  }
  DPA_ASSIGN_OR_RETURN(int64_t app_id, PragmaInt(c, "PRAGMA application_id",
                                                 "reading application_id"));
  if (app_id != kApplicationId) {
    return FailedPreconditionError(
        "sqlite: the database is not a dpuaudit store (application_id " +
        std::to_string(app_id) + ").");
  }
  DPA_RETURN_IF_ERROR(EnsureRefvalsTables(c));
  return EnsureTpmBindingTables(c);
}

}  // namespace

StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path) {
  if (path.empty()) return InvalidArgumentError("sqlite: path is empty.");
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  DbPtr db(raw);  // owned even when open fails
  if (rc != SQLITE_OK) {
    return SqliteStatus(rc, "opening " + path, db.get());
  }
  sqlite3_extended_result_codes(db.get(), 1);
  auto conn = std::make_unique<SqliteConnection>(std::move(db));
  {
    std::lock_guard<std::mutex> lock(conn->mu());
    DPA_RETURN_IF_ERROR(Configure(*conn));
    DPA_RETURN_IF_ERROR(EnsureSchema(*conn));
  }
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(conn)));
}

SqliteStore::SqliteStore(std::unique_ptr<SqliteConnection> conn)
    : conn_(std::move(conn)) {}

SqliteStore::~SqliteStore() = default;

// --- Nodes -------------------------------------------------------------------

namespace {

// The body of CreateNode, inside the caller's transaction: the stored record
// (the existing one, unchanged, on an idempotent re-enrollment) or the
// refusal.
StatusOr<NodeRecord> CreateNodeLocked(SqliteConnection& c,
                                      const NodeRecord& node) {
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> existing,
                       FindNode(c, node.node_id));
  if (existing) {
    if (existing->key_thumbprint == node.key_thumbprint &&
        existing->alg == node.alg) {
      return *std::move(existing);  // idempotent re-enrollment; no write
    }
    return AlreadyExistsError("node " + Quoted(node.node_id) +
                              " is already enrolled with a different key.");
  }
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kInsertNode));
  stmt->Text(1, node.node_id)
      .Text(2, node.public_key_pem)
      .Text(3, node.key_thumbprint)
      .Text(4, node.alg)
      .Text(5, NodeStateName(node.state))
      .Int(6, node.enrolled_at)
      .OptionalInt(7, node.approved_at);
  DPA_RETURN_IF_ERROR(stmt->Run("inserting node"));
  return node;
}

}  // namespace

StatusOr<NodeRecord> SqliteStore::CreateNode(const NodeRecord& node) {
  DPA_RETURN_IF_ERROR(ValidateNodeRecord(node));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(NodeRecord stored, CreateNodeLocked(*conn_, node));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return stored;
}

StatusOr<NodeRecord> SqliteStore::GetNode(std::string_view node_id) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn_, node_id));
  if (!node) return NodeNotEnrolled(node_id);
  return *std::move(node);
}

StatusOr<NodeRecord> SqliteStore::ApproveNode(std::string_view node_id,
                                              int64_t now) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn_, node_id));
  if (!node) return NodeNotEnrolled(node_id);
  switch (node->state) {
    case NodeState::kApproved:
      return *std::move(node);
    case NodeState::kRevoked:
      return FailedPreconditionError("node " + Quoted(node_id) +
                                     " is revoked and cannot be approved.");
    case NodeState::kPending:
      break;
  }
  node->state = NodeState::kApproved;
  node->approved_at = now;
  DPA_RETURN_IF_ERROR(SetNodeState(*conn_, *node));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return *std::move(node);
}

StatusOr<NodeRecord> SqliteStore::RevokeNode(std::string_view node_id) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn_, node_id));
  if (!node) return NodeNotEnrolled(node_id);
  if (node->state == NodeState::kRevoked) return *std::move(node);
  node->state = NodeState::kRevoked;
  DPA_RETURN_IF_ERROR(SetNodeState(*conn_, *node));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return *std::move(node);
}

StatusOr<std::vector<NodeRecord>> SqliteStore::ListNodes() {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kListNodes));
  std::vector<NodeRecord> out;
  while (true) {
    DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("listing nodes"));
    if (!row) break;
    DPA_ASSIGN_OR_RETURN(NodeRecord n, NodeFromRow(*stmt));
    out.push_back(std::move(n));
  }
  return out;
}

// --- Nonces ------------------------------------------------------------------

Status SqliteStore::InsertNonce(std::string_view nonce,
                                std::string_view node_id, int64_t issued_at,
                                int64_t expires_at) {
  if (nonce.empty()) return InvalidArgumentError("nonce is empty.");
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  if (expires_at <= issued_at) {
    return InvalidArgumentError(
        "nonce expires_at " + std::to_string(expires_at) +
        " is not after issued_at " + std::to_string(issued_at) + ".");
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kInsertNonce));
  stmt->Text(1, nonce).Text(2, node_id).Int(3, issued_at).Int(4, expires_at);
  Status s = stmt->Run("inserting nonce");
  if (stmt->last_rc() == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return NodeNotEnrolled(node_id);
  }
  if (stmt->last_rc() == SQLITE_CONSTRAINT_PRIMARYKEY) {
    return AlreadyExistsError("nonce was already issued.");
  }
  return s;
}

namespace {

// The check-and-spend of ConsumeNonce, inside the caller's transaction.
// On a refusal nothing was changed (the caller rolls back anyway).
Status SpendNonceLocked(SqliteConnection& c, std::string_view nonce,
                        std::string_view node_id, int64_t now) {
  {
    // The whole check-and-spend is this one statement.
    DPA_ASSIGN_OR_RETURN(auto spend, c.Prepare(kSpendNonce));
    spend->Text(1, nonce).Text(2, node_id).Int(3, now);
    DPA_RETURN_IF_ERROR(spend->Run("consuming nonce"));
  }
  if (sqlite3_changes64(c.db()) == 1) return OkStatus();

  // Refused: say why, from the same snapshot.
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kSelectNonce));
  stmt->Text(1, nonce);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading nonce"));
  if (!row) return NotFoundError("unknown nonce.");
  if (stmt->ColText(0) != node_id) {
    return PermissionDeniedError("nonce was issued to another node.");
  }
  if (!stmt->ColIsNull(1))
    return FailedPreconditionError("nonce already used.");
  int64_t expires_at = stmt->ColInt(2);
  if (now >= expires_at) {
    return DeadlineExceededError("nonce expired at " +
                                 std::to_string(expires_at) + ".");
  }
  return InternalError(
      "sqlite: nonce could not be consumed for no known "
      "reason.");
}

}  // namespace

Status SqliteStore::ConsumeNonce(std::string_view nonce,
                                 std::string_view node_id, int64_t now) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  // A refusal is rolled back by ~Transaction.
  DPA_RETURN_IF_ERROR(SpendNonceLocked(*conn_, nonce, node_id, now));
  return txn->Commit();
}

StatusOr<int64_t> SqliteStore::NonceIssuedAt(std::string_view nonce,
                                             std::string_view node_id) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kSelectNonceIssuedAt));
  stmt->Text(1, nonce);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading nonce"));
  if (!row) return NotFoundError("unknown nonce.");
  if (stmt->ColText(0) != node_id) {
    return PermissionDeniedError("nonce was issued to another node.");
  }
  return stmt->ColInt(1);
}

StatusOr<int64_t> SqliteStore::PurgeExpiredNonces(int64_t now) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kPurgeNonces));
  stmt->Int(1, now);
  DPA_RETURN_IF_ERROR(stmt->Run("purging nonces"));
  return static_cast<int64_t>(sqlite3_changes64(conn_->db()));
}

// --- Reports and results -----------------------------------------------------

StatusOr<int64_t> SqliteStore::InsertReport(const ReportRecord& report) {
  DPA_RETURN_IF_ERROR(ValidateReportRecord(report));
  std::lock_guard<std::mutex> lock(conn_->mu());
  return InsertReportLocked(*conn_, report);
}

namespace {

// The report and result rows of InsertResult, inside the caller's
// transaction; returns the result id.
StatusOr<int64_t> InsertResultLocked(SqliteConnection& c,
                                     const ResultRecord& result,
                                     const ReportRecord& report) {
  DPA_ASSIGN_OR_RETURN(int64_t report_id, InsertReportLocked(c, report));
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kInsertResult));
  stmt->Text(1, result.node_id)
      .Int(2, report_id)
      .Text(3, result.decision)
      .Text(4, result.ear_jwt)
      .Text(5, result.reasons_json)
      .Text(6, result.report_jws_sha256)
      .Int(7, result.created_at)
      .Int(8, result.expires_at);
  Status s = stmt->Run("inserting result");
  if (stmt->last_rc() == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return NodeNotEnrolled(result.node_id);  // report rolled back too
  }
  DPA_RETURN_IF_ERROR(s);
  return static_cast<int64_t>(sqlite3_last_insert_rowid(c.db()));
}

}  // namespace

StatusOr<int64_t> SqliteStore::InsertResult(const ResultRecord& result,
                                            const ReportRecord& report) {
  DPA_RETURN_IF_ERROR(ValidateResultRecord(result, report));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(int64_t result_id,
                       InsertResultLocked(*conn_, result, report));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return result_id;
}

StatusOr<int64_t> SqliteStore::InsertResultSpendingNonce(
    const ResultRecord& result, const ReportRecord& report,
    std::string_view nonce, int64_t now) {
  DPA_RETURN_IF_ERROR(ValidateResultRecord(result, report));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  // Any error below rolls back the spend with the rows (~Transaction).
  DPA_RETURN_IF_ERROR(SpendNonceLocked(*conn_, nonce, result.node_id, now));
  DPA_ASSIGN_OR_RETURN(int64_t result_id,
                       InsertResultLocked(*conn_, result, report));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return result_id;
}

StatusOr<ResultRecord> SqliteStore::LatestResult(std::string_view node_id) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kLatestResult));
  stmt->Text(1, node_id);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading latest result"));
  if (!row) {
    return NotFoundError("no result for node " + Quoted(node_id) + ".");
  }
  ResultRecord r;
  r.id = stmt->ColInt(0);
  r.node_id = stmt->ColText(1);
  r.decision = stmt->ColText(2);
  r.ear_jwt = stmt->ColText(3);
  r.reasons_json = stmt->ColText(4);
  r.report_jws_sha256 = stmt->ColText(5);
  r.created_at = stmt->ColInt(6);
  r.expires_at = stmt->ColInt(7);
  return r;
}

// --- Reference values --------------------------------------------------------

Status SqliteStore::PutRelease(const RefRelease& release) {
  DPA_RETURN_IF_ERROR(ValidateRelease(release));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(bool inserted, PutReleaseLocked(*conn_, release));
  if (!inserted) return OkStatus();  // equal content; rolled back, unchanged
  DPA_RETURN_IF_ERROR(BumpGeneration(*conn_));
  return txn->Commit();
}

Status SqliteStore::PutReleases(const std::vector<RefRelease>& releases) {
  for (size_t i = 0; i < releases.size(); ++i) {
    DPA_RETURN_IF_ERROR(ValidateRelease(releases[i])
                            .WithPrefix("releases[" + std::to_string(i) + "]"));
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  bool changed = false;
  for (size_t i = 0; i < releases.size(); ++i) {
    auto inserted = PutReleaseLocked(*conn_, releases[i]);
    if (!inserted.ok()) {
      return inserted.status().WithPrefix("releases[" + std::to_string(i) +
                                          "]");
    }
    changed = changed || *inserted;
  }
  if (!changed) return OkStatus();
  DPA_RETURN_IF_ERROR(BumpGeneration(*conn_));
  return txn->Commit();
}

StatusOr<RefRelease> SqliteStore::GetRelease(std::string_view release) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(std::optional<RefRelease> r,
                       FindRelease(*conn_, release));
  if (!r) return ReleaseNotKnown(release);
  return *std::move(r);
}

StatusOr<std::vector<RefRelease>> SqliteStore::ListReleases(
    std::string_view model) {
  std::string canonical;
  if (!model.empty()) {
    std::optional<std::string> c = CanonicalModel(model);
    if (!c) {
      return InvalidArgumentError("model " + report::internal::Quote(model) +
                                  " is not a known BlueField model.");
    }
    canonical = *c;
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(
      auto stmt,
      conn_->Prepare(model.empty() ? kListReleases : kListReleasesOfModel));
  if (!model.empty()) stmt->Text(1, canonical);
  std::vector<RefRelease> out;
  while (true) {
    DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("listing reference releases"));
    if (!row) break;
    DPA_ASSIGN_OR_RETURN(RefRelease r, ReleaseFromRow(*stmt));
    out.push_back(std::move(r));
  }
  return out;
}

StatusOr<RefRelease> SqliteStore::TransitionRelease(
    std::string_view release, const RefApproval& approval) {
  DPA_RETURN_IF_ERROR(ValidateRefApproval(approval));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<RefRelease> r,
                       FindRelease(*conn_, release));
  if (!r) return ReleaseNotKnown(release);
  if (!RefTransitionAllowed(r->state, approval.state)) {
    return FailedPreconditionError(
        "release " + report::internal::Quote(release) + " is " +
        std::string(RefStateName(r->state)) + "; cannot move it to " +
        std::string(RefStateName(approval.state)) + ".");
  }
  r->state = approval.state;
  r->history.push_back(approval);
  DPA_RETURN_IF_ERROR(ValidateRelease(*r));
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kUpdateRelease));
    stmt->Text(1, r->release)
        .Text(2, RefStateName(r->state))
        .Text(3, ReleaseBody(*r));
    DPA_RETURN_IF_ERROR(stmt->Run("updating reference release"));
  }
  DPA_RETURN_IF_ERROR(BumpGeneration(*conn_));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return *std::move(r);
}

StatusOr<int64_t> SqliteStore::RefvalsGeneration() {
  std::lock_guard<std::mutex> lock(conn_->mu());
  return PragmaInt(*conn_, kSelectGeneration,
                   "reading reference value generation");
}

Status SqliteStore::RecordNodeRelease(std::string_view node_id,
                                      std::string_view kind,
                                      std::string_view release, int64_t at) {
  DPA_RETURN_IF_ERROR(ValidateNodeRelease(node_id, kind, release, at));
  std::lock_guard<std::mutex> lock(conn_->mu());
  // One statement: atomic on its own.
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kUpsertNodeRelease));
  stmt->Text(1, node_id).Text(2, kind).Text(3, release).Int(4, at);
  Status s = stmt->Run("recording node release");
  if (stmt->last_rc() == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return NodeNotEnrolled(node_id);
  }
  return s;
}

StatusOr<std::string> SqliteStore::LastNodeRelease(std::string_view node_id,
                                                   std::string_view kind) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kSelectNodeRelease));
  stmt->Text(1, node_id).Text(2, kind);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading node release"));
  if (!row) {
    return NotFoundError("no " + report::internal::Quote(kind) +
                         " release recorded for node " +
                         report::internal::Quote(node_id) + ".");
  }
  return stmt->ColText(0);
}

// --- TPM bindings ------------------------------------------------------------

namespace {

// PutTpmBinding's checks on `binding` before the database is touched.
Status ValidatePendingTpmBinding(const TpmBinding& binding) {
  if (binding.state != TpmBindingState::kPending) {
    return InvalidArgumentError("a TPM binding must be put in state pending.");
  }
  return ValidateTpmBinding(binding);
}

// The body of PutTpmBinding, inside the caller's transaction. Writes
// nothing when the node's active binding is the same TPM and AK.
Status PutTpmBindingLocked(SqliteConnection& c, const TpmBinding& binding) {
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(c, binding.node_id));
  if (!node) return NodeNotEnrolled(binding.node_id);
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> existing,
                       FindTpmBinding(c, binding.node_id));
  if (existing && existing->state == TpmBindingState::kActive) {
    if (existing->ek_sha256 == binding.ek_sha256 &&
        existing->ek_public_b64 == binding.ek_public_b64 &&
        existing->ak_name_hex == binding.ak_name_hex &&
        existing->ak_public_b64 == binding.ak_public_b64) {
      return OkStatus();  // the same TPM and AK; left as it is
    }
    return AlreadyExistsError("node " + Quoted(binding.node_id) +
                              " is bound to another TPM.");
  }
  DPA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                       ActiveEkOwner(c, binding.ek_sha256, binding.node_id));
  if (owner) return TpmBoundToNode(*owner);
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kUpsertTpmBinding));
    stmt->Text(1, binding.node_id)
        .Text(2, binding.ek_public_b64)
        .Text(3, binding.ek_sha256)
        .Text(4, binding.ek_cert_pem)
        .Text(5, binding.ek_cert_issuer)
        .Text(6, binding.ak_public_b64)
        .Text(7, binding.ak_name_hex)
        .Text(8, TpmBindingStateName(binding.state))
        .Text(9, binding.credential_sha256)
        .Int(10, binding.challenge_expires_at)
        .Int(11, binding.created_at)
        .OptionalInt(12, binding.activated_at);
    Status s = stmt->Run("storing TPM binding");
    if (stmt->last_rc() == SQLITE_CONSTRAINT_FOREIGNKEY) {
      return NodeNotEnrolled(binding.node_id);
    }
    DPA_RETURN_IF_ERROR(s);
  }
  if (sqlite3_changes64(c.db()) != 1) {
    return InternalError("sqlite: TPM binding of node " +
                         Quoted(binding.node_id) + " was not stored.");
  }
  return OkStatus();
}

}  // namespace

Status SqliteStore::PutTpmBinding(const TpmBinding& binding) {
  DPA_RETURN_IF_ERROR(ValidatePendingTpmBinding(binding));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  // A refusal is rolled back by ~Transaction.
  DPA_RETURN_IF_ERROR(PutTpmBindingLocked(*conn_, binding));
  return txn->Commit();
}

namespace {

// What an enrollment nobody vouched for may do to the TPM binding of a node
// that exists (Store::CreateNodeWithTpmBinding, EnrollAuthority::kNone).
Status CheckUnvouchedTpmEnrollment(SqliteConnection& c, const NodeRecord& node,
                                   const TpmBinding& binding) {
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> stored,
                       FindTpmBinding(c, node.node_id));
  if (!stored) {
    if (node.state == NodeState::kPending) return OkStatus();
    return PermissionDeniedError("node " + Quoted(node.node_id) + " is " +
                                 std::string(NodeStateName(node.state)) +
                                 "; adding a TPM to it needs the bootstrap "
                                 "token.");
  }
  if (stored->ek_sha256 != binding.ek_sha256 ||
      stored->ak_name_hex != binding.ak_name_hex) {
    return FailedPreconditionError("node " + Quoted(node.node_id) +
                                   " is bound to another TPM; rebinding it "
                                   "needs the bootstrap token.");
  }
  if (stored->state == TpmBindingState::kPending &&
      stored->challenge_expires_at > binding.created_at) {
    return FailedPreconditionError(
        "node " + Quoted(node.node_id) +
        " has a TPM credential challenge outstanding until " +
        std::to_string(stored->challenge_expires_at) +
        "; activate it, or enroll again after it expires or with the "
        "bootstrap token.");
  }
  return OkStatus();
}

}  // namespace

StatusOr<NodeRecord> SqliteStore::CreateNodeWithTpmBinding(
    const NodeRecord& node, const TpmBinding& binding,
    std::optional<int64_t> approve_at, EnrollAuthority authority) {
  DPA_RETURN_IF_ERROR(ValidateNodeRecord(node));
  DPA_RETURN_IF_ERROR(ValidatePendingTpmBinding(binding));
  if (binding.node_id != node.node_id) {
    return InvalidArgumentError("TPM binding is for node " +
                                Quoted(binding.node_id) + ", not " +
                                Quoted(node.node_id) + ".");
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  // Any error below rolls back the node with the binding (~Transaction).
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> existing,
                       FindNode(*conn_, node.node_id));
  DPA_ASSIGN_OR_RETURN(NodeRecord stored, CreateNodeLocked(*conn_, node));
  if (existing && authority == EnrollAuthority::kNone) {
    DPA_RETURN_IF_ERROR(
        CheckUnvouchedTpmEnrollment(*conn_, *existing, binding));
  }
  DPA_RETURN_IF_ERROR(PutTpmBindingLocked(*conn_, binding));
  if (approve_at && stored.state == NodeState::kPending) {
    stored.state = NodeState::kApproved;
    stored.approved_at = *approve_at;
    DPA_RETURN_IF_ERROR(SetNodeState(*conn_, stored));
  }
  DPA_RETURN_IF_ERROR(txn->Commit());
  return stored;
}

StatusOr<TpmBinding> SqliteStore::ActivateTpmBinding(
    std::string_view node_id, std::string_view credential_sha256, int64_t now) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> b,
                       FindTpmBinding(*conn_, node_id));
  // Every refusal below returns before any write; ~Transaction rolls back.
  if (!b) return NoTpmBinding(node_id);
  if (b->state == TpmBindingState::kActive) {
    return FailedPreconditionError("TPM binding of node " + Quoted(node_id) +
                                   " is already active.");
  }
  if (!ConstantTimeEquals(AsBytes(b->credential_sha256),
                          AsBytes(credential_sha256))) {
    return FailedPreconditionError("credential does not match.");
  }
  if (now >= b->challenge_expires_at) {
    return DeadlineExceededError("credential challenge expired at " +
                                 std::to_string(b->challenge_expires_at) + ".");
  }
  DPA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                       ActiveEkOwner(*conn_, b->ek_sha256, node_id));
  if (owner) return TpmBoundToNode(*owner);
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kActivateTpmBinding));
    stmt->Text(1, node_id).Int(2, now);
    DPA_RETURN_IF_ERROR(stmt->Run("activating TPM binding"));
  }
  if (sqlite3_changes64(conn_->db()) != 1) {
    return InternalError("sqlite: TPM binding of node " + Quoted(node_id) +
                         " could not be activated for no known reason.");
  }
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> stored,
                       FindTpmBinding(*conn_, node_id));
  if (!stored || stored->state != TpmBindingState::kActive) {
    return InternalError("sqlite: TPM binding of node " + Quoted(node_id) +
                         " did not read back as active.");
  }
  DPA_RETURN_IF_ERROR(txn->Commit());
  return *std::move(stored);
}

StatusOr<TpmBinding> SqliteStore::GetTpmBinding(std::string_view node_id) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> b,
                       FindTpmBinding(*conn_, node_id));
  if (!b) return NoTpmBinding(node_id);
  return *std::move(b);
}

StatusOr<TpmBinding> SqliteStore::DeleteTpmBinding(std::string_view node_id,
                                                   bool allow_active) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> b,
                       FindTpmBinding(*conn_, node_id));
  if (!b) return NoTpmBinding(node_id);
  if (b->state == TpmBindingState::kActive && !allow_active) {
    return FailedPreconditionError(
        "TPM binding of node " + Quoted(node_id) +
        " is active (credential activation proved it is the node's TPM); "
        "deleting it needs --force.");
  }
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kDeleteTpmBinding));
    stmt->Text(1, node_id);
    DPA_RETURN_IF_ERROR(stmt->Run("deleting TPM binding"));
  }
  if (sqlite3_changes64(conn_->db()) != 1) {
    return InternalError("sqlite: TPM binding of node " + Quoted(node_id) +
                         " was not deleted.");
  }
  DPA_RETURN_IF_ERROR(txn->Commit());
  return *std::move(b);
}

}  // namespace dpuaudit::verifier
