// The verifier's EAR signing keys over time (issue 15, zero-downtime
// rotation): what `dpuaudit-verifier keys list` shows and what the JWKS
// publishes, from Store::ListSigningKeys.
//
// Guarantees: a key is "current" when it has the greatest seq (the key the
// verifier registered last at start-up); a previous key is "published"
// while now < published_until (last_used_at + max_result_ttl_seconds: until
// every result it signed has expired) and "retired" afterwards.
// Does not: read the store or a clock itself.
#ifndef DPUAUDIT_VERIFIER_SIGNING_KEYS_H_
#define DPUAUDIT_VERIFIER_SIGNING_KEYS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

// "current" | "published" | "retired"; `keys` ordered as ListSigningKeys
// (current first).
std::string_view SigningKeyStatus(const SigningKeyRecord& k, bool current,
                                  int64_t now);

// The public key of a stored row; DATA_LOSS unless its JWK parses and its
// thumbprint is the row's kid.
StatusOr<EcPublicKey> SigningKeyPublic(const SigningKeyRecord& k);

// {"keys": [{"kid", "status", "first_used_at", "last_used_at",
//  "max_result_ttl_seconds", "published_until_at"}, ...]}, current first.
nlohmann::json SigningKeysJson(const std::vector<SigningKeyRecord>& keys,
                               int64_t now);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_SIGNING_KEYS_H_
