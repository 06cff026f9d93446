// `attest`, `run` and `simulate-boot`: signed reports bound to a verifier
// nonce (with a TPM quote under --tpm), and the software-TPM boot replay.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "apps/agent/agent_util.h"
#include "apps/agent/commands.h"
#include "apps/agent/evidence_base.h"
#include "apps/common/agent_collect.h"
#include "apps/shared/stop_signals.h"
#include "attest/eventlog.h"
#include "attest/quote.h"
#include "attest/tpm/simulate.h"
#include "attest/tpm_claims.h"
#include "attest/tpm_structs.h"
#include "common/bytes.h"
#include "common/clock.h"
#include "common/files.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "report/node_id.h"

namespace dpuaudit::apps {
namespace {

std::atomic<bool> g_stop{false};
void HandleSignal(int) { g_stop = true; }

struct AttestOutcome {
  std::string decision;
  nlohmann::json response;
};

// Adds the "tpm" member: a quote over the policy's PCR selection whose
// qualifying data binds the nonce and every other claim
// (docs/architecture.md#report-format),
// with the event log as the device source shows it.
Status AddTpmQuote(const AgentFlags& f, attest::tpm::Tpm& tpm, const nlohmann::json& challenge,
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

StatusOr<AttestOutcome> AttestOnce(const AgentFlags& f, const HttpClient& client,
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
  // Report building (docs/architecture.md#report-format): /2 carries by
  // digest what equals the last accepted full report, when every item
  // does; any change sends everything in full (the next base).
  const std::string base_path = EvidenceBasePath(f.key);
  if (f.report_format == "2") {
    std::optional<EvidenceBase> base = LoadEvidenceBase(base_path);
    if (base && base->verifier == f.verifier && base->node_id == f.node_id) {
      report::CarryByDigest(claims, base->report_sha256, base->item_digests);
      if (claims.by_digest.size() != claims.evidence.size()) {
        report::CarryByDigest(claims, "", {});
      }
    } else {
      report::CarryByDigest(claims, "", {});
    }
  }
  auto sign = [&]() -> StatusOr<std::string> {
    if (tpm != nullptr) DPA_RETURN_IF_ERROR(AddTpmQuote(f, *tpm, challenge, source, claims));
    return report::SignReport(claims, signer, f.node_id);
  };
  DPA_ASSIGN_OR_RETURN(std::string jws, sign());
  StatusOr<nlohmann::json> posted = PostJson(client, "/v1/reports", "application/jose", jws);
  if (!posted.ok() && !claims.by_digest.empty() &&
      posted.status().code() == StatusCode::kFailedPrecondition &&
      posted.status().message().find("evidence_unknown") != std::string::npos) {
    // The verifier no longer holds the base (pruned, another database, a
    // new key): once more with everything in full, same nonce (unspent).
    spdlog::info("verifier does not hold the evidence base; resending in full");
    report::CarryByDigest(claims, "", {});
    DPA_ASSIGN_OR_RETURN(jws, sign());
    posted = PostJson(client, "/v1/reports", "application/jose", jws);
  }
  if (!f.report_out.empty()) {
    DPA_RETURN_IF_ERROR(WriteFileAtomic(f.report_out, AsBytes(jws), 0644));
  }
  if (!posted.ok()) return posted.status();
  nlohmann::json result = std::move(posted).value();
  std::string decision = JsonStr(result, "decision", "");
  if (decision != "admit" && decision != "deny") {
    return InvalidArgumentError("verifier answered without a decision.");
  }
  if (f.report_format == "2" && claims.by_digest.empty()) {
    // Accepted in full: the next reports may name it. Not fatal (the next
    // report is then full again).
    if (Status s = SaveEvidenceBase(base_path, EvidenceBaseOf(claims, jws, f.verifier));
        !s.ok()) {
      spdlog::warn("cannot keep the evidence base: {}", s.message());
    }
  }
  if (!f.ear_out.empty() && result.contains("ear") && result["ear"].is_string()) {
    DPA_RETURN_IF_ERROR(
        WriteFileAtomic(f.ear_out, AsBytes(result["ear"].get<std::string>()), 0644));
  }
  return AttestOutcome{decision, result};
}

void PrintOutcome(const std::string& node, const AttestOutcome& o, bool json) {
  if (json) {
    // One line per report (docs/schemas/agent-attest.schema.json): the
    // decision and the rules that did not pass, in the CLI's naming scheme.
    nlohmann::json failing = nlohmann::json::array();
    if (o.response.contains("reasons") && o.response["reasons"].is_array()) {
      for (const auto& r : o.response["reasons"]) {
        if (r.is_object() && JsonStr(r, "verdict", "") != "pass") failing.push_back(r);
      }
    }
    nlohmann::json line = {{"node_id", node},
                           {"decision", o.decision},
                           {"at", SystemClock::Get().NowUnixSeconds()},
                           {"failing", std::move(failing)}};
    std::cout << line.dump() << "\n";
    return;
  }
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

// What every attestation round needs besides the TPM, opened in this order
// (the first that cannot be opened is the error).
struct RoundLinks {
  std::unique_ptr<Signer> signer;
  std::unique_ptr<HttpClient> client;
  std::unique_ptr<device::DeviceSource> source;
};

StatusOr<RoundLinks> OpenRoundLinks(const AgentFlags& f) {
  RoundLinks l;
  DPA_ASSIGN_OR_RETURN(l.signer, LoadSigner(f));
  DPA_ASSIGN_OR_RETURN(l.client, Client(f));
  DPA_ASSIGN_OR_RETURN(l.source, OpenSource(f));
  return l;
}

}  // namespace

int Attest(const AgentFlags& f) {
  if (Status s = report::ValidateNodeId(f.node_id, "--node-id"); !s.ok()) return Fail(s);
  auto tpm = MaybeOpenTpm(f);
  if (!tpm.ok()) return Fail(tpm.status());
  auto links = OpenRoundLinks(f);
  if (!links.ok()) return Fail(links.status());
  auto o = AttestOnce(f, *links->client, *links->signer, *links->source, tpm->get());
  if (!o.ok()) return Fail(o.status());
  PrintOutcome(f.node_id, *o, f.json);
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


// The wait before the next attempt of `run`: after a success the interval
// with ±10 % uniform jitter (so a fleet restarted together spreads out);
// after the n-th failure in a row 2^n s, capped at the interval; after a
// refusal that names the node (unknown, revoked, not approved) the interval.
int64_t RunWaitMillis(int64_t interval_s, int failures, bool refused, std::mt19937_64& rng) {
  const int64_t interval_ms = interval_s * 1000;
  if (failures > 0 && !refused) {
    return std::min<int64_t>(interval_ms, (int64_t{1} << std::min(failures, 30)) * 1000);
  }
  std::uniform_int_distribution<int64_t> jitter(-interval_ms / 10, interval_ms / 10);
  return std::max<int64_t>(100, interval_ms + jitter(rng));
}

// A verifier answer that will not change by retrying sooner: the node is
// unknown, revoked or its key is not accepted (HTTP 401/403/404).
bool IsRefusal(const Status& s) {
  return s.code() == StatusCode::kUnauthenticated ||
         s.code() == StatusCode::kPermissionDenied || s.code() == StatusCode::kNotFound;
}

int Run(const AgentFlags& f) {
  if (Status s = report::ValidateNodeId(f.node_id, "--node-id"); !s.ok()) return Fail(s);
  auto interval = ParseInterval(f.interval);
  if (!interval.ok()) return Fail(interval.status());
  auto links = OpenRoundLinks(f);
  if (!links.ok()) return Fail(links.status());
  auto tpm = MaybeOpenTpm(f);
  if (!tpm.ok()) return Fail(tpm.status());
  // SA_RESTART: a signal during an attempt does not cut its I/O; the
  // attempt finishes and the loop then stops.
  InstallStopSignals(HandleSignal);
  std::mt19937_64 rng(std::random_device{}());
  spdlog::info("attesting {} every {} s (±10 % jitter) to {}", f.node_id, *interval, f.verifier);
  int failures = 0;
  for (int i = 0; !g_stop && (f.count == 0 || i < f.count); ++i) {
    auto o = AttestOnce(f, *links->client, *links->signer, *links->source, tpm->get());
    bool refused = false;
    if (o.ok()) {
      failures = 0;
    } else {
      ++failures;
      refused = IsRefusal(o.status());
    }
    const int64_t wait_ms = RunWaitMillis(*interval, failures, refused, rng);
    const bool last = f.count != 0 && i + 1 >= f.count;
    const std::string next =
        g_stop || last ? "stopping" : "next in " + std::to_string(wait_ms / 1000) + " s";
    // One log line per attempt.
    if (o.ok()) {
      int failing = 0;
      if (o->response.contains("reasons") && o->response["reasons"].is_array()) {
        for (const auto& r : o->response["reasons"]) {
          if (r.is_object() && JsonStr(r, "verdict", "") != "pass") ++failing;
        }
      }
      spdlog::info("attempt {}: {} decision {} ({} rules not passing); {}", i + 1, f.node_id,
                   o->decision, failing, next);
      PrintOutcome(f.node_id, *o, f.json);
      std::cout << std::flush;  // a daemon's stdout is a file or a pipe
    } else if (refused) {
      spdlog::error("attempt {}: the verifier refuses node {} ({}): re-enroll or re-approve it; "
                    "retrying at the interval; {}",
                    i + 1, f.node_id, o.status().message(), next);
    } else {
      spdlog::warn("attempt {} failed ({} in a row): {}; {}", i + 1, failures,
                   o.status().message(), next);
    }
    if (last) break;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (!g_stop && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  // Stopped by a signal: a clean exit. Stopped by --count: the last attempt.
  if (g_stop) {
    spdlog::info("stopped by signal");
    return kExitOk;
  }
  return failures == 0 ? kExitOk : kExitError;
}

// `simulate-boot`: plays a boot event log into a software TPM's PCRs, as
// firmware would (tests and the demo). Refuses hardware TPMs.
int SimulateBoot(const AgentFlags& f) {
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
  if (f.json) {
    std::cout << nlohmann::json{{"eventlog", f.eventlog},
                                {"tcti", f.tpm},
                                {"events_extended", log->events.size()}}
                     .dump()
              << "\n";
  } else {
    std::cout << "extended " << log->events.size() << " events of " << f.eventlog << "\n";
  }
  return kExitOk;
}

}  // namespace dpuaudit::apps
