// OpenSSL-backed primitives: SHA-256, randomness, P-256 keys, ES256.
//
// Guarantees: every OpenSSL handle is owned by RAII; OpenSSL errors become
// a Status in one place (SslStatus), which drains the error queue. ES256
// signatures are the JOSE form (RFC 7518 §3.4): 64 bytes, r || s, each
// 32 bytes big-endian. Only P-256 keys are accepted where P-256 is named;
// a key on another curve or of another type is rejected (key confusion).
// A constructed Signer/Verifier is always usable and safe to share between
// threads (const methods, per-call contexts).
// Does not: log anything, ever; keep key material outside the objects.
#ifndef DPUAUDIT_COMMON_CRYPTO_H_
#define DPUAUDIT_COMMON_CRYPTO_H_

#include <openssl/evp.h>

#include <array>
#include <memory>
#include <string>

#include "common/bytes.h"
#include "common/openssl.h"
#include "common/status.h"

namespace dpuaudit {

// Drains the OpenSSL error queue into one INTERNAL (or given code) Status.
Status SslStatus(std::string_view what,
                 StatusCode code = StatusCode::kInternal);

// The pem_password_cb for every PEM_read_* of bytes we did not write: it
// supplies no pass phrase, so encrypted PEM (a "Proc-Type: 4,ENCRYPTED"
// header, or an ENCRYPTED PRIVATE KEY) fails to parse. With a null callback
// OpenSSL would prompt for a pass phrase on the terminal, or read one from
// stdin, blocking the caller (a verifier request thread) indefinitely.
int NoPemPassphrase(char* buf, int size, int rwflag, void* userdata);

using Sha256Digest = std::array<uint8_t, 32>;
// Uses a digest fetched once per process (OpenSSL 3 implicit fetch,
// docs/architecture.md#performance).
Sha256Digest Sha256(ByteView data);
std::string Sha256Hex(ByteView data);
// HMAC-SHA256 (RFC 2104) of `data` under `key` (OpenSSL HMAC); INTERNAL
// only if OpenSSL fails.
StatusOr<Sha256Digest> HmacSha256(ByteView key, ByteView data);

StatusOr<Bytes> RandomBytes(size_t n);

// A P-256 public key. Immutable, cheap to copy (shared handle).
class EcPublicKey {
 public:
  // Uncompressed affine coordinates, 32 bytes each (JWK "x", "y").
  static StatusOr<EcPublicKey> FromAffine(ByteView x, ByteView y);
  static StatusOr<EcPublicKey> FromPem(std::string_view pem);
  // Rejects anything but an EC key on P-256 (prime256v1).
  static StatusOr<EcPublicKey> FromPkey(EvpPkeyPtr pkey);

  std::string ToPem() const;
  const Bytes& x() const { return x_; }
  const Bytes& y() const { return y_; }
  EVP_PKEY* pkey() const { return pkey_.get(); }
  // RFC 7638 JWK thumbprint (SHA-256, base64url) of {"crv","kty","x","y"}.
  std::string Thumbprint() const;
  bool operator==(const EcPublicKey& o) const { return x_ == o.x_ && y_ == o.y_; }

 private:
  friend class EcPrivateKey;
  EcPublicKey() = default;
  std::shared_ptr<EVP_PKEY> pkey_;
  Bytes x_, y_;
};

// A P-256 private key. Move-only; never printed.
class EcPrivateKey {
 public:
  static StatusOr<EcPrivateKey> Generate();
  static StatusOr<EcPrivateKey> FromPem(std::string_view pem);
  // Loads a PKCS#8 PEM file; refuses a file readable by group or others.
  static StatusOr<EcPrivateKey> LoadFile(const std::string& path);
  // Loads `path`, or generates a key and writes it there (mode 0600,
  // created with O_EXCL, parent created 0700). `created` tells which.
  static StatusOr<EcPrivateKey> LoadOrCreateFile(const std::string& path,
                                                 bool* created = nullptr);
  Status SaveFile(const std::string& path) const;  // O_EXCL, 0600

  std::string ToPem() const;  // PKCS#8, unencrypted: handle with care
  const EcPublicKey& public_key() const { return public_key_; }
  EVP_PKEY* pkey() const { return pkey_.get(); }

 private:
  EcPrivateKey() = default;
  std::shared_ptr<EVP_PKEY> pkey_;
  EcPublicKey public_key_;
};

class Signer {
 public:
  virtual ~Signer() = default;
  virtual StatusOr<Bytes> Sign(ByteView data) const = 0;
};

class Verifier {
 public:
  virtual ~Verifier() = default;
  // OK iff `signature` is a valid signature of `data`; UNAUTHENTICATED
  // otherwise (including a signature of the wrong length).
  virtual Status Verify(ByteView signature, ByteView data) const = 0;
};

// ES256: ECDSA P-256 with SHA-256, JOSE signature encoding.
class Es256Signer final : public Signer {
 public:
  static StatusOr<std::unique_ptr<Es256Signer>> New(const EcPrivateKey& key);
  StatusOr<Bytes> Sign(ByteView data) const override;

 private:
  explicit Es256Signer(std::shared_ptr<EVP_PKEY> k) : pkey_(std::move(k)) {}
  std::shared_ptr<EVP_PKEY> pkey_;
};

class Es256Verifier final : public Verifier {
 public:
  static StatusOr<std::unique_ptr<Es256Verifier>> New(const EcPublicKey& key);
  Status Verify(ByteView signature, ByteView data) const override;

 private:
  explicit Es256Verifier(EcPublicKey k) : key_(std::move(k)) {}
  EcPublicKey key_;
};

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_CRYPTO_H_
