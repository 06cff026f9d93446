#include "apps/common/cli_enrollment.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <ctime>
#include <iostream>
#include <sstream>

#include "apps/common/http_client.h"
#include "apps/common/table.h"
#include "common/files.h"

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

std::string Time(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Str(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t Int(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

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

std::string LoginName() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) {
    return pw->pw_name;
  }
  return "";
}

StatusOr<int64_t> ParseDurationSeconds(const std::string& flag, const std::string& text) {
  auto bad = [&] {
    return InvalidArgumentError(flag + " \"" + text +
                                "\" is not a positive duration like 90, 30s, 15m, 24h or 7d.");
  };
  if (text.empty() || text.size() > 12) return bad();
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  if (digits == 0 || digits + 1 < text.size()) return bad();
  int64_t n = std::stoll(text.substr(0, digits));
  int64_t unit = 1;
  if (digits < text.size()) {
    switch (text[digits]) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      default: return bad();
    }
  }
  if (n <= 0 || n > (int64_t{1} << 40) / unit) return bad();
  return n * unit;
}

int PrintIssuedToken(const nlohmann::json& issued, const std::string& out, bool json) {
  std::string token = Str(issued, "token");
  if (token.empty()) {
    std::cerr << "dpuaudit: the verifier returned no token.\n";
    return kExitError;
  }
  if (!out.empty()) {
    Status s = WriteNewFile(out, AsBytes(token + "\n"), 0600);
    if (!s.ok()) {
      std::cerr << "dpuaudit: " << s.message() << "\n";
      return kExitError;
    }
  }
  if (json) {
    nlohmann::json j = issued;
    if (!out.empty()) {
      j.erase("token");
      j["token_file"] = out;
    }
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::string serial = Str(issued, "serial");
  std::cout << "enrollment token " << Str(issued, "token_id") << " for node "
            << Str(issued, "node_id")
            << (serial.empty() ? std::string(" (any device serial)")
                               : " (device serial " + serial + ")")
            << ", single use, expires " << Time(Int(issued, "expires_at")) << "\n";
  if (out.empty()) {
    std::cout << token << "\n";
  } else {
    std::cout << "written to " << out << " (0600); on the DPU: dpuaudit-agent enroll "
              << "--token-file <file> ...\n";
  }
  return kExitOk;
}

int PrintTokenList(const nlohmann::json& list, bool json) {
  if (json) {
    std::cout << list.dump(2) << "\n";
    return kExitOk;
  }
  Table t({"TOKEN ID", "NODE", "SERIAL", "STATUS", "EXPIRES", "ISSUED BY"});
  if (list.contains("tokens") && list["tokens"].is_array()) {
    for (const auto& k : list["tokens"]) {
      std::string status = Str(k, "status");
      if (status == "used") status += " " + Time(Int(k, "used_at"));
      t.AddRow({Str(k, "token_id"), Str(k, "node_id"), Str(k, "serial"), status,
                Time(Int(k, "expires_at")), Str(k, "created_by")});
    }
  }
  std::cout << t.Render();
  return kExitOk;
}

std::string DescribeNodeIdentity(const nlohmann::json& n) {
  std::ostringstream o;
  o << "node " << Str(n, "node_id") << ": " << Str(n, "state") << "\n"
    << "  key thumbprint  " << Str(n, "key_thumbprint") << "\n"
    << "  enrolled at     " << Time(Int(n, "enrolled_at")) << "\n";
  const nlohmann::json claimed =
      n.contains("claimed_device") ? n["claimed_device"] : nlohmann::json::object();
  o << "  claimed device  serial " << (Str(claimed, "serial").empty() ? "-" : Str(claimed, "serial"))
    << ", psid " << (Str(claimed, "psid").empty() ? "-" : Str(claimed, "psid")) << ", model "
    << (Str(claimed, "model").empty() ? "-" : Str(claimed, "model")) << "\n";
  o << "  pinned serial   " << (Str(n, "device_serial").empty() ? "-" : Str(n, "device_serial"))
    << "\n";
  if (n.contains("approved_at")) {
    o << "  approved        " << Time(Int(n, "approved_at")) << " by " << Str(n, "approved_by")
      << "\n";
  }
  if (n.contains("pending_expires_at")) {
    o << "  pending until   " << Time(Int(n, "pending_expires_at")) << "\n";
  }
  if (n.contains("revocation") && n["revocation"].is_object()) {
    const nlohmann::json& r = n["revocation"];
    o << "  revoked         " << Time(Int(r, "revoked_at")) << " by " << Str(r, "revoked_by")
      << ": " << Str(r, "reason") << "\n";
  }
  if (n.contains("history") && n["history"].is_array()) {
    o << "  history:\n";
    for (const auto& e : n["history"]) {
      o << "    " << Time(Int(e, "at")) << "  " << Str(e, "event");
      if (!Str(e, "by").empty()) o << " by " << Str(e, "by");
      o << ": " << Str(e, "detail") << "\n";
    }
  }
  return o.str();
}

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
  bool ok_id = !node_id.empty() && node_id.size() <= 128 && node_id != "." && node_id != "..";
  for (char c : node_id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      ok_id = false;
    }
  }
  if (!ok_id) {
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

}  // namespace dpuaudit::apps
