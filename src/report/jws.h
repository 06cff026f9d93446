// JSON Web Signature (RFC 7515) with ES256 (RFC 7518 §3.4) only, and the
// P-256 JSON Web Keys (RFC 7517/7518 §6.2) that go with it.
//
// Guarantees:
//  - SignCompact serialises the protected header once and signs exactly
//    ASCII(BASE64URL(header) "." BASE64URL(payload)) (RFC 7515 §5.1).
//  - VerifyJws accepts the compact serialisation and the flattened JSON
//    serialisation (RFC 7515 §7.2.2), and checks, in this order:
//      1. size <= max_bytes                          RESOURCE_EXHAUSTED
//      2. shape: 3 non-empty segments / exactly the members "protected",
//         "payload", "signature" (an unprotected "header" and any unknown
//         member are rejected); strict base64url     INVALID_ARGUMENT
//      3. protected header: a strict JSON object (no duplicate keys) with a
//         string "alg"; "crit", "b64", "zip", "jwk", "jku", "x5u" and "x5c"
//         are rejected (keys are pinned per node, never taken from the
//         message); "kid", "typ", "cty" must be strings INVALID_ARGUMENT
//      4. alg == pinned_alg exactly (so "none", "HS256", "ES384", "es256"
//         all fail)                                  UNAUTHENTICATED
//      5. signature is 64 bytes                      UNAUTHENTICATED
//      6. the signature verifies over the received signing input
//                                                    UNAUTHENTICATED
//    and only then hands out the payload bytes, still unparsed.
//  - Only VerifyJws can build a VerifiedJws (private constructor).
//  - Nothing here throws or logs; no key material appears in any message.
// Does not: parse or interpret the payload (that is the caller's job, after
// this returns); check "typ" (callers that need a typ check it on the
// VerifiedJws); support detached or unencoded (RFC 7797) payloads, the
// general JSON serialisation (several signatures) or any alg but ES256.
#ifndef DPUAUDIT_REPORT_JWS_H_
#define DPUAUDIT_REPORT_JWS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"

namespace dpuaudit::report {

inline constexpr std::string_view kAlgEs256 = "ES256";
inline constexpr size_t kEs256SignatureBytes = 64;  // RFC 7518 §3.4: R || S
inline constexpr size_t kDefaultMaxJwsBytes = 16u << 20;  // 16 MiB

struct JwsHeader {
  std::string alg = "ES256";
  std::string kid;  // omitted from the header when empty
  std::string typ;  // omitted from the header when empty
};

// Compact serialisation. The header is {"alg","kid","typ"} in that (sorted)
// order, without whitespace. INVALID_ARGUMENT if header.alg is not ES256;
// INTERNAL if the signer does not return a 64-byte signature.
StatusOr<std::string> SignCompact(ByteView payload, const Signer& signer,
                                  const JwsHeader& header);

// Re-expresses a compact JWS as the flattened JSON serialisation
// {"payload","protected","signature"}. Checks the shape only.
StatusOr<std::string> CompactToFlattened(std::string_view compact);

// A JWS whose signature has been verified. Built only by VerifyJws.
class VerifiedJws {
 public:
  const nlohmann::json& header() const { return header_; }
  const std::string& alg() const { return alg_; }
  const std::string& kid() const { return kid_; }  // "" if absent
  const std::string& typ() const { return typ_; }  // "" if absent
  const Bytes& payload() const& { return payload_; }
  Bytes&& payload() && { return std::move(payload_); }
  // ASCII(BASE64URL(protected) "." BASE64URL(payload)) as received.
  const std::string& signing_input() const { return signing_input_; }

 private:
  friend StatusOr<VerifiedJws> VerifyJws(std::string_view, const Verifier&,
                                         std::string_view, size_t);
  VerifiedJws() = default;
  nlohmann::json header_;
  std::string alg_, kid_, typ_;
  Bytes payload_;
  std::string signing_input_;
};

StatusOr<VerifiedJws> VerifyJws(std::string_view jws, const Verifier& verifier,
                                std::string_view pinned_alg = kAlgEs256,
                                size_t max_bytes = kDefaultMaxJwsBytes);

// The protected header of a JWS whose signature has NOT been checked. For
// routing only (pick the key by kid, then call VerifyJws): never base a
// decision on it. Runs checks 1-3 above.
struct UnverifiedJwsHeader {
  nlohmann::json header;
  std::string alg, kid, typ;
};
using JwsParts = UnverifiedJwsHeader;
StatusOr<UnverifiedJwsHeader> PeekUnverifiedHeader(
    std::string_view jws, size_t max_bytes = kDefaultMaxJwsBytes);

// JWK of a P-256 public key: {"alg":"ES256","crv":"P-256","kid":…,
// "kty":"EC","use":"sig","x":…,"y":…}; "kid" omitted when empty.
nlohmann::json PublicJwk(const EcPublicKey& key, const std::string& kid);

// Strict: an object with kty "EC", crv "P-256", x and y base64url of 32
// bytes each, a point on the curve; optional "kid" (string), "alg" (must be
// "ES256"), "use" (must be "sig"). A private "d" member, any other kty or
// crv, and unknown members are rejected (INVALID_ARGUMENT).
StatusOr<EcPublicKey> ParsePublicJwk(const nlohmann::json& jwk);

struct NamedKey {
  std::string kid;
  EcPublicKey key;
};
// {"keys":[PublicJwk(k.key, k.kid), …]} in the given order.
nlohmann::json Jwks(const std::vector<NamedKey>& keys);
// Strict JWK Set: {"keys":[…]} only; every key has a non-empty, unique kid
// and passes ParsePublicJwk.
StatusOr<std::vector<NamedKey>> ParseJwks(const nlohmann::json& jwks);

}  // namespace dpuaudit::report

#endif  // DPUAUDIT_REPORT_JWS_H_
