// The operator interface to nodes over the admin API (issue 15 §5):
// request parsers (verifier/node_admin.h) and the VerifierService members
// ListNodesPage, ApproveNode and RejectNodeByAdmin (verifier/service.h),
// and NodeListEntryJson.
#include "verifier/node_admin.h"

#include <algorithm>
#include <charconv>

#include "common/strict_json.h"
#include "report/node_id.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {
namespace {

StatusOr<strict_json::ObjectReader> ParseBody(std::string_view body, nlohmann::json& holder) {
  if (body.size() > kMaxNodeAdminBodyBytes) {
    return ResourceExhaustedError("request body exceeds " +
                                  std::to_string(kMaxNodeAdminBodyBytes) + " bytes.");
  }
  DPA_ASSIGN_OR_RETURN(holder, strict_json::ParseStrictJson(AsBytes(body), "request body"));
  if (!holder.is_object()) return InvalidArgumentError("request body must be a JSON object.");
  return strict_json::ObjectReader::New(holder, "");
}

// 1..max characters of printable ASCII.
Status CheckLabel(std::string_view field, const std::string& v, size_t max) {
  if (v.empty() || v.size() > max) {
    return InvalidArgumentError("\"" + std::string(field) + "\" must be 1-" +
                                std::to_string(max) + " characters.");
  }
  for (char c : v) {
    if (c < 0x20 || c > 0x7e) {
      return InvalidArgumentError("\"" + std::string(field) + "\" may only use printable ASCII.");
    }
  }
  return OkStatus();
}

// An RFC 7638 SHA-256 JWK thumbprint: 43 base64url characters.
Status CheckThumbprint(const std::string& t) {
  bool ok = t.size() == 43 && std::all_of(t.begin(), t.end(), [](char c) {
              return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                     (c >= '0' && c <= '9') || c == '-' || c == '_';
            });
  if (!ok) {
    return InvalidArgumentError(
        "\"thumbprint\" must be an RFC 7638 key thumbprint (43 base64url characters, as "
        "dpuaudit-agent enroll prints it).");
  }
  return OkStatus();
}

}  // namespace

StatusOr<ApproveBody> ParseApproveBody(std::string_view body) {
  nlohmann::json j;
  DPA_ASSIGN_OR_RETURN(strict_json::ObjectReader r, ParseBody(body, j));
  ApproveBody b;
  DPA_ASSIGN_OR_RETURN(b.thumbprint, r.String("thumbprint"));
  DPA_ASSIGN_OR_RETURN(b.by, r.String("by"));
  bool present = false;
  DPA_ASSIGN_OR_RETURN(b.serial, r.OptionalString("serial", &present));
  if (present) DPA_RETURN_IF_ERROR(CheckLabel("serial", b.serial, 64));
  DPA_ASSIGN_OR_RETURN(b.reason, r.OptionalString("reason", &present));
  if (present) DPA_RETURN_IF_ERROR(CheckLabel("reason", b.reason, 512));
  DPA_RETURN_IF_ERROR(r.Finish());
  DPA_RETURN_IF_ERROR(CheckThumbprint(b.thumbprint));
  DPA_RETURN_IF_ERROR(CheckLabel("by", b.by, 128));
  return b;
}

StatusOr<RejectBody> ParseRejectBody(std::string_view body) {
  nlohmann::json j;
  DPA_ASSIGN_OR_RETURN(strict_json::ObjectReader r, ParseBody(body, j));
  RejectBody b;
  DPA_ASSIGN_OR_RETURN(b.by, r.String("by"));
  DPA_ASSIGN_OR_RETURN(b.reason, r.String("reason"));
  DPA_RETURN_IF_ERROR(r.Finish());
  DPA_RETURN_IF_ERROR(CheckLabel("by", b.by, 128));
  DPA_RETURN_IF_ERROR(CheckLabel("reason", b.reason, 512));
  return b;
}

StatusOr<NodeListQuery> ParseNodeListQuery(const std::optional<std::string>& limit,
                                           const std::optional<std::string>& after) {
  NodeListQuery q;
  if (limit) {
    int64_t v = 0;
    const char* end = limit->data() + limit->size();
    auto [p, ec] = std::from_chars(limit->data(), end, v);
    if (limit->empty() || ec != std::errc() || p != end || v < 1 || v > kMaxNodeListLimit) {
      return InvalidArgumentError("query parameter \"limit\" must be an integer 1-" +
                                  std::to_string(kMaxNodeListLimit) + ".");
    }
    q.limit = v;
  }
  if (after) {
    DPA_RETURN_IF_ERROR(report::ValidateNodeId(*after, "query parameter \"after\""));
    q.after = *after;
  }
  return q;
}

StatusOr<nlohmann::json> NodeListEntryJson(Store& store, const NodeRecord& n,
                                           int64_t pending_ttl_seconds, int64_t now) {
  nlohmann::json j = NodeIdentityJson(n);
  if (n.state == NodeState::kPending && pending_ttl_seconds > 0) {
    j["pending_expires_at"] = n.enrolled_at + pending_ttl_seconds;
  }
  j["latest_decision"] = nullptr;
  j["latest_decision_at"] = nullptr;
  j["latest_expires_at"] = nullptr;
  auto latest = store.LatestResult(n.node_id);
  if (latest.ok()) {
    // A result made before a re-enrollment never counts (GetAdmission).
    if (latest->id > n.stale_result_id) {
      j["latest_decision"] = latest->decision;
      j["latest_decision_at"] = latest->created_at;
      j["latest_expires_at"] = latest->expires_at;
      j["latest_expired"] = now >= latest->expires_at;
    }
  } else if (latest.status().code() != StatusCode::kNotFound) {
    return latest.status();
  }
  return j;
}

StatusOr<nlohmann::json> VerifierService::ListNodesPage(
    const std::optional<std::string>& limit, const std::optional<std::string>& after,
    const std::optional<std::string>& bearer) {
  DPA_RETURN_IF_ERROR(CheckReader(bearer));
  DPA_ASSIGN_OR_RETURN(NodeListQuery q, ParseNodeListQuery(limit, after));
  // Store::ListNodes is ordered by node id: the page is the first `limit`
  // ids after `after`.
  DPA_ASSIGN_OR_RETURN(std::vector<NodeRecord> all, store_->ListNodes());
  const int64_t now = clock_.NowUnixSeconds();
  nlohmann::json nodes = nlohmann::json::array();
  nlohmann::json next_after = nullptr;
  for (const NodeRecord& n : all) {
    if (!q.after.empty() && n.node_id <= q.after) continue;
    if (static_cast<int64_t>(nodes.size()) == q.limit) {
      next_after = nodes.back()["node_id"];
      break;
    }
    DPA_ASSIGN_OR_RETURN(nlohmann::json j,
                         NodeListEntryJson(*store_, n, options_.pending_ttl_seconds, now));
    nodes.push_back(std::move(j));
  }
  return nlohmann::json{{"nodes", std::move(nodes)}, {"next_after", next_after}};
}

StatusOr<nlohmann::json> VerifierService::ApproveNode(const std::string& node_id,
                                                      std::string_view body,
                                                      const std::optional<std::string>& bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  DPA_RETURN_IF_ERROR(report::ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(ApproveBody b, ParseApproveBody(body));
  ApprovalRequest req;
  req.key_thumbprint = b.thumbprint;
  req.serial = b.serial;
  req.by = b.by;
  req.reason = b.reason;
  // Approve fills in now and the pending TTL; a thumbprint that is not the
  // stored one is FAILED_PRECONDITION (HTTP 409) naming both.
  DPA_ASSIGN_OR_RETURN(NodeRecord n, Approve(node_id, std::move(req)));
  return NodeIdentityJson(n);
}

StatusOr<nlohmann::json> VerifierService::RejectNodeByAdmin(
    const std::string& node_id, std::string_view body, const std::optional<std::string>& bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  // Audited as "rejection" once the admin token was accepted (a wrong one
  // is an auth_failure), like the other admin actions (service_audit.cc).
  std::string by = "admin";
  auto rejected = [&]() -> StatusOr<nlohmann::json> {
    DPA_RETURN_IF_ERROR(report::ValidateNodeId(node_id));
    DPA_ASSIGN_OR_RETURN(RejectBody b, ParseRejectBody(body));
    by = b.by;
    DPA_RETURN_IF_ERROR(store_->RejectNode(node_id, b.by, b.reason, clock_.NowUnixSeconds()));
    return nlohmann::json{{"node_id", node_id}, {"state", "rejected"}, {"by", b.by},
                          {"reason", b.reason}};
  }();
  Audit(MakeAuditEvent("rejection", by, report::ValidateNodeId(node_id).ok() ? node_id : "",
                       rejected.ok() ? "pending enrollment removed"
                                     : rejected.status().message(),
                       rejected.ok() ? "ok" : "refused"));
  return rejected;
}

}  // namespace dpuaudit::verifier
