#include "attest/credential.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tpm2_types.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "attest/tpm_types.h"
#include "common/crypto.h"
#include "common/files.h"
#include "common/openssl.h"

namespace dpuaudit::attest {
namespace {

// Zeroes a secret buffer when it goes out of scope.
struct Wiped {
  Bytes b;
  ~Wiped() { OPENSSL_cleanse(b.data(), b.size()); }
};

const EVP_MD* MdOf(uint16_t alg) {
  switch (alg) {
    case kTpmAlgSha1: return EVP_sha1();
    case kTpmAlgSha256: return EVP_sha256();
    case kTpmAlgSha384: return EVP_sha384();
    case kTpmAlgSha512: return EVP_sha512();
    default: return nullptr;
  }
}

void PutBe16(Bytes& out, size_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
void PutBe32(Bytes& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

// Part 1 §11.4.10: the counter-mode KDFs. Concatenates prf(counter) for
// counter = 1, 2, ... until `bits` are produced and keeps the first
// ceil(bits / 8) bytes; an output of L bits keeps the L low-order bits
// (§11.4.10.2), so the top bits of the first byte are cleared.
template <typename Prf>
StatusOr<Bytes> CounterModeKdf(std::string_view name, uint32_t bits, Prf&& prf) {
  if (bits == 0 || bits > (1u << 20)) {
    return InvalidArgumentError(std::string(name) + " output of " +
                                std::to_string(bits) +
                                " bits is out of range [1, 1048576].");
  }
  const size_t bytes = (bits + 7) / 8;
  Bytes out;
  for (uint32_t counter = 1; out.size() < bytes; ++counter) {
    DPA_ASSIGN_OR_RETURN(Bytes block, prf(counter));
    out.insert(out.end(), block.begin(), block.end());
  }
  out.resize(bytes);
  if (bits % 8 != 0) out[0] = static_cast<uint8_t>(out[0] & ((1u << (bits % 8)) - 1));
  return out;
}

// Part 1 §11.4.10.3 KDFe: H(counter || Z || label\0 || U || V) blocks.
StatusOr<Bytes> KdfE(uint16_t hash_alg, ByteView z, std::string_view label,
                     ByteView party_u, ByteView party_v, uint32_t bits) {
  if (MdOf(hash_alg) == nullptr || !HashAlgDigestSize(hash_alg).has_value()) {
    return InvalidArgumentError("KDFe hash " + HashAlgName(hash_alg) +
                                " is not supported.");
  }
  return CounterModeKdf("KDFe", bits, [&](uint32_t counter) -> StatusOr<Bytes> {
    Bytes block;
    PutBe32(block, counter);
    block.insert(block.end(), z.begin(), z.end());
    block.insert(block.end(), label.begin(), label.end());
    block.push_back(0);
    block.insert(block.end(), party_u.begin(), party_u.end());
    block.insert(block.end(), party_v.begin(), party_v.end());
    StatusOr<Bytes> h = HashWith(hash_alg, block);
    OPENSSL_cleanse(block.data(), block.size());
    return h;
  });
}

StatusOr<Bytes> Hmac(uint16_t alg, ByteView key, ByteView data) {
  const EVP_MD* md = MdOf(alg);
  if (md == nullptr) {
    return InvalidArgumentError("HMAC hash " + HashAlgName(alg) +
                                " is not supported.");
  }
  Bytes out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (HMAC(md, key.data(), static_cast<int>(key.size()), data.data(),
           data.size(), out.data(), &len) == nullptr) {
    return SslStatus("HMAC failed");
  }
  out.resize(len);
  return out;
}

StatusOr<Bytes> AesCfbEncrypt(ByteView key, ByteView plain) {
  const EVP_CIPHER* cipher = key.size() == 16   ? EVP_aes_128_cfb128()
                             : key.size() == 32 ? EVP_aes_256_cfb128()
                             : key.size() == 24 ? EVP_aes_192_cfb128()
                                                : nullptr;
  if (cipher == nullptr) {
    return InternalError("AES key of " + std::to_string(key.size()) +
                         " bytes.");
  }
  uint8_t iv[16] = {0};  // Part 1 §24.4: the IV is all zeros
  CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  Bytes out(plain.size() + 16);
  int n1 = 0, n2 = 0;
  if (!ctx ||
      EVP_EncryptInit_ex(ctx.get(), cipher, nullptr, key.data(), iv) != 1 ||
      EVP_EncryptUpdate(ctx.get(), out.data(), &n1, plain.data(),
                        static_cast<int>(plain.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), out.data() + n1, &n2) != 1) {
    return SslStatus("AES-CFB encryption failed");
  }
  out.resize(static_cast<size_t>(n1 + n2));
  return out;
}

StatusOr<Bytes> RsaOaepEncrypt(const TpmPublic& ek, ByteView seed) {
  const EVP_MD* md = MdOf(ek.name_alg());
  static constexpr char kLabel[] = "IDENTITY";  // with its terminating zero
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, ek.pkey(), nullptr));
  if (!ctx || EVP_PKEY_encrypt_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_OAEP_PADDING) != 1 ||
      EVP_PKEY_CTX_set_rsa_oaep_md(ctx.get(), md) != 1 ||
      EVP_PKEY_CTX_set_rsa_mgf1_md(ctx.get(), md) != 1) {
    return SslStatus("setting up RSA-OAEP failed");
  }
  void* label = OPENSSL_memdup(kLabel, sizeof kLabel);
  if (label == nullptr ||
      EVP_PKEY_CTX_set0_rsa_oaep_label(ctx.get(), label, sizeof kLabel) != 1) {
    OPENSSL_free(label);
    return SslStatus("setting the OAEP label failed");
  }
  size_t len = 0;
  if (EVP_PKEY_encrypt(ctx.get(), nullptr, &len, seed.data(), seed.size()) !=
      1) {
    return SslStatus("RSA-OAEP encryption failed");
  }
  Bytes out(len);
  if (EVP_PKEY_encrypt(ctx.get(), out.data(), &len, seed.data(),
                       seed.size()) != 1) {
    return SslStatus("RSA-OAEP encryption failed");
  }
  out.resize(len);
  return out;
}

struct EccShared {
  Bytes seed;
  Bytes ephemeral_point;  // marshalled TPMS_ECC_POINT
};

// ECC secret sharing (Part 1 §C.6.4 / Part 3 "Secret sharing"): Z is the x
// coordinate of d_e * Q_ek; seed = KDFe(nameAlg, Z, "IDENTITY", x_e, x_ek).
StatusOr<EccShared> EccSeed(const TpmPublic& ek, ByteView scalar_in) {
  int nid = ek.ecc_curve() == TPM2_ECC_NIST_P256   ? NID_X9_62_prime256v1
            : ek.ecc_curve() == TPM2_ECC_NIST_P384 ? NID_secp384r1
                                                   : NID_undef;
  if (nid == NID_undef) {
    return UnimplementedError("MakeCredential for ECC curve " +
                              std::to_string(ek.ecc_curve()) +
                              " is not implemented.");
  }
  EcGroupPtr group(EC_GROUP_new_by_curve_name(nid));
  BnCtxPtr bn_ctx(BN_CTX_new());
  if (!group || !bn_ctx) return SslStatus("creating the EC group failed");
  size_t coord = (static_cast<size_t>(EC_GROUP_get_degree(group.get())) + 7) / 8;

  // The EK's public point, as OpenSSL holds it.
  size_t pub_len = 0;
  if (EVP_PKEY_get_octet_string_param(ek.pkey(), OSSL_PKEY_PARAM_PUB_KEY,
                                      nullptr, 0, &pub_len) != 1) {
    return SslStatus("reading the EK point failed");
  }
  Bytes pub(pub_len);
  EcPointPtr q(EC_POINT_new(group.get()));
  if (EVP_PKEY_get_octet_string_param(ek.pkey(), OSSL_PKEY_PARAM_PUB_KEY,
                                      pub.data(), pub.size(), &pub_len) != 1 ||
      !q ||
      EC_POINT_oct2point(group.get(), q.get(), pub.data(), pub_len,
                         bn_ctx.get()) != 1) {
    return SslStatus("decoding the EK point failed");
  }

  // Ephemeral scalar: caller's (known-answer tests) or random in [1, n-1].
  const BIGNUM* order = EC_GROUP_get0_order(group.get());
  BnSecretPtr d(BN_new());
  if (!d) return SslStatus("BN_new failed");
  if (!scalar_in.empty()) {
    if (BN_bin2bn(scalar_in.data(), static_cast<int>(scalar_in.size()),
                  d.get()) == nullptr) {
      return SslStatus("reading the ephemeral scalar failed");
    }
    if (BN_is_zero(d.get()) || BN_cmp(d.get(), order) >= 0) {
      return InvalidArgumentError(
          "the ephemeral scalar is not in [1, n-1] for the EK's curve.");
    }
  } else {
    do {
      if (BN_priv_rand_range(d.get(), order) != 1) {
        return SslStatus("choosing an ephemeral scalar failed");
      }
    } while (BN_is_zero(d.get()));
  }

  EcPointPtr e(EC_POINT_new(group.get()));
  EcPointPtr z(EC_POINT_new(group.get()));
  BnSecretPtr ex(BN_new()), ey(BN_new()), zx(BN_new()), qx(BN_new());
  if (!e || !z || !ex || !ey || !zx || !qx ||
      EC_POINT_mul(group.get(), e.get(), d.get(), nullptr, nullptr,
                   bn_ctx.get()) != 1 ||
      EC_POINT_mul(group.get(), z.get(), nullptr, q.get(), d.get(),
                   bn_ctx.get()) != 1 ||
      EC_POINT_is_at_infinity(group.get(), z.get()) ||
      EC_POINT_get_affine_coordinates(group.get(), e.get(), ex.get(), ey.get(),
                                      bn_ctx.get()) != 1 ||
      EC_POINT_get_affine_coordinates(group.get(), z.get(), zx.get(), nullptr,
                                      bn_ctx.get()) != 1 ||
      EC_POINT_get_affine_coordinates(group.get(), q.get(), qx.get(), nullptr,
                                      bn_ctx.get()) != 1) {
    return SslStatus("ECDH with the EK failed");
  }
  auto fixed = [coord](const BIGNUM* bn) {
    Bytes out(coord);
    BN_bn2binpad(bn, out.data(), static_cast<int>(coord));
    return out;
  };
  Wiped z_bytes{fixed(zx.get())};
  Bytes e_x = fixed(ex.get()), e_y = fixed(ey.get()), q_x = fixed(qx.get());
  std::optional<size_t> hlen = HashAlgDigestSize(ek.name_alg());
  DPA_ASSIGN_OR_RETURN(
      Bytes seed, KdfE(ek.name_alg(), z_bytes.b, "IDENTITY", e_x, q_x,
                       static_cast<uint32_t>(*hlen * 8)));
  EccShared out;
  out.seed = std::move(seed);
  PutBe16(out.ephemeral_point, e_x.size());
  out.ephemeral_point.insert(out.ephemeral_point.end(), e_x.begin(), e_x.end());
  PutBe16(out.ephemeral_point, e_y.size());
  out.ephemeral_point.insert(out.ephemeral_point.end(), e_y.begin(), e_y.end());
  return out;
}

StatusOr<MadeCredential> MakeCredentialImpl(const TpmPublic& ek,
                                            ByteView credential,
                                            ByteView ak_name,
                                            ByteView seed_or_scalar) {
  const uint32_t kStorage = kTpmaRestricted | kTpmaDecrypt;
  if ((ek.attributes() & kStorage) != kStorage) {
    return FailedPreconditionError(
        "the EK is not a storage key (restricted and decrypt must be set).");
  }
  if (ek.symmetric_aes_bits() != 128 && ek.symmetric_aes_bits() != 256) {
    return FailedPreconditionError(
        "the EK's symmetric definition is not AES-128 or AES-256 "
        "(aes bits " +
        std::to_string(ek.symmetric_aes_bits()) + ").");
  }
  const uint16_t name_alg = ek.name_alg();
  const size_t hlen = *HashAlgDigestSize(name_alg);
  if (credential.empty() || credential.size() > hlen) {
    return InvalidArgumentError("the credential is " +
                                std::to_string(credential.size()) +
                                " bytes; it must be 1 to " +
                                std::to_string(hlen) + " (EK nameAlg size).");
  }
  if (ak_name.size() < 2) {
    return InvalidArgumentError("the AK name is shorter than 2 bytes.");
  }
  uint16_t ak_alg = static_cast<uint16_t>(ak_name[0] << 8 | ak_name[1]);
  std::optional<size_t> ak_hlen = HashAlgDigestSize(ak_alg);
  if (!ak_hlen.has_value() || ak_name.size() != 2 + *ak_hlen) {
    return InvalidArgumentError("the AK name " + HexEncode(ak_name) +
                                " is not a nameAlg followed by its digest.");
  }

  // The seed and how it reaches the EK.
  Wiped seed;
  Bytes secret;
  if (ek.type() == TpmPublic::Type::kRsa) {
    if (!seed_or_scalar.empty()) {
      if (seed_or_scalar.size() != hlen) {
        return InvalidArgumentError("the seed must be " +
                                    std::to_string(hlen) + " bytes.");
      }
      seed.b.assign(seed_or_scalar.begin(), seed_or_scalar.end());
    } else {
      DPA_ASSIGN_OR_RETURN(seed.b, RandomBytes(hlen));
    }
    DPA_ASSIGN_OR_RETURN(secret, RsaOaepEncrypt(ek, seed.b));
  } else {
    DPA_ASSIGN_OR_RETURN(EccShared shared, EccSeed(ek, seed_or_scalar));
    seed.b = std::move(shared.seed);
    secret = std::move(shared.ephemeral_point);
  }

  // Part 1 §24.4: protect TPM2B_DIGEST(credential) under the seed, bound
  // to the AK's name.
  Wiped sym_key;
  DPA_ASSIGN_OR_RETURN(sym_key.b, KdfA(name_alg, seed.b, "STORAGE", ak_name, {},
                                       ek.symmetric_aes_bits()));
  Wiped plain;
  PutBe16(plain.b, credential.size());
  plain.b.insert(plain.b.end(), credential.begin(), credential.end());
  DPA_ASSIGN_OR_RETURN(Bytes enc_identity, AesCfbEncrypt(sym_key.b, plain.b));
  Wiped hmac_key;
  DPA_ASSIGN_OR_RETURN(hmac_key.b,
                       KdfA(name_alg, seed.b, "INTEGRITY", {}, {},
                            static_cast<uint32_t>(hlen * 8)));
  Bytes hmac_input = enc_identity;
  hmac_input.insert(hmac_input.end(), ak_name.begin(), ak_name.end());
  DPA_ASSIGN_OR_RETURN(Bytes outer_hmac, Hmac(name_alg, hmac_key.b, hmac_input));

  // TPM2B_ID_OBJECT: size || TPM2B_DIGEST(outerHMAC) || encIdentity.
  TPM2B_ID_OBJECT id{};
  Bytes body;
  PutBe16(body, outer_hmac.size());
  body.insert(body.end(), outer_hmac.begin(), outer_hmac.end());
  body.insert(body.end(), enc_identity.begin(), enc_identity.end());
  if (body.size() > sizeof id.credential) {
    return InternalError("the ID object does not fit a TPM2B_ID_OBJECT.");
  }
  id.size = static_cast<UINT16>(body.size());
  std::memcpy(id.credential, body.data(), body.size());
  TPM2B_ENCRYPTED_SECRET es{};
  if (secret.size() > sizeof es.secret) {
    return InternalError("the encrypted seed does not fit a "
                         "TPM2B_ENCRYPTED_SECRET.");
  }
  es.size = static_cast<UINT16>(secret.size());
  std::memcpy(es.secret, secret.data(), secret.size());

  MadeCredential out;
  out.credential_blob.resize(sizeof id);
  out.encrypted_secret.resize(sizeof es);
  size_t o1 = 0, o2 = 0;
  if (Tss2_MU_TPM2B_ID_OBJECT_Marshal(&id, out.credential_blob.data(),
                                      out.credential_blob.size(),
                                      &o1) != TSS2_RC_SUCCESS ||
      Tss2_MU_TPM2B_ENCRYPTED_SECRET_Marshal(&es, out.encrypted_secret.data(),
                                             out.encrypted_secret.size(),
                                             &o2) != TSS2_RC_SUCCESS) {
    return InternalError("marshalling the credential failed.");
  }
  out.credential_blob.resize(o1);
  out.encrypted_secret.resize(o2);
  return out;
}

constexpr uint32_t kCredentialFileMagic = 0xBADCC0DE;
constexpr uint32_t kCredentialFileVersion = 1;

}  // namespace

StatusOr<Bytes> KdfA(uint16_t hash_alg, ByteView key, std::string_view label,
                     ByteView context_u, ByteView context_v, uint32_t bits) {
  if (MdOf(hash_alg) == nullptr) {
    return InvalidArgumentError("KDFa hash " + HashAlgName(hash_alg) +
                                " is not supported.");
  }
  return CounterModeKdf("KDFa", bits, [&](uint32_t counter) {
    // [i]_32 || Label || 0x00 || Context_U || Context_V || [L]_32
    Bytes input;
    PutBe32(input, counter);
    input.insert(input.end(), label.begin(), label.end());
    if (label.empty() || label.back() != '\0') input.push_back(0);
    input.insert(input.end(), context_u.begin(), context_u.end());
    input.insert(input.end(), context_v.begin(), context_v.end());
    PutBe32(input, bits);
    return Hmac(hash_alg, key, input);
  });
}

StatusOr<MadeCredential> MakeCredential(const TpmPublic& ek,
                                        ByteView credential,
                                        ByteView ak_name) {
  return MakeCredentialImpl(ek, credential, ak_name, {});
}

StatusOr<MadeCredential> MakeCredentialDeterministic(const TpmPublic& ek,
                                                     ByteView credential,
                                                     ByteView ak_name,
                                                     ByteView seed_or_scalar) {
  if (seed_or_scalar.empty()) {
    return InvalidArgumentError("the seed or scalar is empty.");
  }
  return MakeCredentialImpl(ek, credential, ak_name, seed_or_scalar);
}

// tpm2-tools tools/tpm2_makecredential.c (write_cred_and_secret):
//   u32be 0xBADCC0DE | u32be 1 | TPM2B_ID_OBJECT | TPM2B_ENCRYPTED_SECRET
Bytes WriteTpm2ToolsCredential(const MadeCredential& c) {
  Bytes out;
  PutBe32(out, kCredentialFileMagic);
  PutBe32(out, kCredentialFileVersion);
  out.insert(out.end(), c.credential_blob.begin(), c.credential_blob.end());
  out.insert(out.end(), c.encrypted_secret.begin(), c.encrypted_secret.end());
  return out;
}

StatusOr<MadeCredential> ParseTpm2ToolsCredential(ByteView file) {
  if (file.empty()) {
    return InvalidArgumentError("the credential file is empty.");
  }
  size_t offset = 0;
  uint32_t magic = 0, version = 0;
  if (Tss2_MU_UINT32_Unmarshal(file.data(), file.size(), &offset, &magic) !=
          TSS2_RC_SUCCESS ||
      Tss2_MU_UINT32_Unmarshal(file.data(), file.size(), &offset, &version) !=
          TSS2_RC_SUCCESS) {
    return InvalidArgumentError("the credential file of " +
                                std::to_string(file.size()) +
                                " bytes is too short for its header.");
  }
  if (magic != kCredentialFileMagic) {
    return InvalidArgumentError("the credential file magic " +
                                HexEncode(file.subspan(0, 4)) +
                                " is not badcc0de.");
  }
  if (version != kCredentialFileVersion) {
    return InvalidArgumentError("the credential file version " +
                                std::to_string(version) + " is not 1.");
  }
  size_t blob_at = offset;
  TPM2B_ID_OBJECT id{};
  if (Tss2_MU_TPM2B_ID_OBJECT_Unmarshal(file.data(), file.size(), &offset,
                                        &id) != TSS2_RC_SUCCESS) {
    return InvalidArgumentError(
        "the credential file's TPM2B_ID_OBJECT at offset 8 does not decode.");
  }
  size_t secret_at = offset;
  TPM2B_ENCRYPTED_SECRET es{};
  if (Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal(file.data(), file.size(),
                                               &offset, &es) !=
      TSS2_RC_SUCCESS) {
    return InvalidArgumentError(
        "the credential file's TPM2B_ENCRYPTED_SECRET at offset " +
        std::to_string(secret_at) + " does not decode.");
  }
  if (offset != file.size()) {
    return InvalidArgumentError("the credential file has " +
                                std::to_string(file.size() - offset) +
                                " trailing bytes after offset " +
                                std::to_string(offset) + ".");
  }
  MadeCredential out;
  out.credential_blob.assign(file.begin() + static_cast<ptrdiff_t>(blob_at),
                             file.begin() + static_cast<ptrdiff_t>(secret_at));
  out.encrypted_secret.assign(file.begin() + static_cast<ptrdiff_t>(secret_at),
                              file.end());
  return out;
}

// ---- EK certificates ------------------------------------------------------
namespace {

// TCG EK Credential Profile 2.0 §3.2.9 (tcg-at-*) and §3.2.x extensions.
constexpr std::string_view kOidTpmManufacturer = "2.23.133.2.1";
constexpr std::string_view kOidTpmModel = "2.23.133.2.2";
constexpr std::string_view kOidTpmVersion = "2.23.133.2.3";
constexpr std::string_view kOidTcgArc = "2.23.133.";
constexpr std::string_view kOidEkCertificateEku = "2.23.133.8.1";  // tcg-kp-EKCertificate
constexpr std::string_view kOidSubjectAltName = "2.5.29.17";
constexpr std::string_view kOidSubjectDirectoryAttributes = "2.5.29.9";

std::string OidText(const ASN1_OBJECT* obj) {
  char buf[128];
  int n = OBJ_obj2txt(buf, sizeof buf, obj, 1);
  if (n <= 0) return "";
  return std::string(buf, std::min(static_cast<size_t>(n), sizeof buf - 1));
}

// A critical extension OpenSSL does not process is acceptable in an EK
// certificate only if it is one the TCG profile puts there: the
// subjectAltName (directoryName with TPM attributes), the
// subjectDirectoryAttributes (TPM specification / security assertions),
// or anything under the TCG arc 2.23.133.
bool KnownEkCriticalExtension(const X509_EXTENSION* ext) {
  std::string oid = OidText(X509_EXTENSION_get_object(
      const_cast<X509_EXTENSION*>(ext)));
  return oid == kOidSubjectAltName || oid == kOidSubjectDirectoryAttributes ||
         oid.rfind(kOidTcgArc, 0) == 0;
}

int EkVerifyCallback(int ok, X509_STORE_CTX* ctx) {
  if (ok) return ok;
  if (X509_STORE_CTX_get_error(ctx) != X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION) {
    return ok;
  }
  X509* cert = X509_STORE_CTX_get_current_cert(ctx);
  if (cert == nullptr) return 0;
  for (int i = 0; i < X509_get_ext_count(cert); ++i) {
    X509_EXTENSION* ext = X509_get_ext(cert, i);
    if (!X509_EXTENSION_get_critical(ext)) continue;
    if (X509_supported_extension(ext)) continue;
    if (!KnownEkCriticalExtension(ext)) return 0;
  }
  return 1;  // only TCG / SAN critical extensions were unhandled
}

std::string NameText(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0) {
    return "";
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

std::string Asn1Text(const ASN1_STRING* s) {
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

StatusOr<X509Ptr> ParseCert(ByteView data) {
  static constexpr std::string_view kPem = "-----BEGIN";
  std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  if (text.find(kPem) != std::string_view::npos) {
    BioPtr bio(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
    X509Ptr x(bio ? PEM_read_bio_X509(bio.get(), nullptr, NoPemPassphrase,
                                      nullptr)
                  : nullptr);
    if (!x) return SslStatus("not a PEM certificate", StatusCode::kInvalidArgument);
    return x;
  }
  const unsigned char* p = data.data();
  X509Ptr x(d2i_X509(nullptr, &p, static_cast<long>(data.size())));
  if (!x) return SslStatus("not a DER certificate", StatusCode::kInvalidArgument);
  if (p != data.data() + data.size()) {
    return InvalidArgumentError("trailing bytes after the DER certificate.");
  }
  return x;
}

// The TCG EK Credential Profile for TPM Family 2.0, §3.2 (the EK
// certificate's extensions): an EK certificate is an end-entity
// certificate (basicConstraints cA FALSE) whose extendedKeyUsage is
// tcg-kp-EKCertificate and whose subjectAltName directoryName names the
// TPM manufacturer (tcg-at-tpmManufacturer). Checked on the parsed
// certificate alone, before any signature: microseconds.
Status CheckEkProfile(X509* x) {
  const uint32_t flags = X509_get_extension_flags(x);  // caches extensions
  if ((flags & EXFLAG_INVALID) != 0) {
    return InvalidArgumentError(
        "the EK certificate's extensions do not decode.");
  }
  if ((flags & EXFLAG_CA) != 0) {
    return InvalidArgumentError(
        "the EK certificate is a CA certificate (basicConstraints CA TRUE); "
        "an EK certificate must be a leaf (TCG EK Credential Profile: "
        "basicConstraints cA FALSE).");
  }
  if (X509_check_ca(x) != 0) {
    // A v1 self-signed certificate, or keyUsage keyCertSign without
    // basicConstraints: OpenSSL would accept it as an issuer.
    return InvalidArgumentError(
        "the EK certificate can act as a CA (no basicConstraints CA FALSE, and "
        "a v1 self-signed certificate or keyUsage keyCertSign); an EK "
        "certificate must be a leaf.");
  }
  if ((flags & EXFLAG_KUSAGE) != 0 &&
      (X509_get_key_usage(x) & (KU_KEY_CERT_SIGN | KU_CRL_SIGN)) != 0) {
    return InvalidArgumentError(
        "the EK certificate's keyUsage allows keyCertSign or cRLSign; an EK "
        "certificate must be a leaf.");
  }
  if ((flags & EXFLAG_SI) != 0) {
    return InvalidArgumentError(
        "the EK certificate is self-issued (its subject is its issuer); an EK "
        "certificate is issued by the TPM manufacturer's CA.");
  }
  bool ek_eku = false;
  if ((flags & EXFLAG_XKUSAGE) != 0) {
    std::unique_ptr<EXTENDED_KEY_USAGE, decltype(&EXTENDED_KEY_USAGE_free)> eku(
        static_cast<EXTENDED_KEY_USAGE*>(
            X509_get_ext_d2i(x, NID_ext_key_usage, nullptr, nullptr)),
        EXTENDED_KEY_USAGE_free);
    for (int i = 0; eku && i < sk_ASN1_OBJECT_num(eku.get()); ++i) {
      if (OidText(sk_ASN1_OBJECT_value(eku.get(), i)) == kOidEkCertificateEku) {
        ek_eku = true;
      }
    }
    if (!ek_eku) {
      return InvalidArgumentError(
          "the EK certificate's extendedKeyUsage does not include "
          "tcg-kp-EKCertificate (2.23.133.8.1): it is not an EK certificate.");
    }
  }
  bool dir_name = false, manufacturer = false;
  GeneralNamesPtr names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names.get(), i);
    if (gn->type != GEN_DIRNAME) continue;
    dir_name = true;
    X509_NAME* dn = gn->d.directoryName;
    for (int j = 0; j < X509_NAME_entry_count(dn); ++j) {
      if (OidText(X509_NAME_ENTRY_get_object(X509_NAME_get_entry(dn, j))) ==
          kOidTpmManufacturer) {
        manufacturer = true;
      }
    }
  }
  ERR_clear_error();  // X509_get_ext_d2i of an absent extension
  if (dir_name && !manufacturer) {
    return InvalidArgumentError(
        "the EK certificate's subjectAltName directoryName has no "
        "tcg-at-tpmManufacturer (2.23.133.2.1): it is not an EK certificate.");
  }
  if (!ek_eku && !manufacturer) {
    return InvalidArgumentError(
        "the EK certificate has neither the extendedKeyUsage "
        "tcg-kp-EKCertificate (2.23.133.8.1) nor a subjectAltName naming the "
        "TPM manufacturer (2.23.133.2.1): it is not an EK certificate.");
  }
  return OkStatus();
}

constexpr size_t kMaxCaFileBytes = 1u << 20;

// Every certificate of every *.pem / *.crt / *.der file in `dir`.
Status LoadCaDir(const std::string& dir, X509_STORE* store, int* count) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFoundError("EK CA directory " + dir + " does not exist.");
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".pem" || ext == ".crt" || ext == ".der")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    DPA_ASSIGN_OR_RETURN(Bytes raw,
                         ReadFileLimited(path.string(), kMaxCaFileBytes));
    std::string content = ToString(raw);
    ByteView bytes = raw;
    std::vector<X509Ptr> certs;
    if (content.find("-----BEGIN") != std::string::npos) {
      BioPtr bio(BIO_new_mem_buf(content.data(), static_cast<int>(content.size())));
      while (true) {
        X509Ptr x(
            PEM_read_bio_X509(bio.get(), nullptr, NoPemPassphrase, nullptr));
        if (!x) break;
        certs.push_back(std::move(x));
      }
      ERR_clear_error();  // the end of the PEM stream
    } else {
      auto x = ParseCert(bytes);
      if (!x.ok()) {
        return InvalidArgumentError("CA file " + path.string() +
                                    " does not parse: " + x.status().message());
      }
      certs.push_back(std::move(x).value());
    }
    if (certs.empty()) {
      return InvalidArgumentError("CA file " + path.string() +
                                  " holds no certificate.");
    }
    for (auto& c : certs) {
      if (X509_STORE_add_cert(store, c.get()) != 1) {
        // A duplicate is harmless; anything else is not.
        unsigned long err = ERR_peek_last_error();
        if (ERR_GET_REASON(err) != X509_R_CERT_ALREADY_IN_HASH_TABLE) {
          return SslStatus("adding CA certificate from " + path.string() +
                           " failed");
        }
        ERR_clear_error();
      }
      ++*count;
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<EkCertificateInfo> VerifyEkCertificate(ByteView cert,
                                                const TpmPublic& ek,
                                                const std::string& ca_dir,
                                                int64_t now) {
  if (cert.empty()) {
    return InvalidArgumentError("the EK certificate is empty.");
  }
  auto parsed = ParseCert(cert);
  if (!parsed.ok()) {
    return InvalidArgumentError("EK certificate does not parse: " +
                                parsed.status().message());
  }
  X509Ptr x = std::move(parsed).value();

  // The cheap checks first: the profile, then the key, then the chain.
  DPA_RETURN_IF_ERROR(CheckEkProfile(x.get()));
  if (!ek.SameKey(X509_get0_pubkey(x.get()))) {
    ERR_clear_error();
    return FailedPreconditionError("EK certificate key does not match the EK.");
  }

  X509StorePtr store(X509_STORE_new());
  if (!store) return SslStatus("X509_STORE_new failed");
  int count = 0;
  DPA_RETURN_IF_ERROR(LoadCaDir(ca_dir, store.get(), &count));
  if (count == 0) {
    return FailedPreconditionError("EK CA directory " + ca_dir +
                                   " holds no *.pem, *.crt or *.der "
                                   "certificate.");
  }
  X509_STORE_set_verify_cb(store.get(), EkVerifyCallback);

  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store.get(), x.get(), nullptr) != 1) {
    return SslStatus("X509_STORE_CTX_init failed");
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_time(param, static_cast<time_t>(now));
  X509_VERIFY_PARAM_clear_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
  int rc = X509_verify_cert(ctx.get());
  if (rc != 1) {
    int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return UnauthenticatedError(
        "EK certificate does not verify against the CAs in " + ca_dir + ": " +
        X509_verify_cert_error_string(err) + ".");
  }

  EkCertificateInfo info;
  info.subject = NameText(X509_get_subject_name(x.get()));
  info.issuer = NameText(X509_get_issuer_name(x.get()));
  unsigned char* der = nullptr;
  int der_len = i2d_X509(x.get(), &der);
  if (der_len > 0) {
    info.sha256 = Sha256Hex(ByteView(der, static_cast<size_t>(der_len)));
    OPENSSL_free(der);
  }
  X509StackPtr chain(X509_STORE_CTX_get1_chain(ctx.get()));
  if (chain) {
    for (int i = 0; i < sk_X509_num(chain.get()); ++i) {
      info.chain_subjects.push_back(
          NameText(X509_get_subject_name(sk_X509_value(chain.get(), i))));
    }
  }
  GeneralNamesPtr names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(x.get(), NID_subject_alt_name, nullptr, nullptr)));
  if (names) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
      const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names.get(), i);
      if (gn->type != GEN_DIRNAME) continue;
      X509_NAME* dn = gn->d.directoryName;
      for (int j = 0; j < X509_NAME_entry_count(dn); ++j) {
        X509_NAME_ENTRY* e = X509_NAME_get_entry(dn, j);
        std::string oid = OidText(X509_NAME_ENTRY_get_object(e));
        std::string value = Asn1Text(X509_NAME_ENTRY_get_data(e));
        if (oid == kOidTpmManufacturer) info.tpm_manufacturer = value;
        if (oid == kOidTpmModel) info.tpm_model = value;
        if (oid == kOidTpmVersion) info.tpm_version = value;
      }
    }
  }
  ERR_clear_error();
  return info;
}

}  // namespace dpuaudit::attest
