// The operator interface to nodes over the admin API (issue 15 §5): the
// strict request parsers behind GET /v1/nodes, POST /v1/nodes/{id}/approve
// and POST /v1/nodes/{id}/reject (the VerifierService members that use them
// are declared in verifier/service.h and defined in node_admin.cc).
//
// Guarantees: a body is a JSON object of at most kMaxNodeAdminBodyBytes,
// parsed strictly (common/strict_json.h: UTF-8, no duplicate keys, no
// trailing bytes); an unknown member, a missing required member or a
// member of the wrong type is INVALID_ARGUMENT naming it; "by", "reason",
// "serial" are printable ASCII of bounded length; "thumbprint" is 43
// base64url characters (an RFC 7638 SHA-256 thumbprint). The query of a
// list is a limit 1..kMaxNodeListLimit and an optional node id to start
// after.
// Does not: look anything up or change state.
#ifndef DPUAUDIT_VERIFIER_NODE_ADMIN_H_
#define DPUAUDIT_VERIFIER_NODE_ADMIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dpuaudit::verifier {

inline constexpr size_t kMaxNodeAdminBodyBytes = 16 * 1024;
inline constexpr int64_t kDefaultNodeListLimit = 100;
inline constexpr int64_t kMaxNodeListLimit = 1000;

// POST /v1/nodes/{id}/approve: {"thumbprint", "serial"?, "by", "reason"?}.
struct ApproveBody {
  std::string thumbprint;
  std::string serial;  // "" = pin the claimed serial, if any
  std::string by;
  std::string reason;
};
StatusOr<ApproveBody> ParseApproveBody(std::string_view body);

// POST /v1/nodes/{id}/reject: {"by", "reason"}.
struct RejectBody {
  std::string by;
  std::string reason;
};
StatusOr<RejectBody> ParseRejectBody(std::string_view body);

// GET /v1/nodes?limit=N&after=ID (each optional).
struct NodeListQuery {
  int64_t limit = kDefaultNodeListLimit;
  std::string after;  // "" = from the first node id
};
StatusOr<NodeListQuery> ParseNodeListQuery(const std::optional<std::string>& limit,
                                           const std::optional<std::string>& after);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_NODE_ADMIN_H_
