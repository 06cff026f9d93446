// Fuzz target: dpuaudit::bluefield::ParseMstStatus (docs/bluefield.md#mst-devices).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/mst_status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto s = dpuaudit::bluefield::ParseMstStatus(text);
  if (s.ok()) {
    for (const auto& d : s->devices) {
      if (d.mst_path.rfind("/dev/mst/", 0) != 0 || d.pci.empty()) {
        std::abort();
      }
    }
  } else if (s.status().message().empty()) {
    std::abort();
  }
  return 0;
}
