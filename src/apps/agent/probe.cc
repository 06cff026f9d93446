// `probe` and `record`: the local findings (optionally under a policy, see
// local_policy.h) and recordings of this device for replay. --json:
// docs/schemas/agent-probe.schema.json, agent-record.schema.json.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/agent/agent_util.h"
#include "apps/agent/commands.h"
#include "apps/agent/local_policy.h"
#include "apps/common/agent_collect.h"
#include "apps/shared/table.h"
#include "device/evidence.h"
#include "verifier/policy.h"
#include "verifier/service.h"

namespace dpuaudit::apps {

// `probe`: the local findings as a table (default) or JSON. Without
// --policy: exit 0 when every finding passes, else 1. With --policy FILE
// (loaded against this build's probe catalogue, as the verifier does):
// the per-rule results and decision are printed too, and the exit code is
// 0 on admit, 1 on deny; a policy that does not load exits 2.
int Probe(const AgentFlags& f) {
  std::optional<verifier::Policy> policy;
  if (!f.policy.empty()) {
    auto p = verifier::LoadPolicyFile(f.policy, verifier::KnownRules());
    if (!p.ok()) return Fail(p.status());
    policy = std::move(p).value();
  }
  auto source = OpenSource(f);
  if (!source.ok()) return Fail(source.status());
  Collection c = CollectFromDevice(**source);
  std::optional<verifier::PolicyOutcome> outcome;
  if (policy) outcome = AppraiseLocally(*policy, c.findings);
  if (f.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& fi : c.findings) {
      j.push_back({{"id", fi.id}, {"verdict", VerdictName(fi.verdict)},
                   {"observed", fi.observed}, {"expected", fi.expected},
                   {"source", fi.source}, {"reason", fi.reason}});
    }
    nlohmann::json doc = {{"device", {{"model", c.device.model},
                                      {"serial", c.device.serial},
                                      {"psid", c.device.psid},
                                      {"base_mac", c.device.base_mac}}},
                          {"findings", j}};
    if (outcome) {
      nlohmann::json results = nlohmann::json::array();
      for (const auto& r : outcome->results) {
        results.push_back({{"rule_id", r.rule_id},
                           {"verdict", VerdictName(r.verdict)},
                           {"action", verifier::RuleActionName(r.action)},
                           {"expected", r.expected},
                           {"observed", r.observed},
                           {"source", r.source},
                           {"reason", r.reason}});
      }
      doc["policy"] = {{"name", policy->name()},
                       {"sha256", policy->sha256()},
                       {"decision", verifier::DecisionName(outcome->decision)},
                       {"results", results}};
    }
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << "device: " << (c.device.model.empty() ? "?" : c.device.model)
              << "  serial " << (c.device.serial.empty() ? "?" : c.device.serial)
              << "  psid " << (c.device.psid.empty() ? "?" : c.device.psid) << "\n\n";
    Table t({"PROBE", "VERDICT", "OBSERVED", "EXPECTED", "REASON"}, 70);
    for (const auto& fi : c.findings) {
      t.AddRow({fi.id, std::string(VerdictName(fi.verdict)), fi.observed, fi.expected,
                fi.reason});
    }
    std::cout << t.Render();
    if (outcome) {
      std::cout << "\npolicy " << policy->name() << ":\n";
      Table pt({"RULE", "ACTION", "RESULT", "OBSERVED", "EXPECTED", "REASON"}, 70);
      for (const auto& r : outcome->results) {
        pt.AddRow({r.rule_id, std::string(verifier::RuleActionName(r.action)),
                   std::string(VerdictName(r.verdict)), r.observed, r.expected, r.reason});
      }
      std::cout << pt.Render();
      std::cout << "decision: " << verifier::DecisionName(outcome->decision) << "\n";
    }
  }
  if (outcome) {
    return outcome->decision == verifier::Decision::kAdmit ? kExitOk : kExitFindings;
  }
  return AllFindingsPass(c.findings) ? kExitOk : kExitFindings;
}


int Record(const AgentFlags& f) {
  auto source = OpenSource(f);
  if (!source.ok()) return Fail(source.status());
  Collection c = CollectFromDevice(**source);
  Status s = device::WriteRecording(c.evidence, f.record_out);
  if (!s.ok()) return Fail(s);
  // Boot partitions and OS boot files are measured by streaming, not
  // captured as evidence; copy them so the recording replays them too.
  s = device::CopyStreamsIntoRecording(**source, c.streamed_paths, f.record_out);
  if (!s.ok()) return Fail(s);
  if (f.json) {
    // docs/schemas/agent-record.schema.json
    nlohmann::json obs = nlohmann::json::array();
    for (const device::Evidence& e : c.evidence) {
      obs.push_back({{"id", e.id},
                     {"kind", device::EvidenceKindName(e.kind)},
                     {"source", e.Source()},
                     {"exit_code", e.exit_code},
                     {"sha256", e.sha256}});
    }
    nlohmann::json j = {{"out", f.record_out},
                        {"observations", obs},
                        {"measured_files", c.streamed_paths}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  std::cout << "recorded " << c.evidence.size() << " observations and "
            << c.streamed_paths.size() << " measured files to " << f.record_out << "\n";
  return kExitOk;
}

}  // namespace dpuaudit::apps
