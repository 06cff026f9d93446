#include "apps/cli/nodes.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/cli/api_client.h"
#include "apps/shared/colour.h"
#include "apps/shared/enrollment_print.h"
#include "apps/shared/http_client.h"
#include "apps/shared/table.h"
#include "common/files.h"
#include "report/node_id.h"

namespace dpuaudit::apps {
namespace {

constexpr int kOk = 0;
constexpr int kRefused = 1;
constexpr size_t kColumns = 100;

Status CheckNode(const std::string& id) {
  if (!report::ValidateNodeId(id).ok()) {
    return InvalidArgumentError("node id \"" + id +
                                "\" must be 1-128 characters of [A-Za-z0-9._-].");
  }
  return OkStatus();
}

std::string Str(const nlohmann::json& j, const char* key) { return JsonStr(j, key, ""); }

std::string Int(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer()
             ? std::to_string(j[key].get<int64_t>())
             : "-";
}

std::string Cut(std::string s, size_t max) {
  if (s.size() <= max) return s;
  return s.substr(0, max > 3 ? max - 3 : 0) + "...";
}

// Failing first, then unknown, then passing; stable within each.
int VerdictRank(const nlohmann::json& r) {
  const std::string v = Str(r, "verdict");
  return v == "fail" ? 0 : v == "unknown" ? 1 : 2;
}

}  // namespace

int NodesList(const NodeCommandOptions& o, const AdminTarget& t) {
  nlohmann::json all = nlohmann::json::array();
  std::string after;
  // Every page unless --limit asks for one page of that size.
  for (int pages = 0; pages < 100000; ++pages) {
    std::string path = "/v1/nodes?limit=" + std::to_string(o.limit > 0 ? o.limit : 1000);
    if (!after.empty()) path += "&after=" + after;
    auto r = CallVerifier(t, "GET", path);
    if (!r.ok()) return FailApi(r.status());
    if (!(*r)["nodes"].is_array()) return FailApi(UnavailableError("GET /v1/nodes: no \"nodes\"."));
    for (auto& n : (*r)["nodes"]) all.push_back(std::move(n));
    if (o.limit > 0 || !(*r)["next_after"].is_string()) {
      if (o.json) {
        std::cout << nlohmann::json{{"nodes", all}, {"next_after", (*r)["next_after"]}}.dump(2)
                  << "\n";
        return kOk;
      }
      break;
    }
    after = (*r)["next_after"].get<std::string>();
  }
  Table table({"NODE", "STATE", "DECISION", "DECIDED AT", "SERIAL", "THUMBPRINT"}, 32);
  for (const auto& n : all) {
    std::string decision = n.contains("latest_decision") && n.at("latest_decision").is_string()
                               ? Str(n, "latest_decision")
                               : "-";
    if (n.contains("latest_expired") && n.at("latest_expired").is_boolean() &&
        n.at("latest_expired").get<bool>()) {
      decision += "(expired)";
    }
    std::string serial = Str(n, "device_serial");
    if (serial.empty()) serial = Str(n.value("claimed_device", nlohmann::json::object()), "serial");
    table.AddRow({Str(n, "node_id"), Str(n, "state"), decision, Int(n, "latest_decision_at"),
                  serial.empty() ? "-" : serial,
                  o.wide ? Str(n, "key_thumbprint") : Cut(Str(n, "key_thumbprint"), 12)});
  }
  std::cout << table.Render();
  return kOk;
}

int NodeShow(const NodeCommandOptions& o, const AdminTarget& t) {
  if (Status s = CheckNode(o.node_id); !s.ok()) return FailApi(s);
  auto r = CallVerifier(t, "GET", "/v1/nodes/" + o.node_id);
  if (!r.ok()) return FailApi(r.status());
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kOk;
  }
  std::cout << DescribeNodeIdentity(*r);
  const nlohmann::json& latest = (*r)["latest"];
  if (latest.is_object()) {
    std::cout << "latest:  " << Str(latest, "decision") << " at " << Int(latest, "created_at")
              << ", expires " << Int(latest, "expires_at")
              << (latest.value("expired", false) ? " (expired)" : "")
              << "; `dpuaudit explain " << o.node_id << "` lists its rules\n";
  } else {
    std::cout << "latest:  no attestation result yet\n";
  }
  return kOk;
}

int NodeApprove(const NodeCommandOptions& o, const AdminTarget& t) {
  if (Status s = CheckNode(o.node_id); !s.ok()) return FailApi(s);
  nlohmann::json body = {{"thumbprint", o.thumbprint}, {"by", o.by}};
  if (!o.serial.empty()) body["serial"] = o.serial;
  if (!o.reason.empty()) body["reason"] = o.reason;
  auto r = CallVerifier(t, "POST", "/v1/nodes/" + o.node_id + "/approve", body.dump());
  if (!r.ok()) return FailApi(r.status());
  if (o.json) {
    std::cout << r->dump(2) << "\n";
  } else {
    const std::string serial = Str(*r, "device_serial");
    std::cout << "approved " << o.node_id << " (key " << Str(*r, "key_thumbprint")
              << (serial.empty() ? ", no device serial pinned" : ", device serial " + serial)
              << ")\n";
  }
  return kOk;
}

int NodeReject(const NodeCommandOptions& o, const AdminTarget& t) {
  if (Status s = CheckNode(o.node_id); !s.ok()) return FailApi(s);
  auto r = CallVerifier(t, "POST", "/v1/nodes/" + o.node_id + "/reject",
                        nlohmann::json{{"by", o.by}, {"reason", o.reason}}.dump());
  if (!r.ok()) return FailApi(r.status());
  if (o.json) {
    std::cout << r->dump(2) << "\n";
  } else {
    std::cout << "rejected " << o.node_id
              << ": the pending enrollment is removed and the id is free\n";
  }
  return kOk;
}

int Explain(const NodeCommandOptions& o, const AdminTarget& t) {
  if (Status s = CheckNode(o.node_id); !s.ok()) return FailApi(s);
  // The admission: the decision that counts now (expiry, revocation and
  // re-enrollment applied) and the reasons of the result behind it.
  auto r = CallVerifier(t, "GET", "/v1/nodes/" + o.node_id + "/admission");
  if (!r.ok()) return FailApi(r.status());
  const bool admitted = Str(*r, "decision") == "admit";
  std::vector<nlohmann::json> reasons;
  if ((*r)["reasons"].is_array()) {
    for (const auto& x : (*r)["reasons"]) {
      if (x.is_object()) reasons.push_back(x);
    }
  }
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return VerdictRank(a) < VerdictRank(b); });
  if (o.json) {
    nlohmann::json j = {{"node_id", o.node_id},
                        {"decision", Str(*r, "decision")},
                        {"reason", Str(*r, "reason")},
                        {"expires_at", (*r).value("expires_at", int64_t{0})},
                        {"reasons", reasons},
                        {"exit_code", admitted ? kOk : kRefused}};
    std::cout << j.dump(2) << "\n";
    return admitted ? kOk : kRefused;
  }
  std::cout << o.node_id << ": " << PaintVerdict(Str(*r, "decision"), Str(*r, "decision"));
  if (!Str(*r, "reason").empty()) std::cout << " — " << Str(*r, "reason");
  std::cout << "\n";
  size_t failing = 0;
  for (const auto& x : reasons) failing += VerdictRank(x) < 2;
  if (reasons.empty()) return admitted ? kOk : kRefused;
  std::cout << failing << " of " << reasons.size() << " rules failing or unknown\n";
  for (const auto& x : reasons) {
    const bool bad = VerdictRank(x) < 2;
    if (!bad && !o.wide) continue;  // passing rules only with --wide
    std::string action = Str(x, "action");
    std::string head = Str(x, "verdict") + (action.empty() ? "" : "/" + action) + "  " +
                       Str(x, "rule_id") + "  [" + Str(x, "tier") + ", " + Str(x, "source") +
                       "]";
    const std::string verdict = Str(x, "verdict") + (action.empty() ? "" : "/" + action);
    std::cout << PaintVerdict(verdict, o.wide ? head : Cut(head, kColumns)) << "\n";
    auto field = [&](const char* label, const std::string& v) {
      if (v.empty()) return;
      std::string line = std::string("    ") + label + v;
      std::cout << (o.wide ? line : Cut(line, kColumns)) << "\n";
    };
    field("expected:    ", Str(x, "expected"));
    field("observed:    ", Str(x, "observed"));
    field("reason:      ", Str(x, "reason"));
    field("remediation: ", Str(x, "remediation"));
  }
  if (!o.wide && failing < reasons.size()) {
    std::cout << "(" << reasons.size() - failing << " passing rules not shown; --wide shows them)\n";
  }
  return admitted ? kOk : kRefused;
}

}  // namespace dpuaudit::apps
