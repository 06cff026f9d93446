// VerifierService: node status, decision events and webhooks (issue 15,
// verifier/node_status.h, docs/events.md).
#include <algorithm>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/strict_json.h"
#include "report/node_id.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;

constexpr size_t kMaxAckBodyBytes = 4096;

StatusOr<std::string> NewEventId() {
  DPA_ASSIGN_OR_RETURN(Bytes id, RandomBytes(16));
  return HexEncode(id);
}

Status CheckText(const std::string& field, const std::string& v, size_t max) {
  if (v.empty() || v.size() > max) {
    return InvalidArgumentError("\"" + field + "\" must be 1 to " + std::to_string(max) +
                                " bytes.");
  }
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f) {
      return InvalidArgumentError("\"" + field + "\" must not contain control characters.");
    }
  }
  return OkStatus();
}

// The failing and unknown rules of a result, in the one naming scheme.
json FailingRules(const report::AttestationResult& ar) {
  json out = json::array();
  json all = report::DecisionReasonsJson(ar.dpuaudit.reasons);
  for (json& r : all) {
    if (r.value("verdict", "") != "pass") out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

void VerifierService::SetEventListener(std::function<void()> on_event) {
  on_event_ = std::move(on_event);
}

void VerifierService::EventStored() {
  if (on_event_) on_event_();
}

StatusOr<NodeStatusRecord> VerifierService::StatusOf(const NodeRecord& node) {
  auto s = store_->GetNodeStatus(node.node_id);
  if (s.ok()) return s;
  if (s.status().code() != StatusCode::kNotFound) return s.status();
  NodeStatusRecord initial =
      InitialStatus(node.node_id, node.approved_at.value_or(clock_.NowUnixSeconds()));
  if (node.state == NodeState::kRevoked) initial.status = std::string(kStatusRevoked);
  return initial;
}

std::vector<std::string> VerifierService::StickyFailures(
    const report::AttestationResult& ar) const {
  std::vector<std::string> out;
  if (ar.dpuaudit.decision != report::Decision::kDeny) return out;
  const Policy& active = policy();
  for (const PolicyRule& rule : active.rules()) {
    if (!rule.sticky) continue;
    for (const report::DecisionReason& r : ar.dpuaudit.reasons) {
      // A failing or unknown deny rule; a warning (a warn value) admits
      // and is never sticky.
      if (r.rule_id == rule.id && r.verdict != Verdict::kPass &&
          r.action == report::kActionDeny) {
        out.push_back(rule.id);
        break;
      }
    }
  }
  return out;
}

StatusOr<NodeTransition> VerifierService::MakeTransition(const StatusStep& step,
                                                         const std::string& from,
                                                         const EventContext& ctx) {
  NodeTransition t;
  t.status = step.status;
  if (!step.event_type) return t;
  DecisionEvent e;
  DPA_ASSIGN_OR_RETURN(e.event_id, NewEventId());
  e.node_id = step.status.node_id;
  e.type = *step.event_type;
  e.at = step.status.updated_at;
  json payload = {{"schema", "dpuaudit-event/1"},
                  {"event_id", e.event_id},
                  {"type", e.type},
                  {"node_id", e.node_id},
                  {"at", e.at},
                  {"verifier_id", options_.verifier_id},
                  {"from", from},
                  {"to", step.status.status},
                  {"decision", StatusDecision(step.status.status)},
                  {"detail", step.detail},
                  {"last_appraisal_at", step.status.last_appraisal_at},
                  {"last_admit_at", step.status.last_admit_at}};
  if (!ctx.actor.empty()) payload["actor"] = ctx.actor;
  if (!step.status.held_rules.empty()) payload["held_rules"] = step.status.held_rules;
  if (ctx.result != nullptr) {
    payload["result"] = {{"decision", report::DecisionName(ctx.result->dpuaudit.decision)},
                         {"report_sha256", ctx.result->dpuaudit.report_sha256},
                         {"expires_at", ctx.result->exp},
                         {"failing", FailingRules(*ctx.result)},
                         {"ear", ctx.ear_jwt}};
  }
  e.payload_json = strict_json::DumpJson(payload);
  if (e.payload_json.size() > kMaxEventPayloadBytes && payload.contains("result")) {
    // Never drop the event: drop the bulky part and say so.
    payload["result"].erase("failing");
    payload["result"]["failing_truncated"] = true;
    e.payload_json = strict_json::DumpJson(payload);
  }
  t.endpoints = EndpointsFor(options_.webhooks, e.type);
  t.event = std::move(e);
  return t;
}

Status VerifierService::ApplyStep(const StatusStep& step, const std::string& from,
                                  const EventContext& ctx) {
  DPA_ASSIGN_OR_RETURN(NodeTransition t, MakeTransition(step, from, ctx));
  DPA_RETURN_IF_ERROR(store_->ApplyNodeTransition(t));
  if (t.event) {
    spdlog::info("event {} {}: node {} {} -> {}", t.event->type, t.event->event_id,
                 t.status.node_id, from, t.status.status);
    EventStored();
  }
  return OkStatus();
}

StatusOr<int64_t> VerifierService::StoreWithStatus(
    const NodeRecord& node, const Judgement& judged, int64_t now,
    const std::function<StatusOr<int64_t>(const NodeTransition*)>& insert) {
  std::unique_lock<std::mutex> lock(status_mu_);
  DPA_ASSIGN_OR_RETURN(NodeStatusRecord prev, StatusOf(node));
  JudgedResult r;
  r.decision = std::string(report::DecisionName(judged.result.dpuaudit.decision));
  r.created_at = now;
  r.sticky_failures = StickyFailures(judged.result);
  StatusStep step = AfterResult(prev, r, now);
  DPA_ASSIGN_OR_RETURN(NodeTransition t,
                       MakeTransition(step, prev.status, {&judged.result, judged.ear_jwt, ""}));
  DPA_ASSIGN_OR_RETURN(int64_t id, insert(&t));
  lock.unlock();
  if (t.event) {
    spdlog::info("event {} {}: node {} {} -> {}", t.event->type, t.event->event_id,
                 node.node_id, prev.status, t.status.status);
    EventStored();
  }
  return id;
}

void VerifierService::RecordApproval(const NodeRecord& node, const std::string& actor) {
  std::lock_guard<std::mutex> lock(status_mu_);
  auto stored = store_->GetNodeStatus(node.node_id);
  std::optional<NodeStatusRecord> prev;
  if (stored.ok()) prev = *stored;
  StatusStep step = AfterApproval(prev, node.node_id, clock_.NowUnixSeconds());
  if (!step.event_type) return;
  if (Status s = ApplyStep(step, prev ? prev->status : "pending", {nullptr, "", actor}); !s.ok()) {
    spdlog::warn("node {} approved, its status not yet recorded: {}", node.node_id, s.ToString());
  }
}

StatusOr<int64_t> VerifierService::SweepStale() {
  if (options_.stale_after_seconds <= 0) return 0;
  const int64_t now = clock_.NowUnixSeconds();
  DPA_ASSIGN_OR_RETURN(std::vector<NodeStatusRecord> candidates,
                       store_->ListStaleCandidates(now - options_.stale_after_seconds));
  int64_t turned = 0;
  for (const NodeStatusRecord& c : candidates) {
    std::lock_guard<std::mutex> lock(status_mu_);
    // Re-read under the lock: a report may have landed since the query.
    auto current = store_->GetNodeStatus(c.node_id);
    if (!current.ok()) continue;
    StatusStep step = AfterSweep(*current, now, options_.stale_after_seconds);
    if (!step.event_type) continue;
    DPA_RETURN_IF_ERROR(ApplyStep(step, current->status, {}));
    ++turned;
  }
  return turned;
}

StatusOr<int64_t> VerifierService::ReconcileStatuses(bool emit_events) {
  DPA_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store_->ListNodes());
  const int64_t now = clock_.NowUnixSeconds();
  int64_t changed = 0;
  for (const NodeRecord& n : nodes) {
    if (n.state == NodeState::kPending) continue;
    std::lock_guard<std::mutex> lock(status_mu_);
    auto stored = store_->GetNodeStatus(n.node_id);
    if (!stored.ok() && stored.status().code() != StatusCode::kNotFound) return stored.status();
    std::optional<NodeStatusRecord> prev;
    if (stored.ok()) prev = *stored;
    StatusStep step;
    std::string from = prev ? prev->status : "";
    if (n.state == NodeState::kRevoked) {
      if (prev && prev->status == kStatusRevoked) continue;
      step = AfterRevocation(prev, n.node_id, now, n.revoke_reason.empty() ? "revoked" : n.revoke_reason);
    } else if (!prev) {
      // First status of an approved node: from its latest result, if any.
      step = AfterApproval(std::nullopt, n.node_id, n.approved_at.value_or(now));
      auto latest = store_->LatestResult(n.node_id);
      if (latest.ok() && latest->id > n.stale_result_id) {
        JudgedResult r{latest->decision, latest->created_at, {}};
        StatusStep after = AfterResult(step.status, r, now);
        after.status.last_result_id = latest->id;
        if (after.event_type) step.status = after.status;
      } else if (!latest.ok() && latest.status().code() != StatusCode::kNotFound) {
        return latest.status();
      }
      step.status.updated_at = now;
      if (!emit_events) step.event_type.reset();
    } else if (prev->status == kStatusRevoked) {
      step = AfterApproval(prev, n.node_id, now);
    } else {
      continue;
    }
    DPA_RETURN_IF_ERROR(ApplyStep(step, from, {}));
    ++changed;
  }
  return changed;
}

StatusOr<json> VerifierService::AcknowledgeNode(const std::string& node_id,
                                                std::string_view body,
                                                std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  DPA_RETURN_IF_ERROR(report::ValidateNodeId(node_id));
  if (body.size() > kMaxAckBodyBytes) {
    return ResourceExhaustedError("request body exceeds " + std::to_string(kMaxAckBodyBytes) +
                                  " bytes.");
  }
  DPA_ASSIGN_OR_RETURN(json req, strict_json::ParseStrictJson(AsBytes(body), "request body"));
  DPA_ASSIGN_OR_RETURN(auto r, strict_json::ObjectReader::New(req, ""));
  DPA_ASSIGN_OR_RETURN(std::string by, r.String("by"));
  DPA_ASSIGN_OR_RETURN(std::string reason, r.String("reason"));
  DPA_RETURN_IF_ERROR(r.Finish());
  DPA_RETURN_IF_ERROR(CheckText("by", by, 128));
  DPA_RETURN_IF_ERROR(CheckText("reason", reason, 512));
  DPA_ASSIGN_OR_RETURN(NodeRecord n, store_->GetNode(node_id));
  std::lock_guard<std::mutex> lock(status_mu_);
  DPA_ASSIGN_OR_RETURN(NodeStatusRecord prev, StatusOf(n));
  DPA_ASSIGN_OR_RETURN(StatusStep step,
                       AfterAcknowledgement(prev, clock_.NowUnixSeconds(), by, reason));
  DPA_RETURN_IF_ERROR(ApplyStep(step, prev.status, {nullptr, "", by}));
  Audit(MakeAuditEvent("acknowledgement", by, node_id,
                       "sticky failure of " + prev.held_rules + " acknowledged: " + reason,
                       "ok"));
  return json{{"node_id", node_id},
              {"status", step.status.status},
              {"acknowledged_rules", prev.held_rules},
              {"by", by},
              {"reason", reason}};
}

StatusOr<json> VerifierService::ListEvents(const std::string& node_id, int64_t after_seq,
                                           int64_t limit,
                                           const std::optional<std::string>& bearer) {
  DPA_RETURN_IF_ERROR(CheckReader(bearer));
  if (!node_id.empty()) DPA_RETURN_IF_ERROR(report::ValidateNodeId(node_id));
  if (after_seq < 0) return InvalidArgumentError("after must be >= 0.");
  if (limit < 1 || limit > 1000) return InvalidArgumentError("limit must be 1..1000.");
  DPA_ASSIGN_OR_RETURN(std::vector<DecisionEvent> events,
                       store_->ListDecisionEvents(node_id, after_seq, limit));
  json out = json::array();
  int64_t last = after_seq;
  for (const DecisionEvent& e : events) {
    json p = json::parse(e.payload_json, nullptr, false);
    if (p.is_discarded() || !p.is_object()) {
      return DataLossError("stored event " + e.event_id + " is not JSON.");
    }
    p["seq"] = e.seq;
    out.push_back(std::move(p));
    last = e.seq;
  }
  return json{{"events", std::move(out)}, {"next_after", last}};
}

StatusOr<json> VerifierService::WebhookStatus(const std::optional<std::string>& bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  const int64_t now = clock_.NowUnixSeconds();
  DPA_ASSIGN_OR_RETURN(std::vector<OutboxEndpointStats> stats, store_->OutboxStats());
  json endpoints = json::array();
  int64_t backlog = 0;
  std::optional<int64_t> oldest;
  for (const WebhookEndpoint& cfg : options_.webhooks.endpoints) {
    json e = {{"name", cfg.name}, {"url", cfg.url}, {"pending", 0}, {"failing", 0},
              {"delivered", 0}, {"configured", true}};
    for (const OutboxEndpointStats& s : stats) {
      if (s.endpoint != cfg.name) continue;
      e["pending"] = s.pending;
      e["failing"] = s.failing;
      e["delivered"] = s.delivered;
      if (s.oldest_pending_at) e["oldest_pending_age_seconds"] = now - *s.oldest_pending_at;
      if (s.last_delivered_at) e["last_delivered_at"] = *s.last_delivered_at;
      if (!s.last_error.empty()) e["last_error"] = s.last_error;
    }
    endpoints.push_back(std::move(e));
  }
  for (const OutboxEndpointStats& s : stats) {
    backlog += s.pending;
    if (s.oldest_pending_at && (!oldest || *s.oldest_pending_at < *oldest)) {
      oldest = s.oldest_pending_at;
    }
    bool configured = std::any_of(options_.webhooks.endpoints.begin(),
                                  options_.webhooks.endpoints.end(),
                                  [&](const WebhookEndpoint& c) { return c.name == s.endpoint; });
    if (!configured && s.pending > 0) {
      endpoints.push_back({{"name", s.endpoint}, {"configured", false}, {"pending", s.pending},
                           {"failing", s.failing}, {"delivered", s.delivered},
                           {"last_error", "endpoint is no longer in the webhook configuration"}});
    }
  }
  DPA_ASSIGN_OR_RETURN(std::vector<OutboxEntry> pending, store_->PendingOutbox(100));
  json stuck = json::array();
  for (const OutboxEntry& o : pending) {
    if (o.attempts == 0) continue;
    json s = {{"id", o.id},           {"event_id", o.event_id},
              {"endpoint", o.endpoint}, {"created_at", o.created_at},
              {"attempts", o.attempts}, {"next_attempt_at", o.next_attempt_at},
              {"last_error", o.last_error}};
    if (o.last_attempt_at) s["last_attempt_at"] = *o.last_attempt_at;
    stuck.push_back(std::move(s));
  }
  json out = {{"backlog", backlog}, {"endpoints", std::move(endpoints)}, {"stuck", std::move(stuck)}};
  out["oldest_pending_age_seconds"] = oldest ? json(now - *oldest) : json(nullptr);
  return out;
}

}  // namespace dpuaudit::verifier
