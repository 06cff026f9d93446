// NonceService: issues and spends the challenge nonces of POST /v1/challenges
// (docs/architecture.md#http-api): 32 random bytes, base64url without padding,
// bound to one node, single use, short expiry.
//
// Guarantees: Issue draws from the OpenSSL CSPRNG (RandomBytes) and stores
// the nonce with expires_at = now + ttl before returning it. Consume refuses,
// with INVALID_ARGUMENT and before touching the store, anything that is not
// the canonical base64url encoding of exactly 32 bytes; otherwise it returns
// the Store::ConsumeNonce answer at the clock's now (single use, bound to
// the node, expired at now >= expires_at). Safe to share between threads if
// the Store and Clock are.
// Does not: check whether the node is approved or revoked (the appraisal
// pipeline decides who may be challenged; the store only requires the node
// to be enrolled); purge expired nonces (call Store::PurgeExpiredNonces;
// dpuaudit-verifier serve does on a schedule). With max_outstanding > 0,
// Issue keeps at most that many unspent, unexpired nonces per node
// (Store::InsertNonceCapped: the oldest are dropped), so they cannot grow
// between purges.
#ifndef DPUAUDIT_VERIFIER_NONCE_H_
#define DPUAUDIT_VERIFIER_NONCE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

struct IssuedNonce {
  std::string nonce;  // base64url (RFC 4648 §5), no padding, 43 characters
  int64_t issued_at = 0;
  int64_t expires_at = 0;
};

class NonceService {
 public:
  static constexpr size_t kNonceBytes = 32;
  static constexpr int64_t kDefaultTtlSeconds = 60;
  static constexpr int64_t kMaxTtlSeconds = 3600;

  // `store` and `clock` must outlive the service. INVALID_ARGUMENT unless
  // ttl_seconds is in [1, kMaxTtlSeconds] and max_outstanding >= 0 (0: no
  // cap).
  static StatusOr<NonceService> New(Store& store, const Clock& clock,
                                    int64_t ttl_seconds = kDefaultTtlSeconds,
                                    int64_t max_outstanding = 0);

  // NOT_FOUND if the node is not enrolled; INVALID_ARGUMENT if node_id is
  // empty.
  StatusOr<IssuedNonce> Issue(std::string_view node_id) const;

  // OK exactly once per issued nonce, for the node it was issued to, before
  // it expires. See Store::ConsumeNonce for the error codes and messages.
  Status Consume(std::string_view nonce, std::string_view node_id) const;

  // When the nonce was issued to `node_id` (Store::NonceIssuedAt), after
  // the same format check as Consume; spends nothing.
  StatusOr<int64_t> IssuedAt(std::string_view nonce,
                             std::string_view node_id) const;

  int64_t ttl_seconds() const { return ttl_seconds_; }

 private:
  NonceService(Store& store, const Clock& clock, int64_t ttl_seconds,
               int64_t max_outstanding)
      : store_(&store),
        clock_(&clock),
        ttl_seconds_(ttl_seconds),
        max_outstanding_(max_outstanding) {}
  Store* store_;
  const Clock* clock_;
  int64_t ttl_seconds_;
  int64_t max_outstanding_;
};

// INVALID_ARGUMENT unless `nonce` is the canonical unpadded base64url
// encoding of exactly NonceService::kNonceBytes bytes.
Status ValidateNonceFormat(std::string_view nonce);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_NONCE_H_
