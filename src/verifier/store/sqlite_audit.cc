#include "verifier/store/sqlite_audit.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/crypto.h"
#include "verifier/audit_chain.h"
#include "verifier/store/sql_store.h"

namespace dpuaudit::verifier {
namespace sqlite {
namespace {

constexpr const char* kLastEntry =
    "SELECT seq, entry_hash FROM audit_log ORDER BY seq DESC LIMIT 1";
constexpr const char* kLastNodeEntry =
    "SELECT seq, time FROM audit_log WHERE node_id = ?1 ORDER BY seq DESC LIMIT 1";
constexpr const char* kInsertEntry =
    "INSERT INTO audit_log (seq, time, kind, node_id, entry, prev_hash, "
    "entry_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

}  // namespace

std::string AuditText(std::string_view s) {
  if (s.size() <= 256) return std::string(s);
  size_t n = 256;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "…";
}

Status AppendAudit(sql::Connection& c, std::string_view kind, std::string_view node_id,
                   nlohmann::json data, int64_t time) {
  DPA_ASSIGN_OR_RETURN(
      auto last, c.QueryOne(kLastEntry, "reading the audit log head",
                            [](const Stmt& s) {
                              return std::make_pair(s.ColInt(0), s.ColText(1));
                            }));
  if (!node_id.empty()) {
    // The node's previous entry: a bundle that starts at a later entry of
    // the node's window shows the cut (verifier/bundle.h).
    DPA_ASSIGN_OR_RETURN(
        auto prev_node, c.QueryOne(kLastNodeEntry, "reading the audit log",
                                   [](const Stmt& s) {
                                     return std::make_pair(s.ColInt(0), s.ColInt(1));
                                   },
                                   node_id));
    data["node_prev"] = prev_node ? nlohmann::json{{"seq", prev_node->first},
                                                   {"time", prev_node->second}}
                                  : nlohmann::json(nullptr);
  }
  AuditEntry e;
  e.seq = last ? last->first + 1 : 1;
  e.time = time;
  e.kind = std::string(kind);
  e.node_id = std::string(node_id);
  e.data = std::move(data);
  std::string prev = last ? last->second : std::string(kAuditGenesisHash);
  std::string canonical = CanonicalAuditEntry(e);
  if (canonical.size() > kMaxAuditEntryBytes) {
    return InternalError("audit log entry " + std::string(kind) + " is " +
                         std::to_string(canonical.size()) + " bytes, over " +
                         std::to_string(kMaxAuditEntryBytes) + ".");
  }
  DPA_ASSIGN_OR_RETURN(std::string hash, AuditEntryHash(prev, canonical));
  return c.Run(kInsertEntry, "appending to the audit log", e.seq, e.time, kind,
               node_id, canonical, prev, hash);
}

}  // namespace sqlite

namespace {

using sqlite::Blob;
using sqlite::BlobInto;
using sqlite::Constraint;
using sqlite::Stmt;
using sqlite::Transaction;

constexpr const char* kListEntries =
    "SELECT seq, time, kind, node_id, entry, prev_hash, entry_hash FROM "
    "audit_log WHERE seq >= ?1 ORDER BY seq LIMIT ?2";
constexpr const char* kEntryAt =
    "SELECT entry_hash FROM audit_log WHERE seq = ?1";
constexpr const char* kFirstForNode =
    "SELECT seq FROM audit_log WHERE node_id = ?1 AND time >= ?2 ORDER BY seq "
    "LIMIT 1";
constexpr const char* kInsertCheckpoint =
    "INSERT INTO audit_checkpoints (size, head_hash, time, jws) VALUES "
    "(?1, ?2, ?3, ?4) ON CONFLICT(size) DO NOTHING";
constexpr const char* kCheckpointAt =
    "SELECT head_hash FROM audit_checkpoints WHERE size = ?1";
constexpr const char* kListCheckpoints =
    "SELECT size, head_hash, time, jws FROM audit_checkpoints ORDER BY size "
    "DESC LIMIT ?1";
constexpr const char* kInsertCollateral =
    "INSERT INTO collateral (sha256, kind, body, first_used_at) VALUES "
    "(?1, ?2, ?3, ?4) ON CONFLICT(sha256) DO NOTHING";
constexpr const char* kSelectCollateral =
    "SELECT kind, body FROM collateral WHERE sha256 = ?1";
constexpr const char* kLastPolicyEntry =
    "SELECT entry FROM audit_log WHERE kind = 'policy.loaded' ORDER BY seq "
    "DESC LIMIT 1";
constexpr const char* kNodeReports =
    "SELECT id, node_id, jws, sha256, received_at, accepted, error, "
    "received_bytes FROM reports WHERE node_id = ?1 AND received_at >= ?2 AND "
    "received_at <= ?3 ORDER BY id";
constexpr const char* kNodeResults =
    "SELECT r.id, r.node_id, r.decision, r.ear_jwt, r.reasons_json, "
    "r.report_jws_sha256, r.created_at, r.expires_at, "
    "coalesce(c.context, '') FROM results r LEFT JOIN result_contexts c ON "
    "c.result_id = r.id WHERE r.node_id = ?1 AND r.created_at >= ?2 AND "
    "r.created_at <= ?3 ORDER BY r.id";

}  // namespace

StatusOr<std::vector<AuditLogRow>> SqlStore::ListAuditLog(int64_t from_seq,
                                                             int64_t limit) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kListEntries, "reading the audit log",
                         [](const Stmt& s) {
                           AuditLogRow r;
                           s.Read(r.seq, r.time, r.kind, r.node_id, r.entry,
                                  r.prev_hash, r.entry_hash);
                           return r;
                         },
                         from_seq, limit);
}

StatusOr<AuditLogHead> SqlStore::GetAuditLogHead() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(
      auto last, conn->QueryOne("SELECT seq, entry_hash FROM audit_log ORDER "
                                 "BY seq DESC LIMIT 1",
                                 "reading the audit log head", [](const Stmt& s) {
                                   return AuditLogHead{s.ColInt(0), s.ColText(1)};
                                 }));
  if (!last) return AuditLogHead{0, std::string(kAuditGenesisHash)};
  return *last;
}

StatusOr<int64_t> SqlStore::FirstAuditSeqForNode(std::string_view node_id,
                                                    int64_t since) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(auto seq, conn->QueryOne(kFirstForNode, "reading the audit log",
                                                 [](const Stmt& s) { return s.ColInt(0); },
                                                 node_id, since));
  return seq ? *seq : 0;
}

Status SqlStore::PutCheckpoint(const CheckpointRecord& cp) {
  if (cp.size < 0 || !IsLowerHexOfLength(cp.head_hash, 64) || cp.jws.empty()) {
    return InvalidArgumentError("checkpoint needs size >= 0, a 64-digit head_hash "
                                "and its JWS.");
  }
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  std::string head(kAuditGenesisHash);
  if (cp.size > 0) {
    DPA_ASSIGN_OR_RETURN(auto at, conn->QueryOne(kEntryAt, "reading the audit log",
                                                  [](const Stmt& s) { return s.ColText(0); },
                                                  cp.size));
    if (!at) {
      return FailedPreconditionError("the audit log has no entry " +
                                     std::to_string(cp.size) + ".");
    }
    head = *at;
  }
  if (head != cp.head_hash) {
    return FailedPreconditionError("checkpoint head_hash is not entry " +
                                   std::to_string(cp.size) + "'s hash.");
  }
  DPA_ASSIGN_OR_RETURN(auto existing,
                       conn->QueryOne(kCheckpointAt, "reading checkpoints",
                                       [](const Stmt& s) { return s.ColText(0); },
                                       cp.size));
  if (existing) {
    if (*existing != cp.head_hash) {
      return AlreadyExistsError("a checkpoint of size " + std::to_string(cp.size) +
                                " with another head exists.");
    }
    return OkStatus();
  }
  DPA_RETURN_IF_ERROR(conn->Run(kInsertCheckpoint, "storing checkpoint", cp.size,
                                 cp.head_hash, cp.time, cp.jws));
  return txn.Commit();
}

StatusOr<std::vector<CheckpointRecord>> SqlStore::ListCheckpoints(int64_t limit) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kListCheckpoints, "reading checkpoints",
                         [](const Stmt& s) {
                           CheckpointRecord r;
                           s.Read(r.size, r.head_hash, r.time, r.jws);
                           return r;
                         },
                         limit);
}

namespace {

Status CheckCollateral(std::string_view kind, std::string_view sha256,
                       std::string_view body) {
  if (kind != "policy" && kind != "refvals") {
    return InvalidArgumentError("collateral kind must be policy or refvals.");
  }
  if (Sha256Hex(AsBytes(body)) != sha256) {
    return InvalidArgumentError("collateral body does not hash to " +
                                std::string(sha256) + ".");
  }
  return OkStatus();
}

}  // namespace

StatusOr<bool> SqlStore::RecordPolicy(std::string_view name, std::string_view sha256,
                                         std::string_view document, int64_t now) {
  DPA_RETURN_IF_ERROR(CheckCollateral("policy", sha256, document));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_RETURN_IF_ERROR(conn->Run(kInsertCollateral, "storing collateral", sha256,
                                 std::string_view("policy"), Blob{std::string(document)},
                                 now));
  DPA_ASSIGN_OR_RETURN(auto last,
                       conn->QueryOne(kLastPolicyEntry, "reading the audit log",
                                       [](const Stmt& s) { return s.ColText(0); }));
  if (last) {
    StatusOr<AuditEntry> e = ParseAuditEntry(*last);
    if (e.ok() && e->data.value("sha256", "") == sha256 &&
        e->data.value("name", "") == name) {
      DPA_RETURN_IF_ERROR(txn.Commit());
      return false;
    }
  }
  DPA_RETURN_IF_ERROR(sqlite::AppendAudit(
      *conn, kAuditPolicy, "",
      {{"name", std::string(name)}, {"sha256", std::string(sha256)},
       {"bytes", static_cast<int64_t>(document.size())}},
      now));
  DPA_RETURN_IF_ERROR(txn.Commit());
  return true;
}

Status SqlStore::PutCollateral(std::string_view kind, std::string_view sha256,
                                  std::string_view body, int64_t now) {
  DPA_RETURN_IF_ERROR(CheckCollateral(kind, sha256, body));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_RETURN_IF_ERROR(conn->Run(kInsertCollateral, "storing collateral", sha256, kind,
                                 Blob{std::string(body)}, now));
  return txn.Commit();
}

StatusOr<std::string> SqlStore::GetCollateral(std::string_view sha256,
                                                 std::string* kind) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(auto row, conn->QueryOne(kSelectCollateral, "reading collateral",
                                                 [](const Stmt& s) {
                                                   std::pair<std::string, std::string> r;
                                                   s.Read(r.first, BlobInto{r.second});
                                                   return r;
                                                 },
                                                 sha256));
  if (!row) return NotFoundError("no collateral " + std::string(sha256) + ".");
  if (kind != nullptr) *kind = row->first;
  return row->second;
}

StatusOr<std::vector<ReportRecord>> SqlStore::ListNodeReports(std::string_view node_id,
                                                                 int64_t since,
                                                                 int64_t until) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kNodeReports, "reading reports",
                         [](const Stmt& s) {
                           ReportRecord r;
                           s.Read(r.id, r.node_id, BlobInto{r.jws}, r.sha256,
                                  r.received_at, r.accepted, r.error, r.received_bytes);
                           return r;
                         },
                         node_id, since, until);
}

StatusOr<std::vector<ResultRecord>> SqlStore::ListNodeResults(std::string_view node_id,
                                                                 int64_t since,
                                                                 int64_t until) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(kNodeResults, "reading results",
                         [](const Stmt& s) {
                           ResultRecord r;
                           s.Read(r.id, r.node_id, r.decision, r.ear_jwt, r.reasons_json,
                                  r.report_jws_sha256, r.created_at, r.expires_at,
                                  r.context_json);
                           return r;
                         },
                         node_id, since, until);
}

}  // namespace dpuaudit::verifier
