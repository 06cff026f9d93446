#include "apps/agent/local_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "verifier/service.h"

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;

verifier::Policy MakePolicy() {
  auto p = verifier::Policy::Create(
      R"({"schema":"dpuaudit-policy/1","name":"t","decision_ttl_seconds":300,"rules":[)"
      R"({"id":"refval.arm_firmware","expect":"active","action":"deny","min_tier":"self-reported"},)"
      R"({"id":"host.privilege_level","expect":"RESTRICTED","action":"deny","min_tier":"self-reported"},)"
      R"({"id":"tpm.signature","expect":"verified","action":"deny","min_tier":"hardware-rooted"}]})",
      verifier::KnownRules());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

Finding Privilege(const std::string& observed) {
  Finding f;
  f.id = "host.privilege_level";
  f.observed = observed;
  f.expected = "RESTRICTED";
  f.verdict = observed == "RESTRICTED" ? Verdict::kPass : Verdict::kFail;
  f.source = "mlxprivhost";
  if (f.verdict != Verdict::kPass) f.reason = "host is privileged.";
  return f;
}

TEST(LocalPolicyTest, VerifierRulesAreShownUndecidedAndLeftOutOfTheDecision) {
  verifier::Policy policy = MakePolicy();
  verifier::PolicyOutcome o = AppraiseLocally(policy, {Privilege("RESTRICTED")});
  EXPECT_EQ(o.decision, verifier::Decision::kAdmit);
  ASSERT_EQ(o.results.size(), 3u);  // in policy order
  EXPECT_EQ(o.results[0].rule_id, "refval.arm_firmware");
  EXPECT_EQ(o.results[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(o.results[0].expected, "active");
  EXPECT_EQ(o.results[0].action, verifier::RuleAction::kDeny);
  EXPECT_EQ(o.results[0].reason,
            "appraised by the verifier against its reference values; not decided locally.");
  EXPECT_EQ(o.results[1].rule_id, "host.privilege_level");
  EXPECT_EQ(o.results[1].verdict, Verdict::kPass);
  EXPECT_EQ(o.results[2].rule_id, "tpm.signature");
  EXPECT_EQ(o.results[2].verdict, Verdict::kUnknown);
  EXPECT_EQ(o.results[2].reason,
            "appraised by the verifier from the TPM quote and its TPM binding; not decided "
            "locally.");
}

TEST(LocalPolicyTest, TheOtherRulesAreThePolicysOwnEvaluation) {
  verifier::Policy policy = MakePolicy();
  std::vector<Finding> findings = {Privilege("PRIVILEGED")};
  verifier::PolicyOutcome o = AppraiseLocally(policy, findings);
  EXPECT_EQ(o.decision, verifier::Decision::kDeny);
  verifier::PolicyOutcome full = policy.Evaluate(findings);
  ASSERT_EQ(full.results.size(), 3u);
  EXPECT_EQ(o.results[1], full.results[1]);
  EXPECT_THAT(o.results[1].reason, HasSubstr("host is privileged."));
}

TEST(LocalPolicyTest, EveryReferenceValueAndTpmRuleOfTheCatalogueIsLeftToTheVerifier) {
  auto policy = verifier::LoadPolicyFile(
      std::string(DPUAUDIT_SOURCE_DIR) + "/policies/zero-trust.json", verifier::KnownRules());
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  verifier::PolicyOutcome o = AppraiseLocally(*policy, {});
  ASSERT_EQ(o.results.size(), policy->rules().size());
  int left = 0;
  for (const auto& r : o.results) {
    bool verifier_rule = r.rule_id.rfind("refval.", 0) == 0 || r.rule_id.rfind("tpm.", 0) == 0;
    EXPECT_EQ(r.reason.find("not decided locally") != std::string::npos, verifier_rule)
        << r.rule_id << ": " << r.reason;
    left += verifier_rule;
  }
  EXPECT_GT(left, 0);
}

TEST(LocalPolicyTest, WithoutAPolicyEveryFindingMustPass) {
  EXPECT_TRUE(AllFindingsPass({}));
  EXPECT_TRUE(AllFindingsPass({Privilege("RESTRICTED")}));
  EXPECT_FALSE(AllFindingsPass({Privilege("RESTRICTED"), Privilege("PRIVILEGED")}));
  Finding unknown;
  unknown.id = "os.kernel_lockdown";
  EXPECT_FALSE(AllFindingsPass({unknown}));
}

}  // namespace
}  // namespace dpuaudit::apps
