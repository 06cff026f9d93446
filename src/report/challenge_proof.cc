#include "report/challenge_proof.h"

#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/strict_json.h"
#include "report/jws.h"

namespace dpuaudit::report {

StatusOr<std::string> SignChallengeProof(std::string_view node_id, int64_t iat,
                                         const Signer& signer) {
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  DPA_ASSIGN_OR_RETURN(Bytes jti, RandomBytes(16));
  nlohmann::json payload = {{"iat", iat},
                            {"jti", Base64UrlEncode(jti)},
                            {"node_id", std::string(node_id)}};
  std::string text = strict_json::DumpJson(payload);
  JwsHeader header;
  header.kid = std::string(node_id);
  header.typ = std::string(kChallengeProofTyp);
  return SignCompact(AsBytes(text), signer, header);
}

StatusOr<std::string> ChallengeRequestBody(std::string_view node_id,
                                           int64_t iat, const Signer& signer) {
  DPA_ASSIGN_OR_RETURN(std::string proof,
                       SignChallengeProof(node_id, iat, signer));
  return strict_json::DumpJson(
      nlohmann::json{{"node_id", std::string(node_id)}, {"proof", proof}});
}

StatusOr<ChallengeProof> VerifyChallengeProof(std::string_view jws,
                                              const Verifier& verifier) {
  if (jws.size() > kMaxChallengeProofBytes) {
    return ResourceExhaustedError(
        "challenge proof of " + std::to_string(jws.size()) +
        " bytes exceeds " + std::to_string(kMaxChallengeProofBytes) + ".");
  }
  DPA_ASSIGN_OR_RETURN(
      VerifiedJws verified,
      VerifyJws(jws, verifier, kAlgEs256, kMaxChallengeProofBytes));
  if (verified.typ() != kChallengeProofTyp) {
    return InvalidArgumentError("challenge proof typ " +
                                strict_json::Quote(verified.typ()) + " is not " +
                                std::string(kChallengeProofTyp) + ".");
  }
  DPA_ASSIGN_OR_RETURN(nlohmann::json j,
                       strict_json::ParseStrictJson(verified.payload(),
                                                 "challenge proof payload"));
  if (!j.is_object() || j.size() != 3 || !j.contains("node_id") ||
      !j.contains("iat") || !j.contains("jti")) {
    return InvalidArgumentError(
        "challenge proof payload must be an object with exactly node_id, iat "
        "and jti.");
  }
  if (!j["node_id"].is_string() || !j["iat"].is_number_integer() ||
      !j["jti"].is_string()) {
    return InvalidArgumentError(
        "challenge proof: node_id and jti must be strings, iat an integer.");
  }
  if (j["iat"].is_number_unsigned() &&
      j["iat"].get<uint64_t>() >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidArgumentError("challenge proof iat is out of range.");
  }
  ChallengeProof p;
  p.node_id = j["node_id"].get<std::string>();
  p.iat = j["iat"].get<int64_t>();
  p.jti = j["jti"].get<std::string>();
  if (p.node_id != verified.kid()) {
    return InvalidArgumentError("challenge proof node_id " +
                                strict_json::Quote(p.node_id) +
                                " differs from its kid " +
                                strict_json::Quote(verified.kid()) + ".");
  }
  if (p.jti.size() < 22 || p.jti.size() > 64) {
    return InvalidArgumentError("challenge proof jti must be 22-64 characters.");
  }
  for (char c : p.jti) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return InvalidArgumentError("challenge proof jti must be base64url.");
    }
  }
  return p;
}

}  // namespace dpuaudit::report
