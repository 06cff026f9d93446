// Fuzz target: the P-256 key parsers of common/crypto.h and ES256
// verification. The same input is used four ways:
//  1. EcPublicKey::FromPem (enrolled keys re-read from the store, `--pubkey`
//     files given to the CLI);
//  2. EcPrivateKey::FromPem (the agent's key file);
//  3. EcPublicKey::FromAffine on the first 64 bytes (JWK "x" / "y");
//  4. the first 32 bytes as the private scalar of a PKCS#8 P-256 key built
//     here, so the private key parser sees every scalar edge case (0, n,
//     > n) without a key being committed;
// and finally as a signature (first 64 bytes) over the rest, which must not
// verify under a key generated at run time.
// Invariants: an accepted public key is on P-256 with 32-byte coordinates,
// survives ToPem -> FromPem and FromAffine unchanged, with the same
// thumbprint; an accepted private key re-reads from its own PEM to the
// same public key and its ES256 signatures verify under that public key;
// every error has a message. Encrypted PEM must fail without asking for a
// pass phrase (no prompt on the terminal, no read from stdin): a UI method
// that aborts is installed, so a prompt is a crash here.
#include <openssl/ui.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/crypto.h"

namespace {

using namespace dpuaudit;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckPublicKey(const EcPublicKey& key) {
  Check(key.x().size() == 32 && key.y().size() == 32 && key.pkey() != nullptr);
  std::string pem = key.ToPem();
  auto again = EcPublicKey::FromPem(pem);
  Check(again.ok() && *again == key && again->Thumbprint() == key.Thumbprint());
  auto affine = EcPublicKey::FromAffine(key.x(), key.y());
  Check(affine.ok() && *affine == key);
  Check(key.Thumbprint().size() == 43);  // base64url of 32 bytes
  Check(Es256Verifier::New(key).ok());
}

void CheckPrivateKey(const EcPrivateKey& key) {
  CheckPublicKey(key.public_key());
  auto again = EcPrivateKey::FromPem(key.ToPem());
  Check(again.ok() && again->public_key() == key.public_key());
  auto signer = Es256Signer::New(key);
  Check(signer.ok());
  static constexpr std::string_view kMessage = "dpuaudit keys_fuzz";
  auto sig = (*signer)->Sign(AsBytes(kMessage));
  Check(sig.ok() && sig->size() == 64);
  auto verifier = Es256Verifier::New(key.public_key());
  Check(verifier.ok());
  Check((*verifier)->Verify(*sig, AsBytes(kMessage)).ok());
  Check(!(*verifier)->Verify(*sig, AsBytes("another message")).ok());
}

// PKCS#8 PrivateKeyInfo (RFC 5208) holding an RFC 5915 ECPrivateKey on
// P-256 without the optional public key (OpenSSL derives it):
//   30 41                       SEQUENCE (65)
//     02 01 00                  version 0
//     30 13                     AlgorithmIdentifier
//       06 07 2a8648ce3d0201    id-ecPublicKey
//       06 08 2a8648ce3d030107  prime256v1
//     04 27                     OCTET STRING (39)
//       30 25                   ECPrivateKey
//         02 01 01              version 1
//         04 20 <32 bytes>      privateKey
std::string Pkcs8Pem(ByteView scalar) {
  Bytes der = {0x30, 0x41, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07,
               0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
               0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04,
               0x27, 0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20};
  der.insert(der.end(), scalar.begin(), scalar.end());
  std::string b64 = Base64Encode(der);
  std::string pem = "-----BEGIN PRIVATE KEY-----\n";
  for (size_t i = 0; i < b64.size(); i += 64) pem += b64.substr(i, 64) + "\n";
  pem += "-----END PRIVATE KEY-----\n";
  return pem;
}

int AbortOnPrompt(UI*, UI_STRING*) { std::abort(); }

// Any pass-phrase prompt in this process (OpenSSL's default UI) aborts.
void ForbidPassphrasePrompts() {
  static const bool installed = [] {
    UI_METHOD* method = UI_create_method("dpuaudit fuzz: no prompts");
    if (method == nullptr || UI_method_set_reader(method, AbortOnPrompt) != 0) {
      std::abort();
    }
    UI_set_default_method(method);  // kept for the life of the process
    return true;
  }();
  (void)installed;
}

const Verifier& RunTimeVerifier() {
  // Generated once per process: no key material is committed.
  static const std::unique_ptr<Es256Verifier> verifier = [] {
    auto key = EcPrivateKey::Generate();
    if (!key.ok()) std::abort();
    auto v = Es256Verifier::New(key->public_key());
    if (!v.ok()) std::abort();
    return std::move(v).value();
  }();
  return *verifier;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ForbidPassphrasePrompts();
  ByteView raw(data, data == nullptr ? 0 : size);
  std::string_view text(reinterpret_cast<const char*>(raw.data()), raw.size());

  auto pub = EcPublicKey::FromPem(text);
  if (pub.ok()) {
    CheckPublicKey(*pub);
  } else {
    Check(!pub.status().message().empty());
  }

  auto priv = EcPrivateKey::FromPem(text);
  if (priv.ok()) {
    CheckPrivateKey(*priv);
  } else {
    Check(!priv.status().message().empty());
  }

  if (raw.size() >= 64) {
    auto affine =
        EcPublicKey::FromAffine(raw.subspan(0, 32), raw.subspan(32, 32));
    if (affine.ok()) {
      CheckPublicKey(*affine);
    } else {
      Check(affine.status().code() == StatusCode::kInvalidArgument &&
            !affine.status().message().empty());
    }
  }

  if (raw.size() >= 32) {
    auto scalar = EcPrivateKey::FromPem(Pkcs8Pem(raw.subspan(0, 32)));
    if (scalar.ok()) {
      CheckPrivateKey(*scalar);
    } else {
      Check(!scalar.status().message().empty());
    }
  }

  // A signature from the input must not verify under a fresh key.
  ByteView sig = raw.subspan(0, raw.size() < 64 ? raw.size() : 64);
  Status v = RunTimeVerifier().Verify(sig, raw.subspan(sig.size()));
  Check(!v.ok() && v.code() == StatusCode::kUnauthenticated);
  return 0;
}
