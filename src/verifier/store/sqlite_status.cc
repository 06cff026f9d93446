// SqliteStore: node status, decision events and the webhook outbox
// (issue 15, tables node_status, decision_events, webhook_outbox).
#include "verifier/store/sqlite_status.h"

#include "verifier/audit_chain.h"
#include "verifier/store/sqlite_audit.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "verifier/store/sql_store.h"

namespace dpuaudit::verifier {
namespace sqlite {
namespace {

constexpr const char* kSelectStatus =
    "SELECT node_id, status, since, last_decision, last_appraisal_at, "
    "last_admit_at, last_result_id, held_rules, held_result_id, updated_at "
    "FROM node_status WHERE node_id = ?1";
constexpr const char* kSelectAllStatus =
    "SELECT node_id, status, since, last_decision, last_appraisal_at, "
    "last_admit_at, last_result_id, held_rules, held_result_id, updated_at "
    "FROM node_status ORDER BY node_id";
constexpr const char* kSelectStaleCandidates =
    "SELECT node_id, status, since, last_decision, last_appraisal_at, "
    "last_admit_at, last_result_id, held_rules, held_result_id, updated_at "
    "FROM node_status WHERE status IN ('unattested', 'admitted', 'failed') "
    "AND (CASE WHEN last_appraisal_at > 0 THEN last_appraisal_at ELSE since "
    "END) <= ?1 ORDER BY node_id";
constexpr const char* kUpsertStatus =
    "INSERT INTO node_status (node_id, status, since, last_decision, "
    "last_appraisal_at, last_admit_at, last_result_id, held_rules, "
    "held_result_id, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
    "?10) ON CONFLICT (node_id) DO UPDATE SET status = excluded.status, "
    "since = excluded.since, last_decision = excluded.last_decision, "
    "last_appraisal_at = excluded.last_appraisal_at, "
    "last_admit_at = excluded.last_admit_at, "
    "last_result_id = excluded.last_result_id, "
    "held_rules = excluded.held_rules, "
    "held_result_id = excluded.held_result_id, updated_at = excluded.updated_at";
constexpr const char* kInsertEvent =
    "INSERT INTO decision_events (event_id, node_id, type, at, payload_json) "
    "VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr const char* kSelectEvents =
    "SELECT seq, event_id, node_id, type, at, payload_json FROM "
    "decision_events WHERE seq > ?1 AND (?2 = '' OR node_id = ?2) "
    "ORDER BY seq LIMIT ?3";
constexpr const char* kInsertOutbox =
    "INSERT INTO webhook_outbox (event_id, endpoint, created_at, "
    "next_attempt_at, attempts, last_error) VALUES (?1, ?2, ?3, ?3, 0, '')";
constexpr const char* kSelectDue =
    "SELECT o.id, o.event_id, o.endpoint, o.created_at, o.next_attempt_at, "
    "o.attempts, o.last_error, o.last_attempt_at, o.delivered_at, e.seq, "
    "e.event_id, e.node_id, e.type, e.at, e.payload_json FROM webhook_outbox o "
    "JOIN decision_events e ON e.event_id = o.event_id WHERE o.delivered_at "
    "IS NULL AND o.next_attempt_at <= ?1 AND NOT EXISTS (SELECT 1 FROM "
    "webhook_outbox p JOIN decision_events pe ON pe.event_id = p.event_id "
    "WHERE p.endpoint = o.endpoint AND p.delivered_at IS NULL AND "
    "pe.node_id = e.node_id AND p.id < o.id) ORDER BY o.next_attempt_at, "
    "o.id LIMIT ?2";
// PostgreSQL: the due rows (as kSelectDue, and not claimed by a lease that
// is still running) are locked FOR UPDATE SKIP LOCKED, so a concurrent
// claim on another connection or replica passes over them instead of
// waiting, and claimed until ?3 in the same statement; a claimer that ran
// into a row another claim just committed re-checks claimed_until on the
// new row version (READ COMMITTED) and leaves it.
constexpr const char* kClaimDuePg =
    "WITH due AS (SELECT o.id FROM webhook_outbox o JOIN decision_events e "
    "ON e.event_id = o.event_id WHERE o.delivered_at IS NULL AND "
    "o.next_attempt_at <= ?1 AND (o.claimed_until IS NULL OR "
    "o.claimed_until <= ?1) AND NOT EXISTS (SELECT 1 FROM webhook_outbox p "
    "JOIN decision_events pe ON pe.event_id = p.event_id WHERE p.endpoint = "
    "o.endpoint AND p.delivered_at IS NULL AND pe.node_id = e.node_id AND "
    "p.id < o.id) ORDER BY o.next_attempt_at, o.id LIMIT ?2 FOR UPDATE OF o "
    "SKIP LOCKED) UPDATE webhook_outbox w SET claimed_until = ?3 FROM due, "
    "decision_events e WHERE w.id = due.id AND e.event_id = w.event_id "
    "RETURNING w.id, w.event_id, w.endpoint, w.created_at, "
    "w.next_attempt_at, w.attempts, w.last_error, w.last_attempt_at, "
    "w.delivered_at, e.seq, e.event_id, e.node_id, e.type, e.at, "
    "e.payload_json";
constexpr const char* kSelectPending =
    "SELECT o.id, o.event_id, o.endpoint, o.created_at, o.next_attempt_at, "
    "o.attempts, o.last_error, o.last_attempt_at, o.delivered_at FROM "
    "webhook_outbox o WHERE o.delivered_at IS NULL ORDER BY o.id LIMIT ?1";
constexpr const char* kMarkDelivered =
    "UPDATE webhook_outbox SET delivered_at = coalesce(delivered_at, ?2), "
    "last_attempt_at = ?2 WHERE id = ?1";
constexpr const char* kMarkFailed =
    "UPDATE webhook_outbox SET attempts = attempts + 1, last_error = ?3, "
    "last_attempt_at = ?2, next_attempt_at = ?4 WHERE id = ?1 AND "
    "delivered_at IS NULL";
// PostgreSQL: recording the attempt ends the claim.
constexpr const char* kMarkDeliveredPg =
    "UPDATE webhook_outbox SET delivered_at = coalesce(delivered_at, ?2), "
    "last_attempt_at = ?2, claimed_until = NULL WHERE id = ?1";
constexpr const char* kMarkFailedPg =
    "UPDATE webhook_outbox SET attempts = attempts + 1, last_error = ?3, "
    "last_attempt_at = ?2, next_attempt_at = ?4, claimed_until = NULL WHERE "
    "id = ?1 AND delivered_at IS NULL";
constexpr const char* kOutboxIdExists =
    "SELECT count(*) FROM webhook_outbox WHERE id = ?1";
constexpr const char* kOutboxStats =
    "SELECT endpoint, sum(CASE WHEN delivered_at IS NULL THEN 1 ELSE 0 END), "
    "sum(CASE WHEN delivered_at IS NULL AND attempts > 0 THEN 1 ELSE 0 END), "
    "sum(CASE WHEN delivered_at IS NOT NULL THEN 1 ELSE 0 END), "
    "min(CASE WHEN delivered_at IS NULL THEN created_at END), max(delivered_at), "
    "(SELECT last_error FROM webhook_outbox i WHERE i.endpoint = o.endpoint AND "
    "i.last_error != '' ORDER BY i.last_attempt_at DESC, i.id DESC LIMIT 1) "
    "FROM webhook_outbox o GROUP BY endpoint ORDER BY endpoint";

StatusOr<NodeStatusRecord> StatusFromRow(const Stmt& s) {
  NodeStatusRecord r;
  s.Read(r.node_id, r.status, r.since, r.last_decision, r.last_appraisal_at,
         r.last_admit_at, r.last_result_id, r.held_rules, r.held_result_id,
         r.updated_at);
  if (Status v = ValidateNodeStatus(r); !v.ok()) {
    return DataLossError("sqlite: status of node \"" + r.node_id +
                         "\" is corrupt: " + v.message());
  }
  return r;
}

OutboxEntry OutboxFromRow(const Stmt& s) {
  OutboxEntry o;
  s.Read(o.id, o.event_id, o.endpoint, o.created_at, o.next_attempt_at,
         o.attempts, o.last_error, o.last_attempt_at, o.delivered_at);
  return o;
}

DecisionEvent EventFromRow(const Stmt& s, int first) {
  DecisionEvent e;
  e.seq = s.ColInt(first);
  e.event_id = s.ColText(first + 1);
  e.node_id = s.ColText(first + 2);
  e.type = s.ColText(first + 3);
  e.at = s.ColInt(first + 4);
  e.payload_json = s.ColText(first + 5);
  return e;
}

}  // namespace

Status WriteNodeTransition(sql::Connection& c, const NodeTransition& t,
                           int64_t result_id) {
  NodeStatusRecord st = t.status;
  if (result_id > 0) {
    st.last_result_id = result_id;
    if (st.status == "held" && st.held_result_id == 0) st.held_result_id = result_id;
  }
  DPA_RETURN_IF_ERROR(ValidateNodeStatus(st));
  Status s = c.Run(kUpsertStatus, "storing node status", st.node_id, st.status,
                   st.since, st.last_decision, st.last_appraisal_at,
                   st.last_admit_at, st.last_result_id, st.held_rules,
                   st.held_result_id, st.updated_at);
  if (!s.ok()) {
    if (c.LastConstraint() == Constraint::kForeignKey) {
      return NodeNotEnrolledError(st.node_id);
    }
    return s;
  }
  if (!t.event) return OkStatus();
  const DecisionEvent& e = *t.event;
  DPA_RETURN_IF_ERROR(ValidateDecisionEvent(e));
  if (e.node_id != st.node_id) {
    return InvalidArgumentError("event: node_id differs from the status's.");
  }
  s = c.Run(kInsertEvent, "recording decision event", e.event_id, e.node_id,
            e.type, e.at, e.payload_json);
  if (!s.ok()) {
    if (c.LastConstraint() == Constraint::kUnique) {
      return AlreadyExistsError("event " + e.event_id + " is already stored.");
    }
    return s;
  }
  for (const std::string& endpoint : t.endpoints) {
    if (endpoint.empty()) return InvalidArgumentError("outbox: endpoint is empty.");
    DPA_RETURN_IF_ERROR(c.Run(kInsertOutbox, "queueing webhook delivery",
                              e.event_id, endpoint, e.at));
  }
  // A decision change: its audit log entry (issue 16 §1).
  return AppendAudit(c, kAuditStatus, e.node_id,
                     {{"status", st.status},
                      {"event", e.type},
                      {"event_id", e.event_id},
                      {"result_id", st.last_result_id}},
                     e.at);
}

}  // namespace sqlite

using sql::Connection;
using sqlite::Stmt;
using sqlite::Transaction;

StatusOr<NodeStatusRecord> SqlStore::GetNodeStatus(std::string_view node_id) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  DPA_ASSIGN_OR_RETURN(std::optional<NodeStatusRecord> r,
                       conn->QueryOne(sqlite::kSelectStatus, "reading node status",
                                       sqlite::StatusFromRow, node_id));
  if (!r) {
    return NotFoundError("node \"" + std::string(node_id) + "\" has no status yet.");
  }
  return *std::move(r);
}

StatusOr<std::vector<NodeStatusRecord>> SqlStore::ListNodeStatuses() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(sqlite::kSelectAllStatus, "reading node statuses",
                         sqlite::StatusFromRow);
}

StatusOr<std::vector<NodeStatusRecord>> SqlStore::ListStaleCandidates(
    int64_t cutoff) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(sqlite::kSelectStaleCandidates,
                         "reading stale candidates", sqlite::StatusFromRow,
                         cutoff);
}

Status SqlStore::ApplyNodeTransition(const NodeTransition& t) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_RETURN_IF_ERROR(sqlite::WriteNodeTransition(*conn, t, 0));
  return txn.Commit();
}

StatusOr<std::vector<DecisionEvent>> SqlStore::ListDecisionEvents(
    std::string_view node_id, int64_t after_seq, int64_t limit) {
  if (limit < 1 || limit > 1000) {
    return InvalidArgumentError("limit must be 1..1000.");
  }
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(
      sqlite::kSelectEvents, "reading decision events",
      [](const Stmt& s) { return sqlite::EventFromRow(s, 0); }, after_seq,
      node_id, limit);
}

StatusOr<std::vector<OutboxDelivery>> SqlStore::DueOutbox(int64_t now,
                                                            int64_t limit) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(
      sqlite::kSelectDue, "reading due webhook deliveries",
      [](const Stmt& s) {
        return OutboxDelivery{sqlite::OutboxFromRow(s), sqlite::EventFromRow(s, 9)};
      },
      now, limit);
}

StatusOr<std::vector<OutboxDelivery>> SqlStore::ClaimDueOutbox(
    int64_t now, int64_t limit, int64_t lease_seconds) {
  if (dialect() != sql::Dialect::kPostgres) return DueOutbox(now, limit);
  if (lease_seconds < 1) {
    return InvalidArgumentError("outbox: lease_seconds must be at least 1.");
  }
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  // One statement, its own transaction: not under the write lock, so
  // claims on several replicas run side by side and SKIP LOCKED keeps them
  // apart.
  DPA_ASSIGN_OR_RETURN(
      std::vector<OutboxDelivery> claimed,
      conn->QueryAll(
          sqlite::kClaimDuePg, "claiming due webhook deliveries",
          [](const Stmt& s) {
            return OutboxDelivery{sqlite::OutboxFromRow(s), sqlite::EventFromRow(s, 9)};
          },
          now, limit, now + lease_seconds));
  std::sort(claimed.begin(), claimed.end(),
            [](const OutboxDelivery& a, const OutboxDelivery& b) {
              return std::make_pair(a.entry.next_attempt_at, a.entry.id) <
                     std::make_pair(b.entry.next_attempt_at, b.entry.id);
            });
  return claimed;
}

StatusOr<std::vector<OutboxEntry>> SqlStore::PendingOutbox(int64_t limit) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(sqlite::kSelectPending, "reading pending deliveries",
                         sqlite::OutboxFromRow, limit);
}

Status SqlStore::MarkOutboxDelivered(int64_t id, int64_t now) {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  const bool pg = dialect() == sql::Dialect::kPostgres;
  DPA_ASSIGN_OR_RETURN(
      int64_t n, conn->RunChanges(pg ? sqlite::kMarkDeliveredPg : sqlite::kMarkDelivered,
                                  "marking delivery", id, now));
  if (n == 0) return NotFoundError("outbox entry " + std::to_string(id) + " is not known.");
  return txn.Commit();
}

Status SqlStore::MarkOutboxFailed(int64_t id, int64_t now,
                                     int64_t next_attempt_at,
                                     std::string_view error) {
  std::string e(error.substr(0, kMaxReportErrorBytes));
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  DPA_ASSIGN_OR_RETURN(Transaction txn, conn->Begin());
  DPA_ASSIGN_OR_RETURN(int64_t n,
                       conn->RunChanges(dialect() == sql::Dialect::kPostgres
                                            ? sqlite::kMarkFailedPg
                                            : sqlite::kMarkFailed,
                                        "recording failed delivery", id, now, e,
                                        next_attempt_at));
  if (n == 0) {
    DPA_ASSIGN_OR_RETURN(int64_t exists,
                         conn->QueryInt(sqlite::kOutboxIdExists, "reading outbox", id));
    if (exists == 0) {
      return NotFoundError("outbox entry " + std::to_string(id) + " is not known.");
    }
  }
  return txn.Commit();
}

StatusOr<std::vector<OutboxEndpointStats>> SqlStore::OutboxStats() {
  DPA_ASSIGN_OR_RETURN(sql::Lease conn, pool_->Acquire());
  auto lock = conn->Lock();
  return conn->QueryAll(
      sqlite::kOutboxStats, "reading outbox statistics", [](const Stmt& s) {
        OutboxEndpointStats st;
        st.endpoint = s.ColText(0);
        st.pending = s.ColInt(1);
        st.failing = s.ColInt(2);
        st.delivered = s.ColInt(3);
        st.oldest_pending_at = s.ColOptionalInt(4);
        st.last_delivered_at = s.ColOptionalInt(5);
        if (!s.ColIsNull(6)) st.last_error = s.ColText(6);
        return st;
      });
}

}  // namespace dpuaudit::verifier
