#include "common/digest.h"

#include <string>

#include "common/crypto.h"

namespace dpuaudit {
namespace {

Status NotStarted(DigestAlg alg) {
  return FailedPreconditionError(std::string(DigestAlgName(alg)) +
                                 " digest is not started.");
}

}  // namespace

std::string_view DigestAlgName(DigestAlg alg) {
  switch (alg) {
    case DigestAlg::kSha1: return "SHA-1";
    case DigestAlg::kSha256: return "SHA-256";
    case DigestAlg::kSha384: return "SHA-384";
    case DigestAlg::kSha512: return "SHA-512";
  }
  return "SHA-256";  // unreachable: every enumerator is listed
}

size_t DigestSize(DigestAlg alg) {
  switch (alg) {
    case DigestAlg::kSha1: return 20;
    case DigestAlg::kSha256: return 32;
    case DigestAlg::kSha384: return 48;
    case DigestAlg::kSha512: return 64;
  }
  return 32;  // unreachable
}

const EVP_MD* DigestMd(DigestAlg alg) {
  // Fetched once: implicit fetches cost more than hashing 64 bytes.
  static EVP_MD* const sha1 = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  static EVP_MD* const sha384 = EVP_MD_fetch(nullptr, "SHA384", nullptr);
  static EVP_MD* const sha512 = EVP_MD_fetch(nullptr, "SHA512", nullptr);
  switch (alg) {
    case DigestAlg::kSha1: return sha1;
    case DigestAlg::kSha256: return sha256;
    case DigestAlg::kSha384: return sha384;
    case DigestAlg::kSha512: return sha512;
  }
  return nullptr;
}

StatusOr<MultiDigest> MultiDigest::New(std::initializer_list<DigestAlg> algs,
                                       std::string_view what) {
  MultiDigest d;
  for (DigestAlg alg : algs) {
    MdCtxPtr ctx(EVP_MD_CTX_new());
    if (!ctx || DigestMd(alg) == nullptr) return SslStatus(what);
    d.algs_.push_back(alg);
    d.ctx_.push_back(std::move(ctx));
    d.started_.push_back(false);
  }
  return d;
}

Status MultiDigest::Start(std::string_view what) {
  for (size_t i = 0; i < ctx_.size(); ++i) {
    started_[i] = false;
    if (EVP_DigestInit_ex(ctx_[i].get(), DigestMd(algs_[i]), nullptr) != 1) {
      return SslStatus(what);
    }
    started_[i] = true;
  }
  return OkStatus();
}

Status MultiDigest::Update(ByteView data, std::string_view what) {
  for (size_t i = 0; i < ctx_.size(); ++i) {
    if (!started_[i]) return NotStarted(algs_[i]);
  }
  if (data.empty()) return OkStatus();
  for (size_t i = 0; i < ctx_.size(); ++i) {
    if (EVP_DigestUpdate(ctx_[i].get(), data.data(), data.size()) != 1) {
      return SslStatus(what);
    }
  }
  return OkStatus();
}

StatusOr<Bytes> MultiDigest::Finish(size_t i, std::string_view what) {
  if (i >= ctx_.size()) {
    return InvalidArgumentError("digest " + std::to_string(i) +
                                " of " + std::to_string(ctx_.size()) +
                                " does not exist.");
  }
  if (!started_[i]) return NotStarted(algs_[i]);
  started_[i] = false;
  Bytes out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_[i].get(), out.data(), &len) != 1) {
    return SslStatus(what);
  }
  out.resize(len);
  return out;
}

StatusOr<std::vector<Bytes>> MultiDigest::FinishAll(std::string_view what) {
  std::vector<Bytes> out;
  out.reserve(ctx_.size());
  for (size_t i = 0; i < ctx_.size(); ++i) {
    DPA_ASSIGN_OR_RETURN(Bytes d, Finish(i, what));
    out.push_back(std::move(d));
  }
  return out;
}

StatusOr<Bytes> Digest(DigestAlg alg, ByteView data, std::string_view what) {
  const EVP_MD* md = DigestMd(alg);
  MdCtxPtr ctx(EVP_MD_CTX_new());
  Bytes out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (md == nullptr || !ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1) {
    return SslStatus(what);
  }
  out.resize(len);
  return out;
}

}  // namespace dpuaudit
