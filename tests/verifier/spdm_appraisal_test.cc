#include "verifier/spdm_appraisal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/spdm_responder.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Signed measurements made now: IRoT-like blocks, security version `svn`.
spdm::VerifiedMeasurements Measure(uint8_t svn, const std::string& nic = "nic 1",
                                   bool extra = false) {
  static const EvpPkeyPtr key = testing::MakeEcKey("P-384");
  static const X509Ptr cert = testing::SelfSigned(key.get(), "leaf");
  testing::SpdmExchange e;
  e.blocks = {{2, 1, 0x01, Bytes(64, 0x22)},
              {3, 1, 0x01, Bytes(nic.begin(), nic.end())},
              {11, 1, 0x87, Bytes{svn, 0, 0, 0}}};
  if (extra) e.blocks.push_back({12, 1, 0x02, Bytes(64, 0x12)});
  Bytes t = testing::SpdmTranscript(e, key.get(), EVP_sha384(), 48);
  auto v = spdm::VerifySignedMeasurements(t, *spdm::SpdmPublicKey::FromCertificate(cert.get()),
                                          spdm::SigningAlgorithm::kEcdsaP384,
                                          spdm::HashingAlgorithm::kSha384, e.nonce);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return std::move(v).value();
}

TEST(SpdmAppraisalTest, FirstSeenRecordsTheBaselineAndSaysItIsTrustOnFirstUse) {
  SpdmAppraisal a = AppraiseMeasurements("irot", "BMC x IRoT", Measure(3), std::nullopt);
  EXPECT_TRUE(a.first_seen);
  EXPECT_EQ(a.finding.id, "irot.measurements");
  EXPECT_EQ(a.finding.verdict, Verdict::kPass);
  EXPECT_THAT(a.finding.reason, HasSubstr("trust on first use"));
  EXPECT_EQ(a.proposed.values.at(11), "87:03000000");
  EXPECT_EQ(a.proposed.values.size(), 3u);
}

TEST(SpdmAppraisalTest, SameValuesPassChangedValuesNeedApproval) {
  const MeasurementBaseline base = BaselineOf(Measure(3));
  SpdmAppraisal same = AppraiseMeasurements("irot", "s", Measure(3), base);
  EXPECT_EQ(same.finding.verdict, Verdict::kPass);
  EXPECT_EQ(same.finding.observed, "baseline");
  SpdmAppraisal changed = AppraiseMeasurements("irot", "s", Measure(3, "nic 2", true), base);
  EXPECT_EQ(changed.finding.verdict, Verdict::kFail);
  EXPECT_EQ(changed.finding.observed, "changed");
  EXPECT_FALSE(changed.contraindicated);
  EXPECT_THAT(changed.changed, ElementsAre(3, 12));
  EXPECT_THAT(changed.finding.reason, HasSubstr("index 3 changed; index 12 added"));
  // A higher security version is a change to approve, not a rollback.
  SpdmAppraisal newer = AppraiseMeasurements("irot", "s", Measure(4), base);
  EXPECT_EQ(newer.finding.observed, "changed");
  EXPECT_FALSE(newer.contraindicated);
}

TEST(SpdmAppraisalTest, ALoweredSecurityVersionIsARollbackAndContraindicated) {
  const MeasurementBaseline base = BaselineOf(Measure(3));
  SpdmAppraisal a = AppraiseMeasurements("irot", "s", Measure(2), base);
  EXPECT_EQ(a.finding.verdict, Verdict::kFail);
  EXPECT_EQ(a.finding.observed, "rollback");
  EXPECT_TRUE(a.contraindicated);
  EXPECT_THAT(a.rolled_back, ElementsAre(11));
  EXPECT_THAT(a.finding.reason, HasSubstr("index 11 3 -> 2"));
  // The baseline stays the approved one: `proposed` is only a proposal.
  EXPECT_EQ(a.proposed.values.at(11), "87:02000000");
}

TEST(SpdmAppraisalTest, AMissingIndexIsAChange) {
  MeasurementBaseline base = BaselineOf(Measure(3));
  base.values[9] = "02:" + std::string(128, 'a');
  SpdmAppraisal a = AppraiseMeasurements("erot", "s", Measure(3), base);
  EXPECT_EQ(a.finding.id, "erot.measurements");
  EXPECT_THAT(a.finding.reason, HasSubstr("index 9 no longer reported"));
}

}  // namespace
}  // namespace dpuaudit::verifier
