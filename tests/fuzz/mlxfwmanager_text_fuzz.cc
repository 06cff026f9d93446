// Fuzz target: dpuaudit::bluefield::ParseMlxfwmanagerText
// (docs/bluefield.md#mlxfwmanager).
// Invariants: an OK result has at least one device, each with a PSID and an
// "FW" row; row names are unique and every field is non-empty; an error has
// a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "bluefield/mlxfwmanager.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto d = dpuaudit::bluefield::ParseMlxfwmanagerText(text);
  if (!d.ok()) {
    if (d.status().message().empty()) std::abort();
    return 0;
  }
  if (d->empty()) std::abort();
  for (const auto& dev : *d) {
    if (dev.psid.empty() || dev.Find("FW") == nullptr) std::abort();
    std::set<std::string> names;
    for (const auto& r : dev.versions) {
      if (r.name.empty() || r.current.empty() || r.available.empty()) {
        std::abort();
      }
      if (!names.insert(r.name).second) std::abort();
      if (dev.Find(r.name) != &r) std::abort();
    }
  }
  return 0;
}
