#include "verifier/policy.h"

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>

#include "bluefield/version.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/files.h"
#include "common/safe_text.h"

namespace dpuaudit::verifier {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxNameChars = 64;
constexpr size_t kMaxDescriptionBytes = 1024;
constexpr int kMaxDepth = 8;  // a valid policy nests 3 deep
constexpr size_t kMaxQuoted = 64;

constexpr std::array<std::string_view, 7> kTopLevelFields = {
    "schema", "name", "description", "decision_ttl_seconds", "rules", "tpm", "require"};
constexpr std::array<std::string_view, 3> kTpmFields = {
    "applies_to", "pcr_selection", "allow_uncertified_ek"};
constexpr std::array<std::string_view, 8> kRuleFields = {
    "id", "expect", "min_version", "warn", "action", "min_tier", "sticky", "remediation"};
constexpr size_t kMaxRemediationBytes = 1024;  // report::kMaxRemediationBytes

// Untrusted text for an error message: truncated, JSON-quoted, ASCII only.
std::string Quote(std::string_view s) {
  std::string cut(s.substr(0, kMaxQuoted));
  std::string out = Json(cut).dump(-1, ' ', /*ensure_ascii=*/true,
                                   Json::error_handler_t::replace);
  if (s.size() > kMaxQuoted) out.insert(out.size() - 1, "...");
  return out;
}

Status Invalid(std::string message) {
  return InvalidArgumentError(std::move(message));
}

std::string RulePath(size_t index) {
  return "rules[" + std::to_string(index) + "]";
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

std::string JoinValues(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out;
}

// Parses `bytes` strictly: nlohmann errors become INVALID_ARGUMENT, and
// duplicate object keys (which nlohmann would silently collapse) and
// excessive nesting are refused.
StatusOr<Json> ParseStrict(std::string_view bytes) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  bool too_deep = false;
  auto callback = [&](int depth, Json::parse_event_t event,
                      Json& parsed) -> bool {
    switch (event) {
      case Json::parse_event_t::object_start:
        keys.emplace_back();
        [[fallthrough]];
      case Json::parse_event_t::array_start:
        if (depth >= kMaxDepth) too_deep = true;
        break;
      case Json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string() &&
            !keys.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(bytes.begin(), bytes.end(), callback,
                      /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const Json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2:
    // syntax error ...; last read: '...'": keep the middle, drop the echo
    // of raw input.
    std::string what = e.what();
    size_t start = what.find("] ");
    start = start == std::string::npos ? 0 : start + 2;
    size_t end = what.find("; last read");
    std::string detail = what.substr(
        start, end == std::string::npos ? std::string::npos : end - start);
    return Invalid("policy is not valid JSON: " + detail + ".");
  } catch (const Json::exception& e) {
    return Invalid("policy is not valid JSON (nlohmann error " +
                   std::to_string(e.id) + ").");
  }
  if (too_deep) {
    return Invalid("policy JSON nests deeper than " +
                   std::to_string(kMaxDepth) + " levels.");
  }
  if (!duplicate.empty()) {
    return Invalid("policy JSON has duplicate key " + Quote(duplicate) + ".");
  }
  return doc;
}

// The first field of `obj` not in `allowed`, if any (in document order,
// which nlohmann's std::map sorts by key: deterministic either way).
std::optional<std::string> UnknownField(
    const Json& obj, std::span<const std::string_view> allowed) {
  for (const auto& item : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) ==
        allowed.end()) {
      return item.key();
    }
  }
  return std::nullopt;
}

// A required non-empty string field. `path` is its name in messages.
StatusOr<std::string> RequiredString(const Json& obj, const char* key,
                                     const std::string& missing_prefix,
                                     const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    return Invalid(missing_prefix + "missing field \"" + key + "\".");
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    return Invalid(path + " must be a non-empty string.");
  }
  return it->get<std::string>();
}

StatusOr<int64_t> ParseTtl(const Json& obj) {
  auto it = obj.find("decision_ttl_seconds");
  if (it == obj.end()) {
    return Invalid("missing field \"decision_ttl_seconds\".");
  }
  if (!it->is_number_integer()) {
    return Invalid("decision_ttl_seconds must be an integer.");
  }
  std::string shown;
  bool in_range = false;
  int64_t value = 0;
  if (it->is_number_unsigned()) {
    uint64_t u = it->get<uint64_t>();
    shown = std::to_string(u);
    in_range = u >= static_cast<uint64_t>(Policy::kMinTtlSeconds) &&
               u <= static_cast<uint64_t>(Policy::kMaxTtlSeconds);
    value = in_range ? static_cast<int64_t>(u) : 0;
  } else {
    value = it->get<int64_t>();
    shown = std::to_string(value);
    in_range =
        value >= Policy::kMinTtlSeconds && value <= Policy::kMaxTtlSeconds;
  }
  if (!in_range) {
    return Invalid("decision_ttl_seconds " + shown + " out of range [" +
                   std::to_string(Policy::kMinTtlSeconds) + ", " +
                   std::to_string(Policy::kMaxTtlSeconds) + "].");
  }
  return value;
}

StatusOr<PolicyRule> ParseRule(
    const Json& obj, size_t index,
    const std::map<std::string, const RuleSpec*, std::less<>>& catalogue) {
  const std::string path = RulePath(index);
  if (!obj.is_object()) return Invalid(path + " must be an object.");
  if (auto field = UnknownField(obj, kRuleFields)) {
    return Invalid(path + ": unknown field " + Quote(*field) + ".");
  }
  const std::string missing = path + ": ";
  PolicyRule rule;
  DPA_ASSIGN_OR_RETURN(rule.id,
                       RequiredString(obj, "id", missing, path + ".id"));
  auto spec = catalogue.find(rule.id);
  if (spec == catalogue.end()) {
    return Invalid(path + ".id " + Quote(rule.id) + " is not a known rule.");
  }
  const std::vector<std::string>& allowed = spec->second->allowed_values;
  auto check_allowed = [&](const std::string& v,
                           const std::string& where) -> Status {
    if (!allowed.empty() &&
        std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      return Invalid(where + " " + Quote(v) + " is not allowed for " +
                     rule.id + "; allowed: " + JoinValues(allowed) + ".");
    }
    return OkStatus();
  };
  auto expect_it = obj.find("expect");
  auto min_it = obj.find("min_version");
  if (min_it != obj.end()) {
    if (expect_it != obj.end()) {
      return Invalid(path + ": give either expect or min_version, not both.");
    }
    if (spec->second->version_component.empty()) {
      return Invalid(path + ".min_version: rule " + rule.id +
                     " has no version order; use expect.");
    }
    std::vector<std::pair<std::string, std::string>> given;  // value, where
    if (min_it->is_string() && !min_it->get<std::string>().empty()) {
      given.emplace_back(min_it->get<std::string>(), path + ".min_version");
    } else if (min_it->is_array() && !min_it->empty() && min_it->size() <= 8 &&
               spec->second->version_component == "nic-fw") {
      for (size_t k = 0; k < min_it->size(); ++k) {
        const Json& v = (*min_it)[k];
        std::string where = path + ".min_version[" + std::to_string(k) + "]";
        if (!v.is_string() || v.get<std::string>().empty()) {
          return Invalid(where + " must be a non-empty string.");
        }
        given.emplace_back(v.get<std::string>(), where);
      }
    } else {
      return Invalid(path + ".min_version must be a non-empty string" +
                     std::string(spec->second->version_component == "nic-fw"
                                     ? " or an array of 1 to 8 (one per firmware family)."
                                     : "."));
    }
    rule.version_component = spec->second->version_component;
    std::set<uint64_t> families;
    for (const auto& [value, where] : given) {
      auto parsed = bluefield::ParseComparableVersion(rule.version_component, value);
      if (!parsed.ok()) return Invalid(where + ": " + parsed.status().message());
      if (given.size() > 1 && !families.insert(parsed->parts.front()).second) {
        return Invalid(where + " " + Quote(value) + ": a second minimum for family " +
                       std::to_string(parsed->parts.front()) + ".");
      }
      rule.min_versions.push_back(value);
      rule.min_version += (rule.min_version.empty() ? "" : "|") + value;
    }
    rule.expect = ">= " + rule.min_version;
  } else if (expect_it != obj.end() && expect_it->is_array()) {
    // Any of several values passes: ["integrity", "confidentiality"].
    if (expect_it->empty() || expect_it->size() > 16) {
      return Invalid(path + ".expect must list 1 to 16 values.");
    }
    for (size_t k = 0; k < expect_it->size(); ++k) {
      const std::string where = path + ".expect[" + std::to_string(k) + "]";
      const Json& v = (*expect_it)[k];
      if (!v.is_string() || v.get<std::string>().empty()) {
        return Invalid(where + " must be a non-empty string.");
      }
      std::string value = v.get<std::string>();
      DPA_RETURN_IF_ERROR(check_allowed(value, where));
      if (std::find(rule.expect_any.begin(), rule.expect_any.end(), value) !=
          rule.expect_any.end()) {
        return Invalid(where + " " + Quote(value) + " is listed twice.");
      }
      rule.expect_any.push_back(value);
      rule.expect += (k == 0 ? "" : "|") + value;
    }
  } else {
    DPA_ASSIGN_OR_RETURN(rule.expect, RequiredString(obj, "expect", missing,
                                                     path + ".expect"));
    DPA_RETURN_IF_ERROR(check_allowed(rule.expect, path + ".expect"));
  }
  if (auto warn_it = obj.find("warn"); warn_it != obj.end()) {
    if (!warn_it->is_array() || warn_it->empty() || warn_it->size() > 16) {
      return Invalid(path + ".warn must list 1 to 16 values.");
    }
    for (size_t k = 0; k < warn_it->size(); ++k) {
      const std::string where = path + ".warn[" + std::to_string(k) + "]";
      const Json& v = (*warn_it)[k];
      if (!v.is_string() || v.get<std::string>().empty()) {
        return Invalid(where + " must be a non-empty string.");
      }
      std::string value = v.get<std::string>();
      DPA_RETURN_IF_ERROR(check_allowed(value, where));
      bool expected = value == rule.expect ||
                      std::find(rule.expect_any.begin(), rule.expect_any.end(),
                                value) != rule.expect_any.end();
      if (expected) {
        return Invalid(where + " " + Quote(value) +
                       " is also expected; a warn value must be one that fails.");
      }
      if (std::find(rule.warn_values.begin(), rule.warn_values.end(), value) !=
          rule.warn_values.end()) {
        return Invalid(where + " " + Quote(value) + " is listed twice.");
      }
      rule.warn_values.push_back(value);
    }
  }
  DPA_ASSIGN_OR_RETURN(
      std::string action,
      RequiredString(obj, "action", missing, path + ".action"));
  if (action == "deny") {
    rule.action = RuleAction::kDeny;
  } else if (action == "warn") {
    rule.action = RuleAction::kWarn;
  } else {
    return Invalid(path + ".action " + Quote(action) +
                   " must be one of: deny, warn.");
  }
  DPA_ASSIGN_OR_RETURN(
      std::string tier,
      RequiredString(obj, "min_tier", missing, path + ".min_tier"));
  std::optional<Tier> parsed_tier = ParseTier(tier);
  if (!parsed_tier) {
    return Invalid(path + ".min_tier " + Quote(tier) +
                   " must be one of: self-reported, corroborated, "
                   "hardware-rooted.");
  }
  rule.min_tier = *parsed_tier;
  // Optional (issue 15): a failure of this rule holds the node denied
  // until an administrator acknowledges it.
  if (auto it = obj.find("sticky"); it != obj.end()) {
    if (!it->is_boolean()) return Invalid(path + ".sticky must be true or false.");
    rule.sticky = it->get<bool>();
    if (rule.sticky && rule.action != RuleAction::kDeny) {
      return Invalid(path + ".sticky needs action \"deny\" (a warning admits).");
    }
  }
  if (auto it = obj.find("remediation"); it != obj.end()) {
    const std::string where = path + ".remediation";
    if (!it->is_string()) return Invalid(where + " must be a string.");
    rule.remediation = it->get<std::string>();
    if (rule.remediation.empty() || rule.remediation.size() > kMaxRemediationBytes) {
      return Invalid(where + " must be 1-" + std::to_string(kMaxRemediationBytes) +
                     " bytes.");
    }
    if (!IsSafeText(rule.remediation, kMaxRemediationBytes)) {
      return Invalid(where + " holds a control or formatting character.");
    }
  }
  return rule;
}

// Findings are agent-signed claims until corroboration exists.
constexpr Tier kReachedTier = Tier::kSelfReported;

StatusOr<TpmPolicy> ParseTpmSection(const Json& tpm) {
  TpmPolicy out;
  if (!tpm.is_object()) return Invalid("tpm must be an object.");
  if (auto field = UnknownField(tpm, kTpmFields)) {
    return Invalid("unknown field " + Quote("tpm." + std::string(*field)) + ".");
  }
  if (auto it = tpm.find("applies_to"); it != tpm.end()) {
    if (!it->is_string() || (*it != "bound-nodes" && *it != "all-nodes")) {
      return Invalid("tpm.applies_to must be \"bound-nodes\" or \"all-nodes\".");
    }
    out.all_nodes = *it == "all-nodes";
  }
  if (auto it = tpm.find("allow_uncertified_ek"); it != tpm.end()) {
    if (!it->is_boolean()) return Invalid("tpm.allow_uncertified_ek must be true or false.");
    out.allow_uncertified_ek = it->get<bool>();
  }
  if (auto it = tpm.find("pcr_selection"); it != tpm.end()) {
    if (!it->is_object() || it->empty()) {
      return Invalid("tpm.pcr_selection must be a non-empty object of bank -> PCR indexes.");
    }
    std::map<uint16_t, std::set<uint32_t>> sel;
    for (const auto& [bank, pcrs] : it->items()) {
      std::string path = "tpm.pcr_selection." + bank;
      std::optional<uint16_t> alg = attest::ParseHashAlgName(bank);
      if (!alg) return Invalid(path + " is not a known bank (sha1, sha256, sha384, sha512).");
      if (!pcrs.is_array() || pcrs.empty()) {
        return Invalid(path + " must be a non-empty array of PCR indexes.");
      }
      for (size_t i = 0; i < pcrs.size(); ++i) {
        const Json& v = pcrs[i];
        if (!v.is_number_unsigned() || v.get<uint64_t>() > attest::kMaxPcrIndex) {
          return Invalid(path + "[" + std::to_string(i) + "] is not a PCR index in [0, " +
                         std::to_string(attest::kMaxPcrIndex) + "].");
        }
        if (!sel[*alg].insert(static_cast<uint32_t>(v.get<uint64_t>())).second) {
          return Invalid(path + "[" + std::to_string(i) + "] repeats PCR " +
                         std::to_string(v.get<uint64_t>()) + ".");
        }
      }
    }
    StatusOr<attest::PcrSelection> selection = attest::PcrSelection::Create(std::move(sel));
    if (!selection.ok()) return selection.status().WithPrefix("tpm.pcr_selection");
    out.pcr_selection = *selection;
  }
  return out;
}

void EvaluateMinVersion(const PolicyRule& rule, const Finding& f, RuleResult& r) {
  auto observed = bluefield::ParseComparableVersion(rule.version_component, f.observed);
  if (!observed.ok()) {
    r.verdict = Verdict::kUnknown;
    r.reason = "cannot order " + Quote(f.observed) + ": " + observed.status().message();
    return;
  }
  std::optional<bluefield::ComparableVersion> minimum;
  for (const std::string& m : rule.min_versions) {
    auto parsed = bluefield::ParseComparableVersion(rule.version_component, m);
    if (!parsed.ok()) continue;  // validated at load
    bool same_family = rule.version_component != "nic-fw" ||
                       parsed->parts.front() == observed->parts.front();
    if (same_family) minimum = *parsed;
  }
  if (!minimum) {
    r.verdict = Verdict::kUnknown;
    r.reason = "no minimum for firmware family " + std::to_string(observed->parts.front()) +
               " of " + Quote(f.observed) + " (policy lists " + rule.min_version + ").";
    return;
  }
  if (bluefield::CompareVersions(*observed, *minimum) < 0) {
    r.verdict = Verdict::kFail;
    r.reason = "observed " + Quote(f.observed) + " is below the minimum " +
               Quote(minimum->text) + ".";
    return;
  }
  if (r.tier < rule.min_tier) {
    r.verdict = Verdict::kUnknown;
    r.reason = "requires tier " + std::string(TierName(rule.min_tier)) + ", reached " +
               std::string(TierName(r.tier)) + ".";
    return;
  }
  r.verdict = Verdict::kPass;
}

}  // namespace

std::string_view RuleActionName(RuleAction a) {
  switch (a) {
    case RuleAction::kDeny:
      return "deny";
    case RuleAction::kWarn:
      return "warn";
  }
  return "deny";
}

std::string_view TierName(Tier t) {
  switch (t) {
    case Tier::kSelfReported:
      return "self-reported";
    case Tier::kCorroborated:
      return "corroborated";
    case Tier::kHardwareRooted:
      return "hardware-rooted";
  }
  return "self-reported";
}

std::optional<Tier> ParseTier(std::string_view s) {
  if (s == "self-reported") return Tier::kSelfReported;
  if (s == "corroborated") return Tier::kCorroborated;
  if (s == "hardware-rooted") return Tier::kHardwareRooted;
  return std::nullopt;
}

std::string_view DecisionName(Decision d) {
  return d == Decision::kAdmit ? "admit" : "deny";
}

StatusOr<Policy> Policy::Create(std::string_view json_bytes,
                                const std::vector<RuleSpec>& known_rules) {
  // Nothing below is expected to throw (parse errors are caught in
  // ParseStrict); this keeps the no-exceptions contract if one ever does.
  try {
    return CreateUnchecked(json_bytes, known_rules);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory loading the policy.");
  } catch (const std::exception& e) {
    return InternalError(std::string("policy loader threw: ") + e.what() + ".");
  }
}

StatusOr<Policy> Policy::CreateUnchecked(
    std::string_view json_bytes, const std::vector<RuleSpec>& known_rules) {
  std::map<std::string, const RuleSpec*, std::less<>> catalogue;
  for (const RuleSpec& spec : known_rules) {
    if (!catalogue.emplace(spec.id, &spec).second) {
      return Invalid("known rule catalogue lists " + Quote(spec.id) +
                     " twice.");
    }
  }
  if (json_bytes.size() > kMaxBytes) {
    return ResourceExhaustedError(
        "policy is " + std::to_string(json_bytes.size()) +
        " bytes; the limit is " + std::to_string(kMaxBytes) + ".");
  }
  if (json_bytes.empty()) return Invalid("policy is empty.");
  DPA_ASSIGN_OR_RETURN(Json doc, ParseStrict(json_bytes));
  if (!doc.is_object()) return Invalid("policy must be a JSON object.");
  if (auto field = UnknownField(doc, kTopLevelFields)) {
    return Invalid("unknown top-level field " + Quote(*field) + ".");
  }

  Policy policy;
  DPA_ASSIGN_OR_RETURN(std::string schema,
                       RequiredString(doc, "schema", "", "schema"));
  if (schema != kSchema) {
    return Invalid("schema " + Quote(schema) +
                   " is not supported; expected \"" + std::string(kSchema) +
                   "\".");
  }
  DPA_ASSIGN_OR_RETURN(policy.name_, RequiredString(doc, "name", "", "name"));
  if (policy.name_.size() > kMaxNameChars ||
      !std::all_of(policy.name_.begin(), policy.name_.end(), IsNameChar)) {
    return Invalid("name " + Quote(policy.name_) + " must be 1 to " +
                   std::to_string(kMaxNameChars) +
                   " characters of [A-Za-z0-9._-].");
  }
  if (auto it = doc.find("description"); it != doc.end()) {
    if (!it->is_string()) return Invalid("description must be a string.");
    policy.description_ = it->get<std::string>();
    if (policy.description_.size() > kMaxDescriptionBytes) {
      return Invalid("description is longer than " +
                     std::to_string(kMaxDescriptionBytes) + " bytes.");
    }
  }
  DPA_ASSIGN_OR_RETURN(policy.ttl_seconds_, ParseTtl(doc));
  if (auto it = doc.find("tpm"); it != doc.end()) {
    DPA_ASSIGN_OR_RETURN(policy.tpm_, ParseTpmSection(*it));
  }
  if (auto it = doc.find("require"); it != doc.end()) {
    if (!it->is_array()) return Invalid("require must be an array of evidence paths.");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& p = (*it)[i];
      const std::string path = "require[" + std::to_string(i) + "]";
      if (!p.is_string()) return Invalid(path + " must be a string.");
      const std::string name = p.get<std::string>();
      if (std::find(std::begin(kEvidencePaths), std::end(kEvidencePaths), name) ==
          std::end(kEvidencePaths)) {
        return Invalid(path + " " + Quote(name) + " is not an evidence path (bmc, irot, erot, tpm).");
      }
      if (std::find(policy.required_paths_.begin(), policy.required_paths_.end(), name) !=
          policy.required_paths_.end()) {
        return Invalid(path + " " + Quote(name) + " is listed twice.");
      }
      policy.required_paths_.push_back(name);
    }
  }

  auto rules = doc.find("rules");
  if (rules == doc.end()) return Invalid("missing field \"rules\".");
  if (!rules->is_array()) return Invalid("rules must be an array.");
  if (rules->empty()) return Invalid("rules must not be empty.");
  if (rules->size() > kMaxRules) {
    return Invalid("rules has " + std::to_string(rules->size()) +
                   " entries; at most " + std::to_string(kMaxRules) +
                   " are allowed.");
  }
  std::map<std::string, size_t, std::less<>> seen;  // id -> first index
  for (size_t i = 0; i < rules->size(); ++i) {
    DPA_ASSIGN_OR_RETURN(PolicyRule rule, ParseRule((*rules)[i], i, catalogue));
    auto [it, inserted] = seen.emplace(rule.id, i);
    if (!inserted) {
      return Invalid(RulePath(i) + ".id " + Quote(rule.id) + " duplicates " +
                     RulePath(it->second) + ".");
    }
    policy.rules_.push_back(std::move(rule));
  }
  policy.sha256_ = Sha256Hex(AsBytes(json_bytes));
  policy.document_ = std::string(json_bytes);
  return policy;
}

PolicyOutcome Policy::Evaluate(const std::vector<Finding>& findings,
                               const EvaluationContext& ctx) const {
  std::unordered_map<std::string_view, std::vector<const Finding*>> by_id;
  for (const Finding& f : findings) by_id[f.id].push_back(&f);

  PolicyOutcome outcome;
  outcome.decision = Decision::kAdmit;
  for (const PolicyRule& rule : rules_) {
    if (ctx.not_applicable.count(rule.id)) continue;
    RuleResult r;
    r.rule_id = rule.id;
    r.expected = rule.expect;
    r.action = rule.action;
    r.remediation = rule.remediation;
    auto tier_it = ctx.tiers.find(rule.id);
    const Tier reached = tier_it == ctx.tiers.end() ? kReachedTier : tier_it->second;
    r.tier = reached;
    auto it = by_id.find(rule.id);
    if (it == by_id.end()) {
      r.verdict = Verdict::kUnknown;
      r.reason = "no finding for rule.";
    } else if (it->second.size() != 1) {
      r.verdict = Verdict::kUnknown;
      r.reason = std::to_string(it->second.size()) +
                 " findings for rule; expected exactly one.";
    } else {
      const Finding& f = *it->second.front();
      r.observed = f.observed;
      r.source = f.source;
      if (f.verdict == Verdict::kUnknown) {
        r.verdict = Verdict::kUnknown;
        r.reason = f.reason.empty() ? std::string("finding is unknown.")
                                    : "finding is unknown: " + f.reason;
      } else if (f.observed.empty()) {
        r.verdict = Verdict::kUnknown;
        r.reason = "finding has no observed value.";
      } else if (!rule.min_versions.empty()) {
        EvaluateMinVersion(rule, f, r);
      } else if (rule.expect_any.empty()
                     ? f.observed != rule.expect
                     : std::find(rule.expect_any.begin(),
                                 rule.expect_any.end(),
                                 f.observed) == rule.expect_any.end()) {
        r.verdict = Verdict::kFail;
        r.reason = "observed " + Quote(f.observed) + ", policy expects " +
                   Quote(rule.expect) + ".";
        if (!f.reason.empty()) r.reason += " " + f.reason;
      } else if (reached < rule.min_tier) {
        r.verdict = Verdict::kUnknown;
        r.reason = "requires tier " + std::string(TierName(rule.min_tier)) +
                   ", reached " + std::string(TierName(reached)) + ".";
      } else {
        r.verdict = Verdict::kPass;
      }
    }
    if (r.verdict == Verdict::kFail &&
        std::find(rule.warn_values.begin(), rule.warn_values.end(),
                  r.observed) != rule.warn_values.end()) {
      r.action = RuleAction::kWarn;
    }
    if (r.verdict != Verdict::kPass && r.action == RuleAction::kDeny) {
      outcome.decision = Decision::kDeny;
    }
    outcome.results.push_back(std::move(r));
  }
  return outcome;
}

StatusOr<Policy> LoadPolicyFile(const std::string& path,
                                const std::vector<RuleSpec>& known_rules) {
  DPA_ASSIGN_OR_RETURN(Bytes bytes, ReadFileLimited(path, Policy::kMaxBytes));
  StatusOr<Policy> policy = Policy::Create(ToString(bytes), known_rules);
  if (!policy.ok()) return policy.status().WithPrefix(path);
  return policy;
}

}  // namespace dpuaudit::verifier
