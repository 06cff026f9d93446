// Fuzz target: attest/credential.h on untrusted bytes.
//  1. ParseTpm2ToolsCredential (the `tpm2_makecredential -o` file: magic,
//     version, TPM2B_ID_OBJECT, TPM2B_ENCRYPTED_SECRET) on the whole input.
//     An accepted file is rewritten byte for byte by WriteTpm2ToolsCredential
//     and both parts keep their TPM2B size prefix.
//  2. MakeCredential with an EK decoded from the input (the verifier does
//     this with the EK of an enrollment request): the input is a
//     TPM2B_PUBLIC followed by the seed (RSA) or ephemeral scalar (ECC) for
//     MakeCredentialDeterministic. What is made has the sizes Part 1 §24
//     gives (TPM2B_ID_OBJECT = TPM2B_DIGEST(HMAC) || encrypted
//     TPM2B_DIGEST(credential); the secret is an RSA ciphertext of the
//     modulus size or a TPMS_ECC_POINT), is deterministic for a given seed,
//     and round-trips through the tpm2-tools file format. Errors are
//     INVALID_ARGUMENT / FAILED_PRECONDITION / UNIMPLEMENTED with a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "attest/credential.h"
#include "attest/tpm_structs.h"
#include "attest/tpm_types.h"
#include "common/bytes.h"

namespace {

using namespace dpuaudit;

void Check(bool ok) {
  if (!ok) std::abort();
}

bool ExpectedError(const Status& s) {
  return !s.ok() && !s.message().empty() &&
         (s.code() == StatusCode::kInvalidArgument ||
          s.code() == StatusCode::kFailedPrecondition ||
          s.code() == StatusCode::kUnimplemented);
}

size_t Be16At(const Bytes& b, size_t at) {
  return static_cast<size_t>(b[at] << 8 | b[at + 1]);
}

// A TPM2B whose size prefix covers exactly the rest of `b`.
bool IsTpm2b(const Bytes& b) {
  return b.size() >= 2 && Be16At(b, 0) == b.size() - 2;
}

void CheckFileRoundTrip(const attest::MadeCredential& made) {
  Bytes file = attest::WriteTpm2ToolsCredential(made);
  auto parsed = attest::ParseTpm2ToolsCredential(file);
  Check(parsed.ok() && parsed->credential_blob == made.credential_blob &&
        parsed->encrypted_secret == made.encrypted_secret);
}

// The 34-byte sha256 name of some AK (its value does not matter here).
Bytes AkName() {
  Bytes name = {0x00, 0x0b};
  for (uint8_t i = 0; i < 32; ++i)
    name.push_back(static_cast<uint8_t>(0xa0 + i));
  return name;
}

void MakeCredentialProperties(ByteView in) {
  if (in.size() < 2) return;
  size_t public_size = 2 + static_cast<size_t>(in[0] << 8 | in[1]);
  if (public_size > in.size()) return;
  auto ek = attest::TpmPublic::Decode(in.subspan(0, public_size));
  if (!ek.ok()) return;
  ByteView seed = in.subspan(public_size);
  const Bytes name = AkName();
  const size_t hlen = *attest::HashAlgDigestSize(ek->name_alg());
  // The largest credential the EK's nameAlg allows, and one byte more.
  Bytes credential(hlen, 0x5a);
  auto made = attest::MakeCredential(*ek, credential, name);
  if (!made.ok()) {
    Check(ExpectedError(made.status()));
    return;
  }
  Check(IsTpm2b(made->credential_blob) && IsTpm2b(made->encrypted_secret));
  // size || TPM2B_DIGEST(outerHMAC, nameAlg) || AES-CFB(TPM2B_DIGEST(cred))
  Check(made->credential_blob.size() ==
        2 + (2 + hlen) + (2 + credential.size()));
  Check(Be16At(made->credential_blob, 2) == hlen);
  if (ek->type() == attest::TpmPublic::Type::kRsa) {
    Check(made->encrypted_secret.size() == 2 + size_t{ek->rsa_bits()} / 8);
  } else {
    size_t coord = ek->ecc_curve() == 0x0003 ? 32 : 48;
    Check(made->encrypted_secret.size() == 2 + 2 * (2 + coord));
    Check(Be16At(made->encrypted_secret, 2) == coord);
  }
  CheckFileRoundTrip(*made);

  Bytes too_long(hlen + 1, 0x5a);
  auto refused = attest::MakeCredential(*ek, too_long, name);
  Check(refused.status().code() == StatusCode::kInvalidArgument);
  auto bad_name = attest::MakeCredential(*ek, credential, seed);
  if (bad_name.ok()) {
    // Only a well-formed name (nameAlg || digest) is accepted.
    auto alg = seed.size() >= 2
                   ? attest::HashAlgDigestSize(
                         static_cast<uint16_t>(seed[0] << 8 | seed[1]))
                   : std::nullopt;
    Check(alg.has_value() && seed.size() == 2 + *alg);
  } else {
    Check(ExpectedError(bad_name.status()));
  }

  // Known-answer form: the input's tail is the seed / ephemeral scalar.
  auto first = attest::MakeCredentialDeterministic(*ek, credential, name, seed);
  if (!first.ok()) {
    Check(ExpectedError(first.status()));
    return;
  }
  CheckFileRoundTrip(*first);
  // The ID object depends only on the seed; for ECC the secret (the
  // ephemeral point) does too, while RSA-OAEP pads with fresh randomness.
  auto second =
      attest::MakeCredentialDeterministic(*ek, credential, name, seed);
  Check(second.ok() && second->credential_blob == first->credential_blob);
  if (ek->type() == attest::TpmPublic::Type::kEcc) {
    Check(second->encrypted_secret == first->encrypted_secret);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteView in(data, data == nullptr ? 0 : size);
  auto file = attest::ParseTpm2ToolsCredential(in);
  if (file.ok()) {
    Check(attest::WriteTpm2ToolsCredential(*file) ==
          Bytes(in.begin(), in.end()));
    Check(IsTpm2b(file->credential_blob) && IsTpm2b(file->encrypted_secret));
  } else {
    Check(file.status().code() == StatusCode::kInvalidArgument &&
          !file.status().message().empty());
  }
  MakeCredentialProperties(in);
  return 0;
}
