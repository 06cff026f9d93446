// Message digests (SHA-1, SHA-2): streaming over several algorithms at
// once, and one-shot.
//
// Guarantees: each algorithm is fetched from OpenSSL once per process (an
// implicit fetch per call costs a provider lookup); every context is owned
// by RAII. An OpenSSL failure becomes SslStatus(what) with the caller's
// `what`, so each caller keeps its own wording. A digest is only ever
// updated or finished while started: misuse is FAILED_PRECONDITION, never
// undefined behaviour. The results are the plain OpenSSL digests.
// Does not: log; share a MultiDigest between threads (it is mutable state);
// offer anything weaker than SHA-1 or any keyed hash.
#ifndef DPUAUDIT_COMMON_DIGEST_H_
#define DPUAUDIT_COMMON_DIGEST_H_

#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/openssl.h"
#include "common/status.h"

namespace dpuaudit {

enum class DigestAlg : uint8_t { kSha1, kSha256, kSha384, kSha512 };

// "SHA-1", "SHA-256", "SHA-384", "SHA-512".
std::string_view DigestAlgName(DigestAlg alg);
// 20, 32, 48, 64.
size_t DigestSize(DigestAlg alg);
// The fetched digest; null only if no loaded provider implements it.
const EVP_MD* DigestMd(DigestAlg alg);

// One input hashed under several algorithms in one pass.
//   DPA_ASSIGN_OR_RETURN(MultiDigest d, MultiDigest::New({kSha256, kSha384}, "x"));
//   DPA_RETURN_IF_ERROR(d.Start("x"));
//   DPA_RETURN_IF_ERROR(d.Update(chunk, "x"));  // any number of times
//   DPA_ASSIGN_OR_RETURN(std::vector<Bytes> out, d.FinishAll("x"));
// After finishing, Start begins a new input with the same contexts.
class MultiDigest {
 public:
  // Fetches the algorithms and allocates one context each (not started).
  static StatusOr<MultiDigest> New(std::initializer_list<DigestAlg> algs,
                                   std::string_view what);

  size_t size() const { return algs_.size(); }
  DigestAlg alg(size_t i) const { return algs_[i]; }

  // (Re)starts every digest on an empty input.
  Status Start(std::string_view what);
  // Feeds `data` to every digest (an empty `data` is a no-op).
  Status Update(ByteView data, std::string_view what);
  // Finishes digest `i` (in New's order) and returns it.
  StatusOr<Bytes> Finish(size_t i, std::string_view what);
  // Finishes every digest, in New's order.
  StatusOr<std::vector<Bytes>> FinishAll(std::string_view what);

 private:
  MultiDigest() = default;
  std::vector<DigestAlg> algs_;
  std::vector<MdCtxPtr> ctx_;
  std::vector<bool> started_;
};

// The digest of `data`; SslStatus(what) if OpenSSL fails.
StatusOr<Bytes> Digest(DigestAlg alg, ByteView data, std::string_view what);

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_DIGEST_H_
