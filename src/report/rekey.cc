#include "report/rekey.h"

#include <cctype>
#include <limits>

#include "common/strict_json.h"
#include "report/jws.h"

namespace dpuaudit::report {
namespace {

Status CheckJti(const std::string& jti) {
  if (jti.size() < 22 || jti.size() > 64) {
    return InvalidArgumentError("rekey request jti must be 22-64 characters.");
  }
  for (char c : jti) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return InvalidArgumentError("rekey request jti must be base64url.");
    }
  }
  return OkStatus();
}

std::string ProofPayload(std::string_view node_id, int64_t iat,
                         std::string_view jti) {
  return strict_json::DumpJson(nlohmann::json{{"iat", iat},
                                              {"jti", std::string(jti)},
                                              {"node_id", std::string(node_id)}});
}

}  // namespace

StatusOr<std::string> SignRekeyRequest(std::string_view node_id, int64_t iat,
                                       const Signer& current,
                                       const EcPrivateKey& new_key) {
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  DPA_ASSIGN_OR_RETURN(Bytes jti_bytes, RandomBytes(16));
  std::string jti = Base64UrlEncode(jti_bytes);
  DPA_ASSIGN_OR_RETURN(auto new_signer, Es256Signer::New(new_key));
  const std::string thumbprint = new_key.public_key().Thumbprint();
  JwsHeader proof_header;
  proof_header.kid = thumbprint;
  proof_header.typ = std::string(kRekeyProofTyp);
  DPA_ASSIGN_OR_RETURN(
      std::string proof,
      SignCompact(AsBytes(ProofPayload(node_id, iat, jti)), *new_signer,
                  proof_header));
  nlohmann::json payload = {{"iat", iat},
                            {"jti", jti},
                            {"new_key_proof", proof},
                            {"new_public_key", PublicJwk(new_key.public_key(), thumbprint)},
                            {"node_id", std::string(node_id)}};
  JwsHeader header;
  header.kid = std::string(node_id);
  header.typ = std::string(kRekeyTyp);
  return SignCompact(AsBytes(strict_json::DumpJson(payload)), current, header);
}

StatusOr<RekeyRequest> ParseRekeyPayload(ByteView payload, std::string_view kid) {
  DPA_ASSIGN_OR_RETURN(nlohmann::json j,
                       strict_json::ParseStrictJson(payload, "rekey request payload"));
  if (!j.is_object() || j.size() != 5 || !j.contains("node_id") ||
      !j.contains("iat") || !j.contains("jti") || !j.contains("new_public_key") ||
      !j.contains("new_key_proof")) {
    return InvalidArgumentError(
        "rekey request payload must be an object with exactly node_id, iat, jti, "
        "new_public_key and new_key_proof.");
  }
  if (!j["node_id"].is_string() || !j["iat"].is_number_integer() ||
      !j["jti"].is_string() || !j["new_public_key"].is_object() ||
      !j["new_key_proof"].is_string()) {
    return InvalidArgumentError(
        "rekey request: node_id, jti and new_key_proof must be strings, iat an "
        "integer, new_public_key a JWK object.");
  }
  if (j["iat"].is_number_unsigned() &&
      j["iat"].get<uint64_t>() >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidArgumentError("rekey request iat is out of range.");
  }
  RekeyRequest r;
  r.node_id = j["node_id"].get<std::string>();
  r.iat = j["iat"].get<int64_t>();
  r.jti = j["jti"].get<std::string>();
  r.new_public_key = j["new_public_key"];
  r.new_key_proof = j["new_key_proof"].get<std::string>();
  if (r.node_id != kid) {
    return InvalidArgumentError("rekey request node_id " + strict_json::Quote(r.node_id) +
                                " differs from its kid " + strict_json::Quote(kid) + ".");
  }
  DPA_RETURN_IF_ERROR(CheckJti(r.jti));
  return r;
}

StatusOr<RekeyRequest> VerifyRekeyRequest(std::string_view jws,
                                          const Verifier& current) {
  if (jws.size() > kMaxRekeyRequestBytes) {
    return ResourceExhaustedError("rekey request of " + std::to_string(jws.size()) +
                                  " bytes exceeds " +
                                  std::to_string(kMaxRekeyRequestBytes) + ".");
  }
  auto verified = VerifyJws(jws, current, kAlgEs256, kMaxRekeyRequestBytes);
  if (!verified.ok()) {
    return UnauthenticatedError(
        "rekey request is not signed by the node's current key: " +
        std::string(verified.status().message()));
  }
  if (verified->typ() != kRekeyTyp) {
    return InvalidArgumentError("rekey request typ " + strict_json::Quote(verified->typ()) +
                                " is not " + std::string(kRekeyTyp) + ".");
  }
  return ParseRekeyPayload(verified->payload(), verified->kid());
}

StatusOr<EcPublicKey> VerifyNewKey(const RekeyRequest& request,
                                   const EcPublicKey& old) {
  auto key = ParsePublicJwk(request.new_public_key);
  if (!key.ok()) {
    return InvalidArgumentError("rekey request new_public_key: " +
                                std::string(key.status().message()));
  }
  const std::string thumbprint = key->Thumbprint();
  if (thumbprint == old.Thumbprint()) {
    return InvalidArgumentError(
        "rekey request new_public_key is the node's current key.");
  }
  DPA_ASSIGN_OR_RETURN(auto verifier, Es256Verifier::New(*key));
  auto proof = VerifyJws(request.new_key_proof, *verifier, kAlgEs256,
                         kMaxRekeyRequestBytes);
  if (!proof.ok()) {
    return UnauthenticatedError(
        "rekey request new_key_proof is not signed by new_public_key: " +
        std::string(proof.status().message()));
  }
  if (proof->typ() != kRekeyProofTyp || proof->kid() != thumbprint) {
    return UnauthenticatedError("rekey request new_key_proof must have typ " +
                                std::string(kRekeyProofTyp) +
                                " and kid the new key's thumbprint " + thumbprint + ".");
  }
  auto j = strict_json::ParseStrictJson(proof->payload(), "new_key_proof payload");
  if (!j.ok() || !j->is_object() || j->size() != 3 ||
      strict_json::DumpJson(*j) !=
          ProofPayload(request.node_id, request.iat, request.jti)) {
    return UnauthenticatedError(
        "rekey request new_key_proof is not for this request (its node_id, iat and "
        "jti must equal the request's).");
  }
  return *std::move(key);
}

}  // namespace dpuaudit::report
