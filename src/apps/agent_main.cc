// dpuaudit-agent: runs on the BlueField Arm cores. Measures the device
// (live, or a recorded folder with --device-root), signs a report bound to a
// verifier nonce and submits it. Never listens on a port.
#include <cstdio>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/common/agent_collect.h"
#include "apps/common/http_client.h"
#include "apps/common/token_file.h"
#include "apps/common/table.h"
#include "apps/common/version.h"
#include "attest/eventlog.h"
#include "attest/quote.h"
#include "attest/tpm/simulate.h"
#include "attest/tpm/tpm.h"
#include "attest/tpm_structs.h"
#include "attest/tpm_claims.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "device/device_source.h"
#include "device/evidence.h"
#include "isolation/identity.h"
#include "isolation/probes.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "verifier/policy.h"
#include "verifier/service.h"

namespace dpuaudit::apps {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFindings = 1;
constexpr int kExitError = 2;

std::atomic<bool> g_stop{false};
void HandleSignal(int) { g_stop = true; }

struct Flags {
  std::string verifier;
  std::string node_id;
  std::string key = "/var/lib/dpuaudit/agent.key";
  std::string cacert;
  std::string device_root;
  std::string bootstrap_token_file;
  bool insecure_http = false;
  std::string report_out, ear_out;
  std::string interval = "60s";
  int count = 0;
  bool json = false;
  std::string record_out;
  std::string policy;
  // TPM (issue 5): a TCTI string enables hardware-signed reports.
  std::string tpm;
  std::string ek_type = "rsa";
  std::string eventlog = "/sys/kernel/security/tpm0/binary_bios_measurements";
};

constexpr size_t kMaxEventLogBytes = 2u << 20;  // attest::TpmClaimsLimits

StatusOr<attest::tpm::EkType> EkTypeOf(const Flags& f) {
  if (f.ek_type == "rsa") return attest::tpm::EkType::kRsa2048;
  if (f.ek_type == "ecc") return attest::tpm::EkType::kEccP256;
  return InvalidArgumentError("--ek-type must be rsa or ecc.");
}

int Fail(const Status& s) {
  std::cerr << "dpuaudit-agent: " << s.message() << "\n";
  return kExitError;
}

StatusOr<std::unique_ptr<device::DeviceSource>> OpenSource(const Flags& f) {
  if (f.device_root.empty()) return device::NewLiveDeviceSource();
  return device::NewRecordedDeviceSource(f.device_root);
}

StatusOr<std::unique_ptr<HttpClient>> Client(const Flags& f) {
  if (f.verifier.empty()) return InvalidArgumentError("--verifier URL is required.");
  HttpClientOptions o;
  o.ca_file = f.cacert;
  o.insecure_http = f.insecure_http;
  return HttpClient::New(f.verifier, o);
}

StatusOr<nlohmann::json> PostJson(const HttpClient& client, const std::string& path,
                                  const std::string& content_type,
                                  const std::string& body) {
  DPA_ASSIGN_OR_RETURN(HttpResponse r, client.Post(path, content_type, body));
  if (r.status < 200 || r.status >= 300) return StatusFromHttpError(r);
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError("POST " + path + ": verifier answered non-JSON.");
  }
  return j;
}

Status ValidateNodeId(const std::string& id) {
  if (id.empty() || id.size() > report::kMaxNodeIdChars) {
    return InvalidArgumentError("--node-id must be 1-128 characters.");
  }
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return InvalidArgumentError("--node-id \"" + id +
                                  "\" may only use [A-Za-z0-9._-].");
    }
  }
  return OkStatus();
}

int Enroll(const Flags& f) {
  if (Status s = ValidateNodeId(f.node_id); !s.ok()) return Fail(s);
  bool created = false;
  auto key = EcPrivateKey::LoadOrCreateFile(f.key, &created);
  if (!key.ok()) return Fail(key.status());
  if (created) spdlog::info("created agent key {} (P-256, mode 0600)", f.key);
  auto client = Client(f);
  if (!client.ok()) return Fail(client.status());
  nlohmann::json body = {
      {"node_id", f.node_id},
      {"public_key", report::PublicJwk(key->public_key(), key->public_key().Thumbprint())}};
  {
    // The device identity as this agent reads it (the same probes the
    // reports' identity comes from): the verifier stores it as claimed and
    // shows it to the operator who approves; a serial-bound token needs it.
    auto source = OpenSource(f);
    if (!source.ok()) return Fail(source.status());
    isolation::ProbeContext ctx = isolation::ProbeContext::Discover(**source);
    isolation::DeviceIdentity id = isolation::CollectIdentity(**source, ctx);
    nlohmann::json device = nlohmann::json::object();
    if (!id.serial.empty()) device["serial"] = id.serial;
    if (!id.psid.empty()) device["psid"] = id.psid;
    if (!id.model.empty()) device["model"] = id.model;
    if (!device.empty()) body["device"] = std::move(device);
  }
  std::unique_ptr<attest::tpm::Tpm> tpm;
  attest::tpm::EkType ek_type = attest::tpm::EkType::kRsa2048;
  if (!f.tpm.empty()) {
    auto t = EkTypeOf(f);
    if (!t.ok()) return Fail(t.status());
    ek_type = *t;
    auto opened = attest::tpm::Tpm::Open(f.tpm);
    if (!opened.ok()) return Fail(opened.status());
    tpm = std::move(opened).value();
    auto ek = tpm->EkPublic(ek_type);
    if (!ek.ok()) return Fail(ek.status());
    auto ak = tpm->AkPublic();
    if (!ak.ok()) return Fail(ak.status());
    nlohmann::json t_json = {{"ek_public_b64", Base64Encode(*ek)},
                             {"ak_public_b64", Base64Encode(*ak)}};
    auto cert = tpm->ReadEkCertificate(ek_type);
    if (cert.ok()) {
      t_json["ek_cert_b64"] = Base64Encode(*cert);
    } else if (cert.status().code() == StatusCode::kNotFound) {
      spdlog::warn("the TPM has no EK certificate; the verifier accepts it only if its "
                   "policy allows uncertified EKs");
    } else {
      return Fail(cert.status());
    }
    body["tpm"] = std::move(t_json);
  }
  std::string token;
  if (!f.bootstrap_token_file.empty()) {
    auto t = ReadTokenFile(f.bootstrap_token_file, "bootstrap");
    if (!t.ok()) return Fail(t.status());
    token = *t;
  }
  HttpResponse r;
  {
    // The token travels only in the Authorization header; never logged.
    auto c = (*client)->PostWithBearer("/v1/nodes", "application/json", body.dump(), token);
    if (!c.ok()) return Fail(c.status());
    r = *c;
  }
  if (r.status != 200 && r.status != 201) return Fail(StatusFromHttpError(r));
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  std::string state = j.is_object() ? JsonStr(j, "state", "") : "";
  std::cout << "enrolled " << f.node_id << ": " << (state.empty() ? "?" : state)
            << " (key thumbprint " << key->public_key().Thumbprint() << ")\n";
  if (body.contains("device") && body["device"].contains("serial")) {
    std::cout << "device serial " << body["device"]["serial"].get<std::string>() << "\n";
  }
  if (tpm && j.is_object()) {
    if (j.contains("tpm_challenge") && j["tpm_challenge"].is_object()) {
      // Credential activation: only the TPM holding this EK, with the AK
      // the verifier named, can recover the credential.
      const nlohmann::json& ch = j["tpm_challenge"];
      auto blob = Base64Decode(JsonStr(ch, "credential_blob_b64", ""));
      auto secret = Base64Decode(JsonStr(ch, "encrypted_secret_b64", ""));
      if (!blob.ok() || !secret.ok()) {
        return Fail(InvalidArgumentError("verifier sent a malformed TPM challenge."));
      }
      auto credential = tpm->ActivateCredential(ek_type, *blob, *secret);
      if (!credential.ok()) return Fail(credential.status());
      nlohmann::json activate = {{"credential_b64", Base64Encode(*credential)}};
      auto a = PostJson(**client, "/v1/nodes/" + f.node_id + "/tpm/activate",
                        "application/json", activate.dump());
      if (!a.ok()) return Fail(a.status());
      std::cout << "TPM bound: AK " << JsonStr(*a, "ak_name", "?")
                << " activated with the EK\n";
    } else {
      std::cout << "TPM: " << JsonStr(j, "tpm_state", "?") << "\n";
    }
  }
  if (state == "pending") {
    std::cout << "waiting for operator approval: dpuaudit-verifier approve "
              << f.node_id << " --thumbprint " << key->public_key().Thumbprint()
              << " --db <verifier.db>\n";
  }
  return kExitOk;
}

struct AttestOutcome {
  std::string decision;
  nlohmann::json response;
};

// Adds the "tpm" member: a quote over the policy's PCR selection whose
// qualifying data binds the nonce and every other claim
// (docs/architecture.md#report-format), with the event log as the device source
// shows it.
Status AddTpmQuote(const Flags& f, attest::tpm::Tpm& tpm, const nlohmann::json& challenge,
                   const device::DeviceSource& source, report::ReportClaims& claims) {
  attest::PcrSelection selection = attest::PcrSelection::DefaultSha256();
  if (challenge.contains("pcr_selection") && challenge["pcr_selection"].is_string()) {
    auto parsed = attest::PcrSelection::Parse(challenge["pcr_selection"].get<std::string>());
    if (!parsed.ok()) return parsed.status().WithPrefix("verifier pcr_selection");
    selection = *parsed;
  }
  DPA_ASSIGN_OR_RETURN(Bytes nonce, Base64UrlDecode(claims.nonce));
  claims.tpm.reset();
  Bytes qualifying =
      attest::QualifyingData(nonce, AsBytes(report::SerializeClaimsWithoutTpm(claims)));
  attest::TpmClaims t;
  auto log = source.ReadFile(f.eventlog, kMaxEventLogBytes + 1);
  if (log.ok()) {
    if (log->size() > kMaxEventLogBytes) {
      return ResourceExhaustedError(f.eventlog + " is larger than " +
                                    std::to_string(kMaxEventLogBytes) + " bytes.");
    }
    t.eventlog = std::move(log).value();
  } else if (log.status().code() != StatusCode::kNotFound) {
    return log.status().WithPrefix(f.eventlog);
  } else {
    spdlog::warn("no event log at {}: the verifier cannot replay the boot", f.eventlog);
  }
  DPA_ASSIGN_OR_RETURN(Bytes ak_public, tpm.AkPublic());
  DPA_ASSIGN_OR_RETURN(attest::TpmPublic ak, attest::TpmPublic::Decode(ak_public));
  DPA_ASSIGN_OR_RETURN(attest::tpm::QuoteResult q, tpm.Quote(qualifying, selection));
  t.quote_attest = std::move(q.attest);
  t.quote_sig = std::move(q.signature);
  t.ak_name = ak.name();
  t.pcrs = std::move(q.pcrs);
  claims.tpm = attest::TpmClaimsJson(t);
  return OkStatus();
}

StatusOr<AttestOutcome> AttestOnce(const Flags& f, const HttpClient& client,
                                   const Signer& signer,
                                   const device::DeviceSource& source,
                                   attest::tpm::Tpm* tpm) {
  // Signed with the node key, so only this node can spend its challenge
  // budget (report/challenge_proof.h).
  DPA_ASSIGN_OR_RETURN(std::string challenge_req,
                       report::ChallengeRequestBody(
                           f.node_id, SystemClock::Get().NowUnixSeconds(), signer));
  DPA_ASSIGN_OR_RETURN(nlohmann::json challenge,
                       PostJson(client, "/v1/challenges", "application/json",
                                challenge_req));
  if (!challenge.contains("nonce") || !challenge["nonce"].is_string()) {
    return InvalidArgumentError("verifier challenge has no nonce.");
  }
  Collection c = CollectFromDevice(source);
  report::ReportClaims claims =
      BuildClaims(c, f.node_id, challenge["nonce"].get<std::string>(),
                  SystemClock::Get().NowUnixSeconds());
  if (tpm != nullptr) DPA_RETURN_IF_ERROR(AddTpmQuote(f, *tpm, challenge, source, claims));
  DPA_ASSIGN_OR_RETURN(std::string jws, report::SignReport(claims, signer, f.node_id));
  if (!f.report_out.empty()) {
    DPA_RETURN_IF_ERROR(WriteFileAtomic(f.report_out, AsBytes(jws), 0644));
  }
  DPA_ASSIGN_OR_RETURN(nlohmann::json result,
                       PostJson(client, "/v1/reports", "application/jose", jws));
  std::string decision = JsonStr(result, "decision", "");
  if (decision != "admit" && decision != "deny") {
    return InvalidArgumentError("verifier answered without a decision.");
  }
  if (!f.ear_out.empty() && result.contains("ear") && result["ear"].is_string()) {
    DPA_RETURN_IF_ERROR(
        WriteFileAtomic(f.ear_out, AsBytes(result["ear"].get<std::string>()), 0644));
  }
  return AttestOutcome{decision, result};
}

void PrintOutcome(const std::string& node, const AttestOutcome& o) {
  std::cout << node << ": " << o.decision << "\n";
  if (o.response.contains("reasons") && o.response["reasons"].is_array()) {
    for (const auto& r : o.response["reasons"]) {
      if (!r.is_object() || JsonStr(r, "verdict", "") == "pass") continue;
      std::cout << "  " << JsonStr(r, "rule_id", "?") << " " << JsonStr(r, "verdict", "?")
                << ": observed " << JsonStr(r, "observed", "") << ", expected "
                << JsonStr(r, "expected", "");
      std::string reason = JsonStr(r, "reason", "");
      if (!reason.empty()) std::cout << " (" << reason << ")";
      std::cout << "\n";
    }
  }
}

StatusOr<std::unique_ptr<Signer>> LoadSigner(const Flags& f) {
  auto key = EcPrivateKey::LoadFile(f.key);
  if (!key.ok()) {
    if (key.status().code() == StatusCode::kNotFound) {
      return FailedPreconditionError("no agent key at " + f.key +
                                     "; run `dpuaudit-agent enroll` first.");
    }
    return key.status();
  }
  DPA_ASSIGN_OR_RETURN(auto signer, Es256Signer::New(*key));
  return std::unique_ptr<Signer>(std::move(signer));
}

StatusOr<std::unique_ptr<attest::tpm::Tpm>> MaybeOpenTpm(const Flags& f) {
  if (f.tpm.empty()) return std::unique_ptr<attest::tpm::Tpm>();
  return attest::tpm::Tpm::Open(f.tpm);
}

int Attest(const Flags& f) {
  if (Status s = ValidateNodeId(f.node_id); !s.ok()) return Fail(s);
  auto tpm = MaybeOpenTpm(f);
  if (!tpm.ok()) return Fail(tpm.status());
  auto signer = LoadSigner(f);
  if (!signer.ok()) return Fail(signer.status());
  auto client = Client(f);
  if (!client.ok()) return Fail(client.status());
  auto source = OpenSource(f);
  if (!source.ok()) return Fail(source.status());
  auto o = AttestOnce(f, **client, **signer, **source, tpm->get());
  if (!o.ok()) return Fail(o.status());
  PrintOutcome(f.node_id, *o);
  return kExitOk;
}

StatusOr<int64_t> ParseInterval(const std::string& s) {
  size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (...) {
    return InvalidArgumentError("--interval \"" + s + "\" is not a duration like 30s, 5m, 1h.");
  }
  std::string unit = s.substr(pos);
  int64_t mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  if (mult == 0 || v <= 0) {
    return InvalidArgumentError("--interval \"" + s + "\" is not a positive duration like 30s, 5m, 1h.");
  }
  return static_cast<int64_t>(v) * mult;
}

int Run(const Flags& f) {
  if (Status s = ValidateNodeId(f.node_id); !s.ok()) return Fail(s);
  auto interval = ParseInterval(f.interval);
  if (!interval.ok()) return Fail(interval.status());
  auto signer = LoadSigner(f);
  if (!signer.ok()) return Fail(signer.status());
  auto client = Client(f);
  if (!client.ok()) return Fail(client.status());
  auto source = OpenSource(f);
  if (!source.ok()) return Fail(source.status());
  auto tpm = MaybeOpenTpm(f);
  if (!tpm.ok()) return Fail(tpm.status());
  std::signal(SIGINT, HandleSignal);
  std::signal(SIGTERM, HandleSignal);
  spdlog::info("attesting {} every {} s to {}", f.node_id, *interval, f.verifier);
  int failures = 0;
  for (int i = 0; !g_stop && (f.count == 0 || i < f.count); ++i) {
    auto o = AttestOnce(f, **client, **signer, **source, tpm->get());
    int64_t wait = *interval;
    if (o.ok()) {
      failures = 0;
      spdlog::info("{}: {}", f.node_id, o->decision);
      PrintOutcome(f.node_id, *o);
    } else {
      ++failures;
      // Back off on errors (2, 4, 8 ... s), never beyond the interval.
      wait = std::min<int64_t>(*interval, int64_t{1} << std::min(failures, 6));
      spdlog::warn("attestation failed ({} in a row): {}", failures, o.status().message());
    }
    if (f.count != 0 && i + 1 >= f.count) break;
    for (int64_t t = 0; t < wait * 10 && !g_stop; ++t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return failures == 0 ? kExitOk : kExitError;
}

// `probe`: the local findings as a table (default) or JSON. Without
// --policy: exit 0 when every finding passes, else 1. With --policy FILE
// (loaded against this build's probe catalogue, as the verifier does):
// the per-rule results and decision are printed too, and the exit code is
// 0 on admit, 1 on deny; a policy that does not load exits 2.
int Probe(const Flags& f) {
  std::optional<verifier::Policy> policy;
  if (!f.policy.empty()) {
    auto p = verifier::LoadPolicyFile(f.policy, verifier::KnownRules());
    if (!p.ok()) return Fail(p.status());
    policy = std::move(p).value();
  }
  auto source = OpenSource(f);
  if (!source.ok()) return Fail(source.status());
  Collection c = CollectFromDevice(**source);
  bool all_pass = true;
  for (const auto& fi : c.findings) all_pass = all_pass && fi.verdict == Verdict::kPass;
  std::optional<verifier::PolicyOutcome> outcome;
  if (policy) {
    // Reference values and TPM bindings live in the verifier: refval.* and
    // tpm.* rules are shown as not decided here and left out of the local
    // decision.
    outcome = policy->Evaluate(c.findings);
    outcome->decision = verifier::Decision::kAdmit;
    for (auto& r : outcome->results) {
      if (r.rule_id.rfind("refval.", 0) == 0) {
        r.verdict = Verdict::kUnknown;
        r.reason = "appraised by the verifier against its reference values; not decided locally.";
        continue;
      }
      if (r.rule_id.rfind("tpm.", 0) == 0) {
        r.verdict = Verdict::kUnknown;
        r.reason = "appraised by the verifier from the TPM quote and its TPM binding; not "
                   "decided locally.";
        continue;
      }
      if (r.verdict != Verdict::kPass && r.action == verifier::RuleAction::kDeny) {
        outcome->decision = verifier::Decision::kDeny;
      }
    }
  }
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
  return all_pass ? kExitOk : kExitFindings;
}

int Record(const Flags& f) {
  auto source = OpenSource(f);
  if (!source.ok()) return Fail(source.status());
  Collection c = CollectFromDevice(**source);
  Status s = device::WriteRecording(c.evidence, f.record_out);
  if (!s.ok()) return Fail(s);
  // Boot partitions and OS boot files are measured by streaming, not
  // captured as evidence; copy them so the recording replays them too.
  s = device::CopyStreamsIntoRecording(**source, c.streamed_paths, f.record_out);
  if (!s.ok()) return Fail(s);
  std::cout << "recorded " << c.evidence.size() << " observations and "
            << c.streamed_paths.size() << " measured files to " << f.record_out << "\n";
  return kExitOk;
}

// `simulate-boot`: plays a boot event log into a software TPM's PCRs, as
// firmware would (tests and the demo). Refuses hardware TPMs.
int SimulateBoot(const Flags& f) {
  if (f.tpm.rfind("swtpm:", 0) != 0 && f.tpm.rfind("mssim:", 0) != 0) {
    return Fail(InvalidArgumentError(
        "simulate-boot only extends simulators (swtpm: or mssim: TCTIs), never a real TPM."));
  }
  auto raw = ReadFileLimited(f.eventlog, kMaxEventLogBytes);
  if (!raw.ok()) return Fail(raw.status());
  auto log = attest::ParseEventLog(*raw);
  if (!log.ok()) return Fail(log.status().WithPrefix(f.eventlog));
  auto tpm = attest::tpm::Tpm::Open(f.tpm);
  if (!tpm.ok()) return Fail(tpm.status());
  Status s = attest::tpm::ExtendEventLog(**tpm, *log);
  if (!s.ok()) return Fail(s);
  std::cout << "extended " << log->events.size() << " events of " << f.eventlog << "\n";
  return kExitOk;
}

int PubKey(const Flags& f) {
  auto key = EcPrivateKey::LoadFile(f.key);
  if (!key.ok()) return Fail(key.status());
  std::cout << key->public_key().ToPem();
  return kExitOk;
}

}  // namespace
}  // namespace dpuaudit::apps

static int Main(int argc, char** argv) {
  using namespace dpuaudit::apps;
  auto logger = spdlog::stderr_color_mt("agent");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  CLI::App app{"dpuaudit-agent: measures this BlueField and reports to a dpuaudit verifier"};
  app.set_version_flag("--version", std::string(Version()));
  app.require_subcommand(1);
  Flags f;

  auto add_key = [&](CLI::App* c) {
    c->add_option("--key", f.key, "Agent signing key (PKCS#8 PEM, 0600)")->capture_default_str();
  };
  auto add_net = [&](CLI::App* c) {
    c->add_option("--verifier", f.verifier, "Verifier base URL, e.g. https://verifier:8443")
        ->required();
    c->add_option("--node-id", f.node_id, "This node's id")->required();
    c->add_option("--cacert", f.cacert, "CA bundle to verify the verifier's TLS certificate");
    c->add_flag("--insecure-http", f.insecure_http,
                "Allow plain http:// to a non-loopback verifier (tokens and reports in clear)");
    add_key(c);
  };
  auto add_device = [&](CLI::App* c) {
    c->add_option("--device-root", f.device_root,
                  "Read a recorded device folder instead of this machine")
        ->check(CLI::ExistingDirectory);
  };

  auto* enroll = app.add_subcommand("enroll", "Create the key (first time) and enroll it");
  add_net(enroll);
  enroll->add_option("--token-file,--bootstrap-token-file", f.bootstrap_token_file,
                     "Enrollment token: this node's single-use token (dpuaudit tokens issue), "
                     "or the shared fleet token where the verifier enables one; without it "
                     "the verifier waits for operator approval");
  add_device(enroll);

  auto add_tpm = [&](CLI::App* c) {
    c->add_option("--tpm", f.tpm,
                  "TPM 2.0 TCTI (device:/dev/tpmrm0, swtpm:host=H,port=P): bind an AK at "
                  "enrollment and sign every report with a quote");
    c->add_option("--ek-type", f.ek_type, "EK to use: rsa | ecc")->capture_default_str();
    c->add_option("--eventlog", f.eventlog, "TCG boot event log (read via --device-root)")
        ->capture_default_str();
  };
  add_tpm(enroll);

  auto* attest = app.add_subcommand("attest", "Send one signed report and print the decision");
  add_net(attest);
  add_device(attest);
  add_tpm(attest);
  attest->add_option("--report-out", f.report_out, "Also write the signed report (JWS) here");
  attest->add_option("--ear-out", f.ear_out, "Also write the verifier's EAR (JWT) here");

  auto* run = app.add_subcommand("run", "Attest periodically until stopped");
  add_net(run);
  add_device(run);
  add_tpm(run);
  run->add_option("--interval", f.interval, "Time between reports: 30s, 5m, 1h")
      ->capture_default_str();
  run->add_option("--count", f.count, "Stop after N reports (0 = run until SIGTERM)");
  run->add_option("--report-out", f.report_out, "Write the latest signed report here");
  run->add_option("--ear-out", f.ear_out, "Write the latest EAR here");

  auto* probe = app.add_subcommand("probe", "Show local findings (no network); exit 1 unless all pass");
  add_device(probe);
  probe->add_flag("--json", f.json, "JSON output");
  probe->add_option("--policy", f.policy,
                    "Evaluate the findings against this policy file; exit 0 admit, 1 deny");

  auto* record = app.add_subcommand("record", "Record this device's tool outputs and files to a folder");
  add_device(record);
  record->add_option("--out", f.record_out, "Output folder (must not exist or be empty)")
      ->required();

  auto* simulate = app.add_subcommand(
      "simulate-boot", "Extend a boot event log into a software TPM (tests, demo)");
  simulate->add_option("--tpm", f.tpm, "swtpm TCTI")->required();
  simulate->add_option("--eventlog", f.eventlog, "TCG event log file")->required();

  auto* pubkey = app.add_subcommand("pubkey", "Print the agent's public key (PEM)");
  add_key(pubkey);

  CLI11_PARSE(app, argc, argv);
  if (enroll->parsed()) return Enroll(f);
  if (attest->parsed()) return Attest(f);
  if (run->parsed()) return Run(f);
  if (probe->parsed()) return Probe(f);
  if (record->parsed()) return Record(f);
  if (pubkey->parsed()) return PubKey(f);
  if (simulate->parsed()) return SimulateBoot(f);
  return 2;
}

// Last line of defence: an exception (e.g. from a JSON answer of an
// unexpected shape that a check above missed) is an error exit, not a crash.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpuaudit-agent: internal error: %s\n", e.what());
    return 2;
  }
}
