#include "verifier/store/store.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "common/bytes.h"

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

}  // namespace dpuaudit::verifier
