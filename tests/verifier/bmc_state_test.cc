// verifier::JudgeBmcPull, DeviceIdCertificate, the binding and baseline
// codecs and the BMC configuration parser, on chains and SPDM transcripts
// made at test time (tests/testing/x509_builder.h, spdm_responder.h).
#include "verifier/bmc_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "common/bytes.h"
#include "testing/spdm_responder.h"
#include "testing/x509_builder.h"
#include "verifier/bmc_monitor.h"

namespace dpuaudit::verifier {
namespace {

namespace t = ::dpuaudit::testing;
using ::testing::HasSubstr;

constexpr int64_t kDay = 86400;

struct Issued {
  EvpPkeyPtr key;
  X509Ptr cert;
};

class BmcStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    now_ = static_cast<int64_t>(std::time(nullptr));
    root_ = Issue("Root", 1, nullptr, true, false);
    device_ = Issue("Device", 2, &root_, true, false);  // no DICE extension
    leaf_ = Issue("Alias", 3, &device_, false, true);    // FWIDs
    anchors_ = *spdm::TrustAnchors::FromPem({t::PemOf(root_.cert.get())}, {"root.pem"});
    evidence_.base_url = "https://192.0.2.10";
    evidence_.collected_at = now_;
    evidence_.system = redfish::System{};
    evidence_.system->serial_number = "MT2334X00001";
    evidence_.targets.push_back(Target(bmc::kIrotTarget, Bytes(32, 0x11), Bytes(32, 0x11), 7));
    bmc::SpdmTargetEvidence erot;
    erot.id = bmc::kErotTarget;
    erot.status = NotFoundError("no Bluefield_ERoT under ComponentIntegrity.");
    evidence_.targets.push_back(erot);
  }

  Issued Issue(const std::string& cn, long serial, const Issued* issuer, bool ca, bool fwid) {
    Issued i;
    i.key = t::MakeEcKey("P-384");
    t::CertSpec spec{cn, ca, now_ - kDay, now_ + 365 * kDay, serial};
    if (fwid) {
      spec.extra_oid = "2.23.133.5.4.1";
      spec.extra_critical = true;
      spec.extra_value = t::FwidList384(Bytes(48, 0xAB));
    }
    i.cert = t::MakeCertificate(spec, i.key.get(), issuer ? issuer->cert.get() : nullptr,
                                issuer ? issuer->key.get() : nullptr);
    return i;
  }

  // A target whose transcript was signed over `signed_nonce`, while we
  // sent `our_nonce`; `svn` is block 3's security version (DMTF kind 7,
  // raw: value type 0x87).
  bmc::SpdmTargetEvidence Target(const char* id, Bytes our_nonce, Bytes signed_nonce,
                                 uint8_t svn) {
    t::SpdmExchange e;
    e.nonce = signed_nonce;
    e.blocks = {{1, 1, 0x01, Bytes(48, 0x01)}, {2, 1, 0x01, Bytes(48, 0x02)},
                {3, 1, 0x87, Bytes{svn, 0, 0, 0}}};
    Bytes transcript = t::SpdmTranscript(e, leaf_.key.get(), EVP_sha384(), 48);
    bmc::SpdmTargetEvidence target;
    target.id = id;
    target.chain_pem = t::PemOf(leaf_.cert.get()) + t::PemOf(device_.cert.get());
    target.evidence = {Base64Encode(transcript), "TPM_ALG_ECDSA_ECC_NIST_P384", "TPM_ALG_SHA_384",
                       "1.1.0"};
    target.nonce = our_nonce;
    return target;
  }

  BmcVerdict Judge(const std::optional<MeasurementBaseline>& baseline = std::nullopt,
                   const std::optional<BmcBinding>& binding = std::nullopt,
                   const spdm::TrustAnchors* anchors = nullptr,
                   spdm::ChainCache* cache = nullptr, int64_t at = 0) {
    JudgeBmcInput in;
    in.node_id = "n1";
    in.evidence = &evidence_;
    in.anchors = anchors != nullptr ? anchors : &*anchors_;
    in.bmc_key_sha256 = std::string(64, 'b');
    in.irot_baseline = baseline;
    in.binding = binding;
    in.chain_cache = cache;
    in.now = at != 0 ? at : now_;
    return JudgeBmcPull(in);
  }

  int64_t now_ = 0;
  Issued root_, device_, leaf_;
  std::optional<spdm::TrustAnchors> anchors_;
  bmc::BmcEvidence evidence_;
};

TEST_F(BmcStateTest, FirstSightVerifiesRecordsTheBaselineAndBindsTheDeviceId) {
  BmcVerdict v = Judge();
  const SpdmTargetVerdict* irot = v.Target("irot");
  ASSERT_NE(irot, nullptr);
  EXPECT_TRUE(irot->verified) << irot->finding.reason;
  EXPECT_TRUE(irot->first_seen);
  EXPECT_EQ(irot->finding.verdict, Verdict::kPass);
  EXPECT_THAT(irot->finding.reason, HasSubstr("trust on first use"));
  ASSERT_TRUE(irot->proposed);
  EXPECT_EQ(irot->proposed->values.size(), 3u);
  ASSERT_EQ(irot->fwids.size(), 1u);
  EXPECT_THAT(irot->fwids[0], HasSubstr("Alias: sha384:abab"));
  // The DeviceID is the device's certificate, not the alias and not the root.
  EXPECT_EQ(irot->deviceid_serial, "02");
  EXPECT_EQ(v.identity.verdict, Verdict::kPass);
  EXPECT_THAT(v.identity.reason, HasSubstr("first seen"));
  ASSERT_TRUE(v.observed);
  EXPECT_EQ(v.observed->irot_deviceid_sha256, irot->deviceid_spki_sha256);
  EXPECT_EQ(v.observed->serial, "MT2334X00001");
  EXPECT_EQ(v.observed->bmc_key_sha256, std::string(64, 'b'));
  // A missing ERoT is unknown with the BMC's reason, never a pass.
  const SpdmTargetVerdict* erot = v.Target("erot");
  ASSERT_NE(erot, nullptr);
  EXPECT_EQ(erot->finding.verdict, Verdict::kUnknown);
  EXPECT_THAT(erot->finding.reason, HasSubstr("no Bluefield_ERoT"));
  EXPECT_FALSE(erot->contraindicated);
}

TEST_F(BmcStateTest, TheSameDeviceAndBaselinePass) {
  BmcVerdict first = Judge();
  BmcVerdict again = Judge(first.Target("irot")->proposed, first.observed);
  EXPECT_EQ(again.Target("irot")->finding.observed, "baseline");
  EXPECT_FALSE(again.Target("irot")->first_seen);
  EXPECT_EQ(again.identity.verdict, Verdict::kPass);
  EXPECT_FALSE(again.identity_contraindicated);
}

TEST_F(BmcStateTest, AnotherDeviceOrSerialIsContraindicatedNamingBoth) {
  BmcVerdict first = Judge();
  BmcBinding bound = *first.observed;
  bound.irot_deviceid_sha256 = std::string(64, 'e');
  BmcVerdict v = Judge(first.Target("irot")->proposed, bound);
  EXPECT_EQ(v.identity.verdict, Verdict::kFail);
  EXPECT_TRUE(v.identity_contraindicated);
  EXPECT_THAT(v.identity.reason, HasSubstr("bound to DeviceID key eeeeeeeeeeeeeeee"));
  EXPECT_THAT(v.identity.reason,
              HasSubstr("observed DeviceID key " + first.observed->irot_deviceid_sha256.substr(0, 16)));
  bound = *first.observed;
  bound.serial = "MT0000000000";
  EXPECT_TRUE(Judge(first.Target("irot")->proposed, bound).identity_contraindicated);
}

TEST_F(BmcStateTest, AChangeIsAWarningAndALowerSecurityVersionARollback) {
  BmcVerdict first = Judge();
  MeasurementBaseline changed = *first.Target("irot")->proposed;
  changed.values[1] = "01:" + std::string(96, 'f');
  BmcVerdict v = Judge(changed, first.observed);
  EXPECT_EQ(v.Target("irot")->finding.observed, "changed");
  EXPECT_FALSE(v.Target("irot")->contraindicated);
  // The baseline had security version 9; the device now signs 7.
  MeasurementBaseline higher = *first.Target("irot")->proposed;
  higher.values[3] = "87:09000000";
  v = Judge(higher, first.observed);
  EXPECT_EQ(v.Target("irot")->finding.observed, "rollback");
  EXPECT_TRUE(v.Target("irot")->contraindicated);
}

TEST_F(BmcStateTest, ReplayedOrUnanchoredEvidenceIsUnverifiedAndContraindicated) {
  evidence_.targets[0] = Target(bmc::kIrotTarget, Bytes(32, 0x22), Bytes(32, 0x11), 7);
  BmcVerdict v = Judge();
  EXPECT_EQ(v.Target("irot")->finding.observed, "unverified");
  EXPECT_TRUE(v.Target("irot")->contraindicated);
  EXPECT_THAT(v.Target("irot")->finding.reason, HasSubstr("is not ours"));
  EXPECT_EQ(v.identity.verdict, Verdict::kUnknown);
  EXPECT_FALSE(v.observed);

  SetUp();  // fresh evidence, anchored elsewhere
  Issued other = Issue("Other Root", 9, nullptr, true, false);
  auto foreign = *spdm::TrustAnchors::FromPem({t::PemOf(other.cert.get())}, {"other.pem"});
  v = Judge(std::nullopt, std::nullopt, &foreign);
  EXPECT_EQ(v.Target("irot")->finding.observed, "unverified");
  EXPECT_TRUE(v.Target("irot")->contraindicated);
}

TEST_F(BmcStateTest, ACachedChainIsNotValidatedAgainButItsDatesAre) {
  spdm::ChainCache cache;
  BmcVerdict first = Judge(std::nullopt, std::nullopt, nullptr, &cache);
  ASSERT_TRUE(first.Target("irot")->verified);
  EXPECT_EQ(cache.size(), 1u);
  BmcVerdict again = Judge(first.Target("irot")->proposed, first.observed, nullptr, &cache);
  EXPECT_TRUE(again.Target("irot")->verified);
  EXPECT_EQ(again.Target("irot")->deviceid_serial, "02");
  EXPECT_EQ(again.identity.verdict, Verdict::kPass);
  EXPECT_EQ(cache.size(), 1u);
  // Two years on, every certificate has expired: the cached chain fails too.
  BmcVerdict later = Judge(first.Target("irot")->proposed, first.observed, nullptr, &cache,
                           now_ + 2 * 365 * kDay);
  EXPECT_EQ(later.Target("irot")->finding.observed, "unverified");
  EXPECT_THAT(later.Target("irot")->finding.reason, HasSubstr("certificate has expired"));
  // A forged transcript under a cached chain is still refused.
  evidence_.targets[0] = Target(bmc::kIrotTarget, Bytes(32, 0x22), Bytes(32, 0x11), 7);
  BmcVerdict replay = Judge(std::nullopt, std::nullopt, nullptr, &cache);
  EXPECT_EQ(replay.Target("irot")->finding.observed, "unverified");
}

TEST_F(BmcStateTest, WithoutTrustAnchorsNothingIsVerifiedAndNothingIsAPass) {
  spdm::TrustAnchors none;
  BmcVerdict v = Judge(std::nullopt, std::nullopt, &none);
  EXPECT_EQ(v.Target("irot")->finding.verdict, Verdict::kUnknown);
  EXPECT_THAT(v.Target("irot")->finding.reason, HasSubstr("no DICE trust anchors"));
  EXPECT_EQ(v.identity.verdict, Verdict::kUnknown);
}

TEST_F(BmcStateTest, DeviceIdOfAChainWhoseLayersAllCarryFwidsIsTheOneNearestTheRoot) {
  Issued device = Issue("Device L0", 5, &root_, true, true);
  Issued alias = Issue("Alias L1", 6, &device, false, true);
  auto chain = spdm::ValidateChain(t::PemOf(alias.cert.get()) + t::PemOf(device.cert.get()) +
                                       t::PemOf(root_.cert.get()),
                                   *anchors_, now_);
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_EQ(DeviceIdCertificate(*chain).serial_hex, "05");
}

TEST(BmcRecordCodecTest, BindingAndBaselineRoundTripAndRefuseJunk) {
  BmcBinding b{"https://192.0.2.10", std::string(64, 'a'), std::string(64, 'd'), "02",
               std::string(64, 'r'), "MT2334X00001"};
  auto parsed = ParseBmcBinding(BmcBindingJson(b));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, b);
  EXPECT_FALSE(ParseBmcBinding(R"({"bmc_url":"x"})").ok());
  EXPECT_FALSE(ParseBmcBinding(BmcBindingJson(b).substr(1)).ok());

  MeasurementBaseline m;
  m.values = {{1, "01:ab"}, {254, "07:09000000"}};
  auto back = ParseBaseline(BaselineJson(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, m);
  EXPECT_EQ(ParseBaseline(R"({"0":"01:ab"})").status().message(),
            "SPDM baseline index \"0\" is not 1-254.");
  EXPECT_FALSE(ParseBaseline(R"({"1":1})").ok());
  EXPECT_FALSE(ParseBaseline(R"({"x1":"a"})").ok());
  EXPECT_FALSE(ParseBaseline("[]").ok());
}

TEST(BmcConfigTest, ParsesAndResolvesRelativePaths) {
  auto c = ParseBmcConfig(R"({"schema": "dpuaudit-bmc-config/1",
      "trust_anchors": ["dice/root.pem", "/etc/abs.pem"], "interval_seconds": 60,
      "nodes": {"n1": {"url": "https://192.0.2.10", "pin_sha256": ")" +
                              std::string(64, 'a') + R"(",
                       "auth": "basic", "credentials_file": "bmc/n1.json"},
                "n2": {"url": "https://bmc2.example", "ca_file": "ca.pem",
                       "credentials_file": "/etc/n2.json", "timeout_ms": 2000}}})",
                          "/etc/dpuaudit");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->trust_anchor_files[0], "/etc/dpuaudit/dice/root.pem");
  EXPECT_EQ(c->trust_anchor_files[1], "/etc/abs.pem");
  EXPECT_EQ(c->interval_seconds, 60);
  EXPECT_EQ(c->max_age_seconds, 180);
  EXPECT_EQ(c->min_repull_seconds, 30);
  EXPECT_EQ(c->pull_deadline_ms, 60000);
  EXPECT_EQ(c->nodes["n1"].endpoint.auth, bmc::BmcAuth::kBasic);
  EXPECT_EQ(c->nodes["n1"].credentials_file, "/etc/dpuaudit/bmc/n1.json");
  EXPECT_EQ(c->nodes["n2"].endpoint.auth, bmc::BmcAuth::kSession);
  EXPECT_EQ(c->nodes["n2"].endpoint.ca_file, "/etc/dpuaudit/ca.pem");
  EXPECT_EQ(c->nodes["n2"].endpoint.timeout.count(), 2000);
}

TEST(BmcConfigTest, RefusesWithTheFieldNamed) {
  auto node = [](const std::string& members) {
    return R"({"schema": "dpuaudit-bmc-config/1", "trust_anchors": [], "nodes": {"n1": {)" +
           members + "}}}";
  };
  const std::string pin = R"("pin_sha256": ")" + std::string(64, 'a') + R"(", )";
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {R"({"schema": "x", "trust_anchors": [], "nodes": {}})", "schema must be"},
      {R"({"schema": "dpuaudit-bmc-config/1", "trust_anchors": [], "nodes": {}, "extra": 1})",
       "extra"},
      {node(pin + R"("url": "http://192.0.2.1", "credentials_file": "c")"), "https://"},
      {node(R"("url": "https://h", "credentials_file": "c")"), "exactly one of pin_sha256"},
      {node(pin + R"("ca_file": "ca.pem", "url": "https://h", "credentials_file": "c")"),
       "exactly one of pin_sha256"},
      {node(R"("pin_sha256": "ABC", "url": "https://h", "credentials_file": "c")"),
       "64 lower-case hex"},
      {node(pin + R"("url": "https://h", "credentials_file": "c", "auth": "digest")"),
       "\"session\" or \"basic\""},
      {node(pin + R"("url": "https://h", "credentials_file": "c", "timeout_ms": 5)"),
       "outside [100, 120000]"},
      {node(pin + R"("url": "https://h")"), "credentials_file"},
      {R"({"schema": "dpuaudit-bmc-config/1", "trust_anchors": [], "interval_seconds": 1,
           "nodes": {}})",
       "interval_seconds 1 is outside [5, 86400]"},
  };
  for (const Case& c : cases) {
    auto r = ParseBmcConfig(c.text, "/etc");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.text;
  }
}

}  // namespace
}  // namespace dpuaudit::verifier
