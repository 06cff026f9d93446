#include "report/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/jws.h"
#include "report/report_test_util.h"

namespace dpuaudit::report {
namespace {

using nlohmann::json;
using testing::SignRaw;
using testing::StatusHas;
using testing::StatusIs;
using testing::TestKey;

constexpr int64_t kNow = 1732950000;

AttestationResult Ear(const std::string& node, Decision d, int64_t iat = kNow,
                      int64_t ttl = 600, const std::string& instance = "verifier-a") {
  AttestationResult ar;
  ar.iat = iat;
  ar.exp = iat + ttl;
  ar.nonce = Base64UrlEncode(Bytes(32, 0x11));
  ar.verifier_id = {"dpuaudit", "dpuaudit-verifier 0.1.0", instance};
  Submod posture;
  posture.status = d == Decision::kAdmit ? ArStatus::kAffirming : ArStatus::kContraindicated;
  posture.trust_vector.configuration = d == Decision::kAdmit ? 2 : 96;
  ar.submods["posture"] = posture;
  ar.dpuaudit.node_id = node;
  ar.dpuaudit.decision = d;
  if (d == Decision::kDeny) {
    ar.dpuaudit.reasons.push_back({"host.privilege_level", Verdict::kFail, "RESTRICTED",
                                   "PRIVILEGED", "mlxprivhost", "", ClaimTier::kCorroborated});
  }
  ar.dpuaudit.report_sha256 = std::string(64, 'a');
  ar.dpuaudit.policy = {"zero-trust", std::string(64, 'b')};
  return ar;
}

std::string Sign(const AttestationResult& ar, const TestKey& k) {
  auto jwt = SignEar(ar, *k.signer, k.public_key().Thumbprint());
  EXPECT_TRUE(jwt.ok()) << jwt.status().ToString();
  return *jwt;
}

TrustedKeys Pin(const TestKey& k) {
  auto t = TrustedKeys::FromPem(k.public_key().ToPem(), "pem:test", kNow);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

AdmissionExpectation Expect(const std::string& node,
                            std::optional<std::string> verifier = std::nullopt) {
  AdmissionExpectation e;
  e.node_id = node;
  e.verifier_id = std::move(verifier);
  e.now = kNow;
  return e;
}

TEST(AdmissionTest, AdmitsOnlyAPinnedCurrentAdmitForTheNode) {
  TestKey a = TestKey::New();
  auto v = CheckAdmission(Sign(Ear("n1", Decision::kAdmit), a), Pin(a),
                          Expect("n1", "verifier-a"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->admit);
  EXPECT_EQ(v->reason, "");
  EXPECT_EQ(v->kid, a.public_key().Thumbprint());
  EXPECT_EQ(v->result.verifier_id.instance, "verifier-a");
}

TEST(AdmissionTest, AVerifiedDenyIsADenyVerdictWithTheFailingRules) {
  TestKey a = TestKey::New();
  auto v = CheckAdmission(Sign(Ear("n1", Decision::kDeny), a), Pin(a), Expect("n1"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->admit);
  EXPECT_EQ(v->reason, "host.privilege_level: observed PRIVILEGED, expected RESTRICTED");
}

// The attack of issue 12: a server that publishes its own key. Its EAR is
// refused unless that key was pinned, whatever JWKS it serves.
TEST(AdmissionTest, AnEarSignedByAKeyThatIsNotPinnedIsRefused) {
  TestKey real = TestKey::New();
  TestKey fake = TestKey::New();
  std::string kid = fake.public_key().Thumbprint();
  EXPECT_THAT(CheckAdmission(Sign(Ear("n1", Decision::kAdmit), fake), Pin(real),
                             Expect("n1")).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "EAR key id \"" + kid +
                           "\" is not pinned; it was not signed by a verifier you trust."));
  // Claiming the pinned kid does not help: the signature is checked under
  // the pinned key.
  auto forged = SignEar(Ear("n1", Decision::kAdmit), *fake.signer, real.public_key().Thumbprint());
  ASSERT_TRUE(forged.ok());
  EXPECT_THAT(CheckAdmission(*forged, Pin(real), Expect("n1")).status(),
              StatusHas(StatusCode::kUnauthenticated, "signature"));
}

TEST(AdmissionTest, OnlyEs256IsAccepted) {
  TestKey a = TestKey::New();
  std::string kid = a.public_key().Thumbprint();
  std::string payload = SerializeEar(Ear("n1", Decision::kAdmit));
  for (const char* alg : {"none", "HS256", "ES384"}) {
    std::string header =
        json{{"alg", alg}, {"kid", kid}, {"typ", "JWT"}}.dump();
    auto s = CheckAdmission(SignRaw(header, payload, *a.signer), Pin(a), Expect("n1")).status();
    EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << alg << ": " << s.ToString();
    EXPECT_THAT(s.message(), ::testing::HasSubstr(alg)) << s.ToString();
  }
}

TEST(AdmissionTest, TimeNodeAndVerifierChecksRefuseWithTheReason) {
  TestKey a = TestKey::New();
  TrustedKeys pinned = Pin(a);
  struct Case {
    const char* name;
    AttestationResult ear;
    AdmissionExpectation expect;
    StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {"iat in the future", Ear("n1", Decision::kAdmit, kNow + 3600), Expect("n1"),
       StatusCode::kInvalidArgument,
       "EAR issued at " + std::to_string(kNow + 3600) +
           " lies 3600 s in the future (now " + std::to_string(kNow) +
           ", allowed skew 60 s)."},
      {"exp past", Ear("n1", Decision::kAdmit, kNow - 700, 600), Expect("n1"),
       StatusCode::kDeadlineExceeded,
       "EAR expired at " + std::to_string(kNow - 100) + ", now " + std::to_string(kNow) + "."},
      {"exp exactly now", Ear("n1", Decision::kAdmit, kNow - 600, 600), Expect("n1"),
       StatusCode::kDeadlineExceeded,
       "EAR expired at " + std::to_string(kNow) + ", now " + std::to_string(kNow) + "."},
      {"another node", Ear("n2", Decision::kAdmit), Expect("n1"), StatusCode::kPermissionDenied,
       "EAR is for node \"n2\", not \"n1\"."},
      {"another verifier", Ear("n1", Decision::kAdmit), Expect("n1", "verifier-b"),
       StatusCode::kPermissionDenied, "EAR is from verifier \"verifier-a\", not \"verifier-b\"."},
      {"no verifier id", Ear("n1", Decision::kAdmit, kNow, 600, ""), Expect("n1", "verifier-a"),
       StatusCode::kPermissionDenied, "EAR names no verifier id; expected \"verifier-a\"."},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(CheckAdmission(Sign(c.ear, a), pinned, c.expect).status(),
                StatusIs(c.code, c.message))
        << c.name;
  }
  // Within the skew is fine.
  auto v = CheckAdmission(Sign(Ear("n1", Decision::kAdmit, kNow + 30), a), pinned, Expect("n1"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->admit);
}

TEST(AdmissionTest, NoPinnedKeysOrNoNodeIsAnError) {
  TestKey a = TestKey::New();
  std::string jwt = Sign(Ear("n1", Decision::kAdmit), a);
  EXPECT_THAT(CheckAdmission(jwt, TrustedKeys(), Expect("n1")).status(),
              StatusIs(StatusCode::kFailedPrecondition, "no verifier key is pinned."));
  EXPECT_THAT(CheckAdmission(jwt, Pin(a), Expect("")).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "the node id to check admission for is empty."));
}

TEST(AdmissionTest, ExpiredEarsVerifyForDisplayAndSayDeny) {
  TestKey a = TestKey::New();
  AdmissionExpectation e = Expect("n1");
  e.allow_expired = true;
  auto v = CheckAdmission(Sign(Ear("n1", Decision::kAdmit, kNow - 700, 600), a), Pin(a), e);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->admit);
  EXPECT_EQ(v->reason, "EAR expired at " + std::to_string(kNow - 100) + ".");
}

TEST(AdmissionTest, VerifierInstanceRoundTripsAndIsValidated) {
  AttestationResult ar = Ear("n1", Decision::kAdmit);
  json j = json::parse(SerializeEar(ar));
  EXPECT_EQ(j["ear.verifier-id"]["instance"], "verifier-a");
  auto back = ParseEar(AsBytes(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->verifier_id.instance, "verifier-a");
  // Omitted when empty, so EARs of older verifiers still parse.
  EXPECT_FALSE(json::parse(SerializeEar(Ear("n1", Decision::kAdmit, kNow, 600, "")))
                   ["ear.verifier-id"]
                       .contains("instance"));
  j["ear.verifier-id"]["instance"] = "bad id/../x";
  EXPECT_THAT(ParseEar(AsBytes(j.dump())).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "ear.verifier-id instance \"bad id/../x\" is not 1-128 characters of "
                       "[A-Za-z0-9._-]."));
  EXPECT_TRUE(ValidVerifierInstance("dpuaudit-verifier.eu-1_a"));
  EXPECT_FALSE(ValidVerifierInstance(""));
  EXPECT_FALSE(ValidVerifierInstance(std::string(129, 'a')));
}

AdmissionAnswer Answer(std::string ear, std::optional<std::string> decision,
                       std::string reason = "") {
  AdmissionAnswer a;
  a.ear = std::move(ear);
  a.decision = std::move(decision);
  a.reason = std::move(reason);
  return a;
}

TEST(DecideAdmissionTest, AdmitNeedsTheEarAndTheVerifierNow) {
  TestKey a = TestKey::New();
  std::string admit = Sign(Ear("n1", Decision::kAdmit), a);
  AdmissionDecision d = DecideAdmission(Answer(admit, "admit"), Pin(a), Expect("n1"));
  EXPECT_TRUE(d.admit);
  EXPECT_TRUE(d.verified);
  EXPECT_EQ(d.reason, "");
  EXPECT_EQ(d.kid, a.public_key().Thumbprint());
  EXPECT_EQ(d.expires_at, kNow + 600);
  EXPECT_EQ(d.verifier_id, "verifier-a");
  // An EAR file alone: its decision is the only one.
  EXPECT_TRUE(DecideAdmission(Answer(admit, std::nullopt), Pin(a), Expect("n1")).admit);
  // A verifier that says deny now (node suspended, a newer result) wins.
  d = DecideAdmission(Answer(admit, "deny", "node revoked"), Pin(a), Expect("n1"));
  EXPECT_FALSE(d.admit);
  EXPECT_TRUE(d.verified);
  EXPECT_EQ(d.reason, "the verifier answers deny: node revoked");
  d = DecideAdmission(Answer(admit, ""), Pin(a), Expect("n1"));
  EXPECT_EQ(d.reason, "the verifier answers without a decision");
}

TEST(DecideAdmissionTest, EveryFailureIsADenyWithItsReason) {
  TestKey a = TestKey::New();
  TestKey other = TestKey::New();
  AdmissionDecision d = DecideAdmission(Answer("", "admit"), Pin(a), Expect("n1"));
  EXPECT_FALSE(d.admit);
  EXPECT_FALSE(d.verified);
  EXPECT_EQ(d.reason, "the answer says admit but carries no EAR.");
  EXPECT_EQ(DecideAdmission(Answer("", "deny", "no result yet"), Pin(a), Expect("n1")).reason,
            "no result yet");
  EXPECT_EQ(DecideAdmission(Answer("", "deny"), Pin(a), Expect("n1")).reason,
            "the verifier has no attestation result for it.");
  d = DecideAdmission(Answer(Sign(Ear("n1", Decision::kAdmit), other), "admit"), Pin(a),
                      Expect("n1"));
  EXPECT_FALSE(d.admit);
  EXPECT_FALSE(d.verified);
  EXPECT_THAT(d.reason, ::testing::StartsWith("EAR rejected: EAR key id"));
  d = DecideAdmission(Answer(Sign(Ear("n2", Decision::kAdmit), a), "admit"), Pin(a),
                      Expect("n1"));
  EXPECT_THAT(d.reason, ::testing::HasSubstr("EAR rejected: EAR is for node \"n2\""));
  d = DecideAdmission(Answer(Sign(Ear("n1", Decision::kDeny), a), "deny"), Pin(a),
                      Expect("n1"));
  EXPECT_FALSE(d.admit);
  EXPECT_TRUE(d.verified);
  EXPECT_EQ(d.reason, "host.privilege_level: observed PRIVILEGED, expected RESTRICTED");
  AdmissionAnswer bad = ParseAdmissionAnswer("<html>proxy error</html>");
  EXPECT_TRUE(bad.malformed);
  EXPECT_EQ(DecideAdmission(bad, Pin(a), Expect("n1")).reason,
            "the verifier's answer is not a JSON object.");
}

TEST(DecideAdmissionTest, ParsesTheAdmissionEndpointsAnswer) {
  AdmissionAnswer a = ParseAdmissionAnswer(
      R"({"node_id":"n1","decision":"deny","reason":"revoked","ear":"x.y.z","expires_at":5})");
  EXPECT_FALSE(a.malformed);
  EXPECT_EQ(a.decision, "deny");
  EXPECT_EQ(a.reason, "revoked");
  EXPECT_EQ(a.ear, "x.y.z");
  // Members of another type count as absent; never throws.
  a = ParseAdmissionAnswer(R"({"decision":1,"ear":["x"]})");
  EXPECT_FALSE(a.malformed);
  EXPECT_EQ(a.decision, "");
  EXPECT_EQ(a.ear, "");
  EXPECT_TRUE(ParseAdmissionAnswer("[1]").malformed);
  EXPECT_TRUE(ParseAdmissionAnswer("").malformed);
}

TEST(TrustFileTest, RoundTripsAndRefusesEditedOrDuplicateKeys) {
  TestKey a = TestKey::New();
  TestKey b = TestKey::New();
  TrustedKeys t = Pin(a);
  auto jwks = TrustedKeys::FromJwks(Jwks({{"kid-b", b.public_key()}}), "jwks:f", kNow);
  ASSERT_TRUE(jwks.ok()) << jwks.status().ToString();
  ASSERT_TRUE(t.Add(jwks->keys()[0]).value());
  EXPECT_FALSE(t.Add(jwks->keys()[0]).value());  // same key again: no-op
  auto clash = t.Add(TrustedKey{"kid-b", a.public_key(), a.public_key().Thumbprint(), "x", 0});
  EXPECT_THAT(clash.status(),
              StatusIs(StatusCode::kAlreadyExists,
                       "key id \"kid-b\" is already pinned to another key (thumbprint " +
                           b.public_key().Thumbprint() + "); remove it first."));

  std::string text = t.SerializeTrustFile();
  auto again = TrustedKeys::ParseTrustFile(AsBytes(text));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->keys().size(), 2u);
  EXPECT_EQ(again->keys()[1].kid, "kid-b");
  EXPECT_EQ(again->keys()[1].thumbprint, b.public_key().Thumbprint());
  EXPECT_TRUE(again->keys()[1].key == b.public_key());
  EXPECT_TRUE(again->Remove("kid-b"));
  EXPECT_FALSE(again->Remove("kid-b"));

  // A thumbprint that does not match its key (an edited file).
  json j = json::parse(text);
  j["keys"][1]["thumbprint"] = a.public_key().Thumbprint();
  EXPECT_THAT(TrustedKeys::ParseTrustFile(AsBytes(j.dump())).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "keys[1].thumbprint \"" + a.public_key().Thumbprint() +
                           "\" is not the thumbprint of its jwk (" +
                           b.public_key().Thumbprint() + ")."));
  json dup = json::parse(text);
  dup["keys"][1] = dup["keys"][0];
  EXPECT_THAT(TrustedKeys::ParseTrustFile(AsBytes(dup.dump())).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "keys[1]: kid \"" + a.public_key().Thumbprint() + "\" appears twice."));
  json unknown = json::parse(text);
  unknown["keys"][0]["trusted_by_default"] = true;
  EXPECT_THAT(TrustedKeys::ParseTrustFile(AsBytes(unknown.dump())).status(),
              StatusHas(StatusCode::kInvalidArgument, "trusted_by_default"));
  json format = json::parse(text);
  format["format"] = "dpuaudit-trust/2";
  EXPECT_THAT(TrustedKeys::ParseTrustFile(AsBytes(format.dump())).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "trust file format \"dpuaudit-trust/2\" is not \"dpuaudit-trust/1\"."));
}

}  // namespace
}  // namespace dpuaudit::report
