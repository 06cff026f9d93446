// Fuzz target: dpuaudit::bluefield::ParseComparableVersion / CompareVersions.
// The first byte picks the component, the rest is the text.
// Invariants: an OK version keeps the text, has at least one part, every
// part below 10^9; comparison is reflexive and antisymmetric, and padding
// with a ".0" (dotted schemes) does not change the order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bluefield/version.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dpuaudit::bluefield::CompareVersions;
  using dpuaudit::bluefield::ParseComparableVersion;
  static const char* kComponents[] = {"nic-fw", "bsp",  "dotted",
                                      "atf",    "uefi", "unknown"};
  if (data == nullptr || size == 0) return 0;
  const std::string component = kComponents[data[0] % 6];
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto v = ParseComparableVersion(component, text);
  if (!v.ok()) {
    if (v.status().message().empty()) std::abort();
    return 0;
  }
  if (component == "unknown") std::abort();
  if (v->text != text || v->parts.empty()) std::abort();
  for (uint64_t p : v->parts) {
    if (p >= 1000000000u) std::abort();
  }
  if (CompareVersions(*v, *v) != 0) std::abort();
  auto ref = ParseComparableVersion("dotted", "4.9.1");
  if (!ref.ok()) std::abort();
  if (CompareVersions(*v, *ref) != -CompareVersions(*ref, *v)) std::abort();
  if (component == "nic-fw" || component == "bsp" || component == "dotted") {
    auto padded = ParseComparableVersion(component, std::string(text) + ".0");
    if (!padded.ok() || CompareVersions(*v, *padded) != 0) std::abort();
  }
  return 0;
}
