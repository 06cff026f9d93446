#include "spdm/dice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "testing/shared_redfish_fixtures.h"
#include "testing/spdm_responder.h"
#include "testing/status_matchers.h"

namespace dpuaudit::spdm {
namespace {

using ::dpuaudit::testing::ReadSharedRedfish;
using ::dpuaudit::testing::ReadSharedRedfishJson;
using ::dpuaudit::testing::StatusCodeIs;
using ::dpuaudit::testing::StatusHas;

constexpr char kGb200Erot[] =
    "nvidia_gb200/redfish/v1/Chassis/ERoT_BMC_0/Certificates/CertChain/index.json";
constexpr char kGb200Gpu[] =
    "nvidia_gb200/redfish/v1/Chassis/HGX_IRoT_GPU_0/Certificates/CertChain/index.json";
constexpr char kNvidiaRootSpki[] =
    "a90c4eb5acfd3e3d03a25db6a26b84f720ad0503196c627c21ddd48dd85b06a4";

// The last certificate of a leaf-first PEM chain.
std::string LastPem(const std::string& chain) {
  const size_t at = chain.rfind("-----BEGIN CERTIFICATE-----");
  return chain.substr(at);
}

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

TEST(DiceRealChainTest, EveryPublishedNvidiaChainValidatesToTheDeviceIdentityKey) {
  SHARED_REDFISH_JSON_OR_SKIP(expected, "expected.json");
  SHARED_REDFISH_JSON_OR_SKIP(erot, kGb200Erot);
  // The anchor is the ERoT chains' root (serial 3AAF87DB...). The GB100
  // chains end at another certificate with the same key (serial 2D3670B1...):
  // matched by key, they validate too.
  auto anchors = TrustAnchors::FromPem({LastPem(erot["CertificateString"])}, {"root"});
  ASSERT_TRUE(anchors.ok()) << anchors.status().ToString();
  ASSERT_EQ(anchors->SpkiHashes(), std::vector<std::string>{kNvidiaRootSpki});
  int validated = 0;
  for (const auto& [path, want] : expected["certchains"].items()) {
    if (!want.contains("certificates") || !want.value("all_signatures_verify", false)) {
      continue;
    }
    auto doc = ReadSharedRedfishJson(path);
    ASSERT_TRUE(doc.has_value()) << path;
    auto chain = ValidateChain((*doc)["CertificateString"].get<std::string>(),
                               *anchors, Now());
    ASSERT_TRUE(chain.ok()) << path << ": " << chain.status().ToString();
    EXPECT_EQ(chain->certificates().size(), want["certificates"].get<size_t>()) << path;
    EXPECT_EQ(chain->was_root_first(), want["order"] == "root-first") << path;
    EXPECT_EQ(chain->anchor_spki_sha256(), kNvidiaRootSpki) << path;
    EXPECT_THAT(chain->certificates().front().subject,
                ::testing::HasSubstr("CN=" + want["leaf_cn"].get<std::string>()))
        << path;
    EXPECT_EQ(chain->leaf_key().curve(), "P-384");
    ++validated;
  }
  EXPECT_EQ(validated, 16);  // the 18 published chains but IRoT_CX7_0 (no certificate) and an error body
}

TEST(DiceRealChainTest, GpuLeafCarriesTcbInfoAndErotLeafTheFwidDraftForm) {
  SHARED_REDFISH_JSON_OR_SKIP(erot, kGb200Erot);
  SHARED_REDFISH_JSON_OR_SKIP(gpu, kGb200Gpu);
  auto anchors = TrustAnchors::FromPem({LastPem(erot["CertificateString"])}, {"root"});
  ASSERT_TRUE(anchors.ok());
  auto g = ValidateChain(gpu["CertificateString"].get<std::string>(), *anchors, Now());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const auto& leaf_dice = g->certificates().front().dice;
  ASSERT_EQ(leaf_dice.size(), 1u);
  EXPECT_EQ(leaf_dice[0].oid, "2.23.133.5.4.1.1");
  EXPECT_EQ(leaf_dice[0].reading, "tcb_info");
  EXPECT_EQ(leaf_dice[0].vendor, "NVIDIA");
  EXPECT_EQ(leaf_dice[0].model, "GB100 A01 FSP");
  EXPECT_EQ(leaf_dice[0].svn, 3);
  EXPECT_EQ(leaf_dice[0].layer, 0);
  ASSERT_EQ(leaf_dice[0].fwids.size(), 2u);
  EXPECT_EQ(leaf_dice[0].fwids[0].hash_alg, "sha384");
  EXPECT_EQ(leaf_dice[0].fwids[0].digest.size(), 48u);
  auto e = ValidateChain(erot["CertificateString"].get<std::string>(), *anchors, Now());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const auto& erot_dice = e->certificates().front().dice;
  ASSERT_EQ(erot_dice.size(), 1u);
  EXPECT_EQ(erot_dice[0].oid, "2.23.133.5.4.1");
  EXPECT_EQ(erot_dice[0].reading, "fwid_draft");
  ASSERT_EQ(erot_dice[0].fwids.size(), 1u);
  EXPECT_EQ(erot_dice[0].fwids[0].hash_alg, "sha384");
  EXPECT_EQ(HexEncode(erot_dice[0].fwids[0].digest).substr(0, 16), "44e2122305eeb0ee");
}

TEST(DiceRealChainTest, TruncatedLeafOfTheTestSupportChainIsRefused) {
  SHARED_REDFISH_JSON_OR_SKIP(erot, kGb200Erot);
  auto text = ReadSharedRedfish("spdm/bmm-test-support-certchain.json");
  if (!text) GTEST_SKIP() << "spdm/bmm-test-support-certchain.json is absent";
  auto doc = nlohmann::json::parse(*text);
  auto anchors = TrustAnchors::FromPem({LastPem(erot["CertificateString"])}, {"root"});
  ASSERT_TRUE(anchors.ok());
  EXPECT_THAT(ValidateChain(doc["CertificateString"].get<std::string>(), *anchors, Now())
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, "certificate 0 does not parse"));
}

TEST(DiceRealChainTest, BeforeItsValidityTheRealChainFailsPathValidation) {
  SHARED_REDFISH_JSON_OR_SKIP(erot, kGb200Erot);
  auto anchors = TrustAnchors::FromPem({LastPem(erot["CertificateString"])}, {"root"});
  ASSERT_TRUE(anchors.ok());
  EXPECT_THAT(ValidateChain(erot["CertificateString"].get<std::string>(), *anchors,
                            946684800 /* 2000-01-01 */)
                  .status(),
              StatusHas(StatusCode::kUnauthenticated, "certificate is not yet valid"));
}

// ---- chains made at test time ----

struct Issued {
  EvpPkeyPtr key;
  X509Ptr cert;
};

Issued Issue(const std::string& cn, const Issued* issuer, bool ca, int64_t not_before,
             int64_t not_after, const char* extra_ext_oid = nullptr,
             bool extra_critical = false, Bytes extra_value = {}) {
  Issued out;
  out.key = testing::MakeEcKey("P-384");
  out.cert.reset(X509_new());
  X509* c = out.cert.get();
  X509_set_version(c, 2);
  static long serial = 100;
  ASN1_INTEGER_set(X509_get_serialNumber(c), ++serial);
  ASN1_TIME_set(X509_getm_notBefore(c), static_cast<time_t>(not_before));
  ASN1_TIME_set(X509_getm_notAfter(c), static_cast<time_t>(not_after));
  X509_set_pubkey(c, out.key.get());
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer->cert.get()) : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer ? issuer->cert.get() : c, c, nullptr, nullptr, 0);
  auto add = [&](int nid, const char* value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
    X509_add_ext(c, ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  add(NID_key_usage, ca ? "critical,keyCertSign" : "critical,digitalSignature");
  if (extra_ext_oid != nullptr) {
    OsslPtr<ASN1_OBJECT, ASN1_OBJECT_free> obj(OBJ_txt2obj(extra_ext_oid, 1));
    OsslPtr<ASN1_OCTET_STRING, ASN1_OCTET_STRING_free> data(ASN1_OCTET_STRING_new());
    ASN1_OCTET_STRING_set(data.get(), extra_value.data(), static_cast<int>(extra_value.size()));
    X509_EXTENSION* ext =
        X509_EXTENSION_create_by_OBJ(nullptr, obj.get(), extra_critical ? 1 : 0, data.get());
    X509_add_ext(c, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(c, issuer ? issuer->key.get() : out.key.get(), EVP_sha384());
  return out;
}

std::string Pem(X509* c) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), c);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// An FWID-list extension value: SEQUENCE { SEQUENCE { sha384 OID, OCTET[48] } }.
Bytes FwidListDer(uint8_t fill) {
  Bytes fwid = {0x30, 0x3d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65,
                0x03, 0x04, 0x02, 0x02, 0x04, 0x30};
  for (int i = 0; i < 48; ++i) fwid.push_back(fill);
  Bytes out = {0x30, static_cast<uint8_t>(fwid.size())};
  out.insert(out.end(), fwid.begin(), fwid.end());
  return out;
}

constexpr int64_t kDay = 86400;

class DiceChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    now_ = Now();
    root_ = Issue("Test Root", nullptr, true, now_ - kDay, now_ + 365 * kDay);
    ca_ = Issue("Test CA", &root_, true, now_ - kDay, now_ + 365 * kDay);
    leaf_ = Issue("Test Leaf", &ca_, false, now_ - kDay, now_ + 365 * kDay,
                  "2.23.133.5.4.1", true, FwidListDer(0xAB));
    anchors_ = *TrustAnchors::FromPem({Pem(root_.cert.get())}, {"root.pem"});
  }
  int64_t now_ = 0;
  Issued root_, ca_, leaf_;
  std::optional<TrustAnchors> anchors_;
};

TEST_F(DiceChainTest, LeafFirstAndRootFirstBothValidate) {
  const std::string lf = Pem(leaf_.cert.get()) + Pem(ca_.cert.get()) + Pem(root_.cert.get());
  auto a = ValidateChain(lf, *anchors_, now_);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(a->was_root_first());
  ASSERT_EQ(a->certificates().size(), 3u);
  // The critical DICE extension is read, not refused.
  ASSERT_EQ(a->certificates()[0].dice.size(), 1u);
  EXPECT_EQ(a->certificates()[0].dice[0].reading, "fwid_list");
  EXPECT_EQ(a->certificates()[0].dice[0].fwids[0].digest, Bytes(48, 0xAB));
  const std::string rf = Pem(root_.cert.get()) + Pem(ca_.cert.get()) + Pem(leaf_.cert.get());
  auto b = ValidateChain(rf, *anchors_, now_);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->was_root_first());
  EXPECT_EQ(b->certificates()[0].subject, "CN=Test Leaf");
  // Without the root in the chain: issued by an anchor.
  auto c = ValidateChain(Pem(leaf_.cert.get()) + Pem(ca_.cert.get()), *anchors_, now_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
}

TEST_F(DiceChainTest, AChainToAnUnknownRootIsUnauthenticated) {
  Issued other = Issue("Test Root", nullptr, true, now_ - kDay, now_ + kDay);
  auto anchors = TrustAnchors::FromPem({Pem(other.cert.get())}, {"other.pem"});
  const std::string lf = Pem(leaf_.cert.get()) + Pem(ca_.cert.get()) + Pem(root_.cert.get());
  EXPECT_THAT(ValidateChain(lf, *anchors, now_).status(),
              StatusHas(StatusCode::kUnauthenticated, "which no trust anchor's key matches"));
}

TEST_F(DiceChainTest, AnExpiredIntermediateFailsPathValidation) {
  Issued old_ca = Issue("Test CA", &root_, true, now_ - 10 * kDay, now_ - kDay);
  Issued leaf = Issue("Test Leaf", &old_ca, false, now_ - kDay, now_ + kDay);
  const std::string lf =
      Pem(leaf.cert.get()) + Pem(old_ca.cert.get()) + Pem(root_.cert.get());
  EXPECT_THAT(ValidateChain(lf, *anchors_, now_).status(),
              StatusHas(StatusCode::kUnauthenticated, "certificate has expired"));
}

TEST_F(DiceChainTest, ALeafThatIsNotACaCannotIssue) {
  Issued below = Issue("Below Leaf", &leaf_, false, now_ - kDay, now_ + kDay);
  const std::string lf = Pem(below.cert.get()) + Pem(leaf_.cert.get()) +
                         Pem(ca_.cert.get()) + Pem(root_.cert.get());
  EXPECT_THAT(ValidateChain(lf, *anchors_, now_).status(),
              StatusCodeIs(StatusCode::kUnauthenticated));
}

TEST_F(DiceChainTest, AnUnknownCriticalExtensionIsRefused) {
  Issued leaf = Issue("Test Leaf", &ca_, false, now_ - kDay, now_ + kDay,
                      "1.2.3.4.5", true, Bytes{0x05, 0x00});
  const std::string lf = Pem(leaf.cert.get()) + Pem(ca_.cert.get()) + Pem(root_.cert.get());
  EXPECT_THAT(ValidateChain(lf, *anchors_, now_).status(),
              StatusHas(StatusCode::kUnauthenticated, "unhandled critical extension"));
}

TEST_F(DiceChainTest, OutOfOrderAndForgedChainsAreRefused) {
  const std::string shuffled =
      Pem(ca_.cert.get()) + Pem(leaf_.cert.get()) + Pem(root_.cert.get());
  EXPECT_THAT(ValidateChain(shuffled, *anchors_, now_).status(),
              StatusHas(StatusCode::kInvalidArgument, "is not in order"));
  // Same names, another key: the signature check fails.
  Issued fake_ca = Issue("Test CA", nullptr, true, now_ - kDay, now_ + kDay);
  X509_set_issuer_name(fake_ca.cert.get(), X509_get_subject_name(root_.cert.get()));
  X509_sign(fake_ca.cert.get(), fake_ca.key.get(), EVP_sha384());
  Issued leaf = Issue("Test Leaf", &fake_ca, false, now_ - kDay, now_ + kDay);
  const std::string forged =
      Pem(leaf.cert.get()) + Pem(fake_ca.cert.get()) + Pem(root_.cert.get());
  EXPECT_THAT(ValidateChain(forged, *anchors_, now_).status(),
              StatusHas(StatusCode::kUnauthenticated, "signature failure"));
}

TEST_F(DiceChainTest, NotAChain) {
  EXPECT_THAT(ValidateChain("hello", *anchors_, now_).status(),
              StatusHas(StatusCode::kInvalidArgument, "holds no certificate"));
  std::string many;
  for (int i = 0; i < 11; ++i) many += Pem(root_.cert.get());
  EXPECT_THAT(ValidateChain(many, *anchors_, now_).status(),
              StatusHas(StatusCode::kInvalidArgument, "more than 10 certificates"));
  EXPECT_THAT(ValidateChain(std::string(kMaxChainPemBytes + 1, 'x'), *anchors_, now_)
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, "exceeds"));
}

TEST(DiceExtensionTest, ReadingsAndMalformedValues) {
  // MultiTcbInfo: SEQUENCE OF DiceTcbInfo, one entry with [0] "V" and [3] 7.
  const Bytes multi = {0x30, 0x08, 0x30, 0x06, 0x80, 0x01, 'V', 0x83, 0x01, 0x07};
  auto m = ParseDiceExtensionValue("2.23.133.5.4.5", multi);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ((*m)[0].vendor, "V");
  EXPECT_EQ((*m)[0].svn, 7);
  EXPECT_THAT(ParseDiceExtensionValue("2.23.133.5.4.1", Bytes{0x30, 0x03, 0x02, 0x01}).status(),
              StatusHas(StatusCode::kInvalidArgument, "DICE extension 2.23.133.5.4.1"));
  EXPECT_THAT(ParseDiceExtensionValue("2.23.133.5.4.1", Bytes{0x04, 0x00}).status(),
              StatusHas(StatusCode::kInvalidArgument, "expected SEQUENCE"));
  // Tags out of order.
  EXPECT_THAT(ParseDiceExtensionValue("2.23.133.5.4.1",
                                      Bytes{0x30, 0x06, 0x83, 0x01, 0x07, 0x80, 0x01, 'V'})
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, "ascending order"));
  // A negative svn.
  EXPECT_THAT(ParseDiceExtensionValue("2.23.133.5.4.1", Bytes{0x30, 0x03, 0x83, 0x01, 0x80})
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, "svn is negative"));
}

}  // namespace
}  // namespace dpuaudit::spdm
