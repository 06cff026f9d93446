// Fuzzes DecodeSignature (TPMT_SIGNATURE via Tss2_MU). Properties: never
// crashes; only ECDSA / RSASSA / RSAPSS decode, with the fields of their
// kind filled and within TPM2B bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "attest/tpm_structs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  auto s = attest::DecodeSignature(ByteView(data, size));
  if (!s.ok()) {
    if (s.status().code() != StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (s->sig_alg == 0x0018) {
    if (!s->rsa_sig.empty() || s->ecdsa_r.size() > 128 ||
        s->ecdsa_s.size() > 128) {
      std::abort();
    }
  } else if (s->sig_alg == 0x0014 || s->sig_alg == 0x0016) {
    if (!s->ecdsa_r.empty() || !s->ecdsa_s.empty() || s->rsa_sig.size() > 512) {
      std::abort();
    }
  } else {
    std::abort();
  }
  return 0;
}
