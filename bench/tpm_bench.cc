// TPM evidence costs on the verifier (issue 5): event log parse and replay,
// quote verification, replay against the quote, and the whole TPM
// appraisal (steps 2-8). The quote is a software one (tests/attest/
// tpm_test_util.h): the verifier's work does not depend on who signed it.
// Run: build/bench/tpm_bench
//
// Compare with the peer of docs/architecture.md#performance: Keylime 7.14 took
// 43-47 ms per appraisal of a 19 KB UEFI log (tpm2_eventlog subprocess + YAML).
#include <benchmark/benchmark.h>

#include <filesystem>

#include "attest/eventlog.h"
#include "attest/quote.h"
#include "attest/replay.h"
#include "attest/tpm_test_util.h"
#include "common/files.h"
#include "verifier/refvals/index.h"
#include "verifier/refvals/model.h"
#include "verifier/tpm_appraisal.h"

namespace dpuaudit {
namespace {

const std::string kLog =
    std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/eventlogs/bf3-ftpm-boot.bin";

Bytes Read(const std::string& path) {
  auto b = ReadFileLimited(path, 16 << 20);
  if (!b.ok()) std::abort();
  return *b;
}

// The largest real log of ../shared/fixtures/eventlogs, if present.
std::string LargestSharedLog() {
  std::string dir = std::string(DPUAUDIT_SOURCE_DIR) + "/../shared/fixtures/eventlogs";
  std::string best;
  uintmax_t size = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".bin") continue;
    if (e.file_size() > size && e.path().filename().string() != "t2t-specid-vendordata.bin") {
      size = e.file_size();
      best = e.path().string();
    }
  }
  return best;
}

void BM_ParseEventLog(benchmark::State& state) {
  Bytes raw = Read(kLog);
  for (auto _ : state) benchmark::DoNotOptimize(attest::ParseEventLog(raw));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * raw.size()));
}
BENCHMARK(BM_ParseEventLog);

void BM_ParseAndReplayLargestSharedLog(benchmark::State& state) {
  std::string path = LargestSharedLog();
  if (path.empty()) {
    state.SkipWithError("../shared/fixtures/eventlogs is absent");
    return;
  }
  Bytes raw = Read(path);
  state.SetLabel(std::filesystem::path(path).filename().string() + " " +
                 std::to_string(raw.size()) + " B");
  for (auto _ : state) {
    auto log = attest::ParseEventLog(raw);
    benchmark::DoNotOptimize(attest::ReplayEventLog(*log));
  }
}
BENCHMARK(BM_ParseAndReplayLargestSharedLog);

struct QuoteFixture {
  attest::EventLog log;
  attest::PcrBanks pcrs;
  std::map<uint16_t, std::set<uint32_t>> select;
  Bytes qualifying;
  attest::testing::SyntheticQuote quote;
};

QuoteFixture MakeQuote() {
  QuoteFixture f;
  f.log = *attest::ParseEventLog(Read(kLog));
  attest::ReplayResult replay = attest::ReplayEventLog(f.log);
  for (uint32_t i = 0; i < 16; ++i) {
    auto it = replay.pcrs[attest::kTpmAlgSha256].find(i);
    f.pcrs[attest::kTpmAlgSha256][i] =
        it != replay.pcrs[attest::kTpmAlgSha256].end() ? it->second : Bytes(32, 0);
    f.select[attest::kTpmAlgSha256].insert(i);
  }
  f.qualifying = Bytes(32, 0x42);
  f.quote = attest::testing::SyntheticQuote::Build(f.pcrs, f.select, f.qualifying);
  return f;
}

void BM_QuoteVerify(benchmark::State& state) {
  QuoteFixture f = MakeQuote();
  auto ak = attest::TpmPublic::Decode(f.quote.ak_public);
  attest::PcrSelection required = attest::PcrSelection::DefaultSha256();
  for (auto _ : state) {
    attest::TpmStep failed{};
    auto v = attest::QuoteVerifier::Verify(*ak, {f.quote.attest, f.quote.signature, &f.pcrs},
                                           f.qualifying, required, &failed);
    if (!v.ok()) state.SkipWithError(v.status().message().c_str());
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_QuoteVerify);

// TPM2B_PUBLIC decode of an RSA key (an EK at enrollment, an RSA AK per
// report), including the deterministic SP 800-56B modulus checks; compare
// with BM_DecodeEccPublic (point-on-curve check only).
void BM_DecodeRsaPublic(benchmark::State& state) {
  attest::testing::TestKey key = attest::testing::TestKey::Rsa(static_cast<unsigned>(state.range(0)));
  Bytes blob = attest::testing::MarshalTpm2bPublic(
      attest::testing::MakeTpmtPublic(key, attest::testing::EkTemplate()));
  for (auto _ : state) {
    auto p = attest::TpmPublic::Decode(blob);
    if (!p.ok()) state.SkipWithError(p.status().message().c_str());
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_DecodeRsaPublic)->Arg(2048)->Arg(4096);

void BM_DecodeEccPublic(benchmark::State& state) {
  attest::testing::TestKey key = attest::testing::TestKey::EccP256();
  Bytes blob = attest::testing::MarshalTpm2bPublic(
      attest::testing::MakeTpmtPublic(key, attest::testing::AkTemplate(key)));
  for (auto _ : state) {
    auto p = attest::TpmPublic::Decode(blob);
    if (!p.ok()) state.SkipWithError(p.status().message().c_str());
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_DecodeEccPublic);

void BM_ReplayAgainstQuoteAndBootState(benchmark::State& state) {
  QuoteFixture f = MakeQuote();
  auto ak = attest::TpmPublic::Decode(f.quote.ak_public);
  attest::TpmStep failed{};
  auto v = attest::QuoteVerifier::Verify(*ak, {f.quote.attest, f.quote.signature, &f.pcrs},
                                         f.qualifying, attest::PcrSelection::DefaultSha256(),
                                         &failed);
  for (auto _ : state) {
    auto verified = attest::ReplayAgainstQuote(f.log, v->pcrs);
    benchmark::DoNotOptimize(attest::DeriveBootState(*verified));
  }
}
BENCHMARK(BM_ReplayAgainstQuoteAndBootState);

// Steps 1-8 as the verifier runs them per report (no store access).
void BM_TpmAppraisalAllSteps(benchmark::State& state) {
  QuoteFixture f = MakeQuote();
  verifier::TpmBinding b;
  b.node_id = "n";
  b.state = verifier::TpmBindingState::kActive;
  b.ak_public_b64 = Base64Encode(f.quote.ak_public);
  b.ak_name_hex = HexEncode(f.quote.ak_name);
  b.ek_cert_pem = "present";
  b.ek_cert_issuer = "CN=bench";
  attest::TpmClaims claims;
  claims.quote_attest = f.quote.attest;
  claims.quote_sig = f.quote.signature;
  claims.ak_name = f.quote.ak_name;
  claims.pcrs = f.pcrs;
  claims.eventlog = Read(kLog);
  auto releases = verifier::ParseRefManifest(
      ToString(Read(std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/refvals/bf3-ftpm.json")),
      1796000000);
  verifier::RefIndex refs(*releases);
  verifier::TpmPolicy policy;
  for (auto _ : state) {
    verifier::TpmAppraisalInput in;
    in.binding = &b;
    in.claims = &claims;
    in.expected_qualifying_data = f.qualifying;
    in.policy = &policy;
    in.refs = &refs;
    in.model = "BlueField-3";
    in.now = 1796000000;
    verifier::TpmAppraisal a = verifier::AppraiseTpm(in);
    if (a.failure) state.SkipWithError(a.failure->reason.c_str());
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_TpmAppraisalAllSteps);

}  // namespace
}  // namespace dpuaudit

BENCHMARK_MAIN();
