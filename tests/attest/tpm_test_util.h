// Header-only helpers that synthesise TPM objects in software for tests:
// AK / EK key pairs (OpenSSL), their TPM2B_PUBLIC (marshalled with
// Tss2_MU, so independent of our decoder), TPMS_ATTEST quotes and
// TPMT_SIGNATUREs over them. Nothing here is production code; keys are
// generated at test time.
//
// Typical use:
//   auto ak = TestKey::EccP256();
//   SyntheticQuote q = SyntheticQuote::Build(ak, pcrs, selection, nonce_qd);
//   QuoteVerifier::Verify(*q.ak_public(), {q.attest, q.signature, &pcrs}, ...)
#ifndef DPUAUDIT_TESTS_ATTEST_TPM_TEST_UTIL_H_
#define DPUAUDIT_TESTS_ATTEST_TPM_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tpm2_types.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>
#include <memory>
#include <set>
#include <string>

#include "attest/quote.h"
#include "attest/tpm_structs.h"
#include "attest/tpm_types.h"
#include "common/bytes.h"
#include "common/crypto.h"

namespace dpuaudit::attest {

// The test peer quote.h befriends: builds QuotedPcrs without a quote, for
// tests of code that consumes verified PCRs (replay, reference values).
// Defined only here; include this header rather than defining another.
struct QuotedPcrsTestPeer {
  static QuotedPcrs Make(PcrBanks banks,
                         std::map<uint16_t, std::set<uint32_t>> selection) {
    return QuotedPcrs(std::move(banks), std::move(selection));
  }
};

}  // namespace dpuaudit::attest

namespace dpuaudit::attest::testing {

// TPMA_OBJECT of the dpuaudit AK (attest/tpm/tpm.h) and of the TCG EK
// template L-1 / L-2 (EK Credential Profile 2.0 §B.3.3).
inline constexpr uint32_t kAkAttributes =
    kTpmaFixedTpm | kTpmaFixedParent | kTpmaSensitiveDataOrigin |
    kTpmaUserWithAuth | kTpmaRestricted | kTpmaSign;
inline constexpr uint32_t kEkAttributes =
    kTpmaFixedTpm | kTpmaFixedParent | kTpmaSensitiveDataOrigin |
    kTpmaAdminWithPolicy | kTpmaRestricted | kTpmaDecrypt;  // 0x000300b2
// PolicySecret(TPM_RH_ENDORSEMENT), the TCG EK authPolicy (sha256).
inline Bytes EkAuthPolicy() {
  return *HexDecode(
      "837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa");
}

struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
struct EcdsaSigFree {
  void operator()(ECDSA_SIG* s) const { ECDSA_SIG_free(s); }
};

// An OpenSSL key pair: ECC (P-256 / P-384) or RSA.
class TestKey {
 public:
  static TestKey EccP256() { return Ec("P-256", TPM2_ECC_NIST_P256, 32); }
  static TestKey EccP384() { return Ec("P-384", TPM2_ECC_NIST_P384, 48); }
  static TestKey Rsa(unsigned bits = 2048) {
    TestKey k;
    k.pkey_.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{bits}),
                 EVP_PKEY_free);
    EXPECT_NE(k.pkey_, nullptr);
    k.rsa_bits_ = static_cast<uint16_t>(bits);
    return k;
  }
  EVP_PKEY* pkey() const { return pkey_.get(); }
  bool is_rsa() const { return rsa_bits_ != 0; }
  uint16_t curve() const { return curve_; }
  size_t coord() const { return coord_; }
  uint16_t rsa_bits() const { return rsa_bits_; }

  // Affine coordinates (ECC), fixed size.
  std::pair<Bytes, Bytes> Point() const {
    BIGNUM* x = nullptr;
    BIGNUM* y = nullptr;
    EXPECT_EQ(EVP_PKEY_get_bn_param(pkey(), OSSL_PKEY_PARAM_EC_PUB_X, &x), 1);
    EXPECT_EQ(EVP_PKEY_get_bn_param(pkey(), OSSL_PKEY_PARAM_EC_PUB_Y, &y), 1);
    std::unique_ptr<BIGNUM, BnFree> xo(x), yo(y);
    Bytes bx(coord_), by(coord_);
    BN_bn2binpad(x, bx.data(), static_cast<int>(coord_));
    BN_bn2binpad(y, by.data(), static_cast<int>(coord_));
    return {bx, by};
  }
  // RSA modulus, big-endian, keyBits/8 bytes.
  Bytes Modulus() const {
    BIGNUM* n = nullptr;
    EXPECT_EQ(EVP_PKEY_get_bn_param(pkey(), OSSL_PKEY_PARAM_RSA_N, &n), 1);
    std::unique_ptr<BIGNUM, BnFree> no(n);
    Bytes out(rsa_bits_ / 8);
    BN_bn2binpad(n, out.data(), static_cast<int>(out.size()));
    return out;
  }

 private:
  static TestKey Ec(const char* curve, uint16_t tpm_curve, size_t coord) {
    TestKey k;
    k.pkey_.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve),
                 EVP_PKEY_free);
    EXPECT_NE(k.pkey_, nullptr);
    k.curve_ = tpm_curve;
    k.coord_ = coord;
    return k;
  }
  std::shared_ptr<EVP_PKEY> pkey_{nullptr, EVP_PKEY_free};
  uint16_t curve_ = 0;
  size_t coord_ = 0;
  uint16_t rsa_bits_ = 0;
};

// Knobs for the TPMT_PUBLIC built around a TestKey.
struct PublicTemplate {
  uint16_t name_alg = TPM2_ALG_SHA256;
  uint32_t attributes = kAkAttributes;
  Bytes auth_policy;
  uint16_t aes_bits = 0;   // 0: symmetric TPM2_ALG_NULL; else AES-CFB
  uint16_t sig_scheme = 0; // 0: TPM2_ALG_NULL; else ECDSA / RSASSA / RSAPSS
  uint16_t sig_hash = TPM2_ALG_SHA256;
  uint32_t rsa_exponent = 0;  // 0 = 65537
};

inline PublicTemplate AkTemplate(const TestKey& k) {
  PublicTemplate t;
  t.sig_scheme = k.is_rsa() ? TPM2_ALG_RSASSA : TPM2_ALG_ECDSA;
  return t;
}
inline PublicTemplate EkTemplate() {
  PublicTemplate t;
  t.attributes = kEkAttributes;
  t.auth_policy = EkAuthPolicy();
  t.aes_bits = 128;
  return t;
}

// memcpy of `b` to `dst`; nothing for an empty `b` (whose data() may be null,
// which memcpy must not be given even for 0 bytes).
template <typename Container>
inline void CopyBytes(void* dst, const Container& b) {
  if (!b.empty()) std::memcpy(dst, b.data(), b.size());
}

// TPMT_PUBLIC for `key`, filled like a TPM would.
inline TPMT_PUBLIC MakeTpmtPublic(const TestKey& key, const PublicTemplate& t) {
  TPMT_PUBLIC p{};
  p.type = key.is_rsa() ? TPM2_ALG_RSA : TPM2_ALG_ECC;
  p.nameAlg = t.name_alg;
  p.objectAttributes = t.attributes;
  p.authPolicy.size = static_cast<UINT16>(t.auth_policy.size());
  CopyBytes(p.authPolicy.buffer, t.auth_policy);
  TPMT_SYM_DEF_OBJECT sym{};
  if (t.aes_bits != 0) {
    sym.algorithm = TPM2_ALG_AES;
    sym.keyBits.aes = t.aes_bits;
    sym.mode.aes = TPM2_ALG_CFB;
  } else {
    sym.algorithm = TPM2_ALG_NULL;
  }
  if (key.is_rsa()) {
    p.parameters.rsaDetail.symmetric = sym;
    p.parameters.rsaDetail.scheme.scheme =
        t.sig_scheme != 0 ? t.sig_scheme : TPM2_ALG_NULL;
    if (t.sig_scheme != 0) {
      p.parameters.rsaDetail.scheme.details.anySig.hashAlg = t.sig_hash;
    }
    p.parameters.rsaDetail.keyBits = key.rsa_bits();
    p.parameters.rsaDetail.exponent = t.rsa_exponent;
    Bytes n = key.Modulus();
    p.unique.rsa.size = static_cast<UINT16>(n.size());
    CopyBytes(p.unique.rsa.buffer, n);
  } else {
    p.parameters.eccDetail.symmetric = sym;
    p.parameters.eccDetail.scheme.scheme =
        t.sig_scheme != 0 ? t.sig_scheme : TPM2_ALG_NULL;
    if (t.sig_scheme != 0) {
      p.parameters.eccDetail.scheme.details.anySig.hashAlg = t.sig_hash;
    }
    p.parameters.eccDetail.curveID = key.curve();
    p.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    auto [x, y] = key.Point();
    p.unique.ecc.x.size = static_cast<UINT16>(x.size());
    CopyBytes(p.unique.ecc.x.buffer, x);
    p.unique.ecc.y.size = static_cast<UINT16>(y.size());
    CopyBytes(p.unique.ecc.y.buffer, y);
  }
  return p;
}

inline Bytes MarshalTpmtPublic(const TPMT_PUBLIC& p) {
  Bytes out(sizeof(TPMT_PUBLIC));
  size_t off = 0;
  EXPECT_EQ(Tss2_MU_TPMT_PUBLIC_Marshal(&p, out.data(), out.size(), &off),
            TSS2_RC_SUCCESS);
  out.resize(off);
  return out;
}

inline Bytes MarshalTpm2bPublic(const TPMT_PUBLIC& p) {
  TPM2B_PUBLIC b{};
  b.publicArea = p;
  Bytes out(sizeof(TPM2B_PUBLIC));
  size_t off = 0;
  EXPECT_EQ(Tss2_MU_TPM2B_PUBLIC_Marshal(&b, out.data(), out.size(), &off),
            TSS2_RC_SUCCESS);
  out.resize(off);
  return out;
}

inline Bytes PublicBlob(const TestKey& key, const PublicTemplate& t) {
  return MarshalTpm2bPublic(MakeTpmtPublic(key, t));
}

// `p` (an RSA TPMT_PUBLIC) with keyBits 4096 and, as its "modulus", the
// 4096-bit MODP prime of RFC 3526 §5: passes every cheap RSA check (4096
// bits, odd, no small factor) and fails only the compositeness test, after
// all 32 Miller-Rabin rounds (the costliest key a request can carry).
inline TPMT_PUBLIC WithPrimeModulus4096(TPMT_PUBLIC p) {
  std::unique_ptr<BIGNUM, decltype(&BN_free)> prime(
      BN_get_rfc3526_prime_4096(nullptr), BN_free);
  EXPECT_NE(prime, nullptr);
  p.parameters.rsaDetail.keyBits = 4096;
  p.unique.rsa.size = 512;
  EXPECT_EQ(BN_bn2binpad(prime.get(), p.unique.rsa.buffer, 512), 512);
  return p;
}

// The name as the TPM computes it, with OpenSSL only.
inline Bytes ExpectedName(const TPMT_PUBLIC& p) {
  Bytes tpmt = MarshalTpmtPublic(p);
  const EVP_MD* md = p.nameAlg == TPM2_ALG_SHA1     ? EVP_sha1()
                     : p.nameAlg == TPM2_ALG_SHA384 ? EVP_sha384()
                     : p.nameAlg == TPM2_ALG_SHA512 ? EVP_sha512()
                                                    : EVP_sha256();
  Bytes out = {static_cast<uint8_t>(p.nameAlg >> 8),
               static_cast<uint8_t>(p.nameAlg)};
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(EVP_Digest(tpmt.data(), tpmt.size(), d, &len, md, nullptr), 1);
  out.insert(out.end(), d, d + len);
  return out;
}

inline const EVP_MD* TestMd(uint16_t alg) {
  switch (alg) {
    case TPM2_ALG_SHA1: return EVP_sha1();
    case TPM2_ALG_SHA384: return EVP_sha384();
    case TPM2_ALG_SHA512: return EVP_sha512();
    default: return EVP_sha256();
  }
}

// A TPMT_SIGNATURE by `key` over `message` (ECDSA for ECC keys; RSASSA or
// RSAPSS for RSA keys, per `rsa_scheme`).
inline Bytes SignTpm(const TestKey& key, ByteView message,
                     uint16_t hash_alg = TPM2_ALG_SHA256,
                     uint16_t rsa_scheme = TPM2_ALG_RSASSA) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int dlen = 0;
  EXPECT_EQ(EVP_Digest(message.data(), message.size(), digest, &dlen,
                       TestMd(hash_alg), nullptr),
            1);
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_pkey(nullptr, key.pkey(), nullptr));
  EXPECT_EQ(EVP_PKEY_sign_init(ctx.get()), 1);
  EXPECT_EQ(EVP_PKEY_CTX_set_signature_md(ctx.get(), TestMd(hash_alg)), 1);
  if (key.is_rsa()) {
    EXPECT_EQ(EVP_PKEY_CTX_set_rsa_padding(ctx.get(),
                                           rsa_scheme == TPM2_ALG_RSAPSS
                                               ? RSA_PKCS1_PSS_PADDING
                                               : RSA_PKCS1_PADDING),
              1);
    if (rsa_scheme == TPM2_ALG_RSAPSS) {
      EXPECT_EQ(EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx.get(), RSA_PSS_SALTLEN_DIGEST), 1);
    }
  }
  size_t siglen = 0;
  EXPECT_EQ(EVP_PKEY_sign(ctx.get(), nullptr, &siglen, digest, dlen), 1);
  Bytes sig(siglen);
  EXPECT_EQ(EVP_PKEY_sign(ctx.get(), sig.data(), &siglen, digest, dlen), 1);
  sig.resize(siglen);

  TPMT_SIGNATURE s{};
  if (key.is_rsa()) {
    s.sigAlg = rsa_scheme;
    TPMS_SIGNATURE_RSA& r =
        rsa_scheme == TPM2_ALG_RSAPSS ? s.signature.rsapss : s.signature.rsassa;
    r.hash = hash_alg;
    r.sig.size = static_cast<UINT16>(sig.size());
    CopyBytes(r.sig.buffer, sig);
  } else {
    const unsigned char* p = sig.data();
    std::unique_ptr<ECDSA_SIG, EcdsaSigFree> es(
        d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size())));
    EXPECT_NE(es, nullptr);
    s.sigAlg = TPM2_ALG_ECDSA;
    s.signature.ecdsa.hash = hash_alg;
    int n = static_cast<int>(key.coord());
    BN_bn2binpad(ECDSA_SIG_get0_r(es.get()), s.signature.ecdsa.signatureR.buffer, n);
    BN_bn2binpad(ECDSA_SIG_get0_s(es.get()), s.signature.ecdsa.signatureS.buffer, n);
    s.signature.ecdsa.signatureR.size = static_cast<UINT16>(n);
    s.signature.ecdsa.signatureS.size = static_cast<UINT16>(n);
  }
  Bytes out(sizeof(TPMT_SIGNATURE));
  size_t off = 0;
  EXPECT_EQ(Tss2_MU_TPMT_SIGNATURE_Marshal(&s, out.data(), out.size(), &off),
            TSS2_RC_SUCCESS);
  out.resize(off);
  return out;
}

// Fields of a synthetic TPMS_ATTEST; defaults make a valid quote.
struct AttestSpec {
  uint32_t magic = TPM2_GENERATED_VALUE;
  uint16_t type = TPM2_ST_ATTEST_QUOTE;
  Bytes qualified_signer;  // usually the AK name
  Bytes extra_data;        // the qualifying data
  uint64_t clock = 123456;
  uint32_t reset_count = 3;
  uint32_t restart_count = 1;
  bool safe = true;
  uint64_t firmware_version = 0x0001000200030004ull;
  // Banks in this order go into the TPML_PCR_SELECTION.
  std::vector<std::pair<uint16_t, std::set<uint32_t>>> select;
  Bytes pcr_digest;
};

inline Bytes MarshalAttest(const AttestSpec& s) {
  TPMS_ATTEST a{};
  a.magic = s.magic;
  a.type = s.type;
  a.qualifiedSigner.size = static_cast<UINT16>(s.qualified_signer.size());
  CopyBytes(a.qualifiedSigner.name, s.qualified_signer);
  a.extraData.size = static_cast<UINT16>(s.extra_data.size());
  CopyBytes(a.extraData.buffer, s.extra_data);
  a.clockInfo.clock = s.clock;
  a.clockInfo.resetCount = s.reset_count;
  a.clockInfo.restartCount = s.restart_count;
  a.clockInfo.safe = s.safe ? 1 : 0;
  a.firmwareVersion = s.firmware_version;
  if (s.type == TPM2_ST_ATTEST_QUOTE) {
    TPMS_QUOTE_INFO& q = a.attested.quote;
    for (const auto& [alg, pcrs] : s.select) {
      TPMS_PCR_SELECTION& sel = q.pcrSelect.pcrSelections[q.pcrSelect.count++];
      sel.hash = alg;
      sel.sizeofSelect = 3;
      for (uint32_t pcr : pcrs) {
        sel.pcrSelect[pcr / 8] =
            static_cast<BYTE>(sel.pcrSelect[pcr / 8] | (1u << (pcr % 8)));
      }
    }
    q.pcrDigest.size = static_cast<UINT16>(s.pcr_digest.size());
    CopyBytes(q.pcrDigest.buffer, s.pcr_digest);
  } else if (s.type == TPM2_ST_ATTEST_TIME) {
    a.attested.time.time.time = 42;
  }
  Bytes out(sizeof(TPMS_ATTEST));
  size_t off = 0;
  EXPECT_EQ(Tss2_MU_TPMS_ATTEST_Marshal(&a, out.data(), out.size(), &off),
            TSS2_RC_SUCCESS);
  out.resize(off);
  return out;
}

// PCR values 0..23 of `alg`, each H(alg-name || index): distinct, stable.
inline PcrBank FakeBank(uint16_t alg, uint32_t count = 24) {
  PcrBank bank;
  for (uint32_t i = 0; i < count; ++i) {
    std::string seed = HashAlgName(alg) + "/pcr/" + std::to_string(i);
    bank[i] = *HashWith(alg, AsBytes(seed));
  }
  return bank;
}

// H_alg(concatenation in `select` order) computed with OpenSSL only.
inline Bytes ExpectedPcrDigest(
    uint16_t alg,
    const std::vector<std::pair<uint16_t, std::set<uint32_t>>>& select,
    const PcrBanks& values) {
  Bytes concat;
  for (const auto& [bank, pcrs] : select) {
    for (uint32_t pcr : pcrs) {
      const Bytes& v = values.at(bank).at(pcr);
      concat.insert(concat.end(), v.begin(), v.end());
    }
  }
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(EVP_Digest(concat.data(), concat.size(), d, &len, TestMd(alg),
                       nullptr),
            1);
  return Bytes(d, d + len);
}

// A complete software quote: AK, its TPM2B_PUBLIC, TPMS_ATTEST, signature.
struct SyntheticQuote {
  TestKey ak;
  TPMT_PUBLIC ak_tpmt{};
  Bytes ak_public;  // marshalled TPM2B_PUBLIC
  Bytes ak_name;
  AttestSpec spec;
  Bytes attest;     // marshalled TPMS_ATTEST
  Bytes signature;  // marshalled TPMT_SIGNATURE

  // A quote over `select` of `values` (ascending bank order), qualified by
  // `qualifying_data`, signed by a fresh ECC P-256 AK with ECDSA-SHA256.
  static SyntheticQuote Build(
      const PcrBanks& values, const std::map<uint16_t, std::set<uint32_t>>& select,
      ByteView qualifying_data, TestKey ak = TestKey::EccP256()) {
    SyntheticQuote q;
    q.ak = std::move(ak);
    q.ak_tpmt = MakeTpmtPublic(q.ak, AkTemplate(q.ak));
    q.ak_public = MarshalTpm2bPublic(q.ak_tpmt);
    q.ak_name = ExpectedName(q.ak_tpmt);
    q.spec.qualified_signer = q.ak_name;
    q.spec.extra_data.assign(qualifying_data.begin(), qualifying_data.end());
    for (const auto& [alg, pcrs] : select) q.spec.select.emplace_back(alg, pcrs);
    q.spec.pcr_digest = ExpectedPcrDigest(TPM2_ALG_SHA256, q.spec.select, values);
    q.Resign();
    return q;
  }
  // Re-marshals `spec` and signs it again with the AK.
  void Resign() {
    attest = MarshalAttest(spec);
    signature = SignTpm(ak, attest);
  }
};

// ---- external tools (tpm2-tools) ------------------------------------------

// Absolute path of `name` on PATH, or "" when it is not installed.
inline std::string FindTool(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::stringstream ss(dirs);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs argv (no shell), stdout+stderr into *output; returns the exit code
// (-1 when it could not run or was killed).
inline int RunTool(const std::vector<std::string>& argv, std::string* output) {
  char out_path[] = "/tmp/dpuaudit-tool-XXXXXX";
  int fd = ::mkstemp(out_path);
  if (fd < 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawn_file_actions_adddup2(&fa, fd, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fd);
  int status = 0;
  if (rc == 0 && ::waitpid(pid, &status, 0) < 0) rc = -1;
  if (output != nullptr) {
    std::ifstream in(out_path, std::ios::binary);
    *output = std::string(std::istreambuf_iterator<char>(in), {});
  }
  ::unlink(out_path);
  if (rc != 0 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

inline void WriteBytes(const std::string& path, ByteView data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}
inline Bytes ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  return Bytes(s.begin(), s.end());
}

}  // namespace dpuaudit::attest::testing

#endif  // DPUAUDIT_TESTS_ATTEST_TPM_TEST_UTIL_H_
