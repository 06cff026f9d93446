#include "verifier/fleet.h"

#include "verifier/evidence_cache.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "common/crypto.h"
#include "common/safe_text.h"
#include "device/evidence.h"
#include "device/memoizing_source.h"
#include "firmware/boot_chain.h"
#include "isolation/device_facts.h"
#include "report/claims.h"
#include "report/jws.h"
#include "verifier/node_status.h"

namespace dpuaudit::verifier {
namespace {

using json = nlohmann::json;

// Evidence-derived values are short (versions, digests, paths): 256 bytes
// keeps a hostile one from bloating the document.
constexpr size_t kMaxValueBytes = 256;

std::string Safe(std::string_view s) { return SafeText(s, kMaxValueBytes); }

// The attributes compared across a model's nodes, in document order
// (posture.* follow, sorted by rule id).
struct Attribute {
  const char* name;
  std::string FleetNodeFacts::*field;
};
constexpr Attribute kFactAttributes[] = {
    {"firmware.atf", &FleetNodeFacts::atf},
    {"firmware.uefi", &FleetNodeFacts::uefi},
    {"firmware.bsp", &FleetNodeFacts::bsp},
    {"firmware.os_release", &FleetNodeFacts::os_release},
    {"firmware.nic_fw", &FleetNodeFacts::nic_fw},
    {"boot.stream_sha256", &FleetNodeFacts::boot_stream_sha256},
};
constexpr std::string_view kReleaseAttribute = "release.arm";
constexpr std::string_view kUnknownModel = "unknown";
// Threads deriving facts in one CollectFleetReport (at most the cores).
constexpr size_t kFleetWorkers = 4;

json OrNull(bool present, const json& value) {
  return present ? value : json();
}

json FactsJson(const FleetNodeFacts& f) {
  return {{"model", f.model},
          {"psid", f.psid},
          {"firmware",
           {{"atf", f.atf},
            {"uefi", f.uefi},
            {"bsp", f.bsp},
            {"os_release", f.os_release},
            {"nic_fw", f.nic_fw}}},
          {"boot_partition", f.boot_partition},
          {"boot_stream_sha256", f.boot_stream_sha256},
          {"issued_at", f.issued_at}};
}

// Order of the non-active release states in "off_release": the worst first.
int OffReleaseRank(std::string_view effective) {
  return effective == "revoked"   ? 0
         : effective == "expired" ? 1
         : effective == "unknown" ? 2
         : effective == "pending" ? 3
                                  : 4;  // obsolete
}

// One model's comparison of one attribute.
json CompareAttribute(std::string_view attribute,
                      const std::vector<std::pair<std::string, std::string>>&
                          node_values,  // (node id, value), "" = unknown
                      std::vector<json>* divergences, std::string_view model) {
  std::map<std::string, int64_t> counts;
  std::vector<std::string> unknown;
  for (const auto& [node, value] : node_values) {
    if (value.empty()) {
      unknown.push_back(node);
    } else {
      ++counts[value];
    }
  }
  int64_t observed = 0;
  for (const auto& [v, c] : counts) observed += c;
  // Most common first; equal counts by value.
  std::vector<std::pair<std::string, int64_t>> values(counts.begin(),
                                                      counts.end());
  std::stable_sort(
      values.begin(), values.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::optional<std::string> majority;
  if (!values.empty() && values.front().second * 2 > observed) {
    majority = values.front().first;
  }
  json out = {{"attribute", attribute},
              {"observed", observed},
              {"majority", OrNull(majority.has_value(), majority.value_or(""))},
              {"majority_count", majority ? values.front().second : 0},
              {"split", !majority && values.size() > 1},
              {"values", json::array()},
              {"divergent", json::array()},
              {"unknown", unknown}};
  for (const auto& [v, c] : values) {
    out["values"].push_back({{"value", v}, {"count", c}});
  }
  if (majority) {
    for (const auto& [node, value] : node_values) {
      if (value.empty() || value == *majority) continue;
      out["divergent"].push_back({{"node_id", node}, {"value", value}});
      divergences->push_back({{"node_id", node},
                              {"model", model},
                              {"attribute", attribute},
                              {"value", value},
                              {"majority", *majority}});
    }
  }
  return out;
}

}  // namespace

StatusOr<FleetNodeFacts> DeriveFleetNodeFacts(const NodeRecord& node,
                                              const ReportRecord& report,
                                              size_t max_report_bytes,
                                              Store* store) {
  if (!report.accepted) {
    return FailedPreconditionError("report " + report.sha256.substr(0, 16) +
                                   " was not accepted.");
  }
  if (report.jws.empty()) {
    return FailedPreconditionError("the body of report " +
                                   report.sha256.substr(0, 16) +
                                   " was pruned; only its digest is kept.");
  }
  // Verify before parsing: the key pinned at enrollment, checked against
  // its thumbprint, over the exact stored bytes.
  if (node.alg != report::kAlgEs256) {
    return UnauthenticatedError("node " + node.node_id +
                                " is enrolled with unsupported alg " +
                                Safe(node.alg) + ".");
  }
  auto key = EcPublicKey::FromPem(node.public_key_pem);
  if (!key.ok()) {
    return UnauthenticatedError("the stored key of node " + node.node_id +
                                " does not parse: " + key.status().message());
  }
  if (key->Thumbprint() != node.key_thumbprint) {
    return DataLossError("stored key of node " + node.node_id +
                         " does not match its thumbprint.");
  }
  DPA_ASSIGN_OR_RETURN(auto verifier, Es256Verifier::New(*key));
  auto verified = report::VerifyReport(report.jws, *verifier, max_report_bytes);
  if (!verified.ok()) {
    return UnauthenticatedError(
        "the stored report does not verify under the node's pinned key: " +
        verified.status().message());
  }
  if (verified->claims.node_id != node.node_id) {
    return UnauthenticatedError("the stored report claims node_id \"" +
                                Safe(verified->claims.node_id) + "\" but is signed by " +
                                node.node_id + ".");
  }
  if (!verified->claims.evidence_resolved) {
    std::string why = "no store to resolve it against";
    std::shared_ptr<const report::HeldEvidence> held;
    if (store != nullptr) {
      DPA_ASSIGN_OR_RETURN(held, LoadBaseEvidence(*store, node, *verifier,
                                                  verified->claims.evidence_base,
                                                  max_report_bytes, &why));
    }
    if (held == nullptr || !report::ResolveEvidence(verified->claims, *held).empty()) {
      if (held != nullptr) why = "the base report holds no equal item";
      return FailedPreconditionError("report " + report.sha256.substr(0, 16) +
                                     " carries evidence by digest that is not held (" + why +
                                     ").");
    }
  }
  const report::ReportClaims& claims = verified->claims;
  std::optional<firmware::BootChainInfo> boot;
  if (!claims.boot_chain.empty()) {
    auto parsed = firmware::ParseBootChainJson(claims.boot_chain);
    if (!parsed.ok()) return parsed.status().WithPrefix("report boot_chain");
    boot = std::move(parsed).value();
  }
  // The verifier's re-derivation (verifier/appraise.cc): the agent's own
  // collection over the evidence, the report's boot chain standing in for
  // the partitions.
  DPA_ASSIGN_OR_RETURN(auto source,
                       device::NewEvidenceDeviceSource(claims.evidence));
  device::MemoizingDeviceSource evidence(*source);
  isolation::DeviceFacts device =
      isolation::CollectDeviceFacts(evidence, boot ? &*boot : nullptr);
  const firmware::FirmwareInfo& fw = device.firmware;
  FleetNodeFacts f;
  f.model = CanonicalModel(device.identity.model).value_or("");
  f.psid = Safe(fw.psid.empty() ? device.identity.psid : fw.psid);
  if (fw.bfver_status.ok()) {
    f.atf = Safe(fw.bfver.atf_version);
    f.uefi = Safe(fw.bfver.uefi_version);
    f.bsp = Safe(fw.bfver.bsp_version);
    f.os_release = Safe(fw.bfver.os_release);
  }
  if (fw.nic_fw_status.ok()) f.nic_fw = Safe(fw.nic_fw_version);
  f.boot_partition = Safe(device.primary);
  if (boot && !device.primary.empty()) {
    for (const auto& p : boot->partitions.partitions) {
      if (p.path == device.primary && p.status.ok()) {
        f.boot_stream_sha256 = Safe(p.sha256);
      }
    }
  }
  f.issued_at = claims.issued_at;
  return f;
}

bool IsFleetPostureRule(std::string_view rule_id) {
  return rule_id.rfind("host.", 0) == 0 || rule_id.rfind("dpu.", 0) == 0;
}

StatusOr<std::map<std::string, std::string>> FleetPosture(
    std::string_view reasons_json) {
  json j = json::parse(reasons_json, nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    return InvalidArgumentError("stored reasons are not a JSON array.");
  }
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& r = j[i];
    if (!r.is_object() || !r.contains("rule_id") || !r["rule_id"].is_string() ||
        (r.contains("observed") && !r["observed"].is_string())) {
      return InvalidArgumentError("stored reasons[" + std::to_string(i) +
                                  "] has no string rule_id and observed.");
    }
    const std::string id = r["rule_id"].get<std::string>();
    if (!IsFleetPostureRule(id)) continue;
    out[Safe(id)] = Safe(r.value("observed", ""));
  }
  return out;
}

Status ValidateFleetWindow(const FleetWindow& w) {
  if (w.bucket_seconds < kFleetMinBucketSeconds ||
      w.bucket_seconds > kFleetMaxBucketSeconds) {
    return InvalidArgumentError(
        "bucket must be " + std::to_string(kFleetMinBucketSeconds) + " to " +
        std::to_string(kFleetMaxBucketSeconds) + " seconds.");
  }
  if (w.window_seconds < w.bucket_seconds ||
      w.window_seconds > kFleetMaxWindowSeconds) {
    return InvalidArgumentError(
        "window must be at least the bucket (" +
        std::to_string(w.bucket_seconds) + " s) and at most " +
        std::to_string(kFleetMaxWindowSeconds) + " seconds.");
  }
  if (w.window_seconds / w.bucket_seconds > kFleetMaxBuckets) {
    return InvalidArgumentError(
        "window / bucket must be at most " + std::to_string(kFleetMaxBuckets) +
        " buckets (" + std::to_string(w.window_seconds / w.bucket_seconds) +
        " asked).");
  }
  return OkStatus();
}

StatusOr<FleetWindow> ParseFleetWindow(
    const std::optional<std::string>& bucket,
    const std::optional<std::string>& window) {
  FleetWindow w;
  for (auto [name, text, out] :
       {std::tuple<const char*, const std::optional<std::string>*, int64_t*>{
            "bucket", &bucket, &w.bucket_seconds},
        {"window", &window, &w.window_seconds}}) {
    if (!text->has_value()) continue;
    const std::string& v = **text;
    if (v.empty() || v.size() > 12 ||
        v.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgumentError(std::string(name) +
                                  " must be a whole number of seconds.");
    }
    *out = std::stoll(v);
  }
  DPA_RETURN_IF_ERROR(ValidateFleetWindow(w));
  return w;
}

int64_t FleetWindowStart(const FleetWindow& w, int64_t now) {
  int64_t from = now - w.window_seconds;
  int64_t b = w.bucket_seconds;
  int64_t q = from / b;
  if (from % b != 0 && from < 0) --q;  // floor for negative times
  return q * b;
}

json BuildFleetReport(const FleetInput& in) {
  std::vector<const FleetNode*> nodes;
  for (const FleetNode& n : in.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(),
            [](const FleetNode* a, const FleetNode* b) {
              return a->node.node_id < b->node.node_id;
            });
  std::map<std::string, const RefRelease*> releases;
  for (const RefRelease& r : in.releases) releases[r.release] = &r;
  // node id -> kind -> its release row.
  std::map<std::string, std::map<std::string, const NodeReleaseRecord*>>
      node_releases;
  for (const NodeReleaseRecord& r : in.node_releases) {
    node_releases[r.node_id][r.kind] = &r;
  }
  auto release_json = [&](const NodeReleaseRecord& r) {
    auto it = releases.find(r.release);
    const bool known = it != releases.end();
    return json{{"kind", r.kind},
                {"release", r.release},
                {"state", known ? std::string(RefStateName(it->second->state))
                                : std::string("unknown")},
                {"effective_state", known ? EffectiveState(*it->second, in.now)
                                          : std::string("unknown")},
                {"at", r.at}};
  };

  json status_counts = json::object();
  for (std::string_view s : kNodeStatuses) status_counts[std::string(s)] = 0;
  json out_nodes = json::array();
  json stale = json::array(), failed = json::array(),
       no_evidence = json::array();
  json off_release = json::array();
  std::map<std::string, json> release_dist;  // release -> entry
  // model -> nodes compared (state not revoked, facts derived).
  std::map<std::string, std::vector<const FleetNode*>> by_model;
  for (const FleetNode* n : nodes) {
    const std::string& id = n->node.node_id;
    std::string status = n->status ? n->status->status
                         : n->node.state == NodeState::kRevoked ? "revoked"
                                                                : "unattested";
    if (status_counts.contains(status)) {
      status_counts[status] = status_counts[status].get<int64_t>() + 1;
    }
    json j = {{"node_id", id},
              {"state", NodeStateName(n->node.state)},
              {"status", status},
              {"status_since",
               OrNull(n->status.has_value(), n->status ? n->status->since : 0)},
              {"model",
               n->facts ? (n->facts->model.empty() ? std::string(kUnknownModel)
                                                   : n->facts->model)
                        : std::string(kUnknownModel)},
              {"decision", OrNull(n->has_result, n->decision)},
              {"decided_at", OrNull(n->has_result, n->result_at)},
              {"report_sha256", OrNull(n->has_result, n->report_sha256)},
              {"facts", n->facts ? FactsJson(*n->facts) : json()},
              {"posture", n->posture},
              {"releases", json::array()}};
    if (!n->facts && n->has_result) {
      j["facts_error"] = n->facts_error;
      no_evidence.push_back({{"node_id", id}, {"reason", n->facts_error}});
    }
    auto nr = node_releases.find(id);
    if (nr != node_releases.end()) {
      for (const auto& [kind, r] : nr->second) {
        json rj = release_json(*r);
        j["releases"].push_back(rj);
        const std::string eff = rj["effective_state"].get<std::string>();
        if (eff != "active") {
          json o = rj;
          o["node_id"] = id;
          off_release.push_back(std::move(o));
        }
        json& d = release_dist[kind + "\n" + r->release];
        if (d.is_null()) {
          d = {{"kind", kind},
               {"release", r->release},
               {"state", rj["state"]},
               {"effective_state", rj["effective_state"]},
               {"nodes", 0}};
        }
        d["nodes"] = d["nodes"].get<int64_t>() + 1;
      }
    }
    if (status == kStatusStale) {
      stale.push_back(
          {{"node_id", id},
           {"since", n->status->since},
           {"last_appraisal_at", n->status->last_appraisal_at},
           {"last_decision", OrNull(!n->status->last_decision.empty(),
                                    n->status->last_decision)}});
    } else if (status == kStatusFailed || status == kStatusHeld) {
      json held_rules = json::array();
      std::string rules = n->status->held_rules;
      for (size_t at = 0; !rules.empty() && at != std::string::npos;) {
        size_t comma = rules.find(',', at);
        held_rules.push_back(
            rules.substr(at, comma == std::string::npos ? comma : comma - at));
        at = comma == std::string::npos ? comma : comma + 1;
      }
      failed.push_back(
          {{"node_id", id},
           {"status", status},
           {"since", n->status->since},
           {"last_decision", OrNull(!n->status->last_decision.empty(),
                                    n->status->last_decision)},
           {"held_rules", held_rules}});
    }
    if (n->facts && n->node.state != NodeState::kRevoked) {
      by_model[j["model"].get<std::string>()].push_back(n);
    }
    out_nodes.push_back(std::move(j));
  }

  // Per model and attribute: the majority and the nodes that diverge.
  json models = json::array();
  std::vector<json> divergences;
  for (const auto& [model, members] : by_model) {
    json m = {{"model", model},
              {"nodes", members.size()},
              {"attributes", json::array()}};
    std::vector<std::pair<std::string, std::string>> values;
    for (const Attribute& a : kFactAttributes) {
      values.clear();
      for (const FleetNode* n : members) {
        values.emplace_back(n->node.node_id, (*n->facts).*a.field);
      }
      m["attributes"].push_back(
          CompareAttribute(a.name, values, &divergences, model));
    }
    values.clear();
    for (const FleetNode* n : members) {
      std::string release;
      auto nr = node_releases.find(n->node.node_id);
      if (nr != node_releases.end() && nr->second.count("arm") != 0) {
        release = nr->second.at("arm")->release;
      }
      values.emplace_back(n->node.node_id, release);
    }
    m["attributes"].push_back(
        CompareAttribute(kReleaseAttribute, values, &divergences, model));
    std::set<std::string> rules;
    for (const FleetNode* n : members) {
      for (const auto& [rule, v] : n->posture) rules.insert(rule);
    }
    for (const std::string& rule : rules) {
      values.clear();
      for (const FleetNode* n : members) {
        auto it = n->posture.find(rule);
        values.emplace_back(n->node.node_id,
                            it == n->posture.end() ? "" : it->second);
      }
      m["attributes"].push_back(
          CompareAttribute("posture." + rule, values, &divergences, model));
    }
    models.push_back(std::move(m));
  }
  std::stable_sort(divergences.begin(), divergences.end(),
                   [](const json& a, const json& b) {
                     return a["node_id"].get<std::string>() <
                            b["node_id"].get<std::string>();
                   });
  std::set<std::string> divergent_nodes;
  for (const json& d : divergences)
    divergent_nodes.insert(d["node_id"].get<std::string>());

  std::stable_sort(
      off_release.begin(), off_release.end(), [](const json& a, const json& b) {
        return OffReleaseRank(a["effective_state"].get<std::string>()) <
               OffReleaseRank(b["effective_state"].get<std::string>());
      });
  json distribution = json::array();
  for (auto& [key, d] : release_dist) distribution.push_back(std::move(d));

  // Decisions over time: every bucket of the window, empty ones included.
  const int64_t b = in.window.bucket_seconds;
  const int64_t first = FleetWindowStart(in.window, in.now);
  const int64_t last = FleetWindowStart(FleetWindow{b, 0}, in.now);
  std::map<int64_t, const DecisionBucket*> counted;
  for (const DecisionBucket& d : in.decisions) counted[d.start] = &d;
  json buckets = json::array();
  int64_t admit_total = 0, deny_total = 0;
  for (int64_t t = first; t <= last; t += b) {
    auto it = counted.find(t);
    int64_t admit = it == counted.end() ? 0 : it->second->admit;
    int64_t deny = it == counted.end() ? 0 : it->second->deny;
    admit_total += admit;
    deny_total += deny;
    buckets.push_back({{"start", t}, {"admit", admit}, {"deny", deny}});
  }

  return {{"format", kFleetFormat},
          {"generated_at", in.now},
          {"summary",
           {{"nodes", nodes.size()},
            {"models", models.size()},
            {"divergent_nodes", divergent_nodes.size()},
            {"off_release_nodes", off_release.size()},
            {"stale_nodes", stale.size()},
            {"failed_nodes", failed.size()},
            {"no_evidence_nodes", no_evidence.size()}}},
          {"status_counts", status_counts},
          {"models", models},
          {"divergences", divergences},
          {"releases",
           {{"distribution", distribution}, {"off_release", off_release}}},
          {"stale", stale},
          {"failed", failed},
          {"no_evidence", no_evidence},
          {"decisions",
           {{"bucket_seconds", b},
            {"window_seconds", in.window.window_seconds},
            {"since", first},
            {"until", last + b},
            {"admit", admit_total},
            {"deny", deny_total},
            {"buckets", buckets}}},
          {"nodes", out_nodes}};
}

std::optional<FleetFactsCache::Entry> FleetFactsCache::Find(
    const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void FleetFactsCache::Put(const std::string& key, Entry entry) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() >= max_entries_) entries_.clear();
  entries_[key] = std::move(entry);
}

StatusOr<json> CollectFleetReport(Store& store, const FleetWindow& window,
                                  int64_t now, size_t max_report_bytes,
                                  FleetFactsCache* cache) {
  DPA_RETURN_IF_ERROR(ValidateFleetWindow(window));
  FleetInput in;
  in.window = window;
  in.now = now;
  DPA_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store.ListNodes());
  DPA_ASSIGN_OR_RETURN(std::vector<NodeStatusRecord> statuses,
                       store.ListNodeStatuses());
  std::map<std::string, NodeStatusRecord> status_of;
  for (NodeStatusRecord& s : statuses) status_of[s.node_id] = std::move(s);
  std::map<std::string, size_t> index;
  in.nodes.reserve(nodes.size());
  for (NodeRecord& n : nodes) {
    FleetNode f;
    auto st = status_of.find(n.node_id);
    if (st != status_of.end()) f.status = std::move(st->second);
    index[n.node_id] = in.nodes.size();
    f.node = std::move(n);
    in.nodes.push_back(std::move(f));
  }
  // One pass over the latest results; the reasons are reduced to the
  // posture at once, so only that small map is kept per node.
  DPA_RETURN_IF_ERROR(
      store.ForEachLatestResult([&](const ResultRecord& r) -> Status {
        auto it = index.find(r.node_id);
        if (it == index.end()) return OkStatus();  // removed since ListNodes
        FleetNode& f = in.nodes[it->second];
        f.has_result = true;
        f.result_id = r.id;
        f.decision = r.decision;
        f.result_at = r.created_at;
        f.report_sha256 = r.report_jws_sha256;
        auto posture = FleetPosture(r.reasons_json);
        if (posture.ok()) f.posture = std::move(posture).value();
        return OkStatus();
      }));
  // One report per node, verified and parsed once per (report, key), on
  // up to kFleetWorkers threads (the derivation is pure; the store is
  // thread-safe).
  std::vector<FleetNode*> to_derive;
  for (FleetNode& f : in.nodes) {
    if (!f.has_result) continue;
    if (f.result_id <= f.node.stale_result_id) {
      f.facts_error =
          "the latest result was made under the node's previous key; no report "
          "signed by "
          "its current key is appraised yet";
      continue;
    }
    if (cache != nullptr) {
      if (auto hit =
              cache->Find(f.report_sha256 + "/" + f.node.key_thumbprint)) {
        f.facts = hit->facts;
        f.facts_error = hit->error;
        continue;
      }
    }
    to_derive.push_back(&f);
  }
  std::atomic<size_t> next{0};
  std::mutex error_mu;
  Status error;
  auto work = [&] {
    for (size_t i = next++; i < to_derive.size(); i = next++) {
      FleetNode& f = *to_derive[i];
      FleetFactsCache::Entry entry;
      auto report = store.GetAcceptedReport(f.node.node_id, f.report_sha256);
      if (!report.ok()) {
        if (report.status().code() != StatusCode::kNotFound) {
          std::lock_guard<std::mutex> lock(error_mu);
          if (error.ok()) error = report.status();
          next = to_derive.size();  // stop every worker
          return;
        }
        entry.error = report.status().message();
      } else {
        auto facts = DeriveFleetNodeFacts(f.node, *report, max_report_bytes, &store);
        if (facts.ok()) {
          entry.facts = std::move(facts).value();
        } else {
          entry.error = SafeText(facts.status().message());
        }
      }
      f.facts = entry.facts;
      f.facts_error = entry.error;
      if (cache != nullptr && report.ok()) {
        cache->Put(f.report_sha256 + "/" + f.node.key_thumbprint,
                   std::move(entry));
      }
    }
  };
  const size_t workers = std::min<size_t>(
      {kFleetWorkers, std::max(1u, std::thread::hardware_concurrency()),
       to_derive.size() / 16 + 1});
  std::vector<std::thread> pool;
  for (size_t i = 1; i < workers; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  DPA_RETURN_IF_ERROR(error);
  DPA_ASSIGN_OR_RETURN(in.node_releases, store.ListNodeReleases());
  DPA_ASSIGN_OR_RETURN(in.releases, store.ListReleases(""));
  DPA_ASSIGN_OR_RETURN(in.decisions,
                       store.CountDecisions(FleetWindowStart(window, now),
                                            window.bucket_seconds));
  return BuildFleetReport(in);
}

}  // namespace dpuaudit::verifier
