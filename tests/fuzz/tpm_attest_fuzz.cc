// Fuzzes DecodeAttest (TPMS_ATTEST via Tss2_MU). Properties: never crashes;
// what decodes fits the TPM2B bounds and selects only PCRs a 4-byte bitmap
// can hold, banks at most once each; decoding is deterministic.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "attest/tpm_structs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  ByteView in(data, size);
  auto a = attest::DecodeAttest(in);
  if (!a.ok()) {
    if (a.status().code() != StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (a->extra_data.size() > 64 || a->pcr_digest.size() > 64 ||
      a->qualified_signer.size() > 68) {
    std::abort();
  }
  if (a->pcr_select.size() > 16) std::abort();
  for (const auto& [alg, pcrs] : a->pcr_select) {
    if (pcrs.empty() || *pcrs.rbegin() >= 32) std::abort();
  }
  auto again = attest::DecodeAttest(in);
  if (!again.ok() || again->pcr_select != a->pcr_select ||
      again->extra_data != a->extra_data) {
    std::abort();
  }
  return 0;
}
