// Fuzzes the JWK / JWK Set parsers (enrollment bodies carry a JWK; the CLI
// reads a verifier's JWKS). Property: a key that parses round-trips through
// PublicJwk to the same key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "report/jws.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  auto key = report::ParsePublicJwk(j);
  if (key.ok()) {
    auto again = report::ParsePublicJwk(report::PublicJwk(*key, "k"));
    if (!again.ok() || !(*again == *key)) std::abort();
  }
  auto keys = report::ParseJwks(j);
  if (keys.ok()) {
    auto again = report::ParseJwks(report::Jwks(*keys));
    if (!again.ok() || again->size() != keys->size()) std::abort();
  }
  return 0;
}
