// Fuzz target: attest::VerifyEkCertificate, which the verifier runs on the
// EK certificate of an enrollment request (DER or PEM), and the CA folder
// loader behind it. A run-time CA (P-256 root) and EK (P-256, TCG template
// L-2 attributes) are made once per process in a temporary folder; no key
// is committed. Each input is used three ways:
//  1. as the certificate itself: it parses or not, and can never verify
//     (its key is not the run-time EK);
//  2. re-issued: if OpenSSL parses it, its key is replaced by the EK's, the
//     issuer by the run-time root (authority key id dropped), the validity
//     set around `now`, and it is signed by the root; so the chain check,
//     the TCG EK profile (a leaf, the EK extendedKeyUsage or manufacturer
//     subjectAltName), the tolerated TCG critical extensions and the subjectAltName
//     directoryName reading (tcg-at-tpmManufacturer/Model/Version) see
//     every extension the input carries. An accepted certificate reports
//     the SHA-256 of its DER, the root as issuer, a chain of two; the PEM
//     form gives the same answer as the DER form;
//  3. as the only file of a second CA folder (*.pem when it holds PEM, else
//     *.der), against a certificate issued by the run-time root: it is
//     loaded or refused, and the certificate never verifies.
// No input may make OpenSSL ask for a pass phrase (encrypted PEM): a UI
// method that aborts is installed, so a prompt is a crash here.
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ui.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tpm2_types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "attest/credential.h"
#include "attest/tpm_structs.h"
#include "common/bytes.h"
#include "common/crypto.h"

namespace {

using namespace dpuaudit;

constexpr int64_t kNow = 1'800'000'000;  // 2027-01-15, inside every validity

void Check(bool ok) {
  if (!ok) std::abort();
}

template <typename T, void (*F)(T*)>
struct Free {
  void operator()(T* p) const { F(p); }
};
using X509Ptr = std::unique_ptr<X509, Free<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Free<BIO, BIO_free_all>>;
using ExtPtr =
    std::unique_ptr<X509_EXTENSION, Free<X509_EXTENSION, X509_EXTENSION_free>>;

int AbortOnPrompt(UI*, UI_STRING*) { std::abort(); }

// Any pass-phrase prompt in this process (OpenSSL's default UI) aborts.
void ForbidPassphrasePrompts() {
  UI_METHOD* method = UI_create_method("dpuaudit fuzz: no prompts");
  if (method == nullptr || UI_method_set_reader(method, AbortOnPrompt) != 0) {
    std::abort();
  }
  UI_set_default_method(method);  // kept for the life of the process
}

std::string TempDir(const char* tag) {
  std::string base =
      std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string tmpl = base + "/dpuaudit-" + tag + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  return tmpl;
}

void WriteFile(const std::string& path, ByteView bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
}

void AddExt(X509* cert, X509* issuer, const char* name, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf(nullptr, &ctx, name, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) std::abort();
}

void SetValidity(X509* x) {
  if (ASN1_TIME_set(X509_getm_notBefore(x),
                    static_cast<time_t>(kNow - 86400)) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(x),
                    static_cast<time_t>(kNow + 86400 * 365)) == nullptr) {
    std::abort();
  }
}

Bytes Der(X509* x) {
  unsigned char* p = nullptr;
  int n = i2d_X509(x, &p);
  if (n <= 0) return {};
  Bytes out(p, p + n);
  OPENSSL_free(p);
  return out;
}

std::string Pem(ByteView der) {
  std::string b64 = Base64Encode(der);
  std::string pem = "-----BEGIN CERTIFICATE-----\n";
  for (size_t i = 0; i < b64.size(); i += 64) pem += b64.substr(i, 64) + "\n";
  return pem + "-----END CERTIFICATE-----\n";
}

// The TPM2B_PUBLIC of an ECC P-256 EK (TCG EK Credential Profile template
// L-2 attributes, AES-128-CFB) holding `key`'s public point.
attest::TpmPublic EkPublic(EVP_PKEY* key) {
  TPM2B_PUBLIC pub{};
  TPMT_PUBLIC& t = pub.publicArea;
  t.type = TPM2_ALG_ECC;
  t.nameAlg = TPM2_ALG_SHA256;
  t.objectAttributes = attest::kTpmaFixedTpm | attest::kTpmaFixedParent |
                       attest::kTpmaSensitiveDataOrigin |
                       attest::kTpmaAdminWithPolicy | attest::kTpmaRestricted |
                       attest::kTpmaDecrypt;
  t.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
  t.parameters.eccDetail.symmetric.keyBits.aes = 128;
  t.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
  t.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
  t.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
  t.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
  BIGNUM* x = nullptr;
  BIGNUM* y = nullptr;
  if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, &x) != 1 ||
      EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, &y) != 1) {
    std::abort();
  }
  t.unique.ecc.x.size = 32;
  t.unique.ecc.y.size = 32;
  BN_bn2binpad(x, t.unique.ecc.x.buffer, 32);
  BN_bn2binpad(y, t.unique.ecc.y.buffer, 32);
  BN_free(x);
  BN_free(y);
  Bytes out(sizeof pub);
  size_t offset = 0;
  if (Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, out.data(), out.size(), &offset) !=
      TSS2_RC_SUCCESS) {
    std::abort();
  }
  out.resize(offset);
  auto decoded = attest::TpmPublic::Decode(out);
  if (!decoded.ok()) std::abort();
  return *decoded;
}

struct World {
  EVP_PKEY* ca_key = nullptr;
  EVP_PKEY* ek_key = nullptr;
  X509Ptr root;
  std::string root_name;  // RFC 2253, as EkCertificateInfo prints names
  attest::TpmPublic ek;
  Bytes ek_cert;            // a valid EK certificate issued by the root
  std::string ca_dir;       // holds root.pem
  std::string fuzz_ca_dir;  // holds the input as the only CA file

  World()
      : ca_key(EVP_EC_gen("P-256")),
        ek_key(EVP_EC_gen("P-256")),
        root(X509_new()),
        ek(EkPublic(ek_key)),
        ca_dir(TempDir("fuzz-ekca")),
        fuzz_ca_dir(TempDir("fuzz-ekca-input")) {
    if (ca_key == nullptr || ek_key == nullptr || !root) std::abort();
    X509* r = root.get();
    X509_set_version(r, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(r), 1);
    SetValidity(r);
    X509_NAME* name = X509_get_subject_name(r);
    X509_NAME_add_entry_by_txt(
        name, "O", MBSTRING_UTF8,
        reinterpret_cast<const unsigned char*>("dpuaudit fuzz"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(
        name, "CN", MBSTRING_UTF8,
        reinterpret_cast<const unsigned char*>("EK root"), -1, -1, 0);
    X509_set_issuer_name(r, name);
    X509_set_pubkey(r, ca_key);
    AddExt(r, r, "basicConstraints", "critical,CA:TRUE");
    AddExt(r, r, "keyUsage", "critical,keyCertSign,cRLSign");
    AddExt(r, r, "subjectKeyIdentifier", "hash");
    if (X509_sign(r, ca_key, EVP_sha256()) <= 0) std::abort();
    root_name = "CN=EK root,O=dpuaudit fuzz";
    WriteFile(ca_dir + "/root.pem", AsBytes(Pem(Der(r))));

    X509Ptr leaf(X509_new());
    X509_set_version(leaf.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(leaf.get()), 2);
    SetValidity(leaf.get());
    X509_set_issuer_name(leaf.get(), name);
    X509_set_pubkey(leaf.get(), ek_key);
    AddExt(leaf.get(), r, "basicConstraints", "critical,CA:FALSE");
    AddExt(leaf.get(), r, "keyUsage", "critical,keyAgreement");
    AddExt(leaf.get(), r, "extendedKeyUsage", "2.23.133.8.1");  // TCG EK profile
    AddExt(leaf.get(), r, "authorityKeyIdentifier", "keyid:always");
    if (X509_sign(leaf.get(), ca_key, EVP_sha256()) <= 0) std::abort();
    ek_cert = Der(leaf.get());
    auto ok = attest::VerifyEkCertificate(ek_cert, ek, ca_dir, kNow);
    if (!ok.ok() || ok->issuer != root_name) std::abort();
  }
  ~World() {
    std::error_code ec;
    std::filesystem::remove_all(ca_dir, ec);
    std::filesystem::remove_all(fuzz_ca_dir, ec);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(ek_key);
  }
};

World& TheWorld() {
  static World* world = [] {
    ForbidPassphrasePrompts();
    static World w;
    return &w;
  }();
  return *world;
}

bool LooksPem(ByteView in) {
  std::string_view text(reinterpret_cast<const char*>(in.data()), in.size());
  return text.find("-----BEGIN") != std::string_view::npos;
}

int NoPassphrase(char*, int, int, void*) { return -1; }

// What OpenSSL makes of the input, as ParseCert reads it.
X509Ptr OpenSslParse(ByteView in) {
  if (LooksPem(in)) {
    BioPtr bio(BIO_new_mem_buf(in.data(), static_cast<int>(in.size())));
    return X509Ptr(
        bio ? PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)
            : nullptr);
  }
  const unsigned char* p = in.data();
  return X509Ptr(d2i_X509(nullptr, &p, static_cast<long>(in.size())));
}

void CheckVerdict(const StatusOr<attest::EkCertificateInfo>& r) {
  if (r.ok()) return;
  StatusCode c = r.status().code();
  Check(!r.status().message().empty() &&
        (c == StatusCode::kInvalidArgument ||
         c == StatusCode::kFailedPrecondition ||
         c == StatusCode::kUnauthenticated));
}

void Reissued(World& w, ByteView in) {
  X509Ptr x = OpenSslParse(in);
  ERR_clear_error();
  if (!x) return;
  int aki = X509_get_ext_by_NID(x.get(), NID_authority_key_identifier, -1);
  while (aki >= 0) {
    X509_EXTENSION_free(X509_delete_ext(x.get(), aki));
    aki = X509_get_ext_by_NID(x.get(), NID_authority_key_identifier, -1);
  }
  if (X509_set_pubkey(x.get(), w.ek_key) != 1 ||
      X509_set_issuer_name(x.get(), X509_get_subject_name(w.root.get())) != 1) {
    ERR_clear_error();
    return;
  }
  SetValidity(x.get());
  if (X509_sign(x.get(), w.ca_key, EVP_sha256()) <= 0) {
    ERR_clear_error();
    return;
  }
  Bytes der = Der(x.get());
  ERR_clear_error();
  if (der.empty()) return;
  auto r = attest::VerifyEkCertificate(der, w.ek, w.ca_dir, kNow);
  CheckVerdict(r);
  auto pem =
      attest::VerifyEkCertificate(AsBytes(Pem(der)), w.ek, w.ca_dir, kNow);
  // Same verdict; a re-encoding OpenSSL cannot read back is refused by
  // both, with the DER / PEM reader's own message.
  Check(pem.status().code() == r.status().code());
  if (r.status().code() != StatusCode::kInvalidArgument)
    Check(pem.status() == r.status());
  if (!r.ok()) return;
  Check(r->sha256 == Sha256Hex(der) && r->issuer == w.root_name);
  Check(r->chain_subjects.size() == 2 && r->chain_subjects[1] == w.root_name);
  Check(pem->sha256 == r->sha256 && pem->subject == r->subject &&
        pem->tpm_manufacturer == r->tpm_manufacturer &&
        pem->tpm_model == r->tpm_model && pem->tpm_version == r->tpm_version &&
        pem->chain_subjects == r->chain_subjects);
}

void AsCaFile(World& w, ByteView in) {
  std::error_code ec;
  for (const char* name : {"/input.pem", "/input.der"}) {
    std::filesystem::remove(w.fuzz_ca_dir + name, ec);
  }
  WriteFile(w.fuzz_ca_dir + (LooksPem(in) ? "/input.pem" : "/input.der"), in);
  auto r = attest::VerifyEkCertificate(w.ek_cert, w.ek, w.fuzz_ca_dir, kNow);
  Check(!r.ok());  // only the run-time root verifies it
  CheckVerdict(r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = TheWorld();
  ByteView in(data, data == nullptr ? 0 : size);
  auto direct = attest::VerifyEkCertificate(in, w.ek, w.ca_dir, kNow);
  Check(!direct.ok());  // the input cannot hold the run-time EK's key
  CheckVerdict(direct);
  Reissued(w, in);
  AsCaFile(w, in);
  return 0;
}
