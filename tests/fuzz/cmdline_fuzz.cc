// Fuzz target: dpuaudit::firmware::ParseKernelCmdline (/proc/cmdline).
// Invariants: an accepted line is at most 4096 bytes, `raw` is the input
// minus at most one trailing '\n' and is valid UTF-8 without NUL;
// boot_image is the value of the first BOOT_IMAGE parameter; every key and
// value is no longer than raw; an error has a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "firmware/os_boot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto c = dpuaudit::firmware::ParseKernelCmdline(text);
  if (!c.ok()) {
    if (c.status().message().empty()) std::abort();
    return 0;
  }
  if (text.size() > 4096) std::abort();
  std::string_view expect = text;
  if (!expect.empty() && expect.back() == '\n') expect.remove_suffix(1);
  if (c->raw != expect || c->raw.find('\0') != std::string::npos) std::abort();
  try {
    (void)nlohmann::json(c->raw).dump();
  } catch (const nlohmann::json::exception&) {
    std::abort();
  }
  std::string first_boot_image;
  bool seen = false;
  for (const auto& [key, value] : c->params) {
    if (key.size() > c->raw.size() || value.size() > c->raw.size()) {
      std::abort();
    }
    if (!seen && key == "BOOT_IMAGE") {
      first_boot_image = value;
      seen = true;
    }
  }
  if (c->boot_image != first_boot_image) std::abort();
  return 0;
}
