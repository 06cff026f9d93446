#include "attest/quote.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <set>

#include "attest/tpm_test_util.h"

namespace dpuaudit::attest {
namespace {

using ::testing::HasSubstr;
using testing::SyntheticQuote;
using testing::TestKey;

using Selection = std::map<uint16_t, std::set<uint32_t>>;

Selection Range(uint16_t alg, uint32_t lo, uint32_t hi) {
  Selection s;
  for (uint32_t i = lo; i <= hi; ++i) s[alg].insert(i);
  return s;
}

class QuoteVerifierTest : public ::testing::Test {
 protected:
  QuoteVerifierTest()
      : values_({{kTpmAlgSha256, testing::FakeBank(kTpmAlgSha256)},
                 {kTpmAlgSha1, testing::FakeBank(kTpmAlgSha1)}}),
        nonce_(32, 0x4e),
        qd_(QualifyingData(nonce_, AsBytes("{\"claims\":1}"))),
        required_(PcrSelection::DefaultSha256()) {}

  // Verifies `q` against this fixture's expectations.
  StatusOr<VerifiedQuote> Verify(const SyntheticQuote& q, TpmStep* failed,
                                 const PcrBanks* claimed = nullptr) {
    auto ak = TpmPublic::Decode(q.ak_public);
    EXPECT_TRUE(ak.ok()) << ak.status().ToString();
    QuoteInput in{q.attest, q.signature, claimed ? claimed : &values_};
    return QuoteVerifier::Verify(*ak, in, qd_, required_, failed);
  }

  PcrBanks values_;
  Bytes nonce_;
  Bytes qd_;
  PcrSelection required_;
};

TEST_F(QuoteVerifierTest, AcceptsAGoodQuoteAndKeepsOnlyQuotedPcrs) {
  // Quoted: sha256 0-15 plus sha1 7; claimed: both banks, PCRs 0-23.
  Selection sel = Range(kTpmAlgSha256, 0, 15);
  sel[kTpmAlgSha1] = {7};
  SyntheticQuote q = SyntheticQuote::Build(values_, sel, qd_);
  TpmStep failed = TpmStep::kAkBound;
  auto v = Verify(q, &failed);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(failed, TpmStep::kAkBound);  // untouched on success
  EXPECT_EQ(v->attest.extra_data, qd_);
  EXPECT_EQ(v->attest.qualified_signer, q.ak_name);
  EXPECT_EQ(v->pcrs.selection(), sel);
  ASSERT_EQ(v->pcrs.banks().size(), 2u);
  EXPECT_EQ(v->pcrs.banks().at(kTpmAlgSha256).size(), 16u);
  EXPECT_EQ(v->pcrs.banks().at(kTpmAlgSha1).size(), 1u);
  EXPECT_EQ(v->pcrs.banks().at(kTpmAlgSha1).at(7), values_[kTpmAlgSha1][7]);
  EXPECT_EQ(v->pcrs.banks().at(kTpmAlgSha256).count(16), 0u);
}

TEST_F(QuoteVerifierTest, AcceptsAnRsaAk) {
  SyntheticQuote q = SyntheticQuote::Build(
      values_, Range(kTpmAlgSha256, 0, 15), qd_, TestKey::Rsa(2048));
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
}

// ---- step 2: tpm.signature ---------------------------------------------------

TEST_F(QuoteVerifierTest, Step2RejectsAQuoteSignedByAnotherKey) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  q.signature = testing::SignTpm(TestKey::EccP256(), q.attest);
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kSignature);
  EXPECT_EQ(v.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(v.status().message(),
            "quote signature by AK " + HexEncode(q.ak_name) +
                ": ECDSA/sha256 signature does not verify with the key.");
}

TEST_F(QuoteVerifierTest, Step2ChecksTheReceivedBytesBeforeDecoding) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  // Garbage attest bytes: a decoder would fail, but the signature fails
  // first, so the bytes were never decoded.
  q.attest = Bytes{0xde, 0xad};
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kSignature);
  EXPECT_EQ(v.status().code(), StatusCode::kUnauthenticated);
}

TEST_F(QuoteVerifierTest, Step2RejectsAnUndecodableSignature) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  q.signature = {0x00, 0x18, 0x00};
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kSignature);
  EXPECT_EQ(v.status(),
            UnauthenticatedError(
                "quote signature: TPMT_SIGNATURE.signature at offset 0x2 does "
                "not decode (truncated, or a size field exceeds its buffer)."));
}

// ---- step 3: tpm.attest_type -------------------------------------------------

TEST_F(QuoteVerifierTest, Step3RejectsAWrongMagic) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  q.spec.magic = 0x12345678;
  q.Resign();
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kAttestType);
  EXPECT_EQ(v.status(), FailedPreconditionError(
                            "TPMS_ATTEST magic 0x12345678 is not "
                            "TPM_GENERATED_VALUE 0xff544347."));
}

TEST_F(QuoteVerifierTest, Step3RejectsAnotherAttestationType) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  q.spec.type = 0x8015;  // TPM_ST_ATTEST_TIME
  q.Resign();
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kAttestType);
  EXPECT_EQ(v.status(),
            FailedPreconditionError(
                "TPMS_ATTEST type 0x8015 is not TPM_ST_ATTEST_QUOTE 0x8018."));
}

TEST_F(QuoteVerifierTest, Step3RejectsSignedBytesThatDoNotDecode) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  q.attest.push_back(0x00);  // trailing byte, validly signed
  q.signature = testing::SignTpm(q.ak, q.attest);
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kAttestType);
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(v.status().message(),
              HasSubstr("TPMS_ATTEST has 1 trailing bytes after offset"));
}

// ---- step 4: tpm.qualifying_data ---------------------------------------------

TEST_F(QuoteVerifierTest, Step4RejectsTheQualifyingDataOfAnotherNonce) {
  Bytes other = QualifyingData(Bytes(32, 0x01), AsBytes("{\"claims\":1}"));
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), other);
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kQualifyingData);
  EXPECT_EQ(v.status(), FailedPreconditionError(
                            "extraData " + HexEncode(other) +
                            " is not the expected qualifying data " +
                            HexEncode(qd_) + "."));
}

TEST_F(QuoteVerifierTest, Step4RejectsEmptyExtraData) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), Bytes{});
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kQualifyingData);
  EXPECT_EQ(v.status().message(), "extraData (empty) is not the expected "
                                  "qualifying data " + HexEncode(qd_) + ".");
}

// ---- step 5: tpm.pcr_selection -----------------------------------------------

TEST_F(QuoteVerifierTest, Step5RejectsASelectionTooSmall) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 7), qd_);
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kPcrSelection);
  EXPECT_EQ(v.status(),
            FailedPreconditionError("quote covers sha256:0-7 but policy "
                                    "requires sha256:0-15 (missing 8-15)."));
}

TEST_F(QuoteVerifierTest, Step5NamesMissingPcrsOfSeveralBanks) {
  auto req = PcrSelection::Create({{kTpmAlgSha1, {0, 7}},
                                   {kTpmAlgSha256, {0, 1, 2, 3, 4, 10}}});
  ASSERT_TRUE(req.ok());
  required_ = *req;
  Selection sel = Range(kTpmAlgSha256, 0, 3);
  SyntheticQuote q = SyntheticQuote::Build(values_, sel, qd_);
  TpmStep failed{};
  auto v = Verify(q, &failed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kPcrSelection);
  EXPECT_EQ(v.status().message(),
            "quote covers sha256:0-3 but policy requires "
            "sha1:0,7+sha256:0-4,10 (missing sha1:0,7+sha256:4,10).");
}

// ---- step 6: tpm.pcr_digest --------------------------------------------------

TEST_F(QuoteVerifierTest, Step6RejectsAChangedClaimedPcr) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  PcrBanks claimed = values_;
  claimed[kTpmAlgSha256][4][0] ^= 0x01;
  Bytes claimed_digest = testing::ExpectedPcrDigest(
      kTpmAlgSha256, {{kTpmAlgSha256, Range(kTpmAlgSha256, 0, 15)[kTpmAlgSha256]}},
      claimed);
  TpmStep failed{};
  auto v = Verify(q, &failed, &claimed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kPcrDigest);
  EXPECT_EQ(v.status(),
            FailedPreconditionError(
                "pcrDigest " + HexEncode(q.spec.pcr_digest) +
                " does not match the digest of the reported PCR values " +
                HexEncode(claimed_digest) + "."));
}

TEST_F(QuoteVerifierTest, Step6RejectsMissingClaimedValues) {
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  PcrBanks claimed = values_;
  claimed[kTpmAlgSha256].erase(9);
  TpmStep failed{};
  auto v = Verify(q, &failed, &claimed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kPcrDigest);
  EXPECT_EQ(v.status(), FailedPreconditionError(
                            "the reported PCR values do not cover the quote: "
                            "no sha256 value for PCR 9."));

  auto ak = TpmPublic::Decode(q.ak_public);
  ASSERT_TRUE(ak.ok());
  QuoteInput none{q.attest, q.signature, nullptr};
  auto v2 = QuoteVerifier::Verify(*ak, none, qd_, required_, &failed);
  ASSERT_FALSE(v2.ok());
  EXPECT_EQ(failed, TpmStep::kPcrDigest);
}

TEST_F(QuoteVerifierTest, Step6RejectsADigestOverAnotherOrder) {
  // The TPM hashed sha256 values but claimed an extra PCR swap: the values
  // of PCRs 0 and 1 exchanged give another digest.
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 15), qd_);
  PcrBanks claimed = values_;
  std::swap(claimed[kTpmAlgSha256][0], claimed[kTpmAlgSha256][1]);
  TpmStep failed{};
  auto v = Verify(q, &failed, &claimed);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(failed, TpmStep::kPcrDigest);
}

// ---- ordering -----------------------------------------------------------------

TEST_F(QuoteVerifierTest, TheFirstFailingStepIsReported) {
  // Wrong nonce AND too small AND wrong digest: step 4 is reported.
  Bytes other(32, 0x00);
  SyntheticQuote q =
      SyntheticQuote::Build(values_, Range(kTpmAlgSha256, 0, 3), other);
  q.spec.pcr_digest = Bytes(32, 0xee);
  q.Resign();
  TpmStep failed{};
  EXPECT_FALSE(Verify(q, &failed).ok());
  EXPECT_EQ(failed, TpmStep::kQualifyingData);
  // ... and with another signer on top, step 2.
  q.signature = testing::SignTpm(TestKey::EccP256(), q.attest);
  EXPECT_FALSE(Verify(q, &failed).ok());
  EXPECT_EQ(failed, TpmStep::kSignature);
  // Without `failed`, the status alone is returned.
  auto ak = TpmPublic::Decode(q.ak_public);
  ASSERT_TRUE(ak.ok());
  QuoteInput in{q.attest, q.signature, &values_};
  EXPECT_EQ(QuoteVerifier::Verify(*ak, in, qd_, required_, nullptr)
                .status()
                .code(),
            StatusCode::kUnauthenticated);
}

// ---- steps catalogue and qualifying data ------------------------------------

TEST(TpmStepTest, IdsAreStableAndUnique) {
  std::set<std::string_view> ids;
  std::vector<std::string_view> expected = {
      "tpm.ak_bound",        "tpm.signature",     "tpm.attest_type",
      "tpm.qualifying_data", "tpm.pcr_selection", "tpm.pcr_digest",
      "tpm.replay",          "tpm.reference_values"};
  for (int i = 1; i <= kTpmStepCount; ++i) {
    TpmStep s = static_cast<TpmStep>(i);
    EXPECT_EQ(TpmStepId(s), expected[static_cast<size_t>(i - 1)]);
    EXPECT_FALSE(TpmStepTitle(s).empty());
    ids.insert(TpmStepId(s));
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kTpmStepCount));
  EXPECT_EQ(TpmStepTitle(TpmStep::kAkBound), "AK known and bound to this node");
}

TEST(QualifyingDataTest, IsSha256OfNonceAndClaimsDigest) {
  Bytes nonce(32);
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(i);
  std::string claims = "{\"format\":\"dpuaudit-report/1\"}";
  // Independent computation with OpenSSL.
  unsigned char inner[32], outer[32];
  unsigned int n = 0;
  ASSERT_EQ(EVP_Digest(claims.data(), claims.size(), inner, &n, EVP_sha256(),
                       nullptr),
            1);
  Bytes buf = nonce;
  buf.insert(buf.end(), inner, inner + 32);
  ASSERT_EQ(EVP_Digest(buf.data(), buf.size(), outer, &n, EVP_sha256(), nullptr),
            1);
  EXPECT_EQ(QualifyingData(nonce, AsBytes(claims)), Bytes(outer, outer + 32));
  EXPECT_NE(QualifyingData(nonce, AsBytes(claims + " ")),
            Bytes(outer, outer + 32));
}

TEST(QuotedPcrsTestPeerTest, BuildsQuotedPcrsForConsumers) {
  PcrBanks banks = {{kTpmAlgSha256, {{0, Bytes(32, 1)}}}};
  QuotedPcrs q = QuotedPcrsTestPeer::Make(banks, {{kTpmAlgSha256, {0}}});
  EXPECT_EQ(q.banks(), banks);
}

}  // namespace
}  // namespace dpuaudit::attest
