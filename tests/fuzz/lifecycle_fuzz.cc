// Fuzz target: dpuaudit::bluefield::ParseLifecycleState and ParseSecureBootFuseState
// (mlxbf-bootctl sysfs, docs/bluefield.md#lifecycle).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/boot_tools.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto state = dpuaudit::bluefield::ParseLifecycleState(text);
  if (!state.ok() && state.status().message().empty()) std::abort();
  auto fuses = dpuaudit::bluefield::ParseSecureBootFuseState(text);
  if (fuses.ok()) {
    if (fuses->slots.size() != dpuaudit::bluefield::kSecureBootKeySlots) {
      std::abort();
    }
    if (dpuaudit::bluefield::DescribeFuseState(*fuses).empty()) std::abort();
  } else if (fuses.status().message().empty()) {
    std::abort();
  }
  return 0;
}
