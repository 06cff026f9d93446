#include "common/crypto.h"

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "common/digest.h"
#include "common/files.h"

namespace dpuaudit {
namespace {

std::shared_ptr<EVP_PKEY> Share(EvpPkeyPtr p) {
  return std::shared_ptr<EVP_PKEY>(p.release(), OsslFree<EVP_PKEY_free>());
}

}  // namespace

int NoPemPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/,
                    void* /*userdata*/) {
  return -1;  // no pass phrase: PEM_do_header fails with "bad password read"
}

Status SslStatus(std::string_view what, StatusCode code) {
  std::string msg(what);
  unsigned long err;
  bool first = true;
  while ((err = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(err, buf, sizeof buf);
    msg += first ? " (" : "; ";
    msg += buf;
    first = false;
  }
  if (!first) msg += ")";
  msg += ".";
  return Status(code, msg);
}

Sha256Digest Sha256(ByteView data) {
  Sha256Digest out{};
  thread_local MdCtxPtr ctx(EVP_MD_CTX_new());
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), DigestMd(DigestAlg::kSha256), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 || len != 32) {
    std::abort();  // only on allocation failure inside OpenSSL
  }
  return out;
}

StatusOr<Sha256Digest> HmacSha256(ByteView key, ByteView data) {
  Sha256Digest out{};
  unsigned int len = 0;
  static const uint8_t kEmpty = 0;
  if (HMAC(EVP_sha256(), key.empty() ? &kEmpty : key.data(),
           static_cast<int>(key.size()), data.data(), data.size(), out.data(),
           &len) == nullptr ||
      len != out.size()) {
    return InternalError("HMAC-SHA256 failed.");
  }
  return out;
}

std::string Sha256Hex(ByteView data) {
  auto d = Sha256(data);
  return HexEncode(d);
}

StatusOr<Bytes> RandomBytes(size_t n) {
  Bytes out(n);
  if (n > 0 && RAND_bytes(out.data(), static_cast<int>(n)) != 1) {
    return SslStatus("RAND_bytes failed");
  }
  return out;
}

StatusOr<EcPublicKey> EcPublicKey::FromPkey(EvpPkeyPtr pkey) {
  if (!pkey || EVP_PKEY_get_base_id(pkey.get()) != EVP_PKEY_EC) {
    return InvalidArgumentError("public key is not an EC key (expected P-256).");
  }
  char group[64] = {0};
  size_t glen = 0;
  if (EVP_PKEY_get_utf8_string_param(pkey.get(), OSSL_PKEY_PARAM_GROUP_NAME,
                                     group, sizeof group, &glen) != 1 ||
      std::string_view(group) != "prime256v1") {
    ERR_clear_error();
    return InvalidArgumentError(std::string("EC key is on curve '") + group +
                                "', expected P-256 (prime256v1).");
  }
  BIGNUM* x = nullptr;
  BIGNUM* y = nullptr;
  if (EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_EC_PUB_X, &x) != 1 ||
      EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_EC_PUB_Y, &y) != 1) {
    BN_free(x);
    BN_free(y);
    return SslStatus("reading EC public point", StatusCode::kInvalidArgument);
  }
  BnPtr bx(x), by(y);
  EcPublicKey key;
  key.x_.assign(32, 0);
  key.y_.assign(32, 0);
  BN_bn2binpad(bx.get(), key.x_.data(), 32);
  BN_bn2binpad(by.get(), key.y_.data(), 32);
  key.pkey_ = Share(std::move(pkey));
  return key;
}

StatusOr<EcPublicKey> EcPublicKey::FromAffine(ByteView x, ByteView y) {
  if (x.size() != 32 || y.size() != 32) {
    return InvalidArgumentError("P-256 coordinates must be 32 bytes each, got " +
                                std::to_string(x.size()) + " and " +
                                std::to_string(y.size()) + ".");
  }
  Bytes point(65);
  point[0] = 0x04;  // SEC1 uncompressed
  std::memcpy(point.data() + 1, x.data(), 32);
  std::memcpy(point.data() + 33, y.data(), 32);
  OsslParamBldPtr bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME,
                                      "prime256v1", 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY,
                                       point.data(), point.size()) != 1) {
    return SslStatus("building EC key parameters");
  }
  OsslParamPtr params(
      OSSL_PARAM_BLD_to_param(bld.get()));
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return SslStatus("EC point is not a valid P-256 public key",
                     StatusCode::kInvalidArgument);
  }
  EvpPkeyPtr pkey(raw);
  // EVP_PKEY_fromdata does not always check the point is on the curve. The
  // quick check (not infinity, coordinates in range, on the curve) is full
  // validation on P-256: its cofactor is 1, so every such point has order n
  // and the n*Q = O test EVP_PKEY_public_check adds (a scalar
  // multiplication; SEC 1 v2 §3.2.2.1 step 4) cannot fail.
  PkeyCtxPtr check(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey.get(), nullptr));
  if (!check || EVP_PKEY_public_check_quick(check.get()) != 1) {
    return SslStatus("EC point is not on P-256", StatusCode::kInvalidArgument);
  }
  return FromPkey(std::move(pkey));
}

namespace {

// The DER of a P-256 SubjectPublicKeyInfo (RFC 5480 §2) up to the 65-byte
// uncompressed point: SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 },
// BIT STRING (0 unused bits) 04 || x || y }.
constexpr uint8_t kP256SpkiPrefix[] = {
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04};
constexpr std::string_view kPubBegin = "-----BEGIN PUBLIC KEY-----\n";
constexpr std::string_view kPubEnd = "-----END PUBLIC KEY-----\n";

// x || y of `pem` when it is exactly the PEM OpenSSL writes for a P-256 key
// (PEM_write_bio_PUBKEY: the two armour lines, base64 in lines of at most 64
// characters, '\n' endings): the form every stored node key has. Anything
// else is nullopt and goes to OpenSSL's general PEM reader.
std::optional<Bytes> CanonicalP256PemPoint(std::string_view pem) {
  if (pem.size() < kPubBegin.size() + kPubEnd.size() || pem.size() > 256 ||
      pem.substr(0, kPubBegin.size()) != kPubBegin ||
      pem.substr(pem.size() - kPubEnd.size()) != kPubEnd) {
    return std::nullopt;
  }
  std::string_view body =
      pem.substr(kPubBegin.size(), pem.size() - kPubBegin.size() - kPubEnd.size());
  std::string b64;
  b64.reserve(body.size());
  size_t line = 0;
  for (char c : body) {
    if (c == '\n') {
      if (line == 0 || line > 64) return std::nullopt;
      line = 0;
      continue;
    }
    b64.push_back(c);
    ++line;
  }
  if (line != 0) return std::nullopt;  // the last base64 line ends in '\n'
  auto der = Base64Decode(b64);
  if (!der.ok() || der->size() != sizeof kP256SpkiPrefix + 64 ||
      std::memcmp(der->data(), kP256SpkiPrefix, sizeof kP256SpkiPrefix) != 0) {
    return std::nullopt;
  }
  return Bytes(der->begin() + sizeof kP256SpkiPrefix, der->end());
}

}  // namespace

StatusOr<EcPublicKey> EcPublicKey::FromPem(std::string_view pem) {
  // Fast path for the canonical form (the node keys the verifier decodes on
  // a cache miss): OpenSSL 3's PEM reader tries every decoder it has, which
  // costs ~10x FromAffine. Same key, same on-curve check.
  if (std::optional<Bytes> point = CanonicalP256PemPoint(pem)) {
    return FromAffine(ByteView(point->data(), 32), ByteView(point->data() + 32, 32));
  }
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* raw =
      bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, NoPemPassphrase, nullptr)
          : nullptr;
  if (raw == nullptr) {
    return SslStatus("public key PEM does not parse", StatusCode::kInvalidArgument);
  }
  return FromPkey(EvpPkeyPtr(raw));
}

std::string EcPublicKey::ToPem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), pkey_.get()) != 1) return {};
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string EcPublicKey::Thumbprint() const {
  // RFC 7638 §3.2: members in lexicographic order, no whitespace.
  std::string canonical = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"" +
                          Base64UrlEncode(x_) + "\",\"y\":\"" +
                          Base64UrlEncode(y_) + "\"}";
  auto d = Sha256(AsBytes(canonical));
  return Base64UrlEncode(d);
}

StatusOr<EcPrivateKey> EcPrivateKey::Generate() {
  EVP_PKEY* raw = EVP_EC_gen("P-256");
  if (raw == nullptr) return SslStatus("generating a P-256 key");
  EcPrivateKey key;
  key.pkey_ = Share(EvpPkeyPtr(raw));
  // Derive the public half through a PEM round trip of the public key only.
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), raw) != 1) {
    return SslStatus("exporting the public key");
  }
  EVP_PKEY* pub = PEM_read_bio_PUBKEY(bio.get(), nullptr, NoPemPassphrase, nullptr);
  if (pub == nullptr) return SslStatus("re-reading the public key");
  DPA_ASSIGN_OR_RETURN(key.public_key_, EcPublicKey::FromPkey(EvpPkeyPtr(pub)));
  return key;
}

StatusOr<EcPrivateKey> EcPrivateKey::FromPem(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* raw =
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPemPassphrase, nullptr)
          : nullptr;
  if (raw == nullptr) {
    return SslStatus("private key PEM does not parse", StatusCode::kInvalidArgument);
  }
  EvpPkeyPtr owned(raw);
  BioPtr out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_PUBKEY(out.get(), raw) != 1) {
    return SslStatus("exporting the public key");
  }
  EVP_PKEY* pub = PEM_read_bio_PUBKEY(out.get(), nullptr, NoPemPassphrase, nullptr);
  if (pub == nullptr) return SslStatus("re-reading the public key");
  EcPrivateKey key;
  DPA_ASSIGN_OR_RETURN(key.public_key_, EcPublicKey::FromPkey(EvpPkeyPtr(pub)));
  key.pkey_ = Share(std::move(owned));
  return key;
}

std::string EcPrivateKey::ToPem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), pkey_.get(), nullptr, nullptr,
                                       0, nullptr, nullptr) != 1) {
    return {};
  }
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

StatusOr<EcPrivateKey> EcPrivateKey::LoadFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return NotFoundError("key file " + path + ": " + std::strerror(errno) + ".");
  }
  if ((st.st_mode & 077) != 0) {
    return PermissionDeniedError("key file " + path +
                                 " is readable by group or others; chmod 600 it.");
  }
  DPA_ASSIGN_OR_RETURN(Bytes pem, ReadFileLimited(path, 64 * 1024));
  auto key = FromPem(ToString(pem));
  if (!key.ok()) return key.status().WithPrefix("key file " + path);
  return key;
}

Status EcPrivateKey::SaveFile(const std::string& path) const {
  return WriteNewFile(path, AsBytes(ToPem()), 0600);
}

StatusOr<EcPrivateKey> EcPrivateKey::LoadOrCreateFile(const std::string& path,
                                                      bool* created) {
  if (created) *created = false;
  if (::access(path.c_str(), F_OK) == 0) return LoadFile(path);
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return UnavailableError("creating " + parent.string() + ": " + ec.message() + ".");
    }
  }
  DPA_ASSIGN_OR_RETURN(EcPrivateKey key, Generate());
  DPA_RETURN_IF_ERROR(key.SaveFile(path));
  if (created) *created = true;
  return key;
}

StatusOr<std::unique_ptr<Es256Signer>> Es256Signer::New(const EcPrivateKey& key) {
  if (key.pkey() == nullptr) return InvalidArgumentError("empty private key.");
  EVP_PKEY_up_ref(key.pkey());
  return std::unique_ptr<Es256Signer>(
      new Es256Signer(Share(EvpPkeyPtr(key.pkey()))));
}

StatusOr<Bytes> Es256Signer::Sign(ByteView data) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  size_t der_len = 0;
  if (!ctx ||
      EVP_DigestSignInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr,
                            pkey_.get(), nullptr) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &der_len, data.data(), data.size()) != 1) {
    return SslStatus("ES256 sign");
  }
  Bytes der(der_len);
  if (EVP_DigestSign(ctx.get(), der.data(), &der_len, data.data(), data.size()) != 1) {
    return SslStatus("ES256 sign");
  }
  const uint8_t* p = der.data();
  EcdsaSigPtr sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der_len)));
  if (!sig) return SslStatus("ES256 sign: DER decode");
  Bytes out(64);
  BN_bn2binpad(ECDSA_SIG_get0_r(sig.get()), out.data(), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig.get()), out.data() + 32, 32);
  return out;
}

StatusOr<std::unique_ptr<Es256Verifier>> Es256Verifier::New(const EcPublicKey& key) {
  if (key.pkey() == nullptr) return InvalidArgumentError("empty public key.");
  return std::unique_ptr<Es256Verifier>(new Es256Verifier(key));
}

Status Es256Verifier::Verify(ByteView signature, ByteView data) const {
  if (signature.size() != 64) {
    return UnauthenticatedError("ES256 signature must be 64 bytes (r||s), got " +
                                std::to_string(signature.size()) + ".");
  }
  EcdsaSigPtr sig(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(signature.data(), 32, nullptr);
  BIGNUM* s = BN_bin2bn(signature.data() + 32, 32, nullptr);
  if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return SslStatus("ES256 verify: building signature");
  }
  unsigned char* der = nullptr;
  int der_len = i2d_ECDSA_SIG(sig.get(), &der);
  if (der_len <= 0) return SslStatus("ES256 verify: DER encode");
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> der_owner(
      der, [](unsigned char* q) { OPENSSL_free(q); });
  MdCtxPtr ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit_ex(ctx.get(), nullptr, "SHA256", nullptr,
                                      nullptr, key_.pkey(), nullptr) != 1) {
    return SslStatus("ES256 verify init");
  }
  int rc = EVP_DigestVerify(ctx.get(), der, static_cast<size_t>(der_len),
                            data.data(), data.size());
  ERR_clear_error();
  if (rc != 1) return UnauthenticatedError("ES256 signature does not verify.");
  return OkStatus();
}

}  // namespace dpuaudit
