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
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>

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
#include "verifier/store/pg_store.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_nodes.h"

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
  if (boot_chain != nullptr) *boot_chain = facts.boot_chain_json();
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

// A verifier service with one enrolled node ("bench") and the bf3 reference
// values, and kReports signed reports for it, each on its own challenge.
// One node id stands in for a fleet: its reports are made before the timed
// loop, so the per-node budgets (60 challenges and 60 reports a minute, 16
// outstanding nonces, 64 MiB of bodies) are off here; each would otherwise
// refuse the bench's own setup.
struct Pipeline {
  static constexpr int kReports = 1500;
  std::string dir;
  std::unique_ptr<verifier::VerifierService> svc;
  std::optional<EcPrivateKey> agent_key;
  std::vector<std::string> reports;
  size_t full_bytes = 0;  // the JWS with every item in full

  // by_digest: a /2 full report is appraised first (the node's base, not
  // timed), and every timed report carries all its evidence by digest
  // against it (docs/architecture.md#report-format), resolved from the
  // warm evidence cache.
  explicit Pipeline(bool by_digest = false) {
    char tmpl[] = "/tmp/dpuaudit-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    auto store = verifier::SqliteStore::Open(dir + "/v.db");
    auto policy = verifier::LoadPolicyFile(std::string(DPUAUDIT_SOURCE_DIR) +
                                               "/policies/zero-trust.json",
                                           verifier::KnownRules());
    verifier::ServiceOptions options;
    options.bootstrap_token = "bench-bootstrap-token-0123456789";
    options.admin_token = "bench-admin-token-0123456789abc";
    options.challenges_per_minute = 0;
    options.reports_per_minute = 0;
    options.max_outstanding_nonces = 0;
    options.report_quota_bytes = 0;
    auto made = verifier::VerifierService::New(std::move(*store), *policy,
                                               *EcPrivateKey::Generate(),
                                               SystemClock::Get(), options);
    if (!made.ok()) std::abort();
    svc = std::move(made).value();
    agent_key = *EcPrivateKey::Generate();
    auto signer = Es256Signer::New(*agent_key);
    nlohmann::json enroll = {{"node_id", "bench"},
                             {"public_key", report::PublicJwk(agent_key->public_key(), "k")}};
    if (!svc->Enroll(enroll.dump(), options.bootstrap_token).ok()) std::abort();
    auto manifest = ReadFileLimited(
        std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/refvals/bf3-releases.json", 4 << 20);
    if (!svc->ImportRefvals(ToString(*manifest), options.admin_token).ok()) std::abort();
    report::ReportClaims c;
    c.node_id = "bench";
    c.issued_at = SystemClock::Get().NowUnixSeconds();
    c.evidence = FixtureEvidence(&c.findings, &c.boot_chain, &c.device);
    // The agent's side (challenge, collection, signing) is not the
    // verifier's cost: reports are made before the timed loop.
    auto nonce = [&] {
      return svc->IssueChallenge(*report::ChallengeRequestBody(
                                     "bench", SystemClock::Get().NowUnixSeconds(), **signer))
          ->nonce;
    };
    if (by_digest) {
      report::CarryByDigest(c, "", {});
      c.nonce = nonce();
      std::string base = *report::SignReport(c, **signer, "bench");
      if (!svc->SubmitReport(base).ok()) std::abort();
      full_bytes = base.size();
      std::set<std::string> held;
      for (const auto& e : c.evidence) held.insert(report::EvidenceItemDigest(e));
      report::CarryByDigest(c, Sha256Hex(AsBytes(base)), held);
      if (c.by_digest.size() != c.evidence.size()) std::abort();
    }
    for (int i = 0; i < kReports; ++i) {
      c.nonce = nonce();
      reports.push_back(*report::SignReport(c, **signer, "bench"));
    }
    if (!by_digest) full_bytes = reports[0].size();
  }
  ~Pipeline() {
    svc.reset();
    std::filesystem::remove_all(dir);
  }
};

// The whole pipeline of POST /v1/reports without HTTP: nonce consume
// (SQLite, WAL, synchronous=FULL), signature, strict parse, re-derivation,
// boot chain, reference values, policy, EAR signing, result insert.
void BM_FullAppraisal(benchmark::State& state) {
  Pipeline p;
  size_t next = 0;
  for (auto _ : state) {
    auto r = p.svc->SubmitReport(p.reports[next++ % p.reports.size()]);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    if (r.ok() && r->result.dpuaudit.decision != report::Decision::kAdmit) {
      state.SkipWithError("bf3-zero-trust was not admitted");
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["report_bytes"] = static_cast<double>(p.reports[0].size());
}
BENCHMARK(BM_FullAppraisal)->Unit(benchmark::kMicrosecond)->Iterations(Pipeline::kReports);

// The same pipeline for dpuaudit-report/2 reports of the same evidence, all
// of it by digest against the node's base (cache warm): what an unchanged
// DPU sends after its first report.
void BM_FullAppraisalByDigest(benchmark::State& state) {
  Pipeline p(/*by_digest=*/true);
  size_t next = 0;
  for (auto _ : state) {
    auto r = p.svc->SubmitReport(p.reports[next++ % p.reports.size()]);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    if (r.ok() && r->result.dpuaudit.decision != report::Decision::kAdmit) {
      state.SkipWithError("bf3-zero-trust was not admitted");
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["report_bytes"] = static_cast<double>(p.reports[0].size());
  state.counters["full_report_bytes"] = static_cast<double>(p.full_bytes);
}
BENCHMARK(BM_FullAppraisalByDigest)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(Pipeline::kReports);

// JWS verify of one real report: size and shape checks, base64url decode,
// the ES256 signature over the ~50 KB signing input, then the strict claims
// parse (report::VerifyReport, what the verifier runs first).
void BM_VerifyReport(benchmark::State& state) {
  Pipeline p;
  auto verifier = Es256Verifier::New(p.agent_key->public_key());
  for (auto _ : state) {
    auto v = report::VerifyReport(p.reports[0], **verifier);
    if (!v.ok()) state.SkipWithError(v.status().ToString().c_str());
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_VerifyReport)->Unit(benchmark::kMicrosecond);

void BM_VerifyReportByDigest(benchmark::State& state) {
  Pipeline p(/*by_digest=*/true);
  auto verifier = Es256Verifier::New(p.agent_key->public_key());
  for (auto _ : state) {
    auto v = report::VerifyReport(p.reports[0], **verifier);
    if (!v.ok()) state.SkipWithError(v.status().ToString().c_str());
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_VerifyReportByDigest)->Unit(benchmark::kMicrosecond);

// Decoding a node's stored public key (PEM), what the verifier does once
// per node on a key-cache miss (after a restart, every node's first report).
void BM_NodeKeyFromPem(benchmark::State& state) {
  auto key = EcPrivateKey::Generate();
  const std::string pem = key->public_key().ToPem();
  for (auto _ : state) {
    auto k = EcPublicKey::FromPem(pem);
    if (!k.ok()) state.SkipWithError(k.status().ToString().c_str());
    benchmark::DoNotOptimize(k);
  }
}
BENCHMARK(BM_NodeKeyFromPem)->Unit(benchmark::kMicrosecond);

// The same key through OpenSSL's general PEM reader (a comment line first
// makes it non-canonical): what every miss cost before the fast path.
void BM_NodeKeyFromPemGeneral(benchmark::State& state) {
  auto key = EcPrivateKey::Generate();
  const std::string pem = "node key\n" + key->public_key().ToPem();
  for (auto _ : state) {
    auto k = EcPublicKey::FromPem(pem);
    if (!k.ok()) state.SkipWithError(k.status().ToString().c_str());
    benchmark::DoNotOptimize(k);
  }
}
BENCHMARK(BM_NodeKeyFromPemGeneral)->Unit(benchmark::kMicrosecond);

// Signing the EAR of a real appraisal (serialise, self-check, ES256).
void BM_SignEar(benchmark::State& state) {
  Pipeline p;
  auto outcome = p.svc->SubmitReport(p.reports[0]);
  if (!outcome.ok()) std::abort();
  auto key = EcPrivateKey::Generate();
  auto signer = Es256Signer::New(*key);
  for (auto _ : state) {
    auto jwt = report::SignEar(outcome->result, **signer, "bench-kid");
    if (!jwt.ok()) state.SkipWithError(jwt.status().ToString().c_str());
    benchmark::DoNotOptimize(jwt);
  }
  state.counters["ear_bytes"] = static_cast<double>(outcome->ear_jwt.size());
}
BENCHMARK(BM_SignEar)->Unit(benchmark::kMicrosecond);

// One durable store append on SQLite (WAL, synchronous=FULL): the nonce
// issued, then spent in the transaction that stores a real ~50 KB report
// and its result, as one attestation does. Real time: the fsync is the cost.
void StoreAppend(benchmark::State& state, const std::string& db) {
  Pipeline p;
  auto outcome = p.svc->SubmitReport(p.reports[0]);
  if (!outcome.ok()) std::abort();
  auto store = verifier::OpenStore(db.empty() ? p.dir + "/append.db" : db);
  if (!store.ok()) {
    state.SkipWithError(store.status().ToString().c_str());
    return;
  }
  verifier::NodeRecord n = testing::StoreTestNode("bench");
  if (!(*store)->CreateNode(n).ok() || !(*store)->ApproveNode("bench", 901).ok()) std::abort();
  verifier::ReportRecord rec;
  rec.node_id = "bench";
  rec.jws = p.reports[0];
  rec.sha256 = Sha256Hex(AsBytes(rec.jws));
  rec.accepted = true;
  verifier::ResultRecord result;
  result.node_id = "bench";
  result.decision = "admit";
  result.ear_jwt = outcome->ear_jwt;
  result.reasons_json = "[]";
  result.report_jws_sha256 = rec.sha256;
  int64_t i = 0;
  const int64_t now = 1000;
  for (auto _ : state) {
    std::string nonce = "bench-nonce-" + std::to_string(i++);
    rec.received_at = now;
    result.created_at = now;
    result.expires_at = now + 300;
    Status st = (*store)->InsertNonce(nonce, "bench", now, now + 60);
    auto id = st.ok() ? (*store)->InsertResultSpendingNonce(result, rec, nonce, now)
                      : StatusOr<int64_t>(st);
    if (!id.ok()) state.SkipWithError(id.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
}
void BM_StoreAppendSqlite(benchmark::State& state) { StoreAppend(state, ""); }
BENCHMARK(BM_StoreAppendSqlite)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(1000);

// The same append on PostgreSQL (synchronous_commit on, the advisory write
// lock, a real server on loopback): DPUAUDIT_BENCH_PG_URL names an empty
// database (bench/run.sh starts scripts/pg-test-server.sh); skipped without.
void BM_StoreAppendPg(benchmark::State& state) {
  const char* url = std::getenv("DPUAUDIT_BENCH_PG_URL");
  if (url == nullptr || *url == '\0') {
    state.SkipWithError("DPUAUDIT_BENCH_PG_URL is not set");
    return;
  }
  StoreAppend(state, url);
}
BENCHMARK(BM_StoreAppendPg)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(1000);

// The same append from 8 concurrent callers, as request threads make it:
// group commit (verifier/store/group_commit.h) shares one transaction and
// one fsync among the callers that queue while a batch commits. Counters:
// ops per batch, and the longest a caller queued before its batch began.
struct SharedAppend {
  std::unique_ptr<Pipeline> p;
  std::unique_ptr<verifier::SqlStore> store;
  verifier::ReportRecord rec;
  verifier::ResultRecord result;
};
SharedAppend* g_shared_append = nullptr;

// `db` empty: a new SQLite file; else a PostgreSQL URL (an empty database).
void StoreAppendConcurrent(benchmark::State& state, const std::string& db) {
  if (state.thread_index() == 0) {
    auto* s = new SharedAppend();
    s->p = std::make_unique<Pipeline>();
    auto outcome = s->p->svc->SubmitReport(s->p->reports[0]);
    if (!outcome.ok()) std::abort();
    auto store = verifier::OpenStore(db.empty() ? s->p->dir + "/append-concurrent.db" : db);
    if (!store.ok()) std::abort();
    s->store = std::move(store).value();
    // A fresh node per run: the PostgreSQL database outlives one run.
    const std::string node = "bench-c" + std::to_string(::getpid());
    verifier::NodeRecord n = testing::StoreTestNode(node);
    if (!s->store->CreateNode(n).ok() || !s->store->ApproveNode(node, 901).ok()) {
      std::abort();
    }
    s->rec.node_id = node;
    s->rec.jws = s->p->reports[0];
    s->rec.sha256 = Sha256Hex(AsBytes(s->rec.jws));
    s->rec.accepted = true;
    s->rec.received_at = 1000;
    s->result.node_id = node;
    s->result.decision = "admit";
    s->result.ear_jwt = outcome->ear_jwt;
    s->result.reasons_json = "[]";
    s->result.report_jws_sha256 = s->rec.sha256;
    s->result.created_at = 1000;
    s->result.expires_at = 1300;
    g_shared_append = s;
  }
  int64_t i = 0;
  const int64_t now = 1000;
  for (auto _ : state) {
    SharedAppend& s = *g_shared_append;
    std::string nonce = "bench-nonce-" + std::to_string(::getpid()) + "-" +
                        std::to_string(state.thread_index()) + "-" + std::to_string(i++);
    Status st = s.store->InsertNonce(nonce, s.rec.node_id, now, now + 60);
    auto id = st.ok() ? s.store->InsertResultSpendingNonce(s.result, s.rec, nonce, now)
                      : StatusOr<int64_t>(st);
    if (!id.ok()) state.SkipWithError(id.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    verifier::sql::GroupCommitter::Stats st = g_shared_append->store->GroupCommitStats();
    state.counters["ops_per_batch"] =
        st.batches ? static_cast<double>(st.ops) / static_cast<double>(st.batches) : 0;
    state.counters["max_wait_us"] = static_cast<double>(st.wait_us_max);
    state.counters["mean_wait_us"] =
        st.ops ? static_cast<double>(st.wait_us_total) / static_cast<double>(st.ops) : 0;
    delete g_shared_append;
    g_shared_append = nullptr;
  }
}

void BM_StoreAppendSqliteConcurrent(benchmark::State& state) {
  StoreAppendConcurrent(state, "");
}
BENCHMARK(BM_StoreAppendSqliteConcurrent)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Threads(8)
    ->Iterations(250);

// The same on PostgreSQL (DPUAUDIT_BENCH_PG_URL; skipped without): 8 callers
// over the store's pool (default 4 connections), group commit on top.
void BM_StoreAppendPgConcurrent(benchmark::State& state) {
  const char* url = std::getenv("DPUAUDIT_BENCH_PG_URL");
  if (url == nullptr || *url == '\0') {
    state.SkipWithError("DPUAUDIT_BENCH_PG_URL is not set");
    return;
  }
  StoreAppendConcurrent(state, url);
}
BENCHMARK(BM_StoreAppendPgConcurrent)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Threads(8)
    ->Iterations(250);

}  // namespace
}  // namespace dpuaudit

BENCHMARK_MAIN();
