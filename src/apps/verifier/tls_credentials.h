// TlsCredentials: a server certificate chain and its private key, parsed
// into GnuTLS objects (the TLS library under libmicrohttpd), handed to
// GnuTLS per handshake by HttpServer (MHD_OPTION_HTTPS_CERT_CALLBACK), so
// that SIGHUP can swap the certificate without closing the listen socket.
//
// Guarantees:
//  - FromPem succeeds only when the PEM certificate list parses (1 to
//    kMaxChainCerts certificates, leaf first), the PEM private key parses,
//    and the key is the private half of the leaf's public key (the
//    SubjectPublicKeyInfo of both compared byte for byte); otherwise
//    INVALID_ARGUMENT naming what is wrong (the key bytes are never logged
//    or quoted);
//  - RAII: the GnuTLS certificates and key are freed with the object;
//    immutable once built, so it may be read from any thread.
// Does not: check the certificate's validity period, name or issuer (the
// clients do), or read files (the caller does).
#ifndef DPUAUDIT_APPS_VERIFIER_TLS_CREDENTIALS_H_
#define DPUAUDIT_APPS_VERIFIER_TLS_CREDENTIALS_H_

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace dpuaudit::apps {

class TlsCredentials {
 public:
  static constexpr unsigned kMaxChainCerts = 16;

  static StatusOr<std::shared_ptr<const TlsCredentials>> FromPem(
      const std::string& cert_pem, const std::string& key_pem);
  ~TlsCredentials();
  TlsCredentials(const TlsCredentials&) = delete;
  TlsCredentials& operator=(const TlsCredentials&) = delete;

  // For GnuTLS's certificate retrieve callback: valid while this lives.
  gnutls_pcert_st* chain() const { return const_cast<gnutls_pcert_st*>(chain_.data()); }
  unsigned chain_length() const { return static_cast<unsigned>(chain_.size()); }
  gnutls_privkey_t key() const { return key_; }
  // SHA-256 of the leaf certificate's DER, hex (for the log).
  const std::string& leaf_sha256() const { return leaf_sha256_; }

 private:
  TlsCredentials() = default;
  std::vector<gnutls_pcert_st> chain_;
  gnutls_privkey_t key_ = nullptr;
  std::string leaf_sha256_;
};

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_TLS_CREDENTIALS_H_
