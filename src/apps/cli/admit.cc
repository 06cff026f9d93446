#include "apps/cli/admit.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/shared/colour.h"
#include "apps/cli/cli_util.h"
#include "apps/cli/report_view.h"
#include "apps/shared/http_client.h"
#include "apps/shared/table.h"
#include "apps/shared/token_file.h"
#include "common/bytes.h"
#include "common/clock.h"
#include "common/files.h"
#include "report/ear.h"
#include "report/jws.h"

namespace dpuaudit::apps {
namespace {

int64_t Now() { return SystemClock::Get().NowUnixSeconds(); }

constexpr char kHowToPin[] =
    "pin the verifier's key first: `dpuaudit-verifier jwks --key verifier.key > "
    "verifier-jwks.json` on the verifier host, then `dpuaudit trust add --jwks "
    "verifier-jwks.json` here (or give --jwks FILE / --verifier-key PEM); "
    "`dpuaudit trust add --verifier URL --fingerprint KID` fetches it after you "
    "confirm its thumbprint.";

StatusOr<std::unique_ptr<HttpClient>> Client(const std::string& url, const std::string& cacert,
                                             bool insecure_http) {
  HttpClientOptions o;
  o.ca_file = cacert;
  o.insecure_http = insecure_http;
  return HttpClient::New(url, o);
}

// One entry per reason: "  DENY rule: observed X, expected Y" and its
// remediation wrapped to 100 columns ("WARN" for a warning, "DENY?" for an
// EAR signed before reasons carried their action).
std::string RemediationLines(const std::vector<report::DecisionReason>& reasons) {
  std::string out;
  for (const auto& x : reasons) {
    const std::string action = x.action == report::kActionWarn   ? "WARN"
                               : x.action == report::kActionDeny ? "DENY"
                                                                 : "DENY?";
    out += Wrap(x.rule_id + " " + std::string(VerdictName(x.verdict)) + ": observed " +
                    (x.observed.empty() ? std::string("(none)") : x.observed) + ", expected " +
                    x.expected,
                100, "  " + action + " ", "        ");
    if (!x.remediation.empty()) out += Wrap(x.remediation, 100, "        fix: ", "             ");
  }
  return out;
}

void PrintResult(const report::AttestationResult& r, const nlohmann::json& payload) {
  const auto& d = r.dpuaudit;
  std::cout << "node:       " << d.node_id << "\n"
            << "decision:   " << report::DecisionName(d.decision) << "\n"
            << "issued at:  " << TimeString(r.iat) << "\n"
            << "expires at: " << TimeString(r.exp) << (Now() >= r.exp ? "  EXPIRED" : "")
            << "\n"
            << "verifier:   " << r.verifier_id.developer << " / " << r.verifier_id.build
            << (r.verifier_id.instance.empty() ? "" : " / id " + r.verifier_id.instance) << "\n"
            << "policy:     " << d.policy.name << " sha256:" << d.policy.sha256 << "\n"
            << "report:     sha256:" << d.report_sha256 << "\n"
            << "nonce:      " << r.nonce << "\n\n";
  Table sm({"SUBMOD", "EAR STATUS", "TRUSTWORTHINESS VECTOR"}, 80);
  for (const auto& [name, s] : r.submods) {
    std::string v;
    for (const report::TrustVectorMember& m : report::TrustVectorMembers()) {
      const std::optional<int>& x = s.trust_vector.*m.member;
      if (x) v += std::string(v.empty() ? "" : " ") + m.name + "=" + std::to_string(*x);
    }
    sm.AddRow({name, std::string(report::ArStatusName(s.status)), v});
  }
  std::cout << sm.Render() << "\n";
  // Issue 16 §5 (apps/cli/report_view.h): the rules grouped fail, unknown,
  // pass, each with observed vs expected, action, tier, source and reason,
  // in 100 columns (the one-row-per-rule table did not fit); the collateral
  // the EAR records. Every field: --json.
  std::cout << "findings by verdict (observed vs expected, trust tier, evidence source, "
               "reason):\n"
            << GroupedFindingsText(FindingViews(d.reasons)) << "\n"
            << CollateralText(CollateralJson(payload));
  std::vector<report::DecisionReason> failing;
  for (const auto& x : d.reasons) {
    if (x.verdict != Verdict::kPass) failing.push_back(x);
  }
  if (!failing.empty()) std::cout << "\nto fix:\n" << RemediationLines(failing);
}

// The payload of a JWT whose signature is NOT checked, for display only.
StatusOr<Bytes> UnverifiedPayload(const std::string& jwt) {
  size_t a = jwt.find('.');
  size_t b = a == std::string::npos ? a : jwt.find('.', a + 1);
  if (b == std::string::npos) return InvalidArgumentError("not a JWT (needs 3 dot-separated parts).");
  return Base64UrlDecode(std::string_view(jwt).substr(a + 1, b - a - 1));
}

Status WriteTrustFile(const std::string& path, const report::TrustedKeys& keys) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(parent, ec)) {
      std::filesystem::create_directories(parent, ec);
      if (ec) return InternalError("cannot create " + parent.string() + ": " + ec.message() + ".");
      ::chmod(parent.c_str(), 0700);
    }
  }
  return WriteFileAtomic(path, AsBytes(keys.SerializeTrustFile()), 0600);
}

// Prints the decision (one line, or JSON) and maps it to the exit code.
int Report(const AdmitOptions& o, const report::AdmissionDecision& a) {
  const int exit_code = a.admit ? kExitOk : kExitDeny;
  const std::string decision = a.admit ? "admit" : "deny";
  if (o.json) {
    nlohmann::json j = {{"node_id", o.node},           {"decision", decision},
                        {"verified", a.verified},       {"reason", a.reason},
                        {"expires_at", a.expires_at},   {"kid", a.kid},
                        {"verifier_id", a.verifier_id}, {"exit_code", exit_code}};
    if (!a.status.empty()) j["status"] = a.status;
    std::cout << j.dump() << "\n";
  } else if (!o.quiet) {
    if (a.admit) {
      std::cout << o.node << ": " << PaintVerdict("admit", "admit")
                << " (EAR verified with pinned key " << a.kid << ", expires "
                << TimeString(a.expires_at) << ")\n";
    } else {
      std::cout << o.node << ": " << PaintVerdict("deny", "deny") << (a.status.empty() || a.status == "admitted" ? "" : " (" + a.status + ")")
                << (a.reason.empty() ? "" : " — " + a.reason) << "\n";
    }
    // Failing rules with what each does (DENY or WARN: an admit may carry
    // warnings) and how to fix it.
    std::cout << RemediationLines(a.not_passing);
  }
  return exit_code;
}

}  // namespace

std::string TrustFilePath(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (const char* env = std::getenv("DPUAUDIT_TRUST_FILE"); env != nullptr && *env) return env;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg) {
    return std::string(xdg) + "/dpuaudit/trust.json";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home ? home : ".") + "/.config/dpuaudit/trust.json";
}

StatusOr<report::TrustedKeys> ReadTrustFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return report::TrustedKeys();
    return InternalError("trust file " + path + ": " + std::strerror(errno) + ".");
  }
  if ((st.st_mode & 022) != 0) {
    return PermissionDeniedError("trust file " + path +
                                 " is writable by group or others; chmod 600 it.");
  }
  DPA_ASSIGN_OR_RETURN(Bytes b, ReadFileLimited(path, 1u << 20));
  auto keys = report::TrustedKeys::ParseTrustFile(b);
  if (!keys.ok()) return keys.status().WithPrefix("trust file " + path);
  return keys;
}

StatusOr<report::TrustedKeys> LoadPinnedKeys(const PinnedKeySource& source,
                                             std::string* described) {
  if (!source.jwks_file.empty()) {
    DPA_ASSIGN_OR_RETURN(std::string text, ReadText(source.jwks_file));
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return InvalidArgumentError(source.jwks_file + " is not JSON.");
    auto keys = report::TrustedKeys::FromJwks(j, "jwks:" + source.jwks_file, Now());
    if (!keys.ok()) return keys.status().WithPrefix(source.jwks_file);
    *described = "JWKS " + source.jwks_file;
    return keys;
  }
  if (!source.verifier_key_file.empty()) {
    DPA_ASSIGN_OR_RETURN(std::string pem, ReadText(source.verifier_key_file));
    auto keys = report::TrustedKeys::FromPem(pem, "pem:" + source.verifier_key_file, Now());
    if (!keys.ok()) return keys.status().WithPrefix(source.verifier_key_file);
    *described = "key " + source.verifier_key_file;
    return keys;
  }
  std::string path = TrustFilePath(source.trust_file);
  DPA_ASSIGN_OR_RETURN(report::TrustedKeys keys, ReadTrustFile(path));
  if (keys.empty()) {
    return FailedPreconditionError("no verifier key is pinned (trust file " + path +
                                   " is absent or empty); " + kHowToPin);
  }
  *described = "trust file " + path;
  return keys;
}

int Admit(const AdmitOptions& o) {
  std::string described;
  auto keys = LoadPinnedKeys(o.keys, &described);
  if (!keys.ok()) return Fail(keys.status());
  if (o.verifier.empty() == o.ear_file.empty()) {
    return Fail(InvalidArgumentError("admit needs exactly one of --verifier URL or --ear FILE."));
  }
  report::AdmissionAnswer answer;  // --ear: the EAR alone decides
  if (!o.ear_file.empty()) {
    auto text = ReadText(o.ear_file);
    if (!text.ok()) return Fail(text.status());
    if (Status kind = CheckJwsKind(*text, JwsKind::kResult, o.ear_file); !kind.ok()) {
      return Fail(kind);
    }
    answer.ear = *text;
  } else {
    // Refused here, before any connection, for http:// off loopback.
    auto c = Client(o.verifier, o.cacert, o.insecure_http);
    if (!c.ok()) return Fail(c.status());
    std::string token;
    if (!o.token_file.empty()) {
      auto t = ReadTokenFile(o.token_file, "reader");
      if (!t.ok()) return Fail(t.status());
      token = *t;
    }
    auto r = (*c)->GetWithBearer("/v1/nodes/" + o.node + "/admission", token);
    if (!r.ok()) return Fail(r.status());
    if (r->status != 200) {
      Status s = StatusFromHttpError(*r);
      if (r->status == 401) {
        return Fail(UnauthenticatedError(s.message() +
                                         " (give --token-file with the verifier's reader token)"));
      }
      return Fail(s);
    }
    answer = report::ParseAdmissionAnswer(r->body);
  }
  report::AdmissionExpectation expect;
  expect.node_id = o.node;
  expect.verifier_id = o.verifier_id;
  expect.now = Now();
  expect.max_skew_seconds = o.max_skew_seconds;
  return Report(o, report::DecideAdmission(answer, *keys, expect));
}

int ResultShow(const std::string& file, const PinnedKeySource& source, bool json) {
  auto jwt = ReadText(file);
  if (!jwt.ok()) return Fail(jwt.status());
  if (Status kind = CheckJwsKind(*jwt, JwsKind::kResult, file); !kind.ok()) return Fail(kind);
  // --json (docs/schemas/result-show.schema.json): the signature check and
  // the EAR's claims as signed.
  auto print_json = [&](const nlohmann::json& signature) {
    auto payload = UnverifiedPayload(*jwt);
    nlohmann::json claims = payload.ok() ? nlohmann::json::parse(ToString(*payload), nullptr, false)
                                         : nlohmann::json();
    nlohmann::json out = {{"file", file}, {"signature", signature},
                          {"claims", claims.is_discarded() ? nlohmann::json() : claims}};
    // Issue 16 §5: the collateral and the grouping, read from the claims.
    out["collateral"] = CollateralJson(out["claims"]);
    if (auto ear = payload.ok() ? report::ParseEar(*payload)
                                : StatusOr<report::AttestationResult>(payload.status());
        ear.ok()) {
      out["groups"] = GroupedFindingsJson(FindingViews(ear->dpuaudit.reasons));
    }
    std::cout << out.dump(2) << "\n";
  };
  if (!json) std::cout << FitLines("result:     " + file + "\n", 100);
  std::string described;
  auto keys = LoadPinnedKeys(source, &described);
  if (!keys.ok()) {
    if (keys.status().code() != StatusCode::kFailedPrecondition) return Fail(keys.status());
    auto payload = UnverifiedPayload(*jwt);
    if (!payload.ok()) return Fail(payload.status());
    auto r = report::ParseEar(*payload);
    if (!r.ok()) return Fail(r.status().WithPrefix(file));
    if (json) {
      print_json({{"checked", false}, {"verified", false},
                  {"reason", "no verifier key pinned"}});
      return kExitOk;
    }
    std::cout << "signature:  NOT CHECKED (no verifier key pinned: give --jwks, --verifier-key "
                 "or run `dpuaudit trust add`); the result below is unverified\n";
    PrintResult(*r, nlohmann::json::parse(ToString(*payload), nullptr, false));
    return kExitOk;
  }
  std::string kid;
  auto r = report::VerifyPinnedEar(*jwt, *keys, Now(), report::kDefaultMaxSkewSeconds,
                                   /*allow_expired=*/true, &kid);
  if (!r.ok()) {
    if (json) {
      print_json({{"checked", true}, {"verified", false}, {"reason", r.status().message()}});
      return kExitDeny;
    }
    std::cout << "signature:  INVALID: " << r.status().message() << "\n";
    return kExitDeny;
  }
  if (json) {
    print_json({{"checked", true}, {"verified", true}, {"kid", kid}, {"keys", described}});
    return kExitOk;
  }
  std::cout << FitLines("signature:  valid (ES256, pinned key " + kid + " from " + described +
                            ")\n",
                        100);
  auto signed_payload = UnverifiedPayload(*jwt);  // verified above
  PrintResult(*r, signed_payload.ok()
                      ? nlohmann::json::parse(ToString(*signed_payload), nullptr, false)
                      : nlohmann::json());
  return kExitOk;
}

int ResultSummary(const std::vector<std::string>& files, const PinnedKeySource& source,
                  bool json) {
  std::string described;
  auto keys = LoadPinnedKeys(source, &described);
  if (!keys.ok()) return Fail(keys.status());
  Table t({"NODE", "DECISION", "FAILING RULES (observed vs expected)"}, 2000);
  nlohmann::json rows = nlohmann::json::array();
  int rc = kExitOk;
  for (const auto& f : files) {
    auto jwt = ReadText(f);
    if (jwt.ok()) {
      if (Status kind = CheckJwsKind(*jwt, JwsKind::kResult, f); !kind.ok()) jwt = kind;
    }
    auto r = jwt.ok() ? report::VerifyPinnedEar(*jwt, *keys, Now(),
                                                report::kDefaultMaxSkewSeconds,
                                                /*allow_expired=*/true)
                      : StatusOr<report::AttestationResult>(jwt.status());
    if (!r.ok()) {
      t.AddRow({f, "error", r.status().message()});
      rows.push_back({{"file", f}, {"error", r.status().message()}});
      rc = kExitError;
      continue;
    }
    std::string decision(report::DecisionName(r->dpuaudit.decision));
    const bool expired = Now() >= r->exp;
    nlohmann::json failing = nlohmann::json::array();
    for (nlohmann::json& x : report::DecisionReasonsJson(r->dpuaudit.reasons)) {
      if (x.value("verdict", "") != "pass") failing.push_back(std::move(x));
    }
    rows.push_back({{"file", f},
                    {"node_id", r->dpuaudit.node_id},
                    {"decision", decision},
                    {"expired", expired},
                    {"expires_at", r->exp},
                    {"failing", std::move(failing)}});
    if (expired) decision += " (expired)";
    t.AddRow({r->dpuaudit.node_id, decision, report::FailingRules(r->dpuaudit)});
  }
  if (json) {
    // docs/schemas/result-summary.schema.json
    std::cout << nlohmann::json{{"results", std::move(rows)}}.dump(2) << "\n";
  } else {
    std::cout << t.Render();
  }
  return rc;
}

namespace {

// One pinned key as `trust list|add|remove --json` show it.
nlohmann::json TrustKeyJson(const report::TrustedKey& k) {
  return {{"kid", k.kid}, {"thumbprint", k.thumbprint}, {"source", k.source},
          {"added_at", k.added_at}};
}

// docs/schemas/trust-change.schema.json; `reason` says why nothing changed.
void PrintTrustChange(const std::string& action, const std::string& path, nlohmann::json keys,
                      const std::string& reason) {
  if (!keys.is_array()) keys = nlohmann::json::array();
  bool changed = false;
  for (const auto& k : keys) changed |= k.value("changed", false);
  nlohmann::json j = {{"action", action}, {"trust_file", path}, {"changed", changed},
                      {"keys", std::move(keys)}};
  if (!reason.empty()) j["reason"] = reason;
  std::cout << j.dump(2) << "\n";
}

}  // namespace

int TrustAdd(const TrustAddOptions& o) {
  int sources = !o.jwks_file.empty() + !o.verifier_key_file.empty() + !o.verifier.empty();
  if (sources != 1) {
    return Fail(InvalidArgumentError(
        "trust add needs exactly one of --jwks FILE, --verifier-key PEM, or --verifier URL "
        "--fingerprint KID."));
  }
  report::TrustedKeys incoming;
  if (!o.verifier.empty()) {
    if (o.fingerprint.empty()) {
      return Fail(InvalidArgumentError(
          "trust add --verifier needs --fingerprint KID: the thumbprint you confirmed out of "
          "band (`dpuaudit-verifier jwks --key …` on the verifier host prints it); a key is "
          "never trusted just because a server publishes it."));
    }
    auto c = Client(o.verifier, o.cacert, o.insecure_http);
    if (!c.ok()) return Fail(c.status());
    auto r = (*c)->Get("/.well-known/jwks.json");
    if (!r.ok()) return Fail(r.status());
    if (r->status != 200) return Fail(StatusFromHttpError(*r));
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded()) return Fail(InvalidArgumentError("the verifier's JWKS is not JSON."));
    auto all = report::TrustedKeys::FromJwks(j, "verifier:" + o.verifier, Now());
    if (!all.ok()) return Fail(all.status().WithPrefix("the verifier's JWKS"));
    std::string offered;
    for (const auto& k : all->keys()) {
      offered += (offered.empty() ? "" : ", ") + k.thumbprint;
      // The thumbprint is computed here from the key, so a server cannot
      // claim the confirmed fingerprint for another key.
      if (k.thumbprint == o.fingerprint) (void)incoming.Add(k);
    }
    if (incoming.empty()) {
      const std::string why = "no key at " + o.verifier + " has thumbprint " + o.fingerprint +
                              " (it offers: " + offered + "); nothing pinned.";
      std::cerr << "dpuaudit: " << why << "\n";
      if (o.json) PrintTrustChange("add", TrustFilePath(o.trust_file), {}, why);
      return kExitDeny;
    }
  } else {
    std::string ignored;
    PinnedKeySource s;
    s.jwks_file = o.jwks_file;
    s.verifier_key_file = o.verifier_key_file;
    auto k = LoadPinnedKeys(s, &ignored);
    if (!k.ok()) return Fail(k.status());
    incoming = *k;
    if (!o.fingerprint.empty() && (incoming.keys().size() != 1 ||
                                   incoming.keys()[0].thumbprint != o.fingerprint)) {
      return Fail(InvalidArgumentError("the key's thumbprint is " +
                                       incoming.keys()[0].thumbprint + ", not --fingerprint " +
                                       o.fingerprint + "; nothing pinned."));
    }
  }
  std::string path = TrustFilePath(o.trust_file);
  auto store = ReadTrustFile(path);
  if (!store.ok()) return Fail(store.status());
  std::string lines;
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& k : incoming.keys()) {
    auto added = store->Add(k);
    if (!added.ok()) return Fail(added.status());
    lines += std::string(*added ? "pinned  " : "already ") + "kid " + k.kid + "  thumbprint " +
             k.thumbprint + "  (" + k.source + ")\n";
    const report::TrustedKey* stored = store->Find(k.kid);
    nlohmann::json c = TrustKeyJson(stored != nullptr ? *stored : k);
    c["changed"] = *added;
    changes.push_back(std::move(c));
  }
  Status s = WriteTrustFile(path, *store);
  if (!s.ok()) return Fail(s);
  if (o.json) {
    PrintTrustChange("add", path, std::move(changes), "");
  } else {
    std::cout << lines << "trust file: " << path << "\n";
  }
  return kExitOk;
}

int TrustList(const std::string& trust_file, bool json) {
  std::string path = TrustFilePath(trust_file);
  auto store = ReadTrustFile(path);
  if (!store.ok()) return Fail(store.status());
  if (json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& k : store->keys()) a.push_back(TrustKeyJson(k));
    std::cout << nlohmann::json{{"trust_file", path}, {"keys", a}}.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "trust file: " << path << "\n";
  Table t({"KID", "THUMBPRINT", "ADDED", "SOURCE"}, 200);
  for (const auto& k : store->keys()) {
    t.AddRow({k.kid, k.thumbprint, TimeString(k.added_at), k.source});
  }
  std::cout << t.Render();
  return kExitOk;
}

int TrustRemove(const std::string& trust_file, const std::string& kid, bool json) {
  std::string path = TrustFilePath(trust_file);
  auto store = ReadTrustFile(path);
  if (!store.ok()) return Fail(store.status());
  const report::TrustedKey* pinned = store->Find(kid);
  if (pinned == nullptr) {
    const std::string why = "kid " + kid + " is not pinned in " + path + ".";
    std::cerr << "dpuaudit: " << why << "\n";
    if (json) PrintTrustChange("remove", path, {}, why);
    return kExitDeny;
  }
  nlohmann::json removed = TrustKeyJson(*pinned);
  removed["changed"] = true;
  store->Remove(kid);
  Status s = WriteTrustFile(path, *store);
  if (!s.ok()) return Fail(s);
  if (json) {
    PrintTrustChange("remove", path, nlohmann::json::array({std::move(removed)}), "");
  } else {
    std::cout << "removed kid " << kid << " from " << path << "\n";
  }
  return kExitOk;
}

}  // namespace dpuaudit::apps
