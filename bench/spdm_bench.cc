// The BMC path's costs on the verifier (issue 14): SPDM signed-measurement
// verification against its crypto bound (one ECDSA P-384 verify), DICE
// chain validation, Redfish body parsing, and one whole pull of a BMC's
// evidence over HTTPS from dpuaudit-bmc-sim on loopback (posture, inventory
// and both SPDM targets through their Tasks).
// Run: build/bench/spdm_bench
#include <benchmark/benchmark.h>
#include <fcntl.h>

#include <optional>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bmc/collect.h"
#include "bmc/redfish_client.h"
#include "redfish/resources.h"
#include "spdm/dice.h"
#include "spdm/measurements.h"
#include "verifier/bmc_state.h"
#include "testing/spdm_responder.h"
#include "testing/x509_builder.h"

namespace dpuaudit {
namespace {

namespace t = testing;

struct Signed {
  EvpPkeyPtr key;
  X509Ptr cert;
  t::SpdmExchange exchange;
  Bytes transcript;
};

// A BlueField-3 IRoT-like response: 11 blocks, SHA-512 digests, P-384.
const Signed& Irot() {
  static const Signed* s = [] {
    auto* out = new Signed;
    out->key = t::MakeEcKey("P-384");
    out->cert = t::SelfSigned(out->key.get(), "leaf");
    out->exchange.blocks.push_back({1, 1, 0x83, Bytes{0, 0, 1, 0}});
    for (uint8_t i = 2; i <= 10; ++i) out->exchange.blocks.push_back({i, 1, 0x01, Bytes(64, i)});
    out->exchange.blocks.push_back({11, 1, 0x87, Bytes{3, 0, 0, 0}});
    out->transcript = t::SpdmTranscript(out->exchange, out->key.get(), EVP_sha384(), 48);
    return out;
  }();
  return *s;
}

void BM_SpdmVerifySignedMeasurements(benchmark::State& state) {
  const Signed& s = Irot();
  auto key = spdm::SpdmPublicKey::FromCertificate(s.cert.get());
  for (auto _ : state) {
    auto v = spdm::VerifySignedMeasurements(s.transcript, *key,
                                            spdm::SigningAlgorithm::kEcdsaP384,
                                            spdm::HashingAlgorithm::kSha384, s.exchange.nonce);
    if (!v.ok()) state.SkipWithError("verify failed");
    benchmark::DoNotOptimize(v);
  }
  state.counters["transcript_bytes"] = static_cast<double>(s.transcript.size());
}
BENCHMARK(BM_SpdmVerifySignedMeasurements)->Unit(benchmark::kMicrosecond);

// The crypto bound: one ECDSA P-384 verify over the same bytes, nothing else.
void BM_SpdmCryptoBoundP384Verify(benchmark::State& state) {
  const Signed& s = Irot();
  const size_t n = s.transcript.size() - 96;
  EcdsaSigPtr sig(ECDSA_SIG_new());
  ECDSA_SIG_set0(sig.get(), BN_bin2bn(s.transcript.data() + n, 48, nullptr),
                 BN_bin2bn(s.transcript.data() + n + 48, 48, nullptr));
  unsigned char* der = nullptr;
  const int der_len = i2d_ECDSA_SIG(sig.get(), &der);
  EvpPkeyPtr pub(X509_get_pubkey(s.cert.get()));
  for (auto _ : state) {
    MdCtxPtr ctx(EVP_MD_CTX_new());
    EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha384(), nullptr, pub.get());
    const int rc = EVP_DigestVerify(ctx.get(), der, static_cast<size_t>(der_len),
                                    s.transcript.data(), n);
    if (rc != 1) state.SkipWithError("bound verify failed");
  }
  OPENSSL_free(der);
}
BENCHMARK(BM_SpdmCryptoBoundP384Verify)->Unit(benchmark::kMicrosecond);

void BM_DiceValidateChain(benchmark::State& state) {
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  EvpPkeyPtr root_key = t::MakeEcKey("P-384");
  EvpPkeyPtr ca_key = t::MakeEcKey("P-384");
  EvpPkeyPtr leaf_key = t::MakeEcKey("P-384");
  X509Ptr root = t::MakeCertificate({"root", true, now - 100, now + 100000, 1}, root_key.get(),
                                    nullptr, nullptr);
  t::CertSpec ca{"ca", true, now - 100, now + 100000, 2};
  ca.extra_oid = "2.23.133.5.4.1";
  ca.extra_value = t::FwidList384(Bytes(48, 1));
  X509Ptr ca_cert = t::MakeCertificate(ca, ca_key.get(), root.get(), root_key.get());
  t::CertSpec leaf{"leaf", false, now - 100, now + 100000, 3};
  leaf.extra_oid = "2.23.133.5.4.1";
  leaf.extra_value = t::FwidList384(Bytes(48, 2));
  X509Ptr leaf_cert = t::MakeCertificate(leaf, leaf_key.get(), ca_cert.get(), ca_key.get());
  const std::string chain = t::PemOf(leaf_cert.get()) + t::PemOf(ca_cert.get()) + t::PemOf(root.get());
  auto anchors = spdm::TrustAnchors::FromPem({t::PemOf(root.get())}, {"root"});
  for (auto _ : state) {
    auto v = spdm::ValidateChain(chain, *anchors, now);
    if (!v.ok()) state.SkipWithError("chain failed");
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_DiceValidateChain)->Unit(benchmark::kMicrosecond);

void BM_RedfishParseBios(benchmark::State& state) {
  std::string body;
  std::ifstream in(std::string(DPUAUDIT_SOURCE_DIR) +
                   "/../shared/fixtures/redfish/nvidia_dpu/redfish/v1/Systems/Bluefield/Bios/"
                   "index.json");
  if (in) {
    std::ostringstream s;
    s << in.rdbuf();
    body = s.str();
  } else {  // a body of the same shape, ours
    nlohmann::json j = {{"Attributes", {{"HostPrivilegeLevel", "Restricted"},
                                        {"InternalCPUModel", "Embedded"},
                                        {"NicMode", "DpuMode"}}}};
    for (int i = 0; i < 40; ++i) j["Attributes"]["Attr" + std::to_string(i)] = "value";
    body = j.dump(4);
  }
  for (auto _ : state) {
    auto j = redfish::ParseResource(body, redfish::kBios);
    auto b = redfish::ReadBios(*j);
    benchmark::DoNotOptimize(b);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_RedfishParseBios)->Unit(benchmark::kMicrosecond);

// One whole pull over HTTPS (session login, 16 GETs, 2 SPDM Tasks) from
// dpuaudit-bmc-sim on loopback. Wall time: most of it is the simulator and
// TLS; the Task polls are 1 ms apart.
void BM_RedfishPullFromSimulator(benchmark::State& state) {
  namespace fs = std::filesystem;
  const std::string dir = fs::temp_directory_path() / ("dpuaudit-spdm-bench-" +
                                                       std::to_string(getpid()));
  fs::create_directories(dir);
  {
    std::ofstream(dir + "/creds.json") << R"({"username":"root","password":"bench-password-1"})";
    fs::permissions(dir + "/creds.json", fs::perms::owner_read | fs::perms::owner_write);
  }
  const std::string sim = std::string(DPUAUDIT_BIN_DIR) + "/dpuaudit-bmc-sim";
  if (!fs::exists(sim)) {
    state.SkipWithError("dpuaudit-bmc-sim is not built");
    return;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open((dir + "/sim.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    const std::string profile =
        std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/bmc/bf3-zero-trust.json";
    execl(sim.c_str(), sim.c_str(), "--credentials", (dir + "/creds.json").c_str(), "--profile",
          profile.c_str(), "--spdm", "--keys-dir", (dir + "/keys").c_str(), "--ready-file",
          (dir + "/ready.json").c_str(), "--anchor-out", (dir + "/anchor.pem").c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  nlohmann::json ready;
  for (int i = 0; i < 400 && ready.is_null(); ++i) {
    std::ifstream in(dir + "/ready.json");
    if (in) ready = nlohmann::json::parse(in, nullptr, false);
    if (ready.is_discarded()) ready = nullptr;
    if (ready.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (ready.is_null()) {
    state.SkipWithError("the simulator did not start");
  } else {
    bmc::BmcEndpoint ep;
    ep.base_url = ready["url"];
    ep.pinned_key_sha256 = ready["tls_spki_sha256"];
    auto creds = bmc::LoadCredentialsFile(dir + "/creds.json");
    bmc::CollectOptions co;
    co.task_poll = std::chrono::milliseconds(1);
    int requests = 0;
    const bool judge = state.range(0) >= 1;
    std::optional<spdm::ChainCache> cache;
    if (state.range(0) == 2) cache.emplace();
    std::optional<bmc::BmcEvidence> pulled;
    std::optional<spdm::TrustAnchors> anchors;
    if (judge) {
      // One SPDM appraisal of a pull (both targets: chain, signature,
      // nonce, baseline; the identity), without the network.
      auto client = bmc::RedfishClient::Connect(ep, *creds);
      if (client.ok()) pulled = bmc::CollectBmcEvidence(**client, co);
      std::ifstream in(dir + "/anchor.pem");
      std::stringstream pem;
      pem << in.rdbuf();
      auto a = spdm::TrustAnchors::FromPem({pem.str()}, {"anchor.pem"});
      if (a.ok()) anchors = std::move(a).value();
      if (!pulled || !anchors) state.SkipWithError("no evidence or anchor");
    }
    for (auto _ : state) {
      if (judge) {
        if (!pulled || !anchors) break;
        verifier::JudgeBmcInput in;
        in.node_id = "bench";
        in.evidence = &*pulled;
        in.anchors = &*anchors;
        in.chain_cache = cache ? &*cache : nullptr;
        in.now = static_cast<int64_t>(std::time(nullptr));
        verifier::BmcVerdict v = verifier::JudgeBmcPull(in);
        if (!v.Target("irot")->verified) {
          state.SkipWithError("the pull did not verify");
          break;
        }
        benchmark::DoNotOptimize(v);
        continue;
      }
      auto client = bmc::RedfishClient::Connect(ep, *creds);
      if (!client.ok()) {
        state.SkipWithError("connect failed");
        break;
      }
      bmc::BmcEvidence e = bmc::CollectBmcEvidence(**client, co);
      requests = e.requests;
      benchmark::DoNotOptimize(e);
    }
    state.counters["requests"] = requests;
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  fs::remove_all(dir);
}
// Arg 0: one whole pull (network + simulator, wall time). Arg 1: the SPDM
// appraisal of one pull (both targets verified and judged; CPU time), every
// chain validated.
BENCHMARK(BM_RedfishPullFromSimulator)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(20);
// Arg 2: the same with the monitor's chain cache (steady state: the chains
// validated at the first pull, only their dates re-checked).
BENCHMARK(BM_RedfishPullFromSimulator)->Arg(1)->Unit(benchmark::kMicrosecond)->Iterations(200);
BENCHMARK(BM_RedfishPullFromSimulator)->Arg(2)->Unit(benchmark::kMicrosecond)->Iterations(200);

}  // namespace
}  // namespace dpuaudit

BENCHMARK_MAIN();
