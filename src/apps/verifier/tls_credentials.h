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

// TlsTicketKey: the master key of GnuTLS session tickets
// (gnutls_session_ticket_enable_server), 64 bytes from
// gnutls_session_ticket_key_generate (GnuTLS's key-grade random generator).
//
// Guarantees: only in this process's memory, never exposed except to
// GnuTLS (no accessor for the bytes, no serialisation, no logging); zeroed
// with gnutls_memset and freed with gnutls_free on destruction; immutable,
// so it may be read from any thread. GnuTLS copies it into each session.
// Does not: rotate anything itself (GnuTLS derives and rotates the keys
// that encrypt tickets from it), or share the key with other processes.
class TlsTicketKey {
 public:
  static StatusOr<std::unique_ptr<const TlsTicketKey>> Generate();
  ~TlsTicketKey();
  TlsTicketKey(const TlsTicketKey&) = delete;
  TlsTicketKey& operator=(const TlsTicketKey&) = delete;

  // For gnutls_session_ticket_enable_server: valid while this lives.
  const gnutls_datum_t* datum() const { return &key_; }

 private:
  TlsTicketKey() = default;
  gnutls_datum_t key_{nullptr, 0};
};

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_TLS_CREDENTIALS_H_
