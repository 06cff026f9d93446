#include "verifier/service.h"

#include <set>

#include "device/evidence.h"
#include "isolation/probes.h"
#include "report/claims.h"
#include "report/jws.h"

namespace dpuaudit::verifier {
namespace {

constexpr int64_t kMaxClockSkewSeconds = 300;
constexpr size_t kMaxRequestBytes = 64 * 1024;

// AR4SI values we assign (draft-ietf-rats-ar4si §2.3): 2 affirming, 32
// warning, 96 contraindicated.
constexpr int kAffirming = 2;
constexpr int kWarning = 32;
constexpr int kContraindicated = 96;

Status ValidateNodeId(const std::string& id) {
  if (id.empty() || id.size() > report::kMaxNodeIdChars) {
    return InvalidArgumentError("node_id must be 1-128 characters.");
  }
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' &&
        c != '-') {
      return InvalidArgumentError("node_id \"" + id +
                                  "\" may only use [A-Za-z0-9._-].");
    }
  }
  return OkStatus();
}

// Parses a small JSON request object with exactly the given members.
StatusOr<nlohmann::json> ParseRequest(std::string_view body,
                                      const std::set<std::string>& required) {
  if (body.size() > kMaxRequestBytes) {
    return ResourceExhaustedError("request body exceeds " +
                                  std::to_string(kMaxRequestBytes) + " bytes.");
  }
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("request body is not valid JSON.");
  if (!j.is_object()) return InvalidArgumentError("request body must be a JSON object.");
  for (const auto& [k, v] : j.items()) {
    if (!required.count(k)) {
      return InvalidArgumentError("request member \"" + k + "\" is not allowed.");
    }
  }
  for (const auto& k : required) {
    if (!j.contains(k)) return InvalidArgumentError("request member \"" + k + "\" is missing.");
  }
  return j;
}

StatusOr<std::string> StringMember(const nlohmann::json& j, const std::string& k) {
  if (!j[k].is_string()) return InvalidArgumentError("\"" + k + "\" must be a string.");
  return j[k].get<std::string>();
}

Status NodeMayAttest(const NodeRecord& n) {
  switch (n.state) {
    case NodeState::kApproved:
      return OkStatus();
    case NodeState::kPending:
      return FailedPreconditionError("node " + n.node_id +
                                     " is pending operator approval (dpuaudit-verifier "
                                     "approve " + n.node_id + ").");
    case NodeState::kRevoked:
      return PermissionDeniedError("node " + n.node_id + " is revoked.");
  }
  return InternalError("bad node state.");
}

report::ClaimTier ToClaimTier(Tier t) {
  switch (t) {
    case Tier::kHardwareRooted: return report::ClaimTier::kHardwareRooted;
    case Tier::kCorroborated: return report::ClaimTier::kCorroborated;
    case Tier::kSelfReported: return report::ClaimTier::kSelfReported;
  }
  return report::ClaimTier::kSelfReported;
}

nlohmann::json ReasonsJson(const std::vector<report::DecisionReason>& reasons) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : reasons) {
    a.push_back({{"rule_id", r.rule_id},
                 {"verdict", VerdictName(r.verdict)},
                 {"expected", r.expected},
                 {"observed", r.observed},
                 {"source", r.source},
                 {"reason", r.reason},
                 {"tier", report::ClaimTierName(r.tier)}});
  }
  return a;
}

std::string Describe(const Finding& f) {
  std::string s(VerdictName(f.verdict));
  if (!f.observed.empty()) s += " (" + f.observed + ")";
  return s;
}

}  // namespace

std::vector<RuleSpec> KnownRules() {
  std::vector<RuleSpec> rules;
  for (const auto& p : isolation::ProbeCatalogue()) {
    RuleSpec spec;
    spec.id = std::string(p.id);
    for (auto v : p.values) spec.allowed_values.emplace_back(v);
    rules.push_back(std::move(spec));
  }
  return rules;
}

StatusOr<std::unique_ptr<VerifierService>> VerifierService::New(
    std::unique_ptr<Store> store, Policy policy, EcPrivateKey signing_key,
    const Clock& clock, ServiceOptions options) {
  if (!store) return InvalidArgumentError("no store.");
  DPA_ASSIGN_OR_RETURN(auto signer, Es256Signer::New(signing_key));
  DPA_ASSIGN_OR_RETURN(NonceService probe_nonces,
                       NonceService::New(*store, clock, options.nonce_ttl_seconds));
  (void)probe_nonces;  // validated the ttl; the member is built below
  return std::unique_ptr<VerifierService>(new VerifierService(
      std::move(store), std::move(policy), std::move(signing_key),
      std::move(signer), clock, std::move(options)));
}

VerifierService::VerifierService(std::unique_ptr<Store> store, Policy policy,
                                 EcPrivateKey key, std::unique_ptr<Signer> signer,
                                 const Clock& clock, ServiceOptions options)
    : store_(std::move(store)),
      policy_(std::move(policy)),
      key_(std::move(key)),
      signer_(std::move(signer)),
      kid_(key_.public_key().Thumbprint()),
      clock_(clock),
      options_(std::move(options)),
      nonces_(*NonceService::New(*store_, clock_, options_.nonce_ttl_seconds)) {}

nlohmann::json VerifierService::Jwks() const {
  return report::Jwks({report::NamedKey{kid_, key_.public_key()}});
}

StatusOr<EnrollResult> VerifierService::Enroll(std::string_view body,
                                               std::optional<std::string> bearer) {
  // The token is checked before anything else is looked at, so a wrong
  // token never creates or changes a node.
  bool approved_by_token = false;
  if (bearer.has_value()) {
    if (options_.bootstrap_token.empty()) {
      return UnauthenticatedError("bootstrap tokens are not enabled on this verifier.");
    }
    if (!ConstantTimeEquals(AsBytes(*bearer), AsBytes(options_.bootstrap_token))) {
      return UnauthenticatedError("bootstrap token is not valid.");
    }
    approved_by_token = true;
  }
  DPA_ASSIGN_OR_RETURN(nlohmann::json req, ParseRequest(body, {"node_id", "public_key"}));
  DPA_ASSIGN_OR_RETURN(std::string node_id, StringMember(req, "node_id"));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  auto key = report::ParsePublicJwk(req["public_key"]);
  if (!key.ok()) return key.status().WithPrefix("public_key");

  NodeRecord record;
  record.node_id = node_id;
  record.public_key_pem = key->ToPem();
  record.key_thumbprint = key->Thumbprint();
  record.alg = "ES256";
  record.state = NodeState::kPending;
  record.enrolled_at = clock_.NowUnixSeconds();

  EnrollResult result;
  auto existing = store_->GetNode(node_id);
  result.created = !existing.ok();
  if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
    return existing.status();
  }
  DPA_ASSIGN_OR_RETURN(result.node, store_->CreateNode(record));
  if (approved_by_token && result.node.state == NodeState::kPending) {
    DPA_ASSIGN_OR_RETURN(result.node, store_->ApproveNode(node_id, clock_.NowUnixSeconds()));
  }
  return result;
}

Status VerifierService::Approve(const std::string& node_id) {
  return store_->ApproveNode(node_id, clock_.NowUnixSeconds()).status();
}

StatusOr<Challenge> VerifierService::IssueChallenge(std::string_view body) {
  DPA_ASSIGN_OR_RETURN(nlohmann::json req, ParseRequest(body, {"node_id"}));
  DPA_ASSIGN_OR_RETURN(std::string node_id, StringMember(req, "node_id"));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(NodeRecord node, store_->GetNode(node_id));
  DPA_RETURN_IF_ERROR(NodeMayAttest(node));
  DPA_ASSIGN_OR_RETURN(IssuedNonce n, nonces_.Issue(node_id));
  return Challenge{n.nonce, n.expires_at};
}

StatusOr<std::shared_ptr<const Verifier>> VerifierService::NodeVerifier(
    const NodeRecord& n) {
  std::string cache_key = n.node_id + "/" + n.key_thumbprint;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = verifier_cache_.find(cache_key);
    if (it != verifier_cache_.end()) return it->second;
  }
  if (n.alg != report::kAlgEs256) {
    return UnauthenticatedError("node " + n.node_id + " is enrolled with unsupported alg " +
                                n.alg + ".");
  }
  DPA_ASSIGN_OR_RETURN(EcPublicKey key, EcPublicKey::FromPem(n.public_key_pem));
  if (key.Thumbprint() != n.key_thumbprint) {
    return DataLossError("stored key of node " + n.node_id +
                         " does not match its thumbprint.");
  }
  DPA_ASSIGN_OR_RETURN(auto v, Es256Verifier::New(key));
  std::shared_ptr<const Verifier> shared(std::move(v));
  std::lock_guard<std::mutex> lock(cache_mu_);
  verifier_cache_[cache_key] = shared;
  return shared;
}

StatusOr<AppraisalOutcome> VerifierService::SubmitReport(std::string_view jws) {
  std::string node_id;
  auto outcome = Appraise(jws, &node_id);
  if (!outcome.ok() && !node_id.empty()) {
    // Keep the attempt for auditors; the report bytes are bounded by the
    // size check, which runs before a node id is known.
    ReportRecord rejected;
    rejected.node_id = node_id;
    rejected.jws = std::string(jws);
    rejected.sha256 = Sha256Hex(AsBytes(jws));
    rejected.received_at = clock_.NowUnixSeconds();
    rejected.accepted = false;
    rejected.error = outcome.status().ToString();
    (void)store_->InsertReport(rejected);
  }
  return outcome;
}

StatusOr<AppraisalOutcome> VerifierService::Appraise(std::string_view jws,
                                                     std::string* node_out) {
  if (jws.size() > options_.max_report_bytes) {
    return ResourceExhaustedError("report of " + std::to_string(jws.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(options_.max_report_bytes) + ".");
  }
  // Routing only: the kid names the node whose pinned key must verify it.
  DPA_ASSIGN_OR_RETURN(report::UnverifiedJwsHeader header,
                       report::PeekUnverifiedHeader(jws, options_.max_report_bytes));
  if (header.kid.empty()) {
    return UnauthenticatedError("report JWS header has no kid (the node id).");
  }
  auto node = store_->GetNode(header.kid);
  if (!node.ok()) {
    if (node.status().code() == StatusCode::kNotFound) {
      return NotFoundError("report is signed as node \"" + header.kid +
                           "\", which is not enrolled.");
    }
    return node.status();
  }
  *node_out = node->node_id;
  DPA_RETURN_IF_ERROR(NodeMayAttest(*node));
  DPA_ASSIGN_OR_RETURN(std::shared_ptr<const Verifier> verifier, NodeVerifier(*node));

  // Signature over the received bytes first; claims are parsed only after.
  DPA_ASSIGN_OR_RETURN(report::VerifiedReport verified,
                       report::VerifyReport(jws, *verifier, options_.max_report_bytes));
  const report::ReportClaims& claims = verified.claims;
  if (claims.node_id != node->node_id) {
    return PermissionDeniedError("report claims node_id \"" + claims.node_id +
                                 "\" but is signed by the key of node \"" +
                                 node->node_id + "\".");
  }
  int64_t now = clock_.NowUnixSeconds();
  if (claims.issued_at > now + kMaxClockSkewSeconds) {
    return InvalidArgumentError("issued_at " + std::to_string(claims.issued_at) +
                                " is more than " + std::to_string(kMaxClockSkewSeconds) +
                                " s in the future (verifier time " +
                                std::to_string(now) + ").");
  }
  DPA_RETURN_IF_ERROR(nonces_.Consume(claims.nonce, node->node_id));

  // Re-derive every finding from the raw evidence with the agent's probes.
  DPA_ASSIGN_OR_RETURN(auto evidence_source,
                       device::NewEvidenceDeviceSource(claims.evidence));
  std::vector<Finding> findings = isolation::RunProbes(*evidence_source);

  std::vector<report::DecisionReason> reasons;
  PolicyOutcome policy_outcome = policy_.Evaluate(findings);
  bool any_warn = false;
  for (const auto& r : policy_outcome.results) {
    if (r.verdict != Verdict::kPass && r.action == RuleAction::kWarn) any_warn = true;
    reasons.push_back({r.rule_id, r.verdict, r.expected, r.observed, r.source, r.reason,
                       ToClaimTier(r.tier)});
  }
  // The agent's own verdicts are advisory: a disagreement is itself reported.
  std::map<std::string, const Finding*> agent;
  for (const auto& f : claims.findings) agent[f.id] = &f;
  int mismatches = 0;
  for (const auto& f : findings) {
    auto it = agent.find(f.id);
    if (it != agent.end() && it->second->verdict == f.verdict &&
        it->second->observed == f.observed) {
      continue;
    }
    ++mismatches;
    reasons.push_back(
        {"agent.consistency", Verdict::kFail,
         "verifier: " + Describe(f),
         it == agent.end() ? "agent: (no finding)" : "agent: " + Describe(*it->second),
         f.source,
         "the agent's advisory finding for " + f.id +
             " differs from the verifier's re-derivation from the raw evidence; "
             "the verifier's is used",
         report::ClaimTier::kSelfReported});
  }

  report::AttestationResult ar;
  ar.iat = now;
  ar.exp = now + policy_.decision_ttl_seconds();
  ar.nonce = claims.nonce;
  ar.verifier_id = {"dpuaudit", options_.verifier_build};
  std::string policy_id = "policy:" + policy_.name() + "@sha256:" + policy_.sha256();

  report::Submod agent_submod;
  agent_submod.trust_vector.instance_identity = kAffirming;
  agent_submod.trust_vector.configuration = mismatches == 0 ? kAffirming : kWarning;
  agent_submod.status = report::StatusOfVector(agent_submod.trust_vector);
  agent_submod.appraisal_policy_id = policy_id;
  ar.submods[std::string(report::kSubmodArmAgent)] = agent_submod;

  report::Submod posture;
  posture.trust_vector.configuration =
      policy_outcome.decision == Decision::kDeny ? kContraindicated
      : any_warn                                 ? kWarning
                                                 : kAffirming;
  posture.status = report::StatusOfVector(posture.trust_vector);
  posture.appraisal_policy_id = policy_id;
  ar.submods[std::string(report::kSubmodPosture)] = posture;

  bool contraindicated = false;
  for (const auto& [name, s] : ar.submods) {
    contraindicated = contraindicated || s.status == report::ArStatus::kContraindicated;
  }
  ar.dpuaudit.node_id = node->node_id;
  ar.dpuaudit.decision = policy_outcome.decision == Decision::kAdmit && !contraindicated
                             ? report::Decision::kAdmit
                             : report::Decision::kDeny;
  ar.dpuaudit.reasons = std::move(reasons);
  ar.dpuaudit.report_sha256 = verified.jws_sha256;
  ar.dpuaudit.policy = {policy_.name(), policy_.sha256()};

  DPA_ASSIGN_OR_RETURN(std::string jwt, report::SignEar(ar, *signer_, kid_));

  ReportRecord rec;
  rec.node_id = node->node_id;
  rec.jws = std::string(jws);
  rec.sha256 = verified.jws_sha256;
  rec.received_at = now;
  rec.accepted = true;
  ResultRecord result;
  result.node_id = node->node_id;
  result.decision = std::string(report::DecisionName(ar.dpuaudit.decision));
  result.ear_jwt = jwt;
  result.reasons_json = ReasonsJson(ar.dpuaudit.reasons).dump();
  result.report_jws_sha256 = verified.jws_sha256;
  result.created_at = now;
  result.expires_at = ar.exp;
  DPA_RETURN_IF_ERROR(store_->InsertResult(result, rec).status());
  return AppraisalOutcome{std::move(jwt), std::move(ar)};
}

StatusOr<nlohmann::json> VerifierService::NodeView(const std::string& node_id) {
  DPA_ASSIGN_OR_RETURN(NodeRecord n, store_->GetNode(node_id));
  DPA_ASSIGN_OR_RETURN(EcPublicKey key, EcPublicKey::FromPem(n.public_key_pem));
  nlohmann::json j = {{"node_id", n.node_id},
                      {"state", NodeStateName(n.state)},
                      {"alg", n.alg},
                      {"key_thumbprint", n.key_thumbprint},
                      {"public_key", report::PublicJwk(key, n.key_thumbprint)},
                      {"enrolled_at", n.enrolled_at}};
  if (n.approved_at) j["approved_at"] = *n.approved_at;
  auto latest = store_->LatestResult(node_id);
  if (latest.ok()) {
    nlohmann::json reasons = nlohmann::json::parse(latest->reasons_json, nullptr, false);
    j["latest"] = {{"decision", latest->decision},
                   {"created_at", latest->created_at},
                   {"expires_at", latest->expires_at},
                   {"expired", clock_.NowUnixSeconds() >= latest->expires_at},
                   {"reasons", reasons.is_discarded() ? nlohmann::json::array() : reasons},
                   {"report_sha256", latest->report_jws_sha256},
                   {"ear", latest->ear_jwt}};
  } else if (latest.status().code() != StatusCode::kNotFound) {
    return latest.status();
  } else {
    j["latest"] = nullptr;
  }
  return j;
}

StatusOr<Admission> VerifierService::GetAdmission(const std::string& node_id) {
  DPA_ASSIGN_OR_RETURN(NodeRecord n, store_->GetNode(node_id));
  Admission a;
  a.node_id = node_id;
  a.decision = "deny";
  if (Status s = NodeMayAttest(n); !s.ok()) {
    a.reason = s.message();
    return a;
  }
  auto latest = store_->LatestResult(node_id);
  if (!latest.ok()) {
    if (latest.status().code() != StatusCode::kNotFound) return latest.status();
    a.reason = "node " + node_id + " has no attestation result yet.";
    return a;
  }
  // Re-check our own signature: a row edited in the database must not admit.
  DPA_ASSIGN_OR_RETURN(auto self, Es256Verifier::New(key_.public_key()));
  auto ar = report::VerifyEar(latest->ear_jwt, *self, clock_, /*allow_expired=*/true);
  if (!ar.ok()) {
    return DataLossError("stored result for node " + node_id +
                         " does not verify: " + ar.status().message());
  }
  a.ear_jwt = latest->ear_jwt;
  a.expires_at = ar->exp;
  a.result = *ar;
  int64_t now = clock_.NowUnixSeconds();
  if (now >= ar->exp) {
    a.reason = "last decision expired at " + std::to_string(ar->exp) +
               "; the node has not attested since.";
    return a;
  }
  a.decision = std::string(report::DecisionName(ar->dpuaudit.decision));
  return a;
}

}  // namespace dpuaudit::verifier
