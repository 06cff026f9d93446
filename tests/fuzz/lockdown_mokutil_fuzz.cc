// Fuzz target: dpuaudit::bluefield::ParseKernelLockdown (/sys/kernel/security/lockdown)
// and ParseMokutilSbState (`mokutil --sb-state`). Property: never crash, and
// every error carries a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/boot_tools.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto lockdown = dpuaudit::bluefield::ParseKernelLockdown(text);
  if (!lockdown.ok() && lockdown.status().message().empty()) std::abort();
  auto sb = dpuaudit::bluefield::ParseMokutilSbState(text);
  if (!sb.ok() && sb.status().message().empty()) std::abort();
  return 0;
}
