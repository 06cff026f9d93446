#include "attest/credential.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>

#include "attest/tpm_test_util.h"
#include "testing/temp_dir.h"

namespace dpuaudit::attest {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TestKey;

struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;
struct ParamBldFree {
  void operator()(OSSL_PARAM_BLD* b) const { OSSL_PARAM_BLD_free(b); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
};
struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
struct ExtFree {
  void operator()(X509_EXTENSION* e) const { X509_EXTENSION_free(e); }
};
struct GeneralNamesFree {
  void operator()(GENERAL_NAMES* g) const { GENERAL_NAMES_free(g); }
};
struct ObjFree {
  void operator()(ASN1_OBJECT* o) const { ASN1_OBJECT_free(o); }
};

// ---- ActivateCredential, written against the spec with OpenSSL only --------
// (TPM 2.0 Part 1 §24 and §11.4.10; independent of credential.cc.)

Bytes Be32(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

Bytes RefKdfA(const EVP_MD* md, ByteView key, const std::string& label,
              ByteView u, ByteView v, uint32_t bits) {
  Bytes out;
  for (uint32_t i = 1; out.size() * 8 < bits; ++i) {
    Bytes in = Be32(i);
    in.insert(in.end(), label.begin(), label.end());
    in.push_back(0);
    in.insert(in.end(), u.begin(), u.end());
    in.insert(in.end(), v.begin(), v.end());
    Bytes l = Be32(bits);
    in.insert(in.end(), l.begin(), l.end());
    unsigned char h[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    HMAC(md, key.data(), static_cast<int>(key.size()), in.data(), in.size(), h,
         &n);
    out.insert(out.end(), h, h + n);
  }
  out.resize((bits + 7) / 8);
  return out;
}

Bytes RefKdfE(const EVP_MD* md, ByteView z, const std::string& label,
              ByteView u, ByteView v, uint32_t bits) {
  Bytes out;
  for (uint32_t i = 1; out.size() * 8 < bits; ++i) {
    Bytes in = Be32(i);
    in.insert(in.end(), z.begin(), z.end());
    in.insert(in.end(), label.begin(), label.end());
    in.push_back(0);
    in.insert(in.end(), u.begin(), u.end());
    in.insert(in.end(), v.begin(), v.end());
    unsigned char h[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(in.data(), in.size(), h, &n, md, nullptr);
    out.insert(out.end(), h, h + n);
  }
  out.resize(bits / 8);
  return out;
}

// Recovers the seed from TPM2B_ENCRYPTED_SECRET with the EK private key.
StatusOr<Bytes> RefSeed(const TestKey& ek, const TPMT_PUBLIC& ek_pub,
                        ByteView encrypted_secret) {
  TPM2B_ENCRYPTED_SECRET es{};
  size_t off = 0;
  if (Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal(encrypted_secret.data(),
                                               encrypted_secret.size(), &off,
                                               &es) != TSS2_RC_SUCCESS ||
      off != encrypted_secret.size()) {
    return InvalidArgumentError("bad TPM2B_ENCRYPTED_SECRET");
  }
  const EVP_MD* md = testing::TestMd(ek_pub.nameAlg);
  if (ek.is_rsa()) {
    PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, ek.pkey(), nullptr));
    static const char kLabel[] = "IDENTITY";  // with its terminating zero
    Bytes seed(512);
    size_t n = seed.size();
    bool ok = EVP_PKEY_decrypt_init(ctx.get()) == 1 &&
              EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_OAEP_PADDING) == 1 &&
              EVP_PKEY_CTX_set_rsa_oaep_md(ctx.get(), md) == 1 &&
              EVP_PKEY_CTX_set_rsa_mgf1_md(ctx.get(), md) == 1;
    void* label = OPENSSL_memdup(kLabel, sizeof kLabel);
    if (!ok || EVP_PKEY_CTX_set0_rsa_oaep_label(ctx.get(), label, sizeof kLabel) != 1) {
      OPENSSL_free(label);
      return InternalError("OAEP setup failed");
    }
    if (EVP_PKEY_decrypt(ctx.get(), seed.data(), &n, es.secret, es.size) != 1) {
      return UnauthenticatedError("OAEP decryption failed");
    }
    seed.resize(n);
    return seed;
  }
  // ECC: the secret is the ephemeral point; Z = x(d_ek * Q_e).
  TPMS_ECC_POINT pt{};
  size_t poff = 0;
  if (Tss2_MU_TPMS_ECC_POINT_Unmarshal(es.secret, es.size, &poff, &pt) !=
      TSS2_RC_SUCCESS) {
    return InvalidArgumentError("bad TPMS_ECC_POINT");
  }
  Bytes point = {0x04};
  point.insert(point.end(), pt.x.buffer, pt.x.buffer + pt.x.size);
  point.insert(point.end(), pt.y.buffer, pt.y.buffer + pt.y.size);
  const char* group = ek.curve() == TPM2_ECC_NIST_P256 ? "prime256v1" : "secp384r1";
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
  OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY,
                                   point.data(), point.size());
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld.get()));
  PkeyCtxPtr fctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* raw_peer = nullptr;
  if (EVP_PKEY_fromdata_init(fctx.get()) != 1 ||
      EVP_PKEY_fromdata(fctx.get(), &raw_peer, EVP_PKEY_PUBLIC_KEY,
                        params.get()) != 1) {
    return InvalidArgumentError("bad ephemeral point");
  }
  EvpPkeyPtr peer(raw_peer);
  PkeyCtxPtr dctx(EVP_PKEY_CTX_new_from_pkey(nullptr, ek.pkey(), nullptr));
  Bytes z(ek.coord());
  size_t zlen = z.size();
  if (EVP_PKEY_derive_init(dctx.get()) != 1 ||
      EVP_PKEY_derive_set_peer(dctx.get(), peer.get()) != 1 ||
      EVP_PKEY_derive(dctx.get(), z.data(), &zlen) != 1) {
    return InternalError("ECDH failed");
  }
  auto [ek_x, ek_y] = ek.Point();
  Bytes eph_x(pt.x.buffer, pt.x.buffer + pt.x.size);
  return RefKdfE(md, z, "IDENTITY", eph_x, ek_x,
                 static_cast<uint32_t>(EVP_MD_get_size(md) * 8));
}

// TPM2_ActivateCredential: returns the credential, or the reason it fails.
StatusOr<Bytes> RefActivate(const TestKey& ek, const TPMT_PUBLIC& ek_pub,
                            ByteView credential_blob, ByteView encrypted_secret,
                            ByteView ak_name) {
  auto seed = RefSeed(ek, ek_pub, encrypted_secret);
  if (!seed.ok()) return seed.status();
  const EVP_MD* md = testing::TestMd(ek_pub.nameAlg);
  uint32_t hbits = static_cast<uint32_t>(EVP_MD_get_size(md) * 8);
  TPM2B_ID_OBJECT id{};
  size_t off = 0;
  if (Tss2_MU_TPM2B_ID_OBJECT_Unmarshal(credential_blob.data(),
                                        credential_blob.size(), &off,
                                        &id) != TSS2_RC_SUCCESS ||
      off != credential_blob.size() || id.size < 2) {
    return InvalidArgumentError("bad TPM2B_ID_OBJECT");
  }
  size_t hmac_size = size_t{id.credential[0]} << 8 | id.credential[1];
  if (2 + hmac_size > id.size) return InvalidArgumentError("bad HMAC size");
  Bytes hmac(id.credential + 2, id.credential + 2 + hmac_size);
  Bytes enc(id.credential + 2 + hmac_size, id.credential + id.size);

  Bytes hmac_key = RefKdfA(md, *seed, "INTEGRITY", {}, {}, hbits);
  Bytes data = enc;
  data.insert(data.end(), ak_name.begin(), ak_name.end());
  unsigned char h[EVP_MAX_MD_SIZE];
  unsigned int hn = 0;
  HMAC(md, hmac_key.data(), static_cast<int>(hmac_key.size()), data.data(),
       data.size(), h, &hn);
  if (Bytes(h, h + hn) != hmac) {
    return UnauthenticatedError("integrity HMAC mismatch");
  }
  uint16_t aes_bits = ek.is_rsa() ? ek_pub.parameters.rsaDetail.symmetric.keyBits.aes
                                  : ek_pub.parameters.eccDetail.symmetric.keyBits.aes;
  Bytes sym = RefKdfA(md, *seed, "STORAGE", ak_name, {}, aes_bits);
  std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree> c(EVP_CIPHER_CTX_new());
  unsigned char iv[16] = {0};
  Bytes plain(enc.size() + 16);
  int n1 = 0, n2 = 0;
  if (EVP_DecryptInit_ex(c.get(),
                         aes_bits == 128 ? EVP_aes_128_cfb128() : EVP_aes_256_cfb128(),
                         nullptr, sym.data(), iv) != 1 ||
      EVP_DecryptUpdate(c.get(), plain.data(), &n1, enc.data(),
                        static_cast<int>(enc.size())) != 1 ||
      EVP_DecryptFinal_ex(c.get(), plain.data() + n1, &n2) != 1) {
    return InternalError("AES-CFB decryption failed");
  }
  plain.resize(static_cast<size_t>(n1 + n2));
  if (plain.size() < 2) return InvalidArgumentError("short encIdentity");
  size_t cred_size = size_t{plain[0]} << 8 | plain[1];
  if (cred_size + 2 != plain.size()) {
    return InvalidArgumentError("encIdentity size mismatch");
  }
  return Bytes(plain.begin() + 2, plain.end());
}

struct Ek {
  TestKey key;
  TPMT_PUBLIC tpmt;
  Bytes blob;
  TpmPublic pub;
};

Ek MakeEk(TestKey key) {
  TPMT_PUBLIC tpmt = testing::MakeTpmtPublic(key, testing::EkTemplate());
  Bytes blob = testing::MarshalTpm2bPublic(tpmt);
  auto pub = TpmPublic::Decode(blob);
  EXPECT_TRUE(pub.ok()) << pub.status().ToString();
  return Ek{std::move(key), tpmt, blob, std::move(pub).value()};
}

Bytes AkName() {
  TestKey ak = TestKey::EccP256();
  return testing::ExpectedName(testing::MakeTpmtPublic(ak, testing::AkTemplate(ak)));
}

// ---- KDFa -------------------------------------------------------------------

TEST(KdfATest, MatchesTheSpecConstruction) {
  Bytes key(32, 0x0b);
  Bytes u = ToBytes("context-u"), v = ToBytes("v");
  for (uint32_t bits : {128u, 256u, 384u, 520u}) {
    SCOPED_TRACE(bits);
    auto k = KdfA(kTpmAlgSha256, key, "STORAGE", u, v, bits);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    EXPECT_EQ(*k, RefKdfA(EVP_sha256(), key, "STORAGE", u, v, bits));
  }
  auto k1 = KdfA(kTpmAlgSha1, key, "INTEGRITY", {}, {}, 160);
  ASSERT_TRUE(k1.ok());
  EXPECT_EQ(*k1, RefKdfA(EVP_sha1(), key, "INTEGRITY", {}, {}, 160));
}

TEST(KdfATest, MasksPartialBytesAndRejectsBadInput) {
  Bytes key(32, 0x01);
  auto k = KdfA(kTpmAlgSha256, key, "X", {}, {}, 12);
  ASSERT_TRUE(k.ok());
  ASSERT_EQ(k->size(), 2u);
  EXPECT_EQ((*k)[0] & 0xf0, 0);
  EXPECT_EQ(KdfA(kTpmAlgSm3_256, key, "X", {}, {}, 128).status(),
            InvalidArgumentError("KDFa hash sm3_256 is not supported."));
  EXPECT_EQ(KdfA(kTpmAlgSha256, key, "X", {}, {}, 0).status(),
            InvalidArgumentError(
                "KDFa output of 0 bits is out of range [1, 1048576]."));
}

// ---- MakeCredential -----------------------------------------------------------

TEST(MakeCredentialTest, RsaEkActivationRecoversTheCredential) {
  Ek ek = MakeEk(TestKey::Rsa(2048));
  Bytes ak_name = AkName();
  Bytes secret = ToBytes("0123456789abcdef0123456789abcdef");  // 32 bytes
  auto made = MakeCredential(ek.pub, secret, ak_name);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(made->encrypted_secret.size(), 2u + 256u);
  auto got = RefActivate(ek.key, ek.tpmt, made->credential_blob,
                         made->encrypted_secret, ak_name);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, secret);

  // Bound to the AK name: another name fails the integrity check.
  Bytes other_name = AkName();
  EXPECT_EQ(RefActivate(ek.key, ek.tpmt, made->credential_blob,
                        made->encrypted_secret, other_name)
                .status(),
            UnauthenticatedError("integrity HMAC mismatch"));
  // Bound to the EK: another EK's private key cannot recover the seed.
  Ek other = MakeEk(TestKey::Rsa(2048));
  EXPECT_FALSE(RefActivate(other.key, ek.tpmt, made->credential_blob,
                           made->encrypted_secret, ak_name)
                   .ok());
}

TEST(MakeCredentialTest, EccP256EkActivationRecoversTheCredential) {
  Ek ek = MakeEk(TestKey::EccP256());
  Bytes ak_name = AkName();
  Bytes secret = ToBytes("short secret");
  auto made = MakeCredential(ek.pub, secret, ak_name);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  // TPM2B { TPMS_ECC_POINT { 32-byte x, 32-byte y } }
  EXPECT_EQ(made->encrypted_secret.size(), 2u + 2u + 32u + 2u + 32u);
  auto got = RefActivate(ek.key, ek.tpmt, made->credential_blob,
                         made->encrypted_secret, ak_name);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, secret);
}

TEST(MakeCredentialTest, DeterministicVariantIsReproducible) {
  Ek ecc = MakeEk(TestKey::EccP256());
  Bytes ak_name = AkName();
  Bytes scalar(32, 0x07);
  Bytes secret(16, 0x99);
  auto a = MakeCredentialDeterministic(ecc.pub, secret, ak_name, scalar);
  auto b = MakeCredentialDeterministic(ecc.pub, secret, ak_name, scalar);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->credential_blob, b->credential_blob);
  EXPECT_EQ(a->encrypted_secret, b->encrypted_secret);
  auto got = RefActivate(ecc.key, ecc.tpmt, a->credential_blob,
                         a->encrypted_secret, ak_name);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, secret);

  // RSA: the seed fixes the credential blob (OAEP itself stays random).
  Ek rsa = MakeEk(TestKey::Rsa(2048));
  Bytes seed(32, 0x42);
  auto r1 = MakeCredentialDeterministic(rsa.pub, secret, ak_name, seed);
  auto r2 = MakeCredentialDeterministic(rsa.pub, secret, ak_name, seed);
  ASSERT_TRUE(r1.ok());
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r1->credential_blob, r2->credential_blob);
  auto seed_back = RefSeed(rsa.key, rsa.tpmt, r1->encrypted_secret);
  ASSERT_TRUE(seed_back.ok());
  EXPECT_EQ(*seed_back, seed);
  EXPECT_EQ(MakeCredentialDeterministic(rsa.pub, secret, ak_name, Bytes(31, 1))
                .status(),
            InvalidArgumentError("the seed must be 32 bytes."));
  EXPECT_EQ(MakeCredentialDeterministic(ecc.pub, secret, ak_name, Bytes(32, 0))
                .status(),
            InvalidArgumentError(
                "the ephemeral scalar is not in [1, n-1] for the EK's curve."));
}

TEST(MakeCredentialTest, RejectsUnsuitableInputs) {
  Ek ek = MakeEk(TestKey::Rsa(2048));
  Bytes ak_name = AkName();
  // An AK-like key (restricted signing) is not a storage key.
  TestKey ak = TestKey::EccP256();
  auto not_storage =
      TpmPublic::Decode(testing::PublicBlob(ak, testing::AkTemplate(ak)));
  ASSERT_TRUE(not_storage.ok());
  EXPECT_EQ(MakeCredential(*not_storage, Bytes(8, 1), ak_name).status(),
            FailedPreconditionError("the EK is not a storage key (restricted "
                                    "and decrypt must be set)."));
  // A storage key without AES.
  testing::PublicTemplate t = testing::EkTemplate();
  t.aes_bits = 0;
  TestKey k = TestKey::EccP256();
  auto no_aes = TpmPublic::Decode(testing::PublicBlob(k, t));
  ASSERT_TRUE(no_aes.ok());
  EXPECT_EQ(MakeCredential(*no_aes, Bytes(8, 1), ak_name).status(),
            FailedPreconditionError("the EK's symmetric definition is not "
                                    "AES-128 or AES-256 (aes bits 0)."));
  EXPECT_EQ(MakeCredential(ek.pub, {}, ak_name).status(),
            InvalidArgumentError("the credential is 0 bytes; it must be 1 to "
                                 "32 (EK nameAlg size)."));
  EXPECT_EQ(MakeCredential(ek.pub, Bytes(33, 1), ak_name).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeCredential(ek.pub, Bytes(8, 1), Bytes{0x00, 0x0b, 0x01})
                .status(),
            InvalidArgumentError("the AK name 000b01 is not a nameAlg followed "
                                 "by its digest."));
}

// ---- tpm2-tools credential file --------------------------------------------

TEST(Tpm2ToolsCredentialTest, WriteParseRoundTrip) {
  MadeCredential c{Bytes{0x00, 0x03, 1, 2, 3}, Bytes{0x00, 0x02, 9, 8}};
  Bytes file = WriteTpm2ToolsCredential(c);
  EXPECT_EQ(HexEncode(file), "badcc0de00000001" "0003010203" "00020908");
  auto back = ParseTpm2ToolsCredential(file);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->credential_blob, c.credential_blob);
  EXPECT_EQ(back->encrypted_secret, c.encrypted_secret);
}

TEST(Tpm2ToolsCredentialTest, RejectsMalformedFiles) {
  struct Case {
    std::string hex;
    std::string message;
  };
  std::vector<Case> cases = {
      {"", "the credential file is empty."},
      {"badcc0de0000", "the credential file of 6 bytes is too short for its "
                       "header."},
      {"deadbeef00000001", "the credential file magic deadbeef is not "
                           "badcc0de."},
      {"badcc0de00000002", "the credential file version 2 is not 1."},
      {"badcc0de00000001" "0005aa",
       "the credential file's TPM2B_ID_OBJECT at offset 8 does not decode."},
      {"badcc0de00000001" "0001aa" "0003aa",
       "the credential file's TPM2B_ENCRYPTED_SECRET at offset 11 does not "
       "decode."},
      {"badcc0de00000001" "0001aa" "0001bb" "ff",
       "the credential file has 1 trailing bytes after offset 14."},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.hex);
    auto r = ParseTpm2ToolsCredential(*HexDecode(c.hex));
    EXPECT_EQ(r.status(), InvalidArgumentError(c.message));
  }
}

// The real tpm2_makecredential (offline, --tcti none): its output parses,
// and the test's own ActivateCredential recovers the secret, for RSA and
// ECC EKs. Also checks our WriteTpm2ToolsCredential layout byte-for-byte
// against the tool's.
TEST(Tpm2ToolsCredentialTest, ReadsRealTpm2MakecredentialOutput) {
  std::string tool = testing::FindTool("tpm2_makecredential");
  if (tool.empty()) GTEST_SKIP() << "tpm2_makecredential (tpm2-tools) is not installed";
  for (bool rsa : {true, false}) {
    SCOPED_TRACE(rsa ? "RSA EK" : "ECC EK");
    Ek ek = MakeEk(rsa ? TestKey::Rsa(2048) : TestKey::EccP256());
    Bytes ak_name = AkName();
    Bytes secret = ToBytes("a secret from the verifier");
    dpuaudit::testing::TempDir dir("makecred");
    testing::WriteBytes(dir / "ek.pub", ek.blob);
    testing::WriteBytes(dir / "secret.bin", secret);
    std::string out;
    int rc = testing::RunTool({tool, "--tcti", "none", "-u", dir / "ek.pub", "-s",
                               dir / "secret.bin", "-n", HexEncode(ak_name),
                               "-o", dir / "cred.out"},
                              &out);
    ASSERT_EQ(rc, 0) << out;
    Bytes file = testing::ReadBytes(dir / "cred.out");
    auto parsed = ParseTpm2ToolsCredential(file);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(WriteTpm2ToolsCredential(*parsed), file);
    auto got = RefActivate(ek.key, ek.tpmt, parsed->credential_blob,
                           parsed->encrypted_secret, ak_name);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, secret);

    // And ours has the tool's shape: same sizes for the same inputs.
    auto ours = MakeCredential(ek.pub, secret, ak_name);
    ASSERT_TRUE(ours.ok());
    EXPECT_EQ(WriteTpm2ToolsCredential(*ours).size(), file.size());
  }
}

// ---- EK certificates -----------------------------------------------------------

struct CertSpec {
  static CertSpec Ca(std::string cn) {
    CertSpec s;
    s.cn = std::move(cn);
    s.ca = true;
    return s;
  }
  std::string cn;  // "" = empty subject (as EK certificates have)
  bool ca = false;
  long not_before = -86400;     // relative to now, seconds
  long not_after = 86400 * 365;
  bool tcg_san = false;         // critical SAN directoryName with TCG attrs
  bool tcg_sda = false;         // critical subjectDirectoryAttributes
  std::string extra_critical_oid;  // an unknown critical extension
  // Leaf only: the extendedKeyUsage value ("" = no extension), whether the
  // TCG SAN names the manufacturer, and the basicConstraints / keyUsage
  // values ("" = no extension).
  std::string eku = "2.23.133.8.1";  // tcg-kp-EKCertificate
  bool san_manufacturer = true;
  std::string leaf_basic_constraints = "critical,CA:FALSE";
  std::string leaf_key_usage = "critical,keyEncipherment";
};

void AddExt(X509* cert, X509* issuer, const char* name, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(
      X509V3_EXT_conf(nullptr, &ctx, name, value));
  ASSERT_NE(ext, nullptr) << name << " = " << value;
  X509_add_ext(cert, ext.get(), -1);
}

X509Ptr MakeCert(const CertSpec& s, EVP_PKEY* subject_key, X509* issuer,
                 EVP_PKEY* issuer_key, time_t now) {
  X509Ptr x(X509_new());
  X509_set_version(x.get(), 2);
  static long serial = 1000;
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), ++serial);
  X509_time_adj_ex(X509_getm_notBefore(x.get()), 0, s.not_before, &now);
  X509_time_adj_ex(X509_getm_notAfter(x.get()), 0, s.not_after, &now);
  X509_set_pubkey(x.get(), subject_key);
  X509_NAME* name = X509_get_subject_name(x.get());
  if (!s.cn.empty()) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>("dpuaudit test"),
                               -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(s.cn.c_str()),
                               -1, -1, 0);
  }
  X509* iss = issuer != nullptr ? issuer : x.get();
  X509_set_issuer_name(x.get(), X509_get_subject_name(iss));
  if (s.ca) {
    AddExt(x.get(), iss, "basicConstraints", "critical,CA:TRUE");
    AddExt(x.get(), iss, "keyUsage", "critical,keyCertSign,cRLSign");
    AddExt(x.get(), iss, "subjectKeyIdentifier", "hash");
  } else {
    if (!s.leaf_basic_constraints.empty()) {
      AddExt(x.get(), iss, "basicConstraints", s.leaf_basic_constraints.c_str());
    }
    if (!s.leaf_key_usage.empty()) {
      AddExt(x.get(), iss, "keyUsage", s.leaf_key_usage.c_str());
    }
    if (!s.eku.empty()) AddExt(x.get(), iss, "extendedKeyUsage", s.eku.c_str());
  }
  AddExt(x.get(), iss, "authorityKeyIdentifier", "keyid:always");
  if (s.tcg_san) {
    // TCG EK Credential Profile §3.2.9: directoryName with
    // tcg-at-tpmManufacturer / tpmModel / tpmVersion.
    // The name is owned by the GENERAL_NAME, which the stack owns.
    std::unique_ptr<GENERAL_NAMES, GeneralNamesFree> gens(
        sk_GENERAL_NAME_new_null());
    GENERAL_NAME* gn = GENERAL_NAME_new();
    X509_NAME* dn = X509_NAME_new();
    GENERAL_NAME_set0_value(gn, GEN_DIRNAME, dn);
    sk_GENERAL_NAME_push(gens.get(), gn);
    auto add = [dn](const char* oid, const char* v) {
      std::unique_ptr<ASN1_OBJECT, ObjFree> obj(OBJ_txt2obj(oid, 1));
      X509_NAME_add_entry_by_OBJ(dn, obj.get(), MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(v), -1,
                                 -1, 0);
    };
    if (s.san_manufacturer) add("2.23.133.2.1", "id:49424D00");
    add("2.23.133.2.2", "swtpm");
    add("2.23.133.2.3", "id:20191023");
    X509_add1_ext_i2d(x.get(), NID_subject_alt_name, gens.get(), 1,
                      X509V3_ADD_DEFAULT);
  }
  if (s.tcg_sda) {
    // subjectDirectoryAttributes: tcg-at-tpmSpecification {"2.0", 0, 138}
    AddExt(x.get(), iss, "2.5.29.9",
           "critical,DER:30193017060567810502103110300c0c03322e300201000202008a");
  }
  if (!s.extra_critical_oid.empty()) {
    AddExt(x.get(), iss, s.extra_critical_oid.c_str(), "critical,DER:0500");
  }
  EXPECT_GT(X509_sign(x.get(), issuer_key, EVP_sha256()), 0);
  return x;
}

std::string Pem(X509* x) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), x);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}
Bytes Der(X509* x) {
  unsigned char* p = nullptr;
  int n = i2d_X509(x, &p);
  Bytes out(p, p + n);
  OPENSSL_free(p);
  return out;
}

class EkCertificateTest : public ::testing::Test {
 protected:
  EkCertificateTest()
      : now_(std::time(nullptr)),
        root_key_(TestKey::EccP256()),
        int_key_(TestKey::EccP256()),
        ek_(MakeEk(TestKey::Rsa(2048))) {
    CertSpec root = CertSpec::Ca("Test EK Root CA");
    root_ = MakeCert(root, root_key_.pkey(), nullptr, root_key_.pkey(), now_);
    CertSpec inter = CertSpec::Ca("Test EK Intermediate CA");
    inter_ = MakeCert(inter, int_key_.pkey(), root_.get(), root_key_.pkey(), now_);
    CertSpec leaf;
    leaf.tcg_san = true;
    leaf.tcg_sda = true;
    ek_cert_ = MakeCert(leaf, ek_.key.pkey(), inter_.get(), int_key_.pkey(), now_);
    testing::WriteBytes(ca_dir_ / "root.pem", AsBytes(Pem(root_.get())));
    testing::WriteBytes(ca_dir_ / "intermediate.der", Der(inter_.get()));
    testing::WriteBytes(ca_dir_ / "README.txt", AsBytes("not a cert, ignored"));
  }

  time_t now_;
  TestKey root_key_, int_key_;
  Ek ek_;
  X509Ptr root_, inter_, ek_cert_;
  dpuaudit::testing::TempDir ca_dir_{"ekca"};
};

TEST_F(EkCertificateTest, AcceptsAGoodChainAndReadsTheTcgAttributes) {
  for (bool pem : {true, false}) {
    SCOPED_TRACE(pem ? "PEM" : "DER");
    Bytes cert = pem ? ToBytes(Pem(ek_cert_.get())) : Der(ek_cert_.get());
    auto info = VerifyEkCertificate(cert, ek_.pub, ca_dir_.path(), now_);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->tpm_manufacturer, "id:49424D00");
    EXPECT_EQ(info->tpm_model, "swtpm");
    EXPECT_EQ(info->tpm_version, "id:20191023");
    EXPECT_EQ(info->subject, "");
    EXPECT_EQ(info->issuer, "CN=Test EK Intermediate CA,O=dpuaudit test");
    EXPECT_EQ(info->sha256, Sha256Hex(Der(ek_cert_.get())));
    ASSERT_EQ(info->chain_subjects.size(), 3u);
    EXPECT_EQ(info->chain_subjects[1], "CN=Test EK Intermediate CA,O=dpuaudit test");
    EXPECT_EQ(info->chain_subjects[2], "CN=Test EK Root CA,O=dpuaudit test");
  }
}

TEST_F(EkCertificateTest, RejectsAnotherCa) {
  TestKey other_key = TestKey::EccP256();
  X509Ptr other = MakeCert(CertSpec::Ca("Other Root"), other_key.pkey(),
                           nullptr, other_key.pkey(), now_);
  dpuaudit::testing::TempDir other_dir("ekca-other");
  testing::WriteBytes(other_dir / "other.crt", AsBytes(Pem(other.get())));
  auto info = VerifyEkCertificate(Der(ek_cert_.get()), ek_.pub,
                                  other_dir.path(), now_);
  EXPECT_EQ(info.status(),
            UnauthenticatedError("EK certificate does not verify against the "
                                 "CAs in " +
                                 other_dir.path() +
                                 ": unable to get local issuer certificate."));
}

TEST_F(EkCertificateTest, NeedsTheRootNotJustTheIntermediate) {
  dpuaudit::testing::TempDir only_int("ekca-int");
  testing::WriteBytes(only_int / "intermediate.pem", AsBytes(Pem(inter_.get())));
  auto info =
      VerifyEkCertificate(Der(ek_cert_.get()), ek_.pub, only_int.path(), now_);
  EXPECT_EQ(info.status().code(), StatusCode::kUnauthenticated);
}

TEST_F(EkCertificateTest, RejectsExpiredAndNotYetValid) {
  auto expired = VerifyEkCertificate(Der(ek_cert_.get()), ek_.pub,
                                     ca_dir_.path(), now_ + 86400 * 400);
  EXPECT_EQ(expired.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(expired.status().message(), HasSubstr(": certificate has expired."));
  auto early = VerifyEkCertificate(Der(ek_cert_.get()), ek_.pub,
                                   ca_dir_.path(), now_ - 86400 * 2);
  EXPECT_EQ(early.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(early.status().message(), HasSubstr("is not yet valid"));
}

TEST_F(EkCertificateTest, RejectsACertificateForAnotherKey) {
  Ek other = MakeEk(TestKey::Rsa(2048));
  auto info =
      VerifyEkCertificate(Der(ek_cert_.get()), other.pub, ca_dir_.path(), now_);
  EXPECT_EQ(info.status(),
            FailedPreconditionError("EK certificate key does not match the EK."));
}

TEST_F(EkCertificateTest, RejectsGarbage) {
  for (const std::string& junk :
       {std::string("not a certificate"),
        std::string("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        std::string("")}) {
    SCOPED_TRACE(junk);
    auto info = VerifyEkCertificate(AsBytes(junk), ek_.pub, ca_dir_.path(), now_);
    EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(info.status().message(), StartsWith(junk.empty()
                                                        ? "the EK certificate is empty."
                                                        : "EK certificate does not parse"));
  }
  Bytes trailing = Der(ek_cert_.get());
  trailing.push_back(0);
  EXPECT_EQ(VerifyEkCertificate(trailing, ek_.pub, ca_dir_.path(), now_)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST_F(EkCertificateTest, RejectsAnUnknownCriticalExtension) {
  CertSpec leaf;
  leaf.tcg_san = true;
  leaf.extra_critical_oid = "1.2.3.4";
  X509Ptr cert = MakeCert(leaf, ek_.key.pkey(), inter_.get(), int_key_.pkey(), now_);
  auto info = VerifyEkCertificate(Der(cert.get()), ek_.pub, ca_dir_.path(), now_);
  EXPECT_EQ(info.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(info.status().message(), HasSubstr("unhandled critical extension"));

  // The same certificate with a critical extension under the TCG arc is fine.
  leaf.extra_critical_oid = "2.23.133.99.1";
  X509Ptr tcg = MakeCert(leaf, ek_.key.pkey(), inter_.get(), int_key_.pkey(), now_);
  EXPECT_TRUE(VerifyEkCertificate(Der(tcg.get()), ek_.pub, ca_dir_.path(), now_)
                  .ok());
}

TEST_F(EkCertificateTest, ReportsCaDirectoryProblems) {
  auto missing = VerifyEkCertificate(Der(ek_cert_.get()), ek_.pub,
                                     ca_dir_.path() + "/nope", now_);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  dpuaudit::testing::TempDir empty("ekca-empty");
  auto none = VerifyEkCertificate(Der(ek_cert_.get()), ek_.pub, empty.path(), now_);
  EXPECT_EQ(none.status(),
            FailedPreconditionError("EK CA directory " + empty.path() +
                                    " holds no *.pem, *.crt or *.der "
                                    "certificate."));
  testing::WriteBytes(empty / "broken.der", AsBytes("garbage"));
  auto broken = VerifyEkCertificate(Der(ek_cert_.get()), ek_.pub, empty.path(), now_);
  EXPECT_EQ(broken.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr("broken.der does not parse"));
}

// Issue 12: a trusted CA's own certificate, presented as the EK certificate
// of a "TPM" whose EK is the CA's public key, chains (it is a trust anchor)
// and matches the key; only the EK profile tells it is not an EK
// certificate.
TEST_F(EkCertificateTest, RefusesACaCertificateAsTheEkCertificate) {
  struct Case {
    std::string name;
    X509* cert;
    const TestKey* key;
  };
  for (const Case& c : {Case{"root", root_.get(), &root_key_},
                        Case{"intermediate", inter_.get(), &int_key_}}) {
    SCOPED_TRACE(c.name);
    Ek ca_as_ek = MakeEk(*c.key);
    auto info =
        VerifyEkCertificate(Der(c.cert), ca_as_ek.pub, ca_dir_.path(), now_);
    EXPECT_EQ(info.status(),
              InvalidArgumentError(
                  "the EK certificate is a CA certificate (basicConstraints CA "
                  "TRUE); an EK certificate must be a leaf (TCG EK Credential "
                  "Profile: basicConstraints cA FALSE)."));
  }
}

TEST_F(EkCertificateTest, RefusesALeafWithoutTheEkProfile) {
  struct Case {
    std::string name;
    CertSpec spec;
    std::string message;  // "" = accepted
  };
  auto spec = [](auto edit) {
    CertSpec s;
    edit(s);
    return s;
  };
  const std::vector<Case> cases = {
      {"no EKU, no SAN", spec([](CertSpec& s) { s.eku = ""; }),
       "the EK certificate has neither the extendedKeyUsage "
       "tcg-kp-EKCertificate (2.23.133.8.1) nor a subjectAltName naming the "
       "TPM manufacturer (2.23.133.2.1): it is not an EK certificate."},
      {"another EKU", spec([](CertSpec& s) { s.eku = "serverAuth,clientAuth"; }),
       "the EK certificate's extendedKeyUsage does not include "
       "tcg-kp-EKCertificate (2.23.133.8.1): it is not an EK certificate."},
      {"SAN without the manufacturer", spec([](CertSpec& s) {
         s.tcg_san = true;
         s.san_manufacturer = false;
       }),
       "the EK certificate's subjectAltName directoryName has no "
       "tcg-at-tpmManufacturer (2.23.133.2.1): it is not an EK certificate."},
      {"keyCertSign without basicConstraints", spec([](CertSpec& s) {
         s.leaf_basic_constraints = "";
         s.leaf_key_usage = "critical,keyCertSign,keyEncipherment";
       }),
       "the EK certificate can act as a CA"},
      {"cRLSign on a leaf", spec([](CertSpec& s) {
         s.leaf_key_usage = "critical,cRLSign,keyEncipherment";
       }),
       "the EK certificate's keyUsage allows keyCertSign or cRLSign; an EK "
       "certificate must be a leaf."},
      // Accepted: the manufacturer SAN without an EKU, and a leaf without
      // basicConstraints (older EK certificates).
      {"SAN, no EKU", spec([](CertSpec& s) {
         s.eku = "";
         s.tcg_san = true;
       }),
       ""},
      {"no basicConstraints", spec([](CertSpec& s) { s.leaf_basic_constraints = ""; }),
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    X509Ptr cert = MakeCert(c.spec, ek_.key.pkey(), inter_.get(), int_key_.pkey(), now_);
    auto info = VerifyEkCertificate(Der(cert.get()), ek_.pub, ca_dir_.path(), now_);
    if (c.message.empty()) {
      EXPECT_TRUE(info.ok()) << info.status().ToString();
    } else {
      EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(info.status().message(), StartsWith(c.message));
    }
  }
}

}  // namespace
}  // namespace dpuaudit::attest
