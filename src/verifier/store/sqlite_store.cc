#include "verifier/store/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/strict_json.h"

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

// Enrollment and identity (issue 12), added to schema 1 the same way.
// node_details: one row per node for what nodes lacks (pinned and claimed
// device identity, who approved, revocation); a node without a row reads
// as all empty. node_events: the history, kept when a node is removed (no
// foreign key). enrollment_tokens: per-node single-use tokens, stored only
// as their SHA-256.
constexpr const char* kSchemaEnrollment = R"sql(
CREATE TABLE IF NOT EXISTS node_details (
  node_id        TEXT PRIMARY KEY NOT NULL REFERENCES nodes(node_id),
  device_serial  TEXT NOT NULL,
  claimed_serial TEXT NOT NULL,
  claimed_psid   TEXT NOT NULL,
  claimed_model  TEXT NOT NULL,
  approved_by    TEXT NOT NULL,
  revoked_at     INTEGER,
  revoked_by     TEXT NOT NULL,
  revoke_reason  TEXT NOT NULL,
  stale_result_id INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS node_events (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  node_id TEXT NOT NULL,
  at      INTEGER NOT NULL,
  event   TEXT NOT NULL,
  actor   TEXT NOT NULL,
  detail  TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS node_events_by_node ON node_events(node_id, id);
CREATE TABLE IF NOT EXISTS enrollment_tokens (
  token_sha256        TEXT PRIMARY KEY NOT NULL,
  token_id            TEXT NOT NULL UNIQUE,
  node_id             TEXT NOT NULL,
  serial              TEXT NOT NULL,
  created_by          TEXT NOT NULL,
  created_at          INTEGER NOT NULL,
  expires_at          INTEGER NOT NULL,
  used_at             INTEGER,
  used_key_thumbprint TEXT NOT NULL,
  revoked_at          INTEGER,
  revoked_by          TEXT NOT NULL,
  CHECK (expires_at > created_at)
) STRICT;
CREATE INDEX IF NOT EXISTS nodes_by_state ON nodes(state, enrolled_at);
)sql";

// Storage bounds (issue 12), added to schema 1 the same way: the received
// size of a report (refused reports keep only a prefix of their body, and
// retention drops old bodies; 0 on rows written before: length(jws)), and
// the indexes the per-node nonce cap and retention read. Not idempotent on
// its own (ALTER TABLE): EnsureStorageColumns re-checks under the write lock.
constexpr const char* kSchemaStorage = R"sql(
ALTER TABLE reports ADD COLUMN received_bytes INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS nonces_by_node ON nonces(node_id, issued_at);
CREATE INDEX IF NOT EXISTS results_by_report ON results(report_id);
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
// Nodes are read with their node_details row (NULL columns read as "").
#define DPA_NODE_COLUMNS                                                    \
  "SELECT n.node_id, n.public_key_pem, n.key_thumbprint, n.alg, n.state, " \
  "n.enrolled_at, n.approved_at, d.device_serial, d.claimed_serial, "      \
  "d.claimed_psid, d.claimed_model, d.approved_by, d.revoked_at, "         \
  "d.revoked_by, d.revoke_reason, d.stale_result_id FROM nodes n "         \
  "LEFT JOIN node_details d ON d.node_id = n.node_id "
constexpr const char* kSelectNode = DPA_NODE_COLUMNS "WHERE n.node_id = ?1";
constexpr const char* kListNodes = DPA_NODE_COLUMNS "ORDER BY n.node_id";
#undef DPA_NODE_COLUMNS
constexpr const char* kUpsertNodeDetails =
    "INSERT INTO node_details (node_id, device_serial, claimed_serial, "
    "claimed_psid, claimed_model, approved_by, revoked_at, revoked_by, "
    "revoke_reason, stale_result_id) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
    "ON CONFLICT (node_id) DO UPDATE SET "
    "device_serial = excluded.device_serial, "
    "claimed_serial = excluded.claimed_serial, "
    "claimed_psid = excluded.claimed_psid, "
    "claimed_model = excluded.claimed_model, "
    "approved_by = excluded.approved_by, revoked_at = excluded.revoked_at, "
    "revoked_by = excluded.revoked_by, revoke_reason = excluded.revoke_reason, "
    "stale_result_id = excluded.stale_result_id";
constexpr const char* kMaxResultIdOf =
    "SELECT COALESCE(MAX(id), 0) FROM results WHERE node_id = ?1";
constexpr const char* kReplaceNodeKey =
    "UPDATE nodes SET public_key_pem = ?2, key_thumbprint = ?3, alg = ?4, "
    "state = ?5, enrolled_at = ?6, approved_at = ?7 WHERE node_id = ?1";
constexpr const char* kDeleteNodeDetails =
    "DELETE FROM node_details WHERE node_id = ?1";
constexpr const char* kDeleteTpmBindingOf =
    "DELETE FROM tpm_bindings WHERE node_id = ?1";
constexpr const char* kDeleteNoncesOf = "DELETE FROM nonces WHERE node_id = ?1";
constexpr const char* kDeleteNodeReleasesOf =
    "DELETE FROM node_releases WHERE node_id = ?1";
constexpr const char* kDeleteNode = "DELETE FROM nodes WHERE node_id = ?1";
constexpr const char* kCountPending =
    "SELECT count(*) FROM nodes WHERE state = 'pending' AND enrolled_at > ?1";
constexpr const char* kListExpiredPending =
    "SELECT node_id FROM nodes WHERE state = 'pending' AND enrolled_at <= ?1 "
    "ORDER BY node_id";
constexpr const char* kInsertNodeEvent =
    "INSERT INTO node_events (node_id, at, event, actor, detail) "
    "VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr const char* kSelectNodeEvents =
    "SELECT id, node_id, at, event, actor, detail FROM node_events "
    "WHERE node_id = ?1 ORDER BY id";
#define DPA_TOKEN_COLUMNS                                                   \
  "SELECT token_sha256, token_id, node_id, serial, created_by, created_at, " \
  "expires_at, used_at, used_key_thumbprint, revoked_at, revoked_by "       \
  "FROM enrollment_tokens "
constexpr const char* kSelectToken = DPA_TOKEN_COLUMNS "WHERE token_sha256 = ?1";
constexpr const char* kSelectTokenById = DPA_TOKEN_COLUMNS "WHERE token_id = ?1";
constexpr const char* kListTokens =
    DPA_TOKEN_COLUMNS "ORDER BY created_at DESC, token_id";
#undef DPA_TOKEN_COLUMNS
constexpr const char* kInsertToken =
    "INSERT INTO enrollment_tokens (token_sha256, token_id, node_id, serial, "
    "created_by, created_at, expires_at, used_at, used_key_thumbprint, "
    "revoked_at, revoked_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, '', "
    "NULL, '')";
constexpr const char* kSpendToken =
    "UPDATE enrollment_tokens SET used_at = ?2, used_key_thumbprint = ?3 "
    "WHERE token_sha256 = ?1 AND used_at IS NULL AND revoked_at IS NULL";
constexpr const char* kRevokeToken =
    "UPDATE enrollment_tokens SET revoked_at = ?2, revoked_by = ?3 "
    "WHERE token_id = ?1 AND used_at IS NULL AND revoked_at IS NULL";
constexpr const char* kRevokeTokensOfNode =
    "UPDATE enrollment_tokens SET revoked_at = ?2, revoked_by = ?3 "
    "WHERE node_id = ?1 AND used_at IS NULL AND revoked_at IS NULL";
constexpr const char* kCountEnrollmentObjects =
    "SELECT count(*) FROM sqlite_schema WHERE "
    "(type = 'table' AND name IN "
    "('node_details', 'node_events', 'enrollment_tokens')) OR "
    "(type = 'index' AND name IN ('node_events_by_node', 'nodes_by_state'))";
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
    "INSERT INTO reports (node_id, jws, sha256, received_at, accepted, error, "
    "received_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
constexpr const char* kCountStorageObjects =
    "SELECT (SELECT count(*) FROM pragma_table_info('reports') "
    "WHERE name = 'received_bytes') + (SELECT count(*) FROM sqlite_schema "
    "WHERE type = 'index' AND name IN ('nonces_by_node', 'results_by_report'))";
constexpr const char* kCountOutstandingNonces =
    "SELECT count(*) FROM nonces WHERE node_id = ?1 AND used_at IS NULL "
    "AND expires_at > ?2";
constexpr const char* kEvictOldestNonces =
    "DELETE FROM nonces WHERE rowid IN (SELECT rowid FROM nonces "
    "WHERE node_id = ?1 AND used_at IS NULL AND expires_at > ?2 "
    "ORDER BY issued_at, rowid LIMIT ?3)";
constexpr const char* kReportBytes =
    "SELECT coalesce(sum(length(jws) + length(error)), 0) FROM reports "
    "WHERE node_id = ?1";
constexpr const char* kOldestRefused =
    "SELECT id, length(jws) + length(error) FROM reports "
    "WHERE node_id = ?1 AND accepted = 0 ORDER BY received_at, id LIMIT 1";
constexpr const char* kOldestAcceptedBody =
    "SELECT id, length(jws) FROM reports WHERE node_id = ?1 AND accepted = 1 "
    "AND length(jws) > 0 ORDER BY received_at, id LIMIT 1";
constexpr const char* kDeleteReport = "DELETE FROM reports WHERE id = ?1";
constexpr const char* kDeleteResult = "DELETE FROM results WHERE id = ?1";
// Keeps the received size when the body goes (UPDATE reads old values).
constexpr const char* kDropReportBody =
    "UPDATE reports SET received_bytes = CASE WHEN received_bytes = 0 THEN "
    "length(jws) ELSE received_bytes END, jws = x'' "
    "WHERE id = ?1 AND length(jws) > 0";
// Per result: whether retention must keep it (the node's latest, or a
// decision change: the first result or one whose decision differs from the
// previous), and whether it is outside the limits (?1 latest per node,
// older than ?2; 0 turns a limit off).
constexpr const char* kRetentionCandidates =
    "WITH r AS (SELECT id, report_id, decision, created_at, "
    "lag(decision) OVER (PARTITION BY node_id ORDER BY created_at, id) "
    "AS prev, row_number() OVER (PARTITION BY node_id "
    "ORDER BY created_at DESC, id DESC) AS rn FROM results) "
    "SELECT id, report_id, rn = 1 OR prev IS NULL OR prev <> decision "
    "FROM r WHERE rn > 1 AND ((?1 > 0 AND rn > ?1) OR "
    "(?2 IS NOT NULL AND created_at < ?2))";
constexpr const char* kPruneRefused =
    "WITH f AS (SELECT id, received_at, row_number() OVER (PARTITION BY "
    "node_id ORDER BY received_at DESC, id DESC) AS rn FROM reports "
    "WHERE accepted = 0) DELETE FROM reports WHERE id IN (SELECT id FROM f "
    "WHERE (?1 > 0 AND rn > ?1) OR (?2 IS NOT NULL AND received_at < ?2))";
constexpr const char* kInsertResult =
    "INSERT INTO results (node_id, report_id, decision, ear_jwt, "
    "reasons_json, report_jws_sha256, created_at, expires_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
constexpr const char* kSelectAcceptedReport =
    "SELECT id, node_id, jws, sha256, received_at FROM reports "
    "WHERE node_id = ?1 AND sha256 = ?2 AND accepted = 1 "
    "ORDER BY id DESC LIMIT 1";
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
    "ORDER BY id DESC LIMIT 1";

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
  n.device_serial = s.ColText(7);
  n.claimed_serial = s.ColText(8);
  n.claimed_psid = s.ColText(9);
  n.claimed_model = s.ColText(10);
  n.approved_by = s.ColText(11);
  if (!s.ColIsNull(12)) n.revoked_at = s.ColInt(12);
  n.revoked_by = s.ColText(13);
  n.revoke_reason = s.ColText(14);
  n.stale_result_id = s.ColInt(15);
  return n;
}

// Writes the node_details columns of `n` (the node row must exist).
Status PutNodeDetails(SqliteConnection& c, const NodeRecord& n) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kUpsertNodeDetails));
  stmt->Text(1, n.node_id)
      .Text(2, n.device_serial)
      .Text(3, n.claimed_serial)
      .Text(4, n.claimed_psid)
      .Text(5, n.claimed_model)
      .Text(6, n.approved_by)
      .OptionalInt(7, n.revoked_at)
      .Text(8, n.revoked_by)
      .Text(9, n.revoke_reason)
      .Int(10, n.stale_result_id);
  return stmt->Run("storing node details");
}

bool HasDetails(const NodeRecord& n) {
  return !n.device_serial.empty() || !n.claimed_serial.empty() ||
         !n.claimed_psid.empty() || !n.claimed_model.empty() ||
         !n.approved_by.empty() || n.revoked_at.has_value() ||
         !n.revoked_by.empty() || !n.revoke_reason.empty() ||
         n.stale_result_id != 0;
}

Status AddNodeEvent(SqliteConnection& c, std::string_view node_id, int64_t at,
                    std::string_view event, std::string_view actor,
                    std::string_view detail) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kInsertNodeEvent));
  stmt->Text(1, node_id).Int(2, at).Text(3, event).Text(4, actor).Text(5,
                                                                      detail);
  return stmt->Run("recording node event");
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
      .Text(6, r.error)
      .Int(7, r.received_bytes > 0 ? r.received_bytes
                                   : static_cast<int64_t>(r.jws.size()));
  DPA_RETURN_IF_ERROR(stmt->Run("inserting report"));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(c.db()));
}

Status ReleaseNotKnown(std::string_view release) {
  return NotFoundError("reference release " + strict_json::Quote(release) +
                       " is not known.");
}

// A row of (release, state, body): the body re-parsed and re-validated.
StatusOr<RefRelease> ReleaseFromRow(const Stmt& s) {
  std::string label = s.ColText(0);
  std::string state = s.ColText(1);
  auto parsed = ParseRefManifest(s.ColText(2), 0);
  if (!parsed.ok()) {
    return DataLossError("sqlite: reference release " +
                         strict_json::Quote(label) +
                         " is corrupt: " + parsed.status().message());
  }
  if (parsed->size() != 1 || (*parsed)[0].release != label ||
      RefStateName((*parsed)[0].state) != state) {
    return DataLossError("sqlite: reference release " +
                         strict_json::Quote(label) +
                         " disagrees with its indexed columns.");
  }
  return std::move((*parsed)[0]);
}

std::string ReleaseBody(const RefRelease& r) {
  return strict_json::DumpJson(RefManifestJson({r}));
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
                              strict_json::Quote(r.release) +
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

Status EnsureEnrollmentTables(SqliteConnection& c) {
  return EnsureAddedTables(c, kCountEnrollmentObjects, 5, kSchemaEnrollment,
                           "creating enrollment tables");
}

Status EnsureStorageColumns(SqliteConnection& c) {
  DPA_ASSIGN_OR_RETURN(int64_t objects, PragmaInt(c, kCountStorageObjects,
                                                  "reading sqlite_schema"));
  if (objects == 3) return OkStatus();
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(c));
  // Re-read under the write lock: another process may have added them.
  DPA_ASSIGN_OR_RETURN(objects, PragmaInt(c, kCountStorageObjects,
                                          "reading sqlite_schema"));
  if (objects == 3) return OkStatus();
  if (objects != 0) {
    return DataLossError(
        "sqlite: the reports table has only part of the storage-bound "
        "columns and indexes.");
  }
  int rc = sqlite3_exec(c.db(), kSchemaStorage, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    return SqliteStatus(rc, "adding storage-bound columns", c.db());
  }
  return txn->Commit();
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
      rc = sqlite3_exec(c.db(), kSchemaEnrollment, nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) {
        return SqliteStatus(rc, "creating enrollment tables", c.db());
      }
      DPA_RETURN_IF_ERROR(txn->Commit());
      return EnsureStorageColumns(c);
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
  DPA_RETURN_IF_ERROR(EnsureTpmBindingTables(c));
  DPA_RETURN_IF_ERROR(EnsureEnrollmentTables(c));
  return EnsureStorageColumns(c);
}

// Tightens one file to owner-only (mode & 0700) if it exists; with
// `create`, creates it 0600 first. The store holds node keys, nonces and
// results: group or others must not read it.
Status OwnerOnly(const std::string& path, bool create) {
  int fd = ::open(path.c_str(),
                  O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                      (create ? O_CREAT : 0),
                  0600);
  if (fd < 0) {
    // A missing file (or, with create, a missing directory): SQLite opens it
    // or says why in its own words.
    if (errno == ENOENT) return OkStatus();
    if (errno == EISDIR) {
      return FailedPreconditionError("sqlite: " + path +
                                     " is not a regular file.");
    }
    std::string msg =
        "sqlite: cannot open " + path + ": " + std::strerror(errno) + ".";
    return errno == EACCES || errno == EPERM
               ? PermissionDeniedError(std::move(msg))
               : UnavailableError(std::move(msg));
  }
  struct stat st {};
  Status s = OkStatus();
  if (::fstat(fd, &st) != 0) {
    s = UnavailableError("sqlite: cannot stat " + path + ": " +
                         std::strerror(errno) + ".");
  } else if (!S_ISREG(st.st_mode)) {
    s = FailedPreconditionError("sqlite: " + path + " is not a regular file.");
  } else if ((st.st_mode & 077) != 0 &&
             ::fchmod(fd, st.st_mode & 0700) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    s = PermissionDeniedError(
        "sqlite: " + path + " has mode " + mode +
        " (readable beyond its owner) and cannot be tightened to owner-only: " +
        std::strerror(errno) + "; chmod 600 it or use another --db.");
  }
  ::close(fd);
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path) {
  if (path.empty()) return InvalidArgumentError("sqlite: path is empty.");
  if (path != ":memory:") {
    // Created 0600 before SQLite sees it: SQLite gives -wal and -shm the
    // database file's mode. Existing files with looser modes are tightened.
    DPA_RETURN_IF_ERROR(OwnerOnly(path, /*create=*/true));
    DPA_RETURN_IF_ERROR(OwnerOnly(path + "-wal", /*create=*/false));
    DPA_RETURN_IF_ERROR(OwnerOnly(path + "-shm", /*create=*/false));
  }
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
  stmt.reset();
  if (HasDetails(node)) DPA_RETURN_IF_ERROR(PutNodeDetails(c, node));
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

namespace {

Status CheckNonceArgs(std::string_view nonce, std::string_view node_id,
                      int64_t issued_at, int64_t expires_at) {
  if (nonce.empty()) return InvalidArgumentError("nonce is empty.");
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  if (expires_at <= issued_at) {
    return InvalidArgumentError(
        "nonce expires_at " + std::to_string(expires_at) +
        " is not after issued_at " + std::to_string(issued_at) + ".");
  }
  return OkStatus();
}

Status InsertNonceLocked(SqliteConnection& c, std::string_view nonce,
                         std::string_view node_id, int64_t issued_at,
                         int64_t expires_at) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kInsertNonce));
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

}  // namespace

Status SqliteStore::InsertNonce(std::string_view nonce,
                                std::string_view node_id, int64_t issued_at,
                                int64_t expires_at) {
  DPA_RETURN_IF_ERROR(CheckNonceArgs(nonce, node_id, issued_at, expires_at));
  std::lock_guard<std::mutex> lock(conn_->mu());
  return InsertNonceLocked(*conn_, nonce, node_id, issued_at, expires_at);
}

StatusOr<int64_t> SqliteStore::InsertNonceCapped(std::string_view nonce,
                                                 std::string_view node_id,
                                                 int64_t issued_at,
                                                 int64_t expires_at,
                                                 int64_t max_outstanding) {
  DPA_RETURN_IF_ERROR(CheckNonceArgs(nonce, node_id, issued_at, expires_at));
  if (max_outstanding < 1) {
    return InvalidArgumentError("max_outstanding " +
                                std::to_string(max_outstanding) +
                                " must be at least 1.");
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  int64_t outstanding = 0;
  {
    DPA_ASSIGN_OR_RETURN(auto count, conn_->Prepare(kCountOutstandingNonces));
    count->Text(1, node_id).Int(2, issued_at);
    DPA_ASSIGN_OR_RETURN(bool row, count->Step("counting nonces"));
    if (row) outstanding = count->ColInt(0);
  }
  int64_t evicted = 0;
  if (outstanding >= max_outstanding) {
    DPA_ASSIGN_OR_RETURN(auto evict, conn_->Prepare(kEvictOldestNonces));
    evict->Text(1, node_id)
        .Int(2, issued_at)
        .Int(3, outstanding - max_outstanding + 1);
    DPA_RETURN_IF_ERROR(evict->Run("evicting nonces"));
    evicted = static_cast<int64_t>(sqlite3_changes64(conn_->db()));
  }
  DPA_RETURN_IF_ERROR(
      InsertNonceLocked(*conn_, nonce, node_id, issued_at, expires_at));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return evicted;
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

namespace {

StatusOr<int64_t> ReportBytesLocked(SqliteConnection& c,
                                    std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kReportBytes));
  stmt->Text(1, node_id);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading report bytes"));
  return row ? stmt->ColInt(0) : 0;
}

// The oldest (id, bytes) that `sql` selects for `node_id`, if any.
StatusOr<std::optional<std::pair<int64_t, int64_t>>> OldestRow(
    SqliteConnection& c, const char* sql, std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(sql));
  stmt->Text(1, node_id);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading reports"));
  if (!row) return std::optional<std::pair<int64_t, int64_t>>();
  return std::optional<std::pair<int64_t, int64_t>>(
      std::make_pair(stmt->ColInt(0), stmt->ColInt(1)));
}

Status RunWithId(SqliteConnection& c, const char* sql, int64_t id,
                 std::string_view what) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(sql));
  stmt->Int(1, id);
  return stmt->Run(what);
}

std::string QuotaMessage(std::string_view node_id, int64_t used,
                         int64_t quota) {
  return "node " + Quoted(node_id) + " has used " + std::to_string(used) +
         " of its " + std::to_string(quota) + " bytes of report storage";
}

int64_t StoredBytes(const ReportRecord& r) {
  return static_cast<int64_t>(r.jws.size() + r.error.size());
}

}  // namespace

StatusOr<int64_t> SqliteStore::ReportBytes(std::string_view node_id) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  return ReportBytesLocked(*conn_, node_id);
}

StatusOr<int64_t> SqliteStore::InsertRefusedReport(const ReportRecord& report,
                                                   int64_t quota_bytes) {
  DPA_RETURN_IF_ERROR(ValidateReportRecord(report));
  if (report.accepted) {
    return InvalidArgumentError("InsertRefusedReport needs a refused report.");
  }
  if (report.jws.size() > kRefusedReportPrefixBytes ||
      report.error.size() > kMaxReportErrorBytes) {
    return InvalidArgumentError(
        "a refused report is stored as a bounded record: at most " +
        std::to_string(kRefusedReportPrefixBytes) + " bytes of body and " +
        std::to_string(kMaxReportErrorBytes) + " of error.");
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(int64_t used, ReportBytesLocked(*conn_, report.node_id));
  if (quota_bytes > 0 && used + StoredBytes(report) > quota_bytes) {
    return ResourceExhaustedError(QuotaMessage(report.node_id, used,
                                               quota_bytes) +
                                  "; the refused report is not stored.");
  }
  DPA_ASSIGN_OR_RETURN(int64_t id, InsertReportLocked(*conn_, report));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return id;
}

StatusOr<int64_t> SqliteStore::InsertResultSpendingNonceWithinQuota(
    const ResultRecord& result, const ReportRecord& report,
    std::string_view nonce, int64_t now, int64_t quota_bytes) {
  DPA_RETURN_IF_ERROR(ValidateResultRecord(result, report));
  const int64_t need = StoredBytes(report);
  if (quota_bytes > 0 && need > quota_bytes) {
    return ResourceExhaustedError(
        "report of " + std::to_string(need) + " bytes exceeds node " +
        Quoted(report.node_id) + "'s report storage quota of " +
        std::to_string(quota_bytes) + " bytes.");
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  // Any error below rolls back the spend, the pruning and the rows.
  DPA_RETURN_IF_ERROR(SpendNonceLocked(*conn_, nonce, result.node_id, now));
  if (quota_bytes > 0) {
    DPA_ASSIGN_OR_RETURN(int64_t used,
                         ReportBytesLocked(*conn_, report.node_id));
    while (used + need > quota_bytes) {
      DPA_ASSIGN_OR_RETURN(auto refused,
                           OldestRow(*conn_, kOldestRefused, report.node_id));
      if (refused) {
        DPA_RETURN_IF_ERROR(RunWithId(*conn_, kDeleteReport, refused->first,
                                      "deleting refused report"));
        used -= refused->second;
        continue;
      }
      DPA_ASSIGN_OR_RETURN(
          auto body, OldestRow(*conn_, kOldestAcceptedBody, report.node_id));
      if (!body) {
        return ResourceExhaustedError(QuotaMessage(report.node_id, used,
                                                   quota_bytes) +
                                      " and has nothing left to prune.");
      }
      DPA_RETURN_IF_ERROR(RunWithId(*conn_, kDropReportBody, body->first,
                                    "dropping report body"));
      used -= body->second;
    }
  }
  DPA_ASSIGN_OR_RETURN(int64_t result_id,
                       InsertResultLocked(*conn_, result, report));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return result_id;
}

StatusOr<PruneCounts> SqliteStore::PruneReports(const RetentionPolicy& policy,
                                                int64_t now) {
  if (policy.keep_reports < 0 || policy.keep_seconds < 0) {
    return InvalidArgumentError("retention limits must not be negative.");
  }
  std::optional<int64_t> cutoff;
  if (policy.keep_seconds > 0) cutoff = now - policy.keep_seconds;
  PruneCounts counts;
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  struct Candidate {
    int64_t result_id, report_id;
    bool keep;
  };
  std::vector<Candidate> candidates;
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kRetentionCandidates));
    stmt->Int(1, policy.keep_reports).OptionalInt(2, cutoff);
    while (true) {
      DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading results to prune"));
      if (!row) break;
      candidates.push_back(
          {stmt->ColInt(0), stmt->ColInt(1), stmt->ColInt(2) != 0});
    }
  }
  for (const Candidate& c : candidates) {
    if (c.keep) {
      DPA_RETURN_IF_ERROR(RunWithId(*conn_, kDropReportBody, c.report_id,
                                    "dropping report body"));
      counts.bodies_dropped += sqlite3_changes64(conn_->db());
      continue;
    }
    DPA_RETURN_IF_ERROR(
        RunWithId(*conn_, kDeleteResult, c.result_id, "deleting result"));
    DPA_RETURN_IF_ERROR(
        RunWithId(*conn_, kDeleteReport, c.report_id, "deleting report"));
    ++counts.results_deleted;
  }
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kPruneRefused));
    stmt->Int(1, policy.keep_reports).OptionalInt(2, cutoff);
    DPA_RETURN_IF_ERROR(stmt->Run("deleting refused reports"));
    counts.refused_deleted = sqlite3_changes64(conn_->db());
  }
  DPA_RETURN_IF_ERROR(txn->Commit());
  return counts;
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

StatusOr<ReportRecord> SqliteStore::GetAcceptedReport(
    std::string_view node_id, std::string_view sha256) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kSelectAcceptedReport));
  stmt->Text(1, node_id).Text(2, sha256);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading report"));
  if (!row) {
    return NotFoundError("no accepted report " + Quoted(sha256) +
                         " of node " + Quoted(node_id) + " is stored.");
  }
  ReportRecord r;
  r.id = stmt->ColInt(0);
  r.node_id = stmt->ColText(1);
  r.jws = stmt->ColBlob(2);
  r.sha256 = stmt->ColText(3);
  r.received_at = stmt->ColInt(4);
  r.accepted = true;
  return r;
}

StatusOr<int64_t> SqliteStore::InsertReappraisal(const ResultRecord& result) {
  ReportRecord probe;
  probe.node_id = result.node_id;
  probe.sha256 = result.report_jws_sha256;
  probe.accepted = true;
  DPA_RETURN_IF_ERROR(ValidateResultRecord(result, probe));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  int64_t report_id = 0;
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kSelectAcceptedReport));
    stmt->Text(1, result.node_id).Text(2, result.report_jws_sha256);
    DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading report"));
    if (!row) {
      return NotFoundError("no accepted report " +
                           Quoted(result.report_jws_sha256) + " of node " +
                           Quoted(result.node_id) + " is stored.");
    }
    report_id = stmt->ColInt(0);
  }
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kInsertResult));
  stmt->Text(1, result.node_id)
      .Int(2, report_id)
      .Text(3, result.decision)
      .Text(4, result.ear_jwt)
      .Text(5, result.reasons_json)
      .Text(6, result.report_jws_sha256)
      .Int(7, result.created_at)
      .Int(8, result.expires_at);
  DPA_RETURN_IF_ERROR(stmt->Run("inserting result"));
  int64_t id = static_cast<int64_t>(sqlite3_last_insert_rowid(conn_->db()));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return id;
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
      return InvalidArgumentError("model " + strict_json::Quote(model) +
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
        "release " + strict_json::Quote(release) + " is " +
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
    return NotFoundError("no " + strict_json::Quote(kind) +
                         " release recorded for node " +
                         strict_json::Quote(node_id) + ".");
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

Status CheckNodeWithTpmBinding(const NodeRecord& node,
                               const TpmBinding& binding) {
  DPA_RETURN_IF_ERROR(ValidateNodeRecord(node));
  DPA_RETURN_IF_ERROR(ValidatePendingTpmBinding(binding));
  if (binding.node_id != node.node_id) {
    return InvalidArgumentError("TPM binding is for node " +
                                Quoted(binding.node_id) + ", not " +
                                Quoted(node.node_id) + ".");
  }
  return OkStatus();
}

// The body of CreateNodeWithTpmBinding, inside the caller's transaction
// (also run by EnrollNode).
StatusOr<NodeRecord> CreateNodeWithTpmBindingLocked(
    SqliteConnection& c, const NodeRecord& node, const TpmBinding& binding,
    std::optional<int64_t> approve_at, EnrollAuthority authority) {
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> existing,
                       FindNode(c, node.node_id));
  DPA_ASSIGN_OR_RETURN(NodeRecord stored, CreateNodeLocked(c, node));
  if (existing && authority == EnrollAuthority::kNone) {
    DPA_RETURN_IF_ERROR(CheckUnvouchedTpmEnrollment(c, *existing, binding));
  }
  DPA_RETURN_IF_ERROR(PutTpmBindingLocked(c, binding));
  if (approve_at && stored.state == NodeState::kPending) {
    stored.state = NodeState::kApproved;
    stored.approved_at = *approve_at;
    DPA_RETURN_IF_ERROR(SetNodeState(c, stored));
  }
  return stored;
}

}  // namespace

StatusOr<NodeRecord> SqliteStore::CreateNodeWithTpmBinding(
    const NodeRecord& node, const TpmBinding& binding,
    std::optional<int64_t> approve_at, EnrollAuthority authority) {
  DPA_RETURN_IF_ERROR(CheckNodeWithTpmBinding(node, binding));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  // Any error below rolls back the node with the binding (~Transaction).
  DPA_ASSIGN_OR_RETURN(
      NodeRecord stored,
      CreateNodeWithTpmBindingLocked(*conn_, node, binding, approve_at,
                                     authority));
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

// --- Enrollment and identity (issue 12) -------------------------------------

namespace {

// Removes a node with what hangs off it (TPM binding, details, nonces,
// release records). Used for pending nodes only, which have no results; a
// node with results fails on the foreign key and the caller rolls back.
Status DeleteNodeLocked(SqliteConnection& c, std::string_view node_id) {
  for (const char* sql : {kDeleteTpmBindingOf, kDeleteNodeDetails,
                          kDeleteNoncesOf, kDeleteNodeReleasesOf,
                          kDeleteNode}) {
    DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(sql));
    stmt->Text(1, node_id);
    DPA_RETURN_IF_ERROR(stmt->Run("removing node"));
  }
  return OkStatus();
}

Status DeleteTpmBindingLocked(SqliteConnection& c, std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kDeleteTpmBindingOf));
  stmt->Text(1, node_id);
  return stmt->Run("removing TPM binding");
}

// Rewrites the key columns and state of an existing node row.
Status ReplaceNodeKeyLocked(SqliteConnection& c, const NodeRecord& n) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(kReplaceNodeKey));
  stmt->Text(1, n.node_id)
      .Text(2, n.public_key_pem)
      .Text(3, n.key_thumbprint)
      .Text(4, n.alg)
      .Text(5, NodeStateName(n.state))
      .Int(6, n.enrolled_at)
      .OptionalInt(7, n.approved_at);
  return stmt->Run("replacing node key");
}

bool PendingExpired(const NodeRecord& n, int64_t now, int64_t ttl) {
  return n.state == NodeState::kPending && ttl > 0 && n.enrolled_at <= now - ttl;
}

std::string RevocationText(const NodeRecord& n) {
  return "revoked at " + std::to_string(n.revoked_at.value_or(0)) + " by " +
         Quoted(n.revoked_by) + " (" + n.revoke_reason + ")";
}

std::string ClaimedSerialText(const NodeRecord& n) {
  return n.claimed_serial.empty() ? "no serial claimed"
                                  : "claimed serial " + Quoted(n.claimed_serial);
}

StatusOr<EnrollmentToken> TokenFromRow(const Stmt& s) {
  EnrollmentToken t;
  t.token_sha256 = s.ColText(0);
  t.token_id = s.ColText(1);
  t.node_id = s.ColText(2);
  t.serial = s.ColText(3);
  t.created_by = s.ColText(4);
  t.created_at = s.ColInt(5);
  t.expires_at = s.ColInt(6);
  if (!s.ColIsNull(7)) t.used_at = s.ColInt(7);
  t.used_key_thumbprint = s.ColText(8);
  if (!s.ColIsNull(9)) t.revoked_at = s.ColInt(9);
  t.revoked_by = s.ColText(10);
  if (t.token_sha256.size() != 64 || t.token_id != t.token_sha256.substr(0, 16)) {
    return DataLossError("sqlite: enrollment token " + Quoted(t.token_id) +
                         " is corrupt.");
  }
  return t;
}

StatusOr<std::optional<EnrollmentToken>> FindToken(SqliteConnection& c,
                                                   const char* sql,
                                                   std::string_view key) {
  DPA_ASSIGN_OR_RETURN(auto stmt, c.Prepare(sql));
  stmt->Text(1, key);
  DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading enrollment token"));
  if (!row) return std::optional<EnrollmentToken>();
  DPA_ASSIGN_OR_RETURN(EnrollmentToken t, TokenFromRow(*stmt));
  return std::optional<EnrollmentToken>(std::move(t));
}

Status TokenNotKnown() {
  return NotFoundError("enrollment token is not known.");
}

}  // namespace

StatusOr<NodeRecord> SqliteStore::EnrollNode(
    const NodeRecord& node, const std::optional<TpmBinding>& binding,
    const EnrollGrant& grant) {
  if (binding) {
    DPA_RETURN_IF_ERROR(CheckNodeWithTpmBinding(node, *binding));
  } else {
    DPA_RETURN_IF_ERROR(ValidateNodeRecord(node));
  }
  if (!grant.token_sha256.empty() &&
      grant.authority != EnrollAuthority::kBootstrapToken) {
    return InvalidArgumentError(
        "an enrollment token grant must have authority kBootstrapToken.");
  }
  if (node.state != NodeState::kPending || node.approved_at ||
      node.revoked_at) {
    return InvalidArgumentError(
        "EnrollNode takes a pending node; the grant approves it.");
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  // Every refusal below returns before Commit: ~Transaction rolls back, so
  // nothing is stored and the token stays unspent.
  const std::string& id = node.node_id;
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> existing,
                       FindNode(*conn_, id));
  if (existing &&
      PendingExpired(*existing, grant.now, grant.pending_ttl_seconds)) {
    DPA_RETURN_IF_ERROR(DeleteNodeLocked(*conn_, id));
    DPA_RETURN_IF_ERROR(AddNodeEvent(
        *conn_, id, grant.now, "expired", "",
        "pending enrollment with key " + existing->key_thumbprint +
            " expired unapproved; the id is free again."));
    existing.reset();
  }
  std::optional<EnrollmentToken> token;
  std::string actor = grant.actor;
  if (!grant.token_sha256.empty()) {
    DPA_ASSIGN_OR_RETURN(token,
                         FindToken(*conn_, kSelectToken, grant.token_sha256));
    if (!token) return UnauthenticatedError("enrollment token is not valid.");
    DPA_RETURN_IF_ERROR(
        CheckEnrollmentToken(*token, id, node.claimed_serial, grant.now));
    actor = "enrollment token " + token->token_id + " (issued by " +
            token->created_by + ")";
  }
  NodeRecord fresh = node;
  fresh.enrolled_at = grant.now;
  if (existing && existing->state == NodeState::kRevoked) {
    if (!token) {
      return PermissionDeniedError(
          "node " + Quoted(id) + " was " + RevocationText(*existing) +
          "; re-enrolling it needs a per-node enrollment token issued by an "
          "admin (dpuaudit tokens issue " + id + ").");
    }
    // Admin re-enrollment: the new key, no TPM binding, state reset to
    // pending (approved below by the token); the revocation stays in the
    // history.
    DPA_RETURN_IF_ERROR(DeleteTpmBindingLocked(*conn_, id));
    DPA_RETURN_IF_ERROR(ReplaceNodeKeyLocked(*conn_, fresh));
    {
      // Results of the old key never admit the new one.
      DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kMaxResultIdOf));
      stmt->Text(1, id);
      DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading results of node"));
      fresh.stale_result_id = row ? stmt->ColInt(0) : 0;
    }
    DPA_RETURN_IF_ERROR(PutNodeDetails(*conn_, fresh));
    DPA_RETURN_IF_ERROR(AddNodeEvent(
        *conn_, id, grant.now, "re_enrolled", actor,
        "re-enrolled after it was " + RevocationText(*existing) + "; key " +
            existing->key_thumbprint + " replaced by " + node.key_thumbprint +
            "."));
    DPA_ASSIGN_OR_RETURN(existing, FindNode(*conn_, id));
  } else if (existing && token &&
             existing->key_thumbprint != node.key_thumbprint) {
    if (existing->state != NodeState::kPending || existing->approved_at) {
      return AlreadyExistsError(
          "node " + Quoted(id) + " is approved with another key (" +
          existing->key_thumbprint + "); revoke it first (dpuaudit nodes "
          "revoke " + id + "), then enroll it with a new per-node token.");
    }
    // The token holder takes the id over from a never-approved squatter:
    // key and TPM binding replaced in this transaction.
    DPA_RETURN_IF_ERROR(DeleteTpmBindingLocked(*conn_, id));
    DPA_RETURN_IF_ERROR(ReplaceNodeKeyLocked(*conn_, fresh));
    DPA_RETURN_IF_ERROR(PutNodeDetails(*conn_, fresh));
    DPA_RETURN_IF_ERROR(AddNodeEvent(
        *conn_, id, grant.now, "key_replaced", actor,
        "pending key " + existing->key_thumbprint + " (" +
            ClaimedSerialText(*existing) + ") replaced by " +
            node.key_thumbprint + "."));
    DPA_ASSIGN_OR_RETURN(existing, FindNode(*conn_, id));
  }
  if (!existing && grant.authority == EnrollAuthority::kNone &&
      grant.max_pending > 0) {
    int64_t after = grant.pending_ttl_seconds > 0
                        ? grant.now - grant.pending_ttl_seconds
                        : std::numeric_limits<int64_t>::min();
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kCountPending));
    stmt->Int(1, after);
    DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("counting pending nodes"));
    int64_t pending = row ? stmt->ColInt(0) : 0;
    if (pending >= grant.max_pending) {
      return UnavailableError(
          "the verifier holds " + std::to_string(pending) +
          " pending enrollments, its limit; approve or reject some "
          "(dpuaudit-verifier nodes list), let them expire, or enroll with a "
          "per-node enrollment token.");
    }
  }
  std::optional<int64_t> approve_at;
  if (grant.authority == EnrollAuthority::kBootstrapToken) {
    approve_at = grant.now;
  }
  NodeRecord stored;
  if (binding) {
    DPA_ASSIGN_OR_RETURN(
        stored, CreateNodeWithTpmBindingLocked(*conn_, fresh, *binding,
                                               approve_at, grant.authority));
  } else {
    DPA_ASSIGN_OR_RETURN(stored, CreateNodeLocked(*conn_, fresh));
    if (approve_at && stored.state == NodeState::kPending) {
      stored.state = NodeState::kApproved;
      stored.approved_at = *approve_at;
      DPA_RETURN_IF_ERROR(SetNodeState(*conn_, stored));
    }
  }
  if (!existing) {
    DPA_RETURN_IF_ERROR(AddNodeEvent(
        *conn_, id, grant.now, "enrolled", actor,
        "enrolled with key " + node.key_thumbprint + " (" +
            ClaimedSerialText(node) + ")" +
            (binding ? " and a TPM" : "") + "."));
  }
  bool approved_now =
      approve_at && stored.state == NodeState::kApproved &&
      stored.approved_at == approve_at &&
      (!existing || existing->state == NodeState::kPending);
  if (approved_now) {
    stored.approved_by = actor;
    if (token && !token->serial.empty()) stored.device_serial = token->serial;
    DPA_RETURN_IF_ERROR(PutNodeDetails(*conn_, stored));
    DPA_RETURN_IF_ERROR(AddNodeEvent(
        *conn_, id, grant.now, "approved", actor,
        "approved key " + stored.key_thumbprint +
            (stored.device_serial.empty()
                 ? std::string(" (no device serial pinned)")
                 : " pinned to device serial " + Quoted(stored.device_serial)) +
            "."));
  }
  if (token) {
    {
      DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kSpendToken));
      stmt->Text(1, token->token_sha256)
          .Int(2, grant.now)
          .Text(3, stored.key_thumbprint);
      DPA_RETURN_IF_ERROR(stmt->Run("spending enrollment token"));
    }
    if (sqlite3_changes64(conn_->db()) != 1) {
      return InternalError("sqlite: enrollment token " + token->token_id +
                           " could not be spent.");
    }
  }
  DPA_RETURN_IF_ERROR(txn->Commit());
  return stored;
}

StatusOr<NodeRecord> SqliteStore::ApproveEnrollment(
    std::string_view node_id, const ApprovalRequest& req) {
  if (req.by.empty()) {
    return InvalidArgumentError("who approves (--by) is required.");
  }
  if (req.key_thumbprint.empty()) {
    return InvalidArgumentError(
        "the key thumbprint to approve (--thumbprint) is required.");
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn_, node_id));
  if (!node) return NodeNotEnrolled(node_id);
  if (node->state == NodeState::kRevoked) {
    return FailedPreconditionError(
        "node " + Quoted(node_id) + " was " + RevocationText(*node) +
        "; it cannot be approved (re-enroll it with a per-node enrollment "
        "token).");
  }
  if (node->key_thumbprint != req.key_thumbprint) {
    return FailedPreconditionError(
        "node " + Quoted(node_id) + " is enrolled with key thumbprint " +
        node->key_thumbprint + " (" + ClaimedSerialText(*node) +
        "), not " + req.key_thumbprint +
        "; refusing to approve it. If that key is not your device's, reject "
        "it (dpuaudit-verifier reject " + std::string(node_id) +
        ") and enroll the device with a per-node enrollment token.");
  }
  if (node->state == NodeState::kApproved) {
    if (!req.serial.empty() && req.serial != node->device_serial) {
      return FailedPreconditionError(
          "node " + Quoted(node_id) + " is approved with device serial " +
          Quoted(node->device_serial) + ", not " + Quoted(req.serial) + ".");
    }
    return *std::move(node);
  }
  if (PendingExpired(*node, req.now, req.pending_ttl_seconds)) {
    return DeadlineExceededError(
        "the pending enrollment of node " + Quoted(node_id) + " expired at " +
        std::to_string(node->enrolled_at + req.pending_ttl_seconds) +
        "; the device must enroll again.");
  }
  if (!req.serial.empty() && !node->claimed_serial.empty() &&
      req.serial != node->claimed_serial) {
    return FailedPreconditionError(
        "node " + Quoted(node_id) + " claims device serial " +
        Quoted(node->claimed_serial) + ", not " + Quoted(req.serial) +
        "; refusing to approve it.");
  }
  node->state = NodeState::kApproved;
  node->approved_at = req.now;
  node->approved_by = req.by;
  node->device_serial = req.serial.empty() ? node->claimed_serial : req.serial;
  DPA_RETURN_IF_ERROR(SetNodeState(*conn_, *node));
  DPA_RETURN_IF_ERROR(PutNodeDetails(*conn_, *node));
  DPA_RETURN_IF_ERROR(AddNodeEvent(
      *conn_, node_id, req.now, "approved", req.by,
      "approved key " + node->key_thumbprint +
          (node->device_serial.empty()
               ? std::string(" (no device serial pinned)")
               : " pinned to device serial " + Quoted(node->device_serial)) +
          (req.reason.empty() ? std::string() : ": " + req.reason) + "."));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return *std::move(node);
}

Status SqliteStore::RejectNode(std::string_view node_id, std::string_view by,
                               std::string_view reason, int64_t now) {
  if (by.empty()) return InvalidArgumentError("who rejects (--by) is required.");
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn_, node_id));
  if (!node) return NodeNotEnrolled(node_id);
  if (node->state != NodeState::kPending) {
    return FailedPreconditionError(
        "node " + Quoted(node_id) + " is " +
        std::string(NodeStateName(node->state)) +
        "; only a pending node can be rejected (use revoke).");
  }
  DPA_RETURN_IF_ERROR(DeleteNodeLocked(*conn_, node_id));
  DPA_RETURN_IF_ERROR(AddNodeEvent(
      *conn_, node_id, now, "rejected", by,
      "pending key " + node->key_thumbprint + " (" + ClaimedSerialText(*node) +
          ") rejected and removed" +
          (reason.empty() ? std::string() : ": " + std::string(reason)) + "."));
  return txn->Commit();
}

StatusOr<NodeRecord> SqliteStore::RevokeNodeFor(std::string_view node_id,
                                                std::string_view by,
                                                std::string_view reason,
                                                int64_t now) {
  if (by.empty()) return InvalidArgumentError("who revokes (by) is required.");
  if (reason.empty()) {
    return InvalidArgumentError("why (reason) is required to revoke a node.");
  }
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn_, node_id));
  if (!node) return NodeNotEnrolled(node_id);
  if (node->state == NodeState::kRevoked) return *std::move(node);
  std::string was(NodeStateName(node->state));
  node->state = NodeState::kRevoked;
  node->revoked_at = now;
  node->revoked_by = std::string(by);
  node->revoke_reason = std::string(reason);
  DPA_RETURN_IF_ERROR(SetNodeState(*conn_, *node));
  DPA_RETURN_IF_ERROR(PutNodeDetails(*conn_, *node));
  {
    // Tokens issued before the revocation die with it: re-enrolling needs
    // a token issued after it.
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kRevokeTokensOfNode));
    stmt->Text(1, node_id).Int(2, now).Text(3, "revocation of the node by " +
                                                   std::string(by));
    DPA_RETURN_IF_ERROR(stmt->Run("revoking the node's enrollment tokens"));
  }
  DPA_RETURN_IF_ERROR(AddNodeEvent(*conn_, node_id, now, "revoked", by,
                                   "revoked (was " + was + ", key " +
                                       node->key_thumbprint +
                                       "): " + std::string(reason) + "."));
  DPA_RETURN_IF_ERROR(txn->Commit());
  return *std::move(node);
}

StatusOr<int64_t> SqliteStore::PurgeExpiredPendingNodes(int64_t now,
                                                        int64_t ttl_seconds) {
  if (ttl_seconds <= 0) return 0;
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  std::vector<std::string> ids;
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kListExpiredPending));
    stmt->Int(1, now - ttl_seconds);
    while (true) {
      DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("listing expired pending"));
      if (!row) break;
      ids.push_back(stmt->ColText(0));
    }
  }
  for (const std::string& id : ids) {
    DPA_RETURN_IF_ERROR(DeleteNodeLocked(*conn_, id));
    DPA_RETURN_IF_ERROR(AddNodeEvent(
        *conn_, id, now, "expired", "",
        "pending enrollment expired unapproved and was removed."));
  }
  DPA_RETURN_IF_ERROR(txn->Commit());
  return static_cast<int64_t>(ids.size());
}

StatusOr<std::vector<NodeEvent>> SqliteStore::NodeHistory(
    std::string_view node_id) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kSelectNodeEvents));
  stmt->Text(1, node_id);
  std::vector<NodeEvent> out;
  while (true) {
    DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("reading node history"));
    if (!row) break;
    NodeEvent e;
    e.id = stmt->ColInt(0);
    e.node_id = stmt->ColText(1);
    e.at = stmt->ColInt(2);
    e.event = stmt->ColText(3);
    e.actor = stmt->ColText(4);
    e.detail = stmt->ColText(5);
    out.push_back(std::move(e));
  }
  return out;
}

Status SqliteStore::PutEnrollmentToken(const EnrollmentToken& token) {
  DPA_RETURN_IF_ERROR(ValidateEnrollmentToken(token));
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kInsertToken));
  stmt->Text(1, token.token_sha256)
      .Text(2, token.token_id)
      .Text(3, token.node_id)
      .Text(4, token.serial)
      .Text(5, token.created_by)
      .Int(6, token.created_at)
      .Int(7, token.expires_at);
  Status s = stmt->Run("storing enrollment token");
  if (stmt->last_rc() == SQLITE_CONSTRAINT_PRIMARYKEY ||
      stmt->last_rc() == SQLITE_CONSTRAINT_UNIQUE) {
    return AlreadyExistsError("enrollment token " + token.token_id +
                              " is already stored.");
  }
  return s;
}

StatusOr<EnrollmentToken> SqliteStore::GetEnrollmentToken(
    std::string_view token_sha256) {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(std::optional<EnrollmentToken> t,
                       FindToken(*conn_, kSelectToken, token_sha256));
  if (!t) return TokenNotKnown();
  return *std::move(t);
}

StatusOr<std::vector<EnrollmentToken>> SqliteStore::ListEnrollmentTokens() {
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kListTokens));
  std::vector<EnrollmentToken> out;
  while (true) {
    DPA_ASSIGN_OR_RETURN(bool row, stmt->Step("listing enrollment tokens"));
    if (!row) break;
    DPA_ASSIGN_OR_RETURN(EnrollmentToken t, TokenFromRow(*stmt));
    out.push_back(std::move(t));
  }
  return out;
}

StatusOr<EnrollmentToken> SqliteStore::RevokeEnrollmentToken(
    std::string_view token_id, std::string_view by, int64_t now) {
  if (by.empty()) return InvalidArgumentError("who revokes (by) is required.");
  std::lock_guard<std::mutex> lock(conn_->mu());
  DPA_ASSIGN_OR_RETURN(auto txn, Transaction::Begin(*conn_));
  DPA_ASSIGN_OR_RETURN(std::optional<EnrollmentToken> t,
                       FindToken(*conn_, kSelectTokenById, token_id));
  if (!t) {
    return NotFoundError("enrollment token " + Quoted(token_id) +
                         " is not known.");
  }
  if (t->used_at) {
    return FailedPreconditionError(
        "enrollment token " + t->token_id + " was used at " +
        std::to_string(*t->used_at) + " (node " + Quoted(t->node_id) +
        "); revoke the node instead.");
  }
  if (t->revoked_at) return *std::move(t);
  {
    DPA_ASSIGN_OR_RETURN(auto stmt, conn_->Prepare(kRevokeToken));
    stmt->Text(1, token_id).Int(2, now).Text(3, by);
    DPA_RETURN_IF_ERROR(stmt->Run("revoking enrollment token"));
  }
  t->revoked_at = now;
  t->revoked_by = std::string(by);
  DPA_RETURN_IF_ERROR(txn->Commit());
  return *std::move(t);
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
