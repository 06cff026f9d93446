#include "verifier/node_status.h"

#include <string>

namespace dpuaudit::verifier {
namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) {
    if (!out.empty()) out += ",";
    out += s;
  }
  return out;
}

// `next` with `status` entered at `now`, and the event when it changed.
StatusStep Move(const NodeStatusRecord& prev, NodeStatusRecord next,
                std::string_view status, int64_t now, std::string_view event,
                std::string detail) {
  next.updated_at = now;
  StatusStep step;
  if (prev.status != status) {
    next.status = std::string(status);
    next.since = now;
    step.event_type = std::string(event);
  }
  if (next.status != kStatusHeld) {
    next.held_rules.clear();
    next.held_result_id = 0;
  }
  step.status = std::move(next);
  step.detail = std::move(detail);
  return step;
}

}  // namespace

NodeStatusRecord InitialStatus(const std::string& node_id, int64_t now) {
  NodeStatusRecord s;
  s.node_id = node_id;
  s.status = std::string(kStatusUnattested);
  s.since = now;
  s.updated_at = now;
  return s;
}

int64_t LastActivity(const NodeStatusRecord& s) {
  return s.last_appraisal_at > 0 ? s.last_appraisal_at : s.since;
}

bool IsStale(const NodeStatusRecord& s, int64_t now,
             int64_t stale_after_seconds) {
  return stale_after_seconds > 0 &&
         now - LastActivity(s) >= stale_after_seconds;
}

StatusStep AfterResult(const NodeStatusRecord& prev, const JudgedResult& r,
                       int64_t now) {
  NodeStatusRecord next = prev;
  next.last_decision = r.decision;
  next.last_appraisal_at = r.created_at;
  const bool admit = r.decision == kDecisionAdmit;
  if (admit) next.last_admit_at = r.created_at;
  if (prev.status == kStatusRevoked) {
    // Results of a revoked node never change its status.
    return Move(prev, next, kStatusRevoked, now, "", "the node is revoked");
  }
  if (prev.status == kStatusHeld) {
    // Held: a passing report is recorded but changes nothing; further
    // sticky failures join the held rules.
    for (const std::string& rule : r.sticky_failures) {
      if (("," + next.held_rules + ",").find("," + rule + ",") == std::string::npos) {
        next.held_rules += "," + rule;
      }
    }
    return Move(prev, next, kStatusHeld, now, "",
                admit ? "a passing report does not clear a sticky failure; "
                        "an administrator must acknowledge it"
                      : "still failing");
  }
  if (!r.sticky_failures.empty()) {
    next.held_rules = Join(r.sticky_failures);
    next.held_result_id = 0;  // set by the caller to the result's id
    return Move(prev, next, kStatusHeld, now, "node.held",
                "sticky rule(s) " + next.held_rules +
                    " failed; denied until an administrator acknowledges it");
  }
  if (admit) {
    return Move(prev, next, kStatusAdmitted, now, "node.admitted",
                "a fresh report passed the policy");
  }
  return Move(prev, next, kStatusFailed, now, "node.denied",
              "a report was denied by the policy");
}

StatusStep AfterSweep(const NodeStatusRecord& prev, int64_t now,
                      int64_t stale_after_seconds) {
  if (prev.status == kStatusHeld || prev.status == kStatusStale ||
      prev.status == kStatusRevoked || !IsStale(prev, now, stale_after_seconds)) {
    return StatusStep{prev, std::nullopt, ""};
  }
  return Move(prev, prev, kStatusStale, now, "node.stale",
              "no report appraised since " + std::to_string(LastActivity(prev)) +
                  " (stale after " + std::to_string(stale_after_seconds) + " s)");
}

StatusStep AfterApproval(const std::optional<NodeStatusRecord>& prev,
                         const std::string& node_id, int64_t now) {
  if (!prev) {
    StatusStep step;
    step.status = InitialStatus(node_id, now);
    step.event_type = "node.approved";
    step.detail = "the node was approved";
    return step;
  }
  if (prev->status != kStatusRevoked) return StatusStep{*prev, std::nullopt, ""};
  NodeStatusRecord next = InitialStatus(node_id, now);
  return Move(*prev, next, kStatusUnattested, now, "node.reapproved",
              "the node was approved again after its revocation; it is denied "
              "until a fresh report passes");
}

StatusStep AfterRevocation(const std::optional<NodeStatusRecord>& prev,
                           const std::string& node_id, int64_t now,
                           const std::string& reason) {
  NodeStatusRecord base = prev ? *prev : InitialStatus(node_id, now);
  if (!prev) base.status.clear();  // so the move below is a change
  return Move(base, base, kStatusRevoked, now, "node.revoked",
              "revoked: " + reason);
}

StatusOr<StatusStep> AfterAcknowledgement(const NodeStatusRecord& prev,
                                          int64_t now, const std::string& by,
                                          const std::string& reason) {
  if (prev.status != kStatusHeld) {
    return FailedPreconditionError("node " + prev.node_id + " is not held (status " +
                                   prev.status + "); nothing to acknowledge.");
  }
  return Move(prev, prev, kStatusFailed, now, "node.acknowledged",
              "sticky failure of " + prev.held_rules + " acknowledged by " + by +
                  ": " + reason + "; admitted again only by a fresh passing report");
}

std::string_view StatusDecision(std::string_view status) {
  return status == kStatusAdmitted ? kDecisionAdmit : kDecisionDeny;
}

}  // namespace dpuaudit::verifier
