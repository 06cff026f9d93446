#include "attest/tpm_structs.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tpm2_types.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/openssl.h"

namespace dpuaudit::attest {
namespace {

// The one place Tss2_MU return codes become text. MU codes are few and
// fixed (tss2_common.h), so no tss2-rc dependency is needed here.
std::string MuRcText(TSS2_RC rc) {
  switch (rc) {
    case TSS2_MU_RC_INSUFFICIENT_BUFFER:
      // Tss2_MU reports both with this code.
      return "truncated, or a size field exceeds its buffer";
    case TSS2_MU_RC_BAD_SIZE:
      return "a size field is too large";
    case TSS2_MU_RC_BAD_VALUE:
      return "a value or union selector is not allowed";
    case TSS2_MU_RC_BAD_REFERENCE:
      return "bad reference";
    default:
      return "Tss2_MU error " + Hex32(rc);
  }
}

// Decodes a structure field by field with Tss2_MU, so that an error names
// the field and the offset at which it starts.
class MuCursor {
 public:
  MuCursor(ByteView data, std::string structure)
      : data_(data), structure_(std::move(structure)) {}

  size_t offset() const { return offset_; }

  template <typename T, typename Fn>
  Status Read(Fn fn, T* out, std::string_view field) {
    size_t at = offset_;
    TSS2_RC rc = fn(data_.data(), data_.size(), &offset_, out);
    return Check(rc, at, field);
  }
  template <typename T, typename Fn>
  Status ReadUnion(Fn fn, uint32_t selector, T* out, std::string_view field) {
    size_t at = offset_;
    TSS2_RC rc = fn(data_.data(), data_.size(), &offset_, selector, out);
    return Check(rc, at, field);
  }
  Status Finish() const {
    if (offset_ != data_.size()) {
      return InvalidArgumentError(
          structure_ + " has " + std::to_string(data_.size() - offset_) +
          " trailing bytes after offset " + HexNumber(offset_) + ".");
    }
    return OkStatus();
  }

 private:
  Status Check(TSS2_RC rc, size_t at, std::string_view field) {
    if (rc == TSS2_RC_SUCCESS) return OkStatus();
    offset_ = at;
    return InvalidArgumentError(structure_ + "." + std::string(field) +
                                " at offset " + HexNumber(at) +
                                " does not decode (" + MuRcText(rc) + ").");
  }
  ByteView data_;
  std::string structure_;
  size_t offset_ = 0;
};

Status NonEmpty(ByteView data, std::string_view structure) {
  // Tss2_MU refuses a null buffer with BAD_REFERENCE; say what it means.
  if (data.empty()) {
    return InvalidArgumentError(std::string(structure) + " is empty.");
  }
  return OkStatus();
}

const EVP_MD* MdOf(uint16_t alg) {
  switch (alg) {
    case kTpmAlgSha1:
      return EVP_sha1();
    case kTpmAlgSha256:
      return EVP_sha256();
    case kTpmAlgSha384:
      return EVP_sha384();
    case kTpmAlgSha512:
      return EVP_sha512();
    default:
      return nullptr;
  }
}

bool IsNameAlg(uint16_t alg) { return MdOf(alg) != nullptr; }

std::string SigAlgName(uint16_t alg) {
  switch (alg) {
    case TPM2_ALG_ECDSA:
      return "ECDSA";
    case TPM2_ALG_RSASSA:
      return "RSASSA";
    case TPM2_ALG_RSAPSS:
      return "RSAPSS";
    default:
      return HexNumber(alg, 4);
  }
}

// Which public-key check FromData runs.
enum class KeyCheck {
  kOpenSsl,  // EVP_PKEY_public_check (EC: the point is on the curve)
  kNone,     // done by the caller (RSA: CheckRsaPublic)
};

StatusOr<EvpPkeyPtr> FromData(const char* type, OSSL_PARAM_BLD* bld,
                              std::string_view what, KeyCheck key_check) {
  OsslParamPtr params(OSSL_PARAM_BLD_to_param(bld));
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) !=
          1) {
    return SslStatus(std::string(what) + " is not a valid public key",
                     StatusCode::kInvalidArgument);
  }
  EvpPkeyPtr pkey(raw);
  if (key_check == KeyCheck::kNone) return pkey;
  PkeyCtxPtr check(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey.get(), nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1) {
    return SslStatus(std::string(what) + " fails the public key check",
                     StatusCode::kInvalidArgument);
  }
  return pkey;
}

constexpr char kRsaCheckFailed[] =
    "the RSA unique field fails the public key check";

// The primes below 2000 (the small factors; the first 32 are the
// Miller-Rabin bases).
const std::vector<BN_ULONG>& SmallPrimes() {
  static const std::vector<BN_ULONG> primes = [] {
    std::vector<BN_ULONG> p;
    for (BN_ULONG c = 2; c < 2000; ++c) {
      bool prime = true;
      for (BN_ULONG q : p) {
        if (q * q > c) break;
        if (c % q == 0) {
          prime = false;
          break;
        }
      }
      if (prime) p.push_back(c);
    }
    return p;
  }();
  return primes;
}

// The checks of OpenSSL's RSA public key check (SP 800-56B 6.4.2.2: n of
// exactly `bits` bits, n odd,
// e odd in [65537, 2^256), no small prime factor, n composite), made
// deterministic: OpenSSL tests n's compositeness with Miller-Rabin rounds
// over *random* bases, so a crafted modulus could be accepted on one call
// and refused on the next (found by fuzz_smoke.tpm_public). Here the bases
// are the first 32 primes, and the small factors those below 2000.
// CheckRsaPublicCheap is everything but the compositeness test: a few
// hundred word divisions, microseconds at any size.
Status CheckRsaPublicCheap(const BIGNUM* n, uint32_t e, int bits) {
  const std::string what = kRsaCheckFailed;
  if (BN_num_bits(n) != bits) {
    // Leading zero bytes: a shorter key than keyBits says.
    return InvalidArgumentError(what + " (the modulus has " +
                                std::to_string(BN_num_bits(n)) + " bits, not " +
                                std::to_string(bits) + ").");
  }
  if (!BN_is_odd(n))
    return InvalidArgumentError(what + " (the modulus is even).");
  if (e < 65537u || e % 2 == 0) {
    return InvalidArgumentError(what + " (exponent " + std::to_string(e) +
                                " is not an odd number of at least 65537).");
  }
  for (BN_ULONG q : SmallPrimes()) {
    if (BN_mod_word(n, q) == 0) {
      return InvalidArgumentError(what + " (the modulus has the factor " +
                                  std::to_string(q) + ").");
    }
  }
  return OkStatus();
}

// The expensive part: is n composite?
Status CheckRsaComposite(const BIGNUM* n) {
  const std::string what = kRsaCheckFailed;
  const std::vector<BN_ULONG>& primes = SmallPrimes();
  // Miller-Rabin: n - 1 = d * 2^s; n is composite as soon as one base a has
  // a^d != 1 and a^(d*2^r) != n-1 for every r < s (for a composite n the
  // first base nearly always shows it: one modular exponentiation).
  BnCtxPtr ctx(BN_CTX_new());
  BnPtr n1(BN_dup(n)), d(BN_dup(n)), a(BN_new()), x(BN_new());
  auto failed = [] { return SslStatus("the RSA modulus check failed"); };
  if (!ctx || !n1 || !d || !a || !x || BN_sub_word(n1.get(), 1) != 1 ||
      BN_sub_word(d.get(), 1) != 1) {
    return failed();
  }
  int s = 0;
  while (!BN_is_odd(d.get())) {
    if (BN_rshift1(d.get(), d.get()) != 1) return failed();
    ++s;
  }
  for (size_t i = 0; i < 32; ++i) {
    if (BN_set_word(a.get(), primes[i]) != 1 ||
        BN_mod_exp(x.get(), a.get(), d.get(), n, ctx.get()) != 1) {
      return failed();
    }
    bool witness = !BN_is_one(x.get()) && BN_cmp(x.get(), n1.get()) != 0;
    for (int r = 1; witness && r < s; ++r) {
      if (BN_mod_sqr(x.get(), x.get(), n, ctx.get()) != 1) return failed();
      if (BN_cmp(x.get(), n1.get()) == 0) witness = false;
    }
    if (witness) return OkStatus();  // composite
  }
  return InvalidArgumentError(what + " (the modulus is prime).");
}

StatusOr<EvpPkeyPtr> RsaKey(ByteView n, uint32_t exponent, int bits,
                            bool check_composite) {
  BnPtr bn_n(BN_bin2bn(n.data(), static_cast<int>(n.size()), nullptr));
  BnPtr bn_e(BN_new());
  OsslParamBldPtr bld(OSSL_PARAM_BLD_new());
  if (exponent == 0) exponent = 65537u;  // TPM 2.0: 0 means the default
  if (!bn_n) return SslStatus("building an RSA key failed");
  DPA_RETURN_IF_ERROR(CheckRsaPublicCheap(bn_n.get(), exponent, bits));
  if (check_composite) DPA_RETURN_IF_ERROR(CheckRsaComposite(bn_n.get()));
  if (!bn_e || !bld || BN_set_word(bn_e.get(), exponent) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) !=
          1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) !=
          1) {
    return SslStatus("building an RSA key failed");
  }
  return FromData("RSA", bld.get(), "the RSA unique field", KeyCheck::kNone);
}

StatusOr<EvpPkeyPtr> EcKey(uint16_t curve, ByteView x, ByteView y) {
  const char* group = nullptr;
  size_t coord = 0;
  if (curve == TPM2_ECC_NIST_P256) {
    group = "prime256v1";
    coord = 32;
  } else if (curve == TPM2_ECC_NIST_P384) {
    group = "secp384r1";
    coord = 48;
  } else {
    return InvalidArgumentError("ECC curve " + HexNumber(curve, 4) +
                                " is not supported (NIST P-256 or P-384).");
  }
  if (x.size() > coord || y.size() > coord) {
    return InvalidArgumentError(
        "ECC point coordinates of " + std::to_string(x.size()) + " and " +
        std::to_string(y.size()) + " bytes exceed the curve's " +
        std::to_string(coord) + ".");
  }
  // Uncompressed SEC1 point: 0x04 || x || y, each left-padded to `coord`.
  Bytes point(1 + 2 * coord, 0);
  point[0] = 0x04;
  // std::copy, not memcpy: an empty coordinate's data() may be null.
  std::copy(x.begin(), x.end(), point.begin() + 1 + coord - x.size());
  std::copy(y.begin(), y.end(), point.begin() + 1 + 2 * coord - y.size());
  OsslParamBldPtr bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME,
                                      group, 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY,
                                       point.data(), point.size()) != 1) {
    return SslStatus("building an EC key failed");
  }
  return FromData("EC", bld.get(), "the ECC unique point", KeyCheck::kOpenSsl);
}

// What all TpmPublic factories share once a TPMT_PUBLIC decoded.
struct DecodedPublic {
  TPMT_PUBLIC pub{};
};

StatusOr<DecodedPublic> DecodeTpmtFields(ByteView tpmt,
                                         const std::string& structure) {
  DPA_RETURN_IF_ERROR(NonEmpty(tpmt, structure));
  DecodedPublic d;
  TPMT_PUBLIC& p = d.pub;
  MuCursor c(tpmt, structure);
  DPA_RETURN_IF_ERROR(c.Read(Tss2_MU_UINT16_Unmarshal, &p.type, "type"));
  if (p.type != TPM2_ALG_RSA && p.type != TPM2_ALG_ECC) {
    return InvalidArgumentError(structure + ".type " + HexNumber(p.type, 4) +
                                " is not RSA (0x0001) or ECC (0x0023).");
  }
  DPA_RETURN_IF_ERROR(c.Read(Tss2_MU_UINT16_Unmarshal, &p.nameAlg, "nameAlg"));
  if (!IsNameAlg(p.nameAlg)) {
    return InvalidArgumentError(structure + ".nameAlg " +
                                HashAlgName(p.nameAlg) +
                                " is not sha1, sha256, sha384 or sha512.");
  }
  DPA_RETURN_IF_ERROR(c.Read(Tss2_MU_TPMA_OBJECT_Unmarshal, &p.objectAttributes,
                             "objectAttributes"));
  DPA_RETURN_IF_ERROR(
      c.Read(Tss2_MU_TPM2B_DIGEST_Unmarshal, &p.authPolicy, "authPolicy"));
  DPA_RETURN_IF_ERROR(c.ReadUnion(Tss2_MU_TPMU_PUBLIC_PARMS_Unmarshal, p.type,
                                  &p.parameters, "parameters"));
  DPA_RETURN_IF_ERROR(c.ReadUnion(Tss2_MU_TPMU_PUBLIC_ID_Unmarshal, p.type,
                                  &p.unique, "unique"));
  DPA_RETURN_IF_ERROR(c.Finish());
  return d;
}

ByteView View(const uint8_t* data, size_t n) { return ByteView(data, n); }

}  // namespace

// ---- TpmPublic ---------------------------------------------------------

StatusOr<TpmPublic> TpmPublic::Decode(ByteView tpm2b, RsaCheck rsa_check) {
  DPA_RETURN_IF_ERROR(NonEmpty(tpm2b, "TPM2B_PUBLIC"));
  MuCursor c(tpm2b, "TPM2B_PUBLIC");
  uint16_t size = 0;
  DPA_RETURN_IF_ERROR(c.Read(Tss2_MU_UINT16_Unmarshal, &size, "size"));
  if (size != tpm2b.size() - 2) {
    return InvalidArgumentError(
        "TPM2B_PUBLIC.size " + std::to_string(size) + " does not match the " +
        std::to_string(tpm2b.size() - 2) + " bytes that follow it.");
  }
  return DecodeTpmt(tpm2b.subspan(2), rsa_check);
}

StatusOr<TpmPublic> TpmPublic::DecodeTpmt(ByteView tpmt, RsaCheck rsa_check) {
  if (tpmt.size() > UINT16_MAX) {
    return InvalidArgumentError("TPMT_PUBLIC of " +
                                std::to_string(tpmt.size()) +
                                " bytes is larger than a TPM2B can hold.");
  }
  DPA_ASSIGN_OR_RETURN(DecodedPublic d, DecodeTpmtFields(tpmt, "TPMT_PUBLIC"));
  const TPMT_PUBLIC& p = d.pub;
  TpmPublic out;
  out.name_alg_ = p.nameAlg;
  out.attributes_ = p.objectAttributes;
  out.auth_policy_.assign(p.authPolicy.buffer,
                          p.authPolicy.buffer + p.authPolicy.size);
  const TPMT_SYM_DEF_OBJECT* sym = nullptr;
  EvpPkeyPtr pkey;
  if (p.type == TPM2_ALG_RSA) {
    const TPMS_RSA_PARMS& rsa = p.parameters.rsaDetail;
    if (rsa.keyBits != 2048 && rsa.keyBits != 3072 && rsa.keyBits != 4096) {
      return InvalidArgumentError("TPMT_PUBLIC.parameters.keyBits " +
                                  std::to_string(rsa.keyBits) +
                                  " is not 2048, 3072 or 4096.");
    }
    if (p.unique.rsa.size != rsa.keyBits / 8) {
      return InvalidArgumentError("TPMT_PUBLIC.unique RSA modulus is " +
                                  std::to_string(p.unique.rsa.size) +
                                  " bytes, expected " +
                                  std::to_string(rsa.keyBits / 8) + ".");
    }
    const bool full = rsa_check == RsaCheck::kFull;
    DPA_ASSIGN_OR_RETURN(
        pkey, RsaKey(View(p.unique.rsa.buffer, p.unique.rsa.size), rsa.exponent,
                     rsa.keyBits, full));
    out.type_ = Type::kRsa;
    out.key_fully_checked_ = full;
    out.rsa_bits_ = rsa.keyBits;
    sym = &rsa.symmetric;
  } else {
    const TPMS_ECC_PARMS& ecc = p.parameters.eccDetail;
    DPA_ASSIGN_OR_RETURN(
        pkey,
        EcKey(ecc.curveID, View(p.unique.ecc.x.buffer, p.unique.ecc.x.size),
              View(p.unique.ecc.y.buffer, p.unique.ecc.y.size)));
    out.type_ = Type::kEcc;
    out.curve_ = ecc.curveID;
    sym = &ecc.symmetric;
  }
  if (sym->algorithm == TPM2_ALG_AES) out.aes_bits_ = sym->keyBits.aes;
  // Name (Part 1 §16): nameAlg || H_nameAlg(marshalled TPMT_PUBLIC). The
  // bytes hashed are the ones received, which decoded exactly (no trailing
  // bytes), so they are the TPM's marshalling of this object.
  DPA_ASSIGN_OR_RETURN(Bytes digest, HashWith(p.nameAlg, tpmt));
  out.name_ = {static_cast<uint8_t>(p.nameAlg >> 8),
               static_cast<uint8_t>(p.nameAlg & 0xff)};
  out.name_.insert(out.name_.end(), digest.begin(), digest.end());
  out.tpm2b_ = {static_cast<uint8_t>(tpmt.size() >> 8),
                static_cast<uint8_t>(tpmt.size() & 0xff)};
  out.tpm2b_.insert(out.tpm2b_.end(), tpmt.begin(), tpmt.end());
  out.pkey_ = std::shared_ptr<EVP_PKEY>(pkey.release(), OsslFree<EVP_PKEY_free>());
  return out;
}

std::string TpmPublic::ToPem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), pkey_.get()) != 1) return "";
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

Status TpmPublic::CheckCompositeness() {
  if (key_fully_checked_) return OkStatus();
  BIGNUM* raw = nullptr;
  if (EVP_PKEY_get_bn_param(pkey_.get(), OSSL_PKEY_PARAM_RSA_N, &raw) != 1) {
    return SslStatus("reading the RSA modulus failed");
  }
  BnPtr n(raw);
  DPA_RETURN_IF_ERROR(CheckRsaComposite(n.get()));
  key_fully_checked_ = true;
  return OkStatus();
}

bool TpmPublic::SameKey(EVP_PKEY* other) const {
  return other != nullptr && EVP_PKEY_eq(pkey_.get(), other) == 1;
}

Status CheckAkAttributes(const TpmPublic& ak) {
  struct Required {
    uint32_t bit;
    const char* name;
  };
  static constexpr Required kRequired[] = {
      {kTpmaRestricted, "restricted"},
      {kTpmaSign, "sign"},
      {kTpmaFixedTpm, "fixedTPM"},
      {kTpmaFixedParent, "fixedParent"},
      {kTpmaSensitiveDataOrigin, "sensitiveDataOrigin"},
  };
  for (const Required& r : kRequired) {
    if ((ak.attributes() & r.bit) == 0) {
      return FailedPreconditionError(std::string("AK attribute ") + r.name +
                                     " is not set (attributes " +
                                     HexNumber(ak.attributes(), 4) + ").");
    }
  }
  if ((ak.attributes() & kTpmaDecrypt) != 0) {
    return FailedPreconditionError("AK attribute decrypt is set (attributes " +
                                   HexNumber(ak.attributes(), 4) +
                                   "); an AK must not decrypt.");
  }
  return OkStatus();
}

// ---- Signatures ----------------------------------------------------------

StatusOr<TpmSignature> DecodeSignature(ByteView tpmt_signature) {
  DPA_RETURN_IF_ERROR(NonEmpty(tpmt_signature, "TPMT_SIGNATURE"));
  MuCursor c(tpmt_signature, "TPMT_SIGNATURE");
  TPMT_SIGNATURE s{};
  DPA_RETURN_IF_ERROR(c.Read(Tss2_MU_UINT16_Unmarshal, &s.sigAlg, "sigAlg"));
  if (s.sigAlg != TPM2_ALG_ECDSA && s.sigAlg != TPM2_ALG_RSASSA &&
      s.sigAlg != TPM2_ALG_RSAPSS) {
    return InvalidArgumentError("TPMT_SIGNATURE.sigAlg " + HexNumber(s.sigAlg, 4) +
                                " is not ECDSA, RSASSA or RSAPSS.");
  }
  DPA_RETURN_IF_ERROR(c.ReadUnion(Tss2_MU_TPMU_SIGNATURE_Unmarshal, s.sigAlg,
                                  &s.signature, "signature"));
  DPA_RETURN_IF_ERROR(c.Finish());
  TpmSignature out;
  out.sig_alg = s.sigAlg;
  if (s.sigAlg == TPM2_ALG_ECDSA) {
    const TPMS_SIGNATURE_ECC& e = s.signature.ecdsa;
    out.hash_alg = e.hash;
    out.ecdsa_r.assign(e.signatureR.buffer,
                       e.signatureR.buffer + e.signatureR.size);
    out.ecdsa_s.assign(e.signatureS.buffer,
                       e.signatureS.buffer + e.signatureS.size);
  } else {
    const TPMS_SIGNATURE_RSA& r =
        s.sigAlg == TPM2_ALG_RSASSA ? s.signature.rsassa : s.signature.rsapss;
    out.hash_alg = r.hash;
    out.rsa_sig.assign(r.sig.buffer, r.sig.buffer + r.sig.size);
  }
  return out;
}

Status VerifyTpmSignature(const TpmPublic& key, ByteView message,
                          const TpmSignature& sig) {
  const EVP_MD* md = MdOf(sig.hash_alg);
  if (md == nullptr) {
    return UnauthenticatedError("signature hash algorithm " +
                                HashAlgName(sig.hash_alg) +
                                " is not supported.");
  }
  bool ecc_key = key.type() == TpmPublic::Type::kEcc;
  bool ecc_sig = sig.sig_alg == TPM2_ALG_ECDSA;
  bool rsa_sig =
      sig.sig_alg == TPM2_ALG_RSASSA || sig.sig_alg == TPM2_ALG_RSAPSS;
  if ((ecc_key && !ecc_sig) || (!ecc_key && !rsa_sig)) {
    return UnauthenticatedError("signature scheme " + SigAlgName(sig.sig_alg) +
                                " does not fit an " +
                                (ecc_key ? "ECC" : "RSA") + " key.");
  }
  DPA_ASSIGN_OR_RETURN(Bytes digest, HashWith(sig.hash_alg, message));

  Bytes der;
  ByteView sig_bytes;
  if (ecc_sig) {
    // TPMS_SIGNATURE_ECC carries (r, s) as big-endian integers; OpenSSL
    // verifies the DER ECDSA-Sig-Value (RFC 3279 §2.2.3).
    EcdsaSigPtr es(ECDSA_SIG_new());
    BnPtr r(BN_bin2bn(sig.ecdsa_r.data(), static_cast<int>(sig.ecdsa_r.size()),
                      nullptr));
    BnPtr s(BN_bin2bn(sig.ecdsa_s.data(), static_cast<int>(sig.ecdsa_s.size()),
                      nullptr));
    if (!es || !r || !s || ECDSA_SIG_set0(es.get(), r.get(), s.get()) != 1) {
      return SslStatus("building an ECDSA signature failed");
    }
    r.release();  // owned by `es` now
    s.release();
    unsigned char* out = nullptr;
    int len = i2d_ECDSA_SIG(es.get(), &out);
    if (len <= 0) return SslStatus("encoding an ECDSA signature failed");
    der.assign(out, out + len);
    OPENSSL_free(out);
    sig_bytes = der;
  } else {
    sig_bytes = sig.rsa_sig;
  }

  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, key.pkey(), nullptr));
  if (!ctx || EVP_PKEY_verify_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_signature_md(ctx.get(), md) != 1) {
    return SslStatus("setting up signature verification failed");
  }
  if (sig.sig_alg == TPM2_ALG_RSASSA) {
    if (EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_PADDING) != 1) {
      return SslStatus("setting RSASSA padding failed");
    }
  } else if (sig.sig_alg == TPM2_ALG_RSAPSS) {
    // TPMs use a salt as long as the digest (Part 1 §B.7), some the
    // maximum; AUTO reads it from the signature.
    if (EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_PSS_PADDING) != 1 ||
        EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx.get(), RSA_PSS_SALTLEN_AUTO) !=
            1) {
      return SslStatus("setting RSAPSS padding failed");
    }
  }
  int rc = EVP_PKEY_verify(ctx.get(), sig_bytes.data(), sig_bytes.size(),
                           digest.data(), digest.size());
  if (rc != 1) {
    // Keep the queue clean; the reason is simply "bad signature".
    ERR_clear_error();
    return UnauthenticatedError(SigAlgName(sig.sig_alg) + "/" +
                                HashAlgName(sig.hash_alg) +
                                " signature does not verify with the key.");
  }
  return OkStatus();
}

// ---- TPMS_ATTEST -----------------------------------------------------------

StatusOr<TpmsAttestQuote> DecodeAttest(ByteView tpms_attest) {
  DPA_RETURN_IF_ERROR(NonEmpty(tpms_attest, "TPMS_ATTEST"));
  MuCursor c(tpms_attest, "TPMS_ATTEST");
  TPMS_ATTEST a{};
  DPA_RETURN_IF_ERROR(c.Read(Tss2_MU_UINT32_Unmarshal, &a.magic, "magic"));
  DPA_RETURN_IF_ERROR(c.Read(Tss2_MU_UINT16_Unmarshal, &a.type, "type"));
  DPA_RETURN_IF_ERROR(c.Read(Tss2_MU_TPM2B_NAME_Unmarshal, &a.qualifiedSigner,
                             "qualifiedSigner"));
  DPA_RETURN_IF_ERROR(
      c.Read(Tss2_MU_TPM2B_DATA_Unmarshal, &a.extraData, "extraData"));
  DPA_RETURN_IF_ERROR(
      c.Read(Tss2_MU_TPMS_CLOCK_INFO_Unmarshal, &a.clockInfo, "clockInfo"));
  DPA_RETURN_IF_ERROR(
      c.Read(Tss2_MU_UINT64_Unmarshal, &a.firmwareVersion, "firmwareVersion"));
  size_t attested_at = c.offset();
  DPA_RETURN_IF_ERROR(c.ReadUnion(Tss2_MU_TPMU_ATTEST_Unmarshal, a.type,
                                  &a.attested, "attested"));
  DPA_RETURN_IF_ERROR(c.Finish());

  TpmsAttestQuote out;
  out.magic = a.magic;
  out.type = a.type;
  out.qualified_signer.assign(a.qualifiedSigner.name,
                              a.qualifiedSigner.name + a.qualifiedSigner.size);
  out.extra_data.assign(a.extraData.buffer,
                        a.extraData.buffer + a.extraData.size);
  out.clock = a.clockInfo.clock;
  out.reset_count = a.clockInfo.resetCount;
  out.restart_count = a.clockInfo.restartCount;
  out.safe = a.clockInfo.safe != 0;
  out.firmware_version = a.firmwareVersion;
  if (a.type != TPM2_ST_ATTEST_QUOTE) return out;

  const TPMS_QUOTE_INFO& q = a.attested.quote;
  const std::string where =
      "TPMS_ATTEST.attested.pcrSelect at offset " + HexNumber(attested_at);
  uint16_t previous = 0;
  for (uint32_t i = 0; i < q.pcrSelect.count; ++i) {
    const TPMS_PCR_SELECTION& s = q.pcrSelect.pcrSelections[i];
    // std::map keeps banks in ascending algorithm order, which must then be
    // the order the TPM hashed them in (pcrDigest): refuse anything else
    // rather than compute a digest over a different order.
    if (i > 0 && s.hash <= previous) {
      return InvalidArgumentError(
          where + ": bank " + HashAlgName(s.hash) + " follows bank " +
          HashAlgName(previous) +
          " (banks must be listed once, in ascending algorithm order).");
    }
    previous = s.hash;
    std::set<uint32_t> pcrs;
    for (uint32_t byte = 0; byte < s.sizeofSelect; ++byte) {
      for (uint32_t bit = 0; bit < 8; ++bit) {
        if ((s.pcrSelect[byte] >> bit) & 1u) pcrs.insert(byte * 8 + bit);
      }
    }
    if (!pcrs.empty()) out.pcr_select.emplace(s.hash, std::move(pcrs));
  }
  out.pcr_digest.assign(q.pcrDigest.buffer,
                        q.pcrDigest.buffer + q.pcrDigest.size);
  return out;
}

// ---- PCR selections and values ------------------------------------------

Bytes MarshalPcrSelection(const PcrSelection& sel) {
  TPML_PCR_SELECTION list{};
  for (const auto& [alg, pcrs] : sel.banks()) {
    if (list.count >= TPM2_NUM_PCR_BANKS) break;  // Create() allows few algs
    TPMS_PCR_SELECTION& s = list.pcrSelections[list.count++];
    s.hash = alg;
    s.sizeofSelect = 3;  // PC Client: 24 PCRs
    for (uint32_t pcr : pcrs) {
      s.pcrSelect[pcr / 8] =
          static_cast<BYTE>(s.pcrSelect[pcr / 8] | (1u << (pcr % 8)));
    }
  }
  Bytes out(sizeof(TPML_PCR_SELECTION));
  size_t offset = 0;
  if (Tss2_MU_TPML_PCR_SELECTION_Marshal(&list, out.data(), out.size(),
                                         &offset) != TSS2_RC_SUCCESS) {
    return {};  // unreachable: the buffer is as large as the C structure
  }
  out.resize(offset);
  return out;
}

StatusOr<Bytes> ComputePcrDigest(
    uint16_t hash_alg, const std::map<uint16_t, std::set<uint32_t>>& select,
    const PcrBanks& values) {
  Bytes concat;
  for (const auto& [alg, pcrs] : select) {
    std::optional<size_t> size = HashAlgDigestSize(alg);
    auto bank = values.find(alg);
    for (uint32_t pcr : pcrs) {
      if (bank == values.end() || bank->second.count(pcr) == 0) {
        return FailedPreconditionError("no " + HashAlgName(alg) +
                                       " value for PCR " + std::to_string(pcr) +
                                       ".");
      }
      const Bytes& v = bank->second.at(pcr);
      if (!size.has_value() || v.size() != *size) {
        return FailedPreconditionError(
            HashAlgName(alg) + " PCR " + std::to_string(pcr) + " value is " +
            std::to_string(v.size()) + " bytes, expected " +
            (size ? std::to_string(*size) : std::string("a known size")) + ".");
      }
      concat.insert(concat.end(), v.begin(), v.end());
    }
  }
  return HashWith(hash_alg, concat);
}

// tpm2-tools 5.x "serialized" PCR file: raw dumps of the tool's in-memory
// C structures, with integers little-endian (lib/pcr.c
// pcr_fwrite_serialized; tools/tpm2_checkquote.c
// parse_selection_data_from_file reads it back):
//
//   0    TPML_PCR_SELECTION  (132 bytes)
//          u32le count                      number of banks
//          16 x TPMS_PCR_SELECTION          8 bytes each:
//            u16le hash, u8 sizeofSelect, u8 pcrSelect[4], u8 padding
//   132  u32le n                            number of TPML_DIGEST that follow
//   136  n x TPML_DIGEST  (532 bytes each)
//          u32le count                      digests used, <= 8
//          8 x TPM2B_DIGEST                 66 bytes each:
//            u16le size, u8 buffer[64]
//
// The values are in selection order (banks as listed, PCRs ascending),
// filled 8 per TPML_DIGEST as TPM2_PCR_Read returns them.
namespace {
constexpr size_t kPcrSelectionEntryBytes = 8;
constexpr size_t kPcrSelectionBytes = 4 + 16 * kPcrSelectionEntryBytes;
constexpr size_t kDigestEntryBytes = 2 + 64;
constexpr size_t kDigestsPerList = 8;
constexpr size_t kDigestListBytes = 4 + kDigestsPerList * kDigestEntryBytes;
constexpr size_t kMaxDigestLists = 32;  // tpm2_pcrs.pcr_values[TPM2_MAX_PCRS]
static_assert(sizeof(TPMS_PCR_SELECTION) == kPcrSelectionEntryBytes);
static_assert(sizeof(TPML_PCR_SELECTION) == kPcrSelectionBytes);
static_assert(sizeof(TPM2B_DIGEST) == kDigestEntryBytes);
static_assert(sizeof(TPML_DIGEST) == kDigestListBytes);

void PutLe(Bytes& out, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    out[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
}
}  // namespace

StatusOr<Bytes> SerializePcrsTpm2Tools(
    const std::map<uint16_t, std::set<uint32_t>>& select,
    const PcrBanks& values) {
  if (select.size() > 16) {
    return InvalidArgumentError("a PCR file holds at most 16 banks, not " +
                                std::to_string(select.size()) + ".");
  }
  std::vector<const Bytes*> ordered;
  Bytes out(kPcrSelectionBytes + 4, 0);
  size_t bank_index = 0;
  for (const auto& [alg, pcrs] : select) {
    if (!HashAlgDigestSize(alg).has_value()) {
      return InvalidArgumentError("hash algorithm " + HashAlgName(alg) +
                                  " is not supported.");
    }
    size_t at = 4 + bank_index * kPcrSelectionEntryBytes;
    PutLe(out, at, alg, 2);
    uint32_t max_pcr = pcrs.empty() ? 0 : *pcrs.rbegin();
    if (max_pcr >= 32) {
      return InvalidArgumentError("PCR index " + std::to_string(max_pcr) +
                                  " does not fit a selection bitmap.");
    }
    out[at + 2] = static_cast<uint8_t>(max_pcr < 24 ? 3 : 4);
    auto bank = values.find(alg);
    for (uint32_t pcr : pcrs) {
      out[at + 3 + pcr / 8] =
          static_cast<uint8_t>(out[at + 3 + pcr / 8] | (1u << (pcr % 8)));
      if (bank == values.end() || bank->second.count(pcr) == 0) {
        return FailedPreconditionError("no " + HashAlgName(alg) +
                                       " value for PCR " + std::to_string(pcr) +
                                       ".");
      }
      const Bytes& v = bank->second.at(pcr);
      if (v.size() != *HashAlgDigestSize(alg)) {
        return FailedPreconditionError(
            HashAlgName(alg) + " PCR " + std::to_string(pcr) + " value is " +
            std::to_string(v.size()) + " bytes, expected " +
            std::to_string(*HashAlgDigestSize(alg)) + ".");
      }
      ordered.push_back(&v);
    }
    ++bank_index;
  }
  PutLe(out, 0, bank_index, 4);
  size_t lists = (ordered.size() + kDigestsPerList - 1) / kDigestsPerList;
  if (lists > kMaxDigestLists) {
    return InvalidArgumentError("too many PCR values (" +
                                std::to_string(ordered.size()) +
                                ") for a tpm2-tools PCR file.");
  }
  PutLe(out, kPcrSelectionBytes, lists, 4);
  for (size_t l = 0; l < lists; ++l) {
    size_t base = out.size();
    out.resize(base + kDigestListBytes, 0);
    size_t first = l * kDigestsPerList;
    size_t n = std::min(kDigestsPerList, ordered.size() - first);
    PutLe(out, base, n, 4);
    for (size_t k = 0; k < n; ++k) {
      const Bytes& v = *ordered[first + k];
      size_t at = base + 4 + k * kDigestEntryBytes;
      PutLe(out, at, v.size(), 2);
      std::copy(v.begin(), v.end(), out.begin() + at + 2);
    }
  }
  return out;
}

}  // namespace dpuaudit::attest
