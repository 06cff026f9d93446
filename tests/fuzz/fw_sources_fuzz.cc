// Fuzz target: dpuaudit::bluefield::ParseSysfsFwVer and dpuaudit::bluefield::ParseMlnxRelease
// (docs/bluefield.md#sysfs-fw-ver, #mlnx-release), both fed the same input.
// Invariants: an accepted fw_ver is the input minus at most one '\n' and is
// orderable as "nic-fw" with three parts; an accepted mlnx-release is the
// input minus at most one '\n' and only printable ASCII without spaces.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/fw_sources.h"
#include "bluefield/version.h"

namespace {

bool IsInputMinusNewline(std::string_view input, std::string_view out) {
  return input == out ||
         (input.size() == out.size() + 1 &&
          input.substr(0, out.size()) == out && input.back() == '\n');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto fw = dpuaudit::bluefield::ParseSysfsFwVer(text);
  if (fw.ok()) {
    if (!IsInputMinusNewline(text, *fw)) std::abort();
    auto v = dpuaudit::bluefield::ParseComparableVersion("nic-fw", *fw);
    if (!v.ok() || v->parts.size() != 3) std::abort();
  } else if (fw.status().message().empty()) {
    std::abort();
  }
  auto rel = dpuaudit::bluefield::ParseMlnxRelease(text);
  if (rel.ok()) {
    if (rel->empty() || !IsInputMinusNewline(text, *rel)) std::abort();
    for (char c : *rel) {
      if (c <= 0x20 || c >= 0x7f) std::abort();
    }
  } else if (rel.status().message().empty()) {
    std::abort();
  }
  return 0;
}
