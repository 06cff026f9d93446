#include "verifier/appraisal_context.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "common/strict_json.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;
using strict_json::ObjectReader;
using strict_json::Quote;

json OptInt(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

StatusOr<std::optional<int64_t>> ReadOptInt(ObjectReader& r, std::string_view key) {
  DPA_ASSIGN_OR_RETURN(const json* j, r.Any(key));
  if (j->is_null()) return std::optional<int64_t>();
  if (!j->is_number_integer()) {
    return InvalidArgumentError(r.PathOf(key) + " must be an integer or null.");
  }
  return std::optional<int64_t>(j->get<int64_t>());
}

json NodeJson(const NodeRecord& n) {
  return {{"node_id", n.node_id},
          {"public_key_pem", n.public_key_pem},
          {"key_thumbprint", n.key_thumbprint},
          {"alg", n.alg},
          {"state", std::string(NodeStateName(n.state))},
          {"enrolled_at", n.enrolled_at},
          {"approved_at", OptInt(n.approved_at)},
          {"device_serial", n.device_serial},
          {"claimed_serial", n.claimed_serial},
          {"claimed_psid", n.claimed_psid},
          {"claimed_model", n.claimed_model},
          {"approved_by", n.approved_by},
          {"revoked_at", OptInt(n.revoked_at)},
          {"revoked_by", n.revoked_by},
          {"revoke_reason", n.revoke_reason},
          {"stale_result_id", n.stale_result_id}};
}

StatusOr<NodeRecord> ParseNode(const json& j) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, "node"));
  NodeRecord n;
  DPA_ASSIGN_OR_RETURN(n.node_id, r.String("node_id"));
  DPA_ASSIGN_OR_RETURN(n.public_key_pem, r.String("public_key_pem"));
  DPA_ASSIGN_OR_RETURN(n.key_thumbprint, r.String("key_thumbprint"));
  DPA_ASSIGN_OR_RETURN(n.alg, r.String("alg"));
  DPA_ASSIGN_OR_RETURN(std::string state, r.String("state"));
  std::optional<NodeState> st = ParseNodeState(state);
  if (!st) return InvalidArgumentError("node.state " + Quote(state) + " is not known.");
  n.state = *st;
  DPA_ASSIGN_OR_RETURN(n.enrolled_at, r.Int64("enrolled_at"));
  DPA_ASSIGN_OR_RETURN(n.approved_at, ReadOptInt(r, "approved_at"));
  DPA_ASSIGN_OR_RETURN(n.device_serial, r.String("device_serial"));
  DPA_ASSIGN_OR_RETURN(n.claimed_serial, r.String("claimed_serial"));
  DPA_ASSIGN_OR_RETURN(n.claimed_psid, r.String("claimed_psid"));
  DPA_ASSIGN_OR_RETURN(n.claimed_model, r.String("claimed_model"));
  DPA_ASSIGN_OR_RETURN(n.approved_by, r.String("approved_by"));
  DPA_ASSIGN_OR_RETURN(n.revoked_at, ReadOptInt(r, "revoked_at"));
  DPA_ASSIGN_OR_RETURN(n.revoked_by, r.String("revoked_by"));
  DPA_ASSIGN_OR_RETURN(n.revoke_reason, r.String("revoke_reason"));
  DPA_ASSIGN_OR_RETURN(n.stale_result_id, r.Int64("stale_result_id"));
  DPA_RETURN_IF_ERROR(r.Finish());
  return n;
}

json BindingJson(const TpmBinding& b) {
  return {{"node_id", b.node_id},
          {"ek_public_b64", b.ek_public_b64},
          {"ek_sha256", b.ek_sha256},
          {"ek_cert_pem", b.ek_cert_pem},
          {"ek_cert_issuer", b.ek_cert_issuer},
          {"ak_public_b64", b.ak_public_b64},
          {"ak_name_hex", b.ak_name_hex},
          {"state", std::string(TpmBindingStateName(b.state))},
          {"credential_sha256", b.credential_sha256},
          {"challenge_expires_at", b.challenge_expires_at},
          {"created_at", b.created_at},
          {"activated_at", OptInt(b.activated_at)}};
}

StatusOr<TpmBinding> ParseBinding(const json& j) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, "tpm_binding"));
  TpmBinding b;
  DPA_ASSIGN_OR_RETURN(b.node_id, r.String("node_id"));
  DPA_ASSIGN_OR_RETURN(b.ek_public_b64, r.String("ek_public_b64"));
  DPA_ASSIGN_OR_RETURN(b.ek_sha256, r.String("ek_sha256"));
  DPA_ASSIGN_OR_RETURN(b.ek_cert_pem, r.String("ek_cert_pem"));
  DPA_ASSIGN_OR_RETURN(b.ek_cert_issuer, r.String("ek_cert_issuer"));
  DPA_ASSIGN_OR_RETURN(b.ak_public_b64, r.String("ak_public_b64"));
  DPA_ASSIGN_OR_RETURN(b.ak_name_hex, r.String("ak_name_hex"));
  DPA_ASSIGN_OR_RETURN(std::string state, r.String("state"));
  if (state == "pending") {
    b.state = TpmBindingState::kPending;
  } else if (state == "active") {
    b.state = TpmBindingState::kActive;
  } else {
    return InvalidArgumentError("tpm_binding.state " + Quote(state) + " is not known.");
  }
  DPA_ASSIGN_OR_RETURN(b.credential_sha256, r.String("credential_sha256"));
  DPA_ASSIGN_OR_RETURN(b.challenge_expires_at, r.Int64("challenge_expires_at"));
  DPA_ASSIGN_OR_RETURN(b.created_at, r.Int64("created_at"));
  DPA_ASSIGN_OR_RETURN(b.activated_at, ReadOptInt(r, "activated_at"));
  DPA_RETURN_IF_ERROR(r.Finish());
  return b;
}

}  // namespace

std::string AppraisalContextJson(const AppraisalContext& c) {
  json anchors = json::array();
  for (const report::CollateralRef& a : c.trust_anchors) {
    anchors.push_back({{"set", a.set}, {"sha256", a.sha256}});
  }
  json j = {
      {"context", kAppraisalContextFormat},
      {"now", c.now},
      {"verifier_id",
       {{"developer", c.verifier_id.developer},
        {"build", c.verifier_id.build},
        {"instance", c.verifier_id.instance}}},
      {"policy_sha256", c.policy_sha256},
      {"refvals_sha256", c.refvals_sha256},
      {"previous_release", c.previous_release},
      {"node", NodeJson(c.node)},
      {"tpm_binding", c.tpm_binding ? BindingJson(*c.tpm_binding) : json(nullptr)},
      {"bmc",
       {{"configured", c.bmc_configured},
        {"max_age_seconds", c.bmc_max_age_seconds},
        {"key_sha256", c.bmc_key_sha256},
        {"pulled_at", OptInt(c.bmc_pulled_at)}}},
      {"trust_anchors", std::move(anchors)}};
  return strict_json::DumpJson(j);
}

StatusOr<AppraisalContext> ParseAppraisalContext(std::string_view json_text) {
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(AsBytes(json_text),
                                                            "appraisal context"));
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, ""));
  DPA_ASSIGN_OR_RETURN(std::string format, r.String("context"));
  if (format != kAppraisalContextFormat) {
    return InvalidArgumentError("context " + Quote(format) + " is not " +
                                std::string(kAppraisalContextFormat) + ".");
  }
  AppraisalContext c;
  DPA_ASSIGN_OR_RETURN(c.now, r.Int64("now"));
  DPA_ASSIGN_OR_RETURN(const json* vid, r.Object("verifier_id"));
  {
    DPA_ASSIGN_OR_RETURN(ObjectReader v, ObjectReader::New(*vid, "verifier_id"));
    DPA_ASSIGN_OR_RETURN(c.verifier_id.developer, v.String("developer"));
    DPA_ASSIGN_OR_RETURN(c.verifier_id.build, v.String("build"));
    DPA_ASSIGN_OR_RETURN(c.verifier_id.instance, v.String("instance"));
    DPA_RETURN_IF_ERROR(v.Finish());
  }
  DPA_ASSIGN_OR_RETURN(c.policy_sha256, r.String("policy_sha256"));
  DPA_ASSIGN_OR_RETURN(c.refvals_sha256, r.String("refvals_sha256"));
  if (!IsLowerHexOfLength(c.policy_sha256, 64) || !IsLowerHexOfLength(c.refvals_sha256, 64)) {
    return InvalidArgumentError("policy_sha256 and refvals_sha256 must be 64 lower-case "
                                "hex digits.");
  }
  DPA_ASSIGN_OR_RETURN(c.previous_release, r.String("previous_release"));
  DPA_ASSIGN_OR_RETURN(const json* node, r.Object("node"));
  DPA_ASSIGN_OR_RETURN(c.node, ParseNode(*node));
  DPA_ASSIGN_OR_RETURN(const json* binding, r.Any("tpm_binding"));
  if (!binding->is_null()) {
    DPA_ASSIGN_OR_RETURN(TpmBinding b, ParseBinding(*binding));
    c.tpm_binding = std::move(b);
  }
  DPA_ASSIGN_OR_RETURN(const json* bmc, r.Object("bmc"));
  {
    DPA_ASSIGN_OR_RETURN(ObjectReader b, ObjectReader::New(*bmc, "bmc"));
    DPA_ASSIGN_OR_RETURN(c.bmc_configured, b.Bool("configured"));
    DPA_ASSIGN_OR_RETURN(c.bmc_max_age_seconds, b.Int64("max_age_seconds"));
    DPA_ASSIGN_OR_RETURN(c.bmc_key_sha256, b.String("key_sha256"));
    DPA_ASSIGN_OR_RETURN(c.bmc_pulled_at, ReadOptInt(b, "pulled_at"));
    DPA_RETURN_IF_ERROR(b.Finish());
  }
  DPA_ASSIGN_OR_RETURN(const json* anchors, r.Array("trust_anchors"));
  for (size_t i = 0; i < anchors->size(); ++i) {
    DPA_ASSIGN_OR_RETURN(ObjectReader a,
                         ObjectReader::New((*anchors)[i], strict_json::Index("trust_anchors", i)));
    report::CollateralRef ref;
    DPA_ASSIGN_OR_RETURN(ref.set, a.String("set"));
    DPA_ASSIGN_OR_RETURN(ref.sha256, a.String("sha256"));
    DPA_RETURN_IF_ERROR(a.Finish());
    c.trust_anchors.push_back(std::move(ref));
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  if (AppraisalContextJson(c) != json_text) {
    return InvalidArgumentError("the appraisal context is not in canonical form.");
  }
  return c;
}

}  // namespace dpuaudit::verifier
