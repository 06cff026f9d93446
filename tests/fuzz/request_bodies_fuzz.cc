// Fuzz target: the verifier's HTTP request bodies, end to end through
// verifier::VerifierService (what src/apps maps each route to), with a real
// SqliteStore in a temporary folder (/dev/shm when there is one), a fixed
// FakeClock, the embedded policy below, and keys made at run time (the
// node's, the verifier's, and a trusted EK CA that signed nothing).
//
// Input: one or more requests separated by the byte 0x1e (ASCII RS, which
// JSON text never holds unescaped), run in order against the same verifier;
// each request is one selector byte, then the body. Selector % 8 picks the
// call; bit 3 (0x08) picks a variant. Printable seeds use '0'..'7' and
// '8'..'?'.
//   0  POST /v1/nodes                 Enroll(body, bootstrap token)
//                                     variant: a wrong token
//   1  POST /v1/nodes                 Enroll(body, no token: pending)
//   2  POST /v1/challenges            IssueChallenge(body)
//   3  POST /v1/nodes/{id}/tpm/activate  "<id>\n<body>"
//   4  POST /v1/reports               SubmitReport(body), as received
//   5  POST /v1/reports               body = report claims (JWS payload),
//      signed here as node "fuzz-node" (enrolled at start-up with a run-time
//      key) after every kNoncePlaceholder in it is replaced by a nonce just
//      issued to that node; variant: the flattened JSON serialisation.
//      This is what reaches the appraisal: evidence re-derivation, boot
//      chain, TPM claims, reference values, policy, EAR signing, storage.
//   6  POST /v1/refvals               ImportRefvals(body, admin token)
//                                     variant: no token
//   7  POST /v1/refvals/{release}/{action}  "<release>\n<action>\n<body>"
//                                     variant: no token
// Invariants: no call throws or crashes; an error has a message and is
// never INTERNAL, DATA_LOSS, UNAVAILABLE or UNIMPLEMENTED (malformed input
// must not look like a verifier fault); an enrollment without the bootstrap
// token never changes the TPM binding of an approved node (the node's
// public key is public, so it proves nothing); an unsigned report (4) is
// never accepted; an accepted report's EAR verifies under the verifier's
// JWKS, names the node, and GetAdmission agrees with it; an enrolled node is
// readable by NodeView; an issued nonce is 43 base64url characters. No
// OpenSSL pass-phrase prompt may happen (a UI method that aborts is
// installed).
//
// The service and its database persist across inputs (as in a running
// verifier) and are rebuilt every kInputsPerWorld inputs to bound the
// database's size.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ui.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/clock.h"
#include "common/crypto.h"
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
// What seeds carry where the nonce goes: base64url of the 32 bytes
// "dpuaudit fuzz: nonce placeholder" (a run of 'A's would also match inside
// other base64 members).
constexpr std::string_view kNoncePlaceholder =
    "ZHB1YXVkaXQgZnV6ejogbm9uY2UgcGxhY2Vob2xkZXI";
constexpr int kInputsPerWorld = 512;

// The rules of policies/zero-trust.json, with uncertified EKs allowed so
// that TPM enrollments get as far as MakeCredential.
constexpr char kPolicy[] = R"({
  "schema": "dpuaudit-policy/1",
  "name": "fuzz-zero-trust",
  "description": "policies/zero-trust.json rules; uncertified EKs allowed.",
  "decision_ttl_seconds": 300,
  "rules": [
    {"id": "host.privilege_level", "expect": "RESTRICTED", "action": "deny", "min_tier": "self-reported"},
    {"id": "dpu.operation_mode", "expect": "dpu", "action": "deny", "min_tier": "self-reported"},
    {"id": "host.rshim_disabled", "expect": "TRUE", "action": "deny", "min_tier": "self-reported"},
    {"id": "host.tracer_disabled", "expect": "TRUE", "action": "deny", "min_tier": "self-reported"},
    {"id": "host.counter_read_disabled", "expect": "TRUE", "action": "deny", "min_tier": "self-reported"},
    {"id": "host.port_owner_disabled", "expect": "TRUE", "action": "deny", "min_tier": "self-reported"},
    {"id": "dpu.pending_change", "expect": "none", "action": "deny", "min_tier": "self-reported"},
    {"id": "boot.arm_lifecycle", "expect": "GA Secured", "action": "deny", "min_tier": "self-reported"},
    {"id": "boot.secure_boot", "expect": "enabled", "action": "deny", "min_tier": "self-reported"},
    {"id": "boot.production_keys", "expect": "production", "action": "deny", "min_tier": "self-reported"},
    {"id": "os.kernel_lockdown", "expect": ["integrity", "confidentiality"], "action": "deny", "min_tier": "self-reported"},
    {"id": "nic.fw_security", "expect": "production", "action": "deny", "min_tier": "self-reported"},
    {"id": "fw.atf_build", "expect": "release", "action": "deny", "min_tier": "self-reported"},
    {"id": "fw.bsp_version", "min_version": "4.7.0", "action": "deny", "min_tier": "self-reported"},
    {"id": "fw.nic_version", "min_version": ["24.35.2000", "32.41.1000"], "action": "deny", "min_tier": "self-reported"},
    {"id": "fw.nic_version_consistent", "expect": "consistent", "action": "deny", "min_tier": "self-reported"},
    {"id": "fw.nic_staged", "expect": "none", "action": "warn", "min_tier": "self-reported"},
    {"id": "boot.stream_integrity", "expect": "intact", "action": "deny", "min_tier": "self-reported"},
    {"id": "refval.arm_firmware", "expect": "active", "warn": ["obsolete"], "action": "deny", "min_tier": "self-reported"},
    {"id": "refval.os_release", "expect": "active", "warn": ["obsolete"], "action": "deny", "min_tier": "self-reported"},
    {"id": "refval.nic_firmware", "expect": "active", "warn": ["obsolete"], "action": "deny", "min_tier": "self-reported"},
    {"id": "refval.boot_stream", "expect": "active", "warn": ["obsolete"], "action": "deny", "min_tier": "self-reported"},
    {"id": "refval.os_boot", "expect": "active", "action": "warn", "min_tier": "self-reported"},
    {"id": "refval.upgrade_path", "expect": ["unchanged", "first-seen", "allowed"], "action": "deny", "min_tier": "self-reported"},
    {"id": "tpm.ek_certificate", "expect": "trusted", "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.ak_bound", "expect": "verified", "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.signature", "expect": "verified", "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.attest_type", "expect": "verified", "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.qualifying_data", "expect": "verified", "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.pcr_selection", "expect": "verified", "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.pcr_digest", "expect": "verified", "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.replay", "expect": "verified", "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.reference_values", "expect": "active", "warn": ["obsolete"], "action": "deny", "min_tier": "hardware-rooted"},
    {"id": "tpm.secure_boot", "expect": "enabled", "action": "deny", "min_tier": "hardware-rooted"}
  ],
  "tpm": {"applies_to": "bound-nodes", "pcr_selection": {"sha256": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}, "allow_uncertified_ek": true}
})";

void Check(bool ok) {
  if (!ok) std::abort();
}

// An error from untrusted input: a message, and a code that blames the
// input or the state, not the verifier.
void CheckRefusal(const Status& s) {
  Check(!s.ok() && !s.message().empty());
  Check(s.code() != StatusCode::kInternal &&
        s.code() != StatusCode::kDataLoss &&
        s.code() != StatusCode::kUnavailable &&
        s.code() != StatusCode::kUnimplemented);
}

template <typename T>
void CheckResult(const StatusOr<T>& r) {
  if (!r.ok()) CheckRefusal(r.status());
}

int AbortOnPrompt(UI*, UI_STRING*) { std::abort(); }

void ForbidPassphrasePrompts() {
  UI_METHOD* method = UI_create_method("dpuaudit fuzz: no prompts");
  if (method == nullptr || UI_method_set_reader(method, AbortOnPrompt) != 0) {
    std::abort();
  }
  UI_set_default_method(method);  // kept for the life of the process
}

std::string TempDir() {
  std::string base =
      std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string tmpl = base + "/dpuaudit-fuzz-verifier-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  return tmpl;
}

// A self-signed P-256 CA, made at run time, as the only trusted EK CA: EK
// certificates in requests get through parsing and the key match to the
// chain check (which they fail: nobody else holds this CA's key).
void WriteRunTimeEkCa(const std::string& dir) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  if (key == nullptr || x == nullptr) std::abort();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  ASN1_TIME_set(X509_getm_notBefore(x), static_cast<time_t>(kNow - 86400));
  ASN1_TIME_set(X509_getm_notAfter(x), static_cast<time_t>(kNow + 86400 * 365));
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(
      name, "CN", MBSTRING_UTF8,
      reinterpret_cast<const unsigned char*>("fuzz EK CA"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_set_pubkey(x, key);
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* ext =
      X509V3_EXT_conf(nullptr, &ctx, "basicConstraints", "critical,CA:TRUE");
  if (ext == nullptr || X509_add_ext(x, ext, -1) != 1) std::abort();
  X509_EXTENSION_free(ext);
  if (X509_sign(x, key, EVP_sha256()) <= 0) std::abort();
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr || PEM_write_bio_X509(bio, x) != 1) std::abort();
  char* pem = nullptr;
  long n = BIO_get_mem_data(bio, &pem);
  std::ofstream(dir + "/root.pem", std::ios::binary).write(pem, n);
  BIO_free(bio);
  X509_free(x);
  EVP_PKEY_free(key);
}

template <typename T>
T Must(StatusOr<T> v) {
  if (!v.ok()) std::abort();
  return std::move(v).value();
}

// One running verifier: its database, keys, clock and the enrolled node.
class World {
 public:
  World()
      : dir_(TempDir()),
        clock_(kNow),
        node_key_(Must(EcPrivateKey::Generate())),
        node_signer_(Must(Es256Signer::New(node_key_))) {
    std::filesystem::create_directories(dir_ + "/ekca");
    WriteRunTimeEkCa(dir_ + "/ekca");
    auto store = Must(verifier::SqliteStore::Open(dir_ + "/verifier.db"));
    auto policy =
        Must(verifier::Policy::Create(kPolicy, verifier::KnownRules()));
    verifier::ServiceOptions options;
    options.bootstrap_token = kBootstrapToken;
    options.admin_token = kAdminToken;
    options.max_report_bytes = 1 << 20;
    options.max_refvals_bytes = 1 << 20;
    options.ek_ca_dir = dir_ + "/ekca";
    options.challenges_per_minute = 0;  // the clock never moves
    options.reports_per_minute = 0;
    // Real CPU time would make a run's verdicts depend on the machine.
    options.unauthenticated_cpu_ms_per_second = 0;
    svc_ = Must(verifier::VerifierService::New(
        std::move(store), std::move(policy), Must(EcPrivateKey::Generate()),
        clock_, options));
    ear_verifier_ = Must(
        Es256Verifier::New(Must(report::ParseJwks(svc_->Jwks())).at(0).key));
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

  void Run(uint8_t selector, std::string_view body) {
    const bool variant = (selector & 0x08) != 0;
    switch (selector % 8) {
      case 0:
      case 1: {
        std::optional<std::string> bearer;
        if (selector % 8 == 0)
          bearer = variant ? "wrong-token" : kBootstrapToken;
        std::optional<std::string> approved = ApprovedNodeNamedIn(body);
        std::string binding_before = approved ? BindingOf(*approved) : "";
        auto r = svc_->Enroll(body, bearer);
        CheckResult(r);
        if (r.ok()) CheckEnrolled(*r, bearer);
        if (approved && bearer != kBootstrapToken)
          Check(BindingOf(*approved) == binding_before);
        break;
      }
      case 2: {
        auto r = svc_->IssueChallenge(body);
        CheckResult(r);
        if (r.ok()) {
          Check(r->nonce.size() == 43 && Base64UrlDecode(r->nonce).ok());
          Check(r->pcr_selection ==
                svc_->policy().tpm().pcr_selection.ToString());
        }
        break;
      }
      case 3: {
        auto [node, rest] = Split(body);
        auto r = svc_->ActivateTpm(std::string(node), rest);
        CheckResult(r);
        if (r.ok()) Check(r->node_id == node);
        break;
      }
      case 4: {
        auto r = svc_->SubmitReport(body);
        Check(!r.ok());  // nobody but the node holds its key
        CheckRefusal(r.status());
        break;
      }
      case 5:
        SubmitSigned(body, variant);
        break;
      case 6: {
        std::optional<std::string> bearer;
        if (!variant) bearer = kAdminToken;
        auto r = svc_->ImportRefvals(body, bearer);
        CheckResult(r);
        if (r.ok()) {
          auto listed = svc_->ListRefvals("", std::string(kAdminToken));
          Check(listed.ok());
        }
        break;
      }
      case 7: {
        auto [release, rest] = Split(body);
        auto [action, json] = Split(rest);
        std::optional<std::string> bearer;
        if (!variant) bearer = kAdminToken;
        auto r =
            svc_->TransitionRefval(std::string(release), action, json, bearer);
        CheckResult(r);
        if (r.ok()) Check(r->contains("changed") && !(*r)["changed"].empty());
        break;
      }
    }
  }

 private:
  static std::pair<std::string_view, std::string_view> Split(
      std::string_view s) {
    size_t nl = s.find('\n');
    if (nl == std::string_view::npos) return {s, {}};
    return {s.substr(0, nl), s.substr(nl + 1)};
  }

  // The node_id of an enrollment body, when it names an approved node.
  std::optional<std::string> ApprovedNodeNamedIn(std::string_view body) {
    auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("node_id") || !j["node_id"].is_string()) {
      return std::nullopt;
    }
    std::string id = j["node_id"].get<std::string>();
    auto node = svc_->store().GetNode(id);
    if (!node.ok() || node->state != verifier::NodeState::kApproved)
      return std::nullopt;
    return id;
  }

  // The stored TPM binding of a node, as comparable text.
  std::string BindingOf(const std::string& node_id) {
    auto b = svc_->store().GetTpmBinding(node_id);
    if (!b.ok()) return b.status().ToString();
    return b->ak_name_hex + "/" + b->ek_sha256 + "/" +
           std::string(verifier::TpmBindingStateName(b->state)) + "/" +
           b->credential_sha256;
  }

  void CheckEnrolled(const verifier::EnrollResult& r,
                     const std::optional<std::string>& bearer) {
    Check(!r.node.node_id.empty());
    if (bearer.has_value())
      Check(r.node.state != verifier::NodeState::kPending);
    Check(r.tpm_challenge.has_value() == (r.tpm_state == "pending"));
    auto view = svc_->NodeView(r.node.node_id, kAdminToken);
    Check(view.ok() && (*view)["node_id"] == r.node.node_id);
  }

  void SubmitSigned(std::string_view body, bool flattened) {
    auto challenge =
        svc_->IssueChallenge(Must(report::ChallengeRequestBody(
            kNodeId, clock_.NowUnixSeconds(), *node_signer_)));
    Check(challenge.ok());
    std::string payload(body);
    for (size_t at = payload.find(kNoncePlaceholder); at != std::string::npos;
         at = payload.find(kNoncePlaceholder, at + challenge->nonce.size())) {
      payload.replace(at, kNoncePlaceholder.size(), challenge->nonce);
    }
    report::JwsHeader header;
    header.kid = kNodeId;
    header.typ = std::string(report::kReportJwsTyp);
    std::string jws =
        Must(report::SignCompact(AsBytes(payload), *node_signer_, header));
    if (flattened) jws = Must(report::CompactToFlattened(jws));
    auto r = svc_->SubmitReport(jws);
    if (!r.ok()) {
      CheckRefusal(r.status());
      return;
    }
    auto ear = report::VerifyEar(r->ear_jwt, *ear_verifier_, clock_);
    Check(ear.ok() && ear->dpuaudit.node_id == kNodeId &&
          ear->dpuaudit.decision == r->result.dpuaudit.decision &&
          ear->nonce == challenge->nonce);
    auto admission = svc_->GetAdmission(kNodeId, kAdminToken);
    Check(admission.ok() &&
          admission->decision ==
              report::DecisionName(r->result.dpuaudit.decision));
    Check(svc_->NodeView(kNodeId, kAdminToken).ok());
  }

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static uint64_t inputs = 0;
  if (inputs == 0) ForbidPassphrasePrompts();
  std::unique_ptr<World>& world = TheWorld();
  if (inputs++ % kInputsPerWorld == 0) {
    world.reset();
    world = std::make_unique<World>();
  }
  std::string_view input(reinterpret_cast<const char*>(data),
                         data == nullptr ? 0 : size);
  while (!input.empty()) {
    size_t end = input.find('\x1e');
    std::string_view request = input.substr(0, end);
    if (!request.empty()) {
      world->Run(static_cast<uint8_t>(request[0]), request.substr(1));
    }
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + 1);
  }
  return 0;
}
