// Policy loading (strictness, table-driven) and evaluation (fail-closed).
#include "verifier/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;

// The isolation probes that exist (their catalogue is passed in by callers).
std::vector<RuleSpec> Catalogue() {
  return {
      {"host.privilege_level", {"RESTRICTED", "PRIVILEGED"}},
      {"host.rshim_disabled", {"TRUE", "FALSE"}},
      {"host.tracer_disabled", {"TRUE", "FALSE"}},
      {"host.counter_read_disabled", {"TRUE", "FALSE"}},
      {"host.port_owner_disabled", {"TRUE", "FALSE"}},
      {"dpu.operation_mode", {"dpu", "nic", "separated_host"}},
      {"free.text", {}},  // any value allowed
  };
}

constexpr const char* kGood = R"({
  "schema": "dpuaudit-policy/1",
  "name": "zero-trust",
  "description": "Host restricted, DPU in DPU mode.",
  "decision_ttl_seconds": 300,
  "rules": [
    {"id": "host.privilege_level", "expect": "RESTRICTED", "action": "deny",
     "min_tier": "self-reported"},
    {"id": "dpu.operation_mode", "expect": "dpu", "action": "deny",
     "min_tier": "self-reported"},
    {"id": "host.rshim_disabled", "expect": "TRUE", "action": "warn",
     "min_tier": "self-reported"}
  ]
})";

Policy MustCreate(const std::string& json) {
  auto p = Policy::Create(json, Catalogue());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) std::abort();
  return *p;
}

// A one-rule policy around the given rule object text.
std::string WithRule(const std::string& rule) {
  return R"({"schema": "dpuaudit-policy/1", "name": "t",
             "decision_ttl_seconds": 60, "rules": [)" +
         rule + "]}";
}

// A policy with the given top-level members after "schema".
std::string WithTop(const std::string& members) {
  return R"({"schema": "dpuaudit-policy/1", )" + members + "}";
}

const char* kRule =
    R"({"id": "host.privilege_level", "expect": "RESTRICTED",
        "action": "deny", "min_tier": "self-reported"})";

// --- Loading -----------------------------------------------------------------

TEST(PolicyCreateTest, GoodPolicy) {
  Policy p = MustCreate(kGood);
  EXPECT_EQ(p.name(), "zero-trust");
  EXPECT_EQ(p.description(), "Host restricted, DPU in DPU mode.");
  EXPECT_EQ(p.decision_ttl_seconds(), 300);
  EXPECT_EQ(p.sha256(), Sha256Hex(AsBytes(kGood)));
  ASSERT_EQ(p.rules().size(), 3u);
  EXPECT_EQ(p.rules()[0], (PolicyRule{"host.privilege_level", "RESTRICTED",
                                      RuleAction::kDeny, Tier::kSelfReported}));
  EXPECT_EQ(p.rules()[2], (PolicyRule{"host.rshim_disabled", "TRUE",
                                      RuleAction::kWarn, Tier::kSelfReported}));
}

TEST(PolicyCreateTest, Sha256IsOverExactBytes) {
  std::string spaced = std::string(kGood) + "\n";
  EXPECT_NE(MustCreate(spaced).sha256(), MustCreate(kGood).sha256());
}

TEST(PolicyCreateTest, DescriptionOptionalAndAnyValueRule) {
  Policy p = MustCreate(WithRule(
      R"({"id": "free.text", "expect": "whatever", "action": "warn",
          "min_tier": "hardware-rooted"})"));
  EXPECT_EQ(p.description(), "");
  EXPECT_EQ(p.rules()[0].min_tier, Tier::kHardwareRooted);
}

TEST(PolicyCreateTest, ShippedZeroTrustPolicyLoads) {
  auto p = LoadPolicyFile(
      std::string(DPUAUDIT_SOURCE_DIR) + "/policies/zero-trust.json",
      KnownRules());  // the real probe catalogue
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->name(), "zero-trust");
  // zero-trust requires every probe; these two are its first rules.
  ASSERT_GE(p->rules().size(), 2u);
  // Every rule denies, except the two that only warn by design.
  for (const auto& r : p->rules()) {
    bool warns = r.id == "fw.nic_staged" || r.id == "refval.os_boot";
    EXPECT_EQ(r.action, warns ? RuleAction::kWarn : RuleAction::kDeny) << r.id;
  }
  EXPECT_EQ(p->rules()[0],
            (PolicyRule{"host.privilege_level", "RESTRICTED", RuleAction::kDeny,
                        Tier::kSelfReported}));
  EXPECT_EQ(p->rules()[1],
            (PolicyRule{"dpu.operation_mode", "dpu", RuleAction::kDeny,
                        Tier::kSelfReported}));
}

TEST(PolicyCreateTest, ShippedLabPolicyLoadsAndIsMarkedDevelopmentOnly) {
  auto p = LoadPolicyFile(
      std::string(DPUAUDIT_SOURCE_DIR) + "/policies/host-trusted-lab.json",
      KnownRules());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->name(), "host-trusted-lab");
  EXPECT_THAT(p->description(), HasSubstr("DEVELOPMENT ONLY"));
}

struct BadCase {
  const char* name;
  std::string json;
  std::string message;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class PolicyRejectTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(PolicyRejectTest, RejectedWithPreciseMessage) {
  auto p = Policy::Create(GetParam().json, Catalogue());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), GetParam().message);
}

const char* kTtl = R"("name": "t", "decision_ttl_seconds": 60, )";

INSTANTIATE_TEST_SUITE_P(
    Strictness, PolicyRejectTest,
    ::testing::Values(
        // JSON itself.
        BadCase{"empty", "", "policy is empty."},
        BadCase{"whitespace", " \n",
                "policy is not valid JSON: parse error at line 2, column 1: "
                "syntax error while parsing value - unexpected end of input; "
                "expected '[', '{', or a literal."},
        BadCase{"truncated", R"({"schema": )",
                "policy is not valid JSON: parse error at line 1, column 12: "
                "syntax error while parsing value - unexpected end of input; "
                "expected '[', '{', or a literal."},
        BadCase{"trailing_garbage", WithRule(kRule) + "x",
                "policy is not valid JSON: parse error at line 3, column 57: "
                "syntax error while parsing value - invalid literal."},
        BadCase{"comment", "// hi\n" + WithRule(kRule),
                "policy is not valid JSON: parse error at line 1, column 1: "
                "syntax error while parsing value - invalid literal."},
        BadCase{"bad_utf8", WithTop("\"name\": \"\xff\""),
                "policy is not valid JSON: parse error at line 1, column 42: "
                "syntax error while parsing value - invalid string: "
                "ill-formed UTF-8 byte."},
        BadCase{"duplicate_key",
                WithTop(std::string(kTtl) + R"("name": "u", "rules": [])"),
                "policy JSON has duplicate key \"name\"."},
        BadCase{
            "duplicate_rule_key",
            WithRule(R"({"id": "host.privilege_level", "expect": "PRIVILEGED",
                  "expect": "RESTRICTED", "action": "deny",
                  "min_tier": "self-reported"})"),
            "policy JSON has duplicate key \"expect\"."},
        BadCase{"too_deep",
                WithTop(std::string(kTtl) + R"("rules": [[[[[[[[[1]]]]]]]]])"),
                "policy JSON nests deeper than 8 levels."},
        BadCase{"not_object", "[1, 2]", "policy must be a JSON object."},
        // Top level.
        BadCase{"unknown_top", WithTop(std::string(kTtl) + R"("rulez": [])"),
                "unknown top-level field \"rulez\"."},
        BadCase{"no_schema", R"({"name": "t"})", "missing field \"schema\"."},
        BadCase{"schema_type", R"({"schema": 1})",
                "schema must be a non-empty string."},
        BadCase{"schema_version", R"({"schema": "dpuaudit-policy/2"})",
                "schema \"dpuaudit-policy/2\" is not supported; expected "
                "\"dpuaudit-policy/1\"."},
        BadCase{"no_name", WithTop(R"("description": "x")"),
                "missing field \"name\"."},
        BadCase{"name_empty", WithTop(R"("name": "")"),
                "name must be a non-empty string."},
        BadCase{"name_chars", WithTop(R"("name": "zero trust")"),
                "name \"zero trust\" must be 1 to 64 characters of "
                "[A-Za-z0-9._-]."},
        BadCase{"description_type", WithTop(R"("name": "t", "description": 5)"),
                "description must be a string."},
        BadCase{"description_long",
                WithTop(R"("name": "t", "description": ")" +
                        std::string(1025, 'd') + "\""),
                "description is longer than 1024 bytes."},
        BadCase{"no_ttl", WithTop(R"("name": "t")"),
                "missing field \"decision_ttl_seconds\"."},
        BadCase{"ttl_float",
                WithTop(R"("name": "t", "decision_ttl_seconds": 300.0)"),
                "decision_ttl_seconds must be an integer."},
        BadCase{"ttl_string",
                WithTop(R"("name": "t", "decision_ttl_seconds": "300")"),
                "decision_ttl_seconds must be an integer."},
        BadCase{"ttl_low", WithTop(R"("name": "t", "decision_ttl_seconds": 9)"),
                "decision_ttl_seconds 9 out of range [10, 86400]."},
        BadCase{"ttl_negative",
                WithTop(R"("name": "t", "decision_ttl_seconds": -300)"),
                "decision_ttl_seconds -300 out of range [10, 86400]."},
        BadCase{"ttl_high",
                WithTop(R"("name": "t", "decision_ttl_seconds": 86401)"),
                "decision_ttl_seconds 86401 out of range [10, 86400]."},
        BadCase{"ttl_huge", WithTop(R"("name": "t",
                        "decision_ttl_seconds": 18446744073709551615)"),
                "decision_ttl_seconds 18446744073709551615 out of range "
                "[10, 86400]."},
        BadCase{"no_rules",
                WithTop(kTtl + std::string("\"description\": \"\"")),
                "missing field \"rules\"."},
        BadCase{"rules_type", WithTop(kTtl + std::string(R"("rules": {})")),
                "rules must be an array."},
        BadCase{"rules_empty", WithTop(kTtl + std::string(R"("rules": [])")),
                "rules must not be empty."},
        // Rules.
        BadCase{"rule_type", WithRule("\"host.privilege_level\""),
                "rules[0] must be an object."},
        BadCase{"rule_unknown_field",
                WithRule(R"({"id": "host.privilege_level", "exepct": "X",
                             "action": "deny", "min_tier": "self-reported"})"),
                "rules[0]: unknown field \"exepct\"."},
        BadCase{"rule_no_id", WithRule(R"({"expect": "RESTRICTED"})"),
                "rules[0]: missing field \"id\"."},
        BadCase{"rule_unknown_id",
                WithRule(std::string(kRule) + "," +
                         R"({"id": "dpu.operation_mode", "expect": "dpu",
                             "action": "deny", "min_tier": "self-reported"},)" +
                         R"({"id": "host.foo", "expect": "X",
                             "action": "deny", "min_tier": "self-reported"})"),
                "rules[2].id \"host.foo\" is not a known rule."},
        BadCase{"rule_duplicate_id",
                WithRule(std::string(kRule) + "," +
                         R"({"id": "dpu.operation_mode", "expect": "dpu",
                             "action": "deny", "min_tier": "self-reported"},)" +
                         kRule),
                "rules[2].id \"host.privilege_level\" duplicates rules[0]."},
        BadCase{"rule_no_expect", WithRule(R"({"id": "host.privilege_level"})"),
                "rules[0]: missing field \"expect\"."},
        BadCase{"rule_expect_type",
                WithRule(R"({"id": "host.privilege_level", "expect": true})"),
                "rules[0].expect must be a non-empty string."},
        BadCase{"rule_expect_empty",
                WithRule(R"({"id": "free.text", "expect": ""})"),
                "rules[0].expect must be a non-empty string."},
        BadCase{"rule_expect_not_allowed",
                WithRule(R"({"id": "host.privilege_level",
                             "expect": "restricted", "action": "deny",
                             "min_tier": "self-reported"})"),
                "rules[0].expect \"restricted\" is not allowed for "
                "host.privilege_level; allowed: RESTRICTED, PRIVILEGED."},
        BadCase{"rule_no_action",
                WithRule(R"({"id": "dpu.operation_mode", "expect": "dpu"})"),
                "rules[0]: missing field \"action\"."},
        BadCase{"rule_action",
                WithRule(R"({"id": "dpu.operation_mode", "expect": "dpu",
                             "action": "block", "min_tier": "self-reported"})"),
                "rules[0].action \"block\" must be one of: deny, warn."},
        BadCase{"rule_no_tier",
                WithRule(R"({"id": "dpu.operation_mode", "expect": "dpu",
                             "action": "deny"})"),
                "rules[0]: missing field \"min_tier\"."},
        BadCase{"rule_tier",
                WithRule(R"({"id": "dpu.operation_mode", "expect": "dpu",
                             "action": "deny", "min_tier": "tpm"})"),
                "rules[0].min_tier \"tpm\" must be one of: self-reported, "
                "corroborated, hardware-rooted."},
        BadCase{"quoted_value_is_escaped_and_truncated",
                WithRule(R"({"id": "host.\u0007)" + std::string(100, 'x') +
                         R"(", "expect": "X", "action": "deny",
                             "min_tier": "self-reported"})"),
                "rules[0].id \"host.\\u0007" + std::string(58, 'x') +
                    "...\" is not a known rule."}),
    [](const ::testing::TestParamInfo<BadCase>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(PolicyCreateTest, TooLarge) {
  std::string big = WithTop(R"("name": "t", "description": ")" +
                            std::string(Policy::kMaxBytes, 'd') + "\"");
  auto p = Policy::Create(big, Catalogue());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(p.status().message(), "policy is " + std::to_string(big.size()) +
                                      " bytes; the limit is 65536.");
}

TEST(PolicyCreateTest, TooManyRules) {
  std::string rules;
  for (size_t i = 0; i <= Policy::kMaxRules; ++i) {
    rules += (i ? "," : "") + std::string(kRule);
  }
  auto p = Policy::Create(WithRule(rules), Catalogue());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(),
            "rules has 257 entries; at most 256 are allowed.");
}

TEST(PolicyCreateTest, CatalogueWithDuplicateId) {
  std::vector<RuleSpec> cat = Catalogue();
  cat.push_back({"dpu.operation_mode", {}});
  auto p = Policy::Create(kGood, cat);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(),
            "known rule catalogue lists \"dpu.operation_mode\" twice.");
}

class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "dpuaudit-policy-XXXXXX")
            .string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    path_ = dir_ + "/policy.json";
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

TEST(LoadPolicyFileTest, PrefixesErrorsWithThePath) {
  TempFile f(WithTop(R"("name": "t", "decision_ttl_seconds": 1)"));
  auto p = LoadPolicyFile(f.path(), Catalogue());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(),
            f.path() + ": decision_ttl_seconds 1 out of range [10, 86400].");
}

TEST(LoadPolicyFileTest, SizeLimitAppliesBeforeParsing) {
  TempFile f(std::string(Policy::kMaxBytes + 1, ' '));
  auto p = LoadPolicyFile(f.path(), Catalogue());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(p.status().message(),
            f.path() + " is larger than the limit of 65536 bytes.");
}

TEST(LoadPolicyFileTest, MissingFile) {
  auto p = LoadPolicyFile("/nonexistent/policy.json", Catalogue());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(p.status().message(), HasSubstr("/nonexistent/policy.json"));
}

TEST(LoadPolicyFileTest, SameBytesSameSha) {
  TempFile f(kGood);
  auto p = LoadPolicyFile(f.path(), Catalogue());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->sha256(), MustCreate(kGood).sha256());
}

// --- Evaluation --------------------------------------------------------------

Finding Pass(const std::string& id, const std::string& observed) {
  Finding f;
  f.id = id;
  f.verdict = Verdict::kPass;
  f.observed = observed;
  f.expected = observed;
  f.source = "probe-source:" + id;
  return f;
}

std::vector<Finding> AllGood() {
  return {Pass("host.privilege_level", "RESTRICTED"),
          Pass("dpu.operation_mode", "dpu"),
          Pass("host.rshim_disabled", "TRUE")};
}

const RuleResult& ResultFor(const PolicyOutcome& o, const std::string& id) {
  for (const RuleResult& r : o.results) {
    if (r.rule_id == id) return r;
  }
  ADD_FAILURE() << "no result for " << id;
  std::abort();
}

TEST(PolicyEvaluateTest, AllPassAdmits) {
  PolicyOutcome o = MustCreate(kGood).Evaluate(AllGood());
  EXPECT_EQ(o.decision, Decision::kAdmit);
  ASSERT_EQ(o.results.size(), 3u);
  EXPECT_EQ(o.results[0],
            (RuleResult{"host.privilege_level", Verdict::kPass, "RESTRICTED",
                        "RESTRICTED", "probe-source:host.privilege_level", "",
                        RuleAction::kDeny, Tier::kSelfReported}));
  EXPECT_EQ(o.results[1].rule_id, "dpu.operation_mode");
  EXPECT_EQ(o.results[2].rule_id, "host.rshim_disabled");
  for (const RuleResult& r : o.results) EXPECT_EQ(r.verdict, Verdict::kPass);
}

TEST(PolicyEvaluateTest, MissingFindingDenies) {
  std::vector<Finding> f = AllGood();
  f.erase(f.begin());  // no host.privilege_level
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kDeny);
  const RuleResult& r = ResultFor(o, "host.privilege_level");
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "no finding for rule.");
  EXPECT_EQ(r.observed, "");
  EXPECT_EQ(r.expected, "RESTRICTED");
}

TEST(PolicyEvaluateTest, NoFindingsAtAllDenies) {
  PolicyOutcome o = MustCreate(kGood).Evaluate({});
  EXPECT_EQ(o.decision, Decision::kDeny);
  for (const RuleResult& r : o.results) {
    EXPECT_EQ(r.verdict, Verdict::kUnknown);
    EXPECT_EQ(r.reason, "no finding for rule.");
  }
}

TEST(PolicyEvaluateTest, UnknownFindingDenies) {
  std::vector<Finding> f = AllGood();
  f[0].verdict = Verdict::kUnknown;
  f[0].observed = "";
  f[0].reason = "mlxprivhost is not installed.";
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kDeny);
  const RuleResult& r = ResultFor(o, "host.privilege_level");
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "finding is unknown: mlxprivhost is not installed.");
  EXPECT_EQ(r.source, "probe-source:host.privilege_level");
}

TEST(PolicyEvaluateTest, UnknownFindingEvenWithMatchingObservedDenies) {
  std::vector<Finding> f = AllGood();
  f[1].verdict = Verdict::kUnknown;  // observed "dpu" but probe unsure
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kDeny);
  EXPECT_EQ(ResultFor(o, "dpu.operation_mode").reason, "finding is unknown.");
}

TEST(PolicyEvaluateTest, EmptyObservedIsUnknownAndDenies) {
  std::vector<Finding> f = AllGood();
  f[0].observed = "";
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kDeny);
  const RuleResult& r = ResultFor(o, "host.privilege_level");
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "finding has no observed value.");
}

TEST(PolicyEvaluateTest, MismatchFailsAndDenies) {
  std::vector<Finding> f = AllGood();
  f[0].observed = "PRIVILEGED";
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kDeny);
  const RuleResult& r = ResultFor(o, "host.privilege_level");
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.observed, "PRIVILEGED");
  EXPECT_EQ(r.reason,
            "observed \"PRIVILEGED\", policy expects \"RESTRICTED\".");
}

TEST(PolicyEvaluateTest, PolicyExpectWinsOverProbeExpected) {
  std::vector<Finding> f = AllGood();
  // The probe thought PRIVILEGED was the goal and failed RESTRICTED ...
  f[0].verdict = Verdict::kFail;
  f[0].expected = "PRIVILEGED";
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  // ... but the policy expects RESTRICTED, which is what was observed.
  EXPECT_EQ(o.decision, Decision::kAdmit);
  EXPECT_EQ(ResultFor(o, "host.privilege_level").verdict, Verdict::kPass);
  EXPECT_EQ(ResultFor(o, "host.privilege_level").expected, "RESTRICTED");

  // And a probe "pass" on a value the policy does not want is a fail.
  f = AllGood();
  f[1].observed = "nic";
  f[1].expected = "nic";
  o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kDeny);
  EXPECT_EQ(ResultFor(o, "dpu.operation_mode").verdict, Verdict::kFail);
}

TEST(PolicyEvaluateTest, WarnRuleFailureAdmitsButIsReported) {
  std::vector<Finding> f = AllGood();
  f[2].observed = "FALSE";
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kAdmit);
  const RuleResult& r = ResultFor(o, "host.rshim_disabled");
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.action, RuleAction::kWarn);
  EXPECT_EQ(r.reason, "observed \"FALSE\", policy expects \"TRUE\".");
}

TEST(PolicyEvaluateTest, WarnRuleMissingAdmitsButIsReported) {
  std::vector<Finding> f = AllGood();
  f.pop_back();
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kAdmit);
  EXPECT_EQ(ResultFor(o, "host.rshim_disabled").verdict, Verdict::kUnknown);
  EXPECT_EQ(ResultFor(o, "host.rshim_disabled").reason, "no finding for rule.");
}

TEST(PolicyEvaluateTest, TierNotReachedDenies) {
  Policy p = MustCreate(WithRule(
      R"({"id": "host.privilege_level", "expect": "RESTRICTED",
          "action": "deny", "min_tier": "corroborated"})"));
  PolicyOutcome o = p.Evaluate(AllGood());
  EXPECT_EQ(o.decision, Decision::kDeny);
  ASSERT_EQ(o.results.size(), 1u);
  EXPECT_EQ(o.results[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(o.results[0].tier, Tier::kSelfReported);
  EXPECT_EQ(o.results[0].reason,
            "requires tier corroborated, reached self-reported.");
}

TEST(PolicyEvaluateTest, TierNotReachedOnWarnRuleAdmits) {
  Policy p = MustCreate(WithRule(
      R"({"id": "host.privilege_level", "expect": "RESTRICTED",
          "action": "warn", "min_tier": "hardware-rooted"})"));
  PolicyOutcome o = p.Evaluate(AllGood());
  EXPECT_EQ(o.decision, Decision::kAdmit);
  EXPECT_EQ(o.results[0].reason,
            "requires tier hardware-rooted, reached self-reported.");
}

TEST(PolicyEvaluateTest, MismatchIsReportedAsFailEvenBelowTier) {
  Policy p = MustCreate(WithRule(
      R"({"id": "host.privilege_level", "expect": "RESTRICTED",
          "action": "deny", "min_tier": "corroborated"})"));
  std::vector<Finding> f = {Pass("host.privilege_level", "PRIVILEGED")};
  PolicyOutcome o = p.Evaluate(f);
  EXPECT_EQ(o.results[0].verdict, Verdict::kFail);
}

TEST(PolicyEvaluateTest, DuplicateFindingsAreUnknown) {
  std::vector<Finding> f = AllGood();
  f.push_back(Pass("host.privilege_level", "PRIVILEGED"));
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kDeny);
  EXPECT_EQ(ResultFor(o, "host.privilege_level").verdict, Verdict::kUnknown);
  EXPECT_EQ(ResultFor(o, "host.privilege_level").reason,
            "2 findings for rule; expected exactly one.");
}

TEST(PolicyEvaluateTest, FindingsTheRulesDoNotNameAreIgnored) {
  std::vector<Finding> f = AllGood();
  Finding extra = Pass("host.tracer_disabled", "FALSE");
  extra.verdict = Verdict::kFail;
  f.push_back(extra);
  PolicyOutcome o = MustCreate(kGood).Evaluate(f);
  EXPECT_EQ(o.decision, Decision::kAdmit);
  EXPECT_EQ(o.results.size(), 3u);
}

TEST(PolicyEvaluateTest, PolicyIsACopyableValue) {
  Policy a = MustCreate(kGood);
  Policy b = a;
  EXPECT_EQ(b.sha256(), a.sha256());
  EXPECT_EQ(b.rules(), a.rules());
  EXPECT_EQ(b.Evaluate(AllGood()).decision, Decision::kAdmit);
}

TEST(PolicyNamesTest, RoundTrip) {
  for (Tier t :
       {Tier::kSelfReported, Tier::kCorroborated, Tier::kHardwareRooted}) {
    EXPECT_EQ(ParseTier(TierName(t)), t);
  }
  EXPECT_EQ(ParseTier("Self-Reported"), std::nullopt);
  EXPECT_EQ(RuleActionName(RuleAction::kWarn), "warn");
  EXPECT_EQ(DecisionName(Decision::kAdmit), "admit");
  EXPECT_EQ(DecisionName(Decision::kDeny), "deny");
}

}  // namespace
}  // namespace dpuaudit::verifier

namespace dpuaudit::verifier {
namespace {

constexpr const char* kAnyOf = R"({
  "schema": "dpuaudit-policy/1", "name": "any-of", "decision_ttl_seconds": 300,
  "rules": [{"id": "dpu.operation_mode", "expect": ["dpu", "nic"],
             "action": "deny", "min_tier": "self-reported"}]})";

Finding Mode(std::string observed) {
  Finding f;
  f.id = "dpu.operation_mode";
  f.verdict = Verdict::kFail;
  f.observed = std::move(observed);
  f.source = "mlxconfig";
  return f;
}

TEST(PolicyAnyOfTest, AnyListedValuePasses) {
  auto p = Policy::Create(kAnyOf, Catalogue());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->rules()[0].expect, "dpu|nic");
  EXPECT_EQ(p->Evaluate({Mode("nic")}).decision, Decision::kAdmit);
  EXPECT_EQ(p->Evaluate({Mode("dpu")}).decision, Decision::kAdmit);
  auto out = p->Evaluate({Mode("separated_host")});
  EXPECT_EQ(out.decision, Decision::kDeny);
  EXPECT_EQ(out.results[0].reason,
            "observed \"separated_host\", policy expects \"dpu|nic\".");
}

TEST(PolicyAnyOfTest, RejectsEmptyDuplicateAndUnobservableValues) {
  struct Case {
    std::string expect, message;
  } cases[] = {
      {"[]", "rules[0].expect must list 1 to 16 values."},
      {R"(["dpu", "dpu"])", "rules[0].expect[1] \"dpu\" is listed twice."},
      {R"(["dpu", "maybe"])", "rules[0].expect[1] \"maybe\" is not allowed"},
      {R"(["dpu", 3])", "rules[0].expect[1] must be a non-empty string."},
  };
  for (const auto& c : cases) {
    std::string json = R"({"schema": "dpuaudit-policy/1", "name": "x",
      "decision_ttl_seconds": 300, "rules": [{"id": "dpu.operation_mode",
      "expect": )" + c.expect + R"(, "action": "deny", "min_tier": "self-reported"}]})";
    auto p = Policy::Create(json, Catalogue());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << c.expect;
    EXPECT_THAT(p.status().message(), HasSubstr(c.message)) << c.expect;
  }
}

}  // namespace
}  // namespace dpuaudit::verifier

namespace dpuaudit::verifier {
namespace {

std::vector<RuleSpec> VersionCatalogue() {
  std::vector<RuleSpec> c = Catalogue();
  RuleSpec nic;
  nic.id = "fw.nic_version";
  nic.version_component = "nic-fw";
  c.push_back(nic);
  RuleSpec ref;
  ref.id = "refval.nic_firmware";
  ref.allowed_values = {"active", "pending", "obsolete", "expired", "revoked", "unmatched"};
  c.push_back(ref);
  return c;
}

std::string OneRule(const std::string& rule) {
  return R"({"schema": "dpuaudit-policy/1", "name": "fw",
    "decision_ttl_seconds": 300, "rules": [)" + rule + "]}";
}

Finding Observed(const std::string& id, const std::string& observed,
                 const std::string& reason = "") {
  Finding f;
  f.id = id;
  f.verdict = Verdict::kPass;
  f.observed = observed;
  f.source = "flint -d /dev/mst/mt41692_pciconf0 q full";
  f.reason = reason;
  return f;
}

TEST(PolicyMinVersionTest, ComparesInTheComponentScheme) {
  auto p = Policy::Create(OneRule(R"({"id": "fw.nic_version", "min_version": "32.41.1000",
      "action": "deny", "min_tier": "self-reported"})"), VersionCatalogue());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->rules()[0].expect, ">= 32.41.1000");
  EXPECT_EQ(p->Evaluate({Observed("fw.nic_version", "32.41.1000")}).decision,
            Decision::kAdmit);
  // 32.43.1008 > 32.41.1000 numerically (not as text: "1008" < "1000" is false anyway,
  // but 32.100.0 > 32.41.1000 only numerically).
  EXPECT_EQ(p->Evaluate({Observed("fw.nic_version", "32.100.0")}).decision,
            Decision::kAdmit);
  auto low = p->Evaluate({Observed("fw.nic_version", "32.39.1002")});
  EXPECT_EQ(low.decision, Decision::kDeny);
  EXPECT_EQ(low.results[0].verdict, Verdict::kFail);
  EXPECT_EQ(low.results[0].reason,
            "observed \"32.39.1002\" is below the minimum \"32.41.1000\".");
  // A version that cannot be ordered is unknown, never pass.
  auto odd = p->Evaluate({Observed("fw.nic_version", "32.x.1")});
  EXPECT_EQ(odd.decision, Decision::kDeny);
  EXPECT_EQ(odd.results[0].verdict, Verdict::kUnknown);
}

TEST(PolicyMinVersionTest, NicFirmwareIsComparedWithinItsFamily) {
  auto p = Policy::Create(OneRule(R"({"id": "fw.nic_version",
      "min_version": ["24.35.2000", "32.41.1000"], "action": "deny",
      "min_tier": "self-reported"})"), VersionCatalogue());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->rules()[0].expect, ">= 24.35.2000|32.41.1000");
  // BlueField-2 firmware (24.x) against the 24.x minimum, not 32.41.
  EXPECT_EQ(p->Evaluate({Observed("fw.nic_version", "24.35.2000")}).decision,
            Decision::kAdmit);
  auto low = p->Evaluate({Observed("fw.nic_version", "24.33.1048")});
  EXPECT_EQ(low.results[0].verdict, Verdict::kFail);
  EXPECT_EQ(low.results[0].reason,
            "observed \"24.33.1048\" is below the minimum \"24.35.2000\".");
  // A family the policy has no minimum for is unknown (fail closed).
  auto single = Policy::Create(OneRule(R"({"id": "fw.nic_version",
      "min_version": "32.41.1000", "action": "deny", "min_tier": "self-reported"})"),
                               VersionCatalogue());
  ASSERT_TRUE(single.ok());
  auto other = single->Evaluate({Observed("fw.nic_version", "24.35.2000")});
  EXPECT_EQ(other.decision, Decision::kDeny);
  EXPECT_EQ(other.results[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(other.results[0].reason,
            "no minimum for firmware family 24 of \"24.35.2000\" (policy lists 32.41.1000).");
}

TEST(PolicyMinVersionTest, RejectedAtLoad) {
  struct Case {
    std::string rule, message;
  } cases[] = {
      {R"({"id": "fw.nic_version", "min_version": "32.41.1000", "expect": "32.41.1000",
          "action": "deny", "min_tier": "self-reported"})",
       "rules[0]: give either expect or min_version, not both."},
      {R"({"id": "host.privilege_level", "min_version": "1.0",
          "action": "deny", "min_tier": "self-reported"})",
       "rules[0].min_version: rule host.privilege_level has no version order; use expect."},
      {R"({"id": "fw.nic_version", "min_version": "latest",
          "action": "deny", "min_tier": "self-reported"})",
       "rules[0].min_version: "},
      {R"({"id": "fw.nic_version", "min_version": 32,
          "action": "deny", "min_tier": "self-reported"})",
       "rules[0].min_version must be a non-empty string"},
      {R"({"id": "fw.nic_version", "min_version": ["32.41.1000", "32.43.1008"],
          "action": "deny", "min_tier": "self-reported"})",
       "rules[0].min_version[1] \"32.43.1008\": a second minimum for family 32."},
  };
  for (const auto& c : cases) {
    auto p = Policy::Create(OneRule(c.rule), VersionCatalogue());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << c.rule;
    EXPECT_THAT(p.status().message(), HasSubstr(c.message)) << c.rule;
  }
}

TEST(PolicyWarnValuesTest, WarnValueDowngradesADenyRule) {
  auto p = Policy::Create(OneRule(R"({"id": "refval.nic_firmware", "expect": "active",
      "warn": ["obsolete"], "action": "deny", "min_tier": "self-reported"})"),
                          VersionCatalogue());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto obsolete = p->Evaluate({Observed("refval.nic_firmware", "obsolete",
                                        "nic-fw 32.43.1008 matches release r1 (obsolete)")});
  EXPECT_EQ(obsolete.decision, Decision::kAdmit);
  EXPECT_EQ(obsolete.results[0].verdict, Verdict::kFail);
  EXPECT_EQ(obsolete.results[0].action, RuleAction::kWarn);
  // The finding's own reason follows the policy's sentence.
  EXPECT_EQ(obsolete.results[0].reason,
            "observed \"obsolete\", policy expects \"active\". "
            "nic-fw 32.43.1008 matches release r1 (obsolete)");
  auto revoked = p->Evaluate({Observed("refval.nic_firmware", "revoked")});
  EXPECT_EQ(revoked.decision, Decision::kDeny);
  EXPECT_EQ(revoked.results[0].action, RuleAction::kDeny);
  EXPECT_EQ(p->Evaluate({Observed("refval.nic_firmware", "active")}).decision,
            Decision::kAdmit);
}

TEST(PolicyWarnValuesTest, RejectedAtLoad) {
  struct Case {
    std::string warn, message;
  } cases[] = {
      {"[]", "rules[0].warn must list 1 to 16 values."},
      {R"("obsolete")", "rules[0].warn must list 1 to 16 values."},
      {R"(["active"])", "rules[0].warn[0] \"active\" is also expected"},
      {R"(["obsolete", "obsolete"])", "rules[0].warn[1] \"obsolete\" is listed twice."},
      {R"(["old"])", "rules[0].warn[0] \"old\" is not allowed for refval.nic_firmware"},
  };
  for (const auto& c : cases) {
    auto p = Policy::Create(OneRule(R"({"id": "refval.nic_firmware", "expect": "active",
        "warn": )" + c.warn + R"(, "action": "deny", "min_tier": "self-reported"})"),
                            VersionCatalogue());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << c.warn;
    EXPECT_THAT(p.status().message(), HasSubstr(c.message)) << c.warn;
  }
}

TEST(PolicyShippedTest, ZeroTrustNamesTheFirmwareRules) {
  auto p = LoadPolicyFile(std::string(DPUAUDIT_SOURCE_DIR) + "/policies/zero-trust.json",
                          KnownRules());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::set<std::string> ids;
  for (const auto& r : p->rules()) ids.insert(r.id);
  for (const char* id : {"fw.atf_build", "fw.nic_version", "fw.nic_version_consistent",
                         "boot.stream_integrity", "refval.arm_firmware", "refval.nic_firmware",
                         "refval.boot_stream", "refval.upgrade_path"}) {
    EXPECT_TRUE(ids.count(id)) << id;
  }
}

}  // namespace
}  // namespace dpuaudit::verifier

namespace dpuaudit::verifier {
namespace {

// --- The tpm section (issue 5) -------------------------------------------------

std::string WithTpm(const std::string& tpm) {
  return R"({"schema": "dpuaudit-policy/1", "name": "t", "decision_ttl_seconds": 60,
             "rules": [)" +
         std::string(kRule) + R"(], "tpm": )" + tpm + "}";
}

TEST(PolicyTpmTest, DefaultsWithoutTheSection) {
  Policy p = MustCreate(kGood);
  EXPECT_FALSE(p.tpm().all_nodes);
  EXPECT_FALSE(p.tpm().allow_uncertified_ek);
  EXPECT_EQ(p.tpm().pcr_selection.ToString(), "sha256:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
}

TEST(PolicyTpmTest, ParsesEveryField) {
  Policy p = MustCreate(WithTpm(
      R"({"applies_to": "all-nodes", "allow_uncertified_ek": true,
          "pcr_selection": {"sha256": [0, 7], "sha1": [4]}})"));
  EXPECT_TRUE(p.tpm().all_nodes);
  EXPECT_TRUE(p.tpm().allow_uncertified_ek);
  EXPECT_EQ(p.tpm().pcr_selection.banks().at(0x000B), (std::set<uint32_t>{0, 7}));
  EXPECT_EQ(p.tpm().pcr_selection.banks().at(0x0004), (std::set<uint32_t>{4}));
}

struct BadTpm {
  const char* tpm;
  const char* message;
};

class PolicyTpmRejectTest : public ::testing::TestWithParam<BadTpm> {};

TEST_P(PolicyTpmRejectTest, RejectedNamingTheField) {
  auto p = Policy::Create(WithTpm(GetParam().tpm), Catalogue());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Tpm, PolicyTpmRejectTest,
    ::testing::Values(
        BadTpm{"[]", "tpm must be an object."},
        BadTpm{R"({"pcrs": {}})", "unknown field \"tpm.pcrs\"."},
        BadTpm{R"({"applies_to": "some-nodes"})",
               "tpm.applies_to must be \"bound-nodes\" or \"all-nodes\"."},
        BadTpm{R"({"allow_uncertified_ek": "yes"})",
               "tpm.allow_uncertified_ek must be true or false."},
        BadTpm{R"({"pcr_selection": {}})",
               "tpm.pcr_selection must be a non-empty object of bank -> PCR indexes."},
        BadTpm{R"({"pcr_selection": {"md5": [0]}})",
               "tpm.pcr_selection.md5 is not a known bank (sha1, sha256, sha384, sha512)."},
        BadTpm{R"({"pcr_selection": {"sha256": []}})",
               "tpm.pcr_selection.sha256 must be a non-empty array of PCR indexes."},
        BadTpm{R"({"pcr_selection": {"sha256": [0, 24]}})",
               "tpm.pcr_selection.sha256[1] is not a PCR index in [0, 23]."},
        BadTpm{R"({"pcr_selection": {"sha256": [-1]}})",
               "tpm.pcr_selection.sha256[0] is not a PCR index in [0, 23]."},
        BadTpm{R"({"pcr_selection": {"sha256": [3, 3]}})",
               "tpm.pcr_selection.sha256[1] repeats PCR 3."}));

TEST(PolicyTpmTest, NotApplicableRulesGiveNoResultAndTiersAreHonoured) {
  Policy p = MustCreate(WithRule(
      R"({"id": "host.privilege_level", "expect": "RESTRICTED", "action": "deny",
          "min_tier": "hardware-rooted"})"));
  Finding f{"host.privilege_level", Verdict::kPass, "RESTRICTED", "RESTRICTED", "src", "", ""};
  // Self-reported by default: the hardware-rooted rule is unknown.
  PolicyOutcome self = p.Evaluate({f});
  ASSERT_EQ(self.results.size(), 1u);
  EXPECT_EQ(self.results[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(self.results[0].reason, "requires tier hardware-rooted, reached self-reported.");
  EXPECT_EQ(self.decision, Decision::kDeny);
  EvaluationContext hw;
  hw.tiers["host.privilege_level"] = Tier::kHardwareRooted;
  PolicyOutcome rooted = p.Evaluate({f}, hw);
  EXPECT_EQ(rooted.results[0].verdict, Verdict::kPass);
  EXPECT_EQ(rooted.results[0].tier, Tier::kHardwareRooted);
  EXPECT_EQ(rooted.decision, Decision::kAdmit);
  EvaluationContext skip;
  skip.not_applicable.insert("host.privilege_level");
  PolicyOutcome skipped = p.Evaluate({}, skip);
  EXPECT_TRUE(skipped.results.empty());
  EXPECT_EQ(skipped.decision, Decision::kAdmit);
}

}  // namespace
}  // namespace dpuaudit::verifier

namespace dpuaudit::verifier {
namespace {

// --- "require": the evidence paths that must have verified (issue 14) ----------

TEST(PolicyRequireTest, ParsesThePathsInOrder) {
  Policy p = MustCreate(WithTop(R"("name": "t", "decision_ttl_seconds": 60,
      "require": ["bmc", "irot", "tpm"], "rules": [)" + std::string(kRule) + "]"));
  EXPECT_EQ(p.required_paths(), (std::vector<std::string>{"bmc", "irot", "tpm"}));
  EXPECT_TRUE(MustCreate(WithRule(kRule)).required_paths().empty());
}

TEST(PolicyRequireTest, RefusesUnknownDuplicateAndMistypedPaths) {
  const std::string rules = R"("name": "t", "decision_ttl_seconds": 60, "rules": [)" +
                            std::string(kRule) + "], ";
  struct Case {
    std::string require;
    std::string message;
  } cases[] = {
      {R"("require": ["hsm"])", "require[0] \"hsm\" is not an evidence path (bmc, irot, erot, tpm)."},
      {R"("require": ["bmc", "bmc"])", "require[1] \"bmc\" is listed twice."},
      {R"("require": [1])", "require[0] must be a string."},
      {R"("require": "bmc")", "require must be an array of evidence paths."},
  };
  for (const Case& c : cases) {
    auto p = Policy::Create(WithTop(rules + c.require), Catalogue());
    ASSERT_FALSE(p.ok()) << c.require;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(p.status().message(), HasSubstr(c.message)) << c.require;
  }
}

TEST(PolicyRequireTest, ShippedZeroTrustBmcPolicyLoads) {
  auto p = LoadPolicyFile(std::string(DPUAUDIT_SOURCE_DIR) + "/policies/zero-trust-bmc.json",
                          KnownRules());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->required_paths(), (std::vector<std::string>{"bmc", "irot"}));
}

}  // namespace
}  // namespace dpuaudit::verifier

// --- remediation (issue 15 §6) -------------------------------------------------

namespace dpuaudit::verifier {
namespace {

TEST(PolicyRemediationTest, OverrideIsParsedAndCarriedToTheResult) {
  Policy p = MustCreate(WithRule(
      R"({"id": "host.privilege_level", "expect": "RESTRICTED", "action": "warn",
          "min_tier": "self-reported", "remediation": "open a ticket with team X"})"));
  EXPECT_EQ(p.rules()[0].remediation, "open a ticket with team X");
  Finding f;
  f.id = "host.privilege_level";
  f.verdict = Verdict::kFail;
  f.observed = "PRIVILEGED";
  PolicyOutcome o = p.Evaluate({f});
  ASSERT_EQ(o.results.size(), 1u);
  EXPECT_EQ(o.results[0].remediation, "open a ticket with team X");
  EXPECT_EQ(o.results[0].action, RuleAction::kWarn);
  // Without the member: empty (the built-in applies).
  EXPECT_EQ(MustCreate(WithRule(kRule)).rules()[0].remediation, "");
}

TEST(PolicyRemediationTest, RefusesBadOverrides) {
  auto with = [](const std::string& value) {
    return WithRule(R"({"id": "host.privilege_level", "expect": "RESTRICTED", "action": "deny",
                        "min_tier": "self-reported", "remediation": )" + value + "}");
  };
  EXPECT_EQ(Policy::Create(with("\"\""), Catalogue()).status().message(),
              "rules[0].remediation must be 1-1024 bytes.");
  EXPECT_EQ(Policy::Create(with("\"" + std::string(1025, 'a') + "\""), Catalogue()).status().message(),
              "rules[0].remediation must be 1-1024 bytes.");
  EXPECT_EQ(Policy::Create(with("7"), Catalogue()).status().message(),
              "rules[0].remediation must be a string.");
  EXPECT_EQ(Policy::Create(with(R"("fix\u001b[31m it")"), Catalogue()).status().message(),
              "rules[0].remediation holds a control or formatting character.");
  EXPECT_TRUE(Policy::Create(with("\"" + std::string(1024, 'a') + "\""), Catalogue()).ok());
}

}  // namespace
}  // namespace dpuaudit::verifier
