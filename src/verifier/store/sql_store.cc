#include "verifier/store/sql_store.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/sqlite_status.h"

#include <algorithm>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/strict_json.h"
#include "verifier/store/schema.h"
#include "verifier/store/sqlite.h"
#include "verifier/store/sqlite_audit.h"
#include "verifier/audit_chain.h"
#include "common/crypto.h"

namespace dpuaudit::verifier {

static_assert(SqliteStore::kSchemaVersion == sqlite::kSchemaVersion,
              "SqliteStore::kSchemaVersion is the schema's version");

namespace {

using sql::Blob;
using sql::Connection;
using sql::Constraint;
using sql::Dialect;
using sql::Stmt;
using sql::Transaction;

// SQL text, in one place. Each is prepared once per connection.
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
    "SELECT node_id, issued_at, expires_at, used_at IS NOT NULL FROM nonces "
    "WHERE nonce = ?1";
constexpr const char* kPurgeNonces =
    "DELETE FROM nonces WHERE expires_at <= ?1";
constexpr const char* kInsertReport =
    "INSERT INTO reports (node_id, jws, sha256, received_at, accepted, error, "
    "received_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
constexpr const char* kCountOutstandingNonces =
    "SELECT count(*) FROM nonces WHERE node_id = ?1 AND used_at IS NULL "
    "AND expires_at > ?2";
constexpr const char* kEvictOldestNoncesSqlite =
    "DELETE FROM nonces WHERE rowid IN (SELECT rowid FROM nonces "
    "WHERE node_id = ?1 AND used_at IS NULL AND expires_at > ?2 "
    "ORDER BY issued_at, rowid LIMIT ?3)";
// PostgreSQL has no rowid: nonces.id is the insertion order.
constexpr const char* kEvictOldestNoncesPg =
    "DELETE FROM nonces WHERE id IN (SELECT id FROM nonces "
    "WHERE node_id = ?1 AND used_at IS NULL AND expires_at > ?2 "
    "ORDER BY issued_at, id LIMIT ?3)";
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
constexpr const char* kDeleteResultContext =
    "DELETE FROM result_contexts WHERE result_id = ?1";
// Keeps the received size when the body goes (UPDATE reads old values).
constexpr const char* kDropReportBodySqlite =
    "UPDATE reports SET received_bytes = CASE WHEN received_bytes = 0 THEN "
    "length(jws) ELSE received_bytes END, jws = x'' "
    "WHERE id = ?1 AND length(jws) > 0";
constexpr const char* kDropReportBodyPg =
    "UPDATE reports SET received_bytes = CASE WHEN received_bytes = 0 THEN "
    "length(jws) ELSE received_bytes END, jws = ''::bytea "
    "WHERE id = ?1 AND length(jws) > 0";

// The statement text for `c`'s dialect, where the two differ.
const char* ForDialect(const Connection& c, const char* sqlite_text,
                       const char* pg_text) {
  return c.dialect() == Dialect::kPostgres ? pg_text : sqlite_text;
}
// Per result but each node's latest: its place in its node's history
// (RetentionCandidate). The WHERE clause only narrows the rows to those
// outside the limits (?1 latest per node, older than ?2; 0 / NULL turns a
// limit off); RetentionActionFor decides.
constexpr const char* kRetentionCandidates =
    "WITH r AS (SELECT id, report_id, decision, created_at, "
    "lag(decision) OVER (PARTITION BY node_id ORDER BY created_at, id) "
    "AS prev, row_number() OVER (PARTITION BY node_id "
    "ORDER BY created_at DESC, id DESC) AS rn FROM results) "
    "SELECT id, report_id, rn, decision, prev, created_at "
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
constexpr const char* kSelectHardwareRecord =
    "SELECT node_id, kind, value_json, set_at, set_by, reason "
    "FROM hardware_records WHERE node_id = ?1 AND kind = ?2";
constexpr const char* kUpsertHardwareRecord =
    "INSERT INTO hardware_records (node_id, kind, value_json, set_at, set_by, "
    "reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (node_id, kind) DO "
    "UPDATE SET value_json = excluded.value_json, set_at = excluded.set_at, "
    "set_by = excluded.set_by, reason = excluded.reason";
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
constexpr const char* kSelectActiveEkOwner =
    "SELECT node_id FROM tpm_bindings WHERE ek_sha256 = ?1 "
    "AND state = 'active' AND node_id <> ?2";
constexpr const char* kLatestResult =
    "SELECT id, node_id, decision, ear_jwt, reasons_json, report_jws_sha256, "
    "created_at, expires_at FROM results WHERE node_id = ?1 "
    "ORDER BY id DESC LIMIT 1";


// --- Rows --------------------------------------------------------------------

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

StatusOr<NodeRecord> NodeFromRow(const Stmt& s) {
  NodeRecord n;
  std::string state_name;
  s.Read(n.node_id, n.public_key_pem, n.key_thumbprint, n.alg, state_name,
         n.enrolled_at, n.approved_at, n.device_serial, n.claimed_serial,
         n.claimed_psid, n.claimed_model, n.approved_by, n.revoked_at,
         n.revoked_by, n.revoke_reason, n.stale_result_id);
  std::optional<NodeState> state = ParseNodeState(state_name);
  if (!state) {
    return DataLossError("sqlite: node " + Quoted(n.node_id) +
                         " has unknown state " + Quoted(state_name) + ".");
  }
  n.state = *state;
  return n;
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

// A tpm_bindings row, re-validated: a row that fails is DATA_LOSS.
StatusOr<TpmBinding> TpmBindingFromRow(const Stmt& s) {
  TpmBinding b;
  std::string state;
  s.Read(b.node_id, b.ek_public_b64, b.ek_sha256, b.ek_cert_pem,
         b.ek_cert_issuer, b.ak_public_b64, b.ak_name_hex, state,
         b.credential_sha256, b.challenge_expires_at, b.created_at,
         b.activated_at);
  if (state == TpmBindingStateName(TpmBindingState::kPending)) {
    b.state = TpmBindingState::kPending;
  } else if (state == TpmBindingStateName(TpmBindingState::kActive)) {
    b.state = TpmBindingState::kActive;
  } else {
    return DataLossError("sqlite: TPM binding of node " + Quoted(b.node_id) +
                         " has unknown state " + Quoted(state) + ".");
  }
  Status valid = ValidateTpmBinding(b);
  if (!valid.ok()) {
    return DataLossError("sqlite: TPM binding of node " + Quoted(b.node_id) +
                         " is corrupt: " + valid.message());
  }
  return b;
}

StatusOr<HardwareRecord> HardwareRecordFromRow(const Stmt& s) {
  HardwareRecord r;
  s.Read(r.node_id, r.kind, r.value_json, r.set_at, r.set_by, r.reason);
  Status valid = ValidateHardwareRecord(r);
  if (!valid.ok()) {
    return DataLossError("sqlite: " + r.kind + " of node " + Quoted(r.node_id) +
                         " is corrupt: " + valid.message());
  }
  return r;
}

StatusOr<EnrollmentToken> TokenFromRow(const Stmt& s) {
  EnrollmentToken t;
  s.Read(t.token_sha256, t.token_id, t.node_id, t.serial, t.created_by,
         t.created_at, t.expires_at, t.used_at, t.used_key_thumbprint,
         t.revoked_at, t.revoked_by);
  if (t.token_sha256.size() != 64 || t.token_id != t.token_sha256.substr(0, 16)) {
    return DataLossError("sqlite: enrollment token " + Quoted(t.token_id) +
                         " is corrupt.");
  }
  return t;
}

ResultRecord ResultFromRow(const Stmt& s) {
  ResultRecord r;
  s.Read(r.id, r.node_id, r.decision, r.ear_jwt, r.reasons_json,
         r.report_jws_sha256, r.created_at, r.expires_at);
  return r;
}

ReportRecord AcceptedReportFromRow(const Stmt& s) {
  ReportRecord r;
  s.Read(r.id, r.node_id, sqlite::BlobInto{r.jws}, r.sha256, r.received_at);
  r.accepted = true;
  return r;
}

NodeEvent EventFromRow(const Stmt& s) {
  NodeEvent e;
  s.Read(e.id, e.node_id, e.at, e.event, e.actor, e.detail);
  return e;
}

StoredNonce NonceFromRow(const Stmt& s) {
  StoredNonce n;
  s.Read(n.node_id, n.issued_at, n.expires_at, n.used);
  return n;
}

std::string FirstText(const Stmt& s) { return s.ColText(0); }
int64_t FirstInt(const Stmt& s) { return s.ColInt(0); }

// --- Storage primitives (the caller holds the lock or a transaction) -------

StatusOr<std::optional<NodeRecord>> FindNode(Connection& c,
                                             std::string_view node_id) {
  return c.QueryOne(kSelectNode, "reading node", NodeFromRow, node_id);
}

StatusOr<std::optional<TpmBinding>> FindTpmBinding(Connection& c,
                                                   std::string_view node_id) {
  return c.QueryOne(kSelectTpmBinding, "reading TPM binding",
                    TpmBindingFromRow, node_id);
}

StatusOr<std::optional<RefRelease>> FindRelease(Connection& c,
                                                std::string_view label) {
  return c.QueryOne(kSelectRelease, "reading reference release",
                    ReleaseFromRow, label);
}

StatusOr<std::optional<EnrollmentToken>> FindToken(Connection& c,
                                                   const char* sql,
                                                   std::string_view key) {
  return c.QueryOne(sql, "reading enrollment token", TokenFromRow, key);
}

// The node other than `node_id` whose active binding holds `ek_sha256`.
StatusOr<std::optional<std::string>> ActiveEkOwner(Connection& c,
                                                   std::string_view ek_sha256,
                                                   std::string_view node_id) {
  return c.QueryOne(kSelectActiveEkOwner, "reading TPM bindings by EK",
                    FirstText, ek_sha256, node_id);
}

// TpmBoundToNodeError when the EK is active on another node.
Status CheckEkFree(Connection& c, std::string_view ek_sha256,
                   std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                       ActiveEkOwner(c, ek_sha256, node_id));
  if (owner) return TpmBoundToNodeError(*owner);
  return OkStatus();
}

// The first column of the first row, or 0 when there is none.
template <typename... Args>
StatusOr<int64_t> IntOrZero(Connection& c, const char* sql,
                            std::string_view what, const Args&... args) {
  DPA_ASSIGN_OR_RETURN(std::optional<int64_t> v,
                       c.QueryOne(sql, what, FirstInt, args...));
  return v.value_or(0);
}

// A write whose foreign-key failure means the node is not enrolled.
Status NodeNotEnrolledOnForeignKey(Connection& c, std::string_view node_id,
                                   Status s) {
  if (c.LastConstraint() == Constraint::kForeignKey) {
    return NodeNotEnrolledError(node_id);
  }
  return s;
}

bool HasDetails(const NodeRecord& n) {
  return !n.device_serial.empty() || !n.claimed_serial.empty() ||
         !n.claimed_psid.empty() || !n.claimed_model.empty() ||
         !n.approved_by.empty() || n.revoked_at.has_value() ||
         !n.revoked_by.empty() || !n.revoke_reason.empty() ||
         n.stale_result_id != 0;
}

// Writes the node_details columns of `n` (the node row must exist).
Status PutNodeDetails(Connection& c, const NodeRecord& n) {
  return c.Run(kUpsertNodeDetails, "storing node details", n.node_id,
               n.device_serial, n.claimed_serial, n.claimed_psid,
               n.claimed_model, n.approved_by, n.revoked_at, n.revoked_by,
               n.revoke_reason, n.stale_result_id);
}

constexpr const char* kNodeThumbprint =
    "SELECT key_thumbprint, state FROM nodes WHERE node_id = ?1";

// The audit log entry of a node lifecycle change: the event and the key
// and state the node has after it (none once it was removed).
Status AuditNode(Connection& c, std::string_view node_id, std::string_view action,
                 std::string_view actor, std::string_view detail, int64_t at) {
  DPA_ASSIGN_OR_RETURN(
      auto key, c.QueryOne(kNodeThumbprint, "reading node", [](const Stmt& s) {
        return std::make_pair(s.ColText(0), s.ColText(1));
      }, node_id));
  nlohmann::json data = {{"action", std::string(action)},
                         {"actor", sqlite::AuditText(actor)},
                         {"detail", sqlite::AuditText(detail)}};
  if (key) {
    data["key_thumbprint"] = key->first;
    data["state"] = key->second;
  }
  return sqlite::AppendAudit(c, kAuditNode, node_id, std::move(data), at);
}

Status AddNodeEvent(Connection& c, const NodeEvent& e) {
  DPA_RETURN_IF_ERROR(c.Run(kInsertNodeEvent, "recording node event", e.node_id,
                            e.at, e.event, e.actor, e.detail));
  return AuditNode(c, e.node_id, e.event, e.actor, e.detail, e.at);
}

Status SetNodeState(Connection& c, const NodeRecord& n) {
  return c.Run(kSetNodeState, "updating node", n.node_id,
               NodeStateName(n.state), n.approved_at);
}

// Rewrites the key columns and state of an existing node row.
Status ReplaceNodeKey(Connection& c, const NodeRecord& n) {
  return c.Run(kReplaceNodeKey, "replacing node key", n.node_id,
               n.public_key_pem, n.key_thumbprint, n.alg,
               NodeStateName(n.state), n.enrolled_at, n.approved_at);
}

// Removes a node with what hangs off it (TPM binding, details, nonces,
// release records). Used for pending nodes only, which have no results; a
// node with results fails on the foreign key and the caller rolls back.
Status DeleteNode(Connection& c, std::string_view node_id) {
  for (const char* sql : {kDeleteTpmBindingOf, kDeleteNodeDetails,
                          kDeleteNoncesOf, kDeleteNodeReleasesOf,
                          kDeleteNode}) {
    DPA_RETURN_IF_ERROR(c.Run(sql, "removing node", node_id));
  }
  return OkStatus();
}

Status DeleteTpmBindingOf(Connection& c, std::string_view node_id) {
  return c.Run(kDeleteTpmBindingOf, "removing TPM binding", node_id);
}

// The body of CreateNode, inside the caller's transaction: the stored record
// (the existing one, unchanged, on an idempotent re-enrollment) or the
// refusal.
StatusOr<NodeRecord> CreateNodeIn(Connection& c, const NodeRecord& node) {
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> existing,
                       FindNode(c, node.node_id));
  if (existing) {
    DPA_RETURN_IF_ERROR(CheckReEnrollment(*existing, node));
    return *std::move(existing);  // idempotent re-enrollment; no write
  }
  DPA_RETURN_IF_ERROR(c.Run(kInsertNode, "inserting node", node.node_id,
                            node.public_key_pem, node.key_thumbprint, node.alg,
                            NodeStateName(node.state), node.enrolled_at,
                            node.approved_at));
  if (HasDetails(node)) DPA_RETURN_IF_ERROR(PutNodeDetails(c, node));
  DPA_RETURN_IF_ERROR(AuditNode(c, node.node_id, "created", "", "", node.enrolled_at));
  return node;
}

// Approves a pending `stored` at `approve_at` (ApproveNode without its
// lookup); other states are left as they are.
Status ApprovePendingAt(Connection& c, NodeRecord& stored,
                        std::optional<int64_t> approve_at) {
  if (!approve_at || stored.state != NodeState::kPending) return OkStatus();
  stored.state = NodeState::kApproved;
  stored.approved_at = *approve_at;
  DPA_RETURN_IF_ERROR(SetNodeState(c, stored));
  return AuditNode(c, stored.node_id, "approved", "", "", *approve_at);
}

Status InsertNonceIn(Connection& c, std::string_view nonce,
                     std::string_view node_id, int64_t issued_at,
                     int64_t expires_at) {
  Status s = c.Run(kInsertNonce, "inserting nonce", nonce, node_id, issued_at,
                   expires_at);
  if (c.LastConstraint() == Constraint::kPrimaryKey) {
    return AlreadyExistsError("nonce was already issued.");
  }
  return NodeNotEnrolledOnForeignKey(c, node_id, std::move(s));
}

// The check-and-spend of ConsumeNonce, inside the caller's transaction.
// On a refusal nothing was changed (the caller rolls back anyway).
Status SpendNonce(Connection& c, std::string_view nonce,
                  std::string_view node_id, int64_t now) {
  // The whole check-and-spend is this one statement.
  DPA_ASSIGN_OR_RETURN(int64_t spent, c.RunChanges(kSpendNonce,
                                                   "consuming nonce", nonce,
                                                   node_id, now));
  if (spent == 1) return OkStatus();
  // Refused: say why, from the same snapshot.
  DPA_ASSIGN_OR_RETURN(
      std::optional<StoredNonce> stored,
      c.QueryOne(kSelectNonce, "reading nonce", NonceFromRow, nonce));
  DPA_RETURN_IF_ERROR(NonceRefusal(stored, node_id, now));
  return InternalError(
      "sqlite: nonce could not be consumed for no known "
      "reason.");
}

StatusOr<int64_t> InsertReportIn(Connection& c, const ReportRecord& r) {
  const int64_t bytes =
      r.received_bytes > 0 ? r.received_bytes : static_cast<int64_t>(r.jws.size());
  DPA_ASSIGN_OR_RETURN(
      int64_t id, c.Insert(kInsertReport, "inserting report", r.node_id, Blob{r.jws},
                           r.sha256, r.received_at, int64_t{r.accepted ? 1 : 0},
                           r.error, bytes));
  nlohmann::json data = {{"report_id", id}, {"report_sha256", r.sha256}, {"bytes", bytes}};
  if (!r.accepted) data["error"] = sqlite::AuditText(r.error);
  DPA_RETURN_IF_ERROR(sqlite::AppendAudit(
      c, r.accepted ? kAuditReportAccepted : kAuditReportRefused, r.node_id,
      std::move(data), r.received_at));
  return id;
}

// A result row appraising the stored report `report_id`; returns its id.
constexpr const char* kInsertResultContext =
    "INSERT INTO result_contexts (result_id, context) VALUES (?1, ?2)";

StatusOr<int64_t> InsertResultRow(Connection& c, const ResultRecord& result,
                                  int64_t report_id) {
  DPA_ASSIGN_OR_RETURN(
      int64_t id, c.Insert(kInsertResult, "inserting result", result.node_id,
                           report_id, result.decision, result.ear_jwt,
                           result.reasons_json, result.report_jws_sha256,
                           result.created_at, result.expires_at));
  nlohmann::json data = {{"result_id", id},
                         {"report_id", report_id},
                         {"report_sha256", result.report_jws_sha256},
                         {"decision", result.decision},
                         {"ear_sha256", Sha256Hex(AsBytes(result.ear_jwt))},
                         {"expires_at", result.expires_at}};
  if (!result.context_json.empty()) {
    DPA_RETURN_IF_ERROR(c.Run(kInsertResultContext, "storing appraisal context", id,
                              result.context_json));
    data["context_sha256"] = Sha256Hex(AsBytes(result.context_json));
  }
  DPA_RETURN_IF_ERROR(sqlite::AppendAudit(c, kAuditResult, result.node_id,
                                          std::move(data), result.created_at));
  return id;
}

// The report and result rows of InsertResult, inside the caller's
// transaction; returns the result id.
StatusOr<int64_t> InsertResultIn(Connection& c, const ResultRecord& result,
                                 const ReportRecord& report) {
  DPA_ASSIGN_OR_RETURN(int64_t report_id, InsertReportIn(c, report));
  StatusOr<int64_t> id = InsertResultRow(c, result, report_id);
  if (!id.ok()) {
    // The report is rolled back too.
    return NodeNotEnrolledOnForeignKey(c, result.node_id, id.status());
  }
  return id;
}

StatusOr<int64_t> ReportBytesOf(Connection& c, std::string_view node_id) {
  return IntOrZero(c, kReportBytes, "reading report bytes", node_id);
}

// Runs `sql` (one id parameter) on the oldest (id, bytes) row that `oldest`
// selects for `node_id`: the bytes it freed, or nullopt when there is none.
StatusOr<std::optional<int64_t>> FreeOldest(Connection& c, const char* oldest,
                                            const char* sql,
                                            std::string_view what,
                                            std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(
      auto row, c.QueryOne(oldest, "reading reports",
                           [](const Stmt& s) {
                             return std::make_pair(s.ColInt(0), s.ColInt(1));
                           },
                           node_id));
  if (!row) return std::optional<int64_t>();
  DPA_RETURN_IF_ERROR(c.Run(sql, what, row->first));
  return std::optional<int64_t>(row->second);
}

// Inserts `r` unless a release with its label exists. Returns whether it
// inserted; ALREADY_EXISTS when the stored release differs in content.
StatusOr<bool> PutReleaseIn(Connection& c, const RefRelease& r) {
  DPA_ASSIGN_OR_RETURN(std::optional<RefRelease> existing,
                       FindRelease(c, r.release));
  if (existing) {
    DPA_RETURN_IF_ERROR(CheckReleaseReput(*existing, r));
    return false;
  }
  DPA_RETURN_IF_ERROR(c.Run(kInsertRelease, "inserting reference release",
                            r.release, r.model, RefStateName(r.state),
                            r.created_at, ReleaseBody(r)));
  DPA_RETURN_IF_ERROR(sqlite::AppendAudit(
      c, kAuditRefvals, "",
      {{"action", "imported"},
       {"release", r.release},
       {"model", r.model},
       {"state", std::string(RefStateName(r.state))},
       {"sha256", Sha256Hex(AsBytes(strict_json::DumpJson(RefManifestJson({r}))))}},
      r.created_at));
  return true;
}

Status BumpGeneration(Connection& c) {
  return c.Run(kBumpGeneration, "bumping reference value generation");
}

// The body of PutTpmBinding, inside the caller's transaction. Writes
// nothing when the node's active binding is the same TPM and AK.
Status PutTpmBindingIn(Connection& c, const TpmBinding& binding) {
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(c, binding.node_id));
  if (!node) return NodeNotEnrolledError(binding.node_id);
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> existing,
                       FindTpmBinding(c, binding.node_id));
  DPA_ASSIGN_OR_RETURN(bool write, TpmBindingNeedsWrite(existing, binding));
  if (!write) return OkStatus();
  DPA_RETURN_IF_ERROR(CheckEkFree(c, binding.ek_sha256, binding.node_id));
  StatusOr<int64_t> changed = c.RunChanges(
      kUpsertTpmBinding, "storing TPM binding", binding.node_id,
      binding.ek_public_b64, binding.ek_sha256, binding.ek_cert_pem,
      binding.ek_cert_issuer, binding.ak_public_b64, binding.ak_name_hex,
      TpmBindingStateName(binding.state), binding.credential_sha256,
      binding.challenge_expires_at, binding.created_at, binding.activated_at);
  if (!changed.ok()) {
    return NodeNotEnrolledOnForeignKey(c, binding.node_id, changed.status());
  }
  if (*changed != 1) {
    return InternalError("sqlite: TPM binding of node " +
                         Quoted(binding.node_id) + " was not stored.");
  }
  return sqlite::AppendAudit(
      c, kAuditTpm, binding.node_id,
      {{"action", "bound"},
       {"state", std::string(TpmBindingStateName(binding.state))},
       {"ek_sha256", binding.ek_sha256},
       {"ak_name", binding.ak_name_hex},
       {"ek_cert_sha256",
        binding.ek_cert_pem.empty() ? "" : Sha256Hex(AsBytes(binding.ek_cert_pem))}},
      binding.created_at);
}

// The body of CreateNodeWithTpmBinding, inside the caller's transaction
// (also run by EnrollNode).
StatusOr<NodeRecord> CreateNodeWithTpmBindingIn(
    Connection& c, const NodeRecord& node, const TpmBinding& binding,
    std::optional<int64_t> approve_at, EnrollAuthority authority) {
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> existing,
                       FindNode(c, node.node_id));
  DPA_ASSIGN_OR_RETURN(NodeRecord stored, CreateNodeIn(c, node));
  if (existing && authority == EnrollAuthority::kNone) {
    DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> bound,
                         FindTpmBinding(c, node.node_id));
    DPA_RETURN_IF_ERROR(CheckUnvouchedTpmEnrollment(*existing, bound, binding));
  }
  DPA_RETURN_IF_ERROR(PutTpmBindingIn(c, binding));
  DPA_RETURN_IF_ERROR(ApprovePendingAt(c, stored, approve_at));
  return stored;
}

}  // namespace

StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path) {
  DPA_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Connection> conn,
                       sqlite::Connection::Open(path, kBusyTimeoutMs));
  DPA_RETURN_IF_ERROR(sqlite::EnsureSchema(*conn));
  return std::unique_ptr<SqliteStore>(
      new SqliteStore(sql::Pool::Shared(std::move(conn))));
}

SqlStore::SqlStore(std::unique_ptr<sql::Pool> pool)
    : pool_(std::move(pool)),
      group_(std::make_unique<sql::GroupCommitter>(pool_.get())) {}

SqlStore::~SqlStore() = default;

// --- Nodes -------------------------------------------------------------------

StatusOr<NodeRecord> SqlStore::CreateNode(const NodeRecord& node) {
  DPA_RETURN_IF_ERROR(ValidateNodeRecord(node));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(NodeRecord stored, CreateNodeIn(*conn, node));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

StatusOr<NodeRecord> SqlStore::GetNode(std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn, node_id));
  if (!node) return NodeNotEnrolledError(node_id);
  return *std::move(node);
}

StatusOr<NodeRecord> SqlStore::ApproveNode(std::string_view node_id,
                                              int64_t now) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn, node_id));
  if (!node) return NodeNotEnrolledError(node_id);
  DPA_ASSIGN_OR_RETURN(bool changed, ApplyApproveNode(*node, now));
  if (!changed) return *std::move(node);
  DPA_RETURN_IF_ERROR(SetNodeState(*conn, *node));
  DPA_RETURN_IF_ERROR(AuditNode(*conn, node_id, "approved", "", "", now));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(node);
}

StatusOr<NodeRecord> SqlStore::RevokeNode(std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn, node_id));
  if (!node) return NodeNotEnrolledError(node_id);
  if (!ApplyRevokeNode(*node)) return *std::move(node);
  DPA_RETURN_IF_ERROR(SetNodeState(*conn, *node));
  // This older entry point takes no time; the entry gets the wall clock.
  DPA_RETURN_IF_ERROR(AuditNode(*conn, node_id, "revoked", "", "",
                                static_cast<int64_t>(std::time(nullptr))));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(node);
}

StatusOr<std::vector<NodeRecord>> SqlStore::ListNodes() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kListNodes, "listing nodes", NodeFromRow);
}

// --- Nonces ------------------------------------------------------------------

Status SqlStore::InsertNonce(std::string_view nonce,
                                std::string_view node_id, int64_t issued_at,
                                int64_t expires_at) {
  DPA_RETURN_IF_ERROR(ValidateNonce(nonce, node_id, issued_at, expires_at));
  return group_->Run([&](Connection& c) {
    return InsertNonceIn(c, nonce, node_id, issued_at, expires_at);
  });
}

StatusOr<int64_t> SqlStore::InsertNonceCapped(std::string_view nonce,
                                                 std::string_view node_id,
                                                 int64_t issued_at,
                                                 int64_t expires_at,
                                                 int64_t max_outstanding) {
  DPA_RETURN_IF_ERROR(ValidateNonce(nonce, node_id, issued_at, expires_at));
  DPA_RETURN_IF_ERROR(ValidateNonceCap(max_outstanding));
  int64_t evicted = 0;
  const sql::GroupCommitter::Op op = [&](Connection& c) -> Status {
    evicted = 0;
    DPA_ASSIGN_OR_RETURN(int64_t outstanding,
                         IntOrZero(c, kCountOutstandingNonces,
                                   "counting nonces", node_id, issued_at));
    if (int64_t evict = NoncesToEvict(outstanding, max_outstanding);
        evict > 0) {
      DPA_ASSIGN_OR_RETURN(
          evicted,
          c.RunChanges(
              ForDialect(c, kEvictOldestNoncesSqlite, kEvictOldestNoncesPg),
              "evicting nonces", node_id, issued_at, evict));
    }
    return InsertNonceIn(c, nonce, node_id, issued_at, expires_at);
  };
  DPA_RETURN_IF_ERROR(group_->Run(op));
  return evicted;
}

Status SqlStore::ConsumeNonce(std::string_view nonce,
                                 std::string_view node_id, int64_t now) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  // A refusal is rolled back by ~Transaction.
  DPA_RETURN_IF_ERROR(SpendNonce(*conn, nonce, node_id, now));
  return txn.Commit();
}

StatusOr<int64_t> SqlStore::NonceIssuedAt(std::string_view nonce,
                                             std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(
      std::optional<StoredNonce> stored,
      conn->QueryOne(kSelectNonce, "reading nonce", NonceFromRow, nonce));
  return NonceIssuedAtFor(stored, node_id);
}

StatusOr<int64_t> SqlStore::PurgeExpiredNonces(int64_t now) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->RunChanges(kPurgeNonces, "purging nonces", now);
}

// --- Reports and results -----------------------------------------------------

StatusOr<int64_t> SqlStore::InsertReport(const ReportRecord& report) {
  DPA_RETURN_IF_ERROR(ValidateReportRecord(report));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return InsertReportIn(*conn, report);
}

StatusOr<int64_t> SqlStore::InsertResult(const ResultRecord& result,
                                            const ReportRecord& report) {
  DPA_RETURN_IF_ERROR(ValidateResultRecord(result, report));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(int64_t result_id,
                       InsertResultIn(*conn, result, report));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return result_id;
}

StatusOr<int64_t> SqlStore::InsertResultSpendingNonce(
    const ResultRecord& result, const ReportRecord& report,
    std::string_view nonce, int64_t now) {
  return InsertResultSpendingNonceWithinQuota(result, report, nonce, now, 0);
}

StatusOr<int64_t> SqlStore::ReportBytes(std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return ReportBytesOf(*conn, node_id);
}

StatusOr<int64_t> SqlStore::InsertRefusedReport(const ReportRecord& report,
                                                   int64_t quota_bytes) {
  DPA_RETURN_IF_ERROR(ValidateRefusedReport(report));
  int64_t id = 0;
  const sql::GroupCommitter::Op op = [&](Connection& c) -> Status {
    DPA_ASSIGN_OR_RETURN(int64_t used, ReportBytesOf(c, report.node_id));
    DPA_RETURN_IF_ERROR(CheckRefusedReportQuota(report, used, quota_bytes));
    DPA_ASSIGN_OR_RETURN(id, InsertReportIn(c, report));
    return OkStatus();
  };
  DPA_RETURN_IF_ERROR(group_->Run(op));
  return id;
}

StatusOr<int64_t> SqlStore::InsertResultSpendingNonceWithinQuota(
    const ResultRecord& result, const ReportRecord& report,
    std::string_view nonce, int64_t now, int64_t quota_bytes,
    const NodeTransition* transition) {
  DPA_RETURN_IF_ERROR(ValidateResultRecord(result, report));
  DPA_RETURN_IF_ERROR(CheckReportFitsQuota(report, quota_bytes));
  int64_t result_id = 0;
  // Any error below rolls back the spend, the pruning and the rows (this
  // op's savepoint or transaction; verifier/store/group_commit.h).
  const sql::GroupCommitter::Op op = [&](Connection& c) -> Status {
    DPA_RETURN_IF_ERROR(SpendNonce(c, nonce, result.node_id, now));
    if (quota_bytes > 0) {
      const std::string& node_id = report.node_id;
      DPA_ASSIGN_OR_RETURN(int64_t used, ReportBytesOf(c, node_id));
      ReportRoom room{
          [&] {
            return FreeOldest(c, kOldestRefused, kDeleteReport,
                              "deleting refused report", node_id);
          },
          [&] {
            return FreeOldest(c, kOldestAcceptedBody, ForDialect(c, kDropReportBodySqlite, kDropReportBodyPg),
                              "dropping report body", node_id);
          }};
      DPA_RETURN_IF_ERROR(MakeReportRoom(report, used, quota_bytes, room));
    }
    DPA_ASSIGN_OR_RETURN(result_id, InsertResultIn(c, result, report));
    if (transition != nullptr) {
      DPA_RETURN_IF_ERROR(sqlite::WriteNodeTransition(c, *transition, result_id));
    }
    return OkStatus();
  };
  DPA_RETURN_IF_ERROR(group_->Run(op));
  return result_id;
}

StatusOr<PruneCounts> SqlStore::PruneReports(const RetentionPolicy& policy,
                                                int64_t now) {
  DPA_RETURN_IF_ERROR(ValidateRetentionPolicy(policy));
  std::optional<int64_t> cutoff = RetentionCutoff(policy, now);
  PruneCounts counts;
  std::vector<int64_t> bodies;        // report ids whose body was dropped
  nlohmann::json deleted = nlohmann::json::array();  // results deleted
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(
      std::vector<RetentionCandidate> candidates,
      conn->QueryAll(
          kRetentionCandidates, "reading results to prune",
          [](const Stmt& s) {
            RetentionCandidate c;
            c.result_id = s.ColInt(0);
            c.report_id = s.ColInt(1);
            c.rank = s.ColInt(2);
            c.decision = s.ColText(3);
            if (!s.ColIsNull(4)) c.previous_decision = s.ColText(4);
            c.created_at = s.ColInt(5);
            return c;
          },
          policy.keep_reports, cutoff));
  for (const RetentionCandidate& c : candidates) {
    switch (RetentionActionFor(c, policy, now)) {
      case RetentionAction::kKeep:
        break;
      case RetentionAction::kDropBody: {
        DPA_ASSIGN_OR_RETURN(int64_t dropped,
                             conn->RunChanges(ForDialect(*conn, kDropReportBodySqlite, kDropReportBodyPg),
                                               "dropping report body",
                                               c.report_id));
        counts.bodies_dropped += dropped;
        if (dropped > 0) bodies.push_back(c.report_id);
        break;
      }
      case RetentionAction::kDelete:
        deleted.push_back({{"result_id", c.result_id}, {"report_id", c.report_id}});
        DPA_RETURN_IF_ERROR(
            conn->Run(kDeleteResultContext, "deleting appraisal context", c.result_id));
        DPA_RETURN_IF_ERROR(
            conn->Run(kDeleteResult, "deleting result", c.result_id));
        DPA_RETURN_IF_ERROR(
            conn->Run(kDeleteReport, "deleting report", c.report_id));
        ++counts.results_deleted;
        break;
    }
  }
  DPA_ASSIGN_OR_RETURN(counts.refused_deleted,
                       conn->RunChanges(kPruneRefused,
                                         "deleting refused reports",
                                         policy.keep_reports, cutoff));
  // What retention removed is itself logged (the entries stay): a bundle
  // may then lack exactly these bodies and results, and nothing else.
  // Chunked so one entry stays within kMaxAuditEntryBytes.
  constexpr size_t kChunk = 200;
  for (size_t i = 0; i < std::max(bodies.size(), deleted.size()) ||
                     (i == 0 && counts.refused_deleted > 0);
       i += kChunk) {
    nlohmann::json b = nlohmann::json::array(), d = nlohmann::json::array();
    for (size_t k = i; k < std::min(bodies.size(), i + kChunk); ++k) b.push_back(bodies[k]);
    for (size_t k = i; k < std::min(deleted.size(), i + kChunk); ++k) d.push_back(deleted[k]);
    nlohmann::json data = {{"bodies_dropped", std::move(b)},
                           {"results_deleted", std::move(d)}};
    if (i == 0) data["refused_deleted"] = counts.refused_deleted;
    DPA_RETURN_IF_ERROR(
        sqlite::AppendAudit(*conn, kAuditRetention, "", std::move(data), now));
  }
  DPA_RETURN_IF_ERROR(txn.Commit());
  return counts;
}

StatusOr<ResultRecord> SqlStore::LatestResult(std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(std::optional<ResultRecord> r,
                       conn->QueryOne(kLatestResult, "reading latest result",
                                       ResultFromRow, node_id));
  if (!r) return NoResultError(node_id);
  return *std::move(r);
}

StatusOr<ReportRecord> SqlStore::GetAcceptedReport(
    std::string_view node_id, std::string_view sha256) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(
      std::optional<ReportRecord> r,
      conn->QueryOne(kSelectAcceptedReport, "reading report",
                      AcceptedReportFromRow, node_id, sha256));
  if (!r) return NoAcceptedReportError(node_id, sha256);
  return *std::move(r);
}

StatusOr<int64_t> SqlStore::InsertReappraisal(
    const ResultRecord& result, const NodeTransition* transition) {
  ReportRecord probe;
  probe.node_id = result.node_id;
  probe.sha256 = result.report_jws_sha256;
  probe.accepted = true;
  DPA_RETURN_IF_ERROR(ValidateResultRecord(result, probe));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(
      std::optional<int64_t> report_id,
      conn->QueryOne(kSelectAcceptedReport, "reading report", FirstInt,
                      result.node_id, result.report_jws_sha256));
  if (!report_id) {
    return NoAcceptedReportError(result.node_id, result.report_jws_sha256);
  }
  DPA_ASSIGN_OR_RETURN(int64_t id,
                       InsertResultRow(*conn, result, *report_id));
  if (transition != nullptr) {
    DPA_RETURN_IF_ERROR(sqlite::WriteNodeTransition(*conn, *transition, id));
  }
  DPA_RETURN_IF_ERROR(txn.Commit());
  return id;
}

// --- Reference values --------------------------------------------------------

namespace {

// Puts `releases` (validated) in one transaction, bumping the generation
// when one was inserted. With `name_index`, an error names the release's
// index ("releases[i]").
Status PutReleasesIn(Connection& conn, std::span<const RefRelease> releases,
                     bool name_index) {
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn.Begin());
  bool changed = false;
  for (size_t i = 0; i < releases.size(); ++i) {
    auto inserted = PutReleaseIn(conn, releases[i]);
    if (!inserted.ok()) {
      if (!name_index) return inserted.status();
      return inserted.status().WithPrefix("releases[" + std::to_string(i) +
                                          "]");
    }
    changed = changed || *inserted;
  }
  if (!changed) return OkStatus();  // equal content; rolled back, unchanged
  DPA_RETURN_IF_ERROR(BumpGeneration(conn));
  return txn.Commit();
}

}  // namespace

Status SqlStore::PutRelease(const RefRelease& release) {
  DPA_RETURN_IF_ERROR(ValidateRelease(release));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  return PutReleasesIn(*conn, std::span<const RefRelease>(&release, 1),
                       /*name_index=*/false);
}

Status SqlStore::PutReleases(const std::vector<RefRelease>& releases) {
  DPA_RETURN_IF_ERROR(ValidateReleases(releases));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  return PutReleasesIn(*conn, releases, /*name_index=*/true);
}

StatusOr<RefRelease> SqlStore::GetRelease(std::string_view release) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(std::optional<RefRelease> r,
                       FindRelease(*conn, release));
  if (!r) return ReleaseNotKnownError(release);
  return *std::move(r);
}

StatusOr<std::vector<RefRelease>> SqlStore::ListReleases(
    std::string_view model) {
  DPA_ASSIGN_OR_RETURN(std::string canonical, ReleaseModelFilter(model));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  if (canonical.empty()) {
    return conn->QueryAll(kListReleases, "listing reference releases",
                           ReleaseFromRow);
  }
  return conn->QueryAll(kListReleasesOfModel, "listing reference releases",
                         ReleaseFromRow, canonical);
}

StatusOr<RefRelease> SqlStore::TransitionRelease(
    std::string_view release, const RefApproval& approval) {
  DPA_RETURN_IF_ERROR(ValidateRefApproval(approval));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<RefRelease> r,
                       FindRelease(*conn, release));
  if (!r) return ReleaseNotKnownError(release);
  const std::string from(RefStateName(r->state));
  DPA_RETURN_IF_ERROR(ApplyReleaseTransition(*r, approval));
  DPA_RETURN_IF_ERROR(conn->Run(kUpdateRelease, "updating reference release",
                                 r->release, RefStateName(r->state),
                                 ReleaseBody(*r)));
  DPA_RETURN_IF_ERROR(sqlite::AppendAudit(
      *conn, kAuditRefvals, "",
      {{"action", "transition"},
       {"release", r->release},
       {"from", from},
       {"to", std::string(RefStateName(r->state))},
       {"by", sqlite::AuditText(approval.by)},
       {"reason", sqlite::AuditText(approval.reason)},
       {"sha256", Sha256Hex(AsBytes(strict_json::DumpJson(RefManifestJson({*r}))))}},
      approval.at));
  DPA_RETURN_IF_ERROR(BumpGeneration(*conn));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(r);
}

StatusOr<int64_t> SqlStore::RefvalsGeneration() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryInt(kSelectGeneration,
                         "reading reference value generation");
}

Status SqlStore::RecordNodeRelease(std::string_view node_id,
                                      std::string_view kind,
                                      std::string_view release, int64_t at) {
  DPA_RETURN_IF_ERROR(ValidateNodeRelease(node_id, kind, release, at));
  return group_->Run([&](Connection& c) {
    Status s = c.Run(kUpsertNodeRelease, "recording node release", node_id,
                     kind, release, at);
    return NodeNotEnrolledOnForeignKey(c, node_id, std::move(s));
  });
}

StatusOr<std::string> SqlStore::LastNodeRelease(std::string_view node_id,
                                                   std::string_view kind) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(std::optional<std::string> release,
                       conn->QueryOne(kSelectNodeRelease,
                                       "reading node release", FirstText,
                                       node_id, kind));
  if (!release) return NoNodeReleaseError(node_id, kind);
  return *std::move(release);
}

// --- TPM bindings ------------------------------------------------------------

Status SqlStore::PutTpmBinding(const TpmBinding& binding) {
  DPA_RETURN_IF_ERROR(ValidatePendingTpmBinding(binding));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  // A refusal is rolled back by ~Transaction.
  DPA_RETURN_IF_ERROR(PutTpmBindingIn(*conn, binding));
  return txn.Commit();
}

StatusOr<NodeRecord> SqlStore::CreateNodeWithTpmBinding(
    const NodeRecord& node, const TpmBinding& binding,
    std::optional<int64_t> approve_at, EnrollAuthority authority) {
  DPA_RETURN_IF_ERROR(ValidateNodeWithTpmBinding(node, binding));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  // Any error below rolls back the node with the binding (~Transaction).
  DPA_ASSIGN_OR_RETURN(NodeRecord stored,
                       CreateNodeWithTpmBindingIn(*conn, node, binding,
                                                  approve_at, authority));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

StatusOr<TpmBinding> SqlStore::ActivateTpmBinding(
    std::string_view node_id, std::string_view credential_sha256, int64_t now) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> b,
                       FindTpmBinding(*conn, node_id));
  // Every refusal below returns before any write; ~Transaction rolls back.
  DPA_RETURN_IF_ERROR(CheckTpmActivation(b, node_id, credential_sha256, now));
  DPA_RETURN_IF_ERROR(CheckEkFree(*conn, b->ek_sha256, node_id));
  DPA_ASSIGN_OR_RETURN(int64_t activated,
                       conn->RunChanges(kActivateTpmBinding,
                                         "activating TPM binding", node_id,
                                         now));
  if (activated != 1) {
    return InternalError("sqlite: TPM binding of node " + Quoted(node_id) +
                         " could not be activated for no known reason.");
  }
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> stored,
                       FindTpmBinding(*conn, node_id));
  if (!stored || stored->state != TpmBindingState::kActive) {
    return InternalError("sqlite: TPM binding of node " + Quoted(node_id) +
                         " did not read back as active.");
  }
  DPA_RETURN_IF_ERROR(sqlite::AppendAudit(
      *conn, kAuditTpm, node_id,
      {{"action", "activated"}, {"ek_sha256", stored->ek_sha256},
       {"ak_name", stored->ak_name_hex}},
      now));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(stored);
}

StatusOr<TpmBinding> SqlStore::GetTpmBinding(std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> b,
                       FindTpmBinding(*conn, node_id));
  if (!b) return NoTpmBindingError(node_id);
  return *std::move(b);
}

StatusOr<TpmBinding> SqlStore::DeleteTpmBinding(std::string_view node_id,
                                                   bool allow_active) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<TpmBinding> b,
                       FindTpmBinding(*conn, node_id));
  DPA_RETURN_IF_ERROR(CheckTpmBindingDeletion(b, node_id, allow_active));
  DPA_ASSIGN_OR_RETURN(int64_t deleted,
                       conn->RunChanges(kDeleteTpmBindingOf,
                                         "deleting TPM binding", node_id));
  if (deleted != 1) {
    return InternalError("sqlite: TPM binding of node " + Quoted(node_id) +
                         " was not deleted.");
  }
  DPA_RETURN_IF_ERROR(sqlite::AppendAudit(
      *conn, kAuditTpm, node_id,
      {{"action", "deleted"}, {"ek_sha256", b->ek_sha256}, {"ak_name", b->ak_name_hex}},
      static_cast<int64_t>(std::time(nullptr))));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(b);
}

Status SqlStore::CheckWritable() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());  // the write lock
  DPA_RETURN_IF_ERROR(conn->QueryInt("SELECT count(*) FROM nodes", "reading nodes").status());
  return OkStatus();  // ~Transaction rolls back: nothing written
}

// --- Verifier signing keys and node re-key (issue 15, keys part) -----------

namespace {

constexpr const char* kSelectSigningKeys =
    "SELECT kid, public_jwk, first_used_at, last_used_at, "
    "max_result_ttl_seconds, seq FROM signing_keys ORDER BY seq DESC";
constexpr const char* kSelectSigningKey =
    "SELECT kid, public_jwk, first_used_at, last_used_at, "
    "max_result_ttl_seconds, seq FROM signing_keys WHERE kid = ?1";
constexpr const char* kNextSigningKeySeq =
    "SELECT COALESCE(MAX(seq), 0) + 1 FROM signing_keys";
constexpr const char* kInsertSigningKey =
    "INSERT INTO signing_keys (kid, public_jwk, first_used_at, last_used_at, "
    "max_result_ttl_seconds, seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
// The larger of the column and the parameter, in both dialects (SQLite's
// two-argument MAX is PostgreSQL's GREATEST).
constexpr const char* kUpdateSigningKey =
    "UPDATE signing_keys SET last_used_at = CASE WHEN last_used_at > ?2 THEN "
    "last_used_at ELSE ?2 END, max_result_ttl_seconds = CASE WHEN "
    "max_result_ttl_seconds > ?3 THEN max_result_ttl_seconds ELSE ?3 END, "
    "seq = ?4 WHERE kid = ?1";
constexpr const char* kExtendSigningKey =
    "UPDATE signing_keys SET last_used_at = CASE WHEN last_used_at > ?2 THEN "
    "last_used_at ELSE ?2 END WHERE kid = ?1";
constexpr const char* kRekeyNodeKey =
    "UPDATE nodes SET public_key_pem = ?2, key_thumbprint = ?3, alg = ?4 "
    "WHERE node_id = ?1 AND key_thumbprint = ?5";
constexpr const char* kDeleteUnspentNoncesOf =
    "DELETE FROM nonces WHERE node_id = ?1 AND used_at IS NULL";

SigningKeyRecord SigningKeyFromRow(const Stmt& s) {
  SigningKeyRecord k;
  s.Read(k.kid, k.public_jwk, k.first_used_at, k.last_used_at,
         k.max_result_ttl_seconds, k.seq);
  return k;
}

}  // namespace

StatusOr<SigningKeyRecord> SqlStore::RegisterSigningKey(
    const SigningKeyRecord& k) {
  if (k.kid.empty() || k.public_jwk.empty() ||
      k.last_used_at < k.first_used_at || k.max_result_ttl_seconds < 0) {
    return InvalidArgumentError(
        "signing key needs a kid, a public_jwk, last_used_at >= first_used_at "
        "and a non-negative max_result_ttl_seconds.");
  }
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  Connection& c = *conn;
  DPA_ASSIGN_OR_RETURN(int64_t seq,
                       c.QueryInt(kNextSigningKeySeq, "reading signing keys"));
  DPA_ASSIGN_OR_RETURN(
      std::optional<SigningKeyRecord> stored,
      c.QueryOne(kSelectSigningKey, "reading signing key", SigningKeyFromRow, k.kid));
  if (stored) {
    if (stored->public_jwk != k.public_jwk) {
      return FailedPreconditionError("signing key " + k.kid +
                                     " is recorded with another public key.");
    }
    DPA_RETURN_IF_ERROR(c.Run(kUpdateSigningKey, "updating signing key", k.kid,
                              k.last_used_at, k.max_result_ttl_seconds, seq));
  } else {
    DPA_RETURN_IF_ERROR(c.Run(kInsertSigningKey, "recording signing key", k.kid,
                              k.public_jwk, k.first_used_at, k.last_used_at,
                              k.max_result_ttl_seconds, seq));
    DPA_RETURN_IF_ERROR(sqlite::AppendAudit(
        c, kAuditKey, "", {{"kid", k.kid}, {"public_jwk", k.public_jwk}},
        k.first_used_at));
  }
  DPA_ASSIGN_OR_RETURN(
      stored,
      c.QueryOne(kSelectSigningKey, "reading signing key", SigningKeyFromRow, k.kid));
  DPA_RETURN_IF_ERROR(txn.Commit());
  if (!stored) return InternalError("sqlite: signing key " + k.kid + " vanished.");
  return *std::move(stored);
}

Status SqlStore::ExtendSigningKeyUse(std::string_view kid,
                                        int64_t last_used_at) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(int64_t changed,
                       conn->RunChanges(kExtendSigningKey, "updating signing key",
                                         kid, last_used_at));
  if (changed != 1) {
    return NotFoundError("signing key " + std::string(kid) + " is not recorded.");
  }
  return OkStatus();
}

StatusOr<std::vector<SigningKeyRecord>> SqlStore::ListSigningKeys() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kSelectSigningKeys, "listing signing keys",
                         SigningKeyFromRow);
}

StatusOr<NodeRecord> SqlStore::RekeyNode(std::string_view node_id,
                                            const NodeRekey& r) {
  if (r.public_key_pem.empty() || r.key_thumbprint.empty() ||
      r.key_thumbprint == r.old_thumbprint) {
    return InvalidArgumentError("rekey needs a new key other than the old one.");
  }
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  Connection& c = *conn;
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node, FindNode(c, node_id));
  if (!node) return NodeNotEnrolledError(node_id);
  if (node->state == NodeState::kRevoked) {
    return PermissionDeniedError("node " + node->node_id +
                                 " is revoked; it cannot re-key.");
  }
  if (node->state != NodeState::kApproved) {
    return FailedPreconditionError("node " + node->node_id +
                                   " is not approved; it cannot re-key.");
  }
  if (node->key_thumbprint != r.old_thumbprint) {
    return FailedPreconditionError("node " + node->node_id +
                                   "'s key changed while the re-key was checked.");
  }
  DPA_ASSIGN_OR_RETURN(int64_t changed,
                       c.RunChanges(kRekeyNodeKey, "replacing node key", node_id,
                                    r.public_key_pem, r.key_thumbprint, r.alg,
                                    r.old_thumbprint));
  if (changed != 1) return InternalError("sqlite: node key was not replaced.");
  const std::string old = node->key_thumbprint;
  node->public_key_pem = r.public_key_pem;
  node->key_thumbprint = r.key_thumbprint;
  node->alg = r.alg;
  // Results made under the old key never count for admission.
  DPA_ASSIGN_OR_RETURN(node->stale_result_id,
                       IntOrZero(c, kMaxResultIdOf, "reading results of node",
                                 node_id));
  DPA_RETURN_IF_ERROR(PutNodeDetails(c, *node));
  DPA_RETURN_IF_ERROR(c.Run(kDeleteUnspentNoncesOf, "removing nonces", node_id));
  NodeEvent e;
  e.node_id = node->node_id;
  e.at = r.now;
  e.event = "key_rotated";
  e.actor = node->node_id;
  e.detail = "key " + old + " replaced by " + r.key_thumbprint +
             " (re-key request signed by the old key, new key proved).";
  DPA_RETURN_IF_ERROR(AddNodeEvent(c, e));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(node);
}

// --- Hardware-path records (issue 14) ----------------------------------------

namespace {

StatusOr<std::optional<HardwareRecord>> FindHardwareRecord(
    Connection& c, std::string_view node_id, std::string_view kind) {
  return c.QueryOne(kSelectHardwareRecord, "reading hardware record",
                    HardwareRecordFromRow, node_id, kind);
}

// Writes `r` and its node event in the caller's transaction.
Status WriteHardwareRecord(Connection& c, const HardwareRecord& r,
                           std::string_view event, std::string_view detail) {
  Status s = c.Run(kUpsertHardwareRecord, "storing hardware record", r.node_id,
                   r.kind, r.value_json, r.set_at, r.set_by, r.reason);
  if (!s.ok()) return NodeNotEnrolledOnForeignKey(c, r.node_id, std::move(s));
  NodeEvent e;
  e.node_id = r.node_id;
  e.at = r.set_at;
  e.event = std::string(event);
  e.actor = r.set_by;
  e.detail = std::string(detail);
  return AddNodeEvent(c, e);
}

}  // namespace

StatusOr<HardwareRecord> SqlStore::PutHardwareRecordIfAbsent(
    const HardwareRecord& r) {
  DPA_RETURN_IF_ERROR(ValidateHardwareRecord(r));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn, r.node_id));
  if (!node) return NodeNotEnrolledError(r.node_id);
  DPA_ASSIGN_OR_RETURN(std::optional<HardwareRecord> existing,
                       FindHardwareRecord(*conn, r.node_id, r.kind));
  if (existing) return *std::move(existing);
  DPA_RETURN_IF_ERROR(
      WriteHardwareRecord(*conn, r, r.kind + "-first-seen", r.reason));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return r;
}

StatusOr<HardwareRecord> SqlStore::ReplaceHardwareRecord(
    const HardwareRecord& r) {
  DPA_RETURN_IF_ERROR(ValidateHardwareRecord(r));
  if (r.set_by == "first-seen") {
    return InvalidArgumentError(
        "set_by must name the administrator, not \"first-seen\".");
  }
  if (r.reason.empty()) return InvalidArgumentError("reason is empty.");
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn, r.node_id));
  if (!node) return NodeNotEnrolledError(r.node_id);
  DPA_RETURN_IF_ERROR(
      WriteHardwareRecord(*conn, r, r.kind + "-approved", r.reason));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return r;
}

StatusOr<HardwareRecord> SqlStore::GetHardwareRecord(
    std::string_view node_id, std::string_view kind) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(std::optional<HardwareRecord> r,
                       FindHardwareRecord(*conn, node_id, kind));
  if (!r) return NoHardwareRecordError(node_id, kind);
  return *std::move(r);
}

// --- Enrollment and identity (issue 12) -------------------------------------

StatusOr<NodeRecord> SqlStore::EnrollNode(
    const NodeRecord& node, const std::optional<TpmBinding>& binding,
    const EnrollGrant& grant) {
  DPA_RETURN_IF_ERROR(ValidateEnrollRequest(node, binding, grant));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  // Every refusal below returns before Commit: ~Transaction rolls back, so
  // nothing is stored and the token stays unspent.
  Connection& c = *conn;
  const std::string& id = node.node_id;
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> existing, FindNode(c, id));
  if (existing &&
      PendingExpired(*existing, grant.now, grant.pending_ttl_seconds)) {
    DPA_RETURN_IF_ERROR(DeleteNode(c, id));
    DPA_RETURN_IF_ERROR(
        AddNodeEvent(c, ExpiredOnEnrollEvent(*existing, grant.now)));
    existing.reset();
  }
  std::optional<EnrollmentToken> token;
  std::string actor = grant.actor;
  if (!grant.token_sha256.empty()) {
    DPA_ASSIGN_OR_RETURN(token, FindToken(c, kSelectToken, grant.token_sha256));
    if (!token) return InvalidEnrollmentTokenError();
    DPA_RETURN_IF_ERROR(
        CheckEnrollmentToken(*token, id, node.claimed_serial, grant.now));
    actor = TokenActor(*token);
  }
  NodeRecord fresh = node;
  fresh.enrolled_at = grant.now;
  DPA_ASSIGN_OR_RETURN(EnrollAction action,
                       PlanEnrollment(existing, node, token.has_value()));
  switch (action) {
    case EnrollAction::kCreate:
      break;
    case EnrollAction::kReEnrollRevoked: {
      // Admin re-enrollment: the new key, no TPM binding, state reset to
      // pending (approved below by the token); the revocation stays in the
      // history.
      DPA_RETURN_IF_ERROR(DeleteTpmBindingOf(c, id));
      DPA_RETURN_IF_ERROR(ReplaceNodeKey(c, fresh));
      // Results of the old key never admit the new one.
      DPA_ASSIGN_OR_RETURN(fresh.stale_result_id,
                           IntOrZero(c, kMaxResultIdOf,
                                     "reading results of node", id));
      DPA_RETURN_IF_ERROR(PutNodeDetails(c, fresh));
      DPA_RETURN_IF_ERROR(
          AddNodeEvent(c, ReEnrolledEvent(*existing, node, actor, grant.now)));
      DPA_ASSIGN_OR_RETURN(existing, FindNode(c, id));
      break;
    }
    case EnrollAction::kTakeOver:
      // The token holder takes the id over from a never-approved squatter:
      // key and TPM binding replaced in this transaction.
      DPA_RETURN_IF_ERROR(DeleteTpmBindingOf(c, id));
      DPA_RETURN_IF_ERROR(ReplaceNodeKey(c, fresh));
      DPA_RETURN_IF_ERROR(PutNodeDetails(c, fresh));
      DPA_RETURN_IF_ERROR(
          AddNodeEvent(c, KeyReplacedEvent(*existing, node, actor, grant.now)));
      DPA_ASSIGN_OR_RETURN(existing, FindNode(c, id));
      break;
  }
  if (!existing && PendingCapApplies(grant)) {
    DPA_ASSIGN_OR_RETURN(
        int64_t pending,
        IntOrZero(c, kCountPending, "counting pending nodes",
                  UnexpiredPendingAfter(grant.now, grant.pending_ttl_seconds)));
    DPA_RETURN_IF_ERROR(CheckPendingCap(pending, grant));
  }
  std::optional<int64_t> approve_at;
  if (grant.authority == EnrollAuthority::kBootstrapToken) {
    approve_at = grant.now;
  }
  NodeRecord stored;
  if (binding) {
    DPA_ASSIGN_OR_RETURN(stored,
                         CreateNodeWithTpmBindingIn(c, fresh, *binding,
                                                    approve_at,
                                                    grant.authority));
  } else {
    DPA_ASSIGN_OR_RETURN(stored, CreateNodeIn(c, fresh));
    DPA_RETURN_IF_ERROR(ApprovePendingAt(c, stored, approve_at));
  }
  if (!existing) {
    DPA_RETURN_IF_ERROR(AddNodeEvent(
        c, EnrolledEvent(node, binding.has_value(), actor, grant.now)));
  }
  bool approved_now =
      approve_at && stored.state == NodeState::kApproved &&
      stored.approved_at == approve_at &&
      (!existing || existing->state == NodeState::kPending);
  if (approved_now) {
    stored.approved_by = actor;
    if (token && !token->serial.empty()) stored.device_serial = token->serial;
    DPA_RETURN_IF_ERROR(PutNodeDetails(c, stored));
    DPA_RETURN_IF_ERROR(
        AddNodeEvent(c, ApprovedEvent(stored, actor, "", grant.now)));
  }
  if (token) {
    DPA_ASSIGN_OR_RETURN(int64_t spent,
                         c.RunChanges(kSpendToken, "spending enrollment token",
                                      token->token_sha256, grant.now,
                                      stored.key_thumbprint));
    if (spent != 1) {
      return InternalError("sqlite: enrollment token " + token->token_id +
                           " could not be spent.");
    }
  }
  DPA_RETURN_IF_ERROR(txn.Commit());
  return stored;
}

StatusOr<NodeRecord> SqlStore::ApproveEnrollment(
    std::string_view node_id, const ApprovalRequest& req) {
  DPA_RETURN_IF_ERROR(ValidateApprovalRequest(req));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn, node_id));
  if (!node) return NodeNotEnrolledError(node_id);
  DPA_ASSIGN_OR_RETURN(bool changed, ApplyEnrollmentApproval(*node, req));
  if (!changed) return *std::move(node);
  DPA_RETURN_IF_ERROR(SetNodeState(*conn, *node));
  DPA_RETURN_IF_ERROR(PutNodeDetails(*conn, *node));
  DPA_RETURN_IF_ERROR(
      AddNodeEvent(*conn, ApprovedEvent(*node, req.by, req.reason, req.now)));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(node);
}

Status SqlStore::RejectNode(std::string_view node_id, std::string_view by,
                               std::string_view reason, int64_t now) {
  DPA_RETURN_IF_ERROR(ValidateRejection(by));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn, node_id));
  if (!node) return NodeNotEnrolledError(node_id);
  DPA_RETURN_IF_ERROR(CheckRejection(*node));
  DPA_RETURN_IF_ERROR(DeleteNode(*conn, node_id));
  DPA_RETURN_IF_ERROR(
      AddNodeEvent(*conn, RejectedEvent(*node, by, reason, now)));
  return txn.Commit();
}

StatusOr<NodeRecord> SqlStore::RevokeNodeFor(std::string_view node_id,
                                                std::string_view by,
                                                std::string_view reason,
                                                int64_t now) {
  DPA_RETURN_IF_ERROR(ValidateRevocation(by, reason));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<NodeRecord> node,
                       FindNode(*conn, node_id));
  if (!node) return NodeNotEnrolledError(node_id);
  const NodeState was = node->state;
  if (!ApplyRevocationFor(*node, by, reason, now)) return *std::move(node);
  DPA_RETURN_IF_ERROR(SetNodeState(*conn, *node));
  DPA_RETURN_IF_ERROR(PutNodeDetails(*conn, *node));
  // Tokens issued before the revocation die with it: re-enrolling needs a
  // token issued after it.
  DPA_RETURN_IF_ERROR(conn->Run(kRevokeTokensOfNode,
                                 "revoking the node's enrollment tokens",
                                 node_id, now, TokenRevocationActor(by)));
  DPA_RETURN_IF_ERROR(
      AddNodeEvent(*conn, RevokedEvent(*node, was, by, reason, now)));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(node);
}

StatusOr<int64_t> SqlStore::PurgeExpiredPendingNodes(int64_t now,
                                                        int64_t ttl_seconds) {
  if (ttl_seconds <= 0) return 0;
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::vector<std::string> ids,
                       conn->QueryAll(kListExpiredPending,
                                       "listing expired pending", FirstText,
                                       now - ttl_seconds));
  for (const std::string& id : ids) {
    DPA_RETURN_IF_ERROR(DeleteNode(*conn, id));
    DPA_RETURN_IF_ERROR(AddNodeEvent(*conn, ExpiredPendingEvent(id, now)));
  }
  DPA_RETURN_IF_ERROR(txn.Commit());
  return static_cast<int64_t>(ids.size());
}

StatusOr<std::vector<NodeEvent>> SqlStore::NodeHistory(
    std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kSelectNodeEvents, "reading node history",
                         EventFromRow, node_id);
}

Status SqlStore::PutEnrollmentToken(const EnrollmentToken& token) {
  DPA_RETURN_IF_ERROR(ValidateEnrollmentToken(token));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  Status s = conn->Run(kInsertToken, "storing enrollment token",
                        token.token_sha256, token.token_id, token.node_id,
                        token.serial, token.created_by, token.created_at,
                        token.expires_at);
  Constraint broken = conn->LastConstraint();
  if (broken == Constraint::kPrimaryKey || broken == Constraint::kUnique) {
    return AlreadyExistsError("enrollment token " + token.token_id +
                              " is already stored.");
  }
  return s;
}

StatusOr<EnrollmentToken> SqlStore::GetEnrollmentToken(
    std::string_view token_sha256) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(std::optional<EnrollmentToken> t,
                       FindToken(*conn, kSelectToken, token_sha256));
  if (!t) return EnrollmentTokenNotKnownError();
  return *std::move(t);
}

StatusOr<std::vector<EnrollmentToken>> SqlStore::ListEnrollmentTokens() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kListTokens, "listing enrollment tokens",
                         TokenFromRow);
}

StatusOr<EnrollmentToken> SqlStore::RevokeEnrollmentToken(
    std::string_view token_id, std::string_view by, int64_t now) {
  DPA_RETURN_IF_ERROR(ValidateTokenRevocation(by));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<EnrollmentToken> t,
                       FindToken(*conn, kSelectTokenById, token_id));
  if (!t) return EnrollmentTokenIdNotKnownError(token_id);
  DPA_ASSIGN_OR_RETURN(bool changed, ApplyTokenRevocation(*t, by, now));
  if (!changed) return *std::move(t);
  DPA_RETURN_IF_ERROR(conn->Run(kRevokeToken, "revoking enrollment token",
                                 token_id, now, by));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(t);
}

// Withdraw a pending release (issue 16 §6): the check, the delete and the
// generation bump in ONE transaction, so a concurrent promote either wins
// (the withdrawal is then refused) or finds the label gone.
StatusOr<RefRelease> SqlStore::WithdrawPendingRelease(std::string_view release) {
  static constexpr const char* kDeletePendingRelease =
      "DELETE FROM ref_releases WHERE release = ?1 AND state = 'pending'";
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(std::optional<RefRelease> r, FindRelease(*conn, release));
  if (!r) return ReleaseNotKnownError(release);
  if (r->state != RefState::kPending) {
    return FailedPreconditionError(
        "release " + r->release + " is " + std::string(RefStateName(r->state)) +
        "; only a pending release can be withdrawn (revoke or obsolete it instead).");
  }
  DPA_RETURN_IF_ERROR(conn->Run(kDeletePendingRelease, "withdrawing reference release",
                                 r->release));
  // Its audit log entry (issue 16 §1), in the same transaction; the store
  // takes no time here, so the entry gets the wall clock.
  DPA_RETURN_IF_ERROR(sqlite::AppendAudit(
      *conn, kAuditRefvals, "",
      {{"action", "withdrawn"},
       {"release", r->release},
       {"sha256", Sha256Hex(AsBytes(strict_json::DumpJson(RefManifestJson({*r}))))}},
      static_cast<int64_t>(std::time(nullptr))));
  DPA_RETURN_IF_ERROR(BumpGeneration(*conn));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return *std::move(r);
}

}  // namespace dpuaudit::verifier

// --- Fleet report (issue 16 §7) ----------------------------------------------

namespace dpuaudit::verifier {
namespace {

// One page of the latest result per node after node id ?1, at most ?2
// nodes: max(id) per node over results_by_node, then those rows. ear_jwt is
// not read.
constexpr const char* kLatestResultsPage =
    "SELECT r.id, r.node_id, r.decision, '', r.reasons_json, "
    "r.report_jws_sha256, r.created_at, r.expires_at FROM results r JOIN "
    "(SELECT node_id, max(id) AS id FROM results WHERE node_id > ?1 "
    "GROUP BY node_id ORDER BY node_id LIMIT ?2) m ON r.id = m.id "
    "ORDER BY r.node_id";
constexpr int64_t kLatestResultsPageNodes = 256;
constexpr const char* kListNodeReleases =
    "SELECT node_id, kind, release, at FROM node_releases "
    "ORDER BY node_id, kind";
constexpr const char* kCountDecisions =
    "SELECT (created_at / ?2) * ?2 AS start, "
    "sum(CASE WHEN decision = 'admit' THEN 1 ELSE 0 END), "
    "sum(CASE WHEN decision = 'deny' THEN 1 ELSE 0 END) FROM results "
    "WHERE created_at >= ?1 GROUP BY start ORDER BY start";

}  // namespace

Status SqlStore::ForEachLatestResult(
    const std::function<Status(const ResultRecord&)>& visit) {
  std::string after;
  while (true) {
    std::vector<ResultRecord> page;
    {
      DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
      DPA_ASSIGN_OR_RETURN(
          page, conn->QueryAll(kLatestResultsPage, "reading latest results",
                                ResultFromRow, after,
                                kLatestResultsPageNodes));
    }
    for (const ResultRecord& r : page) DPA_RETURN_IF_ERROR(visit(r));
    if (static_cast<int64_t>(page.size()) < kLatestResultsPageNodes) {
      return OkStatus();
    }
    after = page.back().node_id;
  }
}

StatusOr<std::vector<NodeReleaseRecord>> SqlStore::ListNodeReleases() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kListNodeReleases, "listing node releases",
                         [](const Stmt& s) {
                           NodeReleaseRecord r;
                           s.Read(r.node_id, r.kind, r.release, r.at);
                           return r;
                         });
}

StatusOr<std::vector<DecisionBucket>> SqlStore::CountDecisions(
    int64_t since, int64_t bucket_seconds) {
  if (bucket_seconds <= 0) {
    return InvalidArgumentError("bucket_seconds must be positive.");
  }
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kCountDecisions, "counting decisions",
                         [](const Stmt& s) {
                           DecisionBucket b;
                           s.Read(b.start, b.admit, b.deny);
                           return b;
                         },
                         since, bucket_seconds);
}

}  // namespace dpuaudit::verifier
