// Event logs that real firmware writes, and one a compromised Arm OS edits,
// through the real binaries (issue 12, items 15 and 16; docs/eventlog.md):
// a swtpm whose PCRs hold a boot (played by `dpuaudit-agent simulate-boot`,
// or for H-CRTM by swtpm's own _TPM_Hash_Start/Data/End), the agent
// enrolling and attesting with it, the verifier replaying the log it sends.
//  (a) SecureBoot flipped 0 -> 1 in the event data, digests kept: replay
//      still matches, tpm.secure_boot is unknown (event and bank named), not
//      "enabled".
//  (b) an EV_NO_ACTION event at PCR 0xFFFFFFFF: accepted and replayed.
//  (c) an H-CRTM boot (EV_EFI_HCRTM_EVENT): replays to the quoted PCR 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/shared/http_client.h"
#include "attest/eventlog.h"
#include "attest/tpm/tpm.h"
#include "attest/tpm_types.h"
#include "common/files.h"
#include "device/device_source.h"
#include "integration/harness.h"
#include "integration/json_schema.h"
#include "attest/tpm/swtpm_harness.h"

namespace dpuaudit {
namespace {

using itest::ParseJson;

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

constexpr char kToken[] = "eventlog-binding-bootstrap-token-0123456789";
constexpr char kAdminToken[] = "eventlog-binding-admin-token-0123456789";
constexpr char kNode[] = "bf3-ftpm";
// What the simulated H-CRTM measures (swtpm_ioctl -h hashes these bytes).
constexpr char kHcrtmImage[] = "BlueField-3 H-CRTM image 4.9.0";

const std::string kBf3Log =
    itest::kSrc + "/tests/fixtures/eventlogs/bf3-ftpm-boot.bin";

void Put32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A crypto-agile log back to bytes: the Spec ID event as TCG_PCR_EVENT, the
// rest as TCG_PCR_EVENT2 with their digests in stored order.
Bytes Serialize(const attest::EventLog& log) {
  Bytes out;
  for (const attest::TcgEvent& e : log.events) {
    Put32(out, e.pcr);   // pcrIndex
    Put32(out, e.type);  // eventType
    if (&e == &log.events.front()) {
      out.insert(out.end(), 20, 0);  // SHA-1 digest: zero
    } else {
      Put32(out, static_cast<uint32_t>(e.digests.size()));  // count
      for (const attest::EventDigest& d : e.digests) {
        out.push_back(static_cast<uint8_t>(d.alg));       // hashAlg u16
        out.push_back(static_cast<uint8_t>(d.alg >> 8));
        out.insert(out.end(), d.digest.begin(), d.digest.end());
      }
    }
    Put32(out, static_cast<uint32_t>(e.data.size()));  // eventSize
    out.insert(out.end(), e.data.begin(), e.data.end());
  }
  return out;
}

attest::TcgEvent NewEvent(uint32_t pcr, uint32_t type, Bytes data,
                          ByteView measured,
                          const std::vector<attest::SpecIdAlgorithm>& algs) {
  attest::TcgEvent e;
  e.pcr = pcr;
  e.type = type;
  for (const attest::SpecIdAlgorithm& a : algs) {
    e.digests.push_back({a.alg, attest::HashWith(a.alg, measured).value()});
  }
  e.data = std::move(data);
  return e;
}

attest::EventLog Bf3Log() {
  auto raw = ReadFileLimited(kBf3Log, 4 << 20);
  EXPECT_TRUE(raw.ok()) << raw.status().ToString();
  auto log = attest::ParseEventLog(*raw);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return *log;
}

// The index of the SecureBoot event (PCR 7) of the bf3 log.
size_t SecureBootIndex(const attest::EventLog& log) {
  for (const attest::TcgEvent& e : log.events) {
    if (e.type == attest::kEvEfiVariableDriverConfig && e.pcr == 7 &&
        attest::EventDescription(e).rfind("SecureBoot = ", 0) == 0) {
      return e.index;
    }
  }
  ADD_FAILURE() << "no SecureBoot event";
  return 0;
}

class EventLogBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPUAUDIT_SKIP_WITHOUT_SWTPM();
    char tmpl[] = "/tmp/dpuaudit-evbind-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    token_file_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(
        WriteFileAtomic(token_file_, AsBytes(std::string(kToken) + "\n"), 0600).ok());
    admin_file_ = dir_ + "/admin.token";
    ASSERT_TRUE(
        WriteFileAtomic(admin_file_, AsBytes(std::string(kAdminToken) + "\n"), 0600)
            .ok());
    // The agent reads the log through --device-root: a copy of the bf3-ftpm
    // recording, with the crafted logs under fs/tmp.
    device_ = dir_ + "/device";
    fs::copy(itest::Fixture("bf3-ftpm"), device_, fs::copy_options::recursive);
    fs::create_directories(device_ + "/fs/tmp");
    testing::SwtpmOptions o;
    o.shared_identity = true;  // one machine per test: identity irrelevant
    auto inst = testing::SwtpmInstance::Start(o);
    ASSERT_TRUE(inst.ok()) << inst.status().ToString();
    tpm_ = std::move(*inst);
  }
  void TearDown() override {
    verifier_.Stop();
    tpm_.reset();
    if (dir_.empty()) return;
    if (!HasFailure()) {
      fs::remove_all(dir_);
    } else {
      std::cerr << "kept " << dir_ << " (verifier log: " << verifier_.log() << ")\n";
    }
  }

  // Writes `log` under the device root; returns its path there.
  std::string Place(const std::string& name, const Bytes& log) {
    const std::string rel = "/tmp/" + name + ".bin";
    EXPECT_TRUE(WriteFileAtomic(device_ + "/fs" + rel, log, 0644).ok());
    return rel;
  }

  // `dpuaudit-agent simulate-boot`: the firmware's extends, into swtpm.
  // Its --json output follows docs/schemas/agent-simulate-boot.schema.json.
  void SimulateBoot(const std::string& rel) {
    itest::Proc p = itest::Exec({itest::kBin + "/dpuaudit-agent", "simulate-boot",
                                 "--tpm", tpm_->tcti(), "--eventlog",
                                 device_ + "/fs" + rel, "--json"});
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
    EXPECT_GT(itest::ParseJson(p.out).value("events_extended", 0), 0) << p.out;
    if (itest::HaveJsonschema()) {
      EXPECT_EQ(itest::SchemaErrors(dir_, "agent-simulate-boot", p.out), "");
    }
  }

  // The verifier (zero-trust policy, this TPM's EK CA trusted, the bf3
  // reference values imported), then the agent's enrollment with the TPM.
  void StartVerifierAndEnroll() {
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_,
                                {"--policy", itest::kSrc + "/policies/zero-trust.json",
                                 "--bootstrap-token-file", token_file_,
                                 "--admin-token-file", admin_file_, "--ek-ca-dir",
                                 tpm_->ek_ca_dir()},
                                &err))
        << err;
    for (const char* m : {"bf3-releases.json", "bf3-ftpm.json"}) {
      itest::Proc p = itest::Exec({itest::kBin + "/dpuaudit", "refvals", "import",
                                   itest::kSrc + "/tests/fixtures/refvals/" + m,
                                   "--verifier", verifier_.url(), "--admin-token-file",
                                   admin_file_});
      ASSERT_EQ(p.exit_code, 0) << m << ": " << p.out << p.err;
    }
    itest::Proc e = Agent({"enroll", "--bootstrap-token-file", token_file_});
    ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
    ASSERT_THAT(e.out, HasSubstr("TPM bound: AK"));
  }

  itest::Proc Agent(std::vector<std::string> argv) {
    argv.insert(argv.begin(), itest::kBin + "/dpuaudit-agent");
    for (const std::string& a : {std::string("--verifier"), verifier_.url(),
                                 std::string("--node-id"), std::string(kNode),
                                 std::string("--key"), dir_ + "/agent.key",
                                 std::string("--tpm"), tpm_->tcti()}) {
      argv.push_back(a);
    }
    return itest::Exec(argv);
  }

  // `dpuaudit-agent attest` with the log at `rel`; returns the verifier's
  // stored reasons of that report by rule id.
  std::map<std::string, nlohmann::json> Attest(const std::string& rel) {
    itest::Proc a = Agent({"attest", "--device-root", device_, "--eventlog", rel});
    EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
    EXPECT_THAT(a.out, HasSubstr(std::string(kNode) + ": ")) << a.err;
    apps::HttpClientOptions o;
    o.timeout = std::chrono::milliseconds(15000);
    auto client = apps::HttpClient::New(verifier_.url(), o);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    std::map<std::string, nlohmann::json> out;
    if (!client.ok()) return out;
    auto r = (*client)->GetWithBearer(std::string("/v1/nodes/") + kNode, kAdminToken);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    nlohmann::json view = ParseJson(r->body);
    EXPECT_TRUE(view.contains("latest") && view["latest"].is_object()) << r->body;
    if (!view.contains("latest") || !view["latest"].is_object()) return out;
    decision_ = view["latest"].value("decision", "");
    for (const auto& reason : view["latest"]["reasons"]) {
      out[reason.value("rule_id", "")] = reason;
    }
    return out;
  }

  std::string dir_, token_file_, admin_file_, device_;
  std::string decision_;
  std::unique_ptr<testing::SwtpmInstance> tpm_;
  itest::VerifierProcess verifier_;
};

// (a) The Arm OS's root edits the log of a Secure-Boot-off boot: SecureBoot
// 0 -> 1 in the event data, every digest kept. Replay still matches the
// quote (digests are what replay proves), so before digest binding the
// verifier reported Secure Boot enabled, hardware-rooted.
TEST_F(EventLogBindingTest, FlippedSecureBootByteIsUnknownNotEnabled) {
  attest::EventLog off = Bf3Log();
  const size_t sb = SecureBootIndex(off);
  attest::TcgEvent& e = off.events[sb];
  ASSERT_EQ(e.data.back(), 1);
  e.data.back() = 0;  // the honest Secure-Boot-off boot ...
  for (attest::EventDigest& d : e.digests) d.digest = attest::HashWith(d.alg, e.data).value();
  const std::string off_rel = Place("sb-off", Serialize(off));
  attest::EventLog flipped = off;
  flipped.events[sb].data.back() = 1;  // ... and the edited log
  const std::string flipped_rel = Place("sb-flipped", Serialize(flipped));

  SimulateBoot(off_rel);  // the TPM holds what the firmware measured
  StartVerifierAndEnroll();

  // The honest log: replayed, Secure Boot disabled.
  auto honest = Attest(off_rel);
  EXPECT_EQ(honest["tpm.replay"].value("verdict", ""), "pass") << honest["tpm.replay"];
  EXPECT_EQ(honest["tpm.secure_boot"].value("verdict", ""), "fail");
  EXPECT_EQ(honest["tpm.secure_boot"].value("observed", ""), "disabled");

  // The edited log: the replay still matches ...
  auto edited = Attest(flipped_rel);
  EXPECT_EQ(decision_, "deny");
  EXPECT_EQ(edited["tpm.pcr_digest"].value("verdict", ""), "pass");
  EXPECT_EQ(edited["tpm.replay"].value("verdict", ""), "pass") << edited["tpm.replay"];
  // ... but Secure Boot is not reported enabled: unknown, naming the event
  // and the bank whose digest the data no longer hashes to.
  const nlohmann::json& f = edited["tpm.secure_boot"];
  EXPECT_EQ(f.value("verdict", ""), "unknown") << f;
  EXPECT_NE(f.value("observed", ""), "enabled") << f;
  char where[64];
  std::snprintf(where, sizeof where, "event %zu at offset 0x%zx", sb,
                off.events[sb].offset);
  EXPECT_THAT(f.value("reason", ""),
              HasSubstr(std::string(where) +
                        " (EV_EFI_VARIABLE_DRIVER_CONFIG): sha256 digest " +
                        HexEncode(off.events[sb].digests[0].digest) +
                        " is not H(event data)"))
      << f;
  EXPECT_THAT(f.value("reason", ""), HasSubstr("not bound to its digests")) << f;
}

// (b) Windows and some firmware log EV_NO_ACTION events at PCR 0xFFFFFFFF.
// Before: "PCR index 4294967295 out of range", the whole log refused.
TEST_F(EventLogBindingTest, NoActionEventAtPcrFfffffffIsAcceptedAndReplays) {
  attest::EventLog log = Bf3Log();
  attest::TcgEvent informational;
  informational.pcr = 0xFFFFFFFFu;
  informational.type = attest::kEvNoAction;
  for (const attest::SpecIdAlgorithm& a : log.algorithms) {
    informational.digests.push_back({a.alg, Bytes(a.digest_size, 0)});
  }
  const std::string text = "WBCL informational event";
  informational.data.assign(text.begin(), text.end());
  log.events.insert(log.events.begin() + 2, informational);  // after StartupLocality
  const Bytes raw = Serialize(log);
  auto parsed = attest::ParseEventLog(raw);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->events[2].pcr, 0xFFFFFFFFu);
  const std::string rel = Place("noaction-ffffffff", raw);

  SimulateBoot(rel);  // the agent's own log reader accepts it too
  StartVerifierAndEnroll();
  auto reasons = Attest(rel);
  EXPECT_EQ(reasons["tpm.replay"].value("verdict", ""), "pass") << reasons["tpm.replay"];
  EXPECT_EQ(reasons["tpm.reference_values"].value("observed", ""), "active");
  EXPECT_EQ(reasons["tpm.secure_boot"].value("observed", ""), "enabled");
  EXPECT_EQ(decision_, "admit");
}

// (c) An H-CRTM boot: the H-CRTM hashes its image with _TPM_Hash_Start/
// Data/End before TPM2_Startup (swtpm_ioctl -h does exactly that), so PCR 0
// starts at 00..04 and is extended by the image's digest, which the log
// records as EV_EFI_HCRTM_EVENT "HCRTM". Before: not recognised, PCR 0
// replayed from zero, "sha256 PCR 0: log replays to ..., quote has ...".
TEST_F(EventLogBindingTest, HcrtmEventReplaysToTheQuotedPcr0) {
  std::string missing;
  for (const char* tool : {"tpm2_startup"}) {
    std::stringstream path(device::kLiveCommandPath);
    std::string d;
    bool found = false;
    while (std::getline(path, d, ':')) found |= ::access((d + "/" + tool).c_str(), X_OK) == 0;
    if (!found) missing = tool;
  }
  if (!missing.empty()) {
    GTEST_SKIP() << "not installed: " << missing
                 << " (Debian package tpm2-tools); EventLogReplayTest."
                    "EfiHcrtmEventStartsPcr0At4AndIsExtended covers the replay";
  }
  // The H-CRTM sequence on a TPM that has not been started: TPM_Init, the
  // hash, then TPM2_Startup(CLEAR).
  const std::string tcti = tpm_->tcti();
  const int port = std::stoi(tcti.substr(tcti.rfind('=') + 1));
  const std::string ctrl = "127.0.0.1:" + std::to_string(port + 1);
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"swtpm_ioctl", "--tcp", ctrl, "-i"},
        std::vector<std::string>{"swtpm_ioctl", "--tcp", ctrl, "-h", kHcrtmImage},
        std::vector<std::string>{"tpm2_startup", "-c", "-T", tcti}}) {
    itest::Proc p = itest::Exec(argv);
    ASSERT_EQ(p.exit_code, 0) << argv[0] << " " << argv.back() << ": " << p.out << p.err;
  }
  // The log: the bf3 boot with its StartupLocality event replaced by the
  // H-CRTM event as the first PCR 0 measurement. simulate-boot plays the
  // rest (it refuses what plain extends cannot reproduce).
  attest::EventLog log = Bf3Log();
  attest::EventLog rest = log;
  ASSERT_EQ(log.events[1].type, attest::kEvNoAction);  // StartupLocality 0
  log.events[1] = NewEvent(0, attest::kEvEfiHcrtmEvent, ToBytes("HCRTM"),
                           AsBytes(std::string_view(kHcrtmImage)), log.algorithms);
  rest.events.erase(rest.events.begin() + 1);
  const std::string rest_rel = Place("hcrtm-rest", Serialize(rest));
  const Bytes raw = Serialize(log);
  const std::string rel = Place("hcrtm", raw);
  SimulateBoot(rest_rel);

  // The value the TPM holds, computed here: H(00..04 || H(image)), then the
  // log's other PCR 0 events.
  auto parsed = attest::ParseEventLog(raw);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  Bytes expected(32, 0);
  expected.back() = 4;
  for (const attest::TcgEvent& e : parsed->events) {
    if (e.pcr != 0 || e.type == attest::kEvNoAction) continue;
    const Bytes* d = e.DigestFor(attest::kTpmAlgSha256);
    ASSERT_NE(d, nullptr);
    expected.insert(expected.end(), d->begin(), d->end());
    expected = attest::HashWith(attest::kTpmAlgSha256, expected).value();
  }
  {
    auto tpm = attest::tpm::Tpm::Open(tcti);  // closed before the agent runs
    ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
    auto sel = attest::PcrSelection::Parse("sha256:0");
    ASSERT_TRUE(sel.ok());
    auto pcrs = (*tpm)->PcrRead(*sel);
    ASSERT_TRUE(pcrs.ok()) << pcrs.status().ToString();
    EXPECT_EQ(HexEncode(pcrs->at(attest::kTpmAlgSha256).at(0)), HexEncode(expected))
        << "swtpm's H-CRTM sequence";
  }
  EXPECT_EQ(HexEncode(attest::ReplayEventLog(*parsed).pcrs.at(attest::kTpmAlgSha256).at(0)),
            HexEncode(expected));

  StartVerifierAndEnroll();
  auto reasons = Attest(rel);
  EXPECT_EQ(reasons["tpm.pcr_digest"].value("verdict", ""), "pass");
  EXPECT_EQ(reasons["tpm.replay"].value("verdict", ""), "pass") << reasons["tpm.replay"];
  EXPECT_THAT(reasons["tpm.replay"].value("reason", ""),
              Not(HasSubstr("PCR 0: log replays to")));
  // PCR 0 is not the golden (non-H-CRTM) value of the bf3 reference
  // manifest: the reference-value step, not the replay, says so.
  EXPECT_EQ(reasons["tpm.secure_boot"].value("observed", ""), "enabled");
}

}  // namespace
}  // namespace dpuaudit
