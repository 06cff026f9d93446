// Fuzz target: the whole appraisal of an authentic report whose tool outputs
// are fuzzer-chosen bytes. The base is the recorded BlueField-3
// tests/fixtures/devices/bf3-zero-trust, collected once as the agent does
// (isolation::CollectDeviceFacts over a CapturingDeviceSource). Each input
// replaces the stdout of some of its commands; then, as an honest agent on
// that device would, the target collects again over the changed evidence
// (CollectDeviceFacts with the measured boot chain) for the report's findings,
// signs the claims with the node's key (made at run time) for a nonce just
// issued, and submits them to verifier::VerifierService::SubmitReport with a
// real SqliteStore in a temporary folder (/dev/shm when there is one), the
// zero-trust policy of policies/zero-trust.json and the reference values of
// tests/fixtures/refvals/bf3-releases.json, so that the base is admitted.
//
// Input: sections separated by the byte 0x1e (ASCII RS). A section is a
// first line naming the command, by its evidence id ("bfver",
// "mlxprivhost.query@/dev/mst/mt41692_pciconf0", ...: see
// device/evidence.h) or, when it names none, the command at index
// (sum of its bytes) mod the number of commands; the rest of the section
// (after the "\n") is that command's new stdout, any bytes.
//
// Invariants: nothing throws or crashes; the agent's findings are MakeSafe
// (common/finding.h); every authentic report gets a decision (SubmitReport
// never fails: tool output is evidence, never an error), whose reasons are
// all SafeText and dump as strict JSON; the agent's findings agree with the
// verifier's re-derivation (no "differs from the verifier's re-derivation"
// reason, but for boot.stream_integrity: the boot chain is measured once,
// over the recorded mlxbf-bootctl); the EAR verifies under the verifier's JWKS, names the node and
// the nonce; GetAdmission agrees with the decision; NodeView dumps as strict
// JSON.
//
// The service and its database persist across inputs (as in a running
// verifier) and are rebuilt every kInputsPerWorld inputs.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "firmware/boot_chain.h"
#include "firmware/inventory.h"
#include "common/bytes.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/finding.h"
#include "common/safe_text.h"
#include "device/device_source.h"
#include "device/evidence.h"
#include "isolation/identity.h"
#include "isolation/device_facts.h"
#include "isolation/probes.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/ear.h"
#include "report/jws.h"
#include "verifier/policy.h"
#include "verifier/service.h"
#include "verifier/store/sqlite_store.h"

namespace {

using namespace dpuaudit;

constexpr int64_t kNow = 1'800'000'000;
constexpr char kNodeId[] = "fuzz-node";
constexpr char kBootstrapToken[] = "fuzz-bootstrap-token-0123456789";
constexpr char kAdminToken[] = "fuzz-admin-token-0123456789";
constexpr int kInputsPerWorld = 256;  // ~55 KB of report per input
const std::string kSource = DPUAUDIT_SOURCE_DIR;

void Check(bool ok) {
  if (!ok) std::abort();
}

template <typename T>
T Must(StatusOr<T> v) {
  if (!v.ok()) std::abort();
  return std::move(v).value();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Check(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string TempDir() {
  std::string base =
      std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string tmpl = base + "/dpuaudit-fuzz-appraisal-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  return tmpl;
}

// Strict: throws on a string that is not UTF-8 (which must not exist).
void CheckStrictDump(const nlohmann::json& j) {
  try {
    (void)j.dump();
  } catch (...) {
    std::abort();
  }
}

// The agent's collection of the recorded device, once.
struct Base {
  report::ReportClaims claims;  // node, nonce and findings set per input
  std::optional<firmware::BootChainInfo> boot;  // as measured, for re-derivation
  std::vector<size_t> commands;  // indexes of the command evidence
};

const Base& TheBase() {
  static const Base base = [] {
    Base b;
    auto recorded = Must(device::NewRecordedDeviceSource(
        kSource + "/tests/fixtures/devices/bf3-zero-trust"));
    device::CapturingDeviceSource capture(*recorded);
    // As the agent collects it: the one collection agent and verifier share.
    isolation::DeviceFacts facts = isolation::CollectDeviceFacts(capture);
    const isolation::DeviceIdentity& id = facts.device;
    b.claims.device = {id.model, id.serial,   id.part_number,
                       id.psid,  id.base_mac, id.fw_version};
    b.claims.firmware = facts.firmware_json();
    b.claims.boot_chain = facts.boot_chain_json();
    b.boot = facts.boot_chain;
    b.claims.issued_at = kNow;
    b.claims.node_id = kNodeId;
    b.claims.evidence = capture.evidence();
    for (size_t i = 0; i < b.claims.evidence.size(); ++i) {
      if (b.claims.evidence[i].kind == device::EvidenceKind::kCommand)
        b.commands.push_back(i);
    }
    Check(!b.commands.empty());
    return b;
  }();
  return base;
}

// One running verifier: its database, keys, clock and the enrolled node.
class World {
 public:
  World()
      : dir_(TempDir()),
        clock_(kNow),
        node_key_(Must(EcPrivateKey::Generate())),
        node_signer_(Must(Es256Signer::New(node_key_))) {
    auto store = Must(verifier::SqliteStore::Open(dir_ + "/verifier.db"));
    auto policy = Must(verifier::Policy::Create(
        ReadText(kSource + "/policies/zero-trust.json"),
        verifier::KnownRules()));
    verifier::ServiceOptions options;
    options.bootstrap_token = kBootstrapToken;
    options.admin_token = kAdminToken;
    options.max_report_bytes = 8 << 20;
    options.challenges_per_minute = 0;  // the clock never moves
    options.reports_per_minute = 0;
    svc_ = Must(verifier::VerifierService::New(
        std::move(store), std::move(policy), Must(EcPrivateKey::Generate()),
        clock_, options));
    ear_verifier_ = Must(
        Es256Verifier::New(Must(report::ParseJwks(svc_->Jwks())).at(0).key));
    Check(svc_->ImportRefvals(
                  ReadText(kSource + "/tests/fixtures/refvals/bf3-releases.json"),
                  std::string(kAdminToken))
              .ok());
    nlohmann::json enroll = {
        {"node_id", kNodeId},
        {"public_key", report::PublicJwk(node_key_.public_key(), "k")}};
    auto enrolled = svc_->Enroll(enroll.dump(), std::string(kBootstrapToken));
    Check(enrolled.ok() &&
          enrolled->node.state == verifier::NodeState::kApproved);
  }
  ~World() {
    svc_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void Appraise(std::vector<device::Evidence> evidence) {
    const Base& base = TheBase();
    // The honest agent's findings over this evidence.
    auto source = device::NewEvidenceDeviceSource(evidence);
    Check(source.ok());  // only stdout changed: still a valid capture
    report::ReportClaims claims = base.claims;
    claims.evidence = std::move(evidence);
    // The honest agent's collection over this evidence (the boot chain as
    // measured on the recorded device): findings and the device block.
    isolation::DeviceFacts facts =
        isolation::CollectDeviceFacts(**source, base.boot ? &*base.boot : nullptr);
    claims.findings = std::move(facts.findings);
    for (const Finding& f : claims.findings) Check(IsSafe(f));
    const isolation::DeviceIdentity& id = facts.device;  // SafeText already
    claims.device = report::DeviceInfo{id.model,    id.serial,   id.part_number,
                                       id.psid,     id.base_mac, id.fw_version};
    auto challenge = svc_->IssueChallenge(
        Must(report::ChallengeRequestBody(kNodeId, kNow, *node_signer_)));
    Check(challenge.ok());
    claims.nonce = challenge->nonce;
    auto jws = report::SignReport(claims, *node_signer_, kNodeId);
    Check(jws.ok());
    auto r = svc_->SubmitReport(*jws);
    Check(r.ok());

    const report::AttestationResult& ar = r->result;
    nlohmann::json reasons = nlohmann::json::array();
    for (const report::DecisionReason& reason : ar.dpuaudit.reasons) {
      for (const std::string* s : {&reason.rule_id, &reason.expected,
                                   &reason.observed, &reason.source,
                                   &reason.reason}) {
        Check(IsSafeText(*s));
        reasons.push_back(*s);
      }
      // The boot chain was measured once, over the recorded mlxbf-bootctl:
      // a changed one may move the primary partition (and so the boot
      // finding) away from the agent's.
      Check(reason.reason.find("differs from the verifier's re-derivation") ==
                std::string::npos ||
            reason.reason.find(firmware::kBootStreamIntegrityId) !=
                std::string::npos);
    }
    CheckStrictDump(reasons);
    auto ear = report::VerifyEar(r->ear_jwt, *ear_verifier_, clock_);
    Check(ear.ok() && ear->dpuaudit.node_id == kNodeId &&
          ear->dpuaudit.decision == ar.dpuaudit.decision &&
          ear->dpuaudit.reasons == ar.dpuaudit.reasons &&
          ear->nonce == challenge->nonce);
    auto admission = svc_->GetAdmission(kNodeId, std::string(kAdminToken));
    Check(admission.ok() &&
          admission->decision == report::DecisionName(ar.dpuaudit.decision));
    auto view = svc_->NodeView(kNodeId, std::string(kAdminToken));
    Check(view.ok());
    CheckStrictDump(*view);
  }

 private:
  std::string dir_;
  FakeClock clock_;
  EcPrivateKey node_key_;
  std::unique_ptr<Signer> node_signer_;
  std::unique_ptr<verifier::VerifierService> svc_;
  std::unique_ptr<Verifier> ear_verifier_;
};

std::unique_ptr<World>& TheWorld() {
  static std::unique_ptr<World> world;
  return world;
}

// The command evidence a section's first line names.
size_t CommandFor(const Base& base, const std::vector<device::Evidence>& ev,
                  std::string_view name) {
  for (size_t i : base.commands) {
    if (ev[i].id == name) return i;
  }
  size_t sum = 0;
  for (char c : name) sum += static_cast<unsigned char>(c);
  return base.commands[sum % base.commands.size()];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static uint64_t inputs = 0;
  const Base& base = TheBase();
  std::unique_ptr<World>& world = TheWorld();
  if (inputs++ % kInputsPerWorld == 0) {
    world.reset();
    world = std::make_unique<World>();
  }
  std::vector<device::Evidence> evidence = base.claims.evidence;
  std::string_view input(reinterpret_cast<const char*>(data),
                         data == nullptr ? 0 : size);
  while (!input.empty()) {
    size_t end = input.find('\x1e');
    std::string_view section = input.substr(0, end);
    size_t nl = section.find('\n');
    std::string_view name = section.substr(0, nl);
    std::string_view out =
        nl == std::string_view::npos ? std::string_view() : section.substr(nl + 1);
    device::Evidence& e = evidence[CommandFor(base, evidence, name)];
    e.raw = Bytes(out.begin(), out.end());
    e.sha256 = Sha256Hex(e.raw);
    e.truncated = false;
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + 1);
  }
  world->Appraise(std::move(evidence));
  return 0;
}
