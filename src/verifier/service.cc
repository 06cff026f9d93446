#include "verifier/service.h"

#include "verifier/appraisal_context.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "firmware/boot_chain.h"
#include "attest/credential.h"
#include "isolation/probes.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "common/strict_json.h"
#include "report/jws.h"
#include "report/node_id.h"
#include "attest/tpm_claims.h"
#include "verifier/appraise.h"
#include "verifier/bmc_crosscheck.h"
#include "verifier/refvals/appraisal.h"
#include "verifier/remediation.h"
#include "verifier/refvals/model.h"
#include "verifier/tpm_appraisal.h"

namespace dpuaudit::verifier {
namespace {

constexpr int64_t kMaxClockSkewSeconds = 300;
constexpr size_t kMaxRequestBytes = 64 * 1024;

// One node-id rule for the agent, the verifier and the CLI.
using report::ValidateNodeId;

// Parses a small JSON request body that must be an object (members not
// looked at).
StatusOr<nlohmann::json> ParseRequestObject(std::string_view body) {
  if (body.size() > kMaxRequestBytes) {
    return ResourceExhaustedError("request body exceeds " +
                                  std::to_string(kMaxRequestBytes) + " bytes.");
  }
  // Strict: invalid UTF-8, duplicate keys, trailing bytes and nesting deeper
  // than 64 are refused before any member is looked at.
  DPA_ASSIGN_OR_RETURN(nlohmann::json j, strict_json::ParseStrictJson(
                                             AsBytes(body), "request body"));
  if (!j.is_object())
    return InvalidArgumentError("request body must be a JSON object.");
  return j;
}

// Parses a small JSON request object with exactly the given members.
StatusOr<nlohmann::json> ParseRequest(
    std::string_view body, const std::set<std::string>& required,
    const std::set<std::string>& optional = {}) {
  DPA_ASSIGN_OR_RETURN(nlohmann::json j, ParseRequestObject(body));
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
      if (n.revoked_at) {
        return PermissionDeniedError(
            "node " + n.node_id + " is revoked (at " +
            std::to_string(*n.revoked_at) + " by " + n.revoked_by + ": " +
            n.revoke_reason + ").");
      }
      return PermissionDeniedError("node " + n.node_id + " is revoked.");
  }
  return InternalError("bad node state.");
}

// A short printable identity string (serial, by, reason): 1..max chars of
// printable ASCII.
Status ValidateLabel(const std::string& field, const std::string& v,
                     size_t max) {
  if (v.empty() || v.size() > max) {
    return InvalidArgumentError("\"" + field + "\" must be 1-" +
                                std::to_string(max) + " characters.");
  }
  for (char c : v) {
    if (c < 0x20 || c > 0x7e) {
      return InvalidArgumentError("\"" + field +
                                  "\" may only use printable ASCII.");
    }
  }
  return OkStatus();
}

// The optional "device" member of an enrollment: what the agent read of
// its device identity, stored as claimed.
Status ParseClaimedDevice(const nlohmann::json& d, NodeRecord& n) {
  if (!d.is_object())
    return InvalidArgumentError("\"device\" must be an object.");
  for (const auto& [k, v] : d.items()) {
    std::string* field = k == "serial"  ? &n.claimed_serial
                         : k == "psid"  ? &n.claimed_psid
                         : k == "model" ? &n.claimed_model
                                        : nullptr;
    if (field == nullptr) {
      return InvalidArgumentError("device member \"" + k +
                                  "\" is not allowed.");
    }
    if (!v.is_string())
      return InvalidArgumentError("device." + k + " must be a string.");
    *field = v.get<std::string>();
    if (!field->empty()) {
      DPA_RETURN_IF_ERROR(ValidateLabel("device." + k, *field, 128));
    }
  }
  return OkStatus();
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
  // The snapshot every result of this generation names (issue 16 §2): in
  // the store before any result refers to it.
  DPA_RETURN_IF_ERROR(store_->PutCollateral("refvals", index->sha256(), index->manifest(),
                                            clock_.NowUnixSeconds()));
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
      {std::string(firmware::kBootStreamIntegrityId), {"intact", "corrupt"}, ""});
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
  // The BMC path (verifier/bmc_crosscheck.h, verifier/bmc_state.h).
  for (const std::string& id : BmcCrossCheckIds()) rules.push_back({id, {"agree"}, ""});
  rules.push_back({"irot.measurements", {"baseline", "changed", "rollback", "unverified"}, ""});
  rules.push_back({"erot.measurements", {"baseline", "changed", "rollback", "unverified"}, ""});
  rules.push_back({"irot.identity", {"bound", "another device"}, ""});
  for (const char* id : {"irot.reference_values", "erot.reference_values"}) {
    RuleSpec spec;
    spec.id = id;
    for (std::string_view v : kRefObservedValues) spec.allowed_values.emplace_back(v);
    rules.push_back(std::move(spec));
  }
  return rules;
}

StatusOr<std::unique_ptr<VerifierService>> VerifierService::New(
    std::unique_ptr<Store> store, Policy policy, EcPrivateKey signing_key,
    const Clock& clock, ServiceOptions options) {
  if (!store) return InvalidArgumentError("no store.");
  if (!options.verifier_id.empty() &&
      !report::ValidVerifierInstance(options.verifier_id)) {
    return InvalidArgumentError("verifier id \"" + options.verifier_id +
                                "\" is not 1-128 characters of [A-Za-z0-9._-].");
  }
  DPA_RETURN_IF_ERROR(ValidateTokens(
      {options.bootstrap_token, options.admin_token, options.reader_token}));
  DPA_ASSIGN_OR_RETURN(auto signer, Es256Signer::New(signing_key));
  DPA_ASSIGN_OR_RETURN(
      NonceService probe_nonces,
      NonceService::New(*store, clock, options.nonce_ttl_seconds,
                        options.max_outstanding_nonces));
  (void)probe_nonces;  // validated the ttl; the member is built below
  std::unique_ptr<VerifierService> service(new VerifierService(
      std::move(store), std::move(policy), std::move(signing_key),
      std::move(signer), clock, std::move(options)));
  // Issue 15, keys. A store that cannot be written now (a full disk) does
  // not stop the start: the key is recorded before its first signature
  // (SignEarRecorded), and until then nothing is signed (5xx).
  if (Status s = service->RegisterSigningKeys(); !s.ok()) {
    if (s.code() != StatusCode::kUnavailable &&
        s.code() != StatusCode::kResourceExhausted) {
      return s;
    }
    spdlog::warn("signing key not yet recorded in the store: {}", s.ToString());
  }
  // Issue 16: the policy it starts with, in the audit log (again before the
  // first appraisal if the store cannot be written now).
  if (Status s = service->EnsurePolicyRecorded(service->policy()); !s.ok()) {
    spdlog::warn("policy not yet recorded in the audit log: {}", s.ToString());
  }
  return service;
}

VerifierService::VerifierService(std::unique_ptr<Store> store, Policy policy,
                                 EcPrivateKey key,
                                 std::unique_ptr<Signer> signer,
                                 const Clock& clock, ServiceOptions options)
    : store_(std::move(store)),
      key_(std::move(key)),
      signer_(std::move(signer)),
      kid_(key_.public_key().Thumbprint()),
      clock_(clock),
      options_(std::move(options)),
      nonces_(*NonceService::New(*store_, clock_, options_.nonce_ttl_seconds,
                                 options_.max_outstanding_nonces)),
      challenge_limit_("challenges", options_.challenges_per_minute, clock_),
      report_limit_("reports", options_.reports_per_minute, clock_),
      refused_challenge_limit_("refused challenge requests",
                               options_.refused_challenges_per_client_minute,
                               clock_, 100000, "client"),
      unauthenticated_work_(
          "expensive checks of enrollments without a token",
          WorkBudgetOptions{options_.unauthenticated_cpu_ms_per_second,
                            options_.unauthenticated_max_concurrent, {}}) {
  InitReloadable(std::move(policy));
}

nlohmann::json VerifierService::Jwks() const {
  return report::Jwks(PublishedKeys(clock_.NowUnixSeconds()));
}

StatusOr<EnrollResult> VerifierService::EnrollUnaudited(
    std::string_view body, std::optional<std::string> bearer) {
  // The token is checked before anything else is looked at, so a wrong
  // token never creates or changes a node. A per-node enrollment token is
  // found by its hash; the fleet token (opt-in) is compared in constant
  // time. Either is "a token holder" (EnrollAuthority::kBootstrapToken).
  bool approved_by_token = false;
  std::optional<EnrollmentToken> node_token;
  if (bearer.has_value()) {
    std::string token_sha256 = Sha256Hex(AsBytes(*bearer));
    auto t = store_->GetEnrollmentToken(token_sha256);
    if (t.ok()) {
      // Revoked, used or expired: refused before the body is parsed.
      DPA_RETURN_IF_ERROR(CheckEnrollmentToken(*t, t->node_id, t->serial,
                                               clock_.NowUnixSeconds()));
      node_token = *std::move(t);
    } else if (t.status().code() != StatusCode::kNotFound) {
      return t.status();
    } else if (const std::string bootstrap = tokens()->bootstrap;
               !bootstrap.empty() &&
               ConstantTimeEquals(AsBytes(*bearer), AsBytes(bootstrap))) {
      // The shared fleet token.
    } else {
      return UnauthenticatedError(
          tokens()->bootstrap.empty()
              ? "enrollment token is not valid (not a per-node enrollment "
                "token of this verifier; the shared fleet token is not "
                "enabled)."
              : "bootstrap token is not valid.");
    }
    approved_by_token = true;
  }
  DPA_ASSIGN_OR_RETURN(
      nlohmann::json req,
      ParseRequest(body, {"node_id", "public_key"}, {"tpm", "device"}));
  DPA_ASSIGN_OR_RETURN(std::string node_id, StringMember(req, "node_id"));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  NodeRecord claimed;
  if (req.contains("device")) {
    DPA_RETURN_IF_ERROR(ParseClaimedDevice(req["device"], claimed));
  }
  if (node_token) {
    // Bound to its node id (and serial): checked again, atomically, where
    // the token is spent (Store::EnrollNode).
    DPA_RETURN_IF_ERROR(CheckEnrollmentToken(*node_token, node_id,
                                             claimed.claimed_serial,
                                             clock_.NowUnixSeconds()));
  }
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
        tpm, CheckTpmEnrollment(req["tpm"], policy().tpm(), options_.ek_ca_dir,
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

  NodeRecord record = std::move(claimed);
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
  // Node, TPM binding, (with a token) approval and the token's spending in
  // one transaction: a refused binding (the EK is bound to another node) or
  // a failed write (disk full) stores nothing and leaves the token unspent,
  // so no node is left without the TPM it enrolled with for an operator to
  // approve. Without a token nobody vouched for this request (a node's
  // public key is public), so the store refuses, in the same transaction,
  // to replace or re-challenge the TPM of a node that exists, or to add one
  // to an approved node: otherwise an outsider could bind their own TPM to
  // it and have its reports denied.
  EnrollGrant grant;
  grant.authority = approved_by_token ? EnrollAuthority::kBootstrapToken
                                      : EnrollAuthority::kNone;
  if (node_token) grant.token_sha256 = node_token->token_sha256;
  grant.actor = node_token ? "" : approved_by_token ? "fleet bootstrap token" : "";
  grant.now = record.enrolled_at;
  grant.pending_ttl_seconds = options_.pending_ttl_seconds;
  grant.max_pending = options_.max_pending_nodes;
  DPA_ASSIGN_OR_RETURN(result.node,
                       store_->EnrollNode(record, binding, grant));
  // Created, or the record replaced (a squatter's key, a revoked node's).
  if (existing.ok() &&
      existing->key_thumbprint != result.node.key_thumbprint) {
    result.created = true;
  }
  // A new node's BMC is pulled at once (its binding and baselines are
  // first seen at enrollment, not at its first report).
  if (bmc_ != nullptr && result.created) bmc_->Schedule(node_id);
  if (result.node.state == NodeState::kApproved) {
    RecordApproval(result.node, node_token ? "enrollment token " + node_token->token_id
                                           : "fleet bootstrap token");
  }
  if (!binding) return result;
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

StatusOr<NodeRecord> VerifierService::ApproveUnaudited(const std::string& node_id,
                                              ApprovalRequest req) {
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  req.now = clock_.NowUnixSeconds();
  req.pending_ttl_seconds = options_.pending_ttl_seconds;
  DPA_ASSIGN_OR_RETURN(NodeRecord n, store_->ApproveEnrollment(node_id, req));
  if (bmc_ != nullptr) bmc_->Schedule(node_id);
  RecordApproval(n, req.by);
  return n;
}

StatusOr<int64_t> VerifierService::PurgeExpiredPending() {
  return store_->PurgeExpiredPendingNodes(clock_.NowUnixSeconds(),
                                          options_.pending_ttl_seconds);
}

StatusOr<Challenge> VerifierService::IssueChallenge(std::string_view body,
                                                    std::string_view client) {
  bool authenticated = false;
  StatusOr<Challenge> c = IssueChallengeChecked(body, &authenticated);
  if (!c.ok() && !authenticated) {
    // Whoever sent a request the node did not sign pays for it, not the
    // node: past the client's budget its refusals are 429.
    DPA_RETURN_IF_ERROR(refused_challenge_limit_.Take(client));
  }
  return c;
}

StatusOr<Challenge> VerifierService::IssueChallengeChecked(
    std::string_view body, bool* authenticated) {
  DPA_ASSIGN_OR_RETURN(nlohmann::json req,
                       ParseRequest(body, {"node_id"}, {"proof"}));
  DPA_ASSIGN_OR_RETURN(std::string node_id, StringMember(req, "node_id"));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(NodeRecord node, store_->GetNode(node_id));
  DPA_RETURN_IF_ERROR(NodeMayAttest(node));
  if (!req.contains("proof")) {
    return UnauthenticatedError(
        "challenge request for node " + node_id +
        " carries no proof; it must be signed with the node's key "
        "(\"proof\", a " +
        std::string(report::kChallengeProofTyp) + ").");
  }
  DPA_ASSIGN_OR_RETURN(std::string proof_jws, StringMember(req, "proof"));
  // One P-256 verify with the node's pinned key before anything is spent.
  DPA_ASSIGN_OR_RETURN(std::shared_ptr<const Verifier> verifier,
                       NodeVerifier(node));
  StatusOr<report::ChallengeProof> proof =
      report::VerifyChallengeProof(proof_jws, *verifier);
  if (!proof.ok()) {
    return UnauthenticatedError("challenge proof for node " + node_id +
                                " is not valid: " + proof.status().message());
  }
  if (proof->node_id != node_id) {
    return UnauthenticatedError("challenge proof is for node " +
                                strict_json::Quote(proof->node_id) +
                                ", not " + node_id + ".");
  }
  const int64_t now = clock_.NowUnixSeconds();
  if (proof->iat > now + kChallengeProofSkewSeconds ||
      proof->iat < now - kChallengeProofSkewSeconds) {
    return UnauthenticatedError(
        "challenge proof iat " + std::to_string(proof->iat) +
        " is more than " + std::to_string(kChallengeProofSkewSeconds) +
        " s from verifier time " + std::to_string(now) + ".");
  }
  {
    // Single use: the jti (inside the signed payload, so not changed by
    // re-encoding the signature) is remembered until the proof could no
    // longer pass the iat check. Entries are added only after the node's
    // budget paid for them, so the node's budget bounds them.
    std::lock_guard<std::mutex> lock(proof_mu_);
    auto& seen = seen_proofs_[node_id];
    for (auto it = seen.begin(); it != seen.end();) {
      it = it->second <= now ? seen.erase(it) : std::next(it);
    }
    if (seen.count(proof->jti)) {
      return UnauthenticatedError("challenge proof was already used.");
    }
    *authenticated = true;
    DPA_RETURN_IF_ERROR(challenge_limit_.Take(node_id));
    if (seen.size() >= kMaxSeenProofsPerNode) {
      // Only reached when the node's budget allows more challenges per
      // window than this (a budget nobody can starve): the proof closest to
      // going stale is forgotten.
      auto oldest = std::min_element(
          seen.begin(), seen.end(),
          [](const auto& a, const auto& b) { return a.second < b.second; });
      seen.erase(oldest);
    }
    seen.emplace(proof->jti, proof->iat + kChallengeProofSkewSeconds + 1);
  }
  DPA_ASSIGN_OR_RETURN(IssuedNonce n, nonces_.Issue(node_id));
  return Challenge{n.nonce, n.expires_at,
                   policy().tpm().pcr_selection.ToString()};
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

StatusOr<AppraisalOutcome> VerifierService::SubmitReport(
    std::string_view jws, std::vector<std::string>* evidence_unknown) {
  // SetPolicy waits for reports being appraised (verifier/reload.cc).
  std::shared_lock<std::shared_mutex> reload_guard(reload_mu_);
  std::string node_id;
  bool authenticated = false;
  std::vector<std::string> unknown;
  auto outcome = ReceiveReport(jws, &node_id, &authenticated, &unknown);
  if (evidence_unknown != nullptr) *evidence_unknown = unknown;
  // evidence_unknown is the resend protocol, not a refusal: no record (the
  // agent resends at once, in full, with the same nonce).
  if (!outcome.ok() && authenticated && unknown.empty() &&
      outcome.status().code() != StatusCode::kRateLimited) {
    // Keep the node's own refused attempt (replayed nonce, wrong node id,
    // malformed claims) for auditors. Unauthenticated bytes are never
    // stored: anyone could send them, so storing them would let anyone grow
    // the store; the access log records the refusal instead.
    // Stored as a bounded record (digest, size, error, a prefix) within
    // the node's quota: a node sending refused reports cannot fill the
    // disk. Over quota the record is dropped; the node still gets its error.
    ReportRecord rejected;
    rejected.node_id = node_id;
    rejected.jws = std::string(jws.substr(0, kRefusedReportPrefixBytes));
    rejected.received_bytes = static_cast<int64_t>(jws.size());
    rejected.sha256 = Sha256Hex(AsBytes(jws));
    rejected.received_at = clock_.NowUnixSeconds();
    rejected.accepted = false;
    rejected.error = outcome.status().ToString();
    if (rejected.error.size() > kMaxReportErrorBytes) {
      size_t cut = kMaxReportErrorBytes;
      // Not inside a UTF-8 sequence.
      while (cut > 0 && (static_cast<unsigned char>(rejected.error[cut]) &
                         0xC0) == 0x80) {
        --cut;
      }
      rejected.error.resize(cut);
    }
    (void)store_->InsertRefusedReport(rejected, options_.report_quota_bytes);
  }
  return outcome;
}

Status VerifierService::ResolveByDigest(const NodeRecord& node,
                                        const Verifier& verifier,
                                        report::ReportClaims& claims,
                                        std::vector<std::string>* unknown) {
  const std::string owner =
      EvidenceCache::OwnerKey(node.node_id, node.key_thumbprint);
  std::shared_ptr<const report::HeldEvidence> held =
      evidence_cache_.Get(owner, claims.evidence_base);
  std::string why;
  if (held == nullptr) {
    // Another replica may have accepted the base, or this one restarted:
    // the store has it, checked again under the node's current key (a row
    // edited in the database, or a report signed under a key the node no
    // longer holds, does not count).
    DPA_ASSIGN_OR_RETURN(held, LoadBaseEvidence(*store_, node, verifier,
                                                claims.evidence_base,
                                                options_.max_report_bytes, &why));
    if (held != nullptr) evidence_cache_.Put(owner, claims.evidence_base, held);
  }
  std::vector<std::string> missing;
  if (held != nullptr) {
    missing = report::ResolveEvidence(claims, *held);
    if (missing.empty()) return OkStatus();
    why = "the base report holds no equal item";
  } else {
    for (const device::Evidence& e : claims.evidence) {
      if (claims.by_digest.count(e.id) != 0) missing.push_back(e.id);
    }
  }
  std::string list;
  for (size_t i = 0; i < missing.size() && i < 8; ++i) {
    list += (i ? ", " : "") + strict_json::Quote(missing[i]);
  }
  if (missing.size() > 8) list += ", …";
  *unknown = missing;
  return FailedPreconditionError(
      "evidence_unknown: " + std::to_string(missing.size()) +
      " evidence item(s) carried by digest are not held for node " +
      node.node_id + " (" + why + "): " + list +
      "; resend them in full.");
}

StatusOr<AppraisalOutcome> VerifierService::ReceiveReport(
    std::string_view jws, std::string* node_out, bool* authenticated,
    std::vector<std::string>* unknown) {
  // Read and check the inputs (size, node, signature, claims, nonce), then
  // judge them (Judge: reference values, baseline and TPM binding read, the
  // pure verifier::Appraise, the EAR signed), then write once: the result
  // with the nonce spent and, for an admitted new release, the baseline.
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
                           strict_json::Quote(header.kid) +
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
  if (verified.claims.node_id != node->node_id) {
    return PermissionDeniedError("report claims node_id \"" +
                                 verified.claims.node_id +
                                 "\" but is signed by the key of node \"" +
                                 node->node_id + "\".");
  }
  // By-digest evidence from this node's own base, before anything else is
  // judged (docs/architecture.md#report-format).
  if (!verified.claims.evidence_resolved) {
    DPA_RETURN_IF_ERROR(
        ResolveByDigest(*node, *verifier, verified.claims, unknown));
  }
  const report::ReportClaims& claims = verified.claims;
  int64_t now = clock_.NowUnixSeconds();
  if (claims.issued_at > now + kMaxClockSkewSeconds) {
    return InvalidArgumentError(
        "issued_at " + std::to_string(claims.issued_at) + " is more than " +
        std::to_string(kMaxClockSkewSeconds) +
        " s in the future (verifier time " + std::to_string(now) + ").");
  }
  // The boot chain is agent-measured (digests of partitions and files too
  // large to carry); it must still be well-formed, or the report is refused.
  std::optional<firmware::BootChainInfo> boot;
  if (!claims.boot_chain.empty()) {
    StatusOr<firmware::BootChainInfo> parsed =
        firmware::ParseBootChainJson(claims.boot_chain);
    if (!parsed.ok()) return parsed.status().WithPrefix("report");
    boot = std::move(parsed).value();
  }
  std::optional<attest::TpmClaims> tpm_claims;
  if (claims.tpm) {
    StatusOr<attest::TpmClaims> parsed = attest::ParseTpmClaims(*claims.tpm);
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
  DPA_ASSIGN_OR_RETURN(Judgement judged,
                       Judge(*node, verified, boot, tpm_claims, now));
  const report::AttestationResult& ar = judged.result;

  ReportRecord rec;
  rec.node_id = node->node_id;
  rec.jws = std::string(jws);
  rec.sha256 = verified.jws_sha256;
  rec.received_at = now;
  rec.accepted = true;
  ResultRecord result = ResultRecordOf(judged, now);
  // The result and the node's next status (and its decision event, with
  // its webhook outbox rows) in one transaction (issue 15).
  DPA_RETURN_IF_ERROR(
      StoreWithStatus(*node, judged, now, [&](const NodeTransition* t) {
        return store_->InsertResultSpendingNonceWithinQuota(
            result, rec, claims.nonce, clock_.NowUnixSeconds(),
            options_.report_quota_bytes, t);
      }).status());
  // Only an admitted node's release becomes the baseline for upgrade edges:
  // a denied downgrade must not become "unchanged" on the next report.
  // Unchanged releases are not rewritten (one fsync fewer per report).
  if (ar.dpuaudit.decision == report::Decision::kAdmit &&
      !judged.arm_release.empty() &&
      judged.arm_release != judged.previous_release) {
    DPA_RETURN_IF_ERROR(store_->RecordNodeRelease(node->node_id, "arm",
                                                  judged.arm_release, now));
  }
  // A stored report with every item in full is the node's new base: its
  // evidence verified, parsed and was appraised (admit or deny alike — the
  // findings are re-derived from it on every use, never reused as a
  // verdict).
  if (claims.by_digest.empty()) {
    evidence_cache_.Put(
        EvidenceCache::OwnerKey(node->node_id, node->key_thumbprint),
        verified.jws_sha256,
        std::make_shared<const report::HeldEvidence>(
            report::IndexHeldEvidence(claims.evidence)));
  }
  return AppraisalOutcome{std::move(judged.ear_jwt), std::move(judged.result)};
}

ResultRecord VerifierService::ResultRecordOf(const Judgement& j, int64_t now) {
  ResultRecord result;
  result.node_id = j.result.dpuaudit.node_id;
  result.decision = std::string(report::DecisionName(j.result.dpuaudit.decision));
  result.ear_jwt = j.ear_jwt;
  result.reasons_json =
      strict_json::DumpJson(report::DecisionReasonsJson(j.result.dpuaudit.reasons));
  result.report_jws_sha256 = j.result.dpuaudit.report_sha256;
  result.created_at = now;
  result.expires_at = j.result.exp;
  result.context_json = j.context_json;
  return result;
}

StatusOr<VerifierService::Judgement> VerifierService::Judge(
    const NodeRecord& node, const report::VerifiedReport& verified,
    const std::optional<firmware::BootChainInfo>& boot,
    const std::optional<attest::TpmClaims>& tpm_claims, int64_t now) {
  // Read: the reference values, the node's baseline release and its TPM
  // binding. Then the pure appraisal, then the EAR signature.
  DPA_ASSIGN_OR_RETURN(std::shared_ptr<const RefIndex> refs, CurrentRefIndex());
  std::string previous_release;
  if (auto last = store_->LastNodeRelease(node.node_id, "arm"); last.ok()) {
    previous_release = *last;
  } else if (last.status().code() != StatusCode::kNotFound) {
    return last.status();
  }
  std::optional<TpmBinding> binding;
  if (auto b = store_->GetTpmBinding(node.node_id); b.ok()) {
    binding = std::move(b).value();
  } else if (b.status().code() != StatusCode::kNotFound) {
    return b.status();
  }
  AppraisalInput in;
  in.report = &verified;
  in.boot_chain = boot ? &*boot : nullptr;
  in.tpm_claims = tpm_claims ? &*tpm_claims : nullptr;
  in.node = &node;
  in.tpm_binding = binding ? &*binding : nullptr;
  in.refs = refs.get();
  in.previous_release = std::move(previous_release);
  in.policy = &policy();  // one policy for the whole appraisal
  in.verifier_id = {"dpuaudit", options_.verifier_build, options_.verifier_id};
  in.now = now;
  DPA_RETURN_IF_ERROR(EnsurePolicyRecorded(*in.policy));
  std::shared_ptr<const BmcVerdict> bmc_verdict;
  if (bmc_ != nullptr && bmc_->Configured(node.node_id)) {
    bmc_verdict = bmc_->Latest(node.node_id);
    in.bmc_configured = true;
    in.bmc = bmc_verdict.get();
    in.bmc_max_age_seconds = bmc_->max_age_seconds();
    in.bmc_key_sha256 = bmc_->bmc_key_sha256(node.node_id);
  }
  in.trust_anchors = TrustAnchorsFor(binding.has_value(), in.bmc_configured);
  in.derivation_cache = &derivation_cache_;
  // What the appraisal read besides the report and the collateral, so an
  // auditor can re-run it (issue 16).
  AppraisalContext ctx;
  ctx.now = now;
  ctx.verifier_id = in.verifier_id;
  ctx.policy_sha256 = in.policy->sha256();
  ctx.refvals_sha256 = refs->sha256();
  ctx.previous_release = in.previous_release;
  ctx.node = node;
  ctx.tpm_binding = binding;
  ctx.bmc_configured = in.bmc_configured;
  ctx.bmc_max_age_seconds = in.bmc_max_age_seconds;
  ctx.bmc_key_sha256 = in.bmc_key_sha256;
  if (bmc_verdict) ctx.bmc_pulled_at = bmc_verdict->pulled_at;
  ctx.trust_anchors = in.trust_anchors;
  DPA_ASSIGN_OR_RETURN(Appraisal appraisal, verifier::Appraise(in));
  if (bmc_verdict) {
    // A report that disagrees with the cached pull (a change on the DPU,
    // or a lie) gets a fresh pull soon, within the monitor's repull limit.
    for (const auto& r : appraisal.result.dpuaudit.reasons) {
      if (r.rule_id.rfind("bmc.", 0) == 0 && r.verdict != Verdict::kPass) {
        bmc_->Schedule(node.node_id);
        break;
      }
    }
  }
  DPA_ASSIGN_OR_RETURN(std::string jwt,
                       SignEarRecorded(appraisal.result));
  return Judgement{std::move(appraisal.result), std::move(jwt),
                   std::move(appraisal.arm_release),
                   std::move(appraisal.previous_release), AppraisalContextJson(ctx)};
}

StatusOr<bool> VerifierService::ReappraiseNode(const NodeRecord& node,
                                               const std::string& why) {
  if (node.state != NodeState::kApproved) return false;
  auto latest = store_->LatestResult(node.node_id);
  if (!latest.ok()) {
    if (latest.status().code() == StatusCode::kNotFound) return false;
    return latest.status();
  }
  int64_t now = clock_.NowUnixSeconds();
  if (latest->decision != kDecisionAdmit || now >= latest->expires_at ||
      latest->id <= node.stale_result_id) {
    return false;  // nothing to withdraw
  }
  // The evidence behind the admission, as stored, checked again under the
  // node's pinned key (a row edited in the database must not judge).
  DPA_ASSIGN_OR_RETURN(ReportRecord stored, store_->GetAcceptedReport(
                                                node.node_id,
                                                latest->report_jws_sha256));
  std::optional<Judgement> judged;
  std::string failure;
  if (stored.jws.empty()) {
    failure = "the report behind the admission is no longer stored";
  } else {
    DPA_ASSIGN_OR_RETURN(std::shared_ptr<const Verifier> verifier,
                         NodeVerifier(node));
    auto verified =
        report::VerifyReport(stored.jws, *verifier, options_.max_report_bytes);
    std::vector<std::string> unknown;
    Status resolved = OkStatus();
    if (verified.ok() && !verified->claims.evidence_resolved) {
      resolved = ResolveByDigest(node, *verifier, verified->claims, &unknown);
      if (!resolved.ok() && unknown.empty()) return resolved;  // the store
    }
    if (!verified.ok()) {
      failure = "the stored report does not verify: " +
                verified.status().message();
    } else if (!resolved.ok()) {
      failure = "the stored report's evidence carried by digest is not held: " +
                resolved.message();
    } else {
      std::optional<firmware::BootChainInfo> boot;
      std::optional<attest::TpmClaims> tpm_claims;
      if (!verified->claims.boot_chain.empty()) {
        auto parsed = firmware::ParseBootChainJson(verified->claims.boot_chain);
        if (parsed.ok()) boot = std::move(parsed).value();
      }
      if (verified->claims.tpm) {
        auto parsed = attest::ParseTpmClaims(*verified->claims.tpm);
        if (parsed.ok()) tpm_claims = std::move(parsed).value();
      }
      DPA_ASSIGN_OR_RETURN(Judgement j,
                           Judge(node, *verified, boot, tpm_claims, now));
      if (j.result.dpuaudit.decision == report::Decision::kAdmit) return false;
      judged = std::move(j);
    }
  }
  if (!judged) {
    // Cannot re-judge: the admission cannot stand on evidence we no longer
    // hold (fail closed). A deny EAR naming why.
    const Policy& pol = policy();
    report::AttestationResult ar;
    ar.iat = now;
    ar.exp = now + pol.decision_ttl_seconds();
    ar.verifier_id = {"dpuaudit", options_.verifier_build, options_.verifier_id};
    ar.dpuaudit.node_id = node.node_id;
    ar.dpuaudit.decision = report::Decision::kDeny;
    ar.dpuaudit.report_sha256 = latest->report_jws_sha256;
    ar.dpuaudit.policy = {pol.name(), pol.sha256()};
    ar.dpuaudit.reasons.push_back(
        {"verifier.reappraisal", Verdict::kUnknown, "re-appraisal of the "
         "admitted report", "not possible", "verifier store",
         failure + " (" + why + ")", report::ClaimTier::kSelfReported});
    SetActionAndRemediation(ar.dpuaudit.reasons.back(), RuleAction::kDeny);  // issue 15 §6
    report::Submod posture;
    posture.trust_vector.configuration = report::kAr4siContraindicated;
    posture.status = report::StatusOfVector(posture.trust_vector);
    posture.appraisal_policy_id =
        "policy:" + pol.name() + "@sha256:" + pol.sha256();
    ar.submods[std::string(report::kSubmodPosture)] = posture;
    DPA_ASSIGN_OR_RETURN(std::string jwt, SignEarRecorded(ar));
    judged = Judgement{std::move(ar), std::move(jwt), "", "", ""};
  } else {
    // Say why this deny came without a report.
    judged->result.dpuaudit.reasons.insert(
        judged->result.dpuaudit.reasons.begin(),
        {"verifier.reappraisal", Verdict::kFail,
         "admission still supported by the reference values",
         "withdrawn", "verifier reference values",
         "the node's latest admitted report was re-appraised after " + why +
             " and is now denied",
         report::ClaimTier::kSelfReported});
    SetActionAndRemediation(judged->result.dpuaudit.reasons.front(),
                            RuleAction::kDeny);  // issue 15 §6
    DPA_ASSIGN_OR_RETURN(judged->ear_jwt,
                         SignEarRecorded(judged->result));
  }
  ResultRecord withdrawn = ResultRecordOf(*judged, now);
  DPA_RETURN_IF_ERROR(
      StoreWithStatus(node, *judged, now, [&](const NodeTransition* t) {
        return store_->InsertReappraisal(withdrawn, t);
      }).status());
  return true;
}

StatusOr<std::vector<std::string>> VerifierService::ReappraiseAdmitted(
    const std::string& why) {
  // Which SPDM indices the reference values judge may have changed: every
  // BMC is pulled again soon (the admits are re-judged now with the cached
  // verdicts, and again after each pull).
  if (bmc_ != nullptr) bmc_->ScheduleAll();
  DPA_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store_->ListNodes());
  std::vector<std::string> withdrawn;
  for (const NodeRecord& n : nodes) {
    DPA_ASSIGN_OR_RETURN(bool changed, ReappraiseNode(n, why));
    if (changed) withdrawn.push_back(n.node_id);
  }
  return withdrawn;
}

StatusOr<nlohmann::json> VerifierService::NodeView(
    const std::string& node_id, const std::optional<std::string>& bearer) {
  DPA_RETURN_IF_ERROR(CheckReader(bearer));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  return NodeViewJson(*store_, node_id, options_.pending_ttl_seconds,
                      clock_.NowUnixSeconds());
}

StatusOr<Admission> VerifierService::GetAdmission(
    const std::string& node_id, const std::optional<std::string>& bearer) {
  if (!options_.public_admission) DPA_RETURN_IF_ERROR(CheckReader(bearer));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(NodeRecord n, store_->GetNode(node_id));
  Admission a;
  a.node_id = node_id;
  a.decision = "deny";
  if (Status s = NodeMayAttest(n); !s.ok()) {
    a.status = std::string(NodeStateName(n.state));
    a.reason = s.message();
    return a;
  }
  // A sticky failure holds whatever the latest result says (issue 15).
  auto st = store_->GetNodeStatus(node_id);
  if (!st.ok() && st.status().code() != StatusCode::kNotFound) return st.status();
  if (st.ok() && st->status == kStatusHeld) {
    a.status = std::string(kStatusHeld);
    a.reason = "held since " + std::to_string(st->since) + ": sticky rule(s) " +
               st->held_rules +
               " failed; an administrator must acknowledge it (dpuaudit node ack " +
               node_id + ") and a fresh report must pass.";
    return a;
  }
  auto latest = store_->LatestResult(node_id);
  if (!latest.ok()) {
    if (latest.status().code() != StatusCode::kNotFound) return latest.status();
    a.status = std::string(kStatusUnattested);
    a.reason = "node " + node_id + " has no attestation result yet.";
    return a;
  }
  // A result made under the key of a revoked node that was re-enrolled
  // since does not count.
  if (latest->id <= n.stale_result_id) {
    a.status = std::string(kStatusUnattested);
    a.reason = "node " + node_id +
               " has no attestation result under its current key (re-enrolled or re-keyed).";
    return a;
  }
  // Re-check our own signature: a row edited in the database must not admit.
  DPA_ASSIGN_OR_RETURN(auto self, OwnVerifierFor(latest->ear_jwt));  // issue 15
  auto ar =
      report::VerifyEar(latest->ear_jwt, *self, clock_, /*allow_expired=*/true);
  if (!ar.ok()) {
    return DataLossError("stored result for node " + node_id +
                         " does not verify: " + ar.status().message());
  }
  a.ear_jwt = latest->ear_jwt;
  a.result = *ar;
  int64_t now = clock_.NowUnixSeconds();
  // An admission is never good for longer than the policy's decision TTL
  // from now, whatever the EAR says: an EAR signed while the clock ran
  // ahead (or by a policy with a longer TTL) carries a far exp.
  a.expires_at = std::min(ar->exp, now + policy().decision_ttl_seconds());
  if (now >= ar->exp) {
    a.status = std::string(kStatusStale);
    a.reason = "last decision expired at " + std::to_string(ar->exp) +
               "; the node has not attested since.";
    return a;
  }
  // Stale (unreachable: no report) is judged here from the result's
  // durable time, not from the sweeper's last pass, so a restart or a
  // sweep that has not run yet cannot admit a node that went quiet.
  if (options_.stale_after_seconds > 0 &&
      now - latest->created_at >= options_.stale_after_seconds) {
    a.status = std::string(kStatusStale);
    a.reason = "stale: the latest appraisal (" + latest->decision + ") was at " +
               std::to_string(latest->created_at) + ", " +
               std::to_string(now - latest->created_at) + " s ago (stale after " +
               std::to_string(options_.stale_after_seconds) +
               " s); the node has not attested since.";
    return a;
  }
  a.decision = std::string(report::DecisionName(ar->dpuaudit.decision));
  a.status = std::string(a.decision == kDecisionAdmit ? kStatusAdmitted : kStatusFailed);
  // The stored status has the last word over an admitting EAR (issue 15):
  // after an acknowledged sticky failure the node is "failed" until a
  // report made after the acknowledgement passes; a node the sweeper made
  // stale stays stale until a fresh report, whatever --stale-after says now.
  if (a.decision == kDecisionAdmit && st.ok() && st->status != kStatusAdmitted) {
    a.decision = std::string(kDecisionDeny);
    a.status = st->status;
    a.reason = "status " + st->status + " since " + std::to_string(st->since) +
               "; the node is admitted again by its next passing report.";
    return a;
  }
  if (options_.stale_after_seconds > 0) {
    a.expires_at = std::min(a.expires_at, latest->created_at + options_.stale_after_seconds);
  }
  return a;
}

Status VerifierService::CheckAdmin(
    const std::optional<std::string>& bearer) const {
  const std::shared_ptr<const Tokens> live = tokens();
  if (live->admin.empty()) {
    return PermissionDeniedError(
        "the admin API is disabled; start the verifier with "
        "--admin-token-file.");
  }
  if (!bearer ||
      !ConstantTimeEquals(AsBytes(*bearer), AsBytes(live->admin))) {
    return UnauthenticatedError("admin API: missing or wrong bearer token.");
  }
  return OkStatus();
}

Status VerifierService::CheckReader(
    const std::optional<std::string>& bearer) const {
  auto matches = [&bearer](const std::string& token) {
    return !token.empty() && bearer &&
           ConstantTimeEquals(AsBytes(*bearer), AsBytes(token));
  };
  // Both compared, so the time taken does not tell which one matched.
  const std::shared_ptr<const Tokens> live = tokens();
  bool reader = matches(live->reader);
  bool admin = matches(live->admin);
  if (reader || admin) return OkStatus();
  return UnauthenticatedError(
      "reading node state needs the reader (or admin) bearer token; "
      "missing or wrong token.");
}

StatusOr<nlohmann::json> VerifierService::ImportRefvalsUnaudited(
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
  // New releases can only add matches, but a release's values also decide
  // which images count as "mixed": re-judge current admissions anyway.
  DPA_ASSIGN_OR_RETURN(std::vector<std::string> withdrawn,
                       ReappraiseAdmitted("a reference-value import"));
  return nlohmann::json{{"imported", names}, {"withdrawn", withdrawn}};
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

StatusOr<nlohmann::json> VerifierService::TransitionRefvalUnaudited(
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
  DPA_ASSIGN_OR_RETURN(nlohmann::json j, ParseRequestObject(body));
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
  // Every current admission is re-judged at once on the new reference
  // values: a revoked (or obsoleted) release must not stay admitted until
  // its EARs expire.
  DPA_ASSIGN_OR_RETURN(
      std::vector<std::string> withdrawn,
      ReappraiseAdmitted("reference release " + release + " moved to " +
                         std::string(RefStateName(to))));
  return nlohmann::json{{"changed", changed}, {"withdrawn", withdrawn}};
}

// --- Enrollment and identity (issue 12) -------------------------------------

StatusOr<IssuedEnrollmentToken> IssueEnrollmentToken(
    Store& store, const std::string& node_id, const std::string& serial,
    int64_t ttl_seconds, const std::string& by, int64_t now) {
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  if (!serial.empty()) DPA_RETURN_IF_ERROR(ValidateLabel("serial", serial, 128));
  DPA_RETURN_IF_ERROR(ValidateLabel("by", by, 128));
  if (ttl_seconds < 1 || ttl_seconds > kMaxEnrollmentTokenTtl) {
    return InvalidArgumentError("\"ttl_seconds\" must be 1-" +
                                std::to_string(kMaxEnrollmentTokenTtl) + ".");
  }
  DPA_ASSIGN_OR_RETURN(Bytes secret, RandomBytes(32));
  IssuedEnrollmentToken out;
  out.token = "dpaet_" + Base64UrlEncode(secret);
  EnrollmentToken& t = out.record;
  t.token_sha256 = Sha256Hex(AsBytes(out.token));
  t.token_id = t.token_sha256.substr(0, 16);
  t.node_id = node_id;
  t.serial = serial;
  t.created_by = by;
  t.created_at = now;
  t.expires_at = now + ttl_seconds;
  DPA_RETURN_IF_ERROR(store.PutEnrollmentToken(t));
  return out;
}

nlohmann::json EnrollmentTokenJson(const EnrollmentToken& t, int64_t now) {
  std::string status = t.revoked_at      ? "revoked"
                       : t.used_at       ? "used"
                       : now >= t.expires_at ? "expired"
                                             : "unused";
  nlohmann::json j = {{"token_id", t.token_id},
                      {"node_id", t.node_id},
                      {"serial", t.serial},
                      {"created_by", t.created_by},
                      {"created_at", t.created_at},
                      {"expires_at", t.expires_at},
                      {"status", status}};
  if (t.used_at) {
    j["used_at"] = *t.used_at;
    j["used_key_thumbprint"] = t.used_key_thumbprint;
  }
  if (t.revoked_at) {
    j["revoked_at"] = *t.revoked_at;
    j["revoked_by"] = t.revoked_by;
  }
  return j;
}

nlohmann::json NodeIdentityJson(const NodeRecord& n) {
  nlohmann::json j = {
      {"node_id", n.node_id},
      {"state", NodeStateName(n.state)},
      {"key_thumbprint", n.key_thumbprint},
      {"enrolled_at", n.enrolled_at},
      {"device_serial", n.device_serial},
      {"claimed_device",
       {{"serial", n.claimed_serial},
        {"psid", n.claimed_psid},
        {"model", n.claimed_model}}},
      {"approved_by", n.approved_by}};
  if (n.approved_at) j["approved_at"] = *n.approved_at;
  if (n.revoked_at) {
    j["revocation"] = {{"revoked_at", *n.revoked_at},
                       {"revoked_by", n.revoked_by},
                       {"reason", n.revoke_reason}};
  }
  return j;
}

StatusOr<nlohmann::json> NodeViewJson(Store& store, const std::string& node_id,
                                      int64_t pending_ttl_seconds, int64_t now) {
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(NodeRecord n, store.GetNode(node_id));
  DPA_ASSIGN_OR_RETURN(EcPublicKey key, EcPublicKey::FromPem(n.public_key_pem));
  nlohmann::json j = {{"node_id", n.node_id},
                      {"state", NodeStateName(n.state)},
                      {"alg", n.alg},
                      {"key_thumbprint", n.key_thumbprint},
                      {"public_key", report::PublicJwk(key, n.key_thumbprint)},
                      {"enrolled_at", n.enrolled_at}};
  if (n.approved_at) j["approved_at"] = *n.approved_at;
  j.update(NodeIdentityJson(n));
  if (n.state == NodeState::kPending && pending_ttl_seconds > 0) {
    j["pending_expires_at"] = n.enrolled_at + pending_ttl_seconds;
  }
  DPA_ASSIGN_OR_RETURN(std::vector<NodeEvent> history,
                       store.NodeHistory(node_id));
  nlohmann::json h = nlohmann::json::array();
  for (const NodeEvent& e : history) {
    h.push_back({{"at", e.at},
                 {"event", e.event},
                 {"by", e.actor},
                 {"detail", e.detail}});
  }
  j["history"] = std::move(h);
  if (auto b = store.GetTpmBinding(node_id); b.ok()) {
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
  auto latest = store.LatestResult(node_id);
  if (latest.ok()) {
    nlohmann::json reasons =
        nlohmann::json::parse(latest->reasons_json, nullptr, false);
    j["latest"] = {
        {"decision", latest->decision},
        {"created_at", latest->created_at},
        {"expires_at", latest->expires_at},
        {"expired", now >= latest->expires_at},
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

namespace {

// {"by": "...", "reason": "..."} with `reason` required when asked.
StatusOr<std::pair<std::string, std::string>> ByReason(std::string_view body,
                                                       bool need_reason) {
  DPA_ASSIGN_OR_RETURN(
      nlohmann::json req,
      ParseRequest(body, need_reason ? std::set<std::string>{"by", "reason"}
                                     : std::set<std::string>{"by"},
                   need_reason ? std::set<std::string>{}
                               : std::set<std::string>{"reason"}));
  DPA_ASSIGN_OR_RETURN(std::string by, StringMember(req, "by"));
  DPA_RETURN_IF_ERROR(ValidateLabel("by", by, 128));
  std::string reason;
  if (req.contains("reason")) {
    DPA_ASSIGN_OR_RETURN(reason, StringMember(req, "reason"));
    DPA_RETURN_IF_ERROR(ValidateLabel("reason", reason, 512));
  }
  return std::make_pair(std::move(by), std::move(reason));
}

}  // namespace

StatusOr<nlohmann::json> VerifierService::IssueEnrollmentTokenUnaudited(
    std::string_view body, std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  DPA_ASSIGN_OR_RETURN(
      nlohmann::json req,
      ParseRequest(body, {"node_id", "by"}, {"serial", "ttl_seconds"}));
  DPA_ASSIGN_OR_RETURN(std::string node_id, StringMember(req, "node_id"));
  DPA_ASSIGN_OR_RETURN(std::string by, StringMember(req, "by"));
  std::string serial;
  if (req.contains("serial")) {
    DPA_ASSIGN_OR_RETURN(serial, StringMember(req, "serial"));
  }
  int64_t ttl = kDefaultEnrollmentTokenTtl;
  if (req.contains("ttl_seconds")) {
    if (!req["ttl_seconds"].is_number_integer()) {
      return InvalidArgumentError("\"ttl_seconds\" must be an integer.");
    }
    ttl = req["ttl_seconds"].get<int64_t>();
  }
  DPA_ASSIGN_OR_RETURN(IssuedEnrollmentToken issued,
                       verifier::IssueEnrollmentToken(
                           *store_, node_id, serial, ttl, by,
                           clock_.NowUnixSeconds()));
  nlohmann::json j = EnrollmentTokenJson(issued.record, clock_.NowUnixSeconds());
  j["token"] = issued.token;
  return j;
}

StatusOr<nlohmann::json> VerifierService::ListEnrollmentTokens(
    std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  DPA_ASSIGN_OR_RETURN(std::vector<EnrollmentToken> tokens,
                       store_->ListEnrollmentTokens());
  nlohmann::json a = nlohmann::json::array();
  int64_t now = clock_.NowUnixSeconds();
  for (const auto& t : tokens) a.push_back(EnrollmentTokenJson(t, now));
  return nlohmann::json{{"tokens", a}};
}

StatusOr<nlohmann::json> VerifierService::RevokeEnrollmentTokenUnaudited(
    const std::string& token_id, std::string_view body,
    std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  DPA_ASSIGN_OR_RETURN(auto by_reason, ByReason(body, /*need_reason=*/false));
  DPA_ASSIGN_OR_RETURN(EnrollmentToken t,
                       store_->RevokeEnrollmentToken(
                           token_id, by_reason.first, clock_.NowUnixSeconds()));
  return EnrollmentTokenJson(t, clock_.NowUnixSeconds());
}

StatusOr<nlohmann::json> VerifierService::Ready() {
  if (!signer_ || kid_.empty()) return UnavailableError("not ready: no signing key is loaded.");
  // Anyone may ask: the store check (which takes the write lock) runs at
  // most once per kReadyCheckSeconds, every other probe gets its answer.
  Status store;
  {
    std::lock_guard<std::mutex> l(ready_mu_);
    const int64_t now = clock_.NowUnixSeconds();
    if (ready_checked_at_ == 0 || now - ready_checked_at_ >= kReadyCheckSeconds ||
        now < ready_checked_at_) {
      ready_status_ = store_->CheckWritable();
      ready_checked_at_ = now;
    }
    store = ready_status_;
  }
  if (!store.ok()) return UnavailableError("not ready: the store is not writable: " + store.message());
  return nlohmann::json{{"status", "ready"},
                        {"checks", {{"store", "writable"}, {"signing_key", kid_}}}};
}

void VerifierService::SetBmcMonitor(BmcMonitor* monitor) {
  bmc_ = monitor;
  if (bmc_ == nullptr) return;
  bmc_->SetReferenceValues([this]() -> std::shared_ptr<const RefIndex> {
    auto refs = CurrentRefIndex();
    return refs.ok() ? *refs : nullptr;
  });
}

void VerifierService::OnBmcPull(const std::string& node_id) {
  auto node = store_->GetNode(node_id);
  if (!node.ok()) return;
  // Errors are the store's or the signer's; the next report is judged
  // with the new verdict anyway.
  (void)ReappraiseNode(*node, "a BMC pull at " + std::to_string(clock_.NowUnixSeconds()));
}

StatusOr<nlohmann::json> VerifierService::BmcStatus(const std::string& node_id,
                                                   const std::optional<std::string>& bearer) {
  DPA_RETURN_IF_ERROR(CheckReader(bearer));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  if (bmc_ == nullptr || !bmc_->Configured(node_id)) {
    return NotFoundError("node " + node_id + " has no BMC configured.");
  }
  nlohmann::json j;
  std::shared_ptr<const BmcVerdict> v = bmc_->Latest(node_id);
  j["node_id"] = node_id;
  j["latest"] = v ? BmcVerdictJson(*v) : nlohmann::json(nullptr);
  nlohmann::json records = nlohmann::json::object();
  for (std::string_view kind : kHardwareRecordKinds) {
    auto r = store_->GetHardwareRecord(node_id, kind);
    if (!r.ok()) {
      if (r.status().code() != StatusCode::kNotFound) return r.status();
      continue;
    }
    auto value = strict_json::ParseStrictJson(AsBytes(r->value_json), r->kind);
    if (!value.ok()) return DataLossError(value.status().message());
    records[std::string(kind)] = {{"value", *value},
                                  {"set_at", r->set_at},
                                  {"set_by", r->set_by},
                                  {"reason", r->reason}};
  }
  j["stored"] = records;
  return j;
}

StatusOr<nlohmann::json> VerifierService::RebindBmcUnaudited(const std::string& node_id,
                                                   std::string_view body,
                                                   std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(auto by_reason, ByReason(body, /*need_reason=*/true));
  if (bmc_ == nullptr) return NotFoundError("node " + node_id + " has no BMC configured.");
  DPA_ASSIGN_OR_RETURN(HardwareRecord r,
                       bmc_->Rebind(node_id, by_reason.first, by_reason.second));
  auto value = strict_json::ParseStrictJson(AsBytes(r.value_json), r.kind);
  if (!value.ok()) return DataLossError(value.status().message());
  return nlohmann::json{{"node_id", node_id}, {"binding", *value}, {"set_by", r.set_by},
                        {"reason", r.reason}, {"set_at", r.set_at}};
}

StatusOr<nlohmann::json> VerifierService::ApproveSpdmBaselineUnaudited(
    const std::string& node_id, const std::string& target, std::string_view body,
    std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(auto by_reason, ByReason(body, /*need_reason=*/true));
  if (bmc_ == nullptr) return NotFoundError("node " + node_id + " has no BMC configured.");
  DPA_ASSIGN_OR_RETURN(HardwareRecord r, bmc_->ApproveBaseline(node_id, target, by_reason.first,
                                                                by_reason.second));
  auto value = strict_json::ParseStrictJson(AsBytes(r.value_json), r.kind);
  if (!value.ok()) return DataLossError(value.status().message());
  return nlohmann::json{{"node_id", node_id}, {"target", target}, {"baseline", *value},
                        {"set_by", r.set_by}, {"reason", r.reason}, {"set_at", r.set_at}};
}

StatusOr<nlohmann::json> VerifierService::RevokeNodeUnaudited(
    const std::string& node_id, std::string_view body,
    std::optional<std::string> bearer) {
  DPA_RETURN_IF_ERROR(CheckAdmin(bearer));
  DPA_RETURN_IF_ERROR(ValidateNodeId(node_id));
  DPA_ASSIGN_OR_RETURN(auto by_reason, ByReason(body, /*need_reason=*/true));
  DPA_ASSIGN_OR_RETURN(NodeRecord n,
                       store_->RevokeNodeFor(node_id, by_reason.first,
                                             by_reason.second,
                                             clock_.NowUnixSeconds()));
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    auto prev = store_->GetNodeStatus(node_id);
    std::optional<NodeStatusRecord> p;
    if (prev.ok()) p = *prev;
    if (!p || p->status != kStatusRevoked) {
      StatusStep step = AfterRevocation(p, node_id, clock_.NowUnixSeconds(),
                                        by_reason.second);
      if (Status s = ApplyStep(step, p ? p->status : "", {nullptr, "", by_reason.first});
          !s.ok()) {
        // The revocation stands (admission reads the node record); the
        // reconciler writes the status and the event on its next pass.
        spdlog::warn("node {} revoked, its status not yet recorded: {}", node_id,
                     s.ToString());
      }
    }
  }
  return NodeIdentityJson(n);
}

}  // namespace dpuaudit::verifier
