#include "apps/cli/enrollment.h"

#include <cctype>
#include <iostream>

#include "apps/cli/api_client.h"
#include "apps/shared/enrollment_print.h"
#include "apps/shared/http_client.h"
#include "common/files.h"
#include "report/node_id.h"

namespace dpuaudit::apps {
namespace {

constexpr int kExitOk = 0;

std::string Str(const nlohmann::json& j, const char* key) { return JsonStr(j, key, ""); }

std::string ByOrLogin(const std::string& by) {
  return by.empty() ? LoginName() : by;
}

}  // namespace

int TokensIssue(const TokenIssueOptions& o, const AdminTarget& t) {
  auto ttl = ParseDurationSeconds("--ttl", o.ttl);
  if (!ttl.ok()) return FailApi(ttl.status());
  nlohmann::json body = {{"node_id", o.node_id}, {"ttl_seconds", *ttl}, {"by", ByOrLogin(o.by)}};
  if (!o.serial.empty()) body["serial"] = o.serial;
  auto r = CallVerifier(t, "POST", "/v1/enrollment-tokens", body.dump());
  if (!r.ok()) return FailApi(r.status());
  return PrintIssuedToken(*r, o.out, o.json);
}

int TokensList(bool json, const AdminTarget& t) {
  auto r = CallVerifier(t, "GET", "/v1/enrollment-tokens");
  if (!r.ok()) return FailApi(r.status());
  return PrintTokenList(*r, json);
}

int TokensRevoke(const std::string& token_id, const std::string& by, bool json,
                 const AdminTarget& t) {
  for (char c : token_id) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return FailApi(InvalidArgumentError("token id \"" + token_id + "\" must be hex."));
    }
  }
  auto r = CallVerifier(t, "POST", "/v1/enrollment-tokens/" + token_id + "/revoke",
                        nlohmann::json{{"by", ByOrLogin(by)}}.dump());
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "enrollment token " << Str(*r, "token_id") << " for node " << Str(*r, "node_id")
            << ": " << Str(*r, "status") << "\n";
  return kExitOk;
}

int NodesRevoke(const std::string& node_id, const std::string& by, const std::string& reason,
                bool json, const AdminTarget& t) {
  if (!report::ValidateNodeId(node_id).ok()) {
    return FailApi(InvalidArgumentError("node id \"" + node_id +
                                     "\" must be 1-128 characters of [A-Za-z0-9._-]."));
  }
  auto r = CallVerifier(t, "POST", "/v1/nodes/" + node_id + "/revoke",
                        nlohmann::json{{"by", ByOrLogin(by)}, {"reason", reason}}.dump());
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
  } else {
    std::cout << "revoked " << node_id << "; its admission is deny from now on\n"
              << DescribeNodeIdentity(*r);
  }
  return kExitOk;
}

int BmcAdminAction(const std::string& action, const std::string& node_id,
                   const std::string& target, const std::string& by, const std::string& reason,
                   bool json, const AdminTarget& t) {
  if (!report::ValidateNodeId(node_id).ok()) {
    return FailApi(InvalidArgumentError("node id \"" + node_id +
                                     "\" must be 1-128 characters of [A-Za-z0-9._-]."));
  }
  const std::string path = action == "rebind"
                               ? "/v1/nodes/" + node_id + "/bmc/rebind"
                               : "/v1/nodes/" + node_id + "/spdm/" + target + "/approve";
  auto r = CallVerifier(t, "POST", path,
                        nlohmann::json{{"by", ByOrLogin(by)}, {"reason", reason}}.dump());
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
  } else if (action == "rebind") {
    std::cout << "re-bound " << node_id << " to IRoT DeviceID "
              << r->value("binding", nlohmann::json::object()).value("irot_deviceid_sha256", "")
              << " (recorded: " << r->value("set_by", "") << ", " << r->value("reason", "")
              << ")\n";
  } else {
    std::cout << "approved " << r->value("baseline", nlohmann::json::object()).size() << " "
              << target << " measurements as the baseline of " << node_id << " (recorded: "
              << r->value("set_by", "") << ", " << r->value("reason", "") << ")\n";
  }
  return kExitOk;
}

int BmcStatus(const std::string& node_id, bool json, const AdminTarget& t) {
  if (!report::ValidateNodeId(node_id).ok()) {
    return FailApi(InvalidArgumentError("node id \"" + node_id +
                                     "\" must be 1-128 characters of [A-Za-z0-9._-]."));
  }
  auto r = CallVerifier(t, "GET", "/v1/nodes/" + node_id + "/bmc");
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  const nlohmann::json& latest = (*r)["latest"];
  if (!latest.is_object()) {
    std::cout << node_id << ": its BMC has not been pulled yet\n";
  } else {
    std::cout << node_id << ": BMC " << latest.value("bmc_url", "") << " ("
              << latest.value("tls_mode", "") << "), pulled at " << latest.value("pulled_at", 0)
              << ", " << latest.value("requests", 0) << " requests\n";
    const nlohmann::json errors = latest.value("errors", nlohmann::json::object());
    for (const auto& [path, why] : errors.items()) {
      std::cout << "  error " << (path.empty() ? "(connection)" : path) << ": "
                << why.get<std::string>() << "\n";
    }
    // One line each, cut to 100 columns (--json has the whole reasons).
    auto line = [](const nlohmann::json& f) {
      std::string s = "  " + f.value("id", "") + "  " + f.value("verdict", "");
      if (!f.value("observed", "").empty()) s += " (" + f.value("observed", "") + ")";
      if (!f.value("reason", "").empty()) s += ": " + f.value("reason", "");
      if (s.size() > 100) s = s.substr(0, 97) + "...";
      return s;
    };
    const nlohmann::json targets = latest.value("targets", nlohmann::json::array());
    for (const auto& tj : targets) {
      std::cout << line(tj["finding"]) << "\n";
    }
    std::cout << line(latest["identity"]) << "\n";
  }
  for (const auto& [kind, rec] : (*r)["stored"].items()) {
    std::string s = "  stored " + kind + ": set by " + rec.value("set_by", "") + " at " +
                    std::to_string(rec.value("set_at", int64_t{0})) + " (" +
                    rec.value("reason", "") + ")";
    if (s.size() > 100) s = s.substr(0, 97) + "...";
    std::cout << s << "\n";
  }
  return kExitOk;
}

}  // namespace dpuaudit::apps

// --- Issue 15: decision events, acknowledgements, webhooks -------------------

namespace dpuaudit::apps {

int NodeAcknowledge(const std::string& node_id, const std::string& by,
                    const std::string& reason, bool json, const AdminTarget& t) {
  if (!report::ValidateNodeId(node_id).ok()) {
    return FailApi(InvalidArgumentError("node id \"" + node_id +
                                     "\" must be 1-128 characters of [A-Za-z0-9._-]."));
  }
  auto r = CallVerifier(t, "POST", "/v1/nodes/" + node_id + "/acknowledge",
                        nlohmann::json{{"by", ByOrLogin(by)}, {"reason", reason}}.dump());
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
  } else {
    std::cout << node_id << ": sticky failure of " << Str(*r, "acknowledged_rules")
              << " acknowledged; status " << Str(*r, "status")
              << " (admitted again by its next passing report)\n";
  }
  return kExitOk;
}

int EventsList(const std::string& node_id, int64_t after, int64_t limit, bool json,
               const AdminTarget& t) {
  if (!node_id.empty() && !report::ValidateNodeId(node_id).ok()) {
    return FailApi(InvalidArgumentError("node id \"" + node_id +
                                     "\" must be 1-128 characters of [A-Za-z0-9._-]."));
  }
  std::string path = "/v1/events?after=" + std::to_string(after) +
                     "&limit=" + std::to_string(limit);
  if (!node_id.empty()) path += "&node=" + node_id;
  auto r = CallVerifier(t, "GET", path);
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  const nlohmann::json events = r->value("events", nlohmann::json::array());
  if (events.empty()) std::cout << "no events after " << after << "\n";
  for (const nlohmann::json& e : events) {
    std::string line = std::to_string(e.value("seq", int64_t{0})) + "  " +
                       std::to_string(e.value("at", int64_t{0})) + "  " + Str(e, "type") + "  " +
                       Str(e, "node_id") + "  " + Str(e, "from") + " -> " + Str(e, "to") +
                       "  " + Str(e, "detail");
    if (line.size() > 100) line = line.substr(0, 97) + "...";
    std::cout << line << "\n";
  }
  return kExitOk;
}

int WebhooksStatus(bool json, const AdminTarget& t) {
  auto r = CallVerifier(t, "GET", "/v1/webhooks");
  if (!r.ok()) return FailApi(r.status());
  const nlohmann::json stuck = r->value("stuck", nlohmann::json::array());
  // Exit 1 while any delivery has failed and is still pending, so a
  // monitoring job can alert on it.
  const int rc = stuck.empty() ? kExitOk : 1;
  if (json) {
    std::cout << r->dump(2) << "\n";
    return rc;
  }
  const nlohmann::json& oldest = (*r)["oldest_pending_age_seconds"];
  std::cout << "outbox: " << r->value("backlog", int64_t{0}) << " undelivered"
            << (oldest.is_number() ? ", oldest " + std::to_string(oldest.get<int64_t>()) + " s"
                                   : std::string())
            << ", " << stuck.size() << " failing\n";
  for (const nlohmann::json& e : r->value("endpoints", nlohmann::json::array())) {
    std::string line = "  " + Str(e, "name") + "  pending " +
                       std::to_string(e.value("pending", int64_t{0})) + ", failing " +
                       std::to_string(e.value("failing", int64_t{0})) + ", delivered " +
                       std::to_string(e.value("delivered", int64_t{0}));
    if (!e.value("configured", true)) line += "  (not configured)";
    if (!Str(e, "last_error").empty()) line += "  last error: " + Str(e, "last_error");
    if (line.size() > 100) line = line.substr(0, 97) + "...";
    std::cout << line << "\n";
  }
  size_t shown = 0;
  for (const nlohmann::json& s : stuck) {
    if (++shown > 20) {
      std::cout << "  ... " << stuck.size() - 20 << " more (--json lists them all)\n";
      break;
    }
    std::string line = "  stuck " + Str(s, "event_id").substr(0, 12) + " -> " +
                       Str(s, "endpoint") + ": " + std::to_string(s.value("attempts", 0)) +
                       " attempts, next at " + std::to_string(s.value("next_attempt_at", 0)) +
                       ": " + Str(s, "last_error");
    if (line.size() > 100) line = line.substr(0, 97) + "...";
    std::cout << line << "\n";
  }
  return rc;
}

}  // namespace dpuaudit::apps
