// Audit bundle verification (issue 16, docs/audit.md): one bundle of 1,000
// reports of the recorded bf3-zero-trust device (~52 KB each), made and
// exported by a real VerifierService over a real SQLite store, then
// verified offline and re-appraised by verifier::VerifyBundle.
// Run: build/bench/bundle_bench
//
// Figures: BM_BundleVerify's reports_per_second and time per bundle, the
// bundle's bytes per report, and the crypto bound: per report two ES256
// verifies (the report and its EAR) — compare reports_per_second with
// 1 / (2 x BM_Es256Verify).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "device/evidence.h"
#include "device/recorded.h"
#include "isolation/device_facts.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "verifier/bundle.h"
#include "verifier/service.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit {
namespace {

const std::string kFixture =
    std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/devices/bf3-zero-trust";
constexpr int kReports = 1000;

// What the agent sends for bf3-zero-trust: probes, boot chain, evidence.
std::vector<device::Evidence> FixtureEvidence(std::vector<Finding>* findings,
                                              nlohmann::json* boot_chain = nullptr,
                                              report::DeviceInfo* device = nullptr) {
  auto src = device::NewRecordedDeviceSource(kFixture);
  if (!src.ok()) std::abort();
  device::CapturingDeviceSource cap(**src);
  // As the agent collects it (isolation::CollectDeviceFacts, the one
  // collection agent and verifier share).
  isolation::DeviceFacts facts = isolation::CollectDeviceFacts(cap);
  if (device != nullptr) {
    const isolation::DeviceIdentity& id = facts.device;
    *device = report::DeviceInfo{id.model, id.serial,   id.part_number,
                                 id.psid,  id.base_mac, id.fw_version};
  }
  *findings = std::move(facts.findings);
  if (boot_chain != nullptr) *boot_chain = facts.boot_chain_json();
  return cap.evidence();
}

struct Fixture {
  std::string bundle;  // the exported text
  report::TrustedKeys keys;
};

// 1,000 attestations through SubmitReport, then ExportBundle.
const Fixture& TheBundle() {
  static Fixture* f = [] {
    auto* out = new Fixture;
    char tmpl[] = "/tmp/dpuaudit-bundle-bench-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    auto store = verifier::SqliteStore::Open(dir + "/v.db");
    auto policy = verifier::LoadPolicyFile(
        std::string(DPUAUDIT_SOURCE_DIR) + "/policies/zero-trust.json", verifier::KnownRules());
    verifier::ServiceOptions options;
    options.bootstrap_token = "bench-bootstrap-token-0123456789";
    options.admin_token = "bench-admin-token-0123456789abc";
    options.challenges_per_minute = 1'000'000;
    options.reports_per_minute = 1'000'000;
    options.report_quota_bytes = 0;  // keep every body
    EcPrivateKey verifier_key = *EcPrivateKey::Generate();
    out->keys = *report::TrustedKeys::FromPem(verifier_key.public_key().ToPem(), "bench", 0);
    auto svc = verifier::VerifierService::New(std::move(*store), *policy, std::move(verifier_key),
                                              SystemClock::Get(), options);
    if (!svc.ok()) std::abort();
    auto agent_key = EcPrivateKey::Generate();
    auto signer = Es256Signer::New(*agent_key);
    nlohmann::json enroll = {{"node_id", "bench"},
                             {"public_key", report::PublicJwk(agent_key->public_key(), "k")}};
    if (!(*svc)->Enroll(enroll.dump(), options.bootstrap_token).ok()) std::abort();
    auto manifest = ReadFileLimited(
        std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/refvals/bf3-releases.json", 4 << 20);
    if (!(*svc)->ImportRefvals(ToString(*manifest), options.admin_token).ok()) std::abort();
    report::ReportClaims c;
    c.node_id = "bench";
    c.evidence = FixtureEvidence(&c.findings, &c.boot_chain, &c.device);
    for (int i = 0; i < kReports; ++i) {
      c.issued_at = SystemClock::Get().NowUnixSeconds();
      auto ch = (*svc)->IssueChallenge(*report::ChallengeRequestBody(
          "bench", SystemClock::Get().NowUnixSeconds(), **signer));
      if (!ch.ok()) std::abort();
      c.nonce = ch->nonce;
      auto r = (*svc)->SubmitReport(*report::SignReport(c, **signer, "bench"));
      if (!r.ok()) {
        fprintf(stderr, "%s\n", r.status().ToString().c_str());
        std::abort();
      }
    }
    auto text = (*svc)->ExportBundle(options.admin_token, "bench", 0, INT64_MAX);
    if (!text.ok()) std::abort();
    out->bundle = std::move(*text);
    std::filesystem::remove_all(dir);
    return out;
  }();
  return *f;
}

void BM_BundleVerify(benchmark::State& state) {
  const Fixture& f = TheBundle();
  for (auto _ : state) {
    auto b = verifier::ParseBundle(f.bundle);
    if (!b.ok()) state.SkipWithError(b.status().ToString().c_str());
    verifier::BundleVerdict v = verifier::VerifyBundle(*b, f.keys);
    if (!v.verified || v.reappraised_full != kReports) {
      state.SkipWithError(v.failures.empty() ? "not every report re-appraised"
                                             : v.failures.front().why.c_str());
    }
  }
  state.counters["reports_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kReports,
                         benchmark::Counter::kIsRate);
  state.counters["bundle_bytes_per_report"] =
      static_cast<double>(f.bundle.size()) / kReports;
}
BENCHMARK(BM_BundleVerify)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

void BM_BundleParse(benchmark::State& state) {
  const Fixture& f = TheBundle();
  for (auto _ : state) {
    auto b = verifier::ParseBundle(f.bundle);
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_BundleParse)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Es256Verify(benchmark::State& state) {
  auto key = EcPrivateKey::Generate();
  auto signer = Es256Signer::New(*key);
  auto verifier = Es256Verifier::New(key->public_key());
  Bytes msg(256, 7);
  Bytes sig = *(*signer)->Sign(msg);
  for (auto _ : state) {
    if (!(*verifier)->Verify(sig, msg).ok()) state.SkipWithError("verify failed");
  }
}
BENCHMARK(BM_Es256Verify)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dpuaudit

BENCHMARK_MAIN();
