#include "apps/shared/enrollment_print.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <iostream>
#include <sstream>

#include "apps/shared/table.h"
#include "apps/shared/utc_time.h"
#include "common/files.h"

namespace dpuaudit::apps {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 2;

std::string Time(int64_t t) { return UtcTime(t, "%Y-%m-%dT%H:%M:%SZ"); }

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

}  // namespace dpuaudit::apps
