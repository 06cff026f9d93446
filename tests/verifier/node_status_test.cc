// verifier/node_status.h: the node status machine (issue 15), as a table
// of (status, what happened) -> (status, event). Keylime's failure modes
// are rows here: a stale node is not revived by time or a sweep, and a
// sticky failure is not cleared by passing reports (FAIL -> TIMEOUT ->
// PASS must not look healthy).
#include <gtest/gtest.h>

#include "verifier/node_status.h"

namespace dpuaudit::verifier {
namespace {

NodeStatusRecord With(std::string_view status, int64_t last = 100) {
  NodeStatusRecord s = InitialStatus("n1", 50);
  s.status = std::string(status);
  s.last_appraisal_at = last;
  if (status == kStatusHeld) s.held_rules = "host.privilege_level";
  return s;
}

JudgedResult Admit(int64_t at) { return {"admit", at, {}}; }
JudgedResult Deny(int64_t at, std::vector<std::string> sticky = {}) {
  return {"deny", at, std::move(sticky)};
}

struct Row {
  std::string from;
  JudgedResult result;
  std::string to;
  std::string event;  // "" = none
};

TEST(NodeStatusTest, ResultsMoveTheStatusAndNameTheEvent) {
  const std::vector<Row> rows = {
      {"unattested", Admit(200), "admitted", "node.admitted"},
      {"unattested", Deny(200), "failed", "node.denied"},
      {"admitted", Admit(200), "admitted", ""},
      {"admitted", Deny(200), "failed", "node.denied"},
      {"failed", Deny(200), "failed", ""},
      {"failed", Admit(200), "admitted", "node.admitted"},
      {"stale", Admit(200), "admitted", "node.admitted"},
      {"stale", Deny(200), "failed", "node.denied"},
      {"admitted", Deny(200, {"host.privilege_level"}), "held", "node.held"},
      {"held", Admit(200), "held", ""},
      {"held", Deny(200), "held", ""},
      {"revoked", Admit(200), "revoked", ""},
  };
  for (const Row& r : rows) {
    StatusStep s = AfterResult(With(r.from), r.result, 300);
    EXPECT_EQ(s.status.status, r.to) << r.from << " + " << r.result.decision;
    EXPECT_EQ(s.event_type.value_or(""), r.event) << r.from << " + " << r.result.decision;
    EXPECT_EQ(s.status.last_appraisal_at, 200);
    EXPECT_EQ(s.status.last_decision, r.result.decision);
    if (s.event_type) {
      EXPECT_EQ(s.status.since, 300);
    }
  }
}

TEST(NodeStatusTest, HeldAccumulatesStickyRulesAndOnlyAcknowledgementLeaves) {
  StatusStep held = AfterResult(With(kStatusAdmitted), Deny(200, {"a.rule"}), 200);
  ASSERT_EQ(held.status.status, "held");
  EXPECT_EQ(held.status.held_rules, "a.rule");
  StatusStep more = AfterResult(held.status, Deny(210, {"b.rule", "a.rule"}), 210);
  EXPECT_EQ(more.status.held_rules, "a.rule,b.rule");
  // Passing reports, a sweep far in the future: still held.
  StatusStep pass = AfterResult(more.status, Admit(220), 220);
  EXPECT_EQ(pass.status.status, "held");
  EXPECT_EQ(pass.status.last_admit_at, 220);
  EXPECT_FALSE(AfterSweep(pass.status, 100000, 60).event_type);
  auto ack = AfterAcknowledgement(pass.status, 230, "alice", "reimaged");
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(ack->status.status, "failed");  // still denied
  EXPECT_EQ(ack->event_type.value_or(""), "node.acknowledged");
  EXPECT_TRUE(ack->status.held_rules.empty());
  EXPECT_NE(ack->detail.find("alice"), std::string::npos);
  // ... and admitted only by the next passing report.
  EXPECT_EQ(AfterResult(ack->status, Admit(240), 240).status.status, "admitted");
  EXPECT_EQ(AfterAcknowledgement(ack->status, 250, "a", "b").status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(NodeStatusTest, StaleAfterTtlAndNotRevivedByTime) {
  NodeStatusRecord admitted = With(kStatusAdmitted, 1000);
  EXPECT_FALSE(AfterSweep(admitted, 1059, 60).event_type);
  StatusStep stale = AfterSweep(admitted, 1060, 60);
  ASSERT_EQ(stale.event_type.value_or(""), "node.stale");
  EXPECT_EQ(stale.status.status, "stale");
  EXPECT_EQ(stale.status.since, 1060);
  // A stale node stays stale whatever the clock does.
  EXPECT_FALSE(AfterSweep(stale.status, 5000, 60).event_type);
  EXPECT_FALSE(AfterSweep(stale.status, 0, 60).event_type);
  EXPECT_EQ(StatusDecision(stale.status.status), "deny");
  // Failed nodes go stale too (unreachable and failed are distinct).
  EXPECT_EQ(AfterSweep(With(kStatusFailed, 1000), 1060, 60).status.status, "stale");
  // An approved node that never reports goes stale from its approval.
  NodeStatusRecord fresh = InitialStatus("n1", 1000);
  EXPECT_EQ(AfterSweep(fresh, 1060, 60).status.status, "stale");
  // stale_after 0: never.
  EXPECT_FALSE(AfterSweep(admitted, 1 << 30, 0).event_type);
  EXPECT_TRUE(IsStale(admitted, 1060, 60));
  EXPECT_FALSE(IsStale(admitted, 1059, 60));
}

TEST(NodeStatusTest, ApprovalRevocationAndReapproval) {
  StatusStep first = AfterApproval(std::nullopt, "n1", 10);
  EXPECT_EQ(first.status.status, "unattested");
  EXPECT_EQ(first.event_type.value_or(""), "node.approved");
  EXPECT_FALSE(AfterApproval(With(kStatusAdmitted), "n1", 20).event_type);
  StatusStep revoked = AfterRevocation(With(kStatusAdmitted), "n1", 30, "stolen");
  EXPECT_EQ(revoked.status.status, "revoked");
  EXPECT_EQ(revoked.event_type.value_or(""), "node.revoked");
  StatusStep revoked_new = AfterRevocation(std::nullopt, "n1", 30, "x");
  EXPECT_EQ(revoked_new.event_type.value_or(""), "node.revoked");
  StatusStep again = AfterApproval(revoked.status, "n1", 40);
  EXPECT_EQ(again.status.status, "unattested");
  EXPECT_EQ(again.event_type.value_or(""), "node.reapproved");
  EXPECT_EQ(again.status.last_decision, "");  // old results do not carry over
  EXPECT_EQ(StatusDecision(again.status.status), "deny");
  // A held node that is revoked is revoked (and stays so on reports).
  StatusStep rh = AfterRevocation(With(kStatusHeld), "n1", 50, "x");
  EXPECT_EQ(rh.status.status, "revoked");
  EXPECT_TRUE(rh.status.held_rules.empty());
  EXPECT_TRUE(ValidateNodeStatus(rh.status).ok());
}

TEST(NodeStatusTest, OnlyAdmittedAdmits) {
  for (std::string_view s : kNodeStatuses) {
    EXPECT_EQ(StatusDecision(s), s == "admitted" ? "admit" : "deny") << s;
  }
}

}  // namespace
}  // namespace dpuaudit::verifier
