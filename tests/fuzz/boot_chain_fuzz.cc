// Fuzz target: dpuaudit::firmware::ParseBootChainJson, the verifier's strict parser of a
// report's agent-measured boot_chain section (boot partitions with their BFB
// layouts, OS boot artefacts). An accepted value must survive a round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "firmware/boot_chain.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), data == nullptr ? 0 : size);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto parsed = dpuaudit::firmware::ParseBootChainJson(j);
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) std::abort();
    return 0;
  }
  nlohmann::json again = dpuaudit::firmware::BootChainJson(*parsed);
  auto reparsed = dpuaudit::firmware::ParseBootChainJson(again);
  if (!reparsed.ok()) std::abort();
  if (dpuaudit::firmware::BootChainJson(*reparsed) != again) std::abort();
  return 0;
}
