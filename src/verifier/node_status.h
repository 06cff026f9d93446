// Node status (issue 15, docs/events.md#states): what a relying party acts
// on, derived from durable timestamps and results only, and the decision
// events its changes make.
//
//   unattested  approved, no result yet                       -> deny
//   admitted    the latest result admits and is fresh         -> admit
//   failed      the latest result denies (a report was judged) -> deny
//   stale       no fresh result within stale_after_seconds    -> deny
//               (unreachable: no report; distinct from failed)
//   held        a sticky rule failed; denied until an         -> deny
//               administrator acknowledges it, whatever passes
//   revoked     revoked by an administrator                    -> deny
//
// Guarantees:
//  - Pure: no store, no clock; every function maps (previous status, what
//    happened, now) to the next status and the event type, if any.
//  - Never fails open: only a result that admits leads to "admitted"; a
//    stale node is not revived by time, a restart or a sweep (only a fresh
//    admitting result revives it); "held" leaves only by an
//    acknowledgement (to "failed", so a fresh passing report is still
//    needed) or a revocation; an acknowledgement of anything else is
//    refused.
//  - An event is produced exactly when `status` changes; its type names
//    the new status: node.admitted, node.denied (-> failed), node.stale,
//    node.held, node.acknowledged (held -> failed), node.revoked,
//    node.approved (first approval), node.reapproved (approved again
//    after a revocation).
// Does not: decide admission by itself for "admitted" (the caller still
// checks the EAR's signature and expiry), or store anything.
#ifndef DPUAUDIT_VERIFIER_NODE_STATUS_H_
#define DPUAUDIT_VERIFIER_NODE_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

inline constexpr std::string_view kStatusUnattested = "unattested";
inline constexpr std::string_view kStatusAdmitted = "admitted";
inline constexpr std::string_view kStatusFailed = "failed";
inline constexpr std::string_view kStatusStale = "stale";
inline constexpr std::string_view kStatusHeld = "held";
inline constexpr std::string_view kStatusRevoked = "revoked";

// The next status and, when it changed, the event type.
struct StatusStep {
  NodeStatusRecord status;
  std::optional<std::string> event_type;  // set exactly when status changed
  std::string detail;                     // one sentence: why
};

// A result just judged for the node: its decision, its time and the ids
// of the sticky deny rules it failed (policy "sticky": true).
struct JudgedResult {
  std::string decision;  // kDecisionAdmit | kDecisionDeny
  int64_t created_at = 0;
  std::vector<std::string> sticky_failures;
};

// A node's first status row (approved nodes only; nullopt otherwise).
NodeStatusRecord InitialStatus(const std::string& node_id, int64_t now);
StatusStep AfterResult(const NodeStatusRecord& prev, const JudgedResult& r,
                       int64_t now);
// Stale when the last activity (the latest result, or entering the status
// before any) is at least stale_after_seconds old; unchanged otherwise, or
// when stale_after_seconds is 0, or for held / stale / revoked.
StatusStep AfterSweep(const NodeStatusRecord& prev, int64_t now,
                      int64_t stale_after_seconds);
// Approved (again): unattested. node.approved the first time,
// node.reapproved after a revocation; unchanged when already approved.
StatusStep AfterApproval(const std::optional<NodeStatusRecord>& prev,
                         const std::string& node_id, int64_t now);
StatusStep AfterRevocation(const std::optional<NodeStatusRecord>& prev,
                           const std::string& node_id, int64_t now,
                           const std::string& reason);
// held -> failed, naming who and why; FAILED_PRECONDITION for any other
// status ("node X is not held (status S); nothing to acknowledge.").
StatusOr<StatusStep> AfterAcknowledgement(const NodeStatusRecord& prev,
                                          int64_t now, const std::string& by,
                                          const std::string& reason);

// Whether the node's latest activity is older than stale_after_seconds at
// `now` (0: never): what admission checks itself, so a node whose sweep has
// not run yet is already denied.
bool IsStale(const NodeStatusRecord& s, int64_t now,
             int64_t stale_after_seconds);
int64_t LastActivity(const NodeStatusRecord& s);

// The relying party's view: "admit" only for admitted (and fresh).
std::string_view StatusDecision(std::string_view status);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_NODE_STATUS_H_
