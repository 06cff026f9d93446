#include "verifier/remediation.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/safe_text.h"
#include "report/ear.h"
#include "verifier/identity_check.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {
namespace {

TEST(RemediationTest, EveryKnownRuleHasItsOwnEntry) {
  for (const RuleSpec& spec : KnownRules()) {
    EXPECT_TRUE(HasBuiltinRemediation(spec.id)) << spec.id << " has no built-in remediation";
  }
  // Reasons the appraisal builds without a policy rule.
  for (const char* id : {"agent.consistency", "require.bmc", "require.irot", "require.erot",
                         "require.tpm", "verifier.reappraisal"}) {
    EXPECT_TRUE(HasBuiltinRemediation(id)) << id;
  }
  EXPECT_TRUE(HasBuiltinRemediation(kDeviceIdentityRule));
}

TEST(RemediationTest, EntriesAreUniqueSafeAndBounded) {
  std::set<std::string> seen;
  for (const RemediationEntry& e : RemediationTable()) {
    EXPECT_TRUE(seen.insert(std::string(e.rule_id)).second) << e.rule_id << " twice";
    EXPECT_FALSE(e.text.empty()) << e.rule_id;
    EXPECT_LE(e.text.size(), report::kMaxRemediationBytes) << e.rule_id;
    EXPECT_TRUE(IsSafeText(e.text, report::kMaxRemediationBytes)) << e.rule_id;
    for (char c : e.text) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << e.rule_id;
  }
}

TEST(RemediationTest, SpecificCommandsPerRule) {
  EXPECT_NE(BuiltinRemediation("host.rshim_disabled").find("mlxprivhost -d /dev/mst/"),
            std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("host.rshim_disabled").find("power cycle"),
            std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("dpu.operation_mode").find("Mode.Set"), std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("dpu.operation_mode").find("INTERNAL_CPU_OFFLOAD_ENGINE=0"),
            std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("boot.secure_boot").find("bfb-install --bfb"),
            std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("boot.arm_lifecycle").find("RMA"), std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("refval.arm_firmware").find("dpuaudit refvals promote"),
            std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("irot.identity").find("dpuaudit bmc rebind"),
            std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("irot.measurements").find("dpuaudit bmc approve"),
            std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("tpm.signature").find("compromise"), std::string_view::npos);
  EXPECT_NE(BuiltinRemediation("host.rshim_disabled"), BuiltinRemediation("dpu.operation_mode"));
}

TEST(RemediationTest, UnknownIdGetsTheFallback) {
  EXPECT_FALSE(HasBuiltinRemediation("no.such_rule"));
  EXPECT_NE(BuiltinRemediation("no.such_rule").find("No built-in remediation"),
            std::string_view::npos);
}

TEST(RemediationTest, SetActionAndRemediation) {
  report::DecisionReason r{"host.rshim_disabled", Verdict::kFail, "TRUE", "FALSE", "mlxprivhost",
                           "x", report::ClaimTier::kSelfReported};
  SetActionAndRemediation(r, RuleAction::kWarn);
  EXPECT_EQ(r.action, "warn");
  EXPECT_EQ(r.remediation, BuiltinRemediation("host.rshim_disabled"));
  SetActionAndRemediation(r, RuleAction::kDeny, "call the on-call SRE");
  EXPECT_EQ(r.action, "deny");
  EXPECT_EQ(r.remediation, "call the on-call SRE");
  r.verdict = Verdict::kPass;
  SetActionAndRemediation(r, RuleAction::kDeny);
  EXPECT_EQ(r.action, "deny");
  EXPECT_EQ(r.remediation, "");
  r.verdict = Verdict::kUnknown;
  SetActionAndRemediation(r, RuleAction::kDeny);
  EXPECT_FALSE(r.remediation.empty());
}

}  // namespace
}  // namespace dpuaudit::verifier
