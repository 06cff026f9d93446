// Test-time X.509 certificates: keys and certificates made with OpenSSL for
// TLS servers and DICE-like chains (the BMC simulator and the SPDM tests).
#ifndef DPUAUDIT_TESTS_TESTING_X509_BUILDER_H_
#define DPUAUDIT_TESTS_TESTING_X509_BUILDER_H_

#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <stdexcept>
#include <string>

#include "common/bytes.h"
#include "common/openssl.h"

namespace dpuaudit::testing {

struct CertSpec {
  std::string cn;
  bool ca = false;
  int64_t not_before = 0;  // unix seconds
  int64_t not_after = 0;
  long serial = 1;
  std::string san;  // "IP:127.0.0.1,DNS:localhost" (empty: none)
  // An extra extension (e.g. a DICE FWID list under 2.23.133.5.4.1).
  std::string extra_oid;
  bool extra_critical = false;
  Bytes extra_value;
};

inline std::string PemOf(X509* c) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), c);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

inline std::string PemOfKey(EVP_PKEY* k) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// `subject_key` certified by `issuer_key` (self-signed when issuer is null).
inline X509Ptr MakeCertificate(const CertSpec& spec, EVP_PKEY* subject_key,
                               X509* issuer, EVP_PKEY* issuer_key) {
  X509Ptr cert(X509_new());
  X509* c = cert.get();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), spec.serial);
  ASN1_TIME_set(X509_getm_notBefore(c), static_cast<time_t>(spec.not_before));
  ASN1_TIME_set(X509_getm_notAfter(c), static_cast<time_t>(spec.not_after));
  X509_set_pubkey(c, subject_key);
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.cn.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer ? issuer : c, c, nullptr, nullptr, 0);
  auto add = [&](int nid, const std::string& value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value.c_str());
    if (ext == nullptr) throw std::runtime_error("bad extension " + value);
    X509_add_ext(c, ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_basic_constraints, spec.ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  add(NID_key_usage, spec.ca ? "critical,keyCertSign,cRLSign"
                             : "critical,digitalSignature,keyEncipherment");
  add(NID_subject_key_identifier, "hash");
  if (!spec.san.empty()) add(NID_subject_alt_name, spec.san);
  if (!spec.extra_oid.empty()) {
    OsslPtr<ASN1_OBJECT, ASN1_OBJECT_free> obj(OBJ_txt2obj(spec.extra_oid.c_str(), 1));
    OsslPtr<ASN1_OCTET_STRING, ASN1_OCTET_STRING_free> data(ASN1_OCTET_STRING_new());
    ASN1_OCTET_STRING_set(data.get(), spec.extra_value.data(),
                          static_cast<int>(spec.extra_value.size()));
    X509_EXTENSION* ext = X509_EXTENSION_create_by_OBJ(nullptr, obj.get(),
                                                       spec.extra_critical ? 1 : 0, data.get());
    X509_add_ext(c, ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(c, issuer_key ? issuer_key : subject_key,
                EVP_PKEY_bits(issuer_key ? issuer_key : subject_key) > 300 ? EVP_sha384()
                                                                           : EVP_sha256()) == 0) {
    throw std::runtime_error("X509_sign failed");
  }
  return cert;
}

// DER of SEQUENCE { SEQUENCE { sha384, OCTET STRING digest } } (an FWID list).
inline Bytes FwidList384(ByteView digest) {
  Bytes fwid = {0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x04,
                static_cast<uint8_t>(digest.size())};
  fwid.insert(fwid.end(), digest.begin(), digest.end());
  Bytes seq = {0x30, static_cast<uint8_t>(fwid.size())};
  seq.insert(seq.end(), fwid.begin(), fwid.end());
  Bytes out = {0x30, static_cast<uint8_t>(seq.size())};
  out.insert(out.end(), seq.begin(), seq.end());
  return out;
}

inline EvpPkeyPtr ReadPrivateKeyPem(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return EvpPkeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_TESTING_X509_BUILDER_H_
