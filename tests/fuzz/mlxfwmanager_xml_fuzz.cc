// Fuzz target: dpuaudit::bluefield::ParseMlxfwmanagerXml
// (docs/bluefield.md#mlxfwmanager, pugixml).
// Invariants as for the text form; names never contain '_' (turned back
// into spaces); an error has a message.
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
  auto d = dpuaudit::bluefield::ParseMlxfwmanagerXml(text);
  if (!d.ok()) {
    if (d.status().message().empty()) std::abort();
    return 0;
  }
  if (d->empty() || size > (1u << 20)) std::abort();
  for (const auto& dev : *d) {
    if (dev.psid.empty() || dev.Find("FW") == nullptr) std::abort();
    std::set<std::string> names;
    for (const auto& r : dev.versions) {
      if (r.name.empty() || r.current.empty() || r.available.empty()) {
        std::abort();
      }
      if (r.name.find('_') != std::string::npos) std::abort();
      if (!names.insert(r.name).second) std::abort();
    }
  }
  return 0;
}
