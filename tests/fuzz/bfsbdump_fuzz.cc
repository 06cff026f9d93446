// Fuzz target: dpuaudit::bluefield::ParseBfsbdump (docs/bluefield.md#bfsbdump).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/boot_tools.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto b = dpuaudit::bluefield::ParseBfsbdump(text);
  if (b.ok()) {
    // Guaranteed by the parser: Secure Boot present, Key iff Enabled.
    if (!b->secure_boot) std::abort();
    if ((*b->secure_boot == "Enabled") != b->secure_boot_key.has_value()) {
      std::abort();
    }
  } else if (b.status().message().empty()) {
    std::abort();
  }
  return 0;
}
