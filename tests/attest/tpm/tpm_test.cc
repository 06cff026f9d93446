// The ESAPI TPM layer against a real swtpm (tests/tpm/swtpm_harness.h), and
// interop with tpm2-tools 5.x: tpm2_checkquote, tpm2_makecredential,
// tpm2_activatecredential. Every test skips, with the reason, when swtpm (or
// the tpm2-tools it needs) is not installed.
#include "attest/tpm/tpm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "attest/credential.h"
#include "attest/eventlog.h"
#include "attest/quote.h"
#include "attest/replay.h"
#include "attest/tpm/simulate.h"
#include "attest/tpm_structs.h"
#include "attest/tpm_types.h"
#include "common/bytes.h"
#include "common/files.h"
#include "device/device_source.h"
#include "testing/temp_dir.h"
#include "attest/tpm/swtpm_harness.h"

namespace dpuaudit::attest::tpm {
namespace {

using ::dpuaudit::testing::SwtpmInstance;
using ::dpuaudit::testing::SwtpmMissingTools;
using ::dpuaudit::testing::SwtpmOptions;
using ::dpuaudit::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// PolicySecret(TPM_RH_ENDORSEMENT), EK Credential Profile 2.0 §B.3.2.
constexpr char kEkPolicyHex[] =
    "837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa";

// ---- helpers ---------------------------------------------------------------

struct ToolResult {
  int exit_code = -1;
  std::string out;
};

// Runs a tpm2-tools command (fixed argv, no shell), 60 s at most.
ToolResult RunTool(const std::vector<std::string>& argv) {
  auto live = device::NewLiveDeviceSource();
  device::CommandOptions o;
  o.timeout = std::chrono::milliseconds(60000);
  auto r = live->Run(argv, o);
  if (!r.ok()) return {-1, r.status().ToString()};
  return {r->exit_code, ToString(r->stdout_bytes) + ToString(r->stderr_bytes)};
}

#define ASSERT_TOOL_OK(argv)                                           \
  do {                                                                 \
    ToolResult dpa_r_ = RunTool(argv);                                 \
    ASSERT_EQ(dpa_r_.exit_code, 0) << (argv)[0] << ": " << dpa_r_.out; \
  } while (false)

// tpm2-tools programs a test needs, or a skip reason.
std::string MissingTpm2Tools(const std::vector<std::string>& tools) {
  std::string missing;
  for (const std::string& t : tools) {
    bool found = false;
    for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin"}) {
      if (::access((std::string(dir) + "/" + t).c_str(), X_OK) == 0)
        found = true;
    }
    if (!found) missing += (missing.empty() ? "" : ", ") + t;
  }
  return missing.empty()
             ? ""
             : "not installed: " + missing + " (Debian: tpm2-tools).";
}

#define SKIP_WITHOUT_TPM2_TOOLS(...)                            \
  do {                                                          \
    std::string dpa_missing_ = MissingTpm2Tools({__VA_ARGS__}); \
    if (!dpa_missing_.empty()) GTEST_SKIP() << dpa_missing_;    \
  } while (false)

void WriteBytes(const std::string& path, ByteView data) {
  Status s = WriteNewFile(path, data, 0600);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

Bytes ReadBytes(const std::string& path) {
  auto b = ReadFileLimited(path, 1 << 20);
  EXPECT_TRUE(b.ok()) << path << ": " << b.status().ToString();
  return b.ok() ? *b : Bytes{};
}

PcrSelection Select(std::map<uint16_t, std::set<uint32_t>> sel) {
  auto s = PcrSelection::Create(std::move(sel));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return *s;
}

std::set<uint32_t> Range(uint32_t first, uint32_t last) {
  std::set<uint32_t> s;
  for (uint32_t i = first; i <= last; ++i) s.insert(i);
  return s;
}

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};

std::unique_ptr<X509, X509Free> ParseDer(const Bytes& der) {
  const unsigned char* p = der.data();
  X509* x = d2i_X509(nullptr, &p, static_cast<long>(der.size()));
  if (x != nullptr && p != der.data() + der.size()) {
    X509_free(x);
    return nullptr;  // trailing bytes
  }
  return std::unique_ptr<X509, X509Free>(x);
}

// ---- one swtpm per suite ---------------------------------------------------

// Suites share one instance; tests that need fresh PCRs or NV start their
// own. All start from the build tree's template state (shared_identity):
// these tests do not need distinct TPM identities.
constexpr SwtpmOptions kShared{.ecc = false, .shared_identity = true};
constexpr SwtpmOptions kSharedEcc{.ecc = true, .shared_identity = true};
class SwtpmTest : public ::testing::Test {
 protected:
  static void StartShared(const SwtpmOptions& options,
                          std::unique_ptr<SwtpmInstance>* inst, Status* error) {
    if (!SwtpmMissingTools(options.ecc).empty()) return;
    auto s = SwtpmInstance::Start(options);
    if (s.ok()) {
      *inst = std::move(s).value();
    } else {
      *error = s.status();
    }
  }

  void SetUpFor(bool ecc, const std::unique_ptr<SwtpmInstance>& inst,
                const Status& error) {
    std::string missing = SwtpmMissingTools(ecc);
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(error.ok()) << error.ToString();
    ASSERT_NE(inst, nullptr);
    swtpm_ = inst.get();
  }

  std::unique_ptr<Tpm> Open() {
    auto t = Tpm::Open(swtpm_->tcti());
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : nullptr;
  }

  SwtpmInstance* swtpm_ = nullptr;
};

class RsaEkTest : public SwtpmTest {
 protected:
  static void SetUpTestSuite() { StartShared(kShared, &instance_, &error_); }
  static void TearDownTestSuite() { instance_.reset(); }
  void SetUp() override { SetUpFor(false, instance_, error_); }
  static std::unique_ptr<SwtpmInstance> instance_;
  static Status error_;
};
std::unique_ptr<SwtpmInstance> RsaEkTest::instance_;
Status RsaEkTest::error_;

class EccEkTest : public SwtpmTest {
 protected:
  static void SetUpTestSuite() { StartShared(kSharedEcc, &instance_, &error_); }
  static void TearDownTestSuite() { instance_.reset(); }
  void SetUp() override { SetUpFor(true, instance_, error_); }
  static std::unique_ptr<SwtpmInstance> instance_;
  static Status error_;
};
std::unique_ptr<SwtpmInstance> EccEkTest::instance_;
Status EccEkTest::error_;

// ---- Open ------------------------------------------------------------------

TEST(TpmOpenTest, UnknownTctiIsUnavailable) {
  auto t = Tpm::Open("dpuaudit-no-such-tcti:x");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(t.status().message(),
              StartsWith("cannot open TPM at dpuaudit-no-such-tcti:x: "));
}

TEST(TpmOpenTest, NothingListeningIsUnavailable) {
  // Port 1 (tcpmux) is privileged and not served here.
  auto t = Tpm::Open("swtpm:host=127.0.0.1,port=1");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(t.status().message(),
              StartsWith("cannot open TPM at swtpm:host=127.0.0.1,port=1: "));
}

TEST(TpmOpenTest, EkCertificateIndexes) {
  EXPECT_EQ(EkCertificateNvIndex(EkType::kRsa2048), 0x01c00002u);
  EXPECT_EQ(EkCertificateNvIndex(EkType::kEccP256), 0x01c0000au);
}

// ---- the harness ------------------------------------------------------------

StatusOr<Bytes> EkOf(const SwtpmInstance& swtpm) {
  DPA_ASSIGN_OR_RETURN(auto tpm, Tpm::Open(swtpm.tcti()));
  return tpm->EkPublic(EkType::kRsa2048);
}

TEST(SwtpmHarnessTest, SharedIdentityClonesFreshManufactures) {
  DPUAUDIT_SKIP_WITHOUT_SWTPM();
  auto a = SwtpmInstance::Start(kShared);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = SwtpmInstance::Start(kShared);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto fresh = SwtpmInstance::Start();
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_NE((*a)->tcti(), (*b)->tcti());
  EXPECT_NE((*a)->state_dir(), (*b)->state_dir());
  auto ek_a = EkOf(**a);
  auto ek_b = EkOf(**b);
  auto ek_fresh = EkOf(**fresh);
  ASSERT_TRUE(ek_a.ok()) << ek_a.status().ToString();
  ASSERT_TRUE(ek_b.ok()) << ek_b.status().ToString();
  ASSERT_TRUE(ek_fresh.ok()) << ek_fresh.status().ToString();
  EXPECT_EQ(*ek_a, *ek_b);
  EXPECT_NE(*ek_a, *ek_fresh);
  // The fresh TPM's certificate chains to its own CA only.
  auto tpm = Tpm::Open((*fresh)->tcti());
  ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
  auto cert = (*tpm)->ReadEkCertificate(EkType::kRsa2048);
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  auto ek = TpmPublic::Decode(*ek_fresh);
  ASSERT_TRUE(ek.ok()) << ek.status().ToString();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  auto own = VerifyEkCertificate(*cert, *ek, (*fresh)->ek_ca_dir(), now);
  EXPECT_TRUE(own.ok()) << own.status().ToString();
  auto other = VerifyEkCertificate(*cert, *ek, (*a)->ek_ca_dir(), now);
  EXPECT_EQ(other.status().code(), StatusCode::kUnauthenticated)
      << other.status().ToString();
  // Stopping removes the state directory.
  const std::string dir = (*a)->state_dir();
  a->reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// ---- Info, EK
// ----------------------------------------------------------------

TEST_F(RsaEkTest, InfoNamesSwtpm) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto info = tpm->Info();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  // TPM_PT_MANUFACTURER 0x49424d00: IBM's swtpm / libtpms.
  EXPECT_EQ(info->manufacturer, "IBM ");
  // TPM_PT_VENDOR_STRING_1..4: "SW  ", " TPM", 0, 0.
  EXPECT_EQ(info->vendor, "SW   TPM");
  // libtpms: FIRMWARE_VERSION_1 is a date (0x20191023 in 0.9.x).
  EXPECT_EQ(info->firmware_version >> 56, 0x20u);
}

TEST_F(RsaEkTest, RsaEkCertificateIsDerForTheEk) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto cert = tpm->ReadEkCertificate(EkType::kRsa2048);
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  auto x509 = ParseDer(*cert);
  ASSERT_NE(x509, nullptr) << "not one DER certificate (" << cert->size()
                           << " bytes)";

  auto ek_bytes = tpm->EkPublic(EkType::kRsa2048);
  ASSERT_TRUE(ek_bytes.ok()) << ek_bytes.status().ToString();
  auto ek = TpmPublic::Decode(*ek_bytes);
  ASSERT_TRUE(ek.ok()) << ek.status().ToString();
  EXPECT_TRUE(ek->SameKey(X509_get0_pubkey(x509.get())))
      << "EK created from template L-1 is not the key in NV 0x01c00002";

  // And the certificate chains to the instance's own CA.
  auto info = VerifyEkCertificate(*cert, *ek, swtpm_->ek_ca_dir(),
                                  static_cast<int64_t>(std::time(nullptr)));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->tpm_manufacturer, "id:00001014");
}

TEST_F(RsaEkTest, EccEkCertificateIsNotFoundOnRsaOnlyTpm) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto cert = tpm->ReadEkCertificate(EkType::kEccP256);
  ASSERT_FALSE(cert.ok());
  EXPECT_EQ(cert.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cert.status().message(),
            "no ECC P-256 EK certificate: NV index 0x01c0000a is not defined.");
}

// A certificate in an NV index larger than itself (TPMs that pad) and
// larger than TPM_PT_NV_BUFFER_MAX (1024 on swtpm): read in two chunks and
// trimmed to the DER length.
TEST(EkCertificateNvTest, PaddedIndexIsReadInChunksAndTrimmed) {
  DPUAUDIT_SKIP_WITHOUT_SWTPM();
  SKIP_WITHOUT_TPM2_TOOLS("tpm2_nvundefine", "tpm2_nvdefine", "tpm2_nvwrite");
  auto swtpm = SwtpmInstance::Start(kShared);  // its NV is rewritten below
  ASSERT_TRUE(swtpm.ok()) << swtpm.status().ToString();
  const std::string tcti = (*swtpm)->tcti();
  Bytes cert;
  {
    auto tpm = Tpm::Open(tcti);
    ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
    auto c = (*tpm)->ReadEkCertificate(EkType::kRsa2048);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cert = *c;
  }
  ASSERT_LT(cert.size(), 1024u);
  TempDir dir("dpuaudit-nv");
  Bytes padded = cert;
  padded.resize(2048, 0x00);  // TPM_PT_NV_INDEX_MAX on swtpm
  WriteBytes(dir / "padded", padded);
  ASSERT_TOOL_OK((std::vector<std::string>{"tpm2_nvundefine", "-T", tcti, "-C",
                                           "p", "0x01c00002"}));
  ASSERT_TOOL_OK((std::vector<std::string>{
      "tpm2_nvdefine", "-T", tcti, "-C", "p", "-s", "2048", "-a",
      "ppwrite|writedefine|ppread|ownerread|authread|no_da|platformcreate",
      "0x01c00002"}));
  ASSERT_TOOL_OK(
      (std::vector<std::string>{"tpm2_nvwrite", "-T", tcti, "-C", "p", "-i",
                                dir / "padded", "0x01c00002"}));
  auto tpm = Tpm::Open(tcti);
  ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
  auto again = (*tpm)->ReadEkCertificate(EkType::kRsa2048);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(HexEncode(*again), HexEncode(cert));
}

TEST_F(RsaEkTest, EkPublicFollowsTemplateL1) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto bytes = tpm->EkPublic(EkType::kRsa2048);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto ek = TpmPublic::Decode(*bytes);
  ASSERT_TRUE(ek.ok()) << ek.status().ToString();
  EXPECT_EQ(ek->type(), TpmPublic::Type::kRsa);
  EXPECT_EQ(ek->rsa_bits(), 2048);
  EXPECT_EQ(ek->name_alg(), kTpmAlgSha256);
  EXPECT_EQ(ek->attributes(), 0x000300b2u);
  EXPECT_EQ(HexEncode(ek->auth_policy()), kEkPolicyHex);
  EXPECT_EQ(ek->symmetric_aes_bits(), 128);
  // The same key again (primary keys are deterministic), and every call
  // flushes its EK: more calls than swtpm has transient slots.
  for (int i = 0; i < 4; ++i) {
    auto again = tpm->EkPublic(EkType::kRsa2048);
    ASSERT_TRUE(again.ok()) << i << ": " << again.status().ToString();
    EXPECT_EQ(*again, *bytes);
  }
}

// ---- AK
// ----------------------------------------------------------------------

TEST_F(RsaEkTest, AkIsDeterministicRestrictedSigningKey) {
  Bytes first, second;
  {
    auto tpm = Open();
    ASSERT_NE(tpm, nullptr);
    auto ak = tpm->AkPublic();
    ASSERT_TRUE(ak.ok()) << ak.status().ToString();
    first = *ak;
    // Read again from the loaded AK.
    auto again = tpm->AkPublic();
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(*again, first);
  }
  {
    auto tpm = Open();  // a new ESYS context: the AK is re-created
    ASSERT_NE(tpm, nullptr);
    auto ak = tpm->AkPublic();
    ASSERT_TRUE(ak.ok()) << ak.status().ToString();
    second = *ak;
  }
  EXPECT_EQ(first, second);
  auto ak = TpmPublic::Decode(first);
  ASSERT_TRUE(ak.ok()) << ak.status().ToString();
  EXPECT_EQ(ak->type(), TpmPublic::Type::kEcc);
  EXPECT_EQ(ak->ecc_curve(), 0x0003);  // NIST P-256
  EXPECT_EQ(ak->name_alg(), kTpmAlgSha256);
  const uint32_t want = kTpmaFixedTpm | kTpmaFixedParent |
                        kTpmaSensitiveDataOrigin | kTpmaUserWithAuth |
                        kTpmaRestricted | kTpmaSign;
  EXPECT_EQ(ak->attributes(), want);
  Status s = CheckAkAttributes(*ak);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// ---- PCRs
// --------------------------------------------------------------------

TEST_F(RsaEkTest, PcrReadReturnsEveryRequestedPcr) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  // 48 values: the TPM returns at most 8 per PCR_Read.
  auto banks = tpm->PcrRead(
      Select({{kTpmAlgSha1, Range(0, 23)}, {kTpmAlgSha256, Range(0, 23)}}));
  ASSERT_TRUE(banks.ok()) << banks.status().ToString();
  ASSERT_EQ(banks->size(), 2u);
  ASSERT_EQ(banks->at(kTpmAlgSha1).size(), 24u);
  ASSERT_EQ(banks->at(kTpmAlgSha256).size(), 24u);
  for (const auto& [alg, bank] : *banks) {
    for (const auto& [pcr, value] : bank) {
      EXPECT_EQ(value.size(), alg == kTpmAlgSha1 ? 20u : 32u)
          << HashAlgName(alg) << " PCR " << pcr;
    }
  }
}

TEST_F(RsaEkTest, PcrExtendThenRead) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  const PcrSelection sel = Select({{kTpmAlgSha1, {14}}, {kTpmAlgSha256, {14}}});
  auto before = tpm->PcrRead(sel);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  for (uint16_t alg : {kTpmAlgSha1, kTpmAlgSha256}) {
    auto digest = HashWith(alg, AsBytes("dpuaudit extend test"));
    ASSERT_TRUE(digest.ok());
    Status s = tpm->PcrExtend(14, alg, *digest);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  auto after = tpm->PcrRead(sel);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  for (uint16_t alg : {kTpmAlgSha1, kTpmAlgSha256}) {
    // new = H(old || digest)
    Bytes input = before->at(alg).at(14);
    Bytes digest = *HashWith(alg, AsBytes("dpuaudit extend test"));
    input.insert(input.end(), digest.begin(), digest.end());
    EXPECT_EQ(HexEncode(after->at(alg).at(14)),
              HexEncode(*HashWith(alg, input)))
        << HashAlgName(alg);
  }
}

TEST_F(RsaEkTest, PcrExtendRejectsBadArguments) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  Bytes d32(32, 0xab);
  struct Case {
    uint32_t pcr;
    uint16_t alg;
    Bytes digest;
    std::string message;
  };
  const std::vector<Case> cases = {
      {24, kTpmAlgSha256, d32, "PCR index 24 out of range [0, 23]."},
      {7, 0x0099, d32, "hash algorithm 0x0099 is not supported."},
      {7, kTpmAlgSha1, d32, "sha1 digest for PCR 7 is 32 bytes, expected 20."},
  };
  for (const Case& c : cases) {
    Status s = tpm->PcrExtend(c.pcr, c.alg, c.digest);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST_F(RsaEkTest, UnallocatedBankIsFailedPrecondition) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto banks =
      tpm->PcrRead(Select({{kTpmAlgSha256, {0}}, {kTpmAlgSha384, {0, 1}}}));
  ASSERT_FALSE(banks.ok());
  EXPECT_EQ(banks.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(banks.status().message(),
            "TPM returned no value for sha384 PCR 0 (is the sha384 bank "
            "allocated?).");
}

// ---- Quote -----------------------------------------------------------------

TEST_F(RsaEkTest, QuoteVerifiesWithQuoteVerifier) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto ak_bytes = tpm->AkPublic();
  ASSERT_TRUE(ak_bytes.ok()) << ak_bytes.status().ToString();
  auto ak = TpmPublic::Decode(*ak_bytes);
  ASSERT_TRUE(ak.ok()) << ak.status().ToString();

  const Bytes nonce = *HashWith(kTpmAlgSha256, AsBytes("nonce"));
  const PcrSelection sel =
      Select({{kTpmAlgSha1, Range(0, 7)}, {kTpmAlgSha256, Range(0, 15)}});
  auto q = tpm->Quote(nonce, sel);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->pcrs.at(kTpmAlgSha256).size(), 16u);
  EXPECT_EQ(q->pcrs.at(kTpmAlgSha1).size(), 8u);

  TpmStep failed = TpmStep::kAkBound;
  QuoteInput in{q->attest, q->signature, &q->pcrs};
  auto v = QuoteVerifier::Verify(*ak, in, nonce, PcrSelection::DefaultSha256(),
                                 &failed);
  ASSERT_TRUE(v.ok()) << TpmStepId(failed) << ": " << v.status().ToString();
  EXPECT_EQ(v->attest.extra_data, nonce);
  // qualifiedSigner is the AK's qualified name (Part 1 §16): a primary in
  // the endorsement hierarchy has QN = nameAlg || H(TPM_RH_ENDORSEMENT ||
  // name).
  Bytes qn_input = {0x40, 0x00, 0x00, 0x0b};
  qn_input.insert(qn_input.end(), ak->name().begin(), ak->name().end());
  Bytes qn = {0x00, 0x0b};
  const Bytes qn_digest = *HashWith(kTpmAlgSha256, qn_input);
  qn.insert(qn.end(), qn_digest.begin(), qn_digest.end());
  EXPECT_EQ(HexEncode(v->attest.qualified_signer), HexEncode(qn));
  EXPECT_EQ(v->pcrs.banks(), q->pcrs);

  // The same quote with another nonce expected fails at step 4.
  const Bytes other = *HashWith(kTpmAlgSha256, AsBytes("other"));
  auto bad = QuoteVerifier::Verify(*ak, in, other,
                                   PcrSelection::DefaultSha256(), &failed);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(failed, TpmStep::kQualifyingData);

  // PCR values that are not the quoted ones fail at step 6.
  PcrBanks lie = q->pcrs;
  lie[kTpmAlgSha256][3] = Bytes(32, 0x42);
  QuoteInput lie_in{q->attest, q->signature, &lie};
  auto bad2 = QuoteVerifier::Verify(*ak, lie_in, nonce,
                                    PcrSelection::DefaultSha256(), &failed);
  ASSERT_FALSE(bad2.ok());
  EXPECT_EQ(failed, TpmStep::kPcrDigest);
}

TEST_F(RsaEkTest, RepeatedQuotesKeepOneAk) {
  // More quotes and EK uses than swtpm has transient slots: nothing leaks.
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  const PcrSelection sel = PcrSelection::DefaultSha256();
  for (int i = 0; i < 5; ++i) {
    auto q = tpm->Quote(AsBytes("n"), sel);
    ASSERT_TRUE(q.ok()) << i << ": " << q.status().ToString();
    auto ek = tpm->EkPublic(EkType::kRsa2048);
    ASSERT_TRUE(ek.ok()) << i << ": " << ek.status().ToString();
  }
}

TEST_F(RsaEkTest, QuoteRejectsOversizedQualifyingData) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto q = tpm->Quote(Bytes(65, 1), PcrSelection::DefaultSha256());
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(q.status().message(),
            "qualifying data is 65 bytes; a TPM2B_DATA holds at most 64.");
}

TEST_F(RsaEkTest, QuoteVerifiesWithTpm2Checkquote) {
  SKIP_WITHOUT_TPM2_TOOLS("tpm2_checkquote");
  TempDir dir("dpuaudit-quote");
  const Bytes nonce = *HashWith(kTpmAlgSha256, AsBytes("checkquote nonce"));
  const PcrSelection sel =
      Select({{kTpmAlgSha1, {0, 7}}, {kTpmAlgSha256, Range(0, 15)}});
  StatusOr<QuoteResult> q = InternalError("not run");
  Bytes ak_bytes;
  {
    auto tpm = Open();
    ASSERT_NE(tpm, nullptr);
    q = tpm->Quote(nonce, sel);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    auto ak = tpm->AkPublic();
    ASSERT_TRUE(ak.ok()) << ak.status().ToString();
    ak_bytes = *ak;
  }
  auto ak = TpmPublic::Decode(ak_bytes);
  ASSERT_TRUE(ak.ok()) << ak.status().ToString();
  auto pcrs_file = SerializePcrsTpm2Tools(sel.banks(), q->pcrs);
  ASSERT_TRUE(pcrs_file.ok()) << pcrs_file.status().ToString();
  WriteBytes(dir / "ak.pem", AsBytes(ak->ToPem()));
  WriteBytes(dir / "quote.msg", q->attest);
  WriteBytes(dir / "quote.sig", q->signature);
  WriteBytes(dir / "quote.pcrs", *pcrs_file);
  ToolResult r =
      RunTool({"tpm2_checkquote", "-u", dir / "ak.pem", "-m", dir / "quote.msg",
               "-s", dir / "quote.sig", "-f", dir / "quote.pcrs", "-g",
               "sha256", "-q", HexEncode(nonce)});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // And it rejects another nonce (so the check above is not vacuous).
  ToolResult bad = RunTool({"tpm2_checkquote", "-u", dir / "ak.pem", "-m",
                            dir / "quote.msg", "-s", dir / "quote.sig", "-f",
                            dir / "quote.pcrs", "-g", "sha256", "-q", "00ff"});
  EXPECT_NE(bad.exit_code, 0) << bad.out;
}

// ---- ActivateCredential ----------------------------------------------------

struct Keys {
  TpmPublic ek;
  TpmPublic ak;
};

StatusOr<Keys> ReadKeys(Tpm& tpm, EkType type) {
  DPA_ASSIGN_OR_RETURN(Bytes ek_bytes, tpm.EkPublic(type));
  DPA_ASSIGN_OR_RETURN(Bytes ak_bytes, tpm.AkPublic());
  DPA_ASSIGN_OR_RETURN(TpmPublic ek, TpmPublic::Decode(ek_bytes));
  DPA_ASSIGN_OR_RETURN(TpmPublic ak, TpmPublic::Decode(ak_bytes));
  return Keys{std::move(ek), std::move(ak)};
}

void ExpectActivates(Tpm& tpm, EkType type) {
  auto keys = ReadKeys(tpm, type);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  const Bytes secret =
      *HashWith(kTpmAlgSha256, AsBytes("the verifier's secret"));
  auto made = MakeCredential(keys->ek, secret, keys->ak.name());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  auto got = tpm.ActivateCredential(type, made->credential_blob,
                                    made->encrypted_secret);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, secret);
}

TEST_F(RsaEkTest, ActivateCredentialOfSoftwareMakeCredential) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  ExpectActivates(*tpm, EkType::kRsa2048);
  // Twice: the EK and the policy session of the first call were flushed.
  ExpectActivates(*tpm, EkType::kRsa2048);
}

TEST_F(RsaEkTest, ActivateCredentialForAnotherAkFails) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto keys = ReadKeys(*tpm, EkType::kRsa2048);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  Bytes wrong_name = keys->ak.name();
  wrong_name.back() ^= 0x01;
  auto made = MakeCredential(keys->ek, Bytes(32, 0x5a), wrong_name);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  auto got = tpm->ActivateCredential(EkType::kRsa2048, made->credential_blob,
                                     made->encrypted_secret);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
  EXPECT_THAT(got.status().message(),
              StartsWith("TPM2_ActivateCredential failed: "));
  EXPECT_THAT(got.status().message(), HasSubstr("integrity check failed"));
}

TEST_F(RsaEkTest, ActivateCredentialRejectsMalformedInput) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  const Bytes blob = {0x00, 0x04, 1, 2, 3, 4};
  const Bytes secret = {0x00, 0x02, 9, 9};
  auto a =
      tpm->ActivateCredential(EkType::kRsa2048, Bytes{0x00, 0x05, 1}, secret);
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.status().message(),
            "credential blob is not one marshalled TPM2B_ID_OBJECT (3 bytes).");
  Bytes trailing = secret;
  trailing.push_back(0);
  auto b = tpm->ActivateCredential(EkType::kRsa2048, blob, trailing);
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.status().message(),
            "encrypted secret is not one marshalled TPM2B_ENCRYPTED_SECRET (5 "
            "bytes).");
}

TEST_F(RsaEkTest, ActivatesBlobFromTpm2Makecredential) {
  SKIP_WITHOUT_TPM2_TOOLS("tpm2_makecredential");
  TempDir dir("dpuaudit-mkcred");
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto keys = ReadKeys(*tpm, EkType::kRsa2048);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  const Bytes secret = *HashWith(kTpmAlgSha256, AsBytes("made by tpm2-tools"));
  // -u takes the EK as a TSS TPM2B_PUBLIC (what EkPublic returns). -n is
  // the AK name as a hex string: tpm2-tools 5.4 parses it as hex although
  // its man page says FILE ("FAILED: -2" for a path). --tcti none: no TPM.
  WriteBytes(dir / "ek.pub", keys->ek.marshalled());
  WriteBytes(dir / "secret", secret);
  ASSERT_TOOL_OK((std::vector<std::string>{
      "tpm2_makecredential", "--tcti", "none", "-u", dir / "ek.pub", "-s",
      dir / "secret", "-n", keys->ak.name_hex(), "-o", dir / "cred.blob"}));
  auto parsed = ParseTpm2ToolsCredential(ReadBytes(dir / "cred.blob"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto got = tpm->ActivateCredential(EkType::kRsa2048, parsed->credential_blob,
                                     parsed->encrypted_secret);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, secret);
}

// The AK template of tpm.cc, spelled for tpm2_createprimary, and the same
// unique field (x = "dpuaudit-ak", y empty). tpm2-tools 5.4 reads -u into
// the in-memory TPMU_PUBLIC_ID: for ECC, x.size (u16, host order: little
// endian here), x.buffer[128], y.size, y.buffer.
void CreateToolKeys(const std::string& tcti, const TempDir& dir,
                    const std::string& ek_alg) {
  std::string unique = std::string("\x0b\x00", 2) + "dpuaudit-ak";
  unique.resize(2 + 128, '\0');
  unique += std::string("\x00\x00", 2);
  WriteBytes(dir / "ak.unique", AsBytes(unique));
  ASSERT_TOOL_OK((std::vector<std::string>{"tpm2_createek", "-T", tcti, "-G",
                                           ek_alg, "-c", dir / "ek.ctx"}));
  ASSERT_TOOL_OK((std::vector<std::string>{
      "tpm2_createprimary", "-T", tcti, "-C", "e", "-g", "sha256", "-G",
      "ecc256:ecdsa-sha256:null", "-a",
      "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|restricted|sign",
      "-u", dir / "ak.unique", "-c", dir / "ak.ctx"}));
  ASSERT_TOOL_OK(
      (std::vector<std::string>{"tpm2_readpublic", "-T", tcti, "-c",
                                dir / "ak.ctx", "-n", dir / "ak.name"}));
  // The tools leave their objects loaded (no resource manager): flush them,
  // tpm2_activatecredential loads the saved contexts again.
  ASSERT_TOOL_OK(
      (std::vector<std::string>{"tpm2_flushcontext", "-T", tcti, "-t"}));
}

void ActivateWithTools(const std::string& tcti, const TempDir& dir) {
  ASSERT_TOOL_OK((std::vector<std::string>{"tpm2_startauthsession", "-T", tcti,
                                           "--policy-session", "-S",
                                           dir / "session.ctx"}));
  ASSERT_TOOL_OK((std::vector<std::string>{
      "tpm2_policysecret", "-T", tcti, "-S", dir / "session.ctx", "-c", "e"}));
  ToolResult r =
      RunTool({"tpm2_activatecredential", "-T", tcti, "-c", dir / "ak.ctx",
               "-C", dir / "ek.ctx", "-i", dir / "cred.blob", "-o",
               dir / "certinfo", "-P", "session:" + dir / "session.ctx"});
  RunTool({"tpm2_flushcontext", "-T", tcti, dir / "session.ctx"});
  RunTool({"tpm2_flushcontext", "-T", tcti, "-t"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
}

TEST_F(RsaEkTest, Tpm2ActivatecredentialActivatesOurBlob) {
  SKIP_WITHOUT_TPM2_TOOLS("tpm2_createek", "tpm2_createprimary",
                          "tpm2_readpublic", "tpm2_flushcontext",
                          "tpm2_startauthsession", "tpm2_policysecret",
                          "tpm2_activatecredential");
  TempDir dir("dpuaudit-actcred");
  StatusOr<Keys> keys = InternalError("not read");
  {
    auto tpm =
        Open();  // closed before the tools connect (one client at a time)
    ASSERT_NE(tpm, nullptr);
    keys = ReadKeys(*tpm, EkType::kRsa2048);
    ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  }
  CreateToolKeys(swtpm_->tcti(), dir, "rsa");
  if (HasFatalFailure()) return;
  // The tools re-created exactly our AK.
  EXPECT_EQ(HexEncode(ReadBytes(dir / "ak.name")), keys->ak.name_hex());

  const Bytes secret =
      *HashWith(kTpmAlgSha256, AsBytes("activated by tpm2-tools"));
  auto made = MakeCredential(keys->ek, secret, keys->ak.name());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  WriteBytes(dir / "cred.blob", WriteTpm2ToolsCredential(*made));
  ActivateWithTools(swtpm_->tcti(), dir);
  if (HasFatalFailure()) return;
  EXPECT_EQ(HexEncode(ReadBytes(dir / "certinfo")), HexEncode(secret));
}

// ---- ECC P-256 EK
// ------------------------------------------------------------

TEST_F(EccEkTest, EccEkCertificateMatchesEkPublic) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto cert = tpm->ReadEkCertificate(EkType::kEccP256);
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  auto x509 = ParseDer(*cert);
  ASSERT_NE(x509, nullptr);
  auto ek_bytes = tpm->EkPublic(EkType::kEccP256);
  ASSERT_TRUE(ek_bytes.ok()) << ek_bytes.status().ToString();
  auto ek = TpmPublic::Decode(*ek_bytes);
  ASSERT_TRUE(ek.ok()) << ek.status().ToString();
  EXPECT_EQ(ek->type(), TpmPublic::Type::kEcc);
  EXPECT_EQ(ek->ecc_curve(), 0x0003);
  EXPECT_EQ(ek->attributes(), 0x000300b2u);
  EXPECT_EQ(HexEncode(ek->auth_policy()), kEkPolicyHex);
  EXPECT_TRUE(ek->SameKey(X509_get0_pubkey(x509.get())))
      << "EK created from template L-2 is not the key in NV 0x01c0000a";
  auto info = VerifyEkCertificate(*cert, *ek, swtpm_->ek_ca_dir(),
                                  static_cast<int64_t>(std::time(nullptr)));
  EXPECT_TRUE(info.ok()) << info.status().ToString();
}

TEST_F(EccEkTest, RsaEkCertificateIsNotFound) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  auto cert = tpm->ReadEkCertificate(EkType::kRsa2048);
  ASSERT_FALSE(cert.ok());
  EXPECT_EQ(cert.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cert.status().message(),
            "no RSA 2048 EK certificate: NV index 0x01c00002 is not defined.");
}

TEST_F(EccEkTest, ActivateCredentialWithEccEk) {
  auto tpm = Open();
  ASSERT_NE(tpm, nullptr);
  ExpectActivates(*tpm, EkType::kEccP256);
}

TEST_F(EccEkTest, Tpm2ActivatecredentialActivatesOurEccBlob) {
  SKIP_WITHOUT_TPM2_TOOLS("tpm2_createek", "tpm2_createprimary",
                          "tpm2_readpublic", "tpm2_flushcontext",
                          "tpm2_startauthsession", "tpm2_policysecret",
                          "tpm2_activatecredential");
  TempDir dir("dpuaudit-actcred-ecc");
  StatusOr<Keys> keys = InternalError("not read");
  {
    auto tpm = Open();
    ASSERT_NE(tpm, nullptr);
    keys = ReadKeys(*tpm, EkType::kEccP256);
    ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  }
  CreateToolKeys(swtpm_->tcti(), dir, "ecc");
  if (HasFatalFailure()) return;
  const Bytes secret = *HashWith(kTpmAlgSha256, AsBytes("ecc secret"));
  auto made = MakeCredential(keys->ek, secret, keys->ak.name());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  WriteBytes(dir / "cred.blob", WriteTpm2ToolsCredential(*made));
  ActivateWithTools(swtpm_->tcti(), dir);
  if (HasFatalFailure()) return;
  EXPECT_EQ(HexEncode(ReadBytes(dir / "certinfo")), HexEncode(secret));
}

// ---- ExtendEventLog
// ----------------------------------------------------------

// A synthetic crypto-agile log, one comment per field that matters.
EventLog SyntheticLog() {
  EventLog log;
  log.format = EventLogFormat::kCryptoAgile;
  log.algorithms = {{kTpmAlgSha1, 20}, {kTpmAlgSha256, 32}};
  auto event = [&](uint32_t pcr, uint32_t type, std::string_view data) {
    TcgEvent e;
    e.index = log.events.size();
    e.offset = 0x100 * e.index;
    e.pcr = pcr;
    e.type = type;
    e.data = ToBytes(data);
    for (uint16_t alg : {kTpmAlgSha1, kTpmAlgSha256}) {
      e.digests.push_back({alg, *HashWith(alg, e.data)});
    }
    log.events.push_back(std::move(e));
  };
  event(0, kEvNoAction, "Spec ID Event03");      // never extended
  event(0, kEvSCrtmVersion, "firmware 1.0");     // PCR 0
  event(2, kEvEfiBootServicesDriver, "driver");  // PCR 2
  event(0, kEvSeparator, std::string(4, '\0'));  // PCR 0 again
  event(9, kEvNoAction, "not extended either");  // PCR 9 stays zero
  return log;
}

TEST(ExtendEventLogTest, ExtendsEveryEventButNoAction) {
  DPUAUDIT_SKIP_WITHOUT_SWTPM();
  auto swtpm = SwtpmInstance::Start(kShared);  // fresh PCRs
  ASSERT_TRUE(swtpm.ok()) << swtpm.status().ToString();
  auto tpm = Tpm::Open((*swtpm)->tcti());
  ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
  const EventLog log = SyntheticLog();
  Status s = ExtendEventLog(**tpm, log);
  ASSERT_TRUE(s.ok()) << s.ToString();

  auto banks = (*tpm)->PcrRead(
      Select({{kTpmAlgSha1, {0, 2, 9}}, {kTpmAlgSha256, {0, 2, 9}}}));
  ASSERT_TRUE(banks.ok()) << banks.status().ToString();
  for (uint16_t alg : {kTpmAlgSha1, kTpmAlgSha256}) {
    const size_t n = alg == kTpmAlgSha1 ? 20 : 32;
    std::map<uint32_t, Bytes> want = {
        {0, Bytes(n, 0)}, {2, Bytes(n, 0)}, {9, Bytes(n, 0)}};
    for (const TcgEvent& e : log.events) {
      if (e.type == kEvNoAction) continue;
      Bytes in = want[e.pcr];
      const Bytes d = *HashWith(alg, e.data);
      in.insert(in.end(), d.begin(), d.end());
      want[e.pcr] = *HashWith(alg, in);
    }
    for (uint32_t pcr : {0u, 2u, 9u}) {
      EXPECT_EQ(HexEncode(banks->at(alg).at(pcr)), HexEncode(want[pcr]))
          << HashAlgName(alg) << " PCR " << pcr;
    }
  }
}

TEST(ExtendEventLogTest, RefusesNonZeroStartupLocality) {
  DPUAUDIT_SKIP_WITHOUT_SWTPM();
  auto swtpm = SwtpmInstance::Start(kShared);
  ASSERT_TRUE(swtpm.ok()) << swtpm.status().ToString();
  auto tpm = Tpm::Open((*swtpm)->tcti());
  ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
  EventLog log = SyntheticLog();
  // TCG_EfiStartupLocalityEvent: "StartupLocality\0", locality 3.
  TcgEvent loc;
  loc.index = 5;
  loc.offset = 0x500;
  loc.pcr = 0;
  loc.type = kEvNoAction;
  loc.data = ToBytes(std::string("StartupLocality\0\x03", 17));
  log.events.push_back(loc);
  Status s = ExtendEventLog(**tpm, log);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "event 5 at offset 0x500: StartupLocality 3 needs PCR 0 to start "
            "non-zero, which PCR extends cannot reproduce.");
  // Nothing was extended.
  auto banks = (*tpm)->PcrRead(Select({{kTpmAlgSha256, {0, 2}}}));
  ASSERT_TRUE(banks.ok()) << banks.status().ToString();
  EXPECT_EQ(banks->at(kTpmAlgSha256).at(0), Bytes(32, 0));
  EXPECT_EQ(banks->at(kTpmAlgSha256).at(2), Bytes(32, 0));
}

// The project's simulated BlueField-3 boot log (tests/fixtures/eventlogs,
// PROVENANCE.md there), played into a fresh swtpm: the PCRs equal the log's
// replay and the script's expected values, and a quote over them verifies
// and replays against the log.
TEST(ExtendEventLogTest, Bf3BootLogReplaysOnSwtpm) {
  DPUAUDIT_SKIP_WITHOUT_SWTPM();
  const std::string dir =
      std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/eventlogs/";
  auto raw = ReadFileLimited(dir + "bf3-ftpm-boot.bin", 1 << 20);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  auto log = ParseEventLog(*raw);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto expected_json =
      ReadFileLimited(dir + "bf3-ftpm-boot.expected-pcrs.json", 1 << 20);
  ASSERT_TRUE(expected_json.ok()) << expected_json.status().ToString();
  const nlohmann::json expected =
      nlohmann::json::parse(ToString(*expected_json));

  auto swtpm = SwtpmInstance::Start(kShared);
  ASSERT_TRUE(swtpm.ok()) << swtpm.status().ToString();
  auto tpm = Tpm::Open((*swtpm)->tcti());
  ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
  Status s = ExtendEventLog(**tpm, *log);
  ASSERT_TRUE(s.ok()) << s.ToString();

  const ReplayResult replay = ReplayEventLog(*log);
  std::map<uint16_t, std::set<uint32_t>> sel;
  for (const auto& [alg, bank] : replay.pcrs) {
    for (const auto& [pcr, value] : bank) sel[alg].insert(pcr);
  }
  ASSERT_EQ(sel.size(), 2u);  // sha1 and sha256
  ASSERT_EQ(sel[kTpmAlgSha256], Range(0, 9));
  auto banks = (*tpm)->PcrRead(Select(sel));
  ASSERT_TRUE(banks.ok()) << banks.status().ToString();
  for (const auto& [alg, bank] : replay.pcrs) {
    for (const auto& [pcr, value] : bank) {
      EXPECT_EQ(HexEncode(banks->at(alg).at(pcr)), HexEncode(value))
          << HashAlgName(alg) << " PCR " << pcr;
      EXPECT_EQ(HexEncode(banks->at(alg).at(pcr)),
                expected["pcrs"][HashAlgName(alg)][std::to_string(pcr)]
                    .get<std::string>())
          << HashAlgName(alg) << " PCR " << pcr << " vs expected-pcrs.json";
    }
  }

  // The whole chain: quote, verify, replay against the verified PCRs.
  auto ak_bytes = (*tpm)->AkPublic();
  ASSERT_TRUE(ak_bytes.ok()) << ak_bytes.status().ToString();
  auto ak = TpmPublic::Decode(*ak_bytes);
  ASSERT_TRUE(ak.ok()) << ak.status().ToString();
  const Bytes nonce(32, 0x11);
  const PcrSelection quoted = Select({{kTpmAlgSha256, Range(0, 15)}});
  auto q = (*tpm)->Quote(nonce, quoted);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  TpmStep failed = TpmStep::kAkBound;
  auto v = QuoteVerifier::Verify(*ak, {q->attest, q->signature, &q->pcrs},
                                 nonce, PcrSelection::DefaultSha256(), &failed);
  ASSERT_TRUE(v.ok()) << TpmStepId(failed) << ": " << v.status().ToString();
  auto verified = ReplayAgainstQuote(*log, v->pcrs);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_TRUE(verified->quirks_applied().empty());
  // PCRs the log extends; 10-15 are not extended and not logged.
  EXPECT_EQ(verified->matched().at(kTpmAlgSha256), Range(0, 9));
}

// The parser's own seeds for what swtpm cannot reproduce.
TEST(ExtendEventLogTest, RefusesCorpusLogsWithNonZeroPcr0Start) {
  DPUAUDIT_SKIP_WITHOUT_SWTPM();
  auto swtpm = SwtpmInstance::Start(kShared);
  ASSERT_TRUE(swtpm.ok()) << swtpm.status().ToString();
  auto tpm = Tpm::Open((*swtpm)->tcti());
  ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
  const std::string dir =
      std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fuzz/corpus/eventlog/";
  for (const char* name : {"agile-locality3.bin", "agile-hcrtm.bin"}) {
    auto raw = ReadFileLimited(dir + name, 1 << 20);
    ASSERT_TRUE(raw.ok()) << name << ": " << raw.status().ToString();
    auto log = ParseEventLog(*raw);
    ASSERT_TRUE(log.ok()) << name << ": " << log.status().ToString();
    Status s = ExtendEventLog(**tpm, *log);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition)
        << name << ": " << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr("which PCR extends cannot reproduce"))
        << name;
  }
}

}  // namespace
}  // namespace dpuaudit::attest::tpm
