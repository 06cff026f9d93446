// SPDM GET_MEASUREMENTS / MEASUREMENTS (measurements.h).
#include "spdm/measurements.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <set>
#include <utility>

#include "common/crypto.h"

namespace dpuaudit::spdm {
namespace {

std::string At(size_t offset) { return " at byte " + std::to_string(offset); }

StatusOr<uint8_t> Byte(ByteReader& r, std::string_view what) {
  return r.U8(what);
}

StatusOr<uint32_t> U24Le(ByteReader& r, std::string_view what) {
  DPA_ASSIGN_OR_RETURN(ByteView b, r.Take(3, what));
  return static_cast<uint32_t>(b[0]) | (static_cast<uint32_t>(b[1]) << 8) |
         (static_cast<uint32_t>(b[2]) << 16);
}

Status CheckVersion(uint8_t version, std::string_view message, size_t offset) {
  if (version == kVersion11) return OkStatus();
  if (version >= 0x12 && version <= 0x1F) {
    return InvalidArgumentError(
        std::string(message) + " SPDMVersion 0x" + HexEncode(Bytes{version}) +
        At(offset) +
        " is not supported: SPDM 1.2 and later sign a prefixed hash with a "
        "context string, only SPDM 1.1 is verified");
  }
  return InvalidArgumentError(std::string(message) + " SPDMVersion 0x" +
                              HexEncode(Bytes{version}) + At(offset) +
                              " is not SPDM 1.1 (0x11)");
}

StatusOr<GetMeasurementsRequest> ParseRequest(ByteReader& r) {
  GetMeasurementsRequest q;
  const size_t start = r.offset();
  DPA_ASSIGN_OR_RETURN(q.version, Byte(r, "GET_MEASUREMENTS SPDMVersion"));
  DPA_RETURN_IF_ERROR(CheckVersion(q.version, "GET_MEASUREMENTS", start));
  DPA_ASSIGN_OR_RETURN(uint8_t code, Byte(r, "GET_MEASUREMENTS code"));
  if (code != kGetMeasurements) {
    return InvalidArgumentError(
        "request code 0x" + HexEncode(Bytes{code}) + At(start + 1) +
        " is not GET_MEASUREMENTS (0xe0)");
  }
  DPA_ASSIGN_OR_RETURN(uint8_t param1, Byte(r, "GET_MEASUREMENTS Param1"));
  if ((param1 & 0xFE) != 0) {
    return InvalidArgumentError("GET_MEASUREMENTS Param1 0x" +
                                HexEncode(Bytes{param1}) + At(start + 2) +
                                " has reserved bits set");
  }
  q.signature_requested = (param1 & 0x01) != 0;
  DPA_ASSIGN_OR_RETURN(q.operation, Byte(r, "GET_MEASUREMENTS Param2"));
  if (q.signature_requested) {
    DPA_ASSIGN_OR_RETURN(ByteView nonce, r.Take(kNonceSize, "GET_MEASUREMENTS Nonce"));
    q.nonce.assign(nonce.begin(), nonce.end());
    const size_t slot_at = r.offset();
    DPA_ASSIGN_OR_RETURN(uint8_t slot, Byte(r, "GET_MEASUREMENTS SlotIDParam"));
    if (slot > 7) {
      return InvalidArgumentError("GET_MEASUREMENTS SlotIDParam " +
                                  std::to_string(slot) + At(slot_at) +
                                  " is not a slot (0-7)");
    }
    q.slot_id = slot;
  }
  return q;
}

StatusOr<MeasurementBlock> ParseBlock(ByteReader& r, size_t base) {
  MeasurementBlock b;
  const size_t start = base + r.offset();
  DPA_ASSIGN_OR_RETURN(b.index, Byte(r, "measurement block Index"));
  DPA_ASSIGN_OR_RETURN(b.specification,
                       Byte(r, "measurement block MeasurementSpecification"));
  DPA_ASSIGN_OR_RETURN(uint16_t size, r.U16Le("measurement block MeasurementSize"));
  DPA_ASSIGN_OR_RETURN(ByteView m, r.Take(size, "measurement block Measurement"));
  b.measurement.assign(m.begin(), m.end());
  if (b.index == 0 || b.index == 0xFF) {
    return InvalidArgumentError("measurement block Index " +
                                std::to_string(b.index) + At(start) +
                                " is reserved (valid: 1-254)");
  }
  if ((b.specification & 0x01) != 0) {
    ByteReader d(m);
    DmtfMeasurement dm;
    DPA_ASSIGN_OR_RETURN(dm.value_type, d.U8("DMTF measurement ValueType"));
    DPA_ASSIGN_OR_RETURN(uint16_t value_size, d.U16Le("DMTF measurement ValueSize"));
    if (value_size != d.remaining()) {
      return InvalidArgumentError(
          "measurement block " + std::to_string(b.index) + At(start) +
          ": DMTF ValueSize " + std::to_string(value_size) + " but " +
          std::to_string(d.remaining()) + " bytes follow in MeasurementSize " +
          std::to_string(size));
    }
    DPA_ASSIGN_OR_RETURN(ByteView v, d.Take(value_size, "DMTF measurement Value"));
    dm.value.assign(v.begin(), v.end());
    b.dmtf = std::move(dm);
  }
  return b;
}

StatusOr<MeasurementsResponse> ParseResponse(ByteReader& r, size_t signature_size,
                                             const GetMeasurementsRequest& q) {
  MeasurementsResponse p;
  const size_t start = r.offset();
  DPA_ASSIGN_OR_RETURN(p.version, Byte(r, "MEASUREMENTS SPDMVersion"));
  DPA_RETURN_IF_ERROR(CheckVersion(p.version, "MEASUREMENTS", start));
  if (p.version != q.version) {
    return InvalidArgumentError("MEASUREMENTS SPDMVersion" + At(start) +
                                " differs from the request's");
  }
  DPA_ASSIGN_OR_RETURN(uint8_t code, Byte(r, "MEASUREMENTS code"));
  if (code != kMeasurements) {
    return InvalidArgumentError("response code 0x" + HexEncode(Bytes{code}) +
                                At(start + 1) +
                                " is not MEASUREMENTS (0x60)");
  }
  DPA_ASSIGN_OR_RETURN(p.param1, Byte(r, "MEASUREMENTS Param1"));
  DPA_ASSIGN_OR_RETURN(uint8_t param2, Byte(r, "MEASUREMENTS Param2"));
  p.slot_id = param2 & 0x0F;
  if (q.signature_requested && p.slot_id != q.slot_id) {
    return InvalidArgumentError("MEASUREMENTS slot " + std::to_string(p.slot_id) +
                                At(start + 3) + " is not the requested slot " +
                                std::to_string(q.slot_id));
  }
  DPA_ASSIGN_OR_RETURN(uint8_t count, Byte(r, "MEASUREMENTS NumberOfBlocks"));
  const size_t record_at = r.offset() + 3;
  DPA_ASSIGN_OR_RETURN(uint32_t record_length,
                       U24Le(r, "MEASUREMENTS MeasurementRecordLength"));
  DPA_ASSIGN_OR_RETURN(ByteView record,
                       r.Take(record_length, "MEASUREMENTS MeasurementRecord"));
  ByteReader rr(record);
  std::set<uint8_t> seen;
  while (!rr.empty()) {
    const size_t block_at = record_at + rr.offset();
    DPA_ASSIGN_OR_RETURN(MeasurementBlock b, ParseBlock(rr, record_at));
    if (!seen.insert(b.index).second) {
      return InvalidArgumentError("measurement block Index " +
                                  std::to_string(b.index) + At(block_at) +
                                  " appears twice");
    }
    p.blocks.push_back(std::move(b));
  }
  if (p.blocks.size() != count) {
    return InvalidArgumentError(
        "MEASUREMENTS NumberOfBlocks is " + std::to_string(count) + " but " +
        "MeasurementRecordLength " + std::to_string(record_length) + " holds " +
        std::to_string(p.blocks.size()) + " blocks");
  }
  if (q.operation != 0 && q.operation != 0xFF) {
    if (p.blocks.size() != 1 || p.blocks[0].index != q.operation) {
      return InvalidArgumentError(
          "MEASUREMENTS does not carry exactly the requested index " +
          std::to_string(q.operation));
    }
  }
  if (q.signature_requested) {
    DPA_ASSIGN_OR_RETURN(ByteView nonce, r.Take(kNonceSize, "MEASUREMENTS Nonce"));
    p.nonce.assign(nonce.begin(), nonce.end());
  }
  DPA_ASSIGN_OR_RETURN(uint16_t opaque_length, r.U16Le("MEASUREMENTS OpaqueLength"));
  if (opaque_length > 1024) {
    return InvalidArgumentError("MEASUREMENTS OpaqueLength " +
                                std::to_string(opaque_length) + At(r.offset() - 2) +
                                " exceeds 1024");
  }
  DPA_ASSIGN_OR_RETURN(ByteView opaque, r.Take(opaque_length, "MEASUREMENTS OpaqueData"));
  p.opaque_data.assign(opaque.begin(), opaque.end());
  if (q.signature_requested) {
    DPA_ASSIGN_OR_RETURN(ByteView sig, r.Take(signature_size, "MEASUREMENTS Signature"));
    p.signature.assign(sig.begin(), sig.end());
  }
  if (!r.empty()) {
    return InvalidArgumentError(std::to_string(r.remaining()) +
                                " bytes trail the MEASUREMENTS response" +
                                At(r.offset()));
  }
  return p;
}

const EVP_MD* MdOf(HashingAlgorithm h) {
  switch (h) {
    case HashingAlgorithm::kSha256:
      return EVP_sha256();
    case HashingAlgorithm::kSha384:
      return EVP_sha384();
    case HashingAlgorithm::kSha512:
      return EVP_sha512();
  }
  return nullptr;
}

std::string CurveOf(EVP_PKEY* key) {
  if (EVP_PKEY_base_id(key) != EVP_PKEY_EC) return "";
  char name[64] = {0};
  size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, name,
                                     sizeof name, &len) != 1) {
    ERR_clear_error();
    return "";
  }
  const std::string_view n(name, len);
  if (n == "prime256v1" || n == "P-256") return "P-256";
  if (n == "secp384r1" || n == "P-384") return "P-384";
  return "";
}

// r || s (big-endian halves) to the DER ECDSA-Sig-Value OpenSSL verifies.
StatusOr<Bytes> RawToDer(ByteView raw) {
  const size_t half = raw.size() / 2;
  EcdsaSigPtr sig(ECDSA_SIG_new());
  BnPtr r(BN_bin2bn(raw.data(), static_cast<int>(half), nullptr));
  BnPtr s(BN_bin2bn(raw.data() + half, static_cast<int>(half), nullptr));
  if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) {
    return SslStatus("building the ECDSA signature failed");
  }
  r.release();
  s.release();
  unsigned char* der = nullptr;
  const int len = i2d_ECDSA_SIG(sig.get(), &der);
  if (len <= 0) return SslStatus("encoding the ECDSA signature failed");
  OsslBytesPtr<unsigned char> owned(der);
  return Bytes(der, der + len);
}

}  // namespace

StatusOr<SigningAlgorithm> ParseSigningAlgorithm(std::string_view name) {
  if (name == "TPM_ALG_ECDSA_ECC_NIST_P256") return SigningAlgorithm::kEcdsaP256;
  if (name == "TPM_ALG_ECDSA_ECC_NIST_P384") return SigningAlgorithm::kEcdsaP384;
  return InvalidArgumentError("SigningAlgorithm \"" + std::string(name.substr(0, 64)) +
                              "\" is not TPM_ALG_ECDSA_ECC_NIST_P256 or "
                              "TPM_ALG_ECDSA_ECC_NIST_P384");
}

std::string_view SigningAlgorithmName(SigningAlgorithm a) {
  return a == SigningAlgorithm::kEcdsaP256 ? "TPM_ALG_ECDSA_ECC_NIST_P256"
                                           : "TPM_ALG_ECDSA_ECC_NIST_P384";
}

size_t SignatureSize(SigningAlgorithm a) {
  return a == SigningAlgorithm::kEcdsaP256 ? 64 : 96;
}

StatusOr<HashingAlgorithm> ParseHashingAlgorithm(std::string_view name) {
  if (name == "TPM_ALG_SHA_256") return HashingAlgorithm::kSha256;
  if (name == "TPM_ALG_SHA_384") return HashingAlgorithm::kSha384;
  if (name == "TPM_ALG_SHA_512") return HashingAlgorithm::kSha512;
  return InvalidArgumentError("HashingAlgorithm \"" + std::string(name.substr(0, 64)) +
                              "\" is not TPM_ALG_SHA_256, TPM_ALG_SHA_384 or "
                              "TPM_ALG_SHA_512");
}

std::string_view HashingAlgorithmName(HashingAlgorithm h) {
  switch (h) {
    case HashingAlgorithm::kSha256:
      return "TPM_ALG_SHA_256";
    case HashingAlgorithm::kSha384:
      return "TPM_ALG_SHA_384";
    case HashingAlgorithm::kSha512:
      return "TPM_ALG_SHA_512";
  }
  return "";
}

size_t DigestSize(HashingAlgorithm h) {
  switch (h) {
    case HashingAlgorithm::kSha256:
      return 32;
    case HashingAlgorithm::kSha384:
      return 48;
    case HashingAlgorithm::kSha512:
      return 64;
  }
  return 0;
}

std::string DmtfValueKindName(uint8_t value_type) {
  static constexpr std::string_view kNames[] = {
      "immutable_rom",          "mutable_firmware",
      "hardware_configuration", "firmware_configuration",
      "measurement_manifest",   "device_mode",
      "firmware_version",       "firmware_security_version"};
  const uint8_t kind = value_type & 0x7F;
  if (kind < std::size(kNames)) return std::string(kNames[kind]);
  return "type_" + std::to_string(kind);
}

StatusOr<Transcript> ParseTranscript(ByteView transcript, size_t signature_size) {
  if (transcript.size() > kMaxTranscriptBytes) {
    return InvalidArgumentError("SPDM transcript of " +
                                std::to_string(transcript.size()) +
                                " bytes exceeds " +
                                std::to_string(kMaxTranscriptBytes));
  }
  ByteReader r(transcript);
  Transcript t;
  DPA_ASSIGN_OR_RETURN(t.request, ParseRequest(r));
  DPA_ASSIGN_OR_RETURN(t.response, ParseResponse(r, signature_size, t.request));
  t.signed_size = transcript.size() - t.response.signature.size();
  return t;
}

StatusOr<SpdmPublicKey> SpdmPublicKey::FromCertificate(X509* cert) {
  if (cert == nullptr) return InvalidArgumentError("no certificate");
  SpdmPublicKey k;
  k.key_.reset(X509_get_pubkey(cert));
  if (!k.key_) return SslStatus("the certificate has no readable public key",
                                StatusCode::kInvalidArgument);
  k.curve_ = CurveOf(k.key_.get());
  if (k.curve_.empty()) {
    return InvalidArgumentError(
        "the certificate's key is not ECDSA P-256 or P-384");
  }
  return k;
}

StatusOr<SpdmPublicKey> SpdmPublicKey::FromCertificatePem(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return SslStatus("BIO_new_mem_buf failed");
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPemPassphrase, nullptr));
  if (!cert) {
    return SslStatus("the leaf is not a PEM certificate",
                     StatusCode::kInvalidArgument);
  }
  return FromCertificate(cert.get());
}

StatusOr<VerifiedMeasurements> VerifySignedMeasurements(
    ByteView transcript, const SpdmPublicKey& key, SigningAlgorithm signing,
    HashingAlgorithm hashing, ByteView expected_nonce) {
  if (expected_nonce.size() != kNonceSize) {
    return InvalidArgumentError("the expected nonce is " +
                                std::to_string(expected_nonce.size()) +
                                " bytes, not 32");
  }
  const std::string want_curve =
      signing == SigningAlgorithm::kEcdsaP256 ? "P-256" : "P-384";
  if (key.get() == nullptr || key.curve() != want_curve) {
    return InvalidArgumentError(
        std::string(SigningAlgorithmName(signing)) + " needs a " + want_curve +
        " key; the leaf's is " + (key.curve().empty() ? "another type" : key.curve()));
  }
  if (transcript.size() > kMaxTranscriptBytes) {
    return InvalidArgumentError("SPDM transcript of " +
                                std::to_string(transcript.size()) +
                                " bytes exceeds " +
                                std::to_string(kMaxTranscriptBytes));
  }
  const size_t sig_size = SignatureSize(signing);
  if (transcript.size() <= sig_size) {
    return InvalidArgumentError("SPDM transcript of " +
                                std::to_string(transcript.size()) +
                                " bytes is too short for a " +
                                std::to_string(sig_size) + "-byte signature");
  }
  // 1. The signature over the raw bytes, before anything is parsed.
  const ByteView signed_bytes = transcript.first(transcript.size() - sig_size);
  DPA_ASSIGN_OR_RETURN(Bytes der, RawToDer(transcript.last(sig_size)));
  MdCtxPtr ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, MdOf(hashing), nullptr,
                                   key.get()) != 1) {
    return SslStatus("EVP_DigestVerifyInit failed");
  }
  const int rc = EVP_DigestVerify(ctx.get(), der.data(), der.size(),
                                  signed_bytes.data(), signed_bytes.size());
  if (rc != 1) {
    ERR_clear_error();
    return UnauthenticatedError(
        "the SPDM MEASUREMENTS signature does not verify with the leaf key (" +
        std::string(SigningAlgorithmName(signing)) + " over " +
        std::string(HashingAlgorithmName(hashing)) + " of the first " +
        std::to_string(signed_bytes.size()) + " bytes)");
  }
  // 2. Only now: what the signature covers.
  DPA_ASSIGN_OR_RETURN(Transcript t, ParseTranscript(transcript, sig_size));
  if (!t.request.signature_requested) {
    return InvalidArgumentError(
        "the GET_MEASUREMENTS request did not ask for a signature");
  }
  if (!ConstantTimeEquals(t.request.nonce, expected_nonce)) {
    return FailedPreconditionError(
        "the signed request nonce " + HexEncode(t.request.nonce) +
        " is not ours (" + HexEncode(expected_nonce) +
        "): a replayed or foreign transcript");
  }
  VerifiedMeasurements v;
  v.transcript_ = std::move(t);
  v.signing_ = signing;
  v.hashing_ = hashing;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (EVP_Digest(signed_bytes.data(), signed_bytes.size(), md, &md_len,
                 MdOf(hashing), nullptr) != 1) {
    return SslStatus("EVP_Digest failed");
  }
  v.digest_hex_ = HexEncode(ByteView(md, md_len));
  return v;
}

}  // namespace dpuaudit::spdm
