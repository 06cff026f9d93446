// report/challenge_proof.h: what a challenge proof must be to verify.
#include "report/challenge_proof.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "report/jws.h"

namespace dpuaudit::report {
namespace {

using ::testing::HasSubstr;

class ChallengeProofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = std::make_unique<EcPrivateKey>(*EcPrivateKey::Generate());
    signer_ = std::move(*Es256Signer::New(*key_));
    verifier_ = std::move(*Es256Verifier::New(key_->public_key()));
  }
  // A proof over `payload` with the given kid and typ.
  std::string Raw(const std::string& payload, const std::string& kid = "node-a",
                  const std::string& typ = std::string(kChallengeProofTyp)) {
    JwsHeader h;
    h.kid = kid;
    h.typ = typ;
    return *SignCompact(AsBytes(payload), *signer_, h);
  }
  std::unique_ptr<EcPrivateKey> key_;
  std::unique_ptr<Signer> signer_;
  std::unique_ptr<Verifier> verifier_;
};

TEST_F(ChallengeProofTest, SignedProofVerifiesWithAFreshJti) {
  auto a = SignChallengeProof("node-a", 1800000000, *signer_);
  auto b = SignChallengeProof("node-a", 1800000000, *signer_);
  ASSERT_TRUE(a.ok() && b.ok());
  auto pa = VerifyChallengeProof(*a, *verifier_);
  auto pb = VerifyChallengeProof(*b, *verifier_);
  ASSERT_TRUE(pa.ok()) << pa.status().ToString();
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(pa->node_id, "node-a");
  EXPECT_EQ(pa->iat, 1800000000);
  EXPECT_EQ(pa->jti.size(), 22u);
  EXPECT_NE(pa->jti, pb->jti);
  auto body = nlohmann::json::parse(*ChallengeRequestBody("node-a", 1, *signer_));
  EXPECT_EQ(body["node_id"], "node-a");
  EXPECT_TRUE(body["proof"].is_string());
}

TEST_F(ChallengeProofTest, Rejects) {
  auto other_key = EcPrivateKey::Generate();
  auto other = Es256Signer::New(*other_key);
  const std::string ok_payload =
      R"({"iat":1,"jti":"AAAAAAAAAAAAAAAAAAAAAA","node_id":"node-a"})";
  struct Case {
    std::string name, jws;
    StatusCode code;
    std::string message;
  };
  std::vector<Case> cases = {
      {"another key", *SignChallengeProof("node-a", 1, **other),
       StatusCode::kUnauthenticated, ""},
      {"wrong typ", Raw(ok_payload, "node-a", "dpuaudit-report+jws"),
       StatusCode::kInvalidArgument, "typ"},
      {"kid differs", Raw(ok_payload, "node-b"), StatusCode::kInvalidArgument,
       "differs from its kid"},
      {"extra member",
       Raw(R"({"aud":"x","iat":1,"jti":"AAAAAAAAAAAAAAAAAAAAAA","node_id":"node-a"})"),
       StatusCode::kInvalidArgument, "exactly node_id, iat and jti"},
      {"iat a string", Raw(R"({"iat":"1","jti":"AAAAAAAAAAAAAAAAAAAAAA","node_id":"node-a"})"),
       StatusCode::kInvalidArgument, "iat an integer"},
      {"iat overflows", Raw(R"({"iat":18446744073709551615,"jti":"AAAAAAAAAAAAAAAAAAAAAA","node_id":"node-a"})"),
       StatusCode::kInvalidArgument, "out of range"},
      {"short jti", Raw(R"({"iat":1,"jti":"AAAA","node_id":"node-a"})"),
       StatusCode::kInvalidArgument, "22-64 characters"},
      {"jti not base64url", Raw(R"({"iat":1,"jti":"AAAAAAAAAAAAAAAAAAAAA/","node_id":"node-a"})"),
       StatusCode::kInvalidArgument, "base64url"},
      {"oversized", std::string(kMaxChallengeProofBytes + 1, 'a'),
       StatusCode::kResourceExhausted, "exceeds 2048"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    auto p = VerifyChallengeProof(k.jws, *verifier_);
    EXPECT_EQ(p.status().code(), k.code) << p.status().ToString();
    EXPECT_THAT(p.status().message(), HasSubstr(k.message));
  }
}

}  // namespace
}  // namespace dpuaudit::report
