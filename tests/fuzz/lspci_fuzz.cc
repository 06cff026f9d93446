// Fuzz target: dpuaudit::bluefield::ParseLspciVpd (lspci -vvv VPD block).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/lspci.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto v = dpuaudit::bluefield::ParseLspciVpd(text);
  if (v.ok()) {
    // Fields come only from a VPD block; named fields mirror their keyword.
    if (!v->has_vpd_capability && !v->fields.empty()) std::abort();
    if (v->serial_number != v->Value("SN")) std::abort();
    if (v->part_number != v->Value("PN")) std::abort();
    if (v->fields.empty() && v->product_name.empty() && v->note.empty()) {
      std::abort();
    }
    for (const auto& f : v->fields) {
      if (f.keyword.size() != 2 || f.line <= 0) std::abort();
    }
  } else if (v.status().message().empty()) {
    std::abort();
  }
  return 0;
}
