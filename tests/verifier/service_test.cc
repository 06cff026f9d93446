// VerifierService end to end without HTTP: real SQLite file, real keys,
// reports built from the recorded BlueField-3 fixtures, a FakeClock for
// expiry. Every bad input asserts its code and message, and that the stored
// state (node, nonces, latest result) is unchanged afterwards.
#include "verifier/service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "firmware/boot_chain.h"
#include "common/files.h"
#include "device/evidence.h"
#include "isolation/device_facts.h"
#include "isolation/identity.h"
#include "isolation/probes.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "common/strict_json.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "bootstrap-token-for-tests-0123456789";
constexpr char kAdminToken[] = "admin-token-for-tests-0123456789";

std::string FixtureDir(const std::string& name) {
  return std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/devices/" + name;
}

struct Agent {
  std::string node_id;
  EcPrivateKey key;
  std::unique_ptr<Signer> signer;
  std::string device;
};

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-service-XXXXXX";
    dir_ = mkdtemp(tmpl);
    db_ = dir_ + "/verifier.db";
    auto policy_bytes =
        ReadFileLimited(std::string(DPUAUDIT_SOURCE_DIR) + "/policies/zero-trust.json", 65536);
    ASSERT_TRUE(policy_bytes.ok());
    policy_text_ = ToString(*policy_bytes);
    Start();
  }
  void TearDown() override {
    svc_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start() {
    auto store = SqliteStore::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto policy = Policy::Create(policy_text_, KnownRules());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    if (!verifier_key_) verifier_key_ = std::make_unique<EcPrivateKey>(*EcPrivateKey::Generate());
    auto key = EcPrivateKey::FromPem(verifier_key_->ToPem());
    ServiceOptions options;
    options.bootstrap_token = kToken;
    options.admin_token = kAdminToken;
    options.reader_token = reader_token_;
    options.public_admission = public_admission_;
    options.max_report_bytes = 1 << 20;
    auto svc = VerifierService::New(std::move(*store), *policy, std::move(*key), clock_, options);
    ASSERT_TRUE(svc.ok()) << svc.status().ToString();
    svc_ = std::move(*svc);
    // The fixture reference values: bf-bundle-2.9.1-40 active (what
    // bf3-zero-trust runs), 2.9.0-90 obsolete, 2.7.0-33 revoked.
    auto manifest = ReadFileLimited(
        std::string(DPUAUDIT_SOURCE_DIR) + "/tests/fixtures/refvals/bf3-releases.json", 4 << 20);
    ASSERT_TRUE(manifest.ok());
    auto imported = svc_->ImportRefvals(ToString(*manifest), std::string(kAdminToken));
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  }

  Agent MakeAgent(const std::string& node_id, const std::string& device) {
    auto key = EcPrivateKey::Generate();
    auto signer = Es256Signer::New(*key);
    agent_keys_.insert_or_assign(node_id, *key);
    return Agent{node_id, *key, std::move(*signer), device};
  }

  std::string EnrollBody(const Agent& a) {
    nlohmann::json j = {{"node_id", a.node_id},
                        {"public_key", report::PublicJwk(a.key.public_key(), "k")}};
    return j.dump();
  }

  void Enroll(const Agent& a) {
    auto r = svc_->Enroll(EnrollBody(a), std::string(kToken));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->node.state, NodeState::kApproved);
  }

  // A challenge request signed with the node's key (as the agent sends).
  std::string ChallengeBody(const std::string& node_id, int64_t iat = -1) {
    auto it = agent_keys_.find(node_id);
    EXPECT_NE(it, agent_keys_.end()) << node_id;
    if (it == agent_keys_.end()) return "";
    auto signer = Es256Signer::New(it->second);
    auto body = report::ChallengeRequestBody(
        node_id, iat >= 0 ? iat : clock_.NowUnixSeconds(), **signer);
    EXPECT_TRUE(body.ok());
    return body.ok() ? *body : "";
  }

  std::string Nonce(const std::string& node_id) {
    auto c = svc_->IssueChallenge(ChallengeBody(node_id));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? c->nonce : "";
  }

  // Claims as the agent builds them: its collection over a capturing source.
  report::ReportClaims Claims(const Agent& a, const std::string& nonce) {
    auto recorded = device::NewRecordedDeviceSource(FixtureDir(a.device));
    EXPECT_TRUE(recorded.ok()) << recorded.status().ToString();
    device::CapturingDeviceSource capture(**recorded);
    report::ReportClaims c;
    c.node_id = a.node_id;
    c.nonce = nonce;
    c.issued_at = clock_.NowUnixSeconds();
    // The claims as the agent builds them (apps/common/agent_collect.cc):
    // the verifier checks the device block against the evidence's identity.
    isolation::DeviceFacts facts = isolation::CollectDeviceFacts(capture);
    const isolation::DeviceIdentity& id = facts.device;
    c.device = report::DeviceInfo{id.model,    id.serial,   id.part_number,
                                  id.psid,     id.base_mac, id.fw_version};
    c.findings = facts.findings;
    c.boot_chain = facts.boot_chain_json();
    c.evidence = capture.evidence();
    return c;
  }

  std::string Sign(const Agent& a, const report::ReportClaims& c) {
    auto jws = report::SignReport(c, *a.signer, a.node_id);
    EXPECT_TRUE(jws.ok()) << jws.status().ToString();
    return *jws;
  }

  // Signs claims as they are, bypassing SignReport's own validation: what a
  // buggy or hostile agent could send.
  std::string SignRaw(const Agent& a, const report::ReportClaims& c) {
    report::JwsHeader h;
    h.kid = a.node_id;
    h.typ = std::string(report::kReportJwsTyp);
    auto jws = report::SignCompact(AsBytes(report::SerializeClaims(c)), *a.signer, h);
    EXPECT_TRUE(jws.ok()) << jws.status().ToString();
    return *jws;
  }

  std::string FreshReport(const Agent& a) { return Sign(a, Claims(a, Nonce(a.node_id))); }

  std::string LatestDecision(const std::string& node) {
    auto r = svc_->store().LatestResult(node);
    return r.ok() ? r->decision + "@" + std::to_string(r->id) : r.status().ToString();
  }

  FakeClock clock_{1'800'000'000};
  std::map<std::string, EcPrivateKey> agent_keys_;
  std::string dir_, db_, policy_text_;
  std::unique_ptr<EcPrivateKey> verifier_key_;
  std::string reader_token_;
  bool public_admission_ = false;
  std::unique_ptr<VerifierService> svc_;
};

TEST_F(ServiceTest, ZeroTrustDeviceIsAdmittedAndPrivilegedHostDenied) {
  Agent zt = MakeAgent("bf3-zero-trust", "bf3-zero-trust");
  Agent ph = MakeAgent("bf3-privileged-host", "bf3-privileged-host");
  Enroll(zt);
  Enroll(ph);

  auto admit = svc_->SubmitReport(FreshReport(zt));
  ASSERT_TRUE(admit.ok()) << admit.status().ToString();
  EXPECT_EQ(admit->result.dpuaudit.decision, report::Decision::kAdmit);
  EXPECT_EQ(admit->result.submods.at("posture").status, report::ArStatus::kAffirming);
  EXPECT_EQ(admit->result.submods.at("arm-agent").status, report::ArStatus::kAffirming);

  auto deny = svc_->SubmitReport(FreshReport(ph));
  ASSERT_TRUE(deny.ok()) << deny.status().ToString();
  const auto& d = deny->result.dpuaudit;
  EXPECT_EQ(d.decision, report::Decision::kDeny);
  EXPECT_EQ(deny->result.submods.at("posture").status, report::ArStatus::kContraindicated);
  auto it = std::find_if(d.reasons.begin(), d.reasons.end(),
                         [](const auto& r) { return r.rule_id == "host.privilege_level"; });
  ASSERT_NE(it, d.reasons.end());
  EXPECT_EQ(it->verdict, Verdict::kFail);
  EXPECT_EQ(it->observed, "PRIVILEGED");
  EXPECT_EQ(it->expected, "RESTRICTED");
  EXPECT_EQ(it->source, "mlxprivhost -d /dev/mst/mt41692_pciconf0 q");
  EXPECT_EQ(it->tier, report::ClaimTier::kSelfReported);

  // The EAR verifies against the published JWKS.
  auto keys = report::ParseJwks(svc_->Jwks());
  ASSERT_TRUE(keys.ok());
  auto v = Es256Verifier::New(keys->at(0).key);
  auto ear = report::VerifyEar(deny->ear_jwt, **v, clock_);
  ASSERT_TRUE(ear.ok()) << ear.status().ToString();
  EXPECT_EQ(ear->dpuaudit.node_id, "bf3-privileged-host");

  auto adm = svc_->GetAdmission("bf3-zero-trust", kAdminToken);
  ASSERT_TRUE(adm.ok());
  EXPECT_EQ(adm->decision, "admit");
  EXPECT_EQ(svc_->GetAdmission("bf3-privileged-host", kAdminToken)->decision, "deny");
}

TEST_F(ServiceTest, NodeStateNeedsTheReaderOrAdminToken) {
  const std::string reader = "reader-token-for-tests-0123456789";
  reader_token_ = reader;
  svc_.reset();
  Start();
  Agent zt = MakeAgent("n1", "bf3-zero-trust");
  Enroll(zt);
  auto outcome = svc_->SubmitReport(FreshReport(zt));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->result.verifier_id.instance, "dpuaudit-verifier");
  const std::string refused =
      "reading node state needs the reader (or admin) bearer token; missing or wrong token.";
  for (const std::optional<std::string>& bearer :
       {std::optional<std::string>(), std::optional<std::string>(kToken),
        std::optional<std::string>("reader-token-for-tests-012345678X")}) {
    auto v = svc_->NodeView("n1", bearer);
    EXPECT_EQ(v.status().code(), StatusCode::kUnauthenticated);
    EXPECT_EQ(v.status().message(), refused);
    auto a = svc_->GetAdmission("n1", bearer);
    EXPECT_EQ(a.status().code(), StatusCode::kUnauthenticated);
    EXPECT_EQ(a.status().message(), refused);
  }
  // Checked before the id: an unknown node is not told apart without a token.
  EXPECT_EQ(svc_->NodeView("ghost", std::nullopt).status().message(), refused);
  EXPECT_TRUE(svc_->NodeView("n1", reader).ok());
  EXPECT_EQ(svc_->GetAdmission("n1", reader)->decision, "admit");
  EXPECT_EQ(svc_->GetAdmission("n1", std::string(kAdminToken))->decision, "admit");

  public_admission_ = true;
  svc_.reset();
  Start();
  EXPECT_EQ(svc_->GetAdmission("n1", std::nullopt)->decision, "admit");
  EXPECT_EQ(svc_->NodeView("n1", std::nullopt).status().message(), refused);

  // The reader token must be a token of its own.
  svc_.reset();
  auto store = SqliteStore::Open(db_);
  ASSERT_TRUE(store.ok());
  ServiceOptions o;
  o.admin_token = kAdminToken;
  o.reader_token = kAdminToken;
  auto policy = Policy::Create(policy_text_, KnownRules());
  auto same = VerifierService::New(std::move(*store), *policy, *EcPrivateKey::Generate(), clock_, o);
  EXPECT_EQ(same.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(same.status().message(),
            "the reader token must differ from the admin and bootstrap tokens.");
  Start();
}

TEST_F(ServiceTest, DecisionExpiresAndFallsBackToDeny) {
  Agent zt = MakeAgent("n1", "bf3-zero-trust");
  Enroll(zt);
  ASSERT_TRUE(svc_->SubmitReport(FreshReport(zt)).ok());
  EXPECT_EQ(svc_->GetAdmission("n1", kAdminToken)->decision, "admit");
  clock_.Advance(svc_->policy().decision_ttl_seconds());
  auto adm = svc_->GetAdmission("n1", kAdminToken);
  ASSERT_TRUE(adm.ok());
  EXPECT_EQ(adm->decision, "deny");
  EXPECT_THAT(adm->reason, HasSubstr("expired"));
}

TEST_F(ServiceTest, EnrollmentWithoutTokenWaitsForApproval) {
  Agent a = MakeAgent("n2", "bf3-zero-trust");
  auto r = svc_->Enroll(EnrollBody(a), std::nullopt);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->created);
  EXPECT_EQ(r->node.state, NodeState::kPending);
  auto c = svc_->IssueChallenge(R"({"node_id":"n2"})");
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(c.status().message(), HasSubstr("pending operator approval"));
  EXPECT_EQ(svc_->GetAdmission("n2", kAdminToken)->decision, "deny");
  ApprovalRequest approval;
  approval.key_thumbprint = a.key.public_key().Thumbprint();
  approval.by = "operator";
  ASSERT_TRUE(svc_->Approve("n2", approval).ok());
  EXPECT_TRUE(svc_->IssueChallenge(ChallengeBody("n2")).ok());
}

TEST_F(ServiceTest, WrongBootstrapTokenStoresNothing) {
  Agent a = MakeAgent("n3", "bf3-zero-trust");
  auto r = svc_->Enroll(EnrollBody(a), std::string("wrong-token"));
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(r.status().message(), "bootstrap token is not valid.");
  EXPECT_EQ(svc_->store().GetNode("n3").status().code(), StatusCode::kNotFound);
}

TEST_F(ServiceTest, ReEnrollingWithAnotherKeyIsRefused) {
  Agent a = MakeAgent("n4", "bf3-zero-trust");
  Enroll(a);
  Agent b = MakeAgent("n4", "bf3-zero-trust");
  auto r = svc_->Enroll(EnrollBody(b), std::string(kToken));
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(svc_->store().GetNode("n4")->key_thumbprint, a.key.public_key().Thumbprint());
}

TEST_F(ServiceTest, EnrollmentRejectsMalformedRequests) {
  struct Case {
    std::string body;
    std::string message;
  } cases[] = {
      {"not json", "request body is not valid JSON (error at byte 2)."},
      {R"({"node_id":"a","node_id":"b","public_key":{}})", "request body has duplicate key \"node_id\"."},
      {"{\"node_id\":\"\xff\",\"public_key\":{}}", "UTF-8"},
      {"[]", "request body must be a JSON object."},
      {R"({"node_id":"a"})", "request member \"public_key\" is missing."},
      {R"({"node_id":"a","public_key":{},"extra":1})", "request member \"extra\" is not allowed."},
      {R"({"node_id":"a b","public_key":{}})", "may only use [A-Za-z0-9._-]"},
      {R"({"node_id":"a","public_key":{"kty":"EC","crv":"P-384"}})", "public_key: "},
  };
  for (const auto& c : cases) {
    auto r = svc_->Enroll(c.body, std::string(kToken));
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.body;
  }
  EXPECT_TRUE(svc_->store().ListNodes()->empty());
}

class BadReportTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    a_ = std::make_unique<Agent>(MakeAgent("good", "bf3-zero-trust"));
    b_ = std::make_unique<Agent>(MakeAgent("other", "bf3-zero-trust"));
    Enroll(*a_);
    Enroll(*b_);
    auto first = svc_->SubmitReport(FreshReport(*a_));
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    before_ = LatestDecision("good");
  }
  // The verifier keeps its state after every bad input.
  void ExpectStateIntact() {
    EXPECT_EQ(LatestDecision("good"), before_);
    EXPECT_EQ(svc_->GetAdmission("good", kAdminToken)->decision, "admit");
    EXPECT_EQ(svc_->store().GetNode("good")->state, NodeState::kApproved);
    // and still serves a good report.
    EXPECT_TRUE(svc_->SubmitReport(FreshReport(*a_)).ok());
    before_ = LatestDecision("good");
  }
  void ExpectRejected(const std::string& jws, StatusCode code, const std::string& msg) {
    auto r = svc_->SubmitReport(jws);
    EXPECT_EQ(r.status().code(), code) << r.status().ToString();
    EXPECT_THAT(r.status().message(), HasSubstr(msg));
    ExpectStateIntact();
  }
  std::unique_ptr<Agent> a_, b_;
  std::string before_;
};

TEST_F(BadReportTest, TruncatedJws) {
  std::string jws = FreshReport(*a_);
  ExpectRejected(jws.substr(0, jws.size() - 10), StatusCode::kUnauthenticated, "");
}

TEST_F(BadReportTest, MalformedJws) {
  ExpectRejected("abc", StatusCode::kInvalidArgument, "");
  ExpectRejected("a.b", StatusCode::kInvalidArgument, "");
  ExpectRejected("!!.??.**", StatusCode::kInvalidArgument, "");
}

TEST_F(BadReportTest, SignedByAnotherKey) {
  report::ReportClaims c = Claims(*a_, Nonce("good"));
  std::string forged = Sign(*b_, c);  // b's key, but kid "good"? Sign uses b's node id as kid
  // Re-sign with b's key under a's kid: the pinned key of "good" must reject it.
  auto jws = report::SignReport(c, *b_->signer, "good");
  ASSERT_TRUE(jws.ok());
  ExpectRejected(*jws, StatusCode::kUnauthenticated, "does not verify");
  // And b's own kid with a's claims: node_id mismatch.
  ExpectRejected(forged, StatusCode::kPermissionDenied,
                 "report claims node_id \"good\" but is signed by the key of node \"other\"");
}

TEST_F(BadReportTest, AlgNoneAndOtherAlgs) {
  report::ReportClaims c = Claims(*a_, Nonce("good"));
  std::string payload = report::SerializeClaims(c);
  for (std::string alg : {"none", "HS256", "ES384", "RS256"}) {
    std::string header = R"({"alg":")" + alg + R"(","kid":"good"})";
    std::string jws = Base64UrlEncode(AsBytes(header)) + "." + Base64UrlEncode(AsBytes(payload)) +
                      "." + (alg == "none" ? "" : Base64UrlEncode(Bytes(64, 1)));
    auto r = svc_->SubmitReport(jws);
    EXPECT_TRUE(r.status().code() == StatusCode::kUnauthenticated ||
                r.status().code() == StatusCode::kInvalidArgument)
        << alg << ": " << r.status().ToString();
    EXPECT_FALSE(r.ok());
  }
  ExpectStateIntact();
}

TEST_F(BadReportTest, ReplayedNonceAndReport) {
  std::string jws = FreshReport(*a_);
  ASSERT_TRUE(svc_->SubmitReport(jws).ok());
  before_ = LatestDecision("good");
  ExpectRejected(jws, StatusCode::kFailedPrecondition, "nonce already used.");
}

TEST_F(BadReportTest, UnknownNonce) {
  std::string bogus = Base64UrlEncode(Bytes(32, 7));
  ExpectRejected(Sign(*a_, Claims(*a_, bogus)), StatusCode::kNotFound, "unknown nonce.");
}

TEST_F(BadReportTest, ExpiredNonce) {
  std::string nonce = Nonce("good");
  clock_.Advance(61);
  ExpectRejected(Sign(*a_, Claims(*a_, nonce)), StatusCode::kDeadlineExceeded, "nonce expired at");
}

TEST_F(BadReportTest, NonceIssuedToAnotherNode) {
  std::string nonce = Nonce("other");
  ExpectRejected(Sign(*a_, Claims(*a_, nonce)), StatusCode::kPermissionDenied,
                 "nonce was issued to another node.");
  // The nonce stays usable by the node it was issued to.
  EXPECT_TRUE(svc_->SubmitReport(Sign(*b_, Claims(*b_, nonce))).ok());
}

TEST_F(BadReportTest, UnknownNode) {
  Agent stranger = MakeAgent("stranger", "bf3-zero-trust");
  ExpectRejected(Sign(stranger, Claims(stranger, Base64UrlEncode(Bytes(32, 1)))),
                 StatusCode::kNotFound, "\"stranger\", which is not enrolled");
}

TEST_F(BadReportTest, OversizedReport) {
  ExpectRejected(std::string((1 << 20) + 1, 'a'), StatusCode::kResourceExhausted,
                 "exceeds the limit");
}

TEST_F(BadReportTest, TamperedEvidenceHashIsRejectedAfterSignature) {
  report::ReportClaims c = Claims(*a_, Nonce("good"));
  c.evidence[0].sha256 = std::string(64, '0');
  ExpectRejected(SignRaw(*a_, c), StatusCode::kInvalidArgument, "sha256 does not match");
}

TEST_F(BadReportTest, FutureIssuedAt) {
  report::ReportClaims c = Claims(*a_, Nonce("good"));
  c.issued_at = clock_.NowUnixSeconds() + 3600;
  ExpectRejected(Sign(*a_, c), StatusCode::kInvalidArgument, "in the future");
}

// A report cannot be made before its challenge: issued_at an hour before
// the nonce was issued is refused, naming issued_at, and the nonce stays
// usable. Within the allowed clock skew (an agent clock running behind) the
// report is accepted.
TEST_F(BadReportTest, IssuedAtBeforeItsNonceIsRejectedAndTheNonceStaysUsable) {
  const int64_t nonce_time = clock_.NowUnixSeconds();
  std::string nonce = Nonce("good");
  report::ReportClaims c = Claims(*a_, nonce);
  c.issued_at = nonce_time - 3600;
  auto r = svc_->SubmitReport(Sign(*a_, c));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_EQ(r.status().message(),
            "issued_at " + std::to_string(nonce_time - 3600) +
                " is more than 300 s before its nonce was issued (at " +
                std::to_string(nonce_time) + ").");
  EXPECT_EQ(LatestDecision("good"), before_);
  c.issued_at = nonce_time - 300;  // a slow agent clock, within the skew
  auto ok = svc_->SubmitReport(Sign(*a_, c));
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST_F(ServiceTest, DotSegmentNodeIdsAreRefused) {
  for (const char* id : {".", ".."}) {
    Agent a = MakeAgent(id, "bf3-zero-trust");
    auto r = svc_->Enroll(EnrollBody(a), std::string(kToken));
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << id;
    EXPECT_THAT(r.status().message(), HasSubstr("is a URL dot-segment")) << id;
  }
  EXPECT_TRUE(svc_->store().ListNodes()->empty());
  // Ids from URL paths are checked the same way before any lookup.
  EXPECT_EQ(svc_->NodeView("..", kAdminToken).status().code(), StatusCode::kInvalidArgument);
  auto adm = svc_->GetAdmission("../etc/passwd", kAdminToken);
  EXPECT_EQ(adm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(adm.status().message(), HasSubstr("may only use [A-Za-z0-9._-]"));
}

TEST_F(BadReportTest, RejectedAttemptsAreRecordedForKnownNodes) {
  std::string jws = FreshReport(*a_);
  ASSERT_TRUE(svc_->SubmitReport(jws).ok());
  ASSERT_FALSE(svc_->SubmitReport(jws).ok());  // replay
  // The store keeps the rejected attempt; the latest result is unchanged.
  auto r = svc_->store().LatestResult("good");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->report_jws_sha256, Sha256Hex(AsBytes(jws)));
}

TEST_F(ServiceTest, AgentVerdictsThatDisagreeWithEvidenceAreReported) {
  Agent ph = MakeAgent("liar", "bf3-privileged-host");
  Enroll(ph);
  report::ReportClaims c = Claims(ph, Nonce("liar"));
  // The agent claims a pass it cannot back with its own evidence.
  for (auto& f : c.findings) {
    if (f.id == "host.privilege_level") {
      f.verdict = Verdict::kPass;
      f.observed = "RESTRICTED";
    }
  }
  auto r = svc_->SubmitReport(Sign(ph, c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->result.dpuaudit.decision, report::Decision::kDeny);
  EXPECT_EQ(r->result.submods.at("arm-agent").status, report::ArStatus::kWarning);
  bool reported = false;
  for (const auto& reason : r->result.dpuaudit.reasons) {
    if (reason.rule_id == "agent.consistency") {
      reported = true;
      EXPECT_EQ(reason.expected, "verifier: fail (PRIVILEGED)");
      EXPECT_EQ(reason.observed, "agent: pass (RESTRICTED)");
    }
  }
  EXPECT_TRUE(reported);
}

TEST_F(ServiceTest, MissingEvidenceFailsClosed) {
  Agent a = MakeAgent("bare", "bf3-zero-trust");
  Enroll(a);
  report::ReportClaims c = Claims(a, Nonce("bare"));
  c.evidence.clear();  // nothing to re-derive from
  c.findings.clear();
  auto r = svc_->SubmitReport(Sign(a, c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->result.dpuaudit.decision, report::Decision::kDeny);
  for (const auto& reason : r->result.dpuaudit.reasons) {
    if (reason.rule_id == "host.privilege_level") {
      EXPECT_EQ(reason.verdict, Verdict::kUnknown);
      EXPECT_FALSE(reason.reason.empty());
    }
  }
}

TEST_F(ServiceTest, StateSurvivesRestart) {
  Agent a = MakeAgent("persist", "bf3-zero-trust");
  Enroll(a);
  ASSERT_TRUE(svc_->SubmitReport(FreshReport(a)).ok());
  svc_.reset();
  Start();
  EXPECT_EQ(svc_->GetAdmission("persist", kAdminToken)->decision, "admit");
  auto view = svc_->NodeView("persist", kAdminToken);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ((*view)["latest"]["decision"], "admit");
  EXPECT_EQ((*view)["state"], "approved");
}

}  // namespace
}  // namespace dpuaudit::verifier

namespace dpuaudit::verifier {
namespace {

const report::DecisionReason* ReasonFor(const report::AttestationResult& r,
                                        const std::string& rule) {
  for (const auto& reason : r.dpuaudit.reasons) {
    if (reason.rule_id == rule) return &reason;
  }
  return nullptr;
}

// Firmware appraisal against the fixture reference values (issue 4).
TEST_F(ServiceTest, FirmwareMatchingActiveReleaseIsAffirmed) {
  Agent zt = MakeAgent("fw-current", "bf3-zero-trust");
  Enroll(zt);
  auto out = svc_->SubmitReport(FreshReport(zt));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (const char* rule : {"refval.arm_firmware", "refval.os_release", "refval.nic_firmware",
                           "refval.boot_stream", "refval.os_boot"}) {
    const auto* r = ReasonFor(out->result, rule);
    ASSERT_NE(r, nullptr) << rule;
    EXPECT_EQ(r->verdict, Verdict::kPass) << rule << ": " << r->reason;
    EXPECT_EQ(r->observed, "active") << rule;
  }
  const auto* up = ReasonFor(out->result, "refval.upgrade_path");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->observed, "first-seen");
  EXPECT_EQ(out->result.submods.at("arm-agent").trust_vector.executables, 2);
  EXPECT_EQ(out->result.dpuaudit.decision, report::Decision::kAdmit);
}

TEST_F(ServiceTest, ObsoleteFirmwareWarnsRevokedIsContraindicated) {
  Agent old = MakeAgent("fw-old", "bf3-fw-outdated");
  Agent bad = MakeAgent("fw-revoked", "bf3-fw-revoked");
  Enroll(old);
  Enroll(bad);
  auto o = svc_->SubmitReport(FreshReport(old));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->result.dpuaudit.decision, report::Decision::kAdmit);
  const auto* arm = ReasonFor(o->result, "refval.arm_firmware");
  ASSERT_NE(arm, nullptr);
  EXPECT_EQ(arm->verdict, Verdict::kFail);
  EXPECT_EQ(arm->observed, "obsolete");
  EXPECT_THAT(arm->reason, HasSubstr("bf-bundle-2.9.0-90"));
  EXPECT_EQ(o->result.submods.at("arm-agent").trust_vector.executables, 32);
  EXPECT_EQ(o->result.submods.at("posture").status, report::ArStatus::kWarning);

  auto r = svc_->SubmitReport(FreshReport(bad));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->result.dpuaudit.decision, report::Decision::kDeny);
  const auto* rev = ReasonFor(r->result, "refval.arm_firmware");
  ASSERT_NE(rev, nullptr);
  EXPECT_EQ(rev->observed, "revoked");
  EXPECT_EQ(rev->expected, "active");
  EXPECT_THAT(rev->reason, HasSubstr("bf-bundle-2.7.0-33"));
  EXPECT_EQ(r->result.submods.at("arm-agent").trust_vector.executables, 96);
  EXPECT_EQ(r->result.submods.at("arm-agent").status, report::ArStatus::kContraindicated);
}

TEST_F(ServiceTest, ObsoletedThenReinstatedRelease) {
  Agent zt = MakeAgent("fw-reinstate", "bf3-zero-trust");
  Enroll(zt);
  auto t = svc_->TransitionRefval("bf-bundle-2.9.1-40", "obsolete",
                                  R"({"by": "ops", "reason": "test"})", std::string(kAdminToken));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto out = svc_->SubmitReport(FreshReport(zt));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ReasonFor(out->result, "refval.arm_firmware")->observed, "obsolete");
  // Reinstate, then it is active again.
  ASSERT_TRUE(svc_->TransitionRefval("bf-bundle-2.9.1-40", "reinstate",
                                     R"({"by": "ops", "reason": "rollback of the change"})",
                                     std::string(kAdminToken))
                  .ok());
  auto again = svc_->SubmitReport(FreshReport(zt));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ReasonFor(again->result, "refval.arm_firmware")->observed, "active");
  EXPECT_EQ(again->result.dpuaudit.decision, report::Decision::kAdmit);
}

TEST_F(ServiceTest, DowngradeIsNotAnAllowedUpgradeEdge) {
  // The same node first runs the current release, then reports the older
  // one: 2.9.1-40's upgrade_from does not make 2.9.0-90 reachable from it.
  Agent node = MakeAgent("fw-downgrade", "bf3-zero-trust");
  Enroll(node);
  auto first = svc_->SubmitReport(FreshReport(node));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->result.dpuaudit.decision, report::Decision::kAdmit);
  node.device = "bf3-fw-outdated";
  auto second = svc_->SubmitReport(FreshReport(node));
  ASSERT_TRUE(second.ok());
  const auto* up = ReasonFor(second->result, "refval.upgrade_path");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->observed, "not-allowed");
  EXPECT_EQ(second->result.dpuaudit.decision, report::Decision::kDeny);
  // A denied downgrade does not become the baseline: reporting it again is
  // still not-allowed, never "unchanged".
  auto third = svc_->SubmitReport(FreshReport(node));
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(ReasonFor(third->result, "refval.upgrade_path")->observed, "not-allowed");
  // Moving forward again along the edge is fine.
  node.device = "bf3-zero-trust";
  auto fourth = svc_->SubmitReport(FreshReport(node));
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ(ReasonFor(fourth->result, "refval.upgrade_path")->observed, "unchanged");
}

TEST_F(ServiceTest, AdminApiNeedsItsToken) {
  EXPECT_EQ(svc_->ListRefvals("", std::nullopt).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(svc_->ListRefvals("", std::string(kToken)).status().code(),
            StatusCode::kUnauthenticated);  // the bootstrap token is not admin
  auto list = svc_->ListRefvals("BF3", std::string(kAdminToken));
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ((*list)["releases"].size(), 3u);
  EXPECT_EQ(svc_->ListRefvals("BF9", std::string(kAdminToken)).status().code(),
            StatusCode::kInvalidArgument);
  // Refused transitions change nothing.
  auto revoked = svc_->TransitionRefval("bf-bundle-2.7.0-33", "promote",
                                        R"({"by": "ops", "reason": "x"})",
                                        std::string(kAdminToken));
  EXPECT_EQ(revoked.status().code(), StatusCode::kFailedPrecondition);
  auto no_reason = svc_->TransitionRefval("bf-bundle-2.9.0-90", "revoke", R"({"by": "ops"})",
                                          std::string(kAdminToken));
  EXPECT_EQ(no_reason.status().code(), StatusCode::kInvalidArgument);
  auto unknown = svc_->TransitionRefval("no-such-release", "revoke",
                                        R"({"by": "ops", "reason": "x"})",
                                        std::string(kAdminToken));
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  auto bad_action = svc_->TransitionRefval("bf-bundle-2.9.0-90", "delete",
                                           R"({"by": "ops", "reason": "x"})",
                                           std::string(kAdminToken));
  EXPECT_EQ(bad_action.status().code(), StatusCode::kNotFound);
  auto after = svc_->ListRefvals("", std::string(kAdminToken));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *list);
  // A malformed manifest stores nothing.
  EXPECT_EQ(svc_->ImportRefvals(R"({"schema": "dpuaudit-refvals/1", "releases": [{}]})",
                                std::string(kAdminToken))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*svc_->ListRefvals("", std::string(kAdminToken)), *list);
}

TEST_F(ServiceTest, PromoteWithObsoletePreviousMovesTheOldRelease) {
  auto manifest = nlohmann::json::parse(R"({"schema": "dpuaudit-refvals/1", "releases": [
      {"release": "next", "model": "BF3", "state": "pending",
       "approval": {"by": "ops", "reason": "staged"},
       "values": [{"component": "nic-fw", "version": "32.45.1000"}]}]})");
  ASSERT_TRUE(svc_->ImportRefvals(manifest.dump(), std::string(kAdminToken)).ok());
  auto moved = svc_->TransitionRefval("next", "promote",
                                      R"({"by": "ops", "reason": "canaries ok",
                                          "obsolete_previous": true})",
                                      std::string(kAdminToken));
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  ASSERT_EQ((*moved)["changed"].size(), 2u);
  EXPECT_EQ((*moved)["changed"][1]["release"], "bf-bundle-2.9.1-40");
  EXPECT_EQ((*moved)["changed"][1]["state"], "obsolete");
  // bf3-zero-trust now runs an obsolete release: admitted with a warning.
  Agent zt = MakeAgent("fw-after-promote", "bf3-zero-trust");
  Enroll(zt);
  auto out = svc_->SubmitReport(FreshReport(zt));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ReasonFor(out->result, "refval.arm_firmware")->observed, "obsolete");
  EXPECT_EQ(out->result.dpuaudit.decision, report::Decision::kAdmit);
}

TEST_F(ServiceTest, MalformedBootChainIsRejectedBeforeTheNonceIsSpent) {
  Agent zt = MakeAgent("fw-malformed", "bf3-zero-trust");
  Enroll(zt);
  std::string nonce = Nonce(zt.node_id);
  report::ReportClaims c = Claims(zt, nonce);
  c.boot_chain["partitions"]["items"][0]["sha256"] = "not-hex";
  auto r = svc_->SubmitReport(Sign(zt, c));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("boot_chain"));
  // The nonce was not consumed: a good report with it still works.
  auto good = svc_->SubmitReport(Sign(zt, Claims(zt, nonce)));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
}

TEST_F(ServiceTest, ClaimedPrimaryThatContradictsTheEvidenceIsReported) {
  Agent zt = MakeAgent("fw-primary", "bf3-zero-trust");
  Enroll(zt);
  report::ReportClaims c = Claims(zt, Nonce(zt.node_id));
  c.boot_chain["partitions"]["primary"] = "/dev/mmcblk0boot0";
  auto r = svc_->SubmitReport(Sign(zt, c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool reported = false;
  for (const auto& reason : r->result.dpuaudit.reasons) {
    if (reason.rule_id == "agent.consistency" &&
        reason.observed == "agent: primary /dev/mmcblk0boot0") {
      reported = true;
    }
  }
  EXPECT_TRUE(reported);
  EXPECT_EQ(r->result.submods.at("arm-agent").trust_vector.configuration, 32);
}

}  // namespace
}  // namespace dpuaudit::verifier

namespace dpuaudit::verifier {
namespace {

// Issue 12 item 9: only the node's own fresh, unused proof gets a nonce.
TEST_F(ServiceTest, ChallengeNeedsAFreshProofSignedByTheNode) {
  Agent a = MakeAgent("n1", "bf3-zero-trust");
  Agent b = MakeAgent("n3", "bf3-zero-trust");
  Enroll(a);
  Enroll(b);
  const int64_t now = clock_.NowUnixSeconds();
  struct Case {
    std::string name, body, message;
  };
  std::vector<Case> cases = {
      {"unsigned", R"({"node_id":"n1"})", "carries no proof"},
      {"another node's key", *report::ChallengeRequestBody("n1", now, *b.signer),
       "is not valid"},
      {"another node's proof",
       nlohmann::json{{"node_id", "n1"},
                      {"proof", *report::SignChallengeProof("n3", now, *b.signer)}}
           .dump(),
       "is not valid"},
      {"stale", ChallengeBody("n1", now - kChallengeProofSkewSeconds - 1),
       "s from verifier time"},
      {"future", ChallengeBody("n1", now + kChallengeProofSkewSeconds + 1),
       "s from verifier time"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    auto c = svc_->IssueChallenge(k.body, "192.0.2.1");
    EXPECT_EQ(c.status().code(), StatusCode::kUnauthenticated) << c.status().ToString();
    EXPECT_THAT(c.status().message(), HasSubstr(k.message));
  }
  std::string body = ChallengeBody("n1", now - kChallengeProofSkewSeconds);
  ASSERT_TRUE(svc_->IssueChallenge(body, "192.0.2.1").ok());
  auto replay = svc_->IssueChallenge(body, "192.0.2.1");
  EXPECT_EQ(replay.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(replay.status().message(), "challenge proof was already used.");
}

// Issue 12 item 10: a refused report is kept as a bounded record.
TEST_F(ServiceTest, RefusedReportsAreStoredAsBoundedRecords) {
  Agent a = MakeAgent("n1", "bf3-zero-trust");
  Enroll(a);
  report::ReportClaims c = Claims(a, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
  auto jws = report::SignReport(c, *a.signer, "n1");
  ASSERT_TRUE(jws.ok());
  ASSERT_GT(jws->size(), kRefusedReportPrefixBytes);
  auto before = svc_->store().ReportBytes("n1");
  ASSERT_TRUE(before.ok());
  auto r = svc_->SubmitReport(*jws);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  auto after = svc_->store().ReportBytes("n1");
  ASSERT_TRUE(after.ok());
  EXPECT_GT(*after, *before);
  EXPECT_LE(*after - *before,
            static_cast<int64_t>(kRefusedReportPrefixBytes + kMaxReportErrorBytes));
}

}  // namespace
}  // namespace dpuaudit::verifier

// dpuaudit-report/2: evidence by digest against the node's own base
// (docs/architecture.md#report-format).
namespace dpuaudit::verifier {
namespace {

class ByDigestTest : public ServiceTest {
 protected:
  // Every item by digest against `base` (the digests of `claims` itself).
  static report::ReportClaims AllByDigest(report::ReportClaims c, const std::string& base) {
    std::set<std::string> held;
    for (const auto& e : c.evidence) held.insert(report::EvidenceItemDigest(e));
    report::CarryByDigest(c, base, held);
    return c;
  }
  static report::ReportClaims V2Full(report::ReportClaims c) {
    report::CarryByDigest(c, "", {});
    return c;
  }
  std::string Reasons(const AppraisalOutcome& o) {
    return strict_json::DumpJson(report::DecisionReasonsJson(o.result.dpuaudit.reasons));
  }
  size_t StoredReports(const std::string& node) {
    auto r = svc_->store().ListNodeReports(node, 0, INT64_MAX);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->size() : 0;
  }
};

TEST_F(ByDigestTest, ByDigestReportIsAppraisedExactlyLikeTheFullOne) {
  Agent a = MakeAgent("dpu", "bf3-zero-trust");
  Enroll(a);
  // /2 full (the base), then /1 full, then /2 by digest: same evidence
  // (the last two both see the release "unchanged").
  const std::string full_jws = Sign(a, V2Full(Claims(a, Nonce(a.node_id))));
  auto full = svc_->SubmitReport(full_jws);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  auto v1 = svc_->SubmitReport(Sign(a, Claims(a, Nonce(a.node_id))));
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  report::ReportClaims c = AllByDigest(Claims(a, Nonce(a.node_id)), Sha256Hex(AsBytes(full_jws)));
  ASSERT_EQ(c.by_digest.size(), c.evidence.size());
  const std::string small = Sign(a, c);
  // The evidence bytes (~12 KB of this fixture's 53 KB JWS) are not sent.
  EXPECT_LT(small.size() + 10000, full_jws.size()) << small.size() << " vs " << full_jws.size();
  auto by_digest = svc_->SubmitReport(small);
  ASSERT_TRUE(by_digest.ok()) << by_digest.status().ToString();
  EXPECT_EQ(by_digest->result.dpuaudit.decision, report::Decision::kAdmit);
  // Byte-identical rule results, submods and collateral.
  EXPECT_EQ(Reasons(*by_digest), Reasons(*v1));
  report::AttestationResult x = by_digest->result, y = v1->result;
  x.dpuaudit.report_sha256 = y.dpuaudit.report_sha256 = "";
  x.nonce = y.nonce = "";
  EXPECT_EQ(report::SerializeEar(x), report::SerializeEar(y));
  // The store keeps the /2 report as received: small.
  auto stored = svc_->store().GetAcceptedReport("dpu", Sha256Hex(AsBytes(small)));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->jws, small);
}

TEST_F(ByDigestTest, UnknownBaseIsEvidenceUnknownAndChangesNothing) {
  Agent a = MakeAgent("dpu", "bf3-zero-trust");
  Enroll(a);
  ASSERT_TRUE(svc_->SubmitReport(FreshReport(a)).ok());
  const std::string before = LatestDecision("dpu");
  const size_t reports = StoredReports("dpu");
  const std::string nonce = Nonce(a.node_id);
  report::ReportClaims c = AllByDigest(Claims(a, nonce), std::string(64, 'e'));
  std::vector<std::string> unknown;
  auto r = svc_->SubmitReport(Sign(a, c), &unknown);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(),
              ::testing::StartsWith("evidence_unknown: " + std::to_string(c.evidence.size()) +
                                    " evidence item(s) carried by digest are not held for node "
                                    "dpu (no accepted report eeeeeeeeeeeeeeee… of this node is "
                                    "stored): "));
  ASSERT_EQ(unknown.size(), c.evidence.size());
  EXPECT_EQ(unknown.front(), c.evidence.front().id);
  // No state change: no result, no refused-report record, the nonce unspent.
  EXPECT_EQ(LatestDecision("dpu"), before);
  EXPECT_EQ(StoredReports("dpu"), reports);
  auto resent = svc_->SubmitReport(Sign(a, V2Full(Claims(a, nonce))));
  ASSERT_TRUE(resent.ok()) << resent.status().ToString();
  EXPECT_EQ(resent->result.dpuaudit.decision, report::Decision::kAdmit);
}

TEST_F(ByDigestTest, ANodeCannotNameAnotherNodesEvidence) {
  Agent a = MakeAgent("node-a", "bf3-zero-trust");
  Agent b = MakeAgent("node-b", "bf3-zero-trust");  // the same device bytes
  Enroll(a);
  Enroll(b);
  const std::string base_a = Sign(a, V2Full(Claims(a, Nonce(a.node_id))));
  ASSERT_TRUE(svc_->SubmitReport(base_a).ok());
  const std::string sha_a = Sha256Hex(AsBytes(base_a));
  for (bool restarted : {false, true}) {
    if (restarted) {  // from the store, not the cache
      svc_.reset();
      Start();
    }
    std::vector<std::string> unknown;
    auto r = svc_->SubmitReport(Sign(b, AllByDigest(Claims(b, Nonce(b.node_id)), sha_a)),
                                &unknown);
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << restarted;
    EXPECT_THAT(r.status().message(), HasSubstr("not held for node node-b (no accepted report"));
    EXPECT_FALSE(unknown.empty());
    EXPECT_EQ(svc_->store().LatestResult("node-b").status().code(), StatusCode::kNotFound);
    // Node a itself may.
    auto own = svc_->SubmitReport(Sign(a, AllByDigest(Claims(a, Nonce(a.node_id)), sha_a)));
    EXPECT_TRUE(own.ok()) << restarted << " " << own.status().ToString();
  }
}

TEST_F(ByDigestTest, AChangedItemIsUnknownAndOnlyThatOne) {
  Agent a = MakeAgent("dpu", "bf3-zero-trust");
  Enroll(a);
  const std::string base = Sign(a, V2Full(Claims(a, Nonce(a.node_id))));
  ASSERT_TRUE(svc_->SubmitReport(base).ok());
  // The device changed (host privileged): its mlxprivhost output differs;
  // a hostile agent names every item by digest anyway.
  Agent changed{a.node_id, a.key, std::move(*Es256Signer::New(a.key)), "bf3-privileged-host"};
  report::ReportClaims zt = Claims(a, "x");
  report::ReportClaims c = AllByDigest(Claims(changed, Nonce(a.node_id)),
                                       Sha256Hex(AsBytes(base)));
  std::map<std::string, std::string> base_digests;
  for (const auto& e : zt.evidence) base_digests[e.id] = report::EvidenceItemDigest(e);
  std::vector<std::string> expected;
  for (const auto& e : c.evidence) {
    if (base_digests[e.id] != report::EvidenceItemDigest(e)) expected.push_back(e.id);
  }
  ASSERT_FALSE(expected.empty());
  ASSERT_LT(expected.size(), c.evidence.size());
  std::vector<std::string> unknown;
  auto r = svc_->SubmitReport(Sign(a, c), &unknown);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("the base report holds no equal item"));
  EXPECT_EQ(unknown, expected);
  // Sent in full (mixed: the unchanged items still by digest) it is judged
  // on the new bytes: denied.
  std::set<std::string> held;
  for (const auto& e : zt.evidence) held.insert(report::EvidenceItemDigest(e));
  report::ReportClaims mixed = Claims(changed, Nonce(a.node_id));
  report::CarryByDigest(mixed, Sha256Hex(AsBytes(base)), held);
  ASSERT_FALSE(mixed.by_digest.empty());
  ASSERT_LT(mixed.by_digest.size(), mixed.evidence.size());
  auto denied = svc_->SubmitReport(Sign(a, mixed));
  ASSERT_TRUE(denied.ok()) << denied.status().ToString();
  EXPECT_EQ(denied->result.dpuaudit.decision, report::Decision::kDeny);
}

TEST_F(ByDigestTest, TheBaseMustCarryEveryItemInFull) {
  Agent a = MakeAgent("dpu", "bf3-zero-trust");
  Enroll(a);
  const std::string base = Sign(a, V2Full(Claims(a, Nonce(a.node_id))));
  ASSERT_TRUE(svc_->SubmitReport(base).ok());
  const std::string second =
      Sign(a, AllByDigest(Claims(a, Nonce(a.node_id)), Sha256Hex(AsBytes(base))));
  ASSERT_TRUE(svc_->SubmitReport(second).ok());
  auto r = svc_->SubmitReport(
      Sign(a, AllByDigest(Claims(a, Nonce(a.node_id)), Sha256Hex(AsBytes(second)))));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("the base report carries evidence by digest itself"));
}

TEST_F(ByDigestTest, ForgedByDigestReportIsRefusedBeforeParsing) {
  Agent a = MakeAgent("dpu", "bf3-zero-trust");
  Agent mallory = MakeAgent("mallory", "bf3-zero-trust");
  Enroll(a);
  const std::string base = Sign(a, V2Full(Claims(a, Nonce(a.node_id))));
  ASSERT_TRUE(svc_->SubmitReport(base).ok());
  const std::string before = LatestDecision("dpu");
  // Signed by another key under a's kid.
  report::ReportClaims c = AllByDigest(Claims(a, Nonce(a.node_id)), Sha256Hex(AsBytes(base)));
  Agent forger{"dpu", mallory.key, std::move(*Es256Signer::New(mallory.key)), mallory.device};
  std::vector<std::string> unknown;
  auto r = svc_->SubmitReport(Sign(forger, c), &unknown);
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
  EXPECT_TRUE(unknown.empty());
  EXPECT_EQ(LatestDecision("dpu"), before);
}

TEST_F(ByDigestTest, RekeyedNodeCannotUseEvidenceSignedUnderItsOldKey) {
  Agent a = MakeAgent("dpu", "bf3-zero-trust");
  Enroll(a);
  const std::string base = Sign(a, V2Full(Claims(a, Nonce(a.node_id))));
  ASSERT_TRUE(svc_->SubmitReport(base).ok());
  // Revoked and enrolled again under a new key.
  ASSERT_TRUE(svc_->RevokeNode("dpu", R"({"by":"test","reason":"rekey"})", std::string(kAdminToken)).ok());
  Agent again = MakeAgent("dpu", "bf3-zero-trust");
  auto token = svc_->IssueEnrollmentToken(R"({"node_id":"dpu","by":"test"})",
                                          std::string(kAdminToken));
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  auto enrolled = svc_->Enroll(EnrollBody(again), (*token)["token"].get<std::string>());
  ASSERT_TRUE(enrolled.ok()) << enrolled.status().ToString();
  std::vector<std::string> unknown;
  auto r = svc_->SubmitReport(
      Sign(again, AllByDigest(Claims(again, Nonce("dpu")), Sha256Hex(AsBytes(base)))), &unknown);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_THAT(r.status().message(),
              HasSubstr("the base report does not verify under the node's current key"));
  EXPECT_FALSE(unknown.empty());
}

}  // namespace
}  // namespace dpuaudit::verifier
