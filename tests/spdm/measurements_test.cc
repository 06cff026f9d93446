#include "spdm/measurements.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/bytes.h"
#include "testing/shared_redfish_fixtures.h"
#include "testing/spdm_responder.h"
#include "testing/status_matchers.h"

namespace dpuaudit::spdm {
namespace {

using ::dpuaudit::testing::StatusCodeIs;
using ::dpuaudit::testing::StatusHas;

// The real GB100 transcript (NVIDIA bare-metal-manager-core, see the
// fixture's PROVENANCE.md): GET_MEASUREMENTS for index 26 with a signature,
// and its MEASUREMENTS response, ECDSA P-384 over SHA-384.
constexpr char kRealNonce[] =
    "947841b0f9d0794c61a655665e2c5f2d62574946fe899a3e6837dc5ec33b80f7";

struct RealEvidence {
  Bytes transcript;
  SpdmPublicKey leaf;
};

StatusOr<RealEvidence> LoadReal(const std::string& b64, const std::string& pem) {
  std::string text = b64;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  DPA_ASSIGN_OR_RETURN(Bytes transcript, Base64Decode(text));
  DPA_ASSIGN_OR_RETURN(SpdmPublicKey leaf, SpdmPublicKey::FromCertificatePem(pem));
  return RealEvidence{std::move(transcript), std::move(leaf)};
}

TEST(SpdmRealEvidenceTest, Gb100TranscriptVerifiesWithItsLeafAndOurNonce) {
  SHARED_REDFISH_OR_SKIP(b64, "spdm/bmm-nras-gpu-gb100-evidence.b64");
  SHARED_REDFISH_OR_SKIP(pem, "spdm/bmm-nras-gpu-gb100-leaf.pem");
  auto real = LoadReal(b64, pem);
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  ASSERT_EQ(real->transcript.size(), 190u);
  EXPECT_EQ(real->leaf.curve(), "P-384");
  auto v = VerifySignedMeasurements(real->transcript, real->leaf,
                                    SigningAlgorithm::kEcdsaP384,
                                    HashingAlgorithm::kSha384,
                                    *HexDecode(kRealNonce));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  const Transcript& t = v->transcript();
  EXPECT_EQ(t.request.version, 0x11);
  EXPECT_TRUE(t.request.signature_requested);
  EXPECT_EQ(t.request.operation, 26);
  EXPECT_EQ(t.request.slot_id, 0);
  EXPECT_EQ(t.signed_size, 94u);
  ASSERT_EQ(v->blocks().size(), 1u);
  const MeasurementBlock& b = v->blocks()[0];
  EXPECT_EQ(b.index, 26);
  EXPECT_EQ(b.specification, 1);
  ASSERT_TRUE(b.dmtf.has_value());
  EXPECT_EQ(b.dmtf->value_type, 0x82);
  EXPECT_TRUE(b.dmtf->raw_bit_stream());
  EXPECT_EQ(DmtfValueKindName(b.dmtf->value_type), "hardware_configuration");
  EXPECT_EQ(HexEncode(b.dmtf->value), "a6806d1c15c79889");
  EXPECT_EQ(HexEncode(t.response.nonce),
            "cbc952e49d4c733d9f6f15fabc432a8d7ff417ca085466c161e0b6f285f035b3");
  EXPECT_TRUE(t.response.opaque_data.empty());
  EXPECT_EQ(v->signed_digest_hex(),
            "01bcd9e4eb6b84dab2cf4bac5fa39a07aeabb7a3421eb376f0f632502d81f7ec"
            "3ff6fde811283177aa2d93da2d4f8871");
}

TEST(SpdmRealEvidenceTest, Gb100TranscriptDoesNotVerifyUnderAnotherHash) {
  SHARED_REDFISH_OR_SKIP(b64, "spdm/bmm-nras-gpu-gb100-evidence.b64");
  SHARED_REDFISH_OR_SKIP(pem, "spdm/bmm-nras-gpu-gb100-leaf.pem");
  auto real = LoadReal(b64, pem);
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  for (HashingAlgorithm h : {HashingAlgorithm::kSha256, HashingAlgorithm::kSha512}) {
    EXPECT_THAT(VerifySignedMeasurements(real->transcript, real->leaf,
                                         SigningAlgorithm::kEcdsaP384, h,
                                         *HexDecode(kRealNonce))
                    .status(),
                StatusHas(StatusCode::kUnauthenticated, ("does not verify")));
  }
}

TEST(SpdmRealEvidenceTest, EveryFlippedBitOfTheRealTranscriptIsRejected) {
  SHARED_REDFISH_OR_SKIP(b64, "spdm/bmm-nras-gpu-gb100-evidence.b64");
  SHARED_REDFISH_OR_SKIP(pem, "spdm/bmm-nras-gpu-gb100-leaf.pem");
  auto real = LoadReal(b64, pem);
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  for (size_t i = 0; i < real->transcript.size(); ++i) {
    Bytes corrupt = real->transcript;
    corrupt[i] ^= 0x01;
    auto v = VerifySignedMeasurements(corrupt, real->leaf,
                                      SigningAlgorithm::kEcdsaP384,
                                      HashingAlgorithm::kSha384,
                                      *HexDecode(kRealNonce));
    EXPECT_THAT(v.status(), StatusCodeIs(StatusCode::kUnauthenticated)) << "byte " << i;
  }
}

TEST(SpdmRealEvidenceTest, ARealTranscriptForAnotherNonceIsAReplay) {
  SHARED_REDFISH_OR_SKIP(b64, "spdm/bmm-nras-gpu-gb100-evidence.b64");
  SHARED_REDFISH_OR_SKIP(pem, "spdm/bmm-nras-gpu-gb100-leaf.pem");
  auto real = LoadReal(b64, pem);
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  const Bytes ours(32, 0x11);
  EXPECT_THAT(VerifySignedMeasurements(real->transcript, real->leaf,
                                       SigningAlgorithm::kEcdsaP384,
                                       HashingAlgorithm::kSha384, ours)
                  .status(),
              StatusHas(StatusCode::kFailedPrecondition, (std::string("nonce ") + kRealNonce + " is not ours")));
}

TEST(SpdmRealEvidenceTest, CorruptedTestSupportEvidenceIsRejectedPrecisely) {
  SHARED_REDFISH_OR_SKIP(json_text, "spdm/bmm-test-support-evidence.json");
  SHARED_REDFISH_OR_SKIP(pem, "spdm/bmm-nras-gpu-gb100-leaf.pem");
  const size_t start = json_text.find("\"SignedMeasurements\": \"");
  ASSERT_NE(start, std::string::npos);
  const size_t from = start + std::string("\"SignedMeasurements\": \"").size();
  const std::string b64 = json_text.substr(from, json_text.find('"', from) - from);
  auto transcript = Base64Decode(b64);
  ASSERT_TRUE(transcript.ok()) << transcript.status().ToString();
  auto leaf = SpdmPublicKey::FromCertificatePem(pem);
  ASSERT_TRUE(leaf.ok());
  // Signed: refused before anything is parsed.
  EXPECT_THAT(VerifySignedMeasurements(*transcript, *leaf,
                                       SigningAlgorithm::kEcdsaP384,
                                       HashingAlgorithm::kSha512, Bytes(32, 0))
                  .status(),
              StatusCodeIs(StatusCode::kUnauthenticated));
  // Parsed for display: byte 37 is not a MEASUREMENTS SPDMVersion.
  EXPECT_THAT(ParseTranscript(*transcript, 96).status(),
              StatusHas(StatusCode::kInvalidArgument, ("MEASUREMENTS SPDMVersion 0x35 at byte 37")));
}

// ---- synthetic transcripts, signed at test time ----

struct Keyed {
  EvpPkeyPtr key;
  SpdmPublicKey pub;
};

Keyed MakeKeyed(const char* curve) {
  Keyed k;
  k.key = testing::MakeEcKey(curve);
  X509Ptr cert = testing::SelfSigned(k.key.get(), "leaf");
  k.pub = *SpdmPublicKey::FromCertificate(cert.get());
  return k;
}

testing::SpdmExchange TwoBlocks() {
  testing::SpdmExchange e;
  e.blocks.push_back({2, 1, 0x01, Bytes(64, 0x22)});
  e.blocks.push_back({5, 1, 0x02, Bytes(64, 0x55)});
  return e;
}

TEST(SpdmMeasurementsTest, P256AndP384WithEveryHashVerify) {
  struct Case {
    const char* curve;
    SigningAlgorithm alg;
    size_t half;
  };
  for (const Case& c : {Case{"P-256", SigningAlgorithm::kEcdsaP256, 32},
                        Case{"P-384", SigningAlgorithm::kEcdsaP384, 48}}) {
    Keyed k = MakeKeyed(c.curve);
    for (auto [h, md] : {std::pair{HashingAlgorithm::kSha256, EVP_sha256()},
                         std::pair{HashingAlgorithm::kSha384, EVP_sha384()},
                         std::pair{HashingAlgorithm::kSha512, EVP_sha512()}}) {
      testing::SpdmExchange e = TwoBlocks();
      Bytes t = testing::SpdmTranscript(e, k.key.get(), md, c.half);
      auto v = VerifySignedMeasurements(t, k.pub, c.alg, h, e.nonce);
      ASSERT_TRUE(v.ok()) << c.curve << " " << HashingAlgorithmName(h) << ": "
                          << v.status().ToString();
      ASSERT_EQ(v->blocks().size(), 2u);
      EXPECT_EQ(v->blocks()[1].index, 5);
      EXPECT_EQ(v->blocks()[1].dmtf->value, Bytes(64, 0x55));
      EXPECT_EQ(v->signed_digest_hex().size(), 2 * DigestSize(h));
    }
  }
}

TEST(SpdmMeasurementsTest, AKeyOnAnotherCurveThanTheAlgorithmIsRefused) {
  Keyed k = MakeKeyed("P-256");
  testing::SpdmExchange e = TwoBlocks();
  Bytes t = testing::SpdmTranscript(e, k.key.get(), EVP_sha384(), 32);
  EXPECT_THAT(VerifySignedMeasurements(t, k.pub, SigningAlgorithm::kEcdsaP384,
                                       HashingAlgorithm::kSha384, e.nonce)
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, ("needs a P-384 key; the leaf's is P-256")));
}

TEST(SpdmMeasurementsTest, AnotherKeyIsUnauthenticated) {
  Keyed signer = MakeKeyed("P-384");
  Keyed other = MakeKeyed("P-384");
  testing::SpdmExchange e = TwoBlocks();
  Bytes t = testing::SpdmTranscript(e, signer.key.get(), EVP_sha384(), 48);
  EXPECT_THAT(VerifySignedMeasurements(t, other.pub, SigningAlgorithm::kEcdsaP384,
                                       HashingAlgorithm::kSha384, e.nonce)
                  .status(),
              StatusCodeIs(StatusCode::kUnauthenticated));
}

// Malformed but correctly signed: the parser, not the signature, refuses.
struct MalformedCase {
  const char* name;
  void (*edit)(testing::SpdmExchange&);
  const char* message;
};

class SpdmMalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(SpdmMalformedTest, IsRefusedWithTheFieldAndOffset) {
  Keyed k = MakeKeyed("P-384");
  testing::SpdmExchange e = TwoBlocks();
  GetParam().edit(e);
  Bytes t = testing::SpdmTranscript(e, k.key.get(), EVP_sha384(), 48);
  auto v = VerifySignedMeasurements(t, k.pub, SigningAlgorithm::kEcdsaP384,
                                    HashingAlgorithm::kSha384, Bytes(32, 0xA5));
  EXPECT_THAT(v.status(), StatusHas(StatusCode::kInvalidArgument, (GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SpdmMalformedTest,
    ::testing::Values(
        MalformedCase{"Spdm12", [](testing::SpdmExchange& e) { e.version = 0x12; },
                      "GET_MEASUREMENTS SPDMVersion 0x12 at byte 0 is not supported"},
        MalformedCase{"Spdm10", [](testing::SpdmExchange& e) { e.version = 0x10; },
                      "is not SPDM 1.1"},
        MalformedCase{"BlockCountTooHigh",
                      [](testing::SpdmExchange& e) { e.number_of_blocks = 3; },
                      "NumberOfBlocks is 3 but MeasurementRecordLength 142 holds 2"},
        MalformedCase{"DuplicateIndex",
                      [](testing::SpdmExchange& e) { e.blocks[1].index = 2; },
                      "Index 2 at byte 116 appears twice"},
        MalformedCase{"ReservedIndex",
                      [](testing::SpdmExchange& e) { e.blocks[0].index = 0; },
                      "Index 0 at byte 45 is reserved"},
        MalformedCase{"WrongSlot",
                      [](testing::SpdmExchange& e) { e.response_param2 = 3; },
                      "MEASUREMENTS slot 3 at byte 40 is not the requested slot 0"},
        MalformedCase{"SlotOutOfRange", [](testing::SpdmExchange& e) { e.slot = 9; },
                      "SlotIDParam 9 at byte 36 is not a slot"},
        MalformedCase{"OneIndexAskedTwoGiven",
                      [](testing::SpdmExchange& e) { e.operation = 2; },
                      "does not carry exactly the requested index 2"},
        MalformedCase{"ReservedParam1Bits",
                      [](testing::SpdmExchange& e) { e.request_param1 = 0x03; },
                      "Param1 0x03 at byte 2 has reserved bits set"},
        MalformedCase{"HugeOpaque",
                      [](testing::SpdmExchange& e) { e.opaque = Bytes(1025, 0); },
                      "OpaqueLength 1025"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) {
      return std::string(info.param.name);
    });

TEST(SpdmMeasurementsTest, TrailingBytesBreakTheSignatureSplit) {
  // The signature is the last 96 bytes, so bytes after it move the split:
  // the signature no longer verifies (never parsed).
  Keyed k = MakeKeyed("P-384");
  testing::SpdmExchange e = TwoBlocks();
  e.trailing = {0x00};
  Bytes t = testing::SpdmTranscript(e, k.key.get(), EVP_sha384(), 48);
  EXPECT_THAT(VerifySignedMeasurements(t, k.pub, SigningAlgorithm::kEcdsaP384,
                                       HashingAlgorithm::kSha384, e.nonce)
                  .status(),
              StatusCodeIs(StatusCode::kUnauthenticated));
  EXPECT_THAT(ParseTranscript(t, 96).status(),
              StatusHas(StatusCode::kInvalidArgument, ("1 bytes trail")));
}

TEST(SpdmMeasurementsTest, TruncatedAndOversizedTranscriptsAreRefused) {
  Keyed k = MakeKeyed("P-384");
  EXPECT_THAT(VerifySignedMeasurements(Bytes(96, 0), k.pub,
                                       SigningAlgorithm::kEcdsaP384,
                                       HashingAlgorithm::kSha384, Bytes(32, 0))
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, ("too short")));
  EXPECT_THAT(VerifySignedMeasurements(Bytes(kMaxTranscriptBytes + 1, 0), k.pub,
                                       SigningAlgorithm::kEcdsaP384,
                                       HashingAlgorithm::kSha384, Bytes(32, 0))
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, ("exceeds 65536")));
  for (size_t cut : {1u, 4u, 36u, 37u, 45u, 60u}) {
    testing::SpdmExchange e = TwoBlocks();
    Bytes t = testing::SpdmSignedPart(e);
    t.resize(cut);
    EXPECT_THAT(ParseTranscript(t, 0).status(),
                StatusCodeIs(StatusCode::kOutOfRange)) << cut;
  }
}

TEST(SpdmMeasurementsTest, RedfishAlgorithmNames) {
  EXPECT_EQ(*ParseSigningAlgorithm("TPM_ALG_ECDSA_ECC_NIST_P384"),
            SigningAlgorithm::kEcdsaP384);
  EXPECT_EQ(*ParseSigningAlgorithm("TPM_ALG_ECDSA_ECC_NIST_P256"),
            SigningAlgorithm::kEcdsaP256);
  EXPECT_THAT(ParseSigningAlgorithm("TPM_ALG_RSASSA").status(),
              StatusHas(StatusCode::kInvalidArgument, ("\"TPM_ALG_RSASSA\"")));
  EXPECT_EQ(*ParseHashingAlgorithm("TPM_ALG_SHA_512"), HashingAlgorithm::kSha512);
  EXPECT_THAT(ParseHashingAlgorithm("TPM_ALG_SHA1").status(),
              StatusCodeIs(StatusCode::kInvalidArgument));
  EXPECT_EQ(SignatureSize(SigningAlgorithm::kEcdsaP384), 96u);
  EXPECT_EQ(DmtfValueKindName(0x01), "mutable_firmware");
  EXPECT_EQ(DmtfValueKindName(0x87), "firmware_security_version");
  EXPECT_EQ(DmtfValueKindName(0x10), "type_16");
}

}  // namespace
}  // namespace dpuaudit::spdm
