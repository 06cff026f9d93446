// TPM 2.0 structures from untrusted bytes, decoded with tpm2-tss Tss2_MU
// (never hand-written unmarshalling), and the checks the verifier does on
// them. Pure code: no TPM is needed, so the verifier links it.
//
// Guarantees:
//  - Every Decode* takes the exact marshalled bytes (big-endian, as the TPM
//    returns them) and fails with INVALID_ARGUMENT naming the structure and
//    the offset Tss2_MU stopped at, or trailing bytes after the structure.
//  - TpmPublic exists only for an RSA (2048/3072/4096, exponent 0 = 65537)
//    or ECC (NIST P-256/P-384) key whose nameAlg is sha1/256/384/512; its
//    name is nameAlg (2 bytes, BE) || H_nameAlg(marshalled TPMT_PUBLIC), as
//    the TPM computes it.
//  - RSA keys: the cheap checks (exact size, odd modulus, exponent, no
//    factor below 2000) always run; the compositeness test (Miller-Rabin
//    over 32 fixed bases: one modular exponentiation for an honest
//    composite modulus, ~20 ms at 4096 bits, but all 32 for a prime one,
//    ~0.6 s) runs in Decode unless the caller defers it with
//    RsaCheck::kDeferCompositeness, and then only in CheckCompositeness().
//  - VerifyTpmSignature checks ECDSA (r, s) or RSASSA / RSAPSS signatures
//    with OpenSSL over `message` hashed with the signature's hash algorithm;
//    a signature whose scheme does not fit the key is UNAUTHENTICATED, as
//    is a bad signature.
#ifndef DPUAUDIT_ATTEST_TPM_STRUCTS_H_
#define DPUAUDIT_ATTEST_TPM_STRUCTS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "attest/tpm_types.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"

namespace dpuaudit::attest {

// TPMA_OBJECT bits (Part 2, Table 31).
inline constexpr uint32_t kTpmaFixedTpm = 0x00000002;
inline constexpr uint32_t kTpmaStClear = 0x00000004;
inline constexpr uint32_t kTpmaFixedParent = 0x00000010;
inline constexpr uint32_t kTpmaSensitiveDataOrigin = 0x00000020;
inline constexpr uint32_t kTpmaUserWithAuth = 0x00000040;
inline constexpr uint32_t kTpmaAdminWithPolicy = 0x00000080;
inline constexpr uint32_t kTpmaNoDa = 0x00000400;
inline constexpr uint32_t kTpmaRestricted = 0x00010000;
inline constexpr uint32_t kTpmaDecrypt = 0x00020000;
inline constexpr uint32_t kTpmaSign = 0x00040000;

inline constexpr uint32_t kTpmGeneratedValue = 0xff544347;  // "\xffTCG"
inline constexpr uint16_t kTpmStAttestQuote = 0x8018;

class TpmPublic {
 public:
  enum class Type { kRsa, kEcc };
  // How much of an RSA public-key check Decode runs (ECC: always all).
  enum class RsaCheck {
    kFull,                // the cheap checks and the compositeness test
    kDeferCompositeness,  // the cheap checks only; see CheckCompositeness
  };
  // `tpm2b` is a marshalled TPM2B_PUBLIC (size-prefixed TPMT_PUBLIC).
  static StatusOr<TpmPublic> Decode(ByteView tpm2b,
                                    RsaCheck rsa_check = RsaCheck::kFull);
  // A marshalled TPMT_PUBLIC (no size prefix), as in tpm2_readpublic -f tss
  // minus the prefix.
  static StatusOr<TpmPublic> DecodeTpmt(ByteView tpmt,
                                        RsaCheck rsa_check = RsaCheck::kFull);

  // The deferred, expensive part of the RSA check: INVALID_ARGUMENT "the RSA
  // unique field fails the public key check (the modulus is prime)." OK at
  // once for ECC keys and for keys it (or Decode) already checked.
  Status CheckCompositeness();
  // False only for an RSA key decoded with kDeferCompositeness whose
  // CheckCompositeness() has not succeeded yet.
  bool key_fully_checked() const { return key_fully_checked_; }

  Type type() const { return type_; }
  uint16_t name_alg() const { return name_alg_; }
  uint32_t attributes() const { return attributes_; }
  const Bytes& auth_policy() const { return auth_policy_; }
  // The symmetric algorithm of a storage key (EK): AES key bits, 0 = none.
  uint16_t symmetric_aes_bits() const { return aes_bits_; }
  // ECC: TPM_ECC_CURVE (0x0003 P-256, 0x0004 P-384); RSA: 0.
  uint16_t ecc_curve() const { return curve_; }
  uint16_t rsa_bits() const { return rsa_bits_; }
  const Bytes& name() const { return name_; }     // nameAlg || digest
  std::string name_hex() const { return HexEncode(name_); }
  const Bytes& marshalled() const { return tpm2b_; }  // the TPM2B_PUBLIC
  EVP_PKEY* pkey() const { return pkey_.get(); }
  std::string ToPem() const;  // SubjectPublicKeyInfo
  // True when both hold the same public key (e.g. an EK and its cert).
  bool SameKey(EVP_PKEY* other) const;

 private:
  TpmPublic() = default;
  Type type_ = Type::kEcc;
  uint16_t name_alg_ = 0;
  uint32_t attributes_ = 0;
  Bytes auth_policy_;
  uint16_t aes_bits_ = 0;
  uint16_t curve_ = 0;
  uint16_t rsa_bits_ = 0;
  bool key_fully_checked_ = true;
  Bytes name_;
  Bytes tpm2b_;
  std::shared_ptr<EVP_PKEY> pkey_;
};

// An attestation key must be a restricted signing key that never left the
// TPM: restricted, sign, fixedTPM, fixedParent, sensitiveDataOrigin set;
// decrypt clear. FAILED_PRECONDITION naming the missing attribute.
Status CheckAkAttributes(const TpmPublic& ak);

struct TpmSignature {
  uint16_t sig_alg = 0;   // TPM_ALG_ECDSA (0x0018), RSASSA (0x0014), RSAPSS (0x0016)
  uint16_t hash_alg = 0;
  Bytes ecdsa_r, ecdsa_s;  // ECDSA
  Bytes rsa_sig;           // RSASSA / RSAPSS
};
// A marshalled TPMT_SIGNATURE.
StatusOr<TpmSignature> DecodeSignature(ByteView tpmt_signature);

// OK iff `sig` is a valid signature by `key` over `message`.
Status VerifyTpmSignature(const TpmPublic& key, ByteView message,
                          const TpmSignature& sig);

struct TpmsAttestQuote {
  uint32_t magic = 0;
  uint16_t type = 0;
  Bytes qualified_signer;  // name of the signing key
  Bytes extra_data;        // the qualifying data
  uint64_t clock = 0;
  uint32_t reset_count = 0;
  uint32_t restart_count = 0;
  bool safe = false;
  uint64_t firmware_version = 0;
  std::map<uint16_t, std::set<uint32_t>> pcr_select;  // from TPML_PCR_SELECTION
  Bytes pcr_digest;
};
// A marshalled TPMS_ATTEST (what TPM2_Quote returns inside TPM2B_ATTEST,
// without the size prefix — tpm2_quote -m writes this). Decodes any
// attestation type; the quote fields are filled only for TPM_ST_ATTEST_QUOTE.
// Does not check magic or type (VerifyQuote does, as its own step).
StatusOr<TpmsAttestQuote> DecodeAttest(ByteView tpms_attest);

// Marshalled TPML_PCR_SELECTION of `sel` (for quotes and the pcrs file).
Bytes MarshalPcrSelection(const PcrSelection& sel);

// The TPM's pcrDigest: H_alg(concatenation of the selected PCR values, in
// TPML_PCR_SELECTION order: by bank as listed in `select`, PCRs ascending).
// FAILED_PRECONDITION naming the first PCR `values` lacks.
StatusOr<Bytes> ComputePcrDigest(uint16_t hash_alg,
                                 const std::map<uint16_t, std::set<uint32_t>>& select,
                                 const PcrBanks& values);

// The PCR file `tpm2_quote -o FILE` writes and `tpm2_checkquote -f FILE`
// reads (tpm2-tools 5.x "serialized" format).
StatusOr<Bytes> SerializePcrsTpm2Tools(const std::map<uint16_t, std::set<uint32_t>>& select,
                                       const PcrBanks& values);

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_ATTEST_TPM_STRUCTS_H_
