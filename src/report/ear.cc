#include "report/ear.h"

#include <algorithm>
#include <initializer_list>

#include "common/safe_text.h"

#include "common/strict_json.h"
#include "report/jws.h"

namespace dpuaudit::report {
namespace {

using strict_json::Index;
using strict_json::ObjectReader;
using strict_json::Quote;
using nlohmann::json;

// draft-ietf-rats-ear §3.1 (JSON claim names).
constexpr char kEatProfile[] = "eat_profile";
constexpr char kIat[] = "iat";
constexpr char kExp[] = "exp";
constexpr char kEatNonce[] = "eat_nonce";
constexpr char kVerifierId[] = "ear.verifier-id";
constexpr char kSubmods[] = "submods";
constexpr char kStatus[] = "ear.status";
constexpr char kVector[] = "ear.trustworthiness-vector";
constexpr char kPolicyId[] = "ear.appraisal-policy-id";
constexpr char kDpuaudit[] = "dpuaudit";

}  // namespace

// AR4SI trustworthiness claim names (draft-ietf-rats-ar4si §2.3).
const std::vector<TrustVectorMember>& TrustVectorMembers() {
  static const std::vector<TrustVectorMember> kMembers = {
    {"instance-identity", &TrustVector::instance_identity},
    {"configuration", &TrustVector::configuration},
    {"executables", &TrustVector::executables},
    {"file-system", &TrustVector::file_system},
    {"hardware", &TrustVector::hardware},
    {"runtime-opaque", &TrustVector::runtime_opaque},
    {"storage-opaque", &TrustVector::storage_opaque},
    {"sourced-data", &TrustVector::sourced_data},
  };
  return kMembers;
}

namespace {

int Severity(ArStatus s) { return static_cast<int>(s); }

json ToJson(const AttestationResult& ar) {
  json submods = json::object();
  for (const auto& [name, sm] : ar.submods) {
    json vec = json::object();
    for (const TrustVectorMember& f : TrustVectorMembers()) {
      const std::optional<int>& v = sm.trust_vector.*f.member;
      if (v.has_value()) vec[f.name] = *v;
    }
    json s = {{kStatus, ArStatusName(sm.status)}, {kVector, std::move(vec)}};
    if (!sm.appraisal_policy_id.empty()) {
      s[kPolicyId] = sm.appraisal_policy_id;
    }
    submods[name] = std::move(s);
  }
  json reasons = DecisionReasonsJson(ar.dpuaudit.reasons);
  json j = {
      {kEatProfile, ar.profile},
      {kIat, ar.iat},
      {kExp, ar.exp},
      {kVerifierId,
       {{"developer", ar.verifier_id.developer},
        {"build", ar.verifier_id.build}}},
      {kSubmods, std::move(submods)},
      {kDpuaudit,
       {{"node_id", ar.dpuaudit.node_id},
        {"decision", DecisionName(ar.dpuaudit.decision)},
        {"reasons", std::move(reasons)},
        {"report_sha256", ar.dpuaudit.report_sha256},
        {"policy",
         {{"name", ar.dpuaudit.policy.name},
          {"sha256", ar.dpuaudit.policy.sha256}}}}},
  };
  if (!ar.dpuaudit.collateral.empty()) {
    const Collateral& c = ar.dpuaudit.collateral;
    json matched = json::array();
    for (const MatchedRelease& m : c.matched) {
      matched.push_back({{"release", m.release}, {"sha256", m.sha256}});
    }
    json anchors = json::array();
    for (const CollateralRef& a : c.trust_anchors) {
      anchors.push_back({{"set", a.set}, {"sha256", a.sha256}});
    }
    j[kDpuaudit]["collateral"] = {
        {"refvals", {{"sha256", c.refvals_sha256}, {"matched", std::move(matched)}}},
        {"trust_anchors", std::move(anchors)}};
  }
  if (!ar.nonce.empty()) j[kEatNonce] = ar.nonce;
  if (!ar.verifier_id.instance.empty()) {
    j[kVerifierId]["instance"] = ar.verifier_id.instance;
  }
  return j;
}

StatusOr<TrustVector> ParseVector(const json& j, const std::string& path) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, path));
  TrustVector v;
  for (const TrustVectorMember& f : TrustVectorMembers()) {
    if (!r.Has(f.name)) continue;
    DPA_ASSIGN_OR_RETURN(int64_t value, r.Int64(f.name));
    if (value < -128 || value > 127) {
      return InvalidArgumentError(path + "." + f.name + " " +
                                  std::to_string(value) +
                                  " is outside [-128, 127].");
    }
    v.*f.member = static_cast<int>(value);
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return v;
}

StatusOr<Submod> ParseSubmod(const json& j, const std::string& path) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, path));
  Submod sm;
  DPA_ASSIGN_OR_RETURN(std::string status, r.String(kStatus));
  std::optional<ArStatus> parsed = ParseArStatus(status);
  if (!parsed.has_value()) {
    return InvalidArgumentError(
        r.PathOf(kStatus) + " " + Quote(status) +
        " is not affirming|warning|contraindicated|none.");
  }
  sm.status = *parsed;
  DPA_ASSIGN_OR_RETURN(const json* vec, r.Object(kVector));
  DPA_ASSIGN_OR_RETURN(sm.trust_vector, ParseVector(*vec, r.PathOf(kVector)));
  bool present = false;
  DPA_ASSIGN_OR_RETURN(sm.appraisal_policy_id,
                       r.OptionalString(kPolicyId, &present));
  if (present && sm.appraisal_policy_id.empty()) {
    return InvalidArgumentError(r.PathOf(kPolicyId) + " is empty.");
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  ArStatus worst = StatusOfVector(sm.trust_vector);
  if (Severity(sm.status) < Severity(worst)) {
    return InvalidArgumentError(r.PathOf(kStatus) + " \"" +
                                std::string(ArStatusName(sm.status)) +
                                "\" is better than its vector's worst tier \"" +
                                std::string(ArStatusName(worst)) + "\".");
  }
  return sm;
}

StatusOr<DecisionReason> ParseReason(const json& j, const std::string& path) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, path));
  DecisionReason out;
  DPA_ASSIGN_OR_RETURN(out.rule_id, r.String("rule_id"));
  if (out.rule_id.empty()) {
    return InvalidArgumentError(path + ".rule_id is empty.");
  }
  DPA_ASSIGN_OR_RETURN(std::string verdict, r.String("verdict"));
  std::optional<Verdict> v = ParseVerdict(verdict);
  if (!v.has_value()) {
    return InvalidArgumentError(path + ".verdict " + Quote(verdict) +
                                " is not pass|fail|unknown.");
  }
  out.verdict = *v;
  DPA_ASSIGN_OR_RETURN(out.expected, r.String("expected"));
  DPA_ASSIGN_OR_RETURN(out.observed, r.String("observed"));
  DPA_ASSIGN_OR_RETURN(out.source, r.String("source"));
  DPA_ASSIGN_OR_RETURN(out.reason, r.String("reason"));
  DPA_ASSIGN_OR_RETURN(std::string tier, r.String("tier"));
  std::optional<ClaimTier> t = ParseClaimTier(tier);
  if (!t.has_value()) {
    return InvalidArgumentError(
        path + ".tier " + Quote(tier) +
        " is not hardware-rooted|corroborated|self-reported.");
  }
  out.tier = *t;
  bool present = false;
  DPA_ASSIGN_OR_RETURN(out.path, r.OptionalString("path", &present));
  DPA_ASSIGN_OR_RETURN(out.key, r.OptionalString("key", &present));
  DPA_ASSIGN_OR_RETURN(out.action, r.OptionalString("action", &present));
  if (present && out.action != kActionDeny && out.action != kActionWarn) {
    return InvalidArgumentError(path + ".action " + Quote(out.action) +
                                " is not deny|warn.");
  }
  DPA_ASSIGN_OR_RETURN(out.remediation,
                       r.OptionalString("remediation", &present));
  if (present &&
      (out.remediation.empty() || out.remediation.size() > kMaxRemediationBytes)) {
    return InvalidArgumentError(path + ".remediation must be 1-" +
                                std::to_string(kMaxRemediationBytes) +
                                " bytes.");
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return out;
}

Status CheckHex64(const std::string& v, const std::string& path) {
  if (!IsLowerHexOfLength(v, 64)) {
    return InvalidArgumentError(path + " must be 64 lower-case hex digits.");
  }
  return OkStatus();
}

StatusOr<Collateral> ParseCollateral(ObjectReader& parent) {
  Collateral out;
  DPA_ASSIGN_OR_RETURN(const json* c, parent.Object("collateral"));
  const std::string base = "dpuaudit.collateral";
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(*c, base));
  DPA_ASSIGN_OR_RETURN(const json* refvals, r.Object("refvals"));
  DPA_ASSIGN_OR_RETURN(ObjectReader rv,
                       ObjectReader::New(*refvals, base + ".refvals"));
  DPA_ASSIGN_OR_RETURN(out.refvals_sha256, rv.String("sha256"));
  DPA_RETURN_IF_ERROR(CheckHex64(out.refvals_sha256, base + ".refvals.sha256"));
  DPA_ASSIGN_OR_RETURN(const json* matched, rv.Array("matched"));
  for (size_t i = 0; i < matched->size(); ++i) {
    std::string path = Index(base + ".refvals.matched", i);
    DPA_ASSIGN_OR_RETURN(ObjectReader m, ObjectReader::New((*matched)[i], path));
    MatchedRelease mr;
    DPA_ASSIGN_OR_RETURN(mr.release, m.String("release"));
    if (mr.release.empty() || mr.release.size() > 128) {
      return InvalidArgumentError(path + ".release must be 1-128 bytes.");
    }
    DPA_ASSIGN_OR_RETURN(mr.sha256, m.String("sha256"));
    DPA_RETURN_IF_ERROR(CheckHex64(mr.sha256, path + ".sha256"));
    DPA_RETURN_IF_ERROR(m.Finish());
    out.matched.push_back(std::move(mr));
  }
  DPA_RETURN_IF_ERROR(rv.Finish());
  DPA_ASSIGN_OR_RETURN(const json* anchors, r.Array("trust_anchors"));
  for (size_t i = 0; i < anchors->size(); ++i) {
    std::string path = Index(base + ".trust_anchors", i);
    DPA_ASSIGN_OR_RETURN(ObjectReader a, ObjectReader::New((*anchors)[i], path));
    CollateralRef ref;
    DPA_ASSIGN_OR_RETURN(ref.set, a.String("set"));
    if (ref.set != "ek-ca" && ref.set != "dice-roots") {
      return InvalidArgumentError(path + ".set " + Quote(ref.set) +
                                  " is not ek-ca|dice-roots.");
    }
    DPA_ASSIGN_OR_RETURN(ref.sha256, a.String("sha256"));
    DPA_RETURN_IF_ERROR(CheckHex64(ref.sha256, path + ".sha256"));
    DPA_RETURN_IF_ERROR(a.Finish());
    out.trust_anchors.push_back(std::move(ref));
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return out;
}

StatusOr<DpuauditResult> ParseDpuaudit(const json& j) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, kDpuaudit));
  DpuauditResult out;
  DPA_ASSIGN_OR_RETURN(out.node_id, r.String("node_id"));
  if (out.node_id.empty()) {
    return InvalidArgumentError("dpuaudit.node_id is empty.");
  }
  DPA_ASSIGN_OR_RETURN(std::string decision, r.String("decision"));
  if (decision == "admit") {
    out.decision = Decision::kAdmit;
  } else if (decision == "deny") {
    out.decision = Decision::kDeny;
  } else {
    return InvalidArgumentError("dpuaudit.decision " + Quote(decision) +
                                " is not admit|deny.");
  }
  DPA_ASSIGN_OR_RETURN(const json* reasons, r.Array("reasons"));
  for (size_t i = 0; i < reasons->size(); ++i) {
    DPA_ASSIGN_OR_RETURN(
        DecisionReason reason,
        ParseReason((*reasons)[i], Index("dpuaudit.reasons", i)));
    out.reasons.push_back(std::move(reason));
  }
  DPA_ASSIGN_OR_RETURN(out.report_sha256, r.String("report_sha256"));
  if (!IsLowerHexOfLength(out.report_sha256, 64)) {
    return InvalidArgumentError(
        "dpuaudit.report_sha256 must be 64 lower-case hex digits.");
  }
  DPA_ASSIGN_OR_RETURN(const json* policy, r.Object("policy"));
  DPA_ASSIGN_OR_RETURN(ObjectReader p,
                       ObjectReader::New(*policy, "dpuaudit.policy"));
  DPA_ASSIGN_OR_RETURN(out.policy.name, p.String("name"));
  if (out.policy.name.empty()) {
    return InvalidArgumentError("dpuaudit.policy.name is empty.");
  }
  DPA_ASSIGN_OR_RETURN(out.policy.sha256, p.String("sha256"));
  if (!IsLowerHexOfLength(out.policy.sha256, 64)) {
    return InvalidArgumentError(
        "dpuaudit.policy.sha256 must be 64 lower-case hex digits.");
  }
  DPA_RETURN_IF_ERROR(p.Finish());
  if (r.Has("collateral")) {
    DPA_ASSIGN_OR_RETURN(out.collateral, ParseCollateral(r));
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return out;
}

}  // namespace

std::string_view ArStatusName(ArStatus s) {
  switch (s) {
    case ArStatus::kNone:
      return "none";
    case ArStatus::kAffirming:
      return "affirming";
    case ArStatus::kWarning:
      return "warning";
    case ArStatus::kContraindicated:
      return "contraindicated";
  }
  return "none";
}

std::optional<ArStatus> ParseArStatus(std::string_view s) {
  if (s == "none") return ArStatus::kNone;
  if (s == "affirming") return ArStatus::kAffirming;
  if (s == "warning") return ArStatus::kWarning;
  if (s == "contraindicated") return ArStatus::kContraindicated;
  return std::nullopt;
}

ArStatus TierOf(int value) {
  if (value >= -1 && value <= 1) return ArStatus::kNone;
  if ((value >= 2 && value <= 31) || (value <= -2 && value >= -32)) {
    return ArStatus::kAffirming;
  }
  if ((value >= 32 && value <= 95) || (value <= -33 && value >= -96)) {
    return ArStatus::kWarning;
  }
  return ArStatus::kContraindicated;
}

ArStatus StatusOfVector(const TrustVector& v) {
  ArStatus worst = ArStatus::kNone;
  for (const TrustVectorMember& f : TrustVectorMembers()) {
    const std::optional<int>& value = v.*f.member;
    if (!value.has_value()) continue;
    ArStatus tier = TierOf(*value);
    if (Severity(tier) > Severity(worst)) worst = tier;
  }
  return worst;
}

std::string_view ClaimTierName(ClaimTier t) {
  switch (t) {
    case ClaimTier::kHardwareRooted:
      return "hardware-rooted";
    case ClaimTier::kCorroborated:
      return "corroborated";
    case ClaimTier::kSelfReported:
      return "self-reported";
  }
  return "self-reported";
}

std::optional<ClaimTier> ParseClaimTier(std::string_view s) {
  if (s == "hardware-rooted") return ClaimTier::kHardwareRooted;
  if (s == "corroborated") return ClaimTier::kCorroborated;
  if (s == "self-reported") return ClaimTier::kSelfReported;
  return std::nullopt;
}

std::string_view DecisionName(Decision d) {
  return d == Decision::kAdmit ? "admit" : "deny";
}

bool ValidVerifierInstance(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void MakeSafe(DecisionReason& r) {
  for (std::string* s : {&r.rule_id, &r.expected, &r.observed, &r.source,
                         &r.reason, &r.path, &r.key, &r.action}) {
    if (!IsSafeText(*s)) *s = SafeText(*s);
  }
  if (!IsSafeText(r.remediation, kMaxRemediationBytes)) {
    r.remediation = SafeText(r.remediation, kMaxRemediationBytes);
  }
}

json DecisionReasonsJson(const std::vector<DecisionReason>& reasons) {
  json a = json::array();
  for (const DecisionReason& r : reasons) {
    a.push_back({{"rule_id", r.rule_id},
                 {"verdict", VerdictName(r.verdict)},
                 {"expected", r.expected},
                 {"observed", r.observed},
                 {"source", r.source},
                 {"reason", r.reason},
                 {"tier", ClaimTierName(r.tier)}});
    if (!r.path.empty()) a.back()["path"] = r.path;
    if (!r.key.empty()) a.back()["key"] = r.key;
    if (!r.action.empty()) a.back()["action"] = r.action;
    if (!r.remediation.empty()) a.back()["remediation"] = r.remediation;
  }
  return a;
}

std::string SerializeEar(const AttestationResult& ar) {
  return strict_json::DumpJson(ToJson(ar));
}

StatusOr<AttestationResult> ParseEar(ByteView payload) {
  if (payload.size() > kMaxEarBytes) {
    return ResourceExhaustedError("EAR of " + std::to_string(payload.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(kMaxEarBytes) + " bytes.");
  }
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(payload, "EAR"));
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, ""));
  AttestationResult ar;
  DPA_ASSIGN_OR_RETURN(ar.profile, r.String(kEatProfile));
  if (ar.profile != kEarProfile) {
    return InvalidArgumentError("eat_profile " + Quote(ar.profile) +
                                " is not \"" + std::string(kEarProfile) +
                                "\".");
  }
  DPA_ASSIGN_OR_RETURN(ar.iat, r.Int64(kIat));
  if (ar.iat < 0) {
    return InvalidArgumentError("iat " + std::to_string(ar.iat) +
                                " is negative.");
  }
  DPA_ASSIGN_OR_RETURN(ar.exp, r.Int64(kExp));
  if (ar.exp <= ar.iat) {
    return InvalidArgumentError("exp " + std::to_string(ar.exp) +
                                " is not after iat " + std::to_string(ar.iat) +
                                ".");
  }
  bool has_nonce = false;
  DPA_ASSIGN_OR_RETURN(ar.nonce, r.OptionalString(kEatNonce, &has_nonce));
  if (has_nonce) {
    auto nonce = Base64UrlDecode(ar.nonce);
    if (!nonce.ok()) return nonce.status().WithPrefix(kEatNonce);
    if (nonce->size() < 8 || nonce->size() > 64) {
      return InvalidArgumentError("eat_nonce must decode to 8-64 bytes, got " +
                                  std::to_string(nonce->size()) + ".");
    }
  }
  DPA_ASSIGN_OR_RETURN(const json* vid, r.Object(kVerifierId));
  DPA_ASSIGN_OR_RETURN(ObjectReader v, ObjectReader::New(*vid, kVerifierId));
  DPA_ASSIGN_OR_RETURN(ar.verifier_id.developer, v.String("developer"));
  DPA_ASSIGN_OR_RETURN(ar.verifier_id.build, v.String("build"));
  if (ar.verifier_id.developer.empty() || ar.verifier_id.build.empty()) {
    return InvalidArgumentError(
        "ear.verifier-id needs a non-empty developer and build.");
  }
  bool has_instance = false;
  DPA_ASSIGN_OR_RETURN(ar.verifier_id.instance,
                       v.OptionalString("instance", &has_instance));
  if (has_instance && !ValidVerifierInstance(ar.verifier_id.instance)) {
    return InvalidArgumentError(
        "ear.verifier-id instance " + Quote(ar.verifier_id.instance) +
        " is not 1-128 characters of [A-Za-z0-9._-].");
  }
  DPA_RETURN_IF_ERROR(v.Finish());
  DPA_ASSIGN_OR_RETURN(const json* submods, r.Object(kSubmods));
  if (submods->empty()) {
    return InvalidArgumentError("submods is empty.");
  }
  for (auto it = submods->begin(); it != submods->end(); ++it) {
    const std::string& name = it.key();
    if (std::find(std::begin(kKnownSubmods), std::end(kKnownSubmods), name) ==
        std::end(kKnownSubmods)) {
      return InvalidArgumentError("submods has unknown submodule " +
                                  Quote(name) + ".");
    }
    DPA_ASSIGN_OR_RETURN(Submod sm, ParseSubmod(it.value(), "submods." + name));
    ar.submods.emplace(name, std::move(sm));
  }
  DPA_ASSIGN_OR_RETURN(const json* dpa, r.Object(kDpuaudit));
  DPA_ASSIGN_OR_RETURN(ar.dpuaudit, ParseDpuaudit(*dpa));
  DPA_RETURN_IF_ERROR(r.Finish());
  if (ar.dpuaudit.decision == Decision::kAdmit) {
    for (const auto& [name, sm] : ar.submods) {
      if (sm.status == ArStatus::kContraindicated) {
        return InvalidArgumentError(
            "dpuaudit.decision \"admit\" contradicts submods." + name +
            ".ear.status \"contraindicated\".");
      }
    }
  }
  return ar;
}

Status ValidateEar(const AttestationResult& ar) {
  if (ar.profile != kEarProfile) {
    return InvalidArgumentError("eat_profile " + Quote(ar.profile) + " is not \"" +
                                std::string(kEarProfile) + "\".");
  }
  if (ar.iat < 0) {
    return InvalidArgumentError("iat " + std::to_string(ar.iat) + " is negative.");
  }
  if (ar.exp <= ar.iat) {
    return InvalidArgumentError("exp " + std::to_string(ar.exp) + " is not after iat " +
                                std::to_string(ar.iat) + ".");
  }
  if (!ar.nonce.empty()) {
    auto nonce = Base64UrlDecode(ar.nonce);
    if (!nonce.ok()) return nonce.status().WithPrefix(kEatNonce);
    if (nonce->size() < 8 || nonce->size() > 64) {
      return InvalidArgumentError("eat_nonce must decode to 8-64 bytes, got " +
                                  std::to_string(nonce->size()) + ".");
    }
  }
  if (ar.verifier_id.developer.empty() || ar.verifier_id.build.empty()) {
    return InvalidArgumentError("ear.verifier-id needs a non-empty developer and build.");
  }
  if (!ar.verifier_id.instance.empty() && !ValidVerifierInstance(ar.verifier_id.instance)) {
    return InvalidArgumentError("ear.verifier-id instance " + Quote(ar.verifier_id.instance) +
                                " is not 1-128 characters of [A-Za-z0-9._-].");
  }
  if (ar.submods.empty()) return InvalidArgumentError("submods is empty.");
  for (const auto& [name, sm] : ar.submods) {
    if (std::find(std::begin(kKnownSubmods), std::end(kKnownSubmods), name) ==
        std::end(kKnownSubmods)) {
      return InvalidArgumentError("submods has unknown submodule " + Quote(name) + ".");
    }
    const std::string path = "submods." + name;
    for (const TrustVectorMember& f : TrustVectorMembers()) {
      const std::optional<int>& v = sm.trust_vector.*f.member;
      if (v.has_value() && (*v < -128 || *v > 127)) {
        return InvalidArgumentError(path + "." + kVector + "." + f.name + " " +
                                    std::to_string(*v) + " is outside [-128, 127].");
      }
    }
    ArStatus worst = StatusOfVector(sm.trust_vector);
    if (Severity(sm.status) < Severity(worst)) {
      return InvalidArgumentError(path + "." + kStatus + " \"" +
                                  std::string(ArStatusName(sm.status)) +
                                  "\" is better than its vector's worst tier \"" +
                                  std::string(ArStatusName(worst)) + "\".");
    }
  }
  const DpuauditResult& d = ar.dpuaudit;
  if (d.node_id.empty()) return InvalidArgumentError("dpuaudit.node_id is empty.");
  for (size_t i = 0; i < d.reasons.size(); ++i) {
    const DecisionReason& r = d.reasons[i];
    const std::string path = Index("dpuaudit.reasons", i);
    if (r.rule_id.empty()) return InvalidArgumentError(path + ".rule_id is empty.");
    if (!r.action.empty() && r.action != kActionDeny && r.action != kActionWarn) {
      return InvalidArgumentError(path + ".action " + Quote(r.action) + " is not deny|warn.");
    }
    if (r.remediation.size() > kMaxRemediationBytes) {
      return InvalidArgumentError(path + ".remediation must be 1-" +
                                  std::to_string(kMaxRemediationBytes) + " bytes.");
    }
  }
  DPA_RETURN_IF_ERROR(CheckHex64(d.report_sha256, "dpuaudit.report_sha256"));
  if (d.policy.name.empty()) return InvalidArgumentError("dpuaudit.policy.name is empty.");
  DPA_RETURN_IF_ERROR(CheckHex64(d.policy.sha256, "dpuaudit.policy.sha256"));
  if (!d.collateral.empty()) {
    const std::string base = "dpuaudit.collateral";
    DPA_RETURN_IF_ERROR(CheckHex64(d.collateral.refvals_sha256, base + ".refvals.sha256"));
    for (size_t i = 0; i < d.collateral.matched.size(); ++i) {
      const MatchedRelease& mr = d.collateral.matched[i];
      const std::string path = Index(base + ".refvals.matched", i);
      if (mr.release.empty() || mr.release.size() > 128) {
        return InvalidArgumentError(path + ".release must be 1-128 bytes.");
      }
      DPA_RETURN_IF_ERROR(CheckHex64(mr.sha256, path + ".sha256"));
    }
    for (size_t i = 0; i < d.collateral.trust_anchors.size(); ++i) {
      const CollateralRef& ref = d.collateral.trust_anchors[i];
      const std::string path = Index(base + ".trust_anchors", i);
      if (ref.set != "ek-ca" && ref.set != "dice-roots") {
        return InvalidArgumentError(path + ".set " + Quote(ref.set) +
                                    " is not ek-ca|dice-roots.");
      }
      DPA_RETURN_IF_ERROR(CheckHex64(ref.sha256, path + ".sha256"));
    }
  }
  if (d.decision == Decision::kAdmit) {
    for (const auto& [name, sm] : ar.submods) {
      if (sm.status == ArStatus::kContraindicated) {
        return InvalidArgumentError("dpuaudit.decision \"admit\" contradicts submods." + name +
                                    ".ear.status \"contraindicated\".");
      }
    }
  }
  return OkStatus();
}

StatusOr<std::string> SignEar(const AttestationResult& ar, const Signer& signer,
                              const std::string& kid) {
  // ValidateEar on the value, not ParseEar on its serialisation: the same
  // rules (ear_test checks they agree), without a second parse per result.
  Status valid = ValidateEar(ar);
  if (!valid.ok()) return valid.WithPrefix("refusing to sign an invalid EAR");
  std::string payload = SerializeEar(ar);
  if (payload.size() > kMaxEarBytes) {
    return ResourceExhaustedError("refusing to sign an invalid EAR: " +
                                  std::to_string(payload.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(kMaxEarBytes) + " bytes.");
  }
  JwsHeader header;
  header.kid = kid;
  header.typ = "JWT";
  return SignCompact(AsBytes(payload), signer, header);
}

StatusOr<AttestationResult> VerifyEar(std::string_view jwt,
                                      const Verifier& verifier,
                                      const Clock& clock, bool allow_expired) {
  // 1. Signature, over the compact form only (a JWT is compact, RFC 7519 §1).
  size_t first = jwt.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && jwt[first] == '{') {
    return InvalidArgumentError("EAR must be a compact JWT, not JWS JSON.");
  }
  DPA_ASSIGN_OR_RETURN(VerifiedJws verified,
                       VerifyJws(jwt, verifier, kAlgEs256, kMaxEarBytes));
  if (verified.typ() != "JWT") {
    return InvalidArgumentError("EAR typ " + Quote(verified.typ()) +
                                " is not \"JWT\".");
  }
  // 2. Parse, only now that the bytes are authentic.
  DPA_ASSIGN_OR_RETURN(AttestationResult ar, ParseEar(verified.payload()));
  // 3. Expiry (RFC 7519 §4.1.4: not accepted on or after exp).
  int64_t now = clock.NowUnixSeconds();
  if (!allow_expired && now >= ar.exp) {
    return DeadlineExceededError("EAR expired at " + std::to_string(ar.exp) +
                                 ", now " + std::to_string(now) + ".");
  }
  return ar;
}

}  // namespace dpuaudit::report
