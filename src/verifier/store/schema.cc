#include "verifier/store/schema.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace dpuaudit::verifier::sqlite {
namespace {

// "DPA1": marks the file as a dpuaudit store (PRAGMA application_id).
constexpr int kApplicationId = 0x44504131;
static_assert(kSchemaVersion == 1,
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

// Reference values (verifier/refvals/model.h), added to schema 1 without a
// version bump: every statement is idempotent, so it runs on new and old
// files.
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

// Hardware-path records (issue 14), added to schema 1 the same way: a
// node's BMC/IRoT binding and its SPDM measurement baselines, one row per
// (node, kind), the value as the verifier wrote it.
constexpr const char* kSchemaHardware = R"sql(
CREATE TABLE IF NOT EXISTS hardware_records (
  node_id    TEXT NOT NULL REFERENCES nodes(node_id),
  kind       TEXT NOT NULL,
  value_json TEXT NOT NULL,
  set_at     INTEGER NOT NULL,
  set_by     TEXT NOT NULL,
  reason     TEXT NOT NULL,
  PRIMARY KEY (node_id, kind)
) STRICT;
)sql";
constexpr const char* kCountHardwareObjects =
    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = "
    "'hardware_records'";

// Node status, decision events and the webhook outbox (issue 15), added to
// schema 1 the same way. Events have no foreign key: they outlive a removed
// node, like node_events.
constexpr const char* kSchemaStatus = R"sql(
CREATE TABLE IF NOT EXISTS node_status (
  node_id           TEXT PRIMARY KEY NOT NULL REFERENCES nodes(node_id),
  status            TEXT NOT NULL CHECK (status IN ('unattested', 'admitted',
                    'failed', 'stale', 'held', 'revoked')),
  since             INTEGER NOT NULL,
  last_decision     TEXT NOT NULL CHECK (last_decision IN ('', 'admit', 'deny')),
  last_appraisal_at INTEGER NOT NULL,
  last_admit_at     INTEGER NOT NULL,
  last_result_id    INTEGER NOT NULL,
  held_rules        TEXT NOT NULL,
  held_result_id    INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS node_status_by_activity
  ON node_status(status, last_appraisal_at);
CREATE TABLE IF NOT EXISTS decision_events (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id     TEXT NOT NULL UNIQUE,
  node_id      TEXT NOT NULL,
  type         TEXT NOT NULL,
  at           INTEGER NOT NULL,
  payload_json TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS decision_events_by_node ON decision_events(node_id, seq);
CREATE TABLE IF NOT EXISTS webhook_outbox (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id        TEXT NOT NULL REFERENCES decision_events(event_id),
  endpoint        TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  attempts        INTEGER NOT NULL,
  last_error      TEXT NOT NULL,
  last_attempt_at INTEGER,
  delivered_at    INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS webhook_outbox_due
  ON webhook_outbox(next_attempt_at) WHERE delivered_at IS NULL;
)sql";
constexpr const char* kCountStatusObjects =
    "SELECT count(*) FROM sqlite_schema WHERE "
    "(type = 'table' AND name IN "
    "('node_status', 'decision_events', 'webhook_outbox')) OR "
    "(type = 'index' AND name IN ('node_status_by_activity', "
    "'decision_events_by_node', 'webhook_outbox_due'))";

// Verifier signing keys (issue 15, keys part), added to schema 1 the same
// way: every key the verifier has signed EARs with, so the JWKS keeps
// publishing a previous key until every result it signed has expired.
constexpr const char* kSchemaSigningKeys = R"sql(
CREATE TABLE IF NOT EXISTS signing_keys (
  kid                    TEXT PRIMARY KEY NOT NULL,
  public_jwk             TEXT NOT NULL,
  first_used_at          INTEGER NOT NULL,
  last_used_at           INTEGER NOT NULL,
  max_result_ttl_seconds INTEGER NOT NULL,
  seq                    INTEGER NOT NULL UNIQUE
) STRICT;
)sql";
constexpr const char* kCountSigningKeyObjects =
    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = "
    "'signing_keys'";

// The hash-chained audit log (issue 16 §1, docs/audit.md), its signed
// checkpoints, the content-addressed collateral (policy documents and
// reference-value snapshots, by SHA-256) and each result's appraisal
// context, added to schema 1 the same way. A store made before them starts
// its chain at seq 1 when it is first opened by this build.
constexpr const char* kSchemaAuditLog = R"sql(
CREATE TABLE IF NOT EXISTS audit_log (
  seq        INTEGER PRIMARY KEY NOT NULL CHECK (seq >= 1),
  time       INTEGER NOT NULL,
  kind       TEXT NOT NULL,
  node_id    TEXT NOT NULL,
  entry      TEXT NOT NULL,
  prev_hash  TEXT NOT NULL,
  entry_hash TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS audit_log_by_node ON audit_log(node_id, seq);
CREATE TABLE IF NOT EXISTS audit_checkpoints (
  size      INTEGER PRIMARY KEY NOT NULL,
  head_hash TEXT NOT NULL,
  time      INTEGER NOT NULL,
  jws       TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS collateral (
  sha256        TEXT PRIMARY KEY NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('policy', 'refvals')),
  body          BLOB NOT NULL,
  first_used_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS result_contexts (
  result_id INTEGER PRIMARY KEY NOT NULL,
  context   TEXT NOT NULL
) STRICT;
)sql";
constexpr const char* kCountAuditLogObjects =
    "SELECT count(*) FROM sqlite_schema WHERE "
    "(type = 'table' AND name IN "
    "('audit_log', 'audit_checkpoints', 'collateral', 'result_contexts')) OR "
    "(type = 'index' AND name = 'audit_log_by_node')";

// Schema objects present, per later addition.
constexpr const char* kCountRefvalsTables =
    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN "
    "('ref_releases', 'ref_generation', 'node_releases')";
constexpr const char* kCountTpmBindingObjects =
    "SELECT count(*) FROM sqlite_schema WHERE "
    "(type = 'table' AND name = 'tpm_bindings') OR "
    "(type = 'index' AND name = 'tpm_bindings_active_ek')";
constexpr const char* kCountEnrollmentObjects =
    "SELECT count(*) FROM sqlite_schema WHERE "
    "(type = 'table' AND name IN "
    "('node_details', 'node_events', 'enrollment_tokens')) OR "
    "(type = 'index' AND name IN ('node_events_by_node', 'nodes_by_state'))";
constexpr const char* kCountStorageObjects =
    "SELECT (SELECT count(*) FROM pragma_table_info('reports') "
    "WHERE name = 'received_bytes') + (SELECT count(*) FROM sqlite_schema "
    "WHERE type = 'index' AND name IN ('nonces_by_node', 'results_by_report'))";

// Adds tables that joined schema 1 later (`ddl`, idempotent) to a file made
// before they existed: a no-op, without taking the write lock, when
// `count_sql` already counts `expected` schema objects.
Status EnsureAddedTables(Connection& c, const char* count_sql,
                         int64_t expected, const char* ddl,
                         std::string_view what) {
  DPA_ASSIGN_OR_RETURN(int64_t objects,
                       c.QueryInt(count_sql, "reading sqlite_schema"));
  if (objects == expected) return OkStatus();
  DPA_ASSIGN_OR_RETURN(Transaction txn, c.Begin());
  DPA_RETURN_IF_ERROR(c.ExecScript(ddl, what));
  return txn.Commit();
}

Status EnsureStorageColumns(Connection& c) {
  DPA_ASSIGN_OR_RETURN(int64_t objects,
                       c.QueryInt(kCountStorageObjects, "reading sqlite_schema"));
  if (objects == 3) return OkStatus();
  DPA_ASSIGN_OR_RETURN(Transaction txn, c.Begin());
  // Re-read under the write lock: another process may have added them.
  DPA_ASSIGN_OR_RETURN(objects,
                       c.QueryInt(kCountStorageObjects, "reading sqlite_schema"));
  if (objects == 3) return OkStatus();
  if (objects != 0) {
    return DataLossError(
        "sqlite: the reports table has only part of the storage-bound "
        "columns and indexes.");
  }
  DPA_RETURN_IF_ERROR(
      c.ExecScript(kSchemaStorage, "adding storage-bound columns"));
  return txn.Commit();
}

StatusOr<int64_t> UserVersion(Connection& c) {
  return c.QueryInt("PRAGMA user_version", "reading user_version");
}

}  // namespace

Status EnsureSchema(Connection& c) {
  DPA_ASSIGN_OR_RETURN(int64_t version, UserVersion(c));
  if (version == 0) {
    DPA_ASSIGN_OR_RETURN(Transaction txn, c.Begin());
    // Re-read under the write lock: another process may have won the race.
    DPA_ASSIGN_OR_RETURN(version, UserVersion(c));
    if (version == 0) {
      DPA_ASSIGN_OR_RETURN(int64_t tables,
                           c.QueryInt("SELECT count(*) FROM sqlite_schema",
                                      "reading sqlite_schema"));
      if (tables != 0) {
        return FailedPreconditionError(
            "sqlite: the database has tables but no dpuaudit schema version; "
            "refusing to use it.");
      }
      // Static DDL only; each script runs its statements in turn.
      DPA_RETURN_IF_ERROR(c.ExecScript(kSchemaV1, "creating schema"));
      DPA_RETURN_IF_ERROR(
          c.ExecScript(kSchemaRefvals, "creating reference value tables"));
      DPA_RETURN_IF_ERROR(
          c.ExecScript(kSchemaTpmBindings, "creating TPM binding tables"));
      DPA_RETURN_IF_ERROR(
          c.ExecScript(kSchemaEnrollment, "creating enrollment tables"));
      DPA_RETURN_IF_ERROR(
          c.ExecScript(kSchemaHardware, "creating hardware record tables"));
      DPA_RETURN_IF_ERROR(
          c.ExecScript(kSchemaStatus, "creating node status tables"));
      DPA_RETURN_IF_ERROR(
          c.ExecScript(kSchemaSigningKeys, "creating signing key table"));
      DPA_RETURN_IF_ERROR(
          c.ExecScript(kSchemaAuditLog, "creating audit log tables"));
      DPA_RETURN_IF_ERROR(txn.Commit());
      return EnsureStorageColumns(c);
    }
  }
  if (version != kSchemaVersion) {
    return FailedPreconditionError(
        "sqlite: schema version " + std::to_string(version) +
        " is not supported by this build (expects " +
        std::to_string(kSchemaVersion) + ").");
  }
  DPA_ASSIGN_OR_RETURN(
      int64_t app_id,
      c.QueryInt("PRAGMA application_id", "reading application_id"));
  if (app_id != kApplicationId) {
    return FailedPreconditionError(
        "sqlite: the database is not a dpuaudit store (application_id " +
        std::to_string(app_id) + ").");
  }
  DPA_RETURN_IF_ERROR(EnsureAddedTables(c, kCountRefvalsTables, 3,
                                        kSchemaRefvals,
                                        "creating reference value tables"));
  DPA_RETURN_IF_ERROR(EnsureAddedTables(c, kCountTpmBindingObjects, 2,
                                        kSchemaTpmBindings,
                                        "creating TPM binding tables"));
  DPA_RETURN_IF_ERROR(EnsureAddedTables(c, kCountEnrollmentObjects, 5,
                                        kSchemaEnrollment,
                                        "creating enrollment tables"));
  DPA_RETURN_IF_ERROR(EnsureAddedTables(c, kCountHardwareObjects, 1,
                                        kSchemaHardware,
                                        "creating hardware record tables"));
  DPA_RETURN_IF_ERROR(EnsureAddedTables(c, kCountStatusObjects, 6,
                                        kSchemaStatus,
                                        "creating node status tables"));

  DPA_RETURN_IF_ERROR(EnsureAddedTables(c, kCountSigningKeyObjects, 1,
                                        kSchemaSigningKeys,
                                        "creating signing key table"));
  DPA_RETURN_IF_ERROR(EnsureAddedTables(c, kCountAuditLogObjects, 5,
                                        kSchemaAuditLog,
                                        "creating audit log tables"));
  return EnsureStorageColumns(c);
}

}  // namespace dpuaudit::verifier::sqlite
