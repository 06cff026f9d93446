// TPM evidence end to end (issue 5) with real components only: a swtpm
// manufactured with EK certificates from its own local CA, the simulated
// BlueField-3 boot played into its PCRs, the ESAPI layer the agent uses, and
// the verifier's appraisal over a real SQLite file. Every negative case must
// be denied with the failing appraisal step named (attest/quote.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "apps/common/agent_collect.h"
#include "attest/eventlog.h"
#include "attest/quote.h"
#include "attest/tpm/simulate.h"
#include "attest/tpm/tpm.h"
#include "attest/tpm_structs.h"
#include "common/files.h"
#include "device/device_source.h"
#include "integration/harness.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "attest/tpm_claims.h"
#include "attest/tpm/swtpm_harness.h"
#include "verifier/service.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using attest::tpm::EkType;
using attest::tpm::Tpm;
using dpuaudit::testing::SwtpmInstance;

constexpr char kToken[] = "bootstrap-token-for-tpm-tests-0123456789";
constexpr char kAdminToken[] = "admin-token-for-tpm-tests-0123456789";
const std::string kDevice = itest::Fixture("bf3-ftpm");
const std::string kEventLog =
    itest::kSrc + "/tests/fixtures/eventlogs/bf3-ftpm-boot.bin";
const std::string kLogPath = "/sys/kernel/security/tpm0/binary_bios_measurements";

Bytes ReadBytes(const std::string& path) {
  auto b = ReadFileLimited(path, 16 << 20);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? *b : Bytes{};
}

// A verifier TPM with the simulated firmware boot already measured into it.
StatusOr<std::unique_ptr<SwtpmInstance>> BootedSwtpm() {
  DPA_ASSIGN_OR_RETURN(auto inst, SwtpmInstance::Start());
  DPA_ASSIGN_OR_RETURN(Bytes raw, ReadFileLimited(kEventLog, 4 << 20));
  DPA_ASSIGN_OR_RETURN(attest::EventLog log, attest::ParseEventLog(raw));
  DPA_ASSIGN_OR_RETURN(auto tpm, Tpm::Open(inst->tcti()));
  DPA_RETURN_IF_ERROR(attest::tpm::ExtendEventLog(*tpm, log));
  return inst;
}

class TpmFlowTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::SwtpmMissingTools().empty()) return;
    auto inst = BootedSwtpm();
    ASSERT_TRUE(inst.ok()) << inst.status().ToString();
    tpm_a_ = inst->release();
  }
  static void TearDownTestSuite() {
    delete tpm_a_;
    tpm_a_ = nullptr;
    delete tpm_b_;
    tpm_b_ = nullptr;
  }
  // A second machine's TPM (its own EK, certificate, AK and CA, which the
  // verifier trusts too).
  SwtpmInstance& OtherTpm() {
    if (tpm_b_ == nullptr) {
      auto inst = BootedSwtpm();
      EXPECT_TRUE(inst.ok()) << inst.status().ToString();
      if (!inst.ok()) std::abort();
      tpm_b_ = inst->release();
    }
    TrustCa(*tpm_b_);
    return *tpm_b_;
  }

  void SetUp() override {
    DPUAUDIT_SKIP_WITHOUT_SWTPM();
    ASSERT_NE(tpm_a_, nullptr);
    char tmpl[] = "/tmp/dpuaudit-tpmflow-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto policy_bytes = ReadFileLimited(itest::kSrc + "/policies/zero-trust.json", 65536);
    ASSERT_TRUE(policy_bytes.ok());
    auto store = verifier::SqliteStore::Open(dir_ + "/verifier.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto policy = verifier::Policy::Create(ToString(*policy_bytes), verifier::KnownRules());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    verifier::ServiceOptions options;
    options.bootstrap_token = kToken;
    options.admin_token = kAdminToken;
    // Every test TPM is manufactured by its own swtpm local CA: the
    // verifier trusts their roots and issuers, as an operator trusts a TPM
    // vendor's (the folder is read at each enrollment).
    options.ek_ca_dir = dir_ + "/ek-ca";
    fs::create_directories(options.ek_ca_dir);
    TrustCa(*tpm_a_);
    auto svc = verifier::VerifierService::New(std::move(*store), *policy,
                                              *EcPrivateKey::Generate(), SystemClock::Get(),
                                              options);
    ASSERT_TRUE(svc.ok()) << svc.status().ToString();
    svc_ = std::move(*svc);
    for (const char* manifest : {"bf3-releases.json", "bf3-ftpm.json"}) {
      Bytes m = ReadBytes(itest::kSrc + "/tests/fixtures/refvals/" + manifest);
      auto imported = svc_->ImportRefvals(ToString(m), std::string(kAdminToken));
      ASSERT_TRUE(imported.ok()) << manifest << ": " << imported.status().ToString();
    }
    key_ = std::make_unique<EcPrivateKey>(*EcPrivateKey::Generate());
    signer_ = std::move(*Es256Signer::New(*key_));
  }
  void TearDown() override {
    svc_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void TrustCa(const SwtpmInstance& inst) {
    static int n = 0;
    for (const auto& entry : fs::directory_iterator(inst.ek_ca_dir())) {
      fs::copy_file(entry.path(),
                    dir_ + "/ek-ca/" + std::to_string(++n) + "-" +
                        entry.path().filename().string());
    }
  }

  nlohmann::json TpmMember(Tpm& tpm) {
    auto ek = tpm.EkPublic(EkType::kRsa2048);
    auto ak = tpm.AkPublic();
    auto cert = tpm.ReadEkCertificate(EkType::kRsa2048);
    EXPECT_TRUE(ek.ok() && ak.ok() && cert.ok());
    return {{"ek_public_b64", Base64Encode(*ek)},
            {"ak_public_b64", Base64Encode(*ak)},
            {"ek_cert_b64", Base64Encode(*cert)}};
  }
  std::string EnrollBody(const nlohmann::json& tpm) {
    nlohmann::json j = {{"node_id", node_},
                        {"public_key", report::PublicJwk(key_->public_key(), "k")}};
    if (!tpm.is_null()) j["tpm"] = tpm;
    return j.dump();
  }

  // Enrollment as the agent does it: EK, EK certificate and AK to the
  // verifier, then TPM2_ActivateCredential on its challenge.
  void EnrollAndActivate(SwtpmInstance& inst) {
    auto tpm = Tpm::Open(inst.tcti());
    ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
    auto r = svc_->Enroll(EnrollBody(TpmMember(**tpm)), std::string(kToken));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(r->tpm_challenge.has_value());
    EXPECT_EQ(r->tpm_state, "pending");
    auto blob = Base64Decode(r->tpm_challenge->credential_blob_b64);
    auto secret = Base64Decode(r->tpm_challenge->encrypted_secret_b64);
    auto credential = (*tpm)->ActivateCredential(EkType::kRsa2048, *blob, *secret);
    ASSERT_TRUE(credential.ok()) << credential.status().ToString();
    auto b = svc_->ActivateTpm(
        node_, nlohmann::json{{"credential_b64", Base64Encode(*credential)}}.dump());
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b->state, verifier::TpmBindingState::kActive);
  }

  std::string Nonce() {
    auto c = svc_->IssueChallenge(
        *report::ChallengeRequestBody(node_, std::time(nullptr), *signer_));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->pcr_selection, "sha256:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
    return c.ok() ? c->nonce : "";
  }

  // Claims as the agent builds them from the recorded device.
  report::ReportClaims Claims(const std::string& nonce) {
    auto source = device::NewRecordedDeviceSource(kDevice);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    apps::Collection c = apps::CollectFromDevice(**source);
    return apps::BuildClaims(c, node_, nonce, SystemClock::Get().NowUnixSeconds());
  }

  // The agent's quote: qualifying data binds the nonce and every other
  // claim; `selection` defaults to the policy's.
  attest::TpmClaims Quote(Tpm& tpm, const report::ReportClaims& claims,
                          const std::string& selection = "sha256:0-15") {
    auto nonce = Base64UrlDecode(claims.nonce);
    Bytes qualifying = attest::QualifyingData(
        *nonce, AsBytes(report::SerializeClaimsWithoutTpm(claims)));
    auto sel = attest::PcrSelection::Parse(selection);
    EXPECT_TRUE(sel.ok()) << sel.status().ToString();
    auto q = tpm.Quote(qualifying, *sel);
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    auto ak = attest::TpmPublic::Decode(*tpm.AkPublic());
    attest::TpmClaims t;
    t.quote_attest = q->attest;
    t.quote_sig = q->signature;
    t.ak_name = ak->name();
    t.pcrs = q->pcrs;
    t.eventlog = ReadBytes(kEventLog);
    return t;
  }

  std::string Sign(report::ReportClaims claims, const attest::TpmClaims& t) {
    claims.tpm = attest::TpmClaimsJson(t);
    auto jws = report::SignReport(claims, *signer_, node_);
    EXPECT_TRUE(jws.ok()) << jws.status().ToString();
    return jws.ok() ? *jws : "";
  }

  // The report's decision and the verdict of every tpm.* rule.
  struct Outcome {
    std::string decision;
    std::map<std::string, report::DecisionReason> rules;
    std::optional<report::Submod> tpm;
  };
  Outcome Submit(const std::string& jws) {
    auto o = svc_->SubmitReport(jws);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    Outcome out;
    if (!o.ok()) return out;
    out.decision = std::string(report::DecisionName(o->result.dpuaudit.decision));
    for (const auto& r : o->result.dpuaudit.reasons) out.rules[r.rule_id] = r;
    auto it = o->result.submods.find("tpm");
    if (it != o->result.submods.end()) out.tpm = it->second;
    return out;
  }

  // The deny names `step` as failed, every earlier step verified, every
  // later one not reached.
  void ExpectDeniedAt(const Outcome& o, const std::string& step, const std::string& reason) {
    EXPECT_EQ(o.decision, "deny");
    static const std::vector<std::string> kOrder = {
        "tpm.ak_bound",      "tpm.signature",  "tpm.attest_type",
        "tpm.qualifying_data", "tpm.pcr_selection", "tpm.pcr_digest",
        "tpm.replay",        "tpm.reference_values"};
    bool seen = false;
    for (const std::string& id : kOrder) {
      auto it = o.rules.find(id);
      ASSERT_NE(it, o.rules.end()) << id;
      if (id == step) {
        seen = true;
        EXPECT_EQ(it->second.verdict, Verdict::kFail) << id;
        EXPECT_EQ(it->second.observed, "failed") << id;
        EXPECT_THAT(it->second.reason, HasSubstr(reason)) << id;
      } else if (!seen) {
        EXPECT_EQ(it->second.verdict, Verdict::kPass) << id << ": " << it->second.reason;
      } else {
        EXPECT_EQ(it->second.verdict, Verdict::kUnknown) << id;
        EXPECT_THAT(it->second.reason, HasSubstr("not reached: " + step + " failed")) << id;
      }
    }
    ASSERT_TRUE(o.tpm.has_value());
    EXPECT_EQ(o.tpm->status, report::ArStatus::kContraindicated);
  }

  static SwtpmInstance* tpm_a_;
  static SwtpmInstance* tpm_b_;
  std::string dir_;
  std::string node_ = "bf3-ftpm";
  std::unique_ptr<verifier::VerifierService> svc_;
  std::unique_ptr<EcPrivateKey> key_;
  std::unique_ptr<Signer> signer_;
};
SwtpmInstance* TpmFlowTest::tpm_a_ = nullptr;
SwtpmInstance* TpmFlowTest::tpm_b_ = nullptr;

TEST_F(TpmFlowTest, HardwareQuoteAdmitsWithEveryStepVerified) {
  EnrollAndActivate(*tpm_a_);
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  Outcome o = Submit(Sign(claims, Quote(**tpm, claims)));
  EXPECT_EQ(o.decision, "admit");
  for (const auto& [id, r] : o.rules) {
    if (id.rfind("tpm.", 0) != 0) continue;
    EXPECT_EQ(r.verdict, Verdict::kPass) << id << ": " << r.reason;
    EXPECT_EQ(r.tier, report::ClaimTier::kHardwareRooted) << id;
  }
  EXPECT_EQ(o.rules["tpm.reference_values"].observed, "active");
  EXPECT_EQ(o.rules["tpm.secure_boot"].observed, "enabled");
  EXPECT_EQ(o.rules["tpm.ek_certificate"].observed, "trusted");
  ASSERT_TRUE(o.tpm.has_value());
  EXPECT_EQ(o.tpm->status, report::ArStatus::kAffirming);
  EXPECT_EQ(o.tpm->trust_vector.hardware, 2);
  EXPECT_EQ(o.tpm->trust_vector.instance_identity, 2);
  EXPECT_EQ(o.tpm->trust_vector.executables, 2);
  // NodeView exposes the binding (the CLI's export-quote reads the AK here).
  auto view = svc_->NodeView(node_, kAdminToken);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ((*view)["tpm"]["state"], "active");
  EXPECT_EQ((*view)["tpm"]["ek_certificate"], "trusted");
}

TEST_F(TpmFlowTest, QuoteFromAnotherTpmIsDeniedAtAkBound) {
  EnrollAndActivate(*tpm_a_);
  SwtpmInstance& other = OtherTpm();
  auto tpm = Tpm::Open(other.tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  Outcome o = Submit(Sign(claims, Quote(**tpm, claims)));
  ExpectDeniedAt(o, "tpm.ak_bound", "not the AK bound to this node");
  EXPECT_EQ(o.tpm->trust_vector.instance_identity, 96);
}

TEST_F(TpmFlowTest, WrongAkSignatureUnderTheBoundNameIsDeniedAtSignature) {
  EnrollAndActivate(*tpm_a_);
  Bytes bound_name;
  {
    auto tpm = Tpm::Open(tpm_a_->tcti());
    ASSERT_TRUE(tpm.ok());
    bound_name = attest::TpmPublic::Decode(*(*tpm)->AkPublic())->name();
  }
  auto tpm = Tpm::Open(OtherTpm().tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  attest::TpmClaims t = Quote(**tpm, claims);
  t.ak_name = bound_name;  // claims the bound AK; signed by another one
  ExpectDeniedAt(Submit(Sign(claims, t)), "tpm.signature", "");
}

TEST_F(TpmFlowTest, ReusedNonceIsRefusedAndAnOldQuoteUnderANewNonceIsDenied) {
  EnrollAndActivate(*tpm_a_);
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims first = Claims(Nonce());
  attest::TpmClaims old_quote = Quote(**tpm, first);
  std::string jws = Sign(first, old_quote);
  EXPECT_EQ(Submit(jws).decision, "admit");
  // The same report again: the nonce is spent.
  auto again = svc_->SubmitReport(jws);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("nonce already used"));
  // The old quote replayed under a fresh nonce: its qualifying data binds
  // the old nonce and claims.
  report::ReportClaims second = Claims(Nonce());
  ExpectDeniedAt(Submit(Sign(second, old_quote)), "tpm.qualifying_data", "extraData");
}

TEST_F(TpmFlowTest, ClaimsChangedAfterTheQuoteAreDeniedAtQualifyingData) {
  EnrollAndActivate(*tpm_a_);
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  attest::TpmClaims t = Quote(**tpm, claims);
  claims.device.serial = "MT2334X99999";  // re-signed by the node key, not the TPM
  ExpectDeniedAt(Submit(Sign(claims, t)), "tpm.qualifying_data", "extraData");
}

TEST_F(TpmFlowTest, QuoteOverTooFewPcrsIsDeniedAtPcrSelection) {
  EnrollAndActivate(*tpm_a_);
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  ExpectDeniedAt(Submit(Sign(claims, Quote(**tpm, claims, "sha256:0-7"))),
                 "tpm.pcr_selection", "8");
}

TEST_F(TpmFlowTest, PcrExtendedAfterTheQuoteIsDeniedAtPcrDigest) {
  auto inst = BootedSwtpm();  // its own TPM: this test changes PCRs
  ASSERT_TRUE(inst.ok()) << inst.status().ToString();
  TrustCa(**inst);
  EnrollAndActivate(**inst);
  auto tpm = Tpm::Open((*inst)->tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  attest::TpmClaims t = Quote(**tpm, claims);
  Bytes digest(32, 0x5a);
  ASSERT_TRUE((*tpm)->PcrExtend(4, attest::kTpmAlgSha256, digest).ok());
  auto sel = attest::PcrSelection::Parse("sha256:0-15");
  auto after = (*tpm)->PcrRead(*sel);
  ASSERT_TRUE(after.ok());
  t.pcrs = *after;  // what a PCR_Read after the quote reports
  ExpectDeniedAt(Submit(Sign(claims, t)), "tpm.pcr_digest", "");
  // The extend is now in the TPM but not in the log: an honest quote of it
  // fails the replay.
  report::ReportClaims next = Claims(Nonce());
  ExpectDeniedAt(Submit(Sign(next, Quote(**tpm, next))), "tpm.replay", "PCR 4");
}

TEST_F(TpmFlowTest, EventLogEditedByOneByteIsDeniedAtReplay) {
  EnrollAndActivate(*tpm_a_);
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  attest::TpmClaims t = Quote(**tpm, claims);
  auto log = attest::ParseEventLog(t.eventlog);
  ASSERT_TRUE(log.ok());
  // Flip one byte of the sha256 digest of the first boot application
  // (PCR 4): the record still parses, the replay no longer matches.
  const attest::TcgEvent* app = nullptr;
  for (const auto& e : log->events) {
    if (e.type == attest::kEvEfiBootServicesApplication) {
      app = &e;
      break;
    }
  }
  ASSERT_NE(app, nullptr);
  // pcr u32, type u32, count u32, alg u16, then the first digest.
  size_t at = app->offset + 4 + 4 + 4 + 2;
  t.eventlog[at] ^= 0x01;
  ExpectDeniedAt(Submit(Sign(claims, t)), "tpm.replay", "PCR 4");
}

TEST_F(TpmFlowTest, DeletedEventIsDeniedAtReplay) {
  EnrollAndActivate(*tpm_a_);
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  attest::TpmClaims t = Quote(**tpm, claims);
  auto log = attest::ParseEventLog(t.eventlog);
  ASSERT_TRUE(log.ok());
  // Delete the kernel command line event (PCR 8): a verifier that
  // trusted the log would never see that command line.
  size_t index = 0;
  for (const auto& e : log->events) {
    if (e.pcr == 8) {
      index = e.index;
      break;
    }
  }
  ASSERT_GT(index, 0u);
  size_t begin = log->events[index].offset;
  size_t end = index + 1 < log->events.size() ? log->events[index + 1].offset : t.eventlog.size();
  t.eventlog.erase(t.eventlog.begin() + static_cast<std::ptrdiff_t>(begin),
                   t.eventlog.begin() + static_cast<std::ptrdiff_t>(end));
  ExpectDeniedAt(Submit(Sign(claims, t)), "tpm.replay", "PCR 8");
}

TEST_F(TpmFlowTest, MalformedTpmClaimsAre400AndTheNonceStaysUsable) {
  EnrollAndActivate(*tpm_a_);
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  report::ReportClaims claims = Claims(Nonce());
  attest::TpmClaims t = Quote(**tpm, claims);
  report::ReportClaims bad = claims;
  bad.tpm = attest::TpmClaimsJson(t);
  (*bad.tpm)["pcrs"]["sha256"]["24"] = std::string(64, '0');
  auto signed_bad = report::SignReport(bad, *signer_, node_);
  ASSERT_TRUE(signed_bad.ok());
  auto refused = svc_->SubmitReport(*signed_bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("tpm.pcrs.sha256"));
  // Refused before the nonce was spent: the honest report still lands.
  EXPECT_EQ(Submit(Sign(claims, t)).decision, "admit");
}

TEST_F(TpmFlowTest, BoundNodeWithoutAQuoteIsDeniedAtAkBound) {
  EnrollAndActivate(*tpm_a_);
  report::ReportClaims claims = Claims(Nonce());
  auto jws = report::SignReport(claims, *signer_, node_);
  ASSERT_TRUE(jws.ok());
  ExpectDeniedAt(Submit(*jws), "tpm.ak_bound", "carries no quote");
}

TEST_F(TpmFlowTest, EnrollmentChecksTheEkCertificateAndTheCredential) {
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  nlohmann::json member = TpmMember(**tpm);
  // The EK certificate of another TPM: refused, nothing stored.
  {
    auto other = Tpm::Open(OtherTpm().tcti());
    ASSERT_TRUE(other.ok());
    nlohmann::json bad = member;
    bad["ek_cert_b64"] = TpmMember(**other)["ek_cert_b64"];
    auto r = svc_->Enroll(EnrollBody(bad), std::string(kToken));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(r.status().message(), HasSubstr("does not match the EK"));
    EXPECT_EQ(svc_->store().GetNode(node_).status().code(), StatusCode::kNotFound);
  }
  // No certificate: refused under the shipped policy.
  {
    nlohmann::json bad = member;
    bad.erase("ek_cert_b64");
    auto r = svc_->Enroll(EnrollBody(bad), std::string(kToken));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
    EXPECT_THAT(r.status().message(), HasSubstr("allow_uncertified_ek"));
  }
  // A wrong credential leaves the binding pending; the right one activates.
  auto r = svc_->Enroll(EnrollBody(member), std::string(kToken));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->tpm_challenge.has_value());
  auto wrong = svc_->ActivateTpm(
      node_, nlohmann::json{{"credential_b64", Base64Encode(Bytes(32, 7))}}.dump());
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(svc_->store().GetTpmBinding(node_)->state, verifier::TpmBindingState::kPending);
  // While pending, a report is denied at tpm.ak_bound.
  report::ReportClaims claims = Claims(Nonce());
  ExpectDeniedAt(Submit(Sign(claims, Quote(**tpm, claims))), "tpm.ak_bound", "pending");
  auto credential = (*tpm)->ActivateCredential(
      EkType::kRsa2048, *Base64Decode(r->tpm_challenge->credential_blob_b64),
      *Base64Decode(r->tpm_challenge->encrypted_secret_b64));
  ASSERT_TRUE(credential.ok()) << credential.status().ToString();
  auto ok = svc_->ActivateTpm(
      node_, nlohmann::json{{"credential_b64", Base64Encode(*credential)}}.dump());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  // The same EK cannot be bound to a second node.
  node_ = "bf3-ftpm-clone";
  auto clone = svc_->Enroll(EnrollBody(member), std::string(kToken));
  ASSERT_FALSE(clone.ok());
  EXPECT_EQ(clone.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(clone.status().message(), "this TPM is bound to node \"bf3-ftpm\".");
  // The refused request stored nothing: node and binding are one write.
  auto clone_node = svc_->store().GetNode("bf3-ftpm-clone");
  EXPECT_EQ(clone_node.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(clone_node.status().message(), "node \"bf3-ftpm-clone\" is not enrolled.");
  EXPECT_EQ(svc_->store().GetTpmBinding("bf3-ftpm-clone").status().code(),
            StatusCode::kNotFound);
}

// Without the bootstrap token, nobody may touch the TPM binding of a node
// that exists (its public JWK is public): found by the request_bodies fuzz
// target (regressions/request_bodies/unauthenticated-enroll-binds-tpm-to-
// approved-node), where an outsider bound their own TPM to an approved node.
TEST_F(TpmFlowTest, EnrollmentWithoutTheTokenCannotRebindAnExistingNode) {
  nlohmann::json member_a, member_b;
  {
    auto other = Tpm::Open(OtherTpm().tcti());
    ASSERT_TRUE(other.ok());
    member_b = TpmMember(**other);
  }
  // An approved node without a TPM: adding one needs the token.
  node_ = "plain-node";
  ASSERT_TRUE(svc_->Enroll(EnrollBody(nlohmann::json()), std::string(kToken)).ok());
  auto add = svc_->Enroll(EnrollBody(member_b), std::nullopt);
  ASSERT_FALSE(add.ok());
  EXPECT_EQ(add.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(add.status().message(), HasSubstr("adding a TPM to it needs the bootstrap token"));
  EXPECT_EQ(svc_->store().GetTpmBinding("plain-node").status().code(), StatusCode::kNotFound);
  // A node bound to TPM A (active): TPM B is refused, A's binding unchanged.
  node_ = "bf3-ftpm";
  EnrollAndActivate(*tpm_a_);
  auto before = svc_->store().GetTpmBinding(node_);
  ASSERT_TRUE(before.ok());
  auto rebind = svc_->Enroll(EnrollBody(member_b), std::nullopt);
  ASSERT_FALSE(rebind.ok());
  EXPECT_EQ(rebind.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(rebind.status().message(), HasSubstr("bound to another TPM"));
  auto tpm = Tpm::Open(tpm_a_->tcti());
  ASSERT_TRUE(tpm.ok());
  member_a = TpmMember(**tpm);
  // The same TPM again: answered with the active state, no new challenge.
  auto same = svc_->Enroll(EnrollBody(member_a), std::nullopt);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->tpm_state, "active");
  EXPECT_FALSE(same->tpm_challenge.has_value());
  auto after = svc_->store().GetTpmBinding(node_);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->state, verifier::TpmBindingState::kActive);
  EXPECT_EQ(after->ak_name_hex, before->ak_name_hex);
  EXPECT_EQ(after->ek_sha256, before->ek_sha256);
  // And the node still attests on its quote.
  report::ReportClaims claims = Claims(Nonce());
  Outcome o = Submit(Sign(claims, Quote(**tpm, claims)));
  EXPECT_EQ(o.decision, "admit");
  EXPECT_EQ(o.rules["tpm.ak_bound"].verdict, Verdict::kPass);
}

// The binaries: enroll with credential activation, a hardware-quoted
// report, and tpm2_checkquote accepting the exported quote.
TEST_F(TpmFlowTest, AgentBinaryQuoteIsAdmittedAndTpm2CheckquoteAcceptsIt) {
  if (itest::Exec({"tpm2_checkquote", "--version"}).exit_code != 0) {
    GTEST_SKIP() << "tpm2_checkquote is not installed (Debian package tpm2-tools).";
  }
  auto inst = BootedSwtpm();
  ASSERT_TRUE(inst.ok()) << inst.status().ToString();
  std::string token_file = dir_ + "/token";
  ASSERT_TRUE(WriteFileAtomic(token_file, AsBytes(std::string(kToken) + "\n"), 0600).ok());
  std::string admin_file;
  std::vector<std::string> flags = itest::AdminFlags(dir_, &admin_file);
  std::string reader_file;
  for (auto& f : itest::ReaderFlags(dir_, &reader_file)) flags.push_back(f);
  flags.insert(flags.end(), {"--policy", itest::kSrc + "/policies/zero-trust.json",
                             "--bootstrap-token-file", token_file, "--ek-ca-dir",
                             (*inst)->ek_ca_dir()});
  itest::VerifierProcess verifier;
  std::string error;
  ASSERT_TRUE(verifier.Start(dir_, flags, &error)) << error;
  for (const char* manifest : {"bf3-releases.json", "bf3-ftpm.json"}) {
    itest::Proc p = itest::Exec({itest::kBin + "/dpuaudit", "refvals", "import",
                                 itest::kSrc + "/tests/fixtures/refvals/" + manifest,
                                 "--verifier", verifier.url(), "--admin-token-file",
                                 admin_file});
    ASSERT_EQ(p.exit_code, 0) << p.err;
  }
  std::vector<std::string> net = {"--verifier", verifier.url(), "--node-id", "bf3-ftpm",
                                  "--key", dir_ + "/agent.key", "--tpm", (*inst)->tcti()};
  std::vector<std::string> enroll = {itest::kBin + "/dpuaudit-agent", "enroll",
                                     "--bootstrap-token-file", token_file};
  enroll.insert(enroll.end(), net.begin(), net.end());
  itest::Proc e = itest::Exec(enroll);
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  EXPECT_THAT(e.out, HasSubstr("TPM bound: AK"));
  std::vector<std::string> attest = {itest::kBin + "/dpuaudit-agent", "attest",
                                     "--device-root", kDevice, "--report-out",
                                     dir_ + "/report.jws"};
  attest.insert(attest.end(), net.begin(), net.end());
  itest::Proc a = itest::Exec(attest);
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_THAT(a.out, HasSubstr("bf3-ftpm: admit"));
  itest::Proc x = itest::Exec({itest::kBin + "/dpuaudit", "report", "export-quote",
                               dir_ + "/report.jws", "--out", dir_ + "/quote", "--verifier",
                               verifier.url(), "--token-file", reader_file});
  ASSERT_EQ(x.exit_code, 0) << x.out << x.err;
  std::string q = dir_ + "/quote/";
  std::string qualifying = itest::ReadAll(q + "qualifying.hex");
  while (!qualifying.empty() && qualifying.back() == '\n') qualifying.pop_back();
  itest::Proc check = itest::Exec({"tpm2_checkquote", "-u", q + "ak.pub.pem", "-m",
                                   q + "quote.msg", "-s", q + "quote.sig", "-f",
                                   q + "quote.pcrs", "-g", "sha256", "-q", qualifying});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  // And it refuses the same quote with other qualifying data.
  std::string other = qualifying;
  other[0] = other[0] == '0' ? '1' : '0';
  itest::Proc refuse = itest::Exec({"tpm2_checkquote", "-u", q + "ak.pub.pem", "-m",
                                    q + "quote.msg", "-s", q + "quote.sig", "-f",
                                    q + "quote.pcrs", "-g", "sha256", "-q", other});
  EXPECT_NE(refuse.exit_code, 0);
}

}  // namespace
}  // namespace dpuaudit
