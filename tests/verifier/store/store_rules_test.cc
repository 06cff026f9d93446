// The rules every Store backend shares (verifier/store/store.h), without
// any database: node transitions, TPM binding and rebinding decisions,
// enrollment plans, nonce refusals, quota and retention arithmetic.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "verifier/store/store.h"

namespace dpuaudit::verifier {
namespace {

NodeRecord Node(const std::string& id, NodeState state = NodeState::kPending,
                const std::string& key = "thumb-a") {
  NodeRecord n;
  n.node_id = id;
  n.public_key_pem = "pem";
  n.key_thumbprint = key;
  n.state = state;
  n.enrolled_at = 1000;
  return n;
}

TpmBinding Binding(const std::string& node_id, char ek = 'e', char ak = 'a',
                   TpmBindingState state = TpmBindingState::kPending) {
  TpmBinding b;
  b.node_id = node_id;
  b.ek_public_b64 = "ZWs=";
  b.ek_sha256 = std::string(64, ek == 'e' ? 'e' : 'f');
  b.ak_public_b64 = "YWs=";
  b.ak_name_hex = std::string(68, ak == 'a' ? 'a' : 'b');
  b.state = state;
  b.created_at = 1000;
  if (state == TpmBindingState::kPending) {
    b.credential_sha256 = std::string(64, 'c');
    b.challenge_expires_at = 1300;
  } else {
    b.activated_at = 1100;
  }
  return b;
}

// --- Nodes

TEST(StoreRulesTest, ApproveNodeTransitions) {
  NodeRecord pending = Node("n1");
  auto changed = ApplyApproveNode(pending, 5000);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(pending.state, NodeState::kApproved);
  EXPECT_EQ(pending.approved_at, 5000);

  auto again = ApplyApproveNode(pending, 6000);  // keeps the first time
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(pending.approved_at, 5000);

  NodeRecord revoked = Node("n2", NodeState::kRevoked);
  auto refused = ApplyApproveNode(revoked, 5000);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "node \"n2\" is revoked and cannot be approved.");
  EXPECT_EQ(revoked.state, NodeState::kRevoked);
}

TEST(StoreRulesTest, RevokeIsIdempotentAndKeepsTheFirstRecord) {
  NodeRecord n = Node("n1", NodeState::kApproved);
  EXPECT_TRUE(ApplyRevocationFor(n, "alice", "lost", 7000));
  EXPECT_EQ(n.state, NodeState::kRevoked);
  EXPECT_FALSE(ApplyRevocationFor(n, "bob", "again", 8000));
  EXPECT_EQ(n.revoked_by, "alice");
  EXPECT_EQ(n.revoked_at, 7000);
  EXPECT_EQ(ValidateRevocation("", "x").message(),
            "who revokes (by) is required.");
  EXPECT_EQ(ValidateRevocation("a", "").message(),
            "why (reason) is required to revoke a node.");
  NodeRecord plain = Node("n3");
  EXPECT_TRUE(ApplyRevokeNode(plain));
  EXPECT_FALSE(ApplyRevokeNode(plain));
}

TEST(StoreRulesTest, ReEnrollmentIsIdempotentOnlyForTheSameKey) {
  NodeRecord stored = Node("n1");
  EXPECT_TRUE(CheckReEnrollment(stored, Node("n1")).ok());
  Status other = CheckReEnrollment(stored, Node("n1", NodeState::kPending,
                                                "thumb-b"));
  EXPECT_EQ(other.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(other.message(),
            "node \"n1\" is already enrolled with a different key.");
  NodeRecord other_alg = Node("n1");
  other_alg.alg = "ES384";
  EXPECT_EQ(CheckReEnrollment(stored, other_alg).code(),
            StatusCode::kAlreadyExists);
}

// --- Enrollment

TEST(StoreRulesTest, PlanEnrollment) {
  NodeRecord node = Node("n1", NodeState::kPending, "thumb-new");
  EXPECT_EQ(PlanEnrollment(std::nullopt, node, false).value(),
            EnrollAction::kCreate);

  NodeRecord revoked = Node("n1", NodeState::kRevoked);
  revoked.revoked_at = 900;
  revoked.revoked_by = "alice";
  revoked.revoke_reason = "stolen";
  auto refused = PlanEnrollment(revoked, node, false);
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.status().message(),
            "node \"n1\" was revoked at 900 by \"alice\" (stolen); "
            "re-enrolling it needs a per-node enrollment token issued by an "
            "admin (dpuaudit tokens issue n1).");
  EXPECT_EQ(PlanEnrollment(revoked, node, true).value(),
            EnrollAction::kReEnrollRevoked);

  NodeRecord squatter = Node("n1");
  EXPECT_EQ(PlanEnrollment(squatter, node, true).value(),
            EnrollAction::kTakeOver);
  // Without a token the squatter's key stays (CreateNode refuses).
  EXPECT_EQ(PlanEnrollment(squatter, node, false).value(),
            EnrollAction::kCreate);

  NodeRecord approved = Node("n1", NodeState::kApproved);
  auto taken = PlanEnrollment(approved, node, true);
  EXPECT_EQ(taken.status().code(), StatusCode::kAlreadyExists);
  // A pending node that was once approved is no squatter either.
  NodeRecord was_approved = Node("n1");
  was_approved.approved_at = 1;
  EXPECT_EQ(PlanEnrollment(was_approved, node, true).status().code(),
            StatusCode::kAlreadyExists);
}

TEST(StoreRulesTest, EnrollRequestChecks) {
  EnrollGrant grant;
  EXPECT_TRUE(ValidateEnrollRequest(Node("n1"), std::nullopt, grant).ok());
  grant.token_sha256 = std::string(64, 'a');
  EXPECT_EQ(ValidateEnrollRequest(Node("n1"), std::nullopt, grant).message(),
            "an enrollment token grant must have authority kBootstrapToken.");
  grant = EnrollGrant();
  EXPECT_EQ(ValidateEnrollRequest(Node("n1", NodeState::kApproved),
                                  std::nullopt, grant)
                .message(),
            "EnrollNode takes a pending node; the grant approves it.");
  EXPECT_EQ(ValidateEnrollRequest(Node("n1"), Binding("n2"), grant).message(),
            "TPM binding is for node \"n2\", not \"n1\".");
}

TEST(StoreRulesTest, PendingExpiryAndCap) {
  NodeRecord n = Node("n1");  // enrolled_at 1000
  EXPECT_FALSE(PendingExpired(n, 5000, 0));  // no ttl: never
  EXPECT_FALSE(PendingExpired(n, 1099, 100));
  EXPECT_TRUE(PendingExpired(n, 1100, 100));
  EXPECT_FALSE(PendingExpired(Node("n2", NodeState::kApproved), 9999, 1));
  EXPECT_EQ(UnexpiredPendingAfter(1100, 100), 1000);
  EXPECT_EQ(UnexpiredPendingAfter(1100, 0),
            std::numeric_limits<int64_t>::min());

  EnrollGrant grant;
  grant.max_pending = 2;
  EXPECT_TRUE(PendingCapApplies(grant));
  EXPECT_TRUE(CheckPendingCap(1, grant).ok());
  Status full = CheckPendingCap(2, grant);
  EXPECT_EQ(full.code(), StatusCode::kUnavailable);
  EXPECT_EQ(full.message(),
            "the verifier holds 2 pending enrollments, its limit; approve or "
            "reject some (dpuaudit-verifier nodes list), let them expire, or "
            "enroll with a per-node enrollment token.");
  grant.authority = EnrollAuthority::kBootstrapToken;  // vouched: no cap
  EXPECT_FALSE(PendingCapApplies(grant));
  EXPECT_TRUE(CheckPendingCap(99, grant).ok());
}

TEST(StoreRulesTest, EnrollmentApproval) {
  ApprovalRequest req;
  req.key_thumbprint = "thumb-a";
  req.by = "alice";
  req.now = 2000;
  EXPECT_EQ(ValidateApprovalRequest(ApprovalRequest()).message(),
            "who approves (--by) is required.");

  NodeRecord n = Node("n1");
  n.claimed_serial = "MT1";
  auto ok = ApplyEnrollmentApproval(n, req);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(*ok);
  EXPECT_EQ(n.device_serial, "MT1");  // the claimed serial is pinned
  EXPECT_EQ(n.approved_by, "alice");
  EXPECT_FALSE(ApplyEnrollmentApproval(n, req).value());  // unchanged

  NodeRecord wrong_key = Node("n2", NodeState::kPending, "thumb-z");
  EXPECT_EQ(ApplyEnrollmentApproval(wrong_key, req).status().code(),
            StatusCode::kFailedPrecondition);

  NodeRecord other_serial = Node("n3");
  other_serial.claimed_serial = "MT1";
  req.serial = "MT2";
  EXPECT_EQ(ApplyEnrollmentApproval(other_serial, req).status().message(),
            "node \"n3\" claims device serial \"MT1\", not \"MT2\"; refusing "
            "to approve it.");

  req.serial.clear();
  req.pending_ttl_seconds = 500;  // enrolled 1000, now 2000: expired
  NodeRecord expired = Node("n4");
  EXPECT_EQ(ApplyEnrollmentApproval(expired, req).status().message(),
            "the pending enrollment of node \"n4\" expired at 1500; the "
            "device must enroll again.");
}

TEST(StoreRulesTest, RejectionAndTokenRevocation) {
  EXPECT_EQ(ValidateRejection("").message(), "who rejects (--by) is required.");
  EXPECT_TRUE(CheckRejection(Node("n1")).ok());
  EXPECT_EQ(CheckRejection(Node("n1", NodeState::kApproved)).message(),
            "node \"n1\" is approved; only a pending node can be rejected "
            "(use revoke).");

  EnrollmentToken t;
  t.token_id = "0123456789abcdef";
  t.node_id = "n1";
  EXPECT_TRUE(ApplyTokenRevocation(t, "alice", 10).value());
  EXPECT_FALSE(ApplyTokenRevocation(t, "bob", 20).value());
  EXPECT_EQ(t.revoked_by, "alice");
  EnrollmentToken used = t;
  used.revoked_at.reset();
  used.used_at = 5;
  EXPECT_EQ(ApplyTokenRevocation(used, "alice", 10).status().message(),
            "enrollment token 0123456789abcdef was used at 5 (node \"n1\"); "
            "revoke the node instead.");
}

TEST(StoreRulesTest, HistoryLines) {
  NodeRecord n = Node("n1");
  NodeEvent e = EnrolledEvent(n, true, "", 1000);
  EXPECT_EQ(e.event, "enrolled");
  EXPECT_EQ(e.detail, "enrolled with key thumb-a (no serial claimed) and a TPM.");
  n.device_serial = "MT1";
  EXPECT_EQ(ApprovedEvent(n, "alice", "ok", 5).detail,
            "approved key thumb-a pinned to device serial \"MT1\": ok.");
  EXPECT_EQ(RevokedEvent(n, NodeState::kApproved, "bob", "lost", 6).detail,
            "revoked (was approved, key thumb-a): lost.");
  EXPECT_EQ(RejectedEvent(n, "bob", "", 7).detail,
            "pending key thumb-a (no serial claimed) rejected and removed.");
  EXPECT_EQ(ExpiredPendingEvent("n9", 8).node_id, "n9");
}

// --- TPM bindings

TEST(StoreRulesTest, TpmBindingNeedsWrite) {
  TpmBinding incoming = Binding("n1");
  EXPECT_TRUE(TpmBindingNeedsWrite(std::nullopt, incoming).value());
  // A pending binding is replaced, whatever its TPM.
  EXPECT_TRUE(TpmBindingNeedsWrite(Binding("n1", 'x', 'y'), incoming).value());
  // An active binding of the same EK and AK is left as it is.
  TpmBinding active = Binding("n1", 'e', 'a', TpmBindingState::kActive);
  EXPECT_FALSE(TpmBindingNeedsWrite(active, incoming).value());
  // Another AK, or another EK public area, is another TPM.
  TpmBinding other_ak = Binding("n1", 'e', 'b', TpmBindingState::kActive);
  auto refused = TpmBindingNeedsWrite(other_ak, incoming);
  EXPECT_EQ(refused.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(refused.status().message(), "node \"n1\" is bound to another TPM.");
  TpmBinding other_ek_public = active;
  other_ek_public.ek_public_b64 = "eno=";
  EXPECT_FALSE(TpmBindingNeedsWrite(other_ek_public, incoming).ok());
}

TEST(StoreRulesTest, UnvouchedTpmEnrollment) {
  TpmBinding incoming = Binding("n1");
  incoming.created_at = 1200;
  // No binding: a pending node may add one; an approved one needs a token.
  EXPECT_TRUE(
      CheckUnvouchedTpmEnrollment(Node("n1"), std::nullopt, incoming).ok());
  Status approved = CheckUnvouchedTpmEnrollment(
      Node("n1", NodeState::kApproved), std::nullopt, incoming);
  EXPECT_EQ(approved.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(approved.message(),
            "node \"n1\" is approved; adding a TPM to it needs the bootstrap "
            "token.");
  // Another TPM: rebinding needs the token.
  Status rebind = CheckUnvouchedTpmEnrollment(Node("n1"), Binding("n1", 'x'),
                                              incoming);
  EXPECT_EQ(rebind.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(rebind.message(),
            "node \"n1\" is bound to another TPM; rebinding it needs the "
            "bootstrap token.");
  // The same TPM with a challenge outstanding (expires 1300 > 1200).
  Status outstanding =
      CheckUnvouchedTpmEnrollment(Node("n1"), Binding("n1"), incoming);
  EXPECT_EQ(outstanding.code(), StatusCode::kFailedPrecondition);
  incoming.created_at = 1300;  // expired: may enroll again
  EXPECT_TRUE(
      CheckUnvouchedTpmEnrollment(Node("n1"), Binding("n1"), incoming).ok());
}

TEST(StoreRulesTest, TpmActivationOrder) {
  const std::string good(64, 'c');
  EXPECT_EQ(CheckTpmActivation(std::nullopt, "n1", good, 1100).message(),
            "node \"n1\" has no TPM binding.");
  TpmBinding active = Binding("n1", 'e', 'a', TpmBindingState::kActive);
  EXPECT_EQ(CheckTpmActivation(active, "n1", good, 1100).message(),
            "TPM binding of node \"n1\" is already active.");
  TpmBinding pending = Binding("n1");
  // A wrong credential is refused before expiry is considered.
  EXPECT_EQ(CheckTpmActivation(pending, "n1", std::string(64, 'd'), 9999)
                .message(),
            "credential does not match.");
  Status late = CheckTpmActivation(pending, "n1", good, 1300);
  EXPECT_EQ(late.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(late.message(), "credential challenge expired at 1300.");
  EXPECT_TRUE(CheckTpmActivation(pending, "n1", good, 1299).ok());
}

TEST(StoreRulesTest, TpmBindingDeletion) {
  EXPECT_EQ(CheckTpmBindingDeletion(std::nullopt, "n1", true).code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(CheckTpmBindingDeletion(Binding("n1"), "n1", false).ok());
  TpmBinding active = Binding("n1", 'e', 'a', TpmBindingState::kActive);
  EXPECT_EQ(CheckTpmBindingDeletion(active, "n1", false).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(CheckTpmBindingDeletion(active, "n1", true).ok());
  EXPECT_EQ(ValidatePendingTpmBinding(active).message(),
            "a TPM binding must be put in state pending.");
}

// --- Nonces

TEST(StoreRulesTest, NonceRefusalsInOrder) {
  EXPECT_EQ(NonceRefusal(std::nullopt, "n1", 0).message(), "unknown nonce.");
  StoredNonce n{"n1", 100, 200, false};
  EXPECT_EQ(NonceRefusal(n, "n2", 150).message(),
            "nonce was issued to another node.");
  EXPECT_TRUE(NonceRefusal(n, "n1", 199).ok());
  EXPECT_EQ(NonceRefusal(n, "n1", 200).message(), "nonce expired at 200.");
  n.used = true;
  EXPECT_EQ(NonceRefusal(n, "n1", 500).message(), "nonce already used.");
  EXPECT_EQ(NonceRefusal(n, "n2", 500).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(NonceIssuedAtFor(n, "n1").value(), 100);
  EXPECT_EQ(NonceIssuedAtFor(n, "n2").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(ValidateNonce("x", "n1", 10, 10).message(),
            "nonce expires_at 10 is not after issued_at 10.");
  EXPECT_EQ(ValidateNonceCap(0).message(),
            "max_outstanding 0 must be at least 1.");
  EXPECT_EQ(NoncesToEvict(2, 3), 0);
  EXPECT_EQ(NoncesToEvict(3, 3), 1);
  EXPECT_EQ(NoncesToEvict(7, 3), 5);
}

// --- Quotas

ReportRecord Refused(const std::string& node, size_t body, size_t error) {
  ReportRecord r;
  r.node_id = node;
  r.jws = std::string(body, 'j');
  r.sha256 = "s";
  r.error = std::string(error, 'e');
  return r;
}

TEST(StoreRulesTest, RefusedReportBoundsAndQuota) {
  EXPECT_TRUE(ValidateRefusedReport(Refused("n1", 10, 5)).ok());
  EXPECT_FALSE(
      ValidateRefusedReport(Refused("n1", kRefusedReportPrefixBytes + 1, 5))
          .ok());
  ReportRecord accepted = Refused("n1", 10, 0);
  accepted.accepted = true;
  EXPECT_EQ(ValidateRefusedReport(accepted).message(),
            "InsertRefusedReport needs a refused report.");
  ReportRecord r = Refused("n1", 10, 5);
  EXPECT_EQ(ReportStoredBytes(r), 15);
  EXPECT_TRUE(CheckRefusedReportQuota(r, 85, 100).ok());
  Status over = CheckRefusedReportQuota(r, 86, 100);
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(over.message(),
            "node \"n1\" has used 86 of its 100 bytes of report storage; the "
            "refused report is not stored.");
  EXPECT_TRUE(CheckRefusedReportQuota(r, 1000000, 0).ok());  // no quota
  EXPECT_EQ(CheckReportFitsQuota(r, 14).message(),
            "report of 15 bytes exceeds node \"n1\"'s report storage quota "
            "of 14 bytes.");
  EXPECT_TRUE(CheckReportFitsQuota(r, 15).ok());
}

// A fake node history for MakeReportRoom: what it frees, in order.
struct FakeRoom {
  std::vector<int64_t> refused;  // bytes, oldest first
  std::vector<int64_t> bodies;
  std::vector<std::string> log;
  ReportRoom Room() {
    auto take = [this](std::vector<int64_t>& from, const char* what)
        -> StatusOr<std::optional<int64_t>> {
      if (from.empty()) return std::optional<int64_t>();
      int64_t b = from.front();
      from.erase(from.begin());
      log.push_back(std::string(what) + std::to_string(b));
      return std::optional<int64_t>(b);
    };
    return ReportRoom{[this, take] { return take(refused, "refused:"); },
                      [this, take] { return take(bodies, "body:"); }};
  }
};

TEST(StoreRulesTest, MakeRoomFreesRefusedFirstThenOldestBodies) {
  FakeRoom fake{{10, 20}, {30, 40}, {}};
  ReportRecord r = Refused("n1", 25, 0);
  // used 90 + need 25 against 100: 15 over.
  ASSERT_TRUE(MakeReportRoom(r, 90, 100, fake.Room()).ok());
  EXPECT_EQ(fake.log, (std::vector<std::string>{"refused:10", "refused:20"}));

  FakeRoom bodies{{5}, {30, 40}, {}};
  ASSERT_TRUE(MakeReportRoom(r, 110, 100, bodies.Room()).ok());
  EXPECT_EQ(bodies.log,
            (std::vector<std::string>{"refused:5", "body:30"}));

  FakeRoom empty{{}, {10}, {}};
  Status s = MakeReportRoom(r, 100, 100, empty.Room());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "node \"n1\" has used 90 of its 100 bytes of report storage and "
            "has nothing left to prune.");

  FakeRoom untouched{{10}, {10}, {}};
  EXPECT_TRUE(MakeReportRoom(r, 1000, 0, untouched.Room()).ok());  // no quota
  EXPECT_TRUE(MakeReportRoom(r, 75, 100, untouched.Room()).ok());  // fits
  EXPECT_TRUE(untouched.log.empty());
}

// --- Retention

TEST(StoreRulesTest, RetentionActions) {
  RetentionPolicy policy;
  policy.keep_reports = 2;
  policy.keep_seconds = 100;
  EXPECT_EQ(RetentionCutoff(policy, 1000), 900);
  EXPECT_EQ(RetentionCutoff(RetentionPolicy(), 1000), std::nullopt);
  RetentionPolicy negative;
  negative.keep_reports = -1;
  EXPECT_EQ(ValidateRetentionPolicy(negative).message(),
            "retention limits must not be negative.");

  RetentionCandidate c;
  c.decision = "admit";
  c.previous_decision = "admit";
  c.created_at = 950;
  c.rank = 1;  // the latest is never touched, whatever its age
  c.created_at = 0;
  EXPECT_EQ(RetentionActionFor(c, policy, 1000), RetentionAction::kKeep);
  c.rank = 2;  // within keep_reports, but too old
  EXPECT_EQ(RetentionActionFor(c, policy, 1000), RetentionAction::kDelete);
  c.created_at = 950;  // young and within keep_reports
  EXPECT_EQ(RetentionActionFor(c, policy, 1000), RetentionAction::kKeep);
  c.rank = 3;  // beyond keep_reports
  EXPECT_EQ(RetentionActionFor(c, policy, 1000), RetentionAction::kDelete);
  c.previous_decision = "deny";  // a decision change keeps its row
  EXPECT_EQ(RetentionActionFor(c, policy, 1000), RetentionAction::kDropBody);
  c.previous_decision.reset();  // the node's first result too
  EXPECT_EQ(RetentionActionFor(c, policy, 1000), RetentionAction::kDropBody);
  // Limits off: nothing is outside them.
  EXPECT_EQ(RetentionActionFor(c, RetentionPolicy(), 1000),
            RetentionAction::kKeep);
}

// --- Reference values

TEST(StoreRulesTest, ReleaseModelFilter) {
  EXPECT_EQ(ReleaseModelFilter("").value(), "");
  EXPECT_EQ(ReleaseModelFilter("no-such-model").status().message(),
            "model \"no-such-model\" is not a known BlueField model.");
}

TEST(StoreRulesTest, ErrorsSpelledOnce) {
  EXPECT_EQ(NodeNotEnrolledError("n1").message(), "node \"n1\" is not enrolled.");
  EXPECT_EQ(TpmBoundToNodeError("n2").message(),
            "this TPM is bound to node \"n2\".");
  EXPECT_EQ(ReleaseNotKnownError("r1").message(),
            "reference release \"r1\" is not known.");
  EXPECT_EQ(NoResultError("n1").message(), "no result for node \"n1\".");
  EXPECT_EQ(InvalidEnrollmentTokenError().code(),
            StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace dpuaudit::verifier
