// Agent re-key requests (issue 15): POST /v1/nodes/{id}/rekey carries, as
// its whole body, a compact JWS signed with the node's CURRENT pinned key
// (docs/rekey-schema.md):
//
//   header  {"alg":"ES256","kid":<node id>,"typ":"dpuaudit-rekey+jws"}
//   payload {"iat":<unix seconds>,"jti":<base64url, 22-64 chars>,
//            "new_key_proof":<compact JWS>,"new_public_key":<JWK P-256>,
//            "node_id":<node id>}
//
// new_key_proof is signed with the NEW key (proof of possession, so nobody
// can rebind a node to a key they do not hold):
//
//   header  {"alg":"ES256","kid":<new key thumbprint>,
//            "typ":"dpuaudit-rekey-proof+jws"}
//   payload {"iat":<same iat>,"jti":<same jti>,"node_id":<node id>}
//
// Guarantees: VerifyRekeyRequest checks, in this order: size (at most
// kMaxRekeyRequestBytes, RESOURCE_EXHAUSTED), the JWS under `current`
// (report/jws.h VerifyJws, ES256 pinned; UNAUTHENTICATED / INVALID_ARGUMENT),
// typ, then ParseRekeyPayload on the verified payload (exactly the five
// members, node_id equal to the header kid, iat an int64, jti 22-64
// base64url characters, new_public_key an object, new_key_proof a string;
// INVALID_ARGUMENT). The payload is never parsed before the signature
// verified. VerifyNewKey then checks the new key: a valid P-256 JWK
// (INVALID_ARGUMENT), a thumbprint different from `old` (INVALID_ARGUMENT),
// a proof that verifies under it with typ, kid = its thumbprint and a
// payload of exactly the request's node_id, iat and jti (UNAUTHENTICATED).
// Does not: check iat against a clock, remember jti values, or look up the
// node (verifier/rekey.cc does those, in the order its header states).
#ifndef DPUAUDIT_REPORT_REKEY_H_
#define DPUAUDIT_REPORT_REKEY_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"

namespace dpuaudit::report {

inline constexpr std::string_view kRekeyTyp = "dpuaudit-rekey+jws";
inline constexpr std::string_view kRekeyProofTyp = "dpuaudit-rekey-proof+jws";
inline constexpr size_t kMaxRekeyRequestBytes = 4096;

struct RekeyRequest {
  std::string node_id;
  int64_t iat = 0;
  std::string jti;
  nlohmann::json new_public_key;  // not yet checked (VerifyNewKey)
  std::string new_key_proof;      // not yet verified (VerifyNewKey)
};

// The body for `node_id` at `iat` (a fresh random jti), signed with
// `current`, proving possession of `new_key`.
StatusOr<std::string> SignRekeyRequest(std::string_view node_id, int64_t iat,
                                       const Signer& current,
                                       const EcPrivateKey& new_key);

// The strict payload parse alone (for VerifyRekeyRequest and the fuzzer):
// `kid` is the verified header kid.
StatusOr<RekeyRequest> ParseRekeyPayload(ByteView payload, std::string_view kid);

StatusOr<RekeyRequest> VerifyRekeyRequest(std::string_view jws,
                                          const Verifier& current);

// The new key of a verified request, once it is a P-256 key other than
// `old` whose proof verifies.
StatusOr<EcPublicKey> VerifyNewKey(const RekeyRequest& request,
                                   const EcPublicKey& old);

}  // namespace dpuaudit::report

#endif  // DPUAUDIT_REPORT_REKEY_H_
