// Fuzzes ParseTpmClaims over arbitrary JSON. Properties: never throws or
// crashes; whatever parses survives TpmClaimsJson -> ParseTpmClaims
// unchanged, and the JSON form is a fixed point.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "attest/tpm_claims.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  auto j = nlohmann::json::parse(data, data + size, nullptr,
                                 /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto c = attest::ParseTpmClaims(j);
  if (!c.ok()) return 0;
  nlohmann::json out = attest::TpmClaimsJson(*c);
  auto again = attest::ParseTpmClaims(out);
  if (!again.ok() || !(*again == *c)) std::abort();
  if (attest::TpmClaimsJson(*again) != out) std::abort();
  return 0;
}
