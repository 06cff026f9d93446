// VerifierService's audit events (issue 15 §3, part "obs";
// verifier/audit_events.h, docs/audit-events-schema.md): each audited call
// runs its *Unaudited form (service.cc) and emits one event naming who
// (actor), what (event, detail), which node and whether it was allowed.
//
// Actors come only from what authenticated: the admin's request "by" (the
// admin token was checked first), "token:<token_id>" for a per-node
// enrollment token, "bootstrap" for the fleet token, "anonymous" otherwise.
// No event carries a token, nonce or report body.
#include <string>

#include "common/crypto.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {
namespace {

constexpr size_t kMaxActorBytes = 128;

// The "by" member of a JSON body ("" when absent or not a string), at most
// kMaxActorBytes. Called only once the admin token was accepted.
std::string ByOf(std::string_view body) {
  nlohmann::json j =
      nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  auto it = j.find("by");
  if (it == j.end() || !it->is_string()) return "";
  std::string by = it->get<std::string>();
  if (by.size() > kMaxActorBytes) by.resize(kMaxActorBytes);
  return by;
}

std::string AdminActor(std::string_view body) {
  std::string by = ByOf(body);
  return by.empty() ? "admin" : by;
}

// A node id from a request, only when it has the node-id form (the
// refused enrollment of an anonymous client names what it asked for).
std::string NodeIdOf(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) return "";
  auto it = j.find("node_id");
  if (it == j.end() || !it->is_string()) return "";
  std::string id = it->get<std::string>();
  if (id.empty() || id.size() > 128) return "";
  for (char c : id) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return "";
  }
  return id;
}

const char* Outcome(const Status& s) { return s.ok() ? "ok" : "refused"; }

}  // namespace

void VerifierService::Audit(AuditEvent e) const {
  if (audit_ == nullptr) return;
  if (e.at == 0) e.at = clock_.NowUnixSeconds();
  const RequestContext& ctx = CurrentRequestContext();
  if (e.client.empty()) e.client = ctx.client;
  if (e.route.empty()) e.route = ctx.route;
  if (e.request_id.empty()) e.request_id = ctx.request_id;
  audit_->Emit(e);
}

StatusOr<EnrollResult> VerifierService::Enroll(
    std::string_view body, std::optional<std::string> bearer) {
  // Who vouches: found the way EnrollUnaudited finds it (a per-node token by
  // its hash, else the fleet token in constant time).
  std::string actor = "anonymous";
  std::string token_id;
  if (bearer.has_value()) {
    auto t = store_->GetEnrollmentToken(Sha256Hex(AsBytes(*bearer)));
    if (t.ok()) {
      token_id = t->token_id;
      actor = "token:" + token_id;
    } else if (const std::string& bootstrap = tokens()->bootstrap;
               !bootstrap.empty() && ConstantTimeEquals(AsBytes(*bearer), AsBytes(bootstrap))) {
      actor = "bootstrap";  // the live token set (SIGHUP may have replaced it)
    }
  }
  StatusOr<EnrollResult> r = EnrollUnaudited(body, bearer);
  AuditEvent e;
  e.event = "enrollment";
  e.actor = actor;
  e.outcome = Outcome(r.status());
  if (r.ok()) {
    e.node_id = r->node.node_id;
    const bool approved = r->node.state == NodeState::kApproved;
    e.detail = std::string(approved ? "approved by token" : "created pending") +
               (r->created ? "" : " (existing record)") + "; key " +
               r->node.key_thumbprint;
  } else {
    e.node_id = NodeIdOf(body);
    e.detail = r.status().message();
  }
  Audit(e);
  if (r.ok() && !token_id.empty()) {
    AuditEvent used;
    used.event = "enrollment_token_used";
    used.actor = actor;
    used.node_id = r->node.node_id;
    used.detail = "token " + token_id;
    used.outcome = "ok";
    Audit(used);
  }
  return r;
}

StatusOr<NodeRecord> VerifierService::Approve(const std::string& node_id,
                                              ApprovalRequest req) {
  const std::string by = req.by;
  StatusOr<NodeRecord> r = ApproveUnaudited(node_id, std::move(req));
  Audit(
      MakeAuditEvent("approval", by, node_id,
                     r.ok() ? "key " + r->key_thumbprint : r.status().message(),
                     Outcome(r.status())));
  return r;
}

StatusOr<nlohmann::json> VerifierService::RevokeNode(
    const std::string& node_id, std::string_view body,
    std::optional<std::string> bearer) {
  if (!CheckAdmin(bearer).ok())
    return RevokeNodeUnaudited(node_id, body, bearer);
  auto r = RevokeNodeUnaudited(node_id, body, bearer);
  Audit(MakeAuditEvent("revocation", AdminActor(body), node_id,
                       r.ok() ? "node revoked" : r.status().message(),
                       Outcome(r.status())));
  return r;
}

StatusOr<nlohmann::json> VerifierService::IssueEnrollmentToken(
    std::string_view body, std::optional<std::string> bearer) {
  if (!CheckAdmin(bearer).ok())
    return IssueEnrollmentTokenUnaudited(body, bearer);
  auto r = IssueEnrollmentTokenUnaudited(body, bearer);
  AuditEvent e = MakeAuditEvent("enrollment_token_issued", AdminActor(body), "",
                                "", Outcome(r.status()));
  if (r.ok()) {
    e.node_id = r->value("node_id", "");
    e.detail = "token " + r->value("token_id", "") + ", expires at " +
               std::to_string(r->value("expires_at", int64_t{0}));
  } else {
    e.node_id = NodeIdOf(body);
    e.detail = r.status().message();
  }
  Audit(e);
  return r;
}

StatusOr<nlohmann::json> VerifierService::RevokeEnrollmentToken(
    const std::string& token_id, std::string_view body,
    std::optional<std::string> bearer) {
  if (!CheckAdmin(bearer).ok())
    return RevokeEnrollmentTokenUnaudited(token_id, body, bearer);
  auto r = RevokeEnrollmentTokenUnaudited(token_id, body, bearer);
  Audit(MakeAuditEvent("enrollment_token_revoked", AdminActor(body),
                       r.ok() ? r->value("node_id", "") : "",
                       r.ok()
                           ? "token " + token_id
                           : "token " + token_id + ": " + r.status().message(),
                       Outcome(r.status())));
  return r;
}

StatusOr<nlohmann::json> VerifierService::ImportRefvals(
    std::string_view body, std::optional<std::string> bearer) {
  if (!CheckAdmin(bearer).ok()) return ImportRefvalsUnaudited(body, bearer);
  auto r = ImportRefvalsUnaudited(body, bearer);
  std::string detail;
  if (r.ok()) {
    detail = "imported";
    if (r->contains("imported") && (*r)["imported"].is_array()) {
      for (const auto& rel : (*r)["imported"]) {
        if (rel.is_string()) detail += " " + rel.get<std::string>();
      }
    }
  } else {
    detail = r.status().message();
  }
  Audit(MakeAuditEvent("refvals_import", "admin", "", detail,
                       Outcome(r.status())));
  return r;
}

StatusOr<nlohmann::json> VerifierService::TransitionRefval(
    const std::string& release, std::string_view action, std::string_view body,
    std::optional<std::string> bearer) {
  if (!CheckAdmin(bearer).ok())
    return TransitionRefvalUnaudited(release, action, body, bearer);
  auto r = TransitionRefvalUnaudited(release, action, body, bearer);
  std::string detail = std::string(action) + " " + release;
  if (r.ok()) {
    if (r->contains("changed") && (*r)["changed"].is_array()) {
      for (const auto& c : (*r)["changed"]) {
        detail += "; " + c.value("release", "") + " -> " + c.value("state", "");
      }
    }
  } else {
    detail += ": " + r.status().message();
  }
  Audit(MakeAuditEvent("refvals_transition", AdminActor(body), "", detail,
                       Outcome(r.status())));
  return r;
}

StatusOr<nlohmann::json> VerifierService::RebindBmc(
    const std::string& node_id, std::string_view body,
    std::optional<std::string> bearer) {
  if (!CheckAdmin(bearer).ok())
    return RebindBmcUnaudited(node_id, body, bearer);
  auto r = RebindBmcUnaudited(node_id, body, bearer);
  Audit(MakeAuditEvent(
      "bmc_rebind", AdminActor(body), node_id,
      r.ok() ? "bound to the IRoT identity of the latest verified pull"
             : r.status().message(),
      Outcome(r.status())));
  return r;
}

StatusOr<nlohmann::json> VerifierService::ApproveSpdmBaseline(
    const std::string& node_id, const std::string& target,
    std::string_view body, std::optional<std::string> bearer) {
  if (!CheckAdmin(bearer).ok()) {
    return ApproveSpdmBaselineUnaudited(node_id, target, body, bearer);
  }
  auto r = ApproveSpdmBaselineUnaudited(node_id, target, body, bearer);
  Audit(MakeAuditEvent(
      "spdm_approve", AdminActor(body), node_id,
      r.ok() ? target + " baseline set" : target + ": " + r.status().message(),
      Outcome(r.status())));
  return r;
}

}  // namespace dpuaudit::verifier
