#include "verifier/nonce.h"

#include "common/bytes.h"
#include "common/crypto.h"

namespace dpuaudit::verifier {
namespace {

// Unpadded base64url length of 32 bytes: ceil(32 * 4 / 3).
constexpr size_t kNonceChars = (NonceService::kNonceBytes * 4 + 2) / 3;
static_assert(kNonceChars == 43);

}  // namespace

Status ValidateNonceFormat(std::string_view nonce) {
  // Length first, so oversized input is never decoded.
  if (nonce.size() != kNonceChars) {
    return InvalidArgumentError("nonce must be " + std::to_string(kNonceChars) +
                                " base64url characters (32 bytes), got " +
                                std::to_string(nonce.size()) + ".");
  }
  // Base64UrlDecode refuses padding, '+', '/' and non-zero trailing bits,
  // so one nonce has exactly one accepted spelling.
  StatusOr<Bytes> raw = Base64UrlDecode(nonce);
  if (!raw.ok()) {
    return InvalidArgumentError("nonce is not base64url: " +
                                raw.status().message());
  }
  if (raw->size() != NonceService::kNonceBytes) {
    return InvalidArgumentError("nonce must decode to 32 bytes, got " +
                                std::to_string(raw->size()) + ".");
  }
  return OkStatus();
}

StatusOr<NonceService> NonceService::New(Store& store, const Clock& clock,
                                         int64_t ttl_seconds,
                                         int64_t max_outstanding) {
  if (max_outstanding < 0) {
    return InvalidArgumentError("max_outstanding nonces " +
                                std::to_string(max_outstanding) +
                                " must not be negative.");
  }
  if (ttl_seconds < 1 || ttl_seconds > kMaxTtlSeconds) {
    return InvalidArgumentError("nonce ttl " + std::to_string(ttl_seconds) +
                                " s out of range [1, " +
                                std::to_string(kMaxTtlSeconds) + "].");
  }
  return NonceService(store, clock, ttl_seconds, max_outstanding);
}

StatusOr<IssuedNonce> NonceService::Issue(std::string_view node_id) const {
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  DPA_ASSIGN_OR_RETURN(Bytes raw, RandomBytes(kNonceBytes));
  IssuedNonce out;
  out.nonce = Base64UrlEncode(raw);
  out.issued_at = clock_->NowUnixSeconds();
  out.expires_at = out.issued_at + ttl_seconds_;
  if (max_outstanding_ > 0) {
    DPA_RETURN_IF_ERROR(store_
                            ->InsertNonceCapped(out.nonce, node_id,
                                                out.issued_at, out.expires_at,
                                                max_outstanding_)
                            .status());
  } else {
    DPA_RETURN_IF_ERROR(store_->InsertNonce(out.nonce, node_id, out.issued_at,
                                            out.expires_at));
  }
  return out;
}

Status NonceService::Consume(std::string_view nonce,
                             std::string_view node_id) const {
  DPA_RETURN_IF_ERROR(ValidateNonceFormat(nonce));
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  return store_->ConsumeNonce(nonce, node_id, clock_->NowUnixSeconds());
}

StatusOr<int64_t> NonceService::IssuedAt(std::string_view nonce,
                                         std::string_view node_id) const {
  DPA_RETURN_IF_ERROR(ValidateNonceFormat(nonce));
  if (node_id.empty()) return InvalidArgumentError("node_id is empty.");
  return store_->NonceIssuedAt(nonce, node_id);
}

}  // namespace dpuaudit::verifier
