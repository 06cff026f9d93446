// VerifierService::Rekey (service.h, issue 15 keys block): a node replaces
// its own key with a request signed by its current key, proving possession
// of the new one (report/rekey.h, docs/rekey-schema.md).
#include <algorithm>

#include "common/strict_json.h"
#include "report/jws.h"
#include "report/node_id.h"
#include "report/rekey.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {

StatusOr<nlohmann::json> VerifierService::Rekey(const std::string& node_id,
                                                std::string_view body,
                                                std::string_view client) {
  bool authenticated = false;
  StatusOr<nlohmann::json> r = RekeyChecked(node_id, body, &authenticated);
  if (!r.ok() && !authenticated) {
    // Whoever sent a request the node did not sign pays for it.
    DPA_RETURN_IF_ERROR(refused_challenge_limit_.Take(client));
  }
  return r;
}

StatusOr<nlohmann::json> VerifierService::RekeyChecked(
    const std::string& node_id, std::string_view body, bool* authenticated) {
  // 1. Size, before anything is read.
  if (body.size() > report::kMaxRekeyRequestBytes) {
    return ResourceExhaustedError("rekey request of " + std::to_string(body.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(report::kMaxRekeyRequestBytes) + ".");
  }
  // 2. The node exists and is approved.
  DPA_RETURN_IF_ERROR(report::ValidateNodeId(node_id, "node id"));
  DPA_ASSIGN_OR_RETURN(NodeRecord node, store_->GetNode(node_id));
  if (node.state == NodeState::kRevoked) {
    return PermissionDeniedError("node " + node_id +
                                 " is revoked; a revoked node cannot re-key.");
  }
  if (node.state != NodeState::kApproved) {
    return FailedPreconditionError("node " + node_id +
                                   " is not approved; it cannot re-key.");
  }
  // 3. The signature under the pinned key, before the payload is parsed.
  DPA_ASSIGN_OR_RETURN(std::shared_ptr<const Verifier> verifier, NodeVerifier(node));
  DPA_ASSIGN_OR_RETURN(report::RekeyRequest req,
                       report::VerifyRekeyRequest(body, *verifier));
  // 4. For this node.
  if (req.node_id != node_id) {
    return UnauthenticatedError("rekey request is for node " +
                                strict_json::Quote(req.node_id) + ", not " + node_id + ".");
  }
  // 5. Fresh.
  const int64_t now = clock_.NowUnixSeconds();
  if (req.iat > now + kChallengeProofSkewSeconds ||
      req.iat < now - kChallengeProofSkewSeconds) {
    return UnauthenticatedError("rekey request iat " + std::to_string(req.iat) +
                                " is more than " +
                                std::to_string(kChallengeProofSkewSeconds) +
                                " s from verifier time " + std::to_string(now) + ".");
  }
  // 6. Single use: the challenge proofs' jti memory (a jti is random, so
  // the two kinds never collide), entries only once the node's budget paid.
  {
    std::lock_guard<std::mutex> lock(proof_mu_);
    auto& seen = seen_proofs_[node_id];
    for (auto it = seen.begin(); it != seen.end();) {
      it = it->second <= now ? seen.erase(it) : std::next(it);
    }
    if (seen.count(req.jti)) {
      return UnauthenticatedError("rekey request was already used.");
    }
    *authenticated = true;
    DPA_RETURN_IF_ERROR(challenge_limit_.Take(node_id));
    if (seen.size() >= kMaxSeenProofsPerNode) {
      auto oldest = std::min_element(
          seen.begin(), seen.end(),
          [](const auto& a, const auto& b) { return a.second < b.second; });
      seen.erase(oldest);
    }
    seen.emplace(req.jti, req.iat + kChallengeProofSkewSeconds + 1);
  }
  // 7. The new key: P-256, not the old one, and its holder signed the proof.
  DPA_ASSIGN_OR_RETURN(EcPublicKey old, EcPublicKey::FromPem(node.public_key_pem));
  DPA_ASSIGN_OR_RETURN(EcPublicKey fresh, report::VerifyNewKey(req, old));
  // 8. Atomic replacement (compare-and-swap on the old thumbprint).
  NodeRekey r;
  r.old_thumbprint = node.key_thumbprint;
  r.public_key_pem = fresh.ToPem();
  r.key_thumbprint = fresh.Thumbprint();
  r.alg = std::string(report::kAlgEs256);
  r.now = now;
  DPA_ASSIGN_OR_RETURN(NodeRecord stored, store_->RekeyNode(node_id, r));
  return nlohmann::json{{"node_id", stored.node_id},
                        {"state", NodeStateName(stored.state)},
                        {"key_thumbprint", stored.key_thumbprint},
                        {"previous_key_thumbprint", node.key_thumbprint},
                        {"public_key", report::PublicJwk(fresh, stored.key_thumbprint)},
                        {"rekeyed_at", now}};
}

}  // namespace dpuaudit::verifier
