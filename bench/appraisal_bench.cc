// Appraisal throughput against the crypto bound measured in the same run
// (docs/architecture.md#performance): one report = one ES256 verify (agent
// signature) + one ES256 sign (EAR). Everything else the verifier does must
// stay small next to that. Run: build/bench/appraisal_bench
//
// Figures printed: time per op for each stage, and
// BM_FullAppraisal's items_per_second; compare with
// 1 / (BM_Es256Verify + BM_Es256Sign).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>

#include "bluefield/bfb.h"
#include "firmware/boot_chain.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "device/evidence.h"
#include "isolation/identity.h"
#include "isolation/device_facts.h"
#include "isolation/probes.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/ear.h"
#include "report/jws.h"
#include "verifier/refvals/appraisal.h"
#include "verifier/refvals/index.h"
#include "verifier/refvals/model.h"
#include "verifier/service.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit {
namespace {

const std::string kFixture =
    std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/devices/bf3-zero-trust";

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
  if (boot_chain != nullptr) *boot_chain = facts.boot_chain_json;
  return cap.evidence();
}

// Streaming BFB parse of an N MiB image: CRC-32 + SHA-256/384/512 per byte.
void BM_ParseBfb(benchmark::State& state) {
  const size_t mib = static_cast<size_t>(state.range(0));
  Bytes image(mib << 20);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 131);
  Bytes bfb = bluefield::BuildBfb({{3, image}});
  for (auto _ : state) benchmark::DoNotOptimize(bluefield::ParseBfbBytes(bfb));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bfb.size()));
}
BENCHMARK(BM_ParseBfb)->Arg(4)->Unit(benchmark::kMillisecond);

// The verifier's strict parse of a report's boot_chain section.
void BM_ParseBootChain(benchmark::State& state) {
  std::vector<Finding> f;
  nlohmann::json boot;
  FixtureEvidence(&f, &boot);
  for (auto _ : state) benchmark::DoNotOptimize(firmware::ParseBootChainJson(boot));
}
BENCHMARK(BM_ParseBootChain);

// Reference-value appraisal (5 refval.* findings) over the fixture releases.
void BM_AppraiseReferenceValues(benchmark::State& state) {
  auto manifest = ReadFileLimited(
      std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/refvals/bf3-releases.json", 4 << 20);
  auto releases = verifier::ParseRefManifest(ToString(*manifest), 1);
  if (!releases.ok()) std::abort();
  verifier::RefIndex index(*releases);
  std::vector<Finding> f;
  nlohmann::json boot_json;
  FixtureEvidence(&f, &boot_json);
  auto boot = firmware::ParseBootChainJson(boot_json);
  verifier::FirmwareFacts facts;
  facts.model = "BlueField-3";
  facts.psid = "MT_0000009001";
  facts.atf = "v2.2(release):4.9.1-21-gfc25b08d9";
  facts.uefi = "4.9.1-36-g0c3239837a";
  facts.bsp = "4.9.1.13442";
  facts.os_release = "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod";
  facts.nic_fw = "32.43.2402";
  std::vector<verifier::FirmwareFacts::Image> images;
  for (const auto& img : boot->partitions.partitions[1].layout->images) {
    images.push_back({img.name, img.sha384, img.offset});
  }
  facts.boot_stream = images;
  std::vector<verifier::FirmwareFacts::Artefact> artefacts;
  for (const auto& a : boot->os.artefacts) artefacts.push_back({a.role, a.path, a.sha384});
  facts.os_artefacts = artefacts;
  for (auto _ : state) {
    benchmark::DoNotOptimize(verifier::AppraiseReferenceValues(facts, index, 2));
  }
}
BENCHMARK(BM_AppraiseReferenceValues);

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
  c.evidence = FixtureEvidence(&c.findings, &c.boot_chain);
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
// re-derivation, boot chain, reference values, policy, EAR signing, result
// insert.
void BM_FullAppraisal(benchmark::State& state) {
  char tmpl[] = "/tmp/dpuaudit-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto store = verifier::SqliteStore::Open(dir + "/v.db");
  auto policy = verifier::LoadPolicyFile(std::string(DPUAUDIT_SOURCE_DIR) +
                                             "/policies/zero-trust.json",
                                         verifier::KnownRules());
  verifier::ServiceOptions options;
  options.bootstrap_token = "bench-bootstrap-token-0123456789";
  options.admin_token = "bench-admin-token-0123456789abc";
  // One node id stands in for a fleet: its reports are made before the timed
  // loop, so the per-node budgets (60 challenges and 60 reports a minute, 16
  // outstanding nonces, 64 MiB of bodies) are off here; each would otherwise
  // refuse the bench's own setup.
  options.challenges_per_minute = 0;
  options.reports_per_minute = 0;
  options.max_outstanding_nonces = 0;
  options.report_quota_bytes = 0;
  auto svc = verifier::VerifierService::New(std::move(*store), *policy,
                                            *EcPrivateKey::Generate(),
                                            SystemClock::Get(), options);
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
  c.issued_at = SystemClock::Get().NowUnixSeconds();
  c.evidence = FixtureEvidence(&c.findings, &c.boot_chain, &c.device);
  // The agent's side (challenge, collection, signing) is not the
  // verifier's cost: reports are made before the timed loop.
  constexpr int kReports = 1500;
  std::vector<std::string> reports;
  for (int i = 0; i < kReports; ++i) {
    auto ch = (*svc)->IssueChallenge(*report::ChallengeRequestBody(
        "bench", SystemClock::Get().NowUnixSeconds(), **signer));
    c.nonce = ch->nonce;
    reports.push_back(*report::SignReport(c, **signer, "bench"));
  }
  size_t next = 0;
  for (auto _ : state) {
    auto r = (*svc)->SubmitReport(reports[next++ % reports.size()]);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    if (r.ok() && r->result.dpuaudit.decision != report::Decision::kAdmit) {
      state.SkipWithError("bf3-zero-trust was not admitted");
    }
  }
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_FullAppraisal)->Unit(benchmark::kMicrosecond)->Iterations(1500);

}  // namespace
}  // namespace dpuaudit

BENCHMARK_MAIN();
