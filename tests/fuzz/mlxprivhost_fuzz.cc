// Fuzz target: dpuaudit::bluefield::ParseMlxprivhostQuery
// (docs/bluefield.md#mlxprivhost).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/mlxprivhost.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto q = dpuaudit::bluefield::ParseMlxprivhostQuery(text);
  if (q.ok()) {
    // Invariants of a successful parse.
    if (q->hosts.empty()) std::abort();
    for (const auto& h : q->hosts) {
      if (q->full != h.host_index.has_value()) std::abort();
      (void)dpuaudit::bluefield::PrivilegeLevelName(h.level);
    }
  } else if (q.status().message().empty()) {
    std::abort();
  }
  return 0;
}
