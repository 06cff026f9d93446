// Fuzz target: dpuaudit::bluefield::ParseBfver (docs/bluefield.md#bfver).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/bfver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto b = dpuaudit::bluefield::ParseBfver(text);
  if (b.ok()) {
    if (b->atf_version.empty()) std::abort();
    (void)dpuaudit::bluefield::AtfBuildName(b->atf_build);
  } else if (b.status().message().empty()) {
    std::abort();
  }
  return 0;
}
