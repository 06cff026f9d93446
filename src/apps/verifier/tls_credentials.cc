#include "apps/verifier/tls_credentials.h"

#include <gnutls/x509.h>

#include <cstring>

#include "common/crypto.h"

namespace dpuaudit::apps {
namespace {

// A gnutls_datum_t viewing a string (GnuTLS does not write through it).
gnutls_datum_t Datum(const std::string& s) {
  gnutls_datum_t d;
  d.data = reinterpret_cast<unsigned char*>(const_cast<char*>(s.data()));
  d.size = static_cast<unsigned>(s.size());
  return d;
}

// A datum GnuTLS allocated, freed with gnutls_free.
struct OwnedDatum {
  gnutls_datum_t d{nullptr, 0};
  ~OwnedDatum() { gnutls_free(d.data); }
};

struct PubkeyHandle {
  gnutls_pubkey_t k = nullptr;
  ~PubkeyHandle() {
    if (k != nullptr) gnutls_pubkey_deinit(k);
  }
};

std::string GnutlsError(int rc) { return gnutls_strerror(rc); }

}  // namespace

TlsCredentials::~TlsCredentials() {
  for (auto& c : chain_) gnutls_pcert_deinit(&c);
  if (key_ != nullptr) gnutls_privkey_deinit(key_);
}

StatusOr<std::shared_ptr<const TlsCredentials>> TlsCredentials::FromPem(
    const std::string& cert_pem, const std::string& key_pem) {
  if (cert_pem.empty()) return InvalidArgumentError("TLS certificate: the file is empty.");
  if (key_pem.empty()) return InvalidArgumentError("TLS key: the file is empty.");
  std::shared_ptr<TlsCredentials> creds(new TlsCredentials());
  std::vector<gnutls_pcert_st> chain(kMaxChainCerts);
  unsigned n = kMaxChainCerts;
  gnutls_datum_t cert = Datum(cert_pem);
  int rc = gnutls_pcert_list_import_x509_raw(chain.data(), &n, &cert, GNUTLS_X509_FMT_PEM,
                                             GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
  if (rc < 0) {
    return InvalidArgumentError("TLS certificate: not a PEM certificate chain of 1 to " +
                                std::to_string(kMaxChainCerts) +
                                " certificates, leaf first (" + GnutlsError(rc) + ").");
  }
  if (n == 0) return InvalidArgumentError("TLS certificate: no certificate in the file.");
  chain.resize(n);
  creds->chain_ = std::move(chain);
  rc = gnutls_privkey_init(&creds->key_);
  if (rc < 0) return InternalError("TLS key: " + GnutlsError(rc));
  gnutls_datum_t key = Datum(key_pem);
  rc = gnutls_privkey_import_x509_raw(creds->key_, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
  if (rc < 0) {
    return InvalidArgumentError("TLS key: not an unencrypted PEM private key (" +
                                GnutlsError(rc) + ").");
  }
  // The key must be the leaf certificate's: compare the SubjectPublicKeyInfo.
  PubkeyHandle from_key;
  if (gnutls_pubkey_init(&from_key.k) < 0 ||
      gnutls_pubkey_import_privkey(from_key.k, creds->key_, 0, 0) < 0) {
    return InvalidArgumentError("TLS key: cannot derive its public key.");
  }
  OwnedDatum a, b;
  if (gnutls_pubkey_export2(from_key.k, GNUTLS_X509_FMT_DER, &a.d) < 0 ||
      gnutls_pubkey_export2(creds->chain_[0].pubkey, GNUTLS_X509_FMT_DER, &b.d) < 0) {
    return InvalidArgumentError("TLS certificate: cannot export its public key.");
  }
  if (a.d.size != b.d.size || std::memcmp(a.d.data, b.d.data, a.d.size) != 0) {
    return InvalidArgumentError(
        "TLS key: does not match the certificate (it is not the private key of the "
        "first certificate's public key).");
  }
  const gnutls_datum_t& leaf = creds->chain_[0].cert;
  creds->leaf_sha256_ = Sha256Hex(ByteView(leaf.data, leaf.size));
  return std::shared_ptr<const TlsCredentials>(std::move(creds));
}

TlsTicketKey::~TlsTicketKey() {
  if (key_.data != nullptr) {
    gnutls_memset(key_.data, 0, key_.size);
    gnutls_free(key_.data);
  }
}

StatusOr<std::unique_ptr<const TlsTicketKey>> TlsTicketKey::Generate() {
  std::unique_ptr<TlsTicketKey> k(new TlsTicketKey());
  int rc = gnutls_session_ticket_key_generate(&k->key_);
  if (rc < 0) {
    return InternalError("TLS session ticket key: cannot generate (" + GnutlsError(rc) +
                         ").");
  }
  return std::unique_ptr<const TlsTicketKey>(std::move(k));
}

}  // namespace dpuaudit::apps
