#include "apps/verifier/operator_commands.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/shared/exit_code.h"
#include "apps/shared/enrollment_print.h"
#include "apps/verifier/serve.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "report/jws.h"
#include "verifier/audit_events.h"
#include "verifier/service.h"
#include "verifier/store/pg.h"
#include "verifier/store/pg_store.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::apps {
namespace {

constexpr int kExitOk = 0;

// 1 only for a refusal about the node named (wrong key or serial, wrong
// state, expired); an unknown node, a missing database and everything else
// is a usage or runtime error (2), as in `dpuaudit`.
int LocalFail(const Status& s) {
  std::cerr << "dpuaudit-verifier: " << s.message() << "\n";
  return RefusalExitCode(s);
}

std::string ByOrLogin(const std::string& by) {
  if (!by.empty()) return by;
  std::string login = LoginName();
  return login.empty() ? "operator" : login;
}

int64_t Now() { return SystemClock::Get().NowUnixSeconds(); }

// Where a local command's audit event goes (operator_commands.h): the
// --audit-log file through the server's sink, or a line on stderr.
class LocalAuditLog {
 public:
  static StatusOr<LocalAuditLog> Open(const std::string& path) {
    LocalAuditLog log;
    if (!path.empty()) {
      DPA_ASSIGN_OR_RETURN(log.file_, verifier::FileAuditSink::Open(path));
    }
    return log;
  }
  // One event: `outcome` ok or refused (its message is the detail then).
  Status Record(const std::string& event, const std::string& actor,
                const std::string& node_id, const std::string& detail,
                const Status& outcome) const {
    verifier::AuditEvent e = verifier::MakeAuditEvent(
        event, actor, node_id, outcome.ok() ? detail : outcome.message(),
        outcome.ok() ? "ok" : "refused");
    e.at = Now();
    e.source = "local";
    if (file_) return file_->Append(e);
    std::cerr << "dpuaudit-verifier: audit " << verifier::AuditEventLine(e) << "\n";
    return OkStatus();
  }

 private:
  std::unique_ptr<verifier::FileAuditSink> file_;
};

// After an audited action: its refusal decides the exit code; an event
// that could not be written is said, and after a change it is an error (2)
// even though the change stands. -1: go on (print the result, exit 0).
int AfterAudit(const Status& action, const Status& logged) {
  if (!logged.ok()) {
    std::cerr << "dpuaudit-verifier: " << logged.message()
              << (action.ok() ? " (the change above was made; record it by hand)" : "")
              << "\n";
  }
  if (!action.ok()) return LocalFail(action);
  return logged.ok() ? -1 : kUsageExit;
}

void PrintJson(const nlohmann::json& j) {
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// The node as GET /v1/nodes/{id} shows it; its identity alone if the rest
// cannot be read.
nlohmann::json NodeView(verifier::Store& store, const verifier::NodeRecord& n,
                        int64_t pending_ttl) {
  auto j = verifier::NodeViewJson(store, n.node_id, pending_ttl, Now());
  return j.ok() ? *j : verifier::NodeIdentityJson(n);
}

}  // namespace

StatusOr<std::unique_ptr<verifier::SqlStore>> OpenExistingDb(const std::string& db) {
  // The local commands work on an existing database only: SQLite would
  // create a new, empty one for a mistyped --db (and `approve` would then
  // report "not found" about the wrong file, `tokens issue` fill it).
  if (verifier::pg::IsConnInfo(db)) {
    verifier::PgOptions options;
    options.pool_size = 2;
    options.create_schema = false;
    return verifier::OpenStore(db, options);
  }
  std::error_code ec;
  if (db.empty() || !std::filesystem::is_regular_file(db, ec)) {
    return NotFoundError("--db " + db +
                         ": no such database file (the local commands never create one; "
                         "check the path `serve --db` uses).");
  }
  DPA_ASSIGN_OR_RETURN(auto store, verifier::SqliteStore::Open(db));
  return std::unique_ptr<verifier::SqlStore>(std::move(store));
}

int LocalApprove(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  if (f.thumbprint.empty()) {
    // Show what would be approved; approving needs the operator to name it.
    auto n = (*store)->GetNode(f.node);
    if (!n.ok()) return LocalFail(n.status());
    std::cerr << DescribeNodeIdentity(NodeView(**store, *n, *ttl))
              << "dpuaudit-verifier: approving pins a key: compare the thumbprint above with the "
                 "one the device printed at enrollment, then run\n  dpuaudit-verifier approve "
              << f.node << " --thumbprint " << n->key_thumbprint << " --db "
              << verifier::pg::RedactConnInfo(f.db) << "\n";
    return kUsageExit;
  }
  auto audit = LocalAuditLog::Open(f.audit_log);
  if (!audit.ok()) return LocalFail(audit.status());
  verifier::ApprovalRequest req;
  req.key_thumbprint = f.thumbprint;
  req.serial = f.serial;
  req.by = ByOrLogin(f.by);
  req.reason = f.reason;
  req.now = Now();
  req.pending_ttl_seconds = *ttl;
  auto n = (*store)->ApproveEnrollment(f.node, req);
  Status logged = audit->Record("approval", req.by, f.node,
                                n.ok() ? "key " + n->key_thumbprint : "", n.status());
  if (int rc = AfterAudit(n.status(), logged); rc >= 0) return rc;
  if (f.json) {
    PrintJson(verifier::NodeIdentityJson(*n));  // docs/schemas/approve.schema.json
    return kExitOk;
  }
  std::cout << "approved " << f.node << " (key " << n->key_thumbprint
            << (n->device_serial.empty() ? std::string(", no device serial pinned")
                                         : ", device serial " + n->device_serial)
            << ")\n";
  return kExitOk;
}

int LocalReject(const LocalFlags& f) {
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  auto audit = LocalAuditLog::Open(f.audit_log);
  if (!audit.ok()) return LocalFail(audit.status());
  const std::string by = ByOrLogin(f.by);
  Status s = (*store)->RejectNode(f.node, by, f.reason, Now());
  Status logged = audit->Record("rejection", by, f.node, "pending enrollment removed", s);
  if (int rc = AfterAudit(s, logged); rc >= 0) return rc;
  if (f.json) {
    // docs/schemas/reject.schema.json, as POST /v1/nodes/{id}/reject.
    PrintJson({{"node_id", f.node}, {"state", "rejected"}, {"by", by}, {"reason", f.reason}});
    return kExitOk;
  }
  std::cout << "rejected " << f.node << ": the pending enrollment is removed and the id is free\n";
  return kExitOk;
}

int LocalRevoke(const LocalFlags& f) {
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  auto audit = LocalAuditLog::Open(f.audit_log);
  if (!audit.ok()) return LocalFail(audit.status());
  auto n = (*store)->RevokeNodeFor(f.node, f.by, f.reason, Now());
  Status logged = audit->Record("revocation", f.by, f.node, "node revoked", n.status());
  if (int rc = AfterAudit(n.status(), logged); rc >= 0) return rc;
  if (f.json) {
    // docs/schemas/node-revoke.schema.json, as POST /v1/nodes/{id}/revoke.
    PrintJson(verifier::NodeIdentityJson(*n));
    return kExitOk;
  }
  std::cout << "revoked " << f.node << "; its admission is deny from now on\n"
            << DescribeNodeIdentity(NodeView(**store, *n, 0));
  return kExitOk;
}

int LocalNodeShow(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  auto j = verifier::NodeViewJson(**store, f.node, *ttl, Now());
  if (!j.ok()) return LocalFail(j.status());
  if (f.json) {
    PrintJson(*j);  // docs/schemas/node-show.schema.json
  } else {
    std::cout << DescribeNodeIdentity(*j);
  }
  return kExitOk;
}

int LocalNodeList(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  auto list = (*store)->ListNodes();
  if (!list.ok()) return LocalFail(list.status());
  if (f.json) {
    // docs/schemas/nodes-list.schema.json: one page holding every node.
    nlohmann::json a = nlohmann::json::array();
    for (const auto& n : *list) {
      auto j = verifier::NodeListEntryJson(**store, n, *ttl, Now());
      if (!j.ok()) return LocalFail(j.status());
      a.push_back(*std::move(j));
    }
    PrintJson({{"nodes", a}, {"next_after", nullptr}});
    return kExitOk;
  }
  std::printf("%-32s %-9s %-43s %-16s %s\n", "NODE", "STATE", "KEY THUMBPRINT", "SERIAL",
              "CLAIMED SERIAL");
  for (const auto& n : *list) {
    std::string state(verifier::NodeStateName(n.state));
    if (n.state == verifier::NodeState::kPending && *ttl > 0 && n.enrolled_at + *ttl <= Now()) {
      state += "(expired)";
    }
    std::printf("%-32s %-9s %-43s %-16s %s\n", n.node_id.c_str(), state.c_str(),
                n.key_thumbprint.c_str(), n.device_serial.empty() ? "-" : n.device_serial.c_str(),
                n.claimed_serial.empty() ? "-" : n.claimed_serial.c_str());
  }
  return kExitOk;
}

int LocalTokenIssue(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--ttl", f.ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  auto audit = LocalAuditLog::Open(f.audit_log);
  if (!audit.ok()) return LocalFail(audit.status());
  const std::string by = ByOrLogin(f.by);
  auto issued = verifier::IssueEnrollmentToken(**store, f.node, f.serial, *ttl, by, Now());
  Status logged = audit->Record(
      "enrollment_token_issued", by, f.node,
      issued.ok() ? "token " + issued->record.token_id + ", expires at " +
                        std::to_string(issued->record.expires_at)
                  : "",
      issued.status());
  if (int rc = AfterAudit(issued.status(), logged); rc >= 0) return rc;
  nlohmann::json j = verifier::EnrollmentTokenJson(issued->record, Now());
  j["token"] = issued->token;
  return PrintIssuedToken(j, f.out, f.json);
}

int LocalTokenList(const LocalFlags& f) {
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  auto tokens = (*store)->ListEnrollmentTokens();
  if (!tokens.ok()) return LocalFail(tokens.status());
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : *tokens) a.push_back(verifier::EnrollmentTokenJson(t, Now()));
  return PrintTokenList(nlohmann::json{{"tokens", a}}, f.json);
}


int PrintJwks(const std::string& key_file) {
  auto key = EcPrivateKey::LoadFile(key_file);
  if (!key.ok()) {
    std::cerr << "dpuaudit-verifier: " << key.status().message() << "\n";
    return kUsageExit;
  }
  const EcPublicKey& pub = key->public_key();
  // docs/schemas/jwks.schema.json
  std::cout << report::Jwks({{pub.Thumbprint(), pub}}).dump(2) << "\n";
  return kExitOk;
}

int Prune(const PruneFlags& f) {
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  auto audit = LocalAuditLog::Open(f.audit_log);
  if (!audit.ok()) return LocalFail(audit.status());
  const std::string by = ByOrLogin(f.by);
  int64_t now = Now();
  auto nonces = (*store)->PurgeExpiredNonces(now);
  StatusOr<verifier::PruneCounts> counts = nonces.status();
  if (nonces.ok()) {
    counts = (*store)->PruneReports(Retention(f.retain_reports, f.retain_days), now);
  }
  std::string detail;
  if (counts.ok()) {
    detail = "purged " + std::to_string(*nonces) + " expired nonces; deleted " +
             std::to_string(counts->results_deleted) + " results and " +
             std::to_string(counts->refused_deleted) + " refused reports; dropped " +
             std::to_string(counts->bodies_dropped) + " report bodies (retain " +
             std::to_string(f.retain_reports) + " reports, " + std::to_string(f.retain_days) +
             " days)";
  }
  Status logged = audit->Record("prune", by, "", detail, counts.status());
  if (int rc = AfterAudit(counts.status(), logged); rc >= 0) {
    // A store error here is a runtime error, never a refusal.
    return rc == kRefusedExit ? kUsageExit : rc;
  }
  nlohmann::json j = {{"nonces_deleted", *nonces},
                      {"results_deleted", counts->results_deleted},
                      {"refused_deleted", counts->refused_deleted},
                      {"bodies_dropped", counts->bodies_dropped}};
  if (f.json) {
    std::cout << j.dump() << "\n";  // docs/schemas/prune.schema.json
  } else {
    std::cout << "purged " << *nonces << " expired nonces; deleted "
              << counts->results_deleted << " results and " << counts->refused_deleted
              << " refused reports; dropped " << counts->bodies_dropped
              << " report bodies\n";
  }
  return kExitOk;
}

int TpmReset(const TpmResetFlags& f) {
  if (f.force && f.reason.empty()) {
    std::cerr << "dpuaudit-verifier: tpm reset --force needs --reason.\n";
    return kUsageExit;
  }
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return LocalFail(store.status());
  auto audit = LocalAuditLog::Open(f.audit_log);
  if (!audit.ok()) return LocalFail(audit.status());
  auto deleted = (*store)->DeleteTpmBinding(f.node, f.force);
  std::string detail;
  if (deleted.ok()) {
    detail = "deleted the " + std::string(verifier::TpmBindingStateName(deleted->state)) +
             " TPM binding (EK sha256 " + deleted->ek_sha256 + ", AK " +
             deleted->ak_name_hex + ")" + (f.force ? " with --force" : "") +
             (f.reason.empty() ? "" : "; reason: " + f.reason);
  }
  Status logged = audit->Record("tpm_reset", ByOrLogin(f.by), f.node, detail, deleted.status());
  if (!logged.ok()) {
    std::cerr << "dpuaudit-verifier: " << logged.message()
              << (deleted.ok() ? " (the change above was made; record it by hand)" : "")
              << "\n";
  }
  if (!deleted.ok()) {
    std::cerr << "dpuaudit-verifier: " << deleted.status().message() << "\n";
    // "has no TPM binding": nothing to reset (1); as documented in README.md.
    return deleted.status().code() == StatusCode::kNotFound ? kRefusedExit : kUsageExit;
  }
  if (!logged.ok()) return kUsageExit;
  const std::string state(verifier::TpmBindingStateName(deleted->state));
  if (f.json) {
    // docs/schemas/tpm-reset.schema.json
    nlohmann::json j = {{"node_id", f.node},
                        {"deleted_tpm_state", state},
                        {"ek_sha256", deleted->ek_sha256},
                        {"ak_name", deleted->ak_name_hex},
                        {"ek_cert_issuer", deleted->ek_cert_issuer},
                        {"reason", f.reason}};
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "deleted the " << state << " TPM binding of " << f.node
              << " (EK sha256 " << deleted->ek_sha256 << ", AK " << deleted->ak_name_hex
              << ")" << (f.reason.empty() ? "" : "; reason: " + f.reason)
              << "\nthe node keeps its state, key and results; its next "
                 "`dpuaudit-agent enroll` binds its TPM again (for an approved node "
                 "that needs the bootstrap token)\n";
  }
  return kExitOk;
}

}  // namespace dpuaudit::apps
