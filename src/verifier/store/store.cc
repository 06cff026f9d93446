#include "verifier/store/store.h"

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>

#include "common/bytes.h"
#include "common/strict_json.h"

namespace dpuaudit::verifier {

std::string_view NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kPending:
      return "pending";
    case NodeState::kApproved:
      return "approved";
    case NodeState::kRevoked:
      return "revoked";
  }
  return "revoked";  // unreachable; fail closed
}

std::optional<NodeState> ParseNodeState(std::string_view s) {
  if (s == "pending") return NodeState::kPending;
  if (s == "approved") return NodeState::kApproved;
  if (s == "revoked") return NodeState::kRevoked;
  return std::nullopt;
}

std::string_view TpmBindingStateName(TpmBindingState s) {
  switch (s) {
    case TpmBindingState::kPending:
      return "pending";
    case TpmBindingState::kActive:
      return "active";
  }
  return "pending";  // unreachable; fail closed (a pending AK signs nothing)
}

namespace {

bool IsLowerHex(std::string_view s) {
  return s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 && IsLowerHex(s);
}

// Non-empty, and exactly what Base64Encode would produce for its bytes.
Status CheckBase64Field(std::string_view field, std::string_view text) {
  if (text.empty()) {
    return InvalidArgumentError(std::string(field) + " is empty.");
  }
  StatusOr<Bytes> decoded = Base64Decode(text);
  if (!decoded.ok() || Base64Encode(*decoded) != text) {
    return InvalidArgumentError(std::string(field) +
                                " is not canonical base64.");
  }
  return OkStatus();
}

}  // namespace

Status ValidateTpmBinding(const TpmBinding& b) {
  if (b.node_id.empty()) return InvalidArgumentError("node_id is empty.");
  DPA_RETURN_IF_ERROR(CheckBase64Field("ek_public_b64", b.ek_public_b64));
  if (!IsSha256Hex(b.ek_sha256)) {
    return InvalidArgumentError(
        "ek_sha256 is not 64 lower-case hex characters.");
  }
  DPA_RETURN_IF_ERROR(CheckBase64Field("ak_public_b64", b.ak_public_b64));
  // A TPM name is a 2-byte algorithm id and a digest of up to 64 bytes.
  if (b.ak_name_hex.size() < 4 || b.ak_name_hex.size() > 132 ||
      b.ak_name_hex.size() % 2 != 0 || !IsLowerHex(b.ak_name_hex)) {
    return InvalidArgumentError(
        "ak_name_hex is not an even number (4 to 132) of lower-case hex "
        "characters.");
  }
  switch (b.state) {
    case TpmBindingState::kPending:
      if (!IsSha256Hex(b.credential_sha256)) {
        return InvalidArgumentError(
            "credential_sha256 of a pending binding is not 64 lower-case hex "
            "characters.");
      }
      if (b.challenge_expires_at <= b.created_at) {
        return InvalidArgumentError(
            "challenge_expires_at " + std::to_string(b.challenge_expires_at) +
            " is not after created_at " + std::to_string(b.created_at) + ".");
      }
      break;
    case TpmBindingState::kActive:
      if (!b.activated_at) {
        return InvalidArgumentError(
            "activated_at is not set on an active binding.");
      }
      break;
  }
  if (b.created_at < 0) return InvalidArgumentError("created_at is negative.");
  return OkStatus();
}

Status ValidateNodeRecord(const NodeRecord& node) {
  if (node.node_id.empty()) return InvalidArgumentError("node_id is empty.");
  if (node.public_key_pem.empty()) {
    return InvalidArgumentError("public_key_pem is empty.");
  }
  if (node.key_thumbprint.empty()) {
    return InvalidArgumentError("key_thumbprint is empty.");
  }
  if (node.alg.empty()) return InvalidArgumentError("alg is empty.");
  return OkStatus();
}

Status ValidateEnrollmentToken(const EnrollmentToken& t) {
  if (!IsSha256Hex(t.token_sha256)) {
    return InvalidArgumentError(
        "enrollment token_sha256 must be 64 lowercase hex digits.");
  }
  if (t.token_id != t.token_sha256.substr(0, 16)) {
    return InvalidArgumentError(
        "enrollment token_id must be the first 16 hex digits of its hash.");
  }
  if (t.node_id.empty())
    return InvalidArgumentError("enrollment token node_id is empty.");
  if (t.created_by.empty())
    return InvalidArgumentError("enrollment token created_by is empty.");
  if (t.expires_at <= t.created_at) {
    return InvalidArgumentError("enrollment token expires_at " +
                                std::to_string(t.expires_at) +
                                " is not after created_at " +
                                std::to_string(t.created_at) + ".");
  }
  if (t.used_at || t.revoked_at || !t.used_key_thumbprint.empty() ||
      !t.revoked_by.empty()) {
    return InvalidArgumentError(
        "a new enrollment token must be unused and unrevoked.");
  }
  return OkStatus();
}

Status CheckEnrollmentToken(const EnrollmentToken& t, std::string_view node_id,
                            std::string_view serial, int64_t now) {
  std::string name = "enrollment token " + t.token_id;
  if (t.revoked_at) {
    return UnauthenticatedError(name + " was revoked at " +
                                std::to_string(*t.revoked_at) + ".");
  }
  if (t.used_at) {
    return UnauthenticatedError(name + " was already used at " +
                                std::to_string(*t.used_at) + ".");
  }
  if (now >= t.expires_at) {
    return UnauthenticatedError(name + " expired at " +
                                std::to_string(t.expires_at) + ".");
  }
  if (t.node_id != node_id) {
    return PermissionDeniedError(name + " is for node \"" + t.node_id +
                                 "\", not \"" + std::string(node_id) + "\".");
  }
  if (!t.serial.empty() && t.serial != serial) {
    return PermissionDeniedError(
        name + " is bound to device serial \"" + t.serial +
        "\"; the enrollment states " +
        (serial.empty() ? std::string("no serial")
                        : "serial \"" + std::string(serial) + "\"") +
        ".");
  }
  return OkStatus();
}

Status ValidateReportRecord(const ReportRecord& report) {
  if (report.sha256.empty()) {
    return InvalidArgumentError("report sha256 is empty.");
  }
  if (report.accepted && !report.error.empty()) {
    return InvalidArgumentError("an accepted report must not carry an error.");
  }
  if (!report.accepted && report.error.empty()) {
    return InvalidArgumentError("a rejected report must say why (error).");
  }
  if (report.received_bytes != 0 &&
      report.received_bytes < static_cast<int64_t>(report.jws.size())) {
    return InvalidArgumentError(
        "report received_bytes is less than the stored body.");
  }
  return OkStatus();
}

Status ValidateResultRecord(const ResultRecord& result,
                            const ReportRecord& report) {
  DPA_RETURN_IF_ERROR(ValidateReportRecord(report));
  if (result.node_id.empty()) {
    return InvalidArgumentError("result node_id is empty.");
  }
  if (result.decision != kDecisionAdmit && result.decision != kDecisionDeny) {
    return InvalidArgumentError("result decision \"" + result.decision +
                                "\" must be admit or deny.");
  }
  if (!report.accepted) {
    return InvalidArgumentError("a result needs an accepted report.");
  }
  if (report.node_id != result.node_id) {
    return InvalidArgumentError("result and report name different nodes.");
  }
  if (result.report_jws_sha256 != report.sha256) {
    return InvalidArgumentError(
        "result report_jws_sha256 does not match the report's sha256.");
  }
  if (result.expires_at < result.created_at) {
    return InvalidArgumentError("result expires_at is before created_at.");
  }
  return OkStatus();
}

Status ValidateNodeRelease(std::string_view node_id, std::string_view kind,
                           std::string_view release, int64_t at) {
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  if (kind.empty()) return InvalidArgumentError("release kind is empty.");
  if (release.empty()) return InvalidArgumentError("release is empty.");
  constexpr std::string_view kLabelChars =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+:~-";
  if (release.size() > 128 ||
      release.find_first_not_of(kLabelChars) != std::string_view::npos) {
    return InvalidArgumentError(
        "release is not a release label (1-128 characters of A-Z a-z 0-9 . _ "
        "+ : ~ -).");
  }
  if (at < 0) return InvalidArgumentError("release record time is negative.");
  return OkStatus();
}

bool SameReleaseContent(const RefRelease& a, const RefRelease& b) {
  auto sorted = [](auto v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  auto value_key = [](const RefValue& v) {
    return std::tie(v.component, v.version, v.sha384, v.sha512);
  };
  auto sorted_values = [&](std::vector<RefValue> v) {
    std::sort(v.begin(), v.end(), [&](const RefValue& x, const RefValue& y) {
      return value_key(x) < value_key(y);
    });
    return v;
  };
  return a.release == b.release && a.model == b.model &&
         a.expires_at == b.expires_at &&
         sorted(a.psids) == sorted(b.psids) &&
         sorted(a.upgrade_from) == sorted(b.upgrade_from) &&
         sorted(a.compatible_with) == sorted(b.compatible_with) &&
         sorted_values(a.values) == sorted_values(b.values);
}

// --- Rules every backend shares ---------------------------------------------

namespace {

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string RevocationText(const NodeRecord& n) {
  return "revoked at " + std::to_string(n.revoked_at.value_or(0)) + " by " +
         Quoted(n.revoked_by) + " (" + n.revoke_reason + ")";
}

std::string ClaimedSerialText(const NodeRecord& n) {
  return n.claimed_serial.empty() ? "no serial claimed"
                                  : "claimed serial " + Quoted(n.claimed_serial);
}

std::string QuotaMessage(std::string_view node_id, int64_t used,
                         int64_t quota) {
  return "node " + Quoted(node_id) + " has used " + std::to_string(used) +
         " of its " + std::to_string(quota) + " bytes of report storage";
}

NodeEvent Event(std::string_view node_id, int64_t at, std::string_view event,
                std::string_view actor, std::string detail) {
  NodeEvent e;
  e.node_id = std::string(node_id);
  e.at = at;
  e.event = std::string(event);
  e.actor = std::string(actor);
  e.detail = std::move(detail);
  return e;
}

}  // namespace

Status NodeNotEnrolledError(std::string_view node_id) {
  return NotFoundError("node " + Quoted(node_id) + " is not enrolled.");
}

Status NoHardwareRecordError(std::string_view node_id, std::string_view kind) {
  return NotFoundError("node " + Quoted(node_id) + " has no " +
                       std::string(kind) + ".");
}

Status ValidateHardwareRecord(const HardwareRecord& r) {
  if (r.node_id.empty()) return InvalidArgumentError("node_id is empty.");
  bool known = false;
  for (std::string_view k : kHardwareRecordKinds) known = known || k == r.kind;
  if (!known) {
    return InvalidArgumentError("kind " + Quoted(r.kind) +
                                " is not a hardware record kind.");
  }
  if (r.value_json.empty()) return InvalidArgumentError("value_json is empty.");
  if (r.value_json.size() > kMaxHardwareRecordBytes) {
    return InvalidArgumentError("value_json is " +
                                std::to_string(r.value_json.size()) +
                                " bytes, over the " +
                                std::to_string(kMaxHardwareRecordBytes) +
                                "-byte cap.");
  }
  if (r.set_at < 0) return InvalidArgumentError("set_at is negative.");
  if (r.set_by.empty()) return InvalidArgumentError("set_by is empty.");
  return OkStatus();
}

Status NoTpmBindingError(std::string_view node_id) {
  return NotFoundError("node " + Quoted(node_id) + " has no TPM binding.");
}

Status TpmBoundToNodeError(std::string_view owner) {
  return AlreadyExistsError("this TPM is bound to node " + Quoted(owner) + ".");
}

Status ReleaseNotKnownError(std::string_view release) {
  return NotFoundError("reference release " + strict_json::Quote(release) +
                       " is not known.");
}

Status NoNodeReleaseError(std::string_view node_id, std::string_view kind) {
  return NotFoundError("no " + strict_json::Quote(kind) +
                       " release recorded for node " +
                       strict_json::Quote(node_id) + ".");
}

Status NoResultError(std::string_view node_id) {
  return NotFoundError("no result for node " + Quoted(node_id) + ".");
}

Status NoAcceptedReportError(std::string_view node_id,
                             std::string_view sha256) {
  return NotFoundError("no accepted report " + Quoted(sha256) + " of node " +
                       Quoted(node_id) + " is stored.");
}

Status EnrollmentTokenNotKnownError() {
  return NotFoundError("enrollment token is not known.");
}

Status EnrollmentTokenIdNotKnownError(std::string_view token_id) {
  return NotFoundError("enrollment token " + Quoted(token_id) +
                       " is not known.");
}

Status InvalidEnrollmentTokenError() {
  return UnauthenticatedError("enrollment token is not valid.");
}

// --- Nodes

Status CheckReEnrollment(const NodeRecord& existing, const NodeRecord& node) {
  if (existing.key_thumbprint == node.key_thumbprint &&
      existing.alg == node.alg) {
    return OkStatus();
  }
  return AlreadyExistsError("node " + Quoted(node.node_id) +
                            " is already enrolled with a different key.");
}

StatusOr<bool> ApplyApproveNode(NodeRecord& node, int64_t now) {
  switch (node.state) {
    case NodeState::kApproved:
      return false;
    case NodeState::kRevoked:
      return FailedPreconditionError("node " + Quoted(node.node_id) +
                                     " is revoked and cannot be approved.");
    case NodeState::kPending:
      break;
  }
  node.state = NodeState::kApproved;
  node.approved_at = now;
  return true;
}

bool ApplyRevokeNode(NodeRecord& node) {
  if (node.state == NodeState::kRevoked) return false;
  node.state = NodeState::kRevoked;
  return true;
}

// --- Nonces

Status ValidateNonce(std::string_view nonce, std::string_view node_id,
                     int64_t issued_at, int64_t expires_at) {
  if (nonce.empty()) return InvalidArgumentError("nonce is empty.");
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  if (expires_at <= issued_at) {
    return InvalidArgumentError(
        "nonce expires_at " + std::to_string(expires_at) +
        " is not after issued_at " + std::to_string(issued_at) + ".");
  }
  return OkStatus();
}

Status ValidateNonceCap(int64_t max_outstanding) {
  if (max_outstanding < 1) {
    return InvalidArgumentError("max_outstanding " +
                                std::to_string(max_outstanding) +
                                " must be at least 1.");
  }
  return OkStatus();
}

int64_t NoncesToEvict(int64_t outstanding, int64_t max_outstanding) {
  return outstanding >= max_outstanding ? outstanding - max_outstanding + 1
                                        : 0;
}

namespace {

Status CheckNonceOwner(const std::optional<StoredNonce>& stored,
                       std::string_view node_id) {
  if (!stored) return NotFoundError("unknown nonce.");
  if (stored->node_id != node_id) {
    return PermissionDeniedError("nonce was issued to another node.");
  }
  return OkStatus();
}

}  // namespace

Status NonceRefusal(const std::optional<StoredNonce>& stored,
                    std::string_view node_id, int64_t now) {
  DPA_RETURN_IF_ERROR(CheckNonceOwner(stored, node_id));
  if (stored->used) return FailedPreconditionError("nonce already used.");
  if (now >= stored->expires_at) {
    return DeadlineExceededError("nonce expired at " +
                                 std::to_string(stored->expires_at) + ".");
  }
  return OkStatus();
}

StatusOr<int64_t> NonceIssuedAtFor(const std::optional<StoredNonce>& stored,
                                   std::string_view node_id) {
  DPA_RETURN_IF_ERROR(CheckNonceOwner(stored, node_id));
  return stored->issued_at;
}

// --- Reports and quotas

int64_t ReportStoredBytes(const ReportRecord& report) {
  return static_cast<int64_t>(report.jws.size() + report.error.size());
}

Status ValidateRefusedReport(const ReportRecord& report) {
  DPA_RETURN_IF_ERROR(ValidateReportRecord(report));
  if (report.accepted) {
    return InvalidArgumentError("InsertRefusedReport needs a refused report.");
  }
  if (report.jws.size() > kRefusedReportPrefixBytes ||
      report.error.size() > kMaxReportErrorBytes) {
    return InvalidArgumentError(
        "a refused report is stored as a bounded record: at most " +
        std::to_string(kRefusedReportPrefixBytes) + " bytes of body and " +
        std::to_string(kMaxReportErrorBytes) + " of error.");
  }
  return OkStatus();
}

Status CheckRefusedReportQuota(const ReportRecord& report, int64_t used,
                               int64_t quota_bytes) {
  if (quota_bytes > 0 && used + ReportStoredBytes(report) > quota_bytes) {
    return ResourceExhaustedError(
        QuotaMessage(report.node_id, used, quota_bytes) +
        "; the refused report is not stored.");
  }
  return OkStatus();
}

Status CheckReportFitsQuota(const ReportRecord& report, int64_t quota_bytes) {
  const int64_t need = ReportStoredBytes(report);
  if (quota_bytes > 0 && need > quota_bytes) {
    return ResourceExhaustedError(
        "report of " + std::to_string(need) + " bytes exceeds node " +
        Quoted(report.node_id) + "'s report storage quota of " +
        std::to_string(quota_bytes) + " bytes.");
  }
  return OkStatus();
}

Status MakeReportRoom(const ReportRecord& report, int64_t used,
                      int64_t quota_bytes, const ReportRoom& room) {
  if (quota_bytes <= 0) return OkStatus();
  const int64_t need = ReportStoredBytes(report);
  while (used + need > quota_bytes) {
    DPA_ASSIGN_OR_RETURN(std::optional<int64_t> freed,
                         room.delete_oldest_refused());
    if (!freed) {
      DPA_ASSIGN_OR_RETURN(freed, room.drop_oldest_body());
      if (!freed) {
        return ResourceExhaustedError(
            QuotaMessage(report.node_id, used, quota_bytes) +
            " and has nothing left to prune.");
      }
    }
    used -= *freed;
  }
  return OkStatus();
}

// --- Retention

Status ValidateRetentionPolicy(const RetentionPolicy& policy) {
  if (policy.keep_reports < 0 || policy.keep_seconds < 0) {
    return InvalidArgumentError("retention limits must not be negative.");
  }
  return OkStatus();
}

std::optional<int64_t> RetentionCutoff(const RetentionPolicy& policy,
                                       int64_t now) {
  if (policy.keep_seconds > 0) return now - policy.keep_seconds;
  return std::nullopt;
}

RetentionAction RetentionActionFor(const RetentionCandidate& c,
                                   const RetentionPolicy& policy,
                                   int64_t now) {
  if (c.rank <= 1) return RetentionAction::kKeep;
  std::optional<int64_t> cutoff = RetentionCutoff(policy, now);
  bool outside = (policy.keep_reports > 0 && c.rank > policy.keep_reports) ||
                 (cutoff && c.created_at < *cutoff);
  if (!outside) return RetentionAction::kKeep;
  bool decision_change =
      !c.previous_decision || *c.previous_decision != c.decision;
  return decision_change ? RetentionAction::kDropBody
                         : RetentionAction::kDelete;
}

// --- Reference values

Status ValidateReleases(const std::vector<RefRelease>& releases) {
  for (size_t i = 0; i < releases.size(); ++i) {
    DPA_RETURN_IF_ERROR(ValidateRelease(releases[i])
                            .WithPrefix("releases[" + std::to_string(i) + "]"));
  }
  return OkStatus();
}

Status CheckReleaseReput(const RefRelease& stored, const RefRelease& release) {
  if (SameReleaseContent(stored, release)) return OkStatus();
  return AlreadyExistsError("reference release " +
                            strict_json::Quote(release.release) +
                            " already exists with different content.");
}

StatusOr<std::string> ReleaseModelFilter(std::string_view model) {
  if (model.empty()) return std::string();
  std::optional<std::string> c = CanonicalModel(model);
  if (!c) {
    return InvalidArgumentError("model " + strict_json::Quote(model) +
                                " is not a known BlueField model.");
  }
  return *c;
}

Status ApplyReleaseTransition(RefRelease& release,
                              const RefApproval& approval) {
  if (!RefTransitionAllowed(release.state, approval.state)) {
    return FailedPreconditionError(
        "release " + strict_json::Quote(release.release) + " is " +
        std::string(RefStateName(release.state)) + "; cannot move it to " +
        std::string(RefStateName(approval.state)) + ".");
  }
  release.state = approval.state;
  release.history.push_back(approval);
  return ValidateRelease(release);
}

// --- TPM bindings

Status ValidatePendingTpmBinding(const TpmBinding& binding) {
  if (binding.state != TpmBindingState::kPending) {
    return InvalidArgumentError("a TPM binding must be put in state pending.");
  }
  return ValidateTpmBinding(binding);
}

Status ValidateNodeWithTpmBinding(const NodeRecord& node,
                                  const TpmBinding& binding) {
  DPA_RETURN_IF_ERROR(ValidateNodeRecord(node));
  DPA_RETURN_IF_ERROR(ValidatePendingTpmBinding(binding));
  if (binding.node_id != node.node_id) {
    return InvalidArgumentError("TPM binding is for node " +
                                Quoted(binding.node_id) + ", not " +
                                Quoted(node.node_id) + ".");
  }
  return OkStatus();
}

StatusOr<bool> TpmBindingNeedsWrite(const std::optional<TpmBinding>& stored,
                                    const TpmBinding& binding) {
  if (!stored || stored->state != TpmBindingState::kActive) return true;
  if (stored->ek_sha256 == binding.ek_sha256 &&
      stored->ek_public_b64 == binding.ek_public_b64 &&
      stored->ak_name_hex == binding.ak_name_hex &&
      stored->ak_public_b64 == binding.ak_public_b64) {
    return false;  // the same TPM and AK; left as it is
  }
  return AlreadyExistsError("node " + Quoted(binding.node_id) +
                            " is bound to another TPM.");
}

Status CheckUnvouchedTpmEnrollment(const NodeRecord& existing,
                                   const std::optional<TpmBinding>& stored,
                                   const TpmBinding& binding) {
  if (!stored) {
    if (existing.state == NodeState::kPending) return OkStatus();
    return PermissionDeniedError("node " + Quoted(existing.node_id) + " is " +
                                 std::string(NodeStateName(existing.state)) +
                                 "; adding a TPM to it needs the bootstrap "
                                 "token.");
  }
  if (stored->ek_sha256 != binding.ek_sha256 ||
      stored->ak_name_hex != binding.ak_name_hex) {
    return FailedPreconditionError("node " + Quoted(existing.node_id) +
                                   " is bound to another TPM; rebinding it "
                                   "needs the bootstrap token.");
  }
  if (stored->state == TpmBindingState::kPending &&
      stored->challenge_expires_at > binding.created_at) {
    return FailedPreconditionError(
        "node " + Quoted(existing.node_id) +
        " has a TPM credential challenge outstanding until " +
        std::to_string(stored->challenge_expires_at) +
        "; activate it, or enroll again after it expires or with the "
        "bootstrap token.");
  }
  return OkStatus();
}

Status CheckTpmActivation(const std::optional<TpmBinding>& stored,
                          std::string_view node_id,
                          std::string_view credential_sha256, int64_t now) {
  if (!stored) return NoTpmBindingError(node_id);
  if (stored->state == TpmBindingState::kActive) {
    return FailedPreconditionError("TPM binding of node " + Quoted(node_id) +
                                   " is already active.");
  }
  if (!ConstantTimeEquals(AsBytes(stored->credential_sha256),
                          AsBytes(credential_sha256))) {
    return FailedPreconditionError("credential does not match.");
  }
  if (now >= stored->challenge_expires_at) {
    return DeadlineExceededError("credential challenge expired at " +
                                 std::to_string(stored->challenge_expires_at) +
                                 ".");
  }
  return OkStatus();
}

Status CheckTpmBindingDeletion(const std::optional<TpmBinding>& stored,
                               std::string_view node_id, bool allow_active) {
  if (!stored) return NoTpmBindingError(node_id);
  if (stored->state == TpmBindingState::kActive && !allow_active) {
    return FailedPreconditionError(
        "TPM binding of node " + Quoted(node_id) +
        " is active (credential activation proved it is the node's TPM); "
        "deleting it needs --force.");
  }
  return OkStatus();
}

// --- Enrollment and identity

Status ValidateEnrollRequest(const NodeRecord& node,
                             const std::optional<TpmBinding>& binding,
                             const EnrollGrant& grant) {
  if (binding) {
    DPA_RETURN_IF_ERROR(ValidateNodeWithTpmBinding(node, *binding));
  } else {
    DPA_RETURN_IF_ERROR(ValidateNodeRecord(node));
  }
  if (!grant.token_sha256.empty() &&
      grant.authority != EnrollAuthority::kBootstrapToken) {
    return InvalidArgumentError(
        "an enrollment token grant must have authority kBootstrapToken.");
  }
  if (node.state != NodeState::kPending || node.approved_at ||
      node.revoked_at) {
    return InvalidArgumentError(
        "EnrollNode takes a pending node; the grant approves it.");
  }
  return OkStatus();
}

bool PendingExpired(const NodeRecord& node, int64_t now, int64_t ttl_seconds) {
  return node.state == NodeState::kPending && ttl_seconds > 0 &&
         node.enrolled_at <= now - ttl_seconds;
}

int64_t UnexpiredPendingAfter(int64_t now, int64_t ttl_seconds) {
  return ttl_seconds > 0 ? now - ttl_seconds
                         : std::numeric_limits<int64_t>::min();
}

bool PendingCapApplies(const EnrollGrant& grant) {
  return grant.authority == EnrollAuthority::kNone && grant.max_pending > 0;
}

Status CheckPendingCap(int64_t pending, const EnrollGrant& grant) {
  if (PendingCapApplies(grant) && pending >= grant.max_pending) {
    return UnavailableError(
        "the verifier holds " + std::to_string(pending) +
        " pending enrollments, its limit; approve or reject some "
        "(dpuaudit-verifier nodes list), let them expire, or enroll with a "
        "per-node enrollment token.");
  }
  return OkStatus();
}

std::string TokenActor(const EnrollmentToken& token) {
  return "enrollment token " + token.token_id + " (issued by " +
         token.created_by + ")";
}

StatusOr<EnrollAction> PlanEnrollment(const std::optional<NodeRecord>& existing,
                                      const NodeRecord& node, bool has_token) {
  if (!existing) return EnrollAction::kCreate;
  const std::string& id = node.node_id;
  if (existing->state == NodeState::kRevoked) {
    if (!has_token) {
      return PermissionDeniedError(
          "node " + Quoted(id) + " was " + RevocationText(*existing) +
          "; re-enrolling it needs a per-node enrollment token issued by an "
          "admin (dpuaudit tokens issue " + id + ").");
    }
    return EnrollAction::kReEnrollRevoked;
  }
  if (has_token && existing->key_thumbprint != node.key_thumbprint) {
    if (existing->state != NodeState::kPending || existing->approved_at) {
      return AlreadyExistsError(
          "node " + Quoted(id) + " is approved with another key (" +
          existing->key_thumbprint + "); revoke it first (dpuaudit nodes "
          "revoke " + id + "), then enroll it with a new per-node token.");
    }
    return EnrollAction::kTakeOver;
  }
  return EnrollAction::kCreate;
}

Status ValidateApprovalRequest(const ApprovalRequest& req) {
  if (req.by.empty()) {
    return InvalidArgumentError("who approves (--by) is required.");
  }
  if (req.key_thumbprint.empty()) {
    return InvalidArgumentError(
        "the key thumbprint to approve (--thumbprint) is required.");
  }
  return OkStatus();
}

StatusOr<bool> ApplyEnrollmentApproval(NodeRecord& node,
                                       const ApprovalRequest& req) {
  const std::string& node_id = node.node_id;
  if (node.state == NodeState::kRevoked) {
    return FailedPreconditionError(
        "node " + Quoted(node_id) + " was " + RevocationText(node) +
        "; it cannot be approved (re-enroll it with a per-node enrollment "
        "token).");
  }
  if (node.key_thumbprint != req.key_thumbprint) {
    return FailedPreconditionError(
        "node " + Quoted(node_id) + " is enrolled with key thumbprint " +
        node.key_thumbprint + " (" + ClaimedSerialText(node) + "), not " +
        req.key_thumbprint +
        "; refusing to approve it. If that key is not your device's, reject "
        "it (dpuaudit-verifier reject " + node_id +
        ") and enroll the device with a per-node enrollment token.");
  }
  if (node.state == NodeState::kApproved) {
    if (!req.serial.empty() && req.serial != node.device_serial) {
      return FailedPreconditionError(
          "node " + Quoted(node_id) + " is approved with device serial " +
          Quoted(node.device_serial) + ", not " + Quoted(req.serial) + ".");
    }
    return false;
  }
  if (PendingExpired(node, req.now, req.pending_ttl_seconds)) {
    return DeadlineExceededError(
        "the pending enrollment of node " + Quoted(node_id) + " expired at " +
        std::to_string(node.enrolled_at + req.pending_ttl_seconds) +
        "; the device must enroll again.");
  }
  if (!req.serial.empty() && !node.claimed_serial.empty() &&
      req.serial != node.claimed_serial) {
    return FailedPreconditionError(
        "node " + Quoted(node_id) + " claims device serial " +
        Quoted(node.claimed_serial) + ", not " + Quoted(req.serial) +
        "; refusing to approve it.");
  }
  node.state = NodeState::kApproved;
  node.approved_at = req.now;
  node.approved_by = req.by;
  node.device_serial = req.serial.empty() ? node.claimed_serial : req.serial;
  return true;
}

Status ValidateRejection(std::string_view by) {
  if (by.empty()) return InvalidArgumentError("who rejects (--by) is required.");
  return OkStatus();
}

Status CheckRejection(const NodeRecord& node) {
  if (node.state != NodeState::kPending) {
    return FailedPreconditionError(
        "node " + Quoted(node.node_id) + " is " +
        std::string(NodeStateName(node.state)) +
        "; only a pending node can be rejected (use revoke).");
  }
  return OkStatus();
}

Status ValidateRevocation(std::string_view by, std::string_view reason) {
  if (by.empty()) return InvalidArgumentError("who revokes (by) is required.");
  if (reason.empty()) {
    return InvalidArgumentError("why (reason) is required to revoke a node.");
  }
  return OkStatus();
}

bool ApplyRevocationFor(NodeRecord& node, std::string_view by,
                        std::string_view reason, int64_t now) {
  if (node.state == NodeState::kRevoked) return false;
  node.state = NodeState::kRevoked;
  node.revoked_at = now;
  node.revoked_by = std::string(by);
  node.revoke_reason = std::string(reason);
  return true;
}

std::string TokenRevocationActor(std::string_view by) {
  return "revocation of the node by " + std::string(by);
}

Status ValidateTokenRevocation(std::string_view by) {
  if (by.empty()) return InvalidArgumentError("who revokes (by) is required.");
  return OkStatus();
}

StatusOr<bool> ApplyTokenRevocation(EnrollmentToken& token,
                                    std::string_view by, int64_t now) {
  if (token.used_at) {
    return FailedPreconditionError(
        "enrollment token " + token.token_id + " was used at " +
        std::to_string(*token.used_at) + " (node " + Quoted(token.node_id) +
        "); revoke the node instead.");
  }
  if (token.revoked_at) return false;
  token.revoked_at = now;
  token.revoked_by = std::string(by);
  return true;
}

// --- History

NodeEvent EnrolledEvent(const NodeRecord& node, bool with_tpm,
                        std::string_view actor, int64_t at) {
  return Event(node.node_id, at, "enrolled", actor,
               "enrolled with key " + node.key_thumbprint + " (" +
                   ClaimedSerialText(node) + ")" +
                   (with_tpm ? " and a TPM" : "") + ".");
}

NodeEvent ApprovedEvent(const NodeRecord& node, std::string_view actor,
                        std::string_view reason, int64_t at) {
  return Event(
      node.node_id, at, "approved", actor,
      "approved key " + node.key_thumbprint +
          (node.device_serial.empty()
               ? std::string(" (no device serial pinned)")
               : " pinned to device serial " + Quoted(node.device_serial)) +
          (reason.empty() ? std::string() : ": " + std::string(reason)) + ".");
}

NodeEvent ExpiredOnEnrollEvent(const NodeRecord& expired, int64_t at) {
  return Event(expired.node_id, at, "expired", "",
               "pending enrollment with key " + expired.key_thumbprint +
                   " expired unapproved; the id is free again.");
}

NodeEvent ExpiredPendingEvent(std::string_view node_id, int64_t at) {
  return Event(node_id, at, "expired", "",
               "pending enrollment expired unapproved and was removed.");
}

NodeEvent ReEnrolledEvent(const NodeRecord& revoked, const NodeRecord& node,
                          std::string_view actor, int64_t at) {
  return Event(node.node_id, at, "re_enrolled", actor,
               "re-enrolled after it was " + RevocationText(revoked) +
                   "; key " + revoked.key_thumbprint + " replaced by " +
                   node.key_thumbprint + ".");
}

NodeEvent KeyReplacedEvent(const NodeRecord& squatter, const NodeRecord& node,
                           std::string_view actor, int64_t at) {
  return Event(node.node_id, at, "key_replaced", actor,
               "pending key " + squatter.key_thumbprint + " (" +
                   ClaimedSerialText(squatter) + ") replaced by " +
                   node.key_thumbprint + ".");
}

NodeEvent RejectedEvent(const NodeRecord& node, std::string_view by,
                        std::string_view reason, int64_t at) {
  return Event(
      node.node_id, at, "rejected", by,
      "pending key " + node.key_thumbprint + " (" + ClaimedSerialText(node) +
          ") rejected and removed" +
          (reason.empty() ? std::string() : ": " + std::string(reason)) + ".");
}

NodeEvent RevokedEvent(const NodeRecord& node, NodeState was,
                       std::string_view by, std::string_view reason,
                       int64_t at) {
  return Event(node.node_id, at, "revoked", by,
               "revoked (was " + std::string(NodeStateName(was)) + ", key " +
                   node.key_thumbprint + "): " + std::string(reason) + ".");
}

}  // namespace dpuaudit::verifier
