// Fuzz target: the BMC path's stored and configured JSON
// (verifier/bmc_monitor.h ParseBmcConfig, verifier/bmc_state.h
// ParseBmcBinding and ParseBaseline). Every refusal carries a message; what
// parses re-serialises to something that parses to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "verifier/bmc_monitor.h"
#include "verifier/bmc_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace v = dpuaudit::verifier;
  std::string_view text(reinterpret_cast<const char*>(data), data == nullptr ? 0 : size);
  auto config = v::ParseBmcConfig(text, "/etc/dpuaudit");
  if (!config.ok() && config.status().message().empty()) std::abort();
  auto binding = v::ParseBmcBinding(text);
  if (!binding.ok() && binding.status().message().empty()) std::abort();
  if (binding.ok()) {
    auto again = v::ParseBmcBinding(v::BmcBindingJson(*binding));
    if (!again.ok() || !(*again == *binding)) std::abort();
  }
  auto baseline = v::ParseBaseline(text);
  if (!baseline.ok() && baseline.status().message().empty()) std::abort();
  if (baseline.ok()) {
    auto again = v::ParseBaseline(v::BaselineJson(*baseline));
    if (!again.ok() || !(*again == *baseline)) std::abort();
  }
  return 0;
}
