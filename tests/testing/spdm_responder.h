// A test-time SPDM 1.1 responder: builds GET_MEASUREMENTS requests and
// MEASUREMENTS responses byte by byte (DSP0274 1.1 layout, as in
// src/spdm/measurements.h) and signs them with an ECDSA key made at test
// time. Used by the SPDM unit tests and the BMC simulator.
#ifndef DPUAUDIT_TESTS_TESTING_SPDM_RESPONDER_H_
#define DPUAUDIT_TESTS_TESTING_SPDM_RESPONDER_H_

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/openssl.h"

namespace dpuaudit::testing {

struct SpdmBlock {
  uint8_t index = 1;
  uint8_t specification = 1;  // DMTF
  uint8_t value_type = 0x01;  // digest of mutable firmware
  Bytes value;
};

struct SpdmExchange {
  uint8_t version = 0x11;
  uint8_t request_param1 = 0x01;  // signature requested
  uint8_t operation = 0xFF;       // all
  Bytes nonce = Bytes(32, 0xA5);
  uint8_t slot = 0;
  uint8_t response_param2 = 0;
  std::vector<SpdmBlock> blocks;
  int number_of_blocks = -1;  // -1: blocks.size()
  Bytes responder_nonce = Bytes(32, 0x5A);
  Bytes opaque;
  Bytes trailing;  // bytes after the signature (malformed on purpose)
};

inline void PutLe16(Bytes& b, size_t v) {
  b.push_back(static_cast<uint8_t>(v & 0xFF));
  b.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
}

// request || response up to and including OpaqueData.
inline Bytes SpdmSignedPart(const SpdmExchange& e) {
  Bytes b = {e.version, 0xE0, e.request_param1, e.operation};
  if (e.request_param1 & 1) {
    b.insert(b.end(), e.nonce.begin(), e.nonce.end());
    b.push_back(e.slot);
  }
  Bytes record;
  for (const SpdmBlock& blk : e.blocks) {
    record.push_back(blk.index);
    record.push_back(blk.specification);
    PutLe16(record, blk.value.size() + 3);
    record.push_back(blk.value_type);
    PutLe16(record, blk.value.size());
    record.insert(record.end(), blk.value.begin(), blk.value.end());
  }
  b.insert(b.end(), {e.version, 0x60, 0x00, e.response_param2});
  b.push_back(static_cast<uint8_t>(
      e.number_of_blocks < 0 ? e.blocks.size() : e.number_of_blocks));
  b.push_back(static_cast<uint8_t>(record.size() & 0xFF));
  b.push_back(static_cast<uint8_t>((record.size() >> 8) & 0xFF));
  b.push_back(static_cast<uint8_t>((record.size() >> 16) & 0xFF));
  b.insert(b.end(), record.begin(), record.end());
  if (e.request_param1 & 1) {
    b.insert(b.end(), e.responder_nonce.begin(), e.responder_nonce.end());
  }
  PutLe16(b, e.opaque.size());
  b.insert(b.end(), e.opaque.begin(), e.opaque.end());
  return b;
}

// An ECDSA key on `curve` ("P-256" | "P-384"), made now.
inline EvpPkeyPtr MakeEcKey(const char* curve) {
  EvpPkeyPtr key(EVP_EC_gen(curve));
  if (!key) throw std::runtime_error("EVP_EC_gen failed");
  return key;
}

// ECDSA over `md` of `data`, as SPDM encodes it: r || s, each `half` bytes.
inline Bytes SpdmSign(EVP_PKEY* key, const EVP_MD* md, ByteView data,
                      size_t half) {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  size_t len = 0;
  if (EVP_DigestSignInit(ctx.get(), nullptr, md, nullptr, key) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, data.data(), data.size()) != 1) {
    throw std::runtime_error("EVP_DigestSign failed");
  }
  Bytes der(len);
  if (EVP_DigestSign(ctx.get(), der.data(), &len, data.data(), data.size()) != 1) {
    throw std::runtime_error("EVP_DigestSign failed");
  }
  const unsigned char* p = der.data();
  EcdsaSigPtr sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(len)));
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(sig.get(), &r, &s);
  Bytes out(2 * half);
  BN_bn2binpad(r, out.data(), static_cast<int>(half));
  BN_bn2binpad(s, out.data() + half, static_cast<int>(half));
  return out;
}

// The whole transcript, signed.
inline Bytes SpdmTranscript(const SpdmExchange& e, EVP_PKEY* key,
                            const EVP_MD* md, size_t half) {
  Bytes b = SpdmSignedPart(e);
  Bytes sig = SpdmSign(key, md, b, half);
  b.insert(b.end(), sig.begin(), sig.end());
  b.insert(b.end(), e.trailing.begin(), e.trailing.end());
  return b;
}

// A self-signed certificate for `key` (enough for a leaf public key).
inline X509Ptr SelfSigned(EVP_PKEY* key, const std::string& cn) {
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  if (X509_sign(cert.get(), key, EVP_sha384()) == 0) {
    throw std::runtime_error("X509_sign failed");
  }
  return cert;
}

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_TESTING_SPDM_RESPONDER_H_
