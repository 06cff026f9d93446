#include "common/crypto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/files.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/dpuaudit-crypto-XXXXXX";
  char* d = mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  return d;
}

TEST(Sha256Test, KnownVectors) {
  // FIPS 180-2 examples.
  EXPECT_EQ(Sha256Hex(AsBytes("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex(AsBytes("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(RandomBytesTest, ReturnsRequestedLengthAndDiffers) {
  auto a = RandomBytes(32), b = RandomBytes(32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
}

TEST(Es256Test, SignVerifyRoundTrip) {
  auto key = EcPrivateKey::Generate();
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  auto signer = Es256Signer::New(*key);
  auto verifier = Es256Verifier::New(key->public_key());
  ASSERT_TRUE(signer.ok() && verifier.ok());
  auto sig = (*signer)->Sign(AsBytes("hello"));
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->size(), 64u);
  EXPECT_TRUE((*verifier)->Verify(*sig, AsBytes("hello")).ok());
}

TEST(Es256Test, RejectsTamperedDataWrongKeyAndBadLength) {
  auto key = EcPrivateKey::Generate();
  auto other = EcPrivateKey::Generate();
  auto signer = Es256Signer::New(*key);
  auto sig = (*signer)->Sign(AsBytes("hello"));
  auto verifier = Es256Verifier::New(key->public_key());
  auto other_verifier = Es256Verifier::New(other->public_key());

  Status tampered = (*verifier)->Verify(*sig, AsBytes("hellO"));
  EXPECT_EQ(tampered.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(tampered.message(), "ES256 signature does not verify.");

  EXPECT_EQ((*other_verifier)->Verify(*sig, AsBytes("hello")).code(),
            StatusCode::kUnauthenticated);

  Bytes short_sig(sig->begin(), sig->begin() + 63);
  Status len = (*verifier)->Verify(short_sig, AsBytes("hello"));
  EXPECT_EQ(len.code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(len.message(), HasSubstr("must be 64 bytes"));

  Bytes zero(64, 0);
  EXPECT_EQ((*verifier)->Verify(zero, AsBytes("hello")).code(),
            StatusCode::kUnauthenticated);
}

TEST(EcPublicKeyTest, AffineAndPemRoundTrip) {
  auto key = EcPrivateKey::Generate();
  const EcPublicKey& pub = key->public_key();
  auto again = EcPublicKey::FromAffine(pub.x(), pub.y());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, pub);
  auto from_pem = EcPublicKey::FromPem(pub.ToPem());
  ASSERT_TRUE(from_pem.ok());
  EXPECT_EQ(*from_pem, pub);
  EXPECT_EQ(again->Thumbprint(), pub.Thumbprint());
  EXPECT_EQ(pub.Thumbprint().size(), 43u);
}

// FromPem's fast path (the canonical PEM OpenSSL writes) and OpenSSL's
// general reader give the same key; every other form still parses through
// OpenSSL; an off-curve point in canonical form is refused either way.
TEST(EcPublicKeyTest, PemFastPathAgreesWithOpenSsl) {
  for (int i = 0; i < 20; ++i) {
    auto key = EcPrivateKey::Generate();
    ASSERT_TRUE(key.ok());
    const std::string pem = key->public_key().ToPem();
    auto fast = EcPublicKey::FromPem(pem);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    // Not canonical (text before the armour, CRLF line ends): OpenSSL's path.
    std::string crlf;
    for (char c : pem) {
      if (c == '\n') crlf += '\r';
      crlf += c;
    }
    auto general = EcPublicKey::FromPem("a comment line\n" + crlf);
    ASSERT_TRUE(general.ok()) << general.status().ToString();
    EXPECT_EQ(*fast, key->public_key());
    EXPECT_EQ(*general, key->public_key());
    EXPECT_EQ(fast->Thumbprint(), general->Thumbprint());
  }
  // (1, 2) is not on P-256: the canonical SPKI of it is refused.
  Bytes der = {0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
               0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04};
  Bytes x(32, 0), y(32, 0);
  x[31] = 1;
  y[31] = 2;
  der.insert(der.end(), x.begin(), x.end());
  der.insert(der.end(), y.begin(), y.end());
  const std::string b64 = Base64Encode(der);
  std::string pem = "-----BEGIN PUBLIC KEY-----\n";
  for (size_t i = 0; i < b64.size(); i += 64) pem += b64.substr(i, 64) + "\n";
  pem += "-----END PUBLIC KEY-----\n";
  EXPECT_EQ(EcPublicKey::FromPem(pem).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EcPublicKey::FromPem("x" + pem).status().code(), StatusCode::kInvalidArgument);
  // A P-384 key is still refused by name (OpenSSL's path).
  EvpPkeyPtr p384(EVP_EC_gen("P-384"));
  ASSERT_TRUE(p384);
  BioPtr bio(BIO_new(BIO_s_mem()));
  ASSERT_EQ(PEM_write_bio_PUBKEY(bio.get(), p384.get()), 1);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  EXPECT_THAT(EcPublicKey::FromPem(std::string(data, static_cast<size_t>(n))).status().message(),
              HasSubstr("expected P-256"));
}

TEST(EcPublicKeyTest, RejectsPointOffCurveAndWrongSizes) {
  Bytes x(32, 1), y(32, 2);
  auto off = EcPublicKey::FromAffine(x, y);
  EXPECT_EQ(off.status().code(), StatusCode::kInvalidArgument);
  auto sizes = EcPublicKey::FromAffine(Bytes(31, 1), y);
  EXPECT_THAT(sizes.status().message(), HasSubstr("32 bytes each, got 31 and 32"));
}

TEST(EcPublicKeyTest, RejectsOtherCurvesAndKeyTypes) {
  // P-384 and RSA keys must never be accepted where P-256 is pinned.
  EVP_PKEY* p384 = EVP_EC_gen("P-384");
  ASSERT_NE(p384, nullptr);
  auto r = EcPublicKey::FromPkey(EvpPkeyPtr(p384));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("secp384r1"));
  EVP_PKEY* rsa = EVP_RSA_gen(2048);
  ASSERT_NE(rsa, nullptr);
  auto r2 = EcPublicKey::FromPkey(EvpPkeyPtr(rsa));
  EXPECT_THAT(r2.status().message(), HasSubstr("not an EC key"));
}

TEST(EcPrivateKeyTest, LoadOrCreateWrites0600AndReloadsSameKey) {
  std::string dir = TempDir();
  std::string path = dir + "/sub/agent.key";
  bool created = false;
  auto k1 = EcPrivateKey::LoadOrCreateFile(path, &created);
  ASSERT_TRUE(k1.ok()) << k1.status().ToString();
  EXPECT_TRUE(created);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto k2 = EcPrivateKey::LoadOrCreateFile(path, &created);
  ASSERT_TRUE(k2.ok());
  EXPECT_FALSE(created);
  EXPECT_EQ(k1->public_key(), k2->public_key());
  std::filesystem::remove_all(dir);
}

TEST(EcPrivateKeyTest, RefusesGroupReadableKeyFile) {
  std::string dir = TempDir();
  std::string path = dir + "/k.pem";
  auto k = EcPrivateKey::Generate();
  ASSERT_TRUE(k->SaveFile(path).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  auto loaded = EcPrivateKey::LoadFile(path);
  EXPECT_EQ(loaded.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(loaded.status().message(), HasSubstr("chmod 600"));
  std::filesystem::remove_all(dir);
}

TEST(EcPrivateKeyTest, SaveFileNeverOverwrites) {
  std::string dir = TempDir();
  std::string path = dir + "/k.pem";
  auto k = EcPrivateKey::Generate();
  ASSERT_TRUE(k->SaveFile(path).ok());
  Status again = k->SaveFile(path);
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  std::filesystem::remove_all(dir);
}

TEST(EcPrivateKeyTest, RejectsGarbagePem) {
  auto k = EcPrivateKey::FromPem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(k.status().message(), HasSubstr("does not parse"));
}

TEST(FilesTest, ReadFileLimitedEnforcesLimitAndReportsMissing) {
  std::string dir = TempDir();
  std::string path = dir + "/f";
  ASSERT_TRUE(WriteFileAtomic(path, AsBytes("0123456789"), 0644).ok());
  auto ok = ReadFileLimited(path, 10);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ToString(*ok), "0123456789");
  auto big = ReadFileLimited(path, 9);
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  auto missing = ReadFileLimited(dir + "/nope", 10);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(WriteFileAtomic(path, AsBytes("new"), 0644).ok());
  EXPECT_EQ(ToString(*ReadFileLimited(path, 10)), "new");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dpuaudit
