// Shared rules for node status, decision events and the outbox (issue 15):
// every backend refuses the same records with the same messages.
#include <algorithm>
#include <string>

#include "verifier/store/store.h"

namespace dpuaudit::verifier {

namespace {
bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}
}  // namespace

Status ValidateNodeStatus(const NodeStatusRecord& s) {
  if (s.node_id.empty()) return InvalidArgumentError("node status: node_id is empty.");
  if (std::find(std::begin(kNodeStatuses), std::end(kNodeStatuses), s.status) ==
      std::end(kNodeStatuses)) {
    return InvalidArgumentError("node status: status \"" + s.status +
                                "\" is not a known status.");
  }
  if (s.last_decision != "" && s.last_decision != kDecisionAdmit &&
      s.last_decision != kDecisionDeny) {
    return InvalidArgumentError("node status: last_decision \"" +
                                s.last_decision + "\" is not admit or deny.");
  }
  if (s.since < 0 || s.last_appraisal_at < 0 || s.last_admit_at < 0 ||
      s.last_result_id < 0 || s.held_result_id < 0 || s.updated_at < 0) {
    return InvalidArgumentError("node status: a time or id is negative.");
  }
  if ((s.status == "held") != !s.held_rules.empty()) {
    return InvalidArgumentError(
        "node status: held_rules must be set exactly when the status is held.");
  }
  return OkStatus();
}

Status ValidateDecisionEvent(const DecisionEvent& e) {
  if (e.event_id.size() != 32 || !IsLowerHex(e.event_id)) {
    return InvalidArgumentError("event: event_id must be 32 lowercase hex digits.");
  }
  if (e.node_id.empty()) return InvalidArgumentError("event: node_id is empty.");
  if (e.type.rfind("node.", 0) != 0) {
    return InvalidArgumentError("event: type \"" + e.type + "\" is not node.*.");
  }
  if (e.at < 0) return InvalidArgumentError("event: at is negative.");
  if (e.payload_json.empty() || e.payload_json.size() > kMaxEventPayloadBytes) {
    return InvalidArgumentError("event: payload_json is empty or over " +
                                std::to_string(kMaxEventPayloadBytes) + " bytes.");
  }
  return OkStatus();
}

}  // namespace dpuaudit::verifier
