// Fuzzes TpmPublic::Decode (TPM2B_PUBLIC via Tss2_MU, then OpenSSL key
// import). Properties: never crashes; a decoded key is RSA or ECC with a
// usable EVP_PKEY, its name is nameAlg || digest of the right size, it
// keeps the exact input, DecodeTpmt of the inner bytes agrees, and a second
// decode gives the same answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "attest/tpm_structs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  ByteView in(data, size);
  auto p = attest::TpmPublic::Decode(in);
  // The same bytes always get the same answer (OpenSSL's RSA check used
  // random Miller-Rabin bases; ours does not).
  auto again = attest::TpmPublic::Decode(in);
  if (again.ok() != p.ok()) std::abort();
  if (!p.ok()) {
    if (p.status().code() != StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  auto digest = attest::HashAlgDigestSize(p->name_alg());
  if (!digest.has_value() || p->name().size() != 2 + *digest) std::abort();
  if (p->marshalled() != Bytes(in.begin(), in.end())) std::abort();
  if (p->pkey() == nullptr || p->ToPem().empty()) std::abort();
  if (!p->SameKey(p->pkey())) std::abort();
  auto inner = attest::TpmPublic::DecodeTpmt(in.subspan(2));
  if (!inner.ok() || inner->name() != p->name()) std::abort();
  (void)attest::CheckAkAttributes(*p);
  return 0;
}
