#include "verifier/service.h"

#include <set>

#include "attest/boot_chain.h"
#include "attest/boot_partitions.h"
#include "attest/credential.h"
#include "attest/firmware.h"
#include "attest/quote.h"
#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "device/run_tool.h"
#include "isolation/identity.h"
#include "isolation/probes.h"
#include "report/claims.h"
#include "report/json_internal.h"
#include "report/jws.h"
#include "report/tpm_claims.h"
#include "verifier/tpm_appraisal.h"

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
      return InvalidArgumentError("node_id " + report::internal::Quote(id) +
                                  " may only use [A-Za-z0-9._-].");
    }
  }
  // The id is a URL path segment (/v1/nodes/{id}): "." and ".." would be
  // removed as dot-segments (RFC 3986 §5.2.4) and name another resource.
  if (id == "." || id == "..") {
    return InvalidArgumentError("node_id " + report::internal::Quote(id) +
                                " is a URL dot-segment; use another id.");
  }
  return OkStatus();
}

// Parses a small JSON request object with exactly the given members.
StatusOr<nlohmann::json> ParseRequest(
    std::string_view body, const std::set<std::string>& required,
    const std::set<std::string>& optional = {}) {
  if (body.size() > kMaxRequestBytes) {
    return ResourceExhaustedError("request body exceeds " +
                                  std::to_string(kMaxRequestBytes) + " bytes.");
  }
  // Strict: invalid UTF-8, duplicate keys, trailing bytes and nesting deeper
  // than 64 are refused before any member is looked at.
  DPA_ASSIGN_OR_RETURN(nlohmann::json j, report::internal::ParseStrictJson(
                                             AsBytes(body), "request body"));
  if (!j.is_object())
    return InvalidArgumentError("request body must be a JSON object.");
  for (const auto& [k, v] : j.items()) {
    if (!required.count(k) && !optional.count(k)) {
      return InvalidArgumentError("request member \"" + k +
                                  "\" is not allowed.");
    }
  }
  for (const auto& k : required) {
    if (!j.contains(k))
      return InvalidArgumentError("request member \"" + k + "\" is missing.");
  }
  return j;
}

StatusOr<std::string> StringMember(const nlohmann::json& j,
                                   const std::string& k) {
  if (!j[k].is_string())
    return InvalidArgumentError("\"" + k + "\" must be a string.");
  return j[k].get<std::string>();
}

Status NodeMayAttest(const NodeRecord& n) {
  switch (n.state) {
    case NodeState::kApproved:
      return OkStatus();
    case NodeState::kPending:
      return FailedPreconditionError(
          "node " + n.node_id +
          " is pending operator approval (dpuaudit-verifier "
          "approve " +
          n.node_id + ").");
    case NodeState::kRevoked:
      return PermissionDeniedError("node " + n.node_id + " is revoked.");
  }
  return InternalError("bad node state.");
}

report::ClaimTier ToClaimTier(Tier t) {
  switch (t) {
    case Tier::kHardwareRooted:
      return report::ClaimTier::kHardwareRooted;
    case Tier::kCorroborated:
      return report::ClaimTier::kCorroborated;
    case Tier::kSelfReported:
      return report::ClaimTier::kSelfReported;
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

std::string Or(const std::string& s, const std::string& fallback) {
  return s.empty() ? fallback : s;
}

// The primary boot partition as the mlxbf-bootctl evidence shows it; "" when
// the evidence is missing or does not parse.
std::string RederivePrimary(const device::DeviceSource& evidence) {
  StatusOr<std::string> out =
      device::RunTool(evidence, device::MlxbfBootctlArgv());
  if (!out.ok()) return "";
  StatusOr<attest::BootctlInfo> info = attest::ParseMlxbfBootctl(*out);
  return info.ok() ? info->primary : "";
}

// What the reference-value appraisal needs, all re-derived from evidence
// except the digests, which come from the (parsed, well-formed) boot_chain.
FirmwareFacts BuildFacts(const device::DeviceSource& evidence,
                         const attest::BootChainInfo* boot,
                         const std::string& primary) {
  FirmwareFacts facts;
  isolation::ProbeContext ctx = isolation::ProbeContext::Discover(evidence);
  isolation::DeviceIdentity id = isolation::CollectIdentity(evidence, ctx);
  facts.model = CanonicalModel(id.model).value_or("");
  attest::FirmwareInfo fw =
      ctx.mst ? attest::CollectFirmware(evidence, ctx.mst->path)
              : attest::CollectFirmware(evidence);
  facts.psid = fw.psid.empty() ? id.psid : fw.psid;
  if (fw.bfver_status.ok()) {
    facts.atf = fw.bfver.atf_version;
    facts.uefi = fw.bfver.uefi_version;
    facts.bsp = fw.bfver.bsp_version;
    facts.os_release = fw.bfver.os_release;
  } else {
    facts.arm_error = fw.bfver_status.message();
  }
  facts.arm_source = fw.bfver_source;
  facts.nic_source = fw.nic_fw_source;
  if (fw.nic_fw_status.ok()) {
    facts.nic_fw = fw.nic_fw_version;
  } else {
    facts.nic_error = fw.nic_fw_status.message();
  }
  facts.boot_stream_source =
      primary.empty() ? "boot partitions" : "boot partition " + primary;
  if (boot == nullptr) {
    facts.boot_stream_error = "the report carries no boot_chain measurement";
    facts.os_error = facts.boot_stream_error;
  } else {
    const attest::PartitionMeasurement* m = nullptr;
    for (const auto& p : boot->partitions.partitions) {
      if (p.path == primary) m = &p;
    }
    if (primary.empty()) {
      facts.boot_stream_error = "the primary boot partition is unknown";
    } else if (m == nullptr) {
      facts.boot_stream_error = "the primary " + primary + " was not measured";
    } else if (!m->status.ok() || !m->layout) {
      facts.boot_stream_error = primary + ": " + m->status.message();
    } else {
      std::vector<FirmwareFacts::Image> images;
      for (const auto& img : m->layout->images) {
        images.push_back({img.name, img.sha384, img.offset});
      }
      facts.boot_stream = std::move(images);
    }
    std::vector<FirmwareFacts::Artefact> artefacts;
    for (const auto& a : boot->os.artefacts) {
      if (a.status.ok()) artefacts.push_back({a.role, a.path, a.sha384});
    }
    if (artefacts.empty()) {
      facts.os_error = "no OS boot artefact was measured";
    } else {
      facts.os_artefacts = std::move(artefacts);
    }
  }
  return facts;
}

// AR4SI "executables" from the reference-value findings (not upgrade_path):
// unset when none could be appraised.
std::optional<int> ExecutablesClaim(const std::vector<Finding>& ref_findings) {
  std::optional<int> worst;
  for (const Finding& f : ref_findings) {
    if (f.id == "refval.upgrade_path" || f.verdict == Verdict::kUnknown)
      continue;
    int v = f.observed == "active"     ? 2
            : f.observed == "obsolete" ? 32
            : f.observed == "revoked"  ? 96
                                       : 33;  // pending, expired, unmatched
    worst = worst ? std::max(*worst, v) : v;
  }
  return worst;
}

}  // namespace

StatusOr<std::shared_ptr<const RefIndex>> VerifierService::CurrentRefIndex() {
  DPA_ASSIGN_OR_RETURN(int64_t generation, store_->RefvalsGeneration());
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (ref_index_ && ref_generation_ == generation) return ref_index_;
  }
  DPA_ASSIGN_OR_RETURN(std::vector<RefRelease> releases,
                       store_->ListReleases(""));
  auto index = std::make_shared<const RefIndex>(std::move(releases));
  std::lock_guard<std::mutex> lock(cache_mu_);
  ref_index_ = index;
  ref_generation_ = generation;
  return index;
}

std::vector<RuleSpec> KnownRules() {
  std::vector<RuleSpec> rules;
  for (const auto& p : isolation::ProbeCatalogue()) {
    RuleSpec spec;
    spec.id = std::string(p.id);
    for (auto v : p.values) spec.allowed_values.emplace_back(v);
    spec.version_component = std::string(isolation::VersionComponent(p.id));
    rules.push_back(std::move(spec));
  }
  rules.push_back(
      {std::string(attest::kBootStreamIntegrityId), {"intact", "corrupt"}, ""});
  for (RuleSpec& spec : TpmRuleSpecs()) rules.push_back(std::move(spec));
  for (std::string_view id : RefRuleIds()) {
    RuleSpec spec;
    spec.id = std::string(id);
    if (id == "refval.upgrade_path") {
      spec.allowed_values = {"unchanged", "first-seen", "allowed",
                             "not-allowed"};
    } else {
      for (std::string_view v : kRefObservedValues)
        spec.allowed_values.emplace_back(v);
    }
    rules.push_back(std::move(spec));
  }
  return rules;
}

StatusOr<std::unique_ptr<VerifierService>> VerifierService::New(
    std::unique_ptr<Store> store, Policy policy, EcPrivateKey signing_key,
    const Clock& clock, ServiceOptions options) {
  if (!store) return InvalidArgumentError("no store.");
  DPA_ASSIGN_OR_RETURN(auto signer, Es256Signer::New(signing_key));
  DPA_ASSIGN_OR_RETURN(
      NonceService probe_nonces,
      NonceService::New(*store, clock, options.nonce_ttl_seconds));
  (void)probe_nonces;  // validated the ttl; the member is built below
  return std::unique_ptr<VerifierService>(new VerifierService(
      std::move(store), std::move(policy), std::move(signing_key),
      std::move(signer), clock, std::move(options)));
}

VerifierService::VerifierService(std::unique_ptr<Store> store, Policy policy,
                                 EcPrivateKey key,
                                 std::unique_ptr<Signer> signer,
                                 const Clock& clock, ServiceOptions options)
    : store_(std::move(store)),
      policy_(std::move(policy)),
      key_(std::move(key)),
      signer_(std::move(signer)),
      kid_(key_.public_key().Thumbprint()),
      clock_(clock),
      options_(std::move(options)),
      nonces_(*NonceService::New(*store_, clock_, options_.nonce_ttl_seconds)),
      challenge_limit_("challenges", options_.challenges_per_minute, clock_),
      report_limit_("reports", options_.reports_per_minute, clock_),
      unauthenticated_work_(
          "expensive checks of enrollments without a token",
          WorkBudgetOptions{options_.unauthenticated_cpu_ms_per_second,
                            options_.unauthenticated_max_concurrent, {}}) {}

nlohmann::json VerifierService::Jwks() const {
  return report::Jwks({report::NamedKey{kid_, key_.public_key()}});
}

StatusOr<EnrollResult> VerifierService::Enroll(
    std::string_view body, std::optional<std::string> bearer) {
  // The token is checked before anything else is looked at, so a wrong
  // token never creates or changes a node.
  bool approved_by_token = false;
  if (bearer.has_value()) {
    if (options_.bootstrap_token.empty()) {
      return UnauthenticatedError(
          "bootstrap tokens are not enabled on this verifier.");
    }
    if (!ConstantTimeEquals(AsBytes(*bearer),
                            AsBytes(options_.bootstrap_token))) {
      return UnauthenticatedError("bootstrap token is not valid.");
    }
    approved_by_token = true;
  }
  DPA_ASSIGN_OR_RETURN(nlohmann::json req,
                       ParseRequest(body, {"node_id", "public_key"}, {"tpm"}));
  DPA_ASSIGN_OR_RETURN(std::string node_id, StringMember(req, "node_id"));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  auto key = report::ParsePublicJwk(req["public_key"]);
  if (!key.ok()) return key.status().WithPrefix("public_key");
  // The TPM is checked (and the credential made) before anything is stored.
  std::optional<CheckedTpmEnrollment> tpm;
  std::optional<TpmBinding> binding;
  std::optional<TpmChallenge> tpm_challenge;
  if (req.contains("tpm")) {
    // Without a token nobody vouched for the request: its expensive checks
    // (RSA compositeness) share the process-wide unauthenticated budget.
    DPA_ASSIGN_OR_RETURN(
        tpm, CheckTpmEnrollment(req["tpm"], policy_.tpm(), options_.ek_ca_dir,
                                clock_.NowUnixSeconds(),
                                approved_by_token ? nullptr
                                                  : &unauthenticated_work_));
    DPA_ASSIGN_OR_RETURN(Bytes credential, RandomBytes(32));
    DPA_ASSIGN_OR_RETURN(
        attest::MadeCredential made,
        attest::MakeCredential(tpm->ek, credential, tpm->ak.name()));
    int64_t now = clock_.NowUnixSeconds();
    TpmBinding b;
    b.node_id = node_id;
    b.ek_public_b64 = Base64Encode(tpm->ek.marshalled());
    b.ek_sha256 = Sha256Hex(tpm->ek.name());
    b.ek_cert_pem = tpm->ek_cert_pem;
    b.ek_cert_issuer = tpm->ek_cert_issuer;
    b.ak_public_b64 = Base64Encode(tpm->ak.marshalled());
    b.ak_name_hex = tpm->ak.name_hex();
    b.state = TpmBindingState::kPending;
    b.credential_sha256 = Sha256Hex(credential);
    b.created_at = now;
    b.challenge_expires_at = now + options_.tpm_challenge_ttl_seconds;
    binding = std::move(b);
    tpm_challenge = TpmChallenge{
        Base64Encode(made.credential_blob), Base64Encode(made.encrypted_secret),
        tpm->ak.name_hex(), binding->challenge_expires_at};
  }

  NodeRecord record;
  record.node_id = node_id;
  record.public_key_pem = key->ToPem();
  record.key_thumbprint = key->Thumbprint();
  record.alg = "ES256";
  record.state = NodeState::kPending;
  record.enrolled_at = clock_.NowUnixSeconds();
  if (approved_by_token) {
    // Stored approved in the same write as the node (and its TPM binding),
    // so a failed write cannot leave a half-done enrollment.
    record.state = NodeState::kApproved;
    record.approved_at = record.enrolled_at;
  }

  EnrollResult result;
  auto existing = store_->GetNode(node_id);
  result.created = !existing.ok();
  if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
    return existing.status();
  }
  if (!binding) {
    DPA_ASSIGN_OR_RETURN(result.node, store_->CreateNode(record));
    if (approved_by_token && result.node.state == NodeState::kPending) {
      DPA_ASSIGN_OR_RETURN(
          result.node, store_->ApproveNode(node_id, clock_.NowUnixSeconds()));
    }
    return result;
  }
  // Node, TPM binding and (with the token) approval in one transaction: a
  // refused binding (the EK is bound to another node) or a failed write
  // (disk full) stores nothing, so no node is left without the TPM it
  // enrolled with for an operator to approve. Without the token nobody
  // vouched for this request (a node's public key is public), so the store
  // refuses, in the same transaction, to replace or re-challenge the TPM of
  // a node that exists, or to add one to an approved node: otherwise an
  // outsider could bind their own TPM to it and have its reports denied.
  std::optional<int64_t> approve_at;
  if (approved_by_token) approve_at = record.enrolled_at;
  DPA_ASSIGN_OR_RETURN(result.node,
                       store_->CreateNodeWithTpmBinding(
                           record, *binding, approve_at,
                           approved_by_token ? EnrollAuthority::kBootstrapToken
                                             : EnrollAuthority::kNone));
  DPA_ASSIGN_OR_RETURN(TpmBinding stored, store_->GetTpmBinding(node_id));
  result.tpm_state = std::string(TpmBindingStateName(stored.state));
  // The challenge is returned only for the binding this request stored.
  if (stored.state == TpmBindingState::kPending &&
      stored.credential_sha256 == binding->credential_sha256) {
    result.tpm_challenge = tpm_challenge;
  }
  return result;
}

StatusOr<TpmBinding> VerifierService::ActivateTpm(const std::string& node_id,
                                                  std::string_view body) {
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(nlohmann::json req,
                       ParseRequest(body, {"credential_b64"}));
  DPA_ASSIGN_OR_RETURN(std::string b64, StringMember(req, "credential_b64"));
  StatusOr<Bytes> credential = Base64Decode(b64);
  if (!credential.ok()) return credential.status().WithPrefix("credential_b64");
  if (credential->empty() || credential->size() > 64) {
    return InvalidArgumentError("credential_b64 must decode to 1-64 bytes.");
  }
  return store_->ActivateTpmBinding(node_id, Sha256Hex(*credential),
                                    clock_.NowUnixSeconds());
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
  DPA_RETURN_IF_ERROR(challenge_limit_.Take(node_id));
  DPA_ASSIGN_OR_RETURN(IssuedNonce n, nonces_.Issue(node_id));
  return Challenge{n.nonce, n.expires_at,
                   policy_.tpm().pcr_selection.ToString()};
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
    return UnauthenticatedError("node " + n.node_id +
                                " is enrolled with unsupported alg " + n.alg +
                                ".");
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
  bool authenticated = false;
  auto outcome = Appraise(jws, &node_id, &authenticated);
  if (!outcome.ok() && authenticated &&
      outcome.status().code() != StatusCode::kRateLimited) {
    // Keep the node's own refused attempt (replayed nonce, wrong node id,
    // malformed claims) for auditors. Unauthenticated bytes are never
    // stored: anyone could send them, so storing them would let anyone grow
    // the store; the access log records the refusal instead.
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
                                                     std::string* node_out,
                                                     bool* authenticated) {
  if (jws.size() > options_.max_report_bytes) {
    return ResourceExhaustedError("report of " + std::to_string(jws.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(options_.max_report_bytes) +
                                  ".");
  }
  // Routing only: the kid names the node whose pinned key must verify it.
  DPA_ASSIGN_OR_RETURN(
      report::UnverifiedJwsHeader header,
      report::PeekUnverifiedHeader(jws, options_.max_report_bytes));
  if (header.kid.empty()) {
    return UnauthenticatedError("report JWS header has no kid (the node id).");
  }
  auto node = store_->GetNode(header.kid);
  if (!node.ok()) {
    if (node.status().code() == StatusCode::kNotFound) {
      return NotFoundError("report is signed as node " +
                           report::internal::Quote(header.kid) +
                           ", which is not enrolled.");
    }
    return node.status();
  }
  *node_out = node->node_id;
  DPA_RETURN_IF_ERROR(NodeMayAttest(*node));
  DPA_ASSIGN_OR_RETURN(std::shared_ptr<const Verifier> verifier,
                       NodeVerifier(*node));

  // Signature over the received bytes first; claims are parsed only after.
  DPA_ASSIGN_OR_RETURN(
      report::VerifiedReport verified,
      report::VerifyReport(jws, *verifier, options_.max_report_bytes));
  *authenticated = true;
  DPA_RETURN_IF_ERROR(report_limit_.Take(node->node_id));
  const report::ReportClaims& claims = verified.claims;
  if (claims.node_id != node->node_id) {
    return PermissionDeniedError("report claims node_id \"" + claims.node_id +
                                 "\" but is signed by the key of node \"" +
                                 node->node_id + "\".");
  }
  int64_t now = clock_.NowUnixSeconds();
  if (claims.issued_at > now + kMaxClockSkewSeconds) {
    return InvalidArgumentError(
        "issued_at " + std::to_string(claims.issued_at) + " is more than " +
        std::to_string(kMaxClockSkewSeconds) +
        " s in the future (verifier time " + std::to_string(now) + ").");
  }
  // The boot chain is agent-measured (digests of partitions and files too
  // large to carry); it must still be well-formed, or the report is refused.
  std::optional<attest::BootChainInfo> boot;
  if (!claims.boot_chain.empty()) {
    StatusOr<attest::BootChainInfo> parsed =
        attest::ParseBootChainJson(claims.boot_chain);
    if (!parsed.ok()) return parsed.status().WithPrefix("report");
    boot = std::move(parsed).value();
  }
  std::optional<report::TpmClaims> tpm_claims;
  if (claims.tpm) {
    StatusOr<report::TpmClaims> parsed = report::ParseTpmClaims(*claims.tpm);
    if (!parsed.ok()) return parsed.status().WithPrefix("report");
    tpm_claims = std::move(parsed).value();
  }
  // A report cannot predate its challenge: issued_at before the nonce was
  // issued (beyond the clock skew allowed) is refused with the nonce unspent.
  DPA_ASSIGN_OR_RETURN(int64_t nonce_issued_at,
                       nonces_.IssuedAt(claims.nonce, node->node_id));
  if (claims.issued_at < nonce_issued_at - kMaxClockSkewSeconds) {
    return InvalidArgumentError(
        "issued_at " + std::to_string(claims.issued_at) + " is more than " +
        std::to_string(kMaxClockSkewSeconds) +
        " s before its nonce was issued (at " +
        std::to_string(nonce_issued_at) + ").");
  }
  // The nonce is spent at the end, in the transaction that stores the
  // result (Store::InsertResultSpendingNonce): a result that cannot be
  // stored (disk full, crash) leaves it unspent.

  // Re-derive every finding from the raw evidence with the agent's probes.
  DPA_ASSIGN_OR_RETURN(auto evidence_source,
                       device::NewEvidenceDeviceSource(claims.evidence));
  std::vector<Finding> findings = isolation::RunProbes(*evidence_source);
  std::vector<report::DecisionReason> consistency;
  // Which boot partition is primary comes from the mlxbf-bootctl evidence,
  // not from the agent's claim; a disagreement is reported.
  std::string primary = RederivePrimary(*evidence_source);
  if (boot) {
    if (boot->partitions.primary != primary) {
      consistency.push_back(
          {"agent.consistency", Verdict::kFail,
           "verifier: primary " + Or(primary, "unknown"),
           "agent: primary " + Or(boot->partitions.primary, "unknown"),
           "mlxbf-bootctl",
           "the boot_chain claims a different primary boot partition than the "
           "mlxbf-bootctl evidence shows; the evidence is used",
           report::ClaimTier::kSelfReported});
    }
    for (Finding& f : attest::BootChainFindings(*boot, primary))
      findings.push_back(std::move(f));
  } else {
    Finding f;
    f.id = std::string(attest::kBootStreamIntegrityId);
    f.expected = "intact";
    f.source = "report boot_chain";
    f.reason = "the report carries no boot_chain measurement";
    findings.push_back(std::move(f));
  }

  // The agent's own verdicts are advisory: a disagreement is itself reported.
  std::map<std::string, const Finding*> agent;
  for (const auto& f : claims.findings) agent[f.id] = &f;
  int mismatches = static_cast<int>(consistency.size());
  for (const auto& f : findings) {
    auto it = agent.find(f.id);
    if (it != agent.end() && it->second->verdict == f.verdict &&
        it->second->observed == f.observed) {
      continue;
    }
    ++mismatches;
    consistency.push_back(
        {"agent.consistency", Verdict::kFail, "verifier: " + Describe(f),
         it == agent.end() ? "agent: (no finding)"
                           : "agent: " + Describe(*it->second),
         f.source,
         "the agent's advisory finding for " + f.id +
             " differs from the verifier's re-derivation from the raw "
             "evidence; "
             "the verifier's is used",
         report::ClaimTier::kSelfReported});
  }

  // Reference values: the verifier's own appraisal (the agent has none).
  DPA_ASSIGN_OR_RETURN(std::shared_ptr<const RefIndex> refs, CurrentRefIndex());
  FirmwareFacts facts =
      BuildFacts(*evidence_source, boot ? &*boot : nullptr, primary);
  std::vector<Finding> ref_findings =
      AppraiseReferenceValues(facts, *refs, now);
  const std::string arm_release = MatchedArmRelease(facts, *refs, now);
  std::string previous_release;
  if (auto last = store_->LastNodeRelease(node->node_id, "arm"); last.ok()) {
    previous_release = *last;
  } else if (last.status().code() != StatusCode::kNotFound) {
    return last.status();
  }
  ref_findings.push_back(
      AppraiseUpgradePath(previous_release, arm_release, *refs));
  std::optional<int> executables = ExecutablesClaim(ref_findings);
  for (Finding& f : ref_findings) findings.push_back(std::move(f));

  // TPM evidence (issue 5): the eight ordered steps, for nodes bound to a
  // TPM, reports that carry a quote, or every node under applies_to
  // "all-nodes".
  EvaluationContext eval;
  std::optional<TpmBinding> binding;
  if (auto b = store_->GetTpmBinding(node->node_id); b.ok()) {
    binding = std::move(b).value();
  } else if (b.status().code() != StatusCode::kNotFound) {
    return b.status();
  }
  std::optional<report::Submod> tpm_submod;
  if (binding || tpm_claims || policy_.tpm().all_nodes) {
    DPA_ASSIGN_OR_RETURN(Bytes nonce_bytes, Base64UrlDecode(claims.nonce));
    TpmAppraisalInput in;
    in.binding = binding ? &*binding : nullptr;
    in.claims = tpm_claims ? &*tpm_claims : nullptr;
    in.expected_qualifying_data = attest::QualifyingData(
        nonce_bytes, AsBytes(report::SerializeClaimsWithoutTpm(claims)));
    in.policy = &policy_.tpm();
    in.refs = refs.get();
    in.model = facts.model;
    in.psid = facts.psid;
    in.bluefield = !facts.model.empty();
    in.now = now;
    TpmAppraisal tpm = AppraiseTpm(in);
    eval.tiers = std::move(tpm.tiers);
    for (Finding& f : tpm.findings) findings.push_back(std::move(f));
    tpm.submod.appraisal_policy_id =
        "policy:" + policy_.name() + "@sha256:" + policy_.sha256();
    tpm_submod = std::move(tpm.submod);
  } else {
    for (const RuleSpec& spec : TpmRuleSpecs())
      eval.not_applicable.insert(spec.id);
  }

  std::vector<report::DecisionReason> reasons;
  PolicyOutcome policy_outcome = policy_.Evaluate(findings, eval);
  bool any_warn = false;
  for (const auto& r : policy_outcome.results) {
    if (r.verdict != Verdict::kPass && r.action == RuleAction::kWarn)
      any_warn = true;
    reasons.push_back({r.rule_id, r.verdict, r.expected, r.observed, r.source,
                       r.reason, ToClaimTier(r.tier)});
  }
  for (auto& r : consistency) reasons.push_back(std::move(r));

  report::AttestationResult ar;
  ar.iat = now;
  ar.exp = now + policy_.decision_ttl_seconds();
  ar.nonce = claims.nonce;
  ar.verifier_id = {"dpuaudit", options_.verifier_build};
  std::string policy_id =
      "policy:" + policy_.name() + "@sha256:" + policy_.sha256();

  report::Submod agent_submod;
  agent_submod.trust_vector.instance_identity = kAffirming;
  agent_submod.trust_vector.configuration =
      mismatches == 0 ? kAffirming : kWarning;
  // AR4SI executables from the reference-value appraisal: 2 all approved,
  // 32 approved but obsolete, 33 unrecognised/not yet approved, 96 revoked.
  agent_submod.trust_vector.executables = executables;
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
  if (tpm_submod) ar.submods[std::string(report::kSubmodTpm)] = *tpm_submod;

  bool contraindicated = false;
  for (const auto& [name, s] : ar.submods) {
    contraindicated =
        contraindicated || s.status == report::ArStatus::kContraindicated;
  }
  ar.dpuaudit.node_id = node->node_id;
  ar.dpuaudit.decision =
      policy_outcome.decision == Decision::kAdmit && !contraindicated
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
  DPA_RETURN_IF_ERROR(store_
                          ->InsertResultSpendingNonce(result, rec, claims.nonce,
                                                      clock_.NowUnixSeconds())
                          .status());
  // Only an admitted node's release becomes the baseline for upgrade edges:
  // a denied downgrade must not become "unchanged" on the next report.
  // Unchanged releases are not rewritten (one fsync fewer per report).
  if (ar.dpuaudit.decision == report::Decision::kAdmit &&
      !arm_release.empty() && arm_release != previous_release) {
    DPA_RETURN_IF_ERROR(
        store_->RecordNodeRelease(node->node_id, "arm", arm_release, now));
  }
  return AppraisalOutcome{std::move(jwt), std::move(ar)};
}

StatusOr<nlohmann::json> VerifierService::NodeView(const std::string& node_id) {
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(NodeRecord n, store_->GetNode(node_id));
  DPA_ASSIGN_OR_RETURN(EcPublicKey key, EcPublicKey::FromPem(n.public_key_pem));
  nlohmann::json j = {{"node_id", n.node_id},
                      {"state", NodeStateName(n.state)},
                      {"alg", n.alg},
                      {"key_thumbprint", n.key_thumbprint},
                      {"public_key", report::PublicJwk(key, n.key_thumbprint)},
                      {"enrolled_at", n.enrolled_at}};
  if (n.approved_at) j["approved_at"] = *n.approved_at;
  if (auto b = store_->GetTpmBinding(node_id); b.ok()) {
    nlohmann::json t = {
        {"state", TpmBindingStateName(b->state)},
        {"ak_name", b->ak_name_hex},
        {"ak_public_b64", b->ak_public_b64},
        {"ek_sha256", b->ek_sha256},
        {"ek_certificate", b->ek_cert_pem.empty() ? "absent" : "trusted"},
        {"ek_cert_issuer", b->ek_cert_issuer}};
    if (b->activated_at) t["activated_at"] = *b->activated_at;
    j["tpm"] = std::move(t);
  } else if (b.status().code() != StatusCode::kNotFound) {
    return b.status();
  } else {
    j["tpm"] = nullptr;
  }
  auto latest = store_->LatestResult(node_id);
  if (latest.ok()) {
    nlohmann::json reasons =
        nlohmann::json::parse(latest->reasons_json, nullptr, false);
    j["latest"] = {
        {"decision", latest->decision},
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
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
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
  auto ar =
      report::VerifyEar(latest->ear_jwt, *self, clock_, /*allow_expired=*/true);
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

Status VerifierService::CheckAdmin(
    const std::optional<std::string>& bearer) const {
  if (options_.admin_token.empty()) {
    return PermissionDeniedError(
        "the admin API is disabled; start the verifier with "
        "--admin-token-file.");
  }
  if (!bearer ||
      !ConstantTimeEquals(AsBytes(*bearer), AsBytes(options_.admin_token))) {
    return UnauthenticatedError("admin API: missing or wrong bearer token.");
  }
  return OkStatus();
}

StatusOr<nlohmann::json> VerifierService::ImportRefvals(
    std::string_view body, std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  if (body.size() > options_.max_refvals_bytes) {
    return ResourceExhaustedError(
        "reference-value manifest of " + std::to_string(body.size()) +
        " bytes exceeds " + std::to_string(options_.max_refvals_bytes) + ".");
  }
  DPA_ASSIGN_OR_RETURN(std::vector<RefRelease> releases,
                       ParseRefManifest(body, clock_.NowUnixSeconds()));
  DPA_RETURN_IF_ERROR(store_->PutReleases(releases));
  nlohmann::json names = nlohmann::json::array();
  for (const auto& r : releases) names.push_back(r.release);
  return nlohmann::json{{"imported", names}};
}

StatusOr<nlohmann::json> VerifierService::ListRefvals(
    std::string_view model, std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  std::string canonical;
  if (!model.empty()) {
    std::optional<std::string> m = CanonicalModel(model);
    if (!m) {
      return InvalidArgumentError("model \"" + std::string(model) +
                                  "\" is not BlueField-2 or BlueField-3.");
    }
    canonical = *m;
  }
  DPA_ASSIGN_OR_RETURN(std::vector<RefRelease> releases,
                       store_->ListReleases(canonical));
  return RefManifestJson(releases);
}

StatusOr<nlohmann::json> VerifierService::TransitionRefval(
    const std::string& release, std::string_view action, std::string_view body,
    std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  RefState to;
  if (action == "promote" || action == "reinstate") {
    to = RefState::kActive;
  } else if (action == "obsolete") {
    to = RefState::kObsolete;
  } else if (action == "revoke") {
    to = RefState::kRevoked;
  } else {
    return NotFoundError("unknown reference-value action \"" +
                         std::string(action) +
                         "\"; use promote, obsolete, revoke or reinstate.");
  }
  if (body.size() > kMaxRequestBytes) {
    return ResourceExhaustedError("request body exceeds " +
                                  std::to_string(kMaxRequestBytes) + " bytes.");
  }
  DPA_ASSIGN_OR_RETURN(nlohmann::json j, report::internal::ParseStrictJson(
                                             AsBytes(body), "request body"));
  if (!j.is_object())
    return InvalidArgumentError("request body must be a JSON object.");
  bool obsolete_previous = false;
  RefApproval approval;
  approval.state = to;
  approval.at = clock_.NowUnixSeconds();
  for (const auto& [k, v] : j.items()) {
    if (k == "by" || k == "reason") {
      if (!v.is_string())
        return InvalidArgumentError("\"" + k + "\" must be a string.");
      (k == "by" ? approval.by : approval.reason) = v.get<std::string>();
    } else if (k == "obsolete_previous" && action == "promote") {
      if (!v.is_boolean())
        return InvalidArgumentError("\"obsolete_previous\" must be a boolean.");
      obsolete_previous = v.get<bool>();
    } else {
      return InvalidArgumentError("request member \"" + k +
                                  "\" is not allowed.");
    }
  }
  if (approval.by.empty())
    return InvalidArgumentError("\"by\" (who approves) is required.");
  if (approval.reason.empty())
    return InvalidArgumentError("\"reason\" is required.");
  DPA_ASSIGN_OR_RETURN(RefRelease current, store_->GetRelease(release));
  if (action == "promote" && current.state != RefState::kPending) {
    return FailedPreconditionError("release " + release + " is " +
                                   std::string(RefStateName(current.state)) +
                                   "; only a pending release can be promoted.");
  }
  if (action == "reinstate" && current.state != RefState::kObsolete) {
    return FailedPreconditionError(
        "release " + release + " is " +
        std::string(RefStateName(current.state)) +
        "; only an obsolete release can be reinstated.");
  }
  nlohmann::json changed = nlohmann::json::array();
  DPA_ASSIGN_OR_RETURN(RefRelease moved,
                       store_->TransitionRelease(release, approval));
  changed.push_back(
      {{"release", moved.release}, {"state", RefStateName(moved.state)}});
  if (obsolete_previous) {
    DPA_ASSIGN_OR_RETURN(std::vector<RefRelease> same_model,
                         store_->ListReleases(moved.model));
    for (const RefRelease& r : same_model) {
      if (r.release == moved.release || r.state != RefState::kActive) continue;
      RefApproval a = approval;
      a.state = RefState::kObsolete;
      a.reason = "superseded by " + moved.release + ": " + approval.reason;
      DPA_ASSIGN_OR_RETURN(RefRelease o,
                           store_->TransitionRelease(r.release, a));
      changed.push_back(
          {{"release", o.release}, {"state", RefStateName(o.state)}});
    }
  }
  return nlohmann::json{{"changed", changed}};
}

}  // namespace dpuaudit::verifier
