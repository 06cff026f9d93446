// Fuzz target: isolation::ParseLifecycleState and ParseSecureBootFuseState
// (mlxbf-bootctl sysfs, BLUEFIELD.md §4.3).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "isolation/boot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto state = dpuaudit::isolation::ParseLifecycleState(text);
  if (!state.ok() && state.status().message().empty()) std::abort();
  auto fuses = dpuaudit::isolation::ParseSecureBootFuseState(text);
  if (fuses.ok()) {
    if (fuses->slots.size() != dpuaudit::isolation::kSecureBootKeySlots) {
      std::abort();
    }
    if (dpuaudit::isolation::DescribeFuseState(*fuses).empty()) std::abort();
  } else if (fuses.status().message().empty()) {
    std::abort();
  }
  return 0;
}
