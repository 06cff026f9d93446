#include "apps/verifier/operator_commands.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/shared/enrollment_print.h"
#include "apps/verifier/serve.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "report/jws.h"
#include "verifier/service.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::apps {
namespace {

// 1 only for a refusal about the node named (wrong key or serial, wrong
// state, expired); an unknown node, a missing database and everything else
// is a usage or runtime error (2), as in `dpuaudit`.
int LocalFail(const Status& s) {
  std::cerr << "dpuaudit-verifier: " << s.message() << "\n";
  switch (s.code()) {
    case StatusCode::kFailedPrecondition:
    case StatusCode::kDeadlineExceeded:
      return 1;
    default:
      return 2;
  }
}

// The local commands work on an existing database only: SQLite would
// create a new, empty one for a mistyped --db (and `approve` would then
// report "not found" about the wrong file, `tokens issue` fill it).
StatusOr<std::unique_ptr<verifier::SqliteStore>> OpenExistingDb(const std::string& db) {
  std::error_code ec;
  if (db.empty() || !std::filesystem::is_regular_file(db, ec)) {
    return NotFoundError("--db " + db +
                         ": no such database file (the local commands never create one; "
                         "check the path `serve --db` uses).");
  }
  return verifier::SqliteStore::Open(db);
}

StatusOr<std::unique_ptr<verifier::SqliteStore>> OpenDb(const LocalFlags& f) {
  return OpenExistingDb(f.db);
}

std::string ByOrLogin(const std::string& by) {
  if (!by.empty()) return by;
  std::string login = LoginName();
  return login.empty() ? "operator" : login;
}

int64_t Now() { return SystemClock::Get().NowUnixSeconds(); }

nlohmann::json LocalNodeJson(verifier::Store& store, const verifier::NodeRecord& n,
                             int64_t pending_ttl) {
  nlohmann::json j = verifier::NodeIdentityJson(n);
  if (n.state == verifier::NodeState::kPending && pending_ttl > 0) {
    j["pending_expires_at"] = n.enrolled_at + pending_ttl;
    j["pending_expired"] = n.enrolled_at + pending_ttl <= Now();
  }
  auto history = store.NodeHistory(n.node_id);
  if (history.ok()) {
    nlohmann::json h = nlohmann::json::array();
    for (const auto& e : *history) {
      h.push_back({{"at", e.at}, {"event", e.event}, {"by", e.actor}, {"detail", e.detail}});
    }
    j["history"] = std::move(h);
  }
  return j;
}

}  // namespace

int LocalApprove(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  if (f.thumbprint.empty()) {
    // Show what would be approved; approving needs the operator to name it.
    auto n = (*store)->GetNode(f.node);
    if (!n.ok()) return LocalFail(n.status());
    std::cerr << DescribeNodeIdentity(LocalNodeJson(**store, *n, *ttl))
              << "dpuaudit-verifier: approving pins a key: compare the thumbprint above with the "
                 "one the device printed at enrollment, then run\n  dpuaudit-verifier approve "
              << f.node << " --thumbprint " << n->key_thumbprint << " --db " << f.db << "\n";
    return 2;
  }
  verifier::ApprovalRequest req;
  req.key_thumbprint = f.thumbprint;
  req.serial = f.serial;
  req.by = ByOrLogin(f.by);
  req.reason = f.reason;
  req.now = Now();
  req.pending_ttl_seconds = *ttl;
  auto n = (*store)->ApproveEnrollment(f.node, req);
  if (!n.ok()) return LocalFail(n.status());
  std::cout << "approved " << f.node << " (key " << n->key_thumbprint
            << (n->device_serial.empty() ? std::string(", no device serial pinned")
                                         : ", device serial " + n->device_serial)
            << ")\n";
  return 0;
}

int LocalReject(const LocalFlags& f) {
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  Status s = (*store)->RejectNode(f.node, ByOrLogin(f.by), f.reason, Now());
  if (!s.ok()) return LocalFail(s);
  std::cout << "rejected " << f.node << ": the pending enrollment is removed and the id is free\n";
  return 0;
}

int LocalRevoke(const LocalFlags& f) {
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto n = (*store)->RevokeNodeFor(f.node, f.by, f.reason, Now());
  if (!n.ok()) return LocalFail(n.status());
  std::cout << "revoked " << f.node << "; its admission is deny from now on\n"
            << DescribeNodeIdentity(LocalNodeJson(**store, *n, 0));
  return 0;
}

int LocalNodeShow(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto n = (*store)->GetNode(f.node);
  if (!n.ok()) return LocalFail(n.status());
  nlohmann::json j = LocalNodeJson(**store, *n, *ttl);
  if (f.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << DescribeNodeIdentity(j);
  }
  return 0;
}

int LocalNodeList(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto list = (*store)->ListNodes();
  if (!list.ok()) return LocalFail(list.status());
  if (f.json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& n : *list) {
      nlohmann::json j = verifier::NodeIdentityJson(n);
      if (n.state == verifier::NodeState::kPending && *ttl > 0) {
        j["pending_expires_at"] = n.enrolled_at + *ttl;
      }
      a.push_back(std::move(j));
    }
    std::cout << nlohmann::json{{"nodes", a}}.dump(2) << "\n";
    return 0;
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
  return 0;
}

int LocalTokenIssue(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--ttl", f.ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto issued =
      verifier::IssueEnrollmentToken(**store, f.node, f.serial, *ttl, ByOrLogin(f.by), Now());
  if (!issued.ok()) return LocalFail(issued.status());
  nlohmann::json j = verifier::EnrollmentTokenJson(issued->record, Now());
  j["token"] = issued->token;
  return PrintIssuedToken(j, f.out, f.json);
}

int LocalTokenList(const LocalFlags& f) {
  auto store = OpenDb(f);
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
    return 2;
  }
  const EcPublicKey& pub = key->public_key();
  std::cout << report::Jwks({{pub.Thumbprint(), pub}}).dump(2) << "\n";
  return 0;
}

int Prune(const PruneFlags& f) {
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) {
    std::cerr << "dpuaudit-verifier: " << store.status().message() << "\n";
    return 2;
  }
  int64_t now = SystemClock::Get().NowUnixSeconds();
  auto nonces = (*store)->PurgeExpiredNonces(now);
  if (!nonces.ok()) {
    std::cerr << "dpuaudit-verifier: " << nonces.status().message() << "\n";
    return 2;
  }
  auto counts = (*store)->PruneReports(Retention(f.retain_reports, f.retain_days), now);
  if (!counts.ok()) {
    std::cerr << "dpuaudit-verifier: " << counts.status().message() << "\n";
    return 2;
  }
  nlohmann::json j = {{"nonces_deleted", *nonces},
                      {"results_deleted", counts->results_deleted},
                      {"refused_deleted", counts->refused_deleted},
                      {"bodies_dropped", counts->bodies_dropped}};
  if (f.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "purged " << *nonces << " expired nonces; deleted "
              << counts->results_deleted << " results and " << counts->refused_deleted
              << " refused reports; dropped " << counts->bodies_dropped
              << " report bodies\n";
  }
  return 0;
}

int TpmReset(const TpmResetFlags& f) {
  if (f.force && f.reason.empty()) {
    std::cerr << "dpuaudit-verifier: tpm reset --force needs --reason.\n";
    return 2;
  }
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) {
    std::cerr << "dpuaudit-verifier: " << store.status().message() << "\n";
    return 2;
  }
  auto deleted = (*store)->DeleteTpmBinding(f.node, f.force);
  if (!deleted.ok()) {
    std::cerr << "dpuaudit-verifier: " << deleted.status().message() << "\n";
    return deleted.status().code() == StatusCode::kNotFound ? 1 : 2;
  }
  const std::string state(verifier::TpmBindingStateName(deleted->state));
  if (f.json) {
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
  return 0;
}

}  // namespace dpuaudit::apps
