// Challenge proofs (issue 12 item 9): POST /v1/challenges carries
// {"node_id": "...", "proof": "<compact JWS>"}, where the proof is signed
// with the node's own key so that nobody else can spend the node's
// challenge budget.
//
//   header  {"alg":"ES256","kid":<node id>,"typ":"dpuaudit-challenge+jws"}
//   payload {"iat":<unix seconds>,"jti":<base64url of 16 random bytes>,
//            "node_id":<node id>}
//
// Guarantees: VerifyChallengeProof checks, in this order: size (at most
// kMaxChallengeProofBytes, RESOURCE_EXHAUSTED), the JWS (report/jws.h
// VerifyJws with ES256 pinned: shape, header, signature under `verifier`;
// UNAUTHENTICATED / INVALID_ARGUMENT), typ (INVALID_ARGUMENT), then a strict
// parse of the payload: exactly the three members, node_id a string equal
// to the header kid, iat an integer, jti 22-64 base64url characters
// (INVALID_ARGUMENT). The payload is parsed only after the signature
// verified.
// Does not: check iat against a clock or remember jti values (single use
// and the time window are the verifier's job, verifier/service.cc), or
// check that the kid names the node the caller expects.
#ifndef DPUAUDIT_REPORT_CHALLENGE_PROOF_H_
#define DPUAUDIT_REPORT_CHALLENGE_PROOF_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/crypto.h"
#include "common/status.h"

namespace dpuaudit::report {

inline constexpr std::string_view kChallengeProofTyp = "dpuaudit-challenge+jws";
inline constexpr size_t kMaxChallengeProofBytes = 2048;

struct ChallengeProof {
  std::string node_id;
  int64_t iat = 0;
  std::string jti;
};

// A fresh proof for `node_id` at `iat` (a new random jti each call).
StatusOr<std::string> SignChallengeProof(std::string_view node_id, int64_t iat,
                                         const Signer& signer);

// The request body of POST /v1/challenges: {"node_id", "proof"}.
StatusOr<std::string> ChallengeRequestBody(std::string_view node_id,
                                           int64_t iat, const Signer& signer);

StatusOr<ChallengeProof> VerifyChallengeProof(std::string_view jws,
                                              const Verifier& verifier);

}  // namespace dpuaudit::report

#endif  // DPUAUDIT_REPORT_CHALLENGE_PROOF_H_
