#include "apps/cli/enrollment.h"

#include <cctype>
#include <iostream>

#include "apps/shared/enrollment_print.h"
#include "apps/shared/http_client.h"
#include "common/files.h"
#include "report/node_id.h"

namespace dpuaudit::apps {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;
constexpr int kExitError = 2;

int Fail(const Status& s) {
  std::cerr << "dpuaudit: " << s.message() << "\n";
  // Refusals about the thing named (unknown node or token, wrong state)
  // are 1; usage, transport and server trouble 2.
  switch (s.code()) {
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kPermissionDenied:
      return kExitRefused;
    default:
      return kExitError;
  }
}

std::string Str(const nlohmann::json& j, const char* key) { return JsonStr(j, key, ""); }

StatusOr<std::string> ReadAdminToken(const std::string& path) {
  if (path.empty()) {
    return InvalidArgumentError("--admin-token-file is required for the admin API.");
  }
  DPA_ASSIGN_OR_RETURN(Bytes b, ReadFileLimited(path, 4096));
  std::string t = ToString(b);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  return t;
}

StatusOr<nlohmann::json> Admin(const AdminTarget& t, const std::string& method,
                               const std::string& path, const nlohmann::json& body) {
  if (t.verifier.empty()) return InvalidArgumentError("--verifier is required.");
  DPA_ASSIGN_OR_RETURN(std::string token, ReadAdminToken(t.token_file));
  HttpClientOptions o;
  o.ca_file = t.cacert;
  o.insecure_http = t.insecure_http;
  DPA_ASSIGN_OR_RETURN(auto client, HttpClient::New(t.verifier, o));
  StatusOr<HttpResponse> r =
      method == "GET" ? client->GetWithBearer(path, token)
                      : client->PostWithBearer(path, "application/json", body.dump(), token);
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) return StatusFromHttpError(*r);
  nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(method + " " + path + ": reply is not a JSON object.");
  }
  return j;
}

std::string ByOrLogin(const std::string& by) {
  return by.empty() ? LoginName() : by;
}

}  // namespace

int TokensIssue(const TokenIssueOptions& o, const AdminTarget& t) {
  auto ttl = ParseDurationSeconds("--ttl", o.ttl);
  if (!ttl.ok()) return Fail(ttl.status());
  nlohmann::json body = {{"node_id", o.node_id}, {"ttl_seconds", *ttl}, {"by", ByOrLogin(o.by)}};
  if (!o.serial.empty()) body["serial"] = o.serial;
  auto r = Admin(t, "POST", "/v1/enrollment-tokens", body);
  if (!r.ok()) return Fail(r.status());
  return PrintIssuedToken(*r, o.out, o.json);
}

int TokensList(bool json, const AdminTarget& t) {
  auto r = Admin(t, "GET", "/v1/enrollment-tokens", nullptr);
  if (!r.ok()) return Fail(r.status());
  return PrintTokenList(*r, json);
}

int TokensRevoke(const std::string& token_id, const std::string& by, const AdminTarget& t) {
  for (char c : token_id) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return Fail(InvalidArgumentError("token id \"" + token_id + "\" must be hex."));
    }
  }
  auto r = Admin(t, "POST", "/v1/enrollment-tokens/" + token_id + "/revoke",
                 {{"by", ByOrLogin(by)}});
  if (!r.ok()) return Fail(r.status());
  std::cout << "enrollment token " << Str(*r, "token_id") << " for node " << Str(*r, "node_id")
            << ": " << Str(*r, "status") << "\n";
  return kExitOk;
}

int NodesRevoke(const std::string& node_id, const std::string& by, const std::string& reason,
                bool json, const AdminTarget& t) {
  if (!report::ValidateNodeId(node_id).ok()) {
    return Fail(InvalidArgumentError("node id \"" + node_id +
                                     "\" must be 1-128 characters of [A-Za-z0-9._-]."));
  }
  auto r = Admin(t, "POST", "/v1/nodes/" + node_id + "/revoke",
                 {{"by", ByOrLogin(by)}, {"reason", reason}});
  if (!r.ok()) return Fail(r.status());
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
    return Fail(InvalidArgumentError("node id \"" + node_id +
                                     "\" must be 1-128 characters of [A-Za-z0-9._-]."));
  }
  const std::string path = action == "rebind"
                               ? "/v1/nodes/" + node_id + "/bmc/rebind"
                               : "/v1/nodes/" + node_id + "/spdm/" + target + "/approve";
  auto r = Admin(t, "POST", path, {{"by", ByOrLogin(by)}, {"reason", reason}});
  if (!r.ok()) return Fail(r.status());
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
    return Fail(InvalidArgumentError("node id \"" + node_id +
                                     "\" must be 1-128 characters of [A-Za-z0-9._-]."));
  }
  auto r = Admin(t, "GET", "/v1/nodes/" + node_id + "/bmc", nlohmann::json::object());
  if (!r.ok()) return Fail(r.status());
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
