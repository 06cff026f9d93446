#include "report/ear.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "report/jws.h"
#include "report/report_test_util.h"

namespace dpuaudit::report {
namespace {

using nlohmann::json;
using testing::AcceptAllVerifier;
using testing::SignRaw;
using testing::StatusHas;
using testing::StatusIs;
using testing::TestKey;

constexpr int64_t kIat = 1732950000;

AttestationResult FullEar() {
  AttestationResult ar;
  ar.iat = kIat;
  ar.exp = kIat + 600;
  ar.nonce = Base64UrlEncode(Bytes(32, 0x11));
  ar.verifier_id = {"dpuaudit", "dpuaudit-verifier 0.1.0"};
  Submod agent;
  agent.status = ArStatus::kWarning;
  agent.trust_vector.instance_identity = 2;
  agent.trust_vector.configuration = 32;  // warning
  agent.trust_vector.executables = 3;
  agent.trust_vector.file_system = 0;
  agent.trust_vector.hardware = 2;
  agent.trust_vector.runtime_opaque = 1;
  agent.trust_vector.storage_opaque = -1;
  agent.trust_vector.sourced_data = 2;
  agent.appraisal_policy_id = "policy:dpuaudit/default@1";
  ar.submods["arm-agent"] = agent;
  Submod posture;
  posture.status = ArStatus::kAffirming;
  posture.trust_vector.configuration = 2;
  ar.submods["posture"] = posture;
  ar.dpuaudit.node_id = "dpu-rack7.slot3";
  ar.dpuaudit.decision = Decision::kAdmit;
  ar.dpuaudit.reasons.push_back(
      {"host.privilege_level", Verdict::kPass, "RESTRICTED", "RESTRICTED",
       "mlxprivhost -d /dev/mst/x q", "", ClaimTier::kCorroborated});
  ar.dpuaudit.reasons.push_back({"fw.version", Verdict::kUnknown, "32.41.1000",
                                 "", "bfver", "bfver timed out",
                                 ClaimTier::kSelfReported});
  ar.dpuaudit.reasons.back().action = "warn";
  ar.dpuaudit.reasons.back().remediation = "re-run bfver on the DPU Arm";
  ar.dpuaudit.report_sha256 = std::string(64, 'a');
  ar.dpuaudit.policy = {"default", std::string(64, 'b')};
  return ar;
}

TEST(EarTest, TiersFollowAr4si) {
  struct Case {
    int value;
    ArStatus tier;
  } cases[] = {
      {0, ArStatus::kNone},
      {1, ArStatus::kNone},
      {-1, ArStatus::kNone},
      {2, ArStatus::kAffirming},
      {31, ArStatus::kAffirming},
      {-2, ArStatus::kAffirming},
      {-32, ArStatus::kAffirming},
      {32, ArStatus::kWarning},
      {95, ArStatus::kWarning},
      {-33, ArStatus::kWarning},
      {-96, ArStatus::kWarning},
      {96, ArStatus::kContraindicated},
      {127, ArStatus::kContraindicated},
      {-97, ArStatus::kContraindicated},
      {-128, ArStatus::kContraindicated},
      {1000, ArStatus::kContraindicated},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(TierOf(c.value), c.tier) << c.value;
  }
}

TEST(EarTest, StatusOfVectorIsTheWorstTier) {
  TrustVector v;
  EXPECT_EQ(StatusOfVector(v), ArStatus::kNone);
  v.hardware = 0;
  EXPECT_EQ(StatusOfVector(v), ArStatus::kNone);
  v.executables = 2;
  EXPECT_EQ(StatusOfVector(v), ArStatus::kAffirming);
  v.configuration = 33;
  EXPECT_EQ(StatusOfVector(v), ArStatus::kWarning);
  v.sourced_data = 96;
  EXPECT_EQ(StatusOfVector(v), ArStatus::kContraindicated);
  v.sourced_data = 3;
  EXPECT_EQ(StatusOfVector(v), ArStatus::kWarning);
}

TEST(EarTest, NamesRoundTrip) {
  for (ArStatus s : {ArStatus::kNone, ArStatus::kAffirming, ArStatus::kWarning,
                     ArStatus::kContraindicated}) {
    EXPECT_EQ(ParseArStatus(ArStatusName(s)), s);
  }
  EXPECT_EQ(ParseArStatus("Affirming"), std::nullopt);
  for (ClaimTier t : {ClaimTier::kHardwareRooted, ClaimTier::kCorroborated,
                      ClaimTier::kSelfReported}) {
    EXPECT_EQ(ParseClaimTier(ClaimTierName(t)), t);
  }
  EXPECT_EQ(DecisionName(Decision::kAdmit), "admit");
  EXPECT_EQ(DecisionName(Decision::kDeny), "deny");
}

TEST(EarTest, SerialisationUsesTheDraftClaimNames) {
  json j = json::parse(SerializeEar(FullEar()));
  EXPECT_EQ(j["eat_profile"], "tag:github.com,2023:veraison/ear");
  EXPECT_EQ(j["iat"], kIat);
  EXPECT_EQ(j["exp"], kIat + 600);
  EXPECT_EQ(j["eat_nonce"], Base64UrlEncode(Bytes(32, 0x11)));
  EXPECT_EQ(j["ear.verifier-id"]["developer"], "dpuaudit");
  const json& agent = j["submods"]["arm-agent"];
  EXPECT_EQ(agent["ear.status"], "warning");
  EXPECT_EQ(agent["ear.appraisal-policy-id"], "policy:dpuaudit/default@1");
  const json& vec = agent["ear.trustworthiness-vector"];
  EXPECT_EQ(vec.size(), 8u);
  EXPECT_EQ(vec["instance-identity"], 2);
  EXPECT_EQ(vec["file-system"], 0);
  EXPECT_EQ(vec["runtime-opaque"], 1);
  EXPECT_EQ(vec["storage-opaque"], -1);
  EXPECT_EQ(vec["sourced-data"], 2);
  EXPECT_EQ(j["submods"]["posture"]["ear.trustworthiness-vector"].size(), 1u);
  EXPECT_FALSE(j["submods"]["posture"].contains("ear.appraisal-policy-id"));
  EXPECT_EQ(j["dpuaudit"]["decision"], "admit");
  EXPECT_EQ(j["dpuaudit"]["reasons"][1]["tier"], "self-reported");
  EXPECT_EQ(j["dpuaudit"]["reasons"][1]["verdict"], "unknown");
  EXPECT_EQ(j["dpuaudit"]["policy"]["name"], "default");
}

TEST(EarTest, ParseRoundTrip) {
  AttestationResult ar = FullEar();
  std::string s = SerializeEar(ar);
  auto parsed = ParseEar(AsBytes(s));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(*parsed == ar);
  EXPECT_EQ(SerializeEar(*parsed), s);
  // Without nonce.
  ar.nonce.clear();
  parsed = ParseEar(AsBytes(SerializeEar(ar)));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(*parsed == ar);
}

struct EarCase {
  const char* name;
  std::function<void(json&)> mutate;
  std::string message;
};

class EarStrictTest : public ::testing::TestWithParam<EarCase> {};

TEST_P(EarStrictTest, Rejects) {
  json j = json::parse(SerializeEar(FullEar()));
  GetParam().mutate(j);
  std::string s = j.dump();
  EXPECT_THAT(ParseEar(AsBytes(s)).status(),
              StatusIs(StatusCode::kInvalidArgument, GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Rules, EarStrictTest,
    ::testing::Values(
        EarCase{"UnknownTop", [](json& j) { j["ear.status"] = "affirming"; },
                "the document has unknown member \"ear.status\"."},
        EarCase{"UnknownSubmodMember",
                [](json& j) { j["submods"]["posture"]["x"] = 1; },
                "submods.posture has unknown member \"x\"."},
        EarCase{"UnknownVectorClaim",
                [](json& j) {
                  j["submods"]["posture"]["ear.trustworthiness-vector"]
                   ["firmware"] = 2;
                },
                "submods.posture.ear.trustworthiness-vector has unknown "
                "member \"firmware\"."},
        EarCase{"UnknownDpuauditMember",
                [](json& j) { j["dpuaudit"]["score"] = 1; },
                "dpuaudit has unknown member \"score\"."},
        EarCase{"UnknownReasonMember",
                [](json& j) { j["dpuaudit"]["reasons"][0]["x"] = 1; },
                "dpuaudit.reasons[0] has unknown member \"x\"."},
        EarCase{"BadAction",
                [](json& j) { j["dpuaudit"]["reasons"][1]["action"] = "block"; },
                "dpuaudit.reasons[1].action \"block\" is not deny|warn."},
        EarCase{"EmptyRemediation",
                [](json& j) { j["dpuaudit"]["reasons"][1]["remediation"] = ""; },
                "dpuaudit.reasons[1].remediation must be 1-1024 bytes."},
        EarCase{"LongRemediation",
                [](json& j) {
                  j["dpuaudit"]["reasons"][1]["remediation"] = std::string(1025, 'a');
                },
                "dpuaudit.reasons[1].remediation must be 1-1024 bytes."},
        EarCase{"BadProfile",
                [](json& j) { j["eat_profile"] = "tag:example.com,2024:x"; },
                "eat_profile \"tag:example.com,2024:x\" is not "
                "\"tag:github.com,2023:veraison/ear\"."},
        EarCase{"ExpBeforeIat", [](json& j) { j["exp"] = j["iat"]; },
                "exp 1732950000 is not after iat 1732950000."},
        EarCase{"IatFloat", [](json& j) { j["iat"] = 1.0; },
                "iat must be an integer, got a float."},
        EarCase{"NonceTooShort",
                [](json& j) { j["eat_nonce"] = Base64UrlEncode(Bytes(4, 1)); },
                "eat_nonce must decode to 8-64 bytes, got 4."},
        EarCase{"VerifierIdEmpty",
                [](json& j) { j["ear.verifier-id"]["build"] = ""; },
                "ear.verifier-id needs a non-empty developer and build."},
        EarCase{"NoSubmods", [](json& j) { j["submods"] = json::object(); },
                "submods is empty."},
        EarCase{"UnknownSubmodName",
                [](json& j) { j["submods"]["gpu"] = j["submods"]["posture"]; },
                "submods has unknown submodule \"gpu\"."},
        EarCase{"BadStatus",
                [](json& j) { j["submods"]["posture"]["ear.status"] = "ok"; },
                "submods.posture.ear.status \"ok\" is not "
                "affirming|warning|contraindicated|none."},
        EarCase{"VectorOutOfRange",
                [](json& j) {
                  j["submods"]["posture"]["ear.trustworthiness-vector"]
                   ["hardware"] = 200;
                },
                "submods.posture.ear.trustworthiness-vector.hardware 200 is "
                "outside [-128, 127]."},
        EarCase{"StatusBetterThanVector",
                [](json& j) {
                  j["submods"]["arm-agent"]["ear.status"] = "affirming";
                },
                "submods.arm-agent.ear.status \"affirming\" is better than "
                "its vector's worst tier \"warning\"."},
        EarCase{"AdmitWithContraindicated",
                [](json& j) {
                  j["submods"]["posture"]["ear.status"] = "contraindicated";
                },
                "dpuaudit.decision \"admit\" contradicts "
                "submods.posture.ear.status \"contraindicated\"."},
        EarCase{"BadDecision",
                [](json& j) { j["dpuaudit"]["decision"] = "allow"; },
                "dpuaudit.decision \"allow\" is not admit|deny."},
        EarCase{
            "BadReasonVerdict",
            [](json& j) { j["dpuaudit"]["reasons"][1]["verdict"] = "maybe"; },
            "dpuaudit.reasons[1].verdict \"maybe\" is not "
            "pass|fail|unknown."},
        EarCase{
            "BadReasonTier",
            [](json& j) { j["dpuaudit"]["reasons"][0]["tier"] = "hardware"; },
            "dpuaudit.reasons[0].tier \"hardware\" is not "
            "hardware-rooted|corroborated|self-reported."},
        EarCase{"BadReportSha",
                [](json& j) { j["dpuaudit"]["report_sha256"] = "abc"; },
                "dpuaudit.report_sha256 must be 64 lower-case hex digits."},
        EarCase{"PolicyUnknownMember",
                [](json& j) { j["dpuaudit"]["policy"]["v"] = 2; },
                "dpuaudit.policy has unknown member \"v\"."},
        EarCase{"MissingDpuaudit", [](json& j) { j.erase("dpuaudit"); },
                "dpuaudit is missing."}),
    [](const ::testing::TestParamInfo<EarCase>& p) { return p.param.name; });

// ValidateEar (what SignEar checks) and ParseEar of the serialisation agree
// on every value rule: the same verdict and the same message, for the
// valid EAR and for each mutation of the value SerializeEar can express.
struct EarValueCase {
  const char* name;
  std::function<void(AttestationResult&)> mutate;
};

class EarValidateTest : public ::testing::TestWithParam<EarValueCase> {};

TEST_P(EarValidateTest, AgreesWithParseOfTheSerialisation) {
  AttestationResult ar = FullEar();
  GetParam().mutate(ar);
  Status validated = ValidateEar(ar);
  StatusOr<AttestationResult> parsed = ParseEar(AsBytes(SerializeEar(ar)));
  EXPECT_EQ(validated.ok(), parsed.ok()) << validated.ToString() << " vs "
                                         << parsed.status().ToString();
  EXPECT_EQ(validated.ToString(), parsed.status().ToString());
  if (std::string(GetParam().name) != "Valid" && std::string(GetParam().name) != "DenyAllowsContraindicated") {
    EXPECT_FALSE(validated.ok()) << GetParam().name << " should be invalid";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, EarValidateTest,
    ::testing::Values(
        EarValueCase{"Valid", [](AttestationResult&) {}},
        EarValueCase{"BadProfile", [](AttestationResult& a) { a.profile = "x"; }},
        EarValueCase{"NegativeIat", [](AttestationResult& a) { a.iat = -1; }},
        EarValueCase{"ExpNotAfterIat", [](AttestationResult& a) { a.exp = a.iat; }},
        EarValueCase{"NonceNotBase64url", [](AttestationResult& a) { a.nonce = "a+b/"; }},
        EarValueCase{"NonceTooShort",
                     [](AttestationResult& a) { a.nonce = Base64UrlEncode(Bytes(7, 1)); }},
        EarValueCase{"NonceTooLong",
                     [](AttestationResult& a) { a.nonce = Base64UrlEncode(Bytes(65, 1)); }},
        EarValueCase{"NoDeveloper", [](AttestationResult& a) { a.verifier_id.developer = ""; }},
        EarValueCase{"NoBuild", [](AttestationResult& a) { a.verifier_id.build = ""; }},
        EarValueCase{"BadInstance",
                     [](AttestationResult& a) { a.verifier_id.instance = "a b"; }},
        EarValueCase{"NoSubmods", [](AttestationResult& a) { a.submods.clear(); }},
        EarValueCase{"UnknownSubmod",
                     [](AttestationResult& a) { a.submods["gpu"] = a.submods["posture"]; }},
        EarValueCase{"VectorHigh",
                     [](AttestationResult& a) {
                       a.submods["posture"].trust_vector.hardware = 128;
                     }},
        EarValueCase{"VectorLow",
                     [](AttestationResult& a) {
                       a.submods["posture"].trust_vector.sourced_data = -129;
                     }},
        EarValueCase{"StatusBetterThanVector",
                     [](AttestationResult& a) {
                       a.submods["arm-agent"].status = ArStatus::kAffirming;
                     }},
        EarValueCase{"AdmitWithContraindicated",
                     [](AttestationResult& a) {
                       a.submods["posture"].status = ArStatus::kContraindicated;
                     }},
        EarValueCase{"DenyAllowsContraindicated",
                     [](AttestationResult& a) {
                       a.submods["posture"].status = ArStatus::kContraindicated;
                       a.dpuaudit.decision = Decision::kDeny;
                     }},
        EarValueCase{"NoNodeId", [](AttestationResult& a) { a.dpuaudit.node_id = ""; }},
        EarValueCase{"NoRuleId",
                     [](AttestationResult& a) { a.dpuaudit.reasons[1].rule_id = ""; }},
        EarValueCase{"BadAction",
                     [](AttestationResult& a) { a.dpuaudit.reasons[0].action = "block"; }},
        EarValueCase{"LongRemediation",
                     [](AttestationResult& a) {
                       a.dpuaudit.reasons[1].remediation = std::string(1025, 'r');
                     }},
        EarValueCase{"BadReportSha",
                     [](AttestationResult& a) { a.dpuaudit.report_sha256 = "AB"; }},
        EarValueCase{"NoPolicyName", [](AttestationResult& a) { a.dpuaudit.policy.name = ""; }},
        EarValueCase{"BadPolicySha",
                     [](AttestationResult& a) {
                       a.dpuaudit.policy.sha256 = std::string(64, 'G');
                     }},
        EarValueCase{"CollateralWithoutRefvalsSha",
                     [](AttestationResult& a) {
                       a.dpuaudit.collateral.trust_anchors.push_back(
                           {"ek-ca", std::string(64, 'c')});
                     }},
        EarValueCase{"CollateralBadRelease",
                     [](AttestationResult& a) {
                       a.dpuaudit.collateral.refvals_sha256 = std::string(64, 'd');
                       a.dpuaudit.collateral.matched.push_back({"", std::string(64, 'e')});
                     }},
        EarValueCase{"CollateralLongRelease",
                     [](AttestationResult& a) {
                       a.dpuaudit.collateral.refvals_sha256 = std::string(64, 'd');
                       a.dpuaudit.collateral.matched.push_back(
                           {std::string(129, 'r'), std::string(64, 'e')});
                     }},
        EarValueCase{"CollateralBadMatchedSha",
                     [](AttestationResult& a) {
                       a.dpuaudit.collateral.refvals_sha256 = std::string(64, 'd');
                       a.dpuaudit.collateral.matched.push_back({"bf-2.9", "x"});
                     }},
        EarValueCase{"CollateralBadAnchorSet",
                     [](AttestationResult& a) {
                       a.dpuaudit.collateral.refvals_sha256 = std::string(64, 'd');
                       a.dpuaudit.collateral.trust_anchors.push_back(
                           {"web-pki", std::string(64, 'c')});
                     }},
        EarValueCase{"CollateralBadAnchorSha",
                     [](AttestationResult& a) {
                       a.dpuaudit.collateral.refvals_sha256 = std::string(64, 'd');
                       a.dpuaudit.collateral.trust_anchors.push_back({"dice-roots", ""});
                     }}),
    [](const ::testing::TestParamInfo<EarValueCase>& p) { return p.param.name; });

TEST(EarTest, ActionAndRemediationAreOptionalForOldEars) {
  AttestationResult ar = FullEar();
  json j = json::parse(SerializeEar(ar));
  EXPECT_EQ(j["dpuaudit"]["reasons"][1]["action"], "warn");
  EXPECT_EQ(j["dpuaudit"]["reasons"][1]["remediation"], "re-run bfver on the DPU Arm");
  EXPECT_FALSE(j["dpuaudit"]["reasons"][0].contains("action"));
  EXPECT_FALSE(j["dpuaudit"]["reasons"][0].contains("remediation"));
  j["dpuaudit"]["reasons"][1].erase("action");
  j["dpuaudit"]["reasons"][1].erase("remediation");
  auto parsed = ParseEar(AsBytes(j.dump()));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->dpuaudit.reasons[1].action, "");
  EXPECT_EQ(parsed->dpuaudit.reasons[1].remediation, "");
}

TEST(EarTest, MakeSafeCoversRemediation) {
  DecisionReason r{"x.y", Verdict::kFail, "", "", "", "", ClaimTier::kSelfReported};
  r.remediation = "run \x1b[2J" + std::string(2000, 'a');
  r.action = "deny";
  MakeSafe(r);
  EXPECT_EQ(r.remediation.find('\x1b'), std::string::npos);
  EXPECT_LE(r.remediation.size(), kMaxRemediationBytes);
  EXPECT_EQ(r.action, "deny");
}

TEST(EarTest, DenyWithContraindicatedIsFine) {
  AttestationResult ar = FullEar();
  ar.submods["posture"].status = ArStatus::kContraindicated;
  ar.dpuaudit.decision = Decision::kDeny;
  EXPECT_TRUE(ParseEar(AsBytes(SerializeEar(ar))).ok());
}

TEST(EarTest, MalformedJsonRejected) {
  EXPECT_THAT(ParseEar(AsBytes("{")).status(),
              StatusHas(StatusCode::kInvalidArgument, "EAR is not valid JSON"));
  std::string dup = SerializeEar(FullEar());
  dup.insert(1, "\"iat\":1,");
  EXPECT_THAT(
      ParseEar(AsBytes(dup)).status(),
      StatusIs(StatusCode::kInvalidArgument, "EAR has duplicate key \"iat\"."));
  std::string big(kMaxEarBytes + 1, ' ');
  EXPECT_EQ(ParseEar(AsBytes(big)).status().code(),
            StatusCode::kResourceExhausted);
}

class EarJwtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    verifier_key_ = TestKey::New();
    other_ = TestKey::New();
  }
  TestKey verifier_key_, other_;
};

TEST_F(EarJwtTest, SignVerifyRoundTrip) {
  AttestationResult ar = FullEar();
  auto jwt = SignEar(ar, *verifier_key_.signer, "verifier-1");
  ASSERT_TRUE(jwt.ok()) << jwt.status().ToString();
  auto header = PeekUnverifiedHeader(*jwt);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->header, json::parse(R"({"alg":"ES256","kid":"verifier-1",
                                            "typ":"JWT"})"));
  FakeClock clock(kIat + 10);
  auto v = VerifyEar(*jwt, *verifier_key_.verifier, clock);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(*v == ar);
}

TEST_F(EarJwtTest, Expiry) {
  auto jwt = SignEar(FullEar(), *verifier_key_.signer, "v");
  ASSERT_TRUE(jwt.ok());
  FakeClock clock(kIat + 599);
  EXPECT_TRUE(VerifyEar(*jwt, *verifier_key_.verifier, clock).ok());
  clock.Advance(1);  // now == exp: no longer valid (RFC 7519 §4.1.4)
  EXPECT_THAT(VerifyEar(*jwt, *verifier_key_.verifier, clock).status(),
              StatusIs(StatusCode::kDeadlineExceeded,
                       "EAR expired at 1732950600, now 1732950600."));
  clock.Advance(3600);
  EXPECT_THAT(VerifyEar(*jwt, *verifier_key_.verifier, clock).status(),
              StatusIs(StatusCode::kDeadlineExceeded,
                       "EAR expired at 1732950600, now 1732954200."));
  auto expired_ok =
      VerifyEar(*jwt, *verifier_key_.verifier, clock, /*allow_expired=*/true);
  ASSERT_TRUE(expired_ok.ok()) << expired_ok.status().ToString();
  EXPECT_EQ(expired_ok->exp, kIat + 600);
}

TEST_F(EarJwtTest, SignatureCheckedBeforeParseAndExpiry) {
  FakeClock late(kIat + 100000);
  // Expired and signed by another key: the signature error wins.
  auto jwt = SignEar(FullEar(), *other_.signer, "v");
  ASSERT_TRUE(jwt.ok());
  EXPECT_THAT(VerifyEar(*jwt, *verifier_key_.verifier, late).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
  // Garbage payload signed by another key: never parsed.
  std::string forged = SignRaw(R"({"alg":"ES256","typ":"JWT"})",
                               "{\"eat_profile\":", *other_.signer);
  EXPECT_THAT(VerifyEar(forged, *verifier_key_.verifier, late).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
  AcceptAllVerifier all;
  EXPECT_THAT(VerifyEar(forged, all, late).status(),
              StatusHas(StatusCode::kInvalidArgument, "EAR is not valid JSON"));
}

TEST_F(EarJwtTest, TamperedRejected) {
  AttestationResult denied = FullEar();
  denied.submods["posture"].status = ArStatus::kContraindicated;
  denied.dpuaudit.decision = Decision::kDeny;
  auto jwt = SignEar(denied, *verifier_key_.signer, "v");
  ASSERT_TRUE(jwt.ok()) << jwt.status().ToString();
  // Swap in an "admit" payload and keep the verifier's signature.
  size_t a = jwt->find('.'), b = jwt->rfind('.');
  std::string forged = jwt->substr(0, a + 1) +
                       Base64UrlEncode(AsBytes(SerializeEar(FullEar()))) +
                       jwt->substr(b);
  FakeClock clock(kIat);
  EXPECT_THAT(VerifyEar(forged, *verifier_key_.verifier, clock).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
}

TEST_F(EarJwtTest, WrongTypAndFormRejected) {
  std::string payload = SerializeEar(FullEar());
  FakeClock clock(kIat);
  std::string jws = SignRaw(R"({"alg":"ES256","typ":"dpuaudit-report+jws"})",
                            payload, *verifier_key_.signer);
  EXPECT_THAT(VerifyEar(jws, *verifier_key_.verifier, clock).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "EAR typ \"dpuaudit-report+jws\" is not \"JWT\"."));
  auto jwt = SignEar(FullEar(), *verifier_key_.signer, "v");
  auto flat = CompactToFlattened(*jwt);
  EXPECT_THAT(VerifyEar(*flat, *verifier_key_.verifier, clock).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "EAR must be a compact JWT, not JWS JSON."));
  std::string none = Base64UrlEncode(AsBytes(R"({"alg":"none","typ":"JWT"})")) +
                     "." + Base64UrlEncode(AsBytes(payload)) + "." +
                     Base64UrlEncode(Bytes(64, 1));
  EXPECT_THAT(VerifyEar(none, *verifier_key_.verifier, clock).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS alg \"none\" is not the pinned \"ES256\"."));
}

TEST_F(EarJwtTest, SignEarRefusesInvalidResults) {
  AttestationResult ar = FullEar();
  ar.submods["posture"].status = ArStatus::kContraindicated;  // with admit
  EXPECT_THAT(SignEar(ar, *verifier_key_.signer, "v").status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "refusing to sign an invalid EAR: dpuaudit.decision "
                       "\"admit\" contradicts submods.posture.ear.status "
                       "\"contraindicated\"."));
  ar = FullEar();
  ar.submods.clear();
  EXPECT_THAT(SignEar(ar, *verifier_key_.signer, "v").status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "refusing to sign an invalid EAR: submods is empty."));
}

}  // namespace
}  // namespace dpuaudit::report
