// Fuzz target: dpuaudit::firmware::ParseMlxbfBootctl (docs/bluefield.md#mlxbf-bootctl).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "firmware/boot_partitions.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto b = dpuaudit::firmware::ParseMlxbfBootctl(text);
  if (!b.ok()) {
    if (b.status().message().empty()) std::abort();
    if (b.status().code() != dpuaudit::StatusCode::kInvalidArgument) {
      std::abort();
    }
    return 0;
  }
  const std::set<std::string> parts = {"/dev/mmcblk0boot0",
                                       "/dev/mmcblk0boot1"};
  if (parts.count(b->primary) == 0 || parts.count(b->backup) == 0 ||
      b->primary == b->backup) {
    std::abort();
  }
  std::set<std::string> keys = {"primary", "backup"};
  if (!b->lifecycle_state.empty()) keys.insert("lifecycle state");
  for (const auto& [key, value] : b->other) {
    if (key.empty() || !keys.insert(key).second) std::abort();
  }
  return 0;
}
