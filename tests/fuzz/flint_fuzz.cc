// Fuzz target: dpuaudit::bluefield::ParseFlintQuery (docs/bluefield.md#flint).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/flint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto q = dpuaudit::bluefield::ParseFlintQuery(text);
  if (q.ok()) {
    if (q->fields.empty()) std::abort();
    for (const auto& f : q->fields) {
      if (q->Find(f.key) == nullptr || f.key.empty()) std::abort();
    }
    (void)dpuaudit::bluefield::FirstToken(q->Value("Base MAC"));
  } else if (q.status().message().empty()) {
    std::abort();
  }
  return 0;
}
