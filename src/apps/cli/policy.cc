#include "apps/cli/policy.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/cli/cli_util.h"
#include "apps/shared/table.h"
#include "common/bytes.h"
#include "verifier/policy.h"
#include "verifier/remediation.h"
#include "verifier/service.h"

namespace dpuaudit::apps {
namespace {

constexpr size_t kColumns = 100;

// What a rule asks for, as the EAR's "expected" shows it.
std::string Expected(const verifier::PolicyRule& r) {
  return r.min_version.empty() ? r.expect : ">= " + r.min_version;
}

nlohmann::json RuleJson(const verifier::PolicyRule& r) {
  nlohmann::json j = {{"rule_id", r.id},
                      {"action", verifier::RuleActionName(r.action)},
                      {"expected", Expected(r)},
                      {"min_tier", verifier::TierName(r.min_tier)},
                      {"sticky", r.sticky},
                      {"warn_values", r.warn_values},
                      {"remediation", r.remediation.empty()
                                          ? std::string(verifier::BuiltinRemediation(r.id))
                                          : r.remediation},
                      {"remediation_source", r.remediation.empty() ? "built-in" : "policy"}};
  if (!r.expect_any.empty()) j["expect_any"] = r.expect_any;
  if (!r.min_versions.empty()) j["min_versions"] = r.min_versions;
  return j;
}

nlohmann::json PolicyJson(const std::string& file, const verifier::Policy& p) {
  nlohmann::json rules = nlohmann::json::array();
  for (const verifier::PolicyRule& r : p.rules()) rules.push_back(RuleJson(r));
  return {{"file", file},
          {"valid", true},
          {"name", p.name()},
          {"description", p.description()},
          {"sha256", p.sha256()},
          {"decision_ttl_seconds", p.decision_ttl_seconds()},
          {"require", p.required_paths()},
          {"tpm",
           {{"applies_to", p.tpm().all_nodes ? "all-nodes" : "bound-nodes"},
            {"pcr_selection", p.tpm().pcr_selection.ToString()},
            {"allow_uncertified_ek", p.tpm().allow_uncertified_ek}}},
          {"rules", rules}};
}

void PrintHuman(const std::string& file, const verifier::Policy& p, bool wide) {
  std::cout << "policy " << p.name() << ": valid (" << file << ")\n"
            << "  sha256       " << p.sha256() << "\n"
            << "  decision TTL " << p.decision_ttl_seconds() << " s\n"
            << "  requires     "
            << (p.required_paths().empty() ? std::string("no evidence path beyond the rules")
                                           : [&] {
                                               std::string s;
                                               for (const auto& r : p.required_paths()) {
                                                 s += (s.empty() ? "" : ", ") + r;
                                               }
                                               return s + " evidence to verify";
                                             }())
            << "\n"
            << "  TPM rules    "
            << (p.tpm().all_nodes ? "every node (a node without a TPM fails them)"
                                  : "nodes enrolled with a TPM")
            << "; quote " << p.tpm().pcr_selection.ToString()
            << (p.tpm().allow_uncertified_ek ? "; uncertified EKs allowed" : "") << "\n";
  if (!p.description().empty()) {
    std::cout << Wrap(p.description(), kColumns - 2, "  ", "  ");
  }
  std::cout << "\n";
  Table t({"RULE", "ACTION", "EXPECTED", "MIN TIER", "STICKY"}, wide ? 200 : 36);
  size_t deny = 0;
  for (const verifier::PolicyRule& r : p.rules()) {
    if (r.action == verifier::RuleAction::kDeny) ++deny;
    std::string expected = Expected(r);
    if (!r.warn_values.empty()) {
      std::string w;
      for (const auto& v : r.warn_values) w += (w.empty() ? "" : "|") + v;
      expected += " (warn: " + w + ")";
    }
    t.AddRow({r.id, std::string(verifier::RuleActionName(r.action)), expected,
              std::string(verifier::TierName(r.min_tier)), r.sticky ? "sticky" : ""});
  }
  std::cout << t.Render();
  std::cout << "\n" << p.rules().size() << " rules: " << deny << " deny, "
            << p.rules().size() - deny << " warn";
  if (wide) {
    std::cout << "\n\nremediation shown when a rule does not pass:\n";
    for (const verifier::PolicyRule& r : p.rules()) {
      std::string text = r.remediation.empty()
                             ? std::string(verifier::BuiltinRemediation(r.id))
                             : r.remediation + " (policy)";
      std::cout << Wrap(r.id + ": " + text, kColumns, "  ", "      ");
    }
  } else {
    std::cout << " (--wide: whole cells and each rule's remediation)\n";
  }
}

}  // namespace

int PolicyCheck(const std::string& file, bool json, bool wide) {
  StatusOr<Bytes> bytes = ReadBytes(file, verifier::Policy::kMaxBytes + 1);
  if (!bytes.ok()) return Fail(bytes.status());
  const std::string name = file == "-" ? "stdin" : file;
  StatusOr<verifier::Policy> p =
      verifier::Policy::Create(ToString(*bytes), verifier::KnownRules());
  if (!p.ok()) {
    std::cerr << "dpuaudit: " << name << ": not a valid policy: " << p.status().message() << "\n";
    if (json) {
      std::cout << nlohmann::json{{"file", name},
                                  {"valid", false},
                                  {"error", std::string(p.status().message())}}
                       .dump(2)
                << "\n";
    }
    return kExitDeny;
  }
  if (json) {
    std::cout << PolicyJson(name, *p).dump(2) << "\n";
  } else {
    PrintHuman(name, *p, wide);
  }
  return kExitOk;
}

}  // namespace dpuaudit::apps
