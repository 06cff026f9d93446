// Fuzz target for ParseCommandsJson (device/recorded.h): it must never crash
// or throw, and whatever it accepts must survive SerializeCommandsJson and
// parse back to the same commands.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "device/recorded.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dpuaudit::device::ParseCommandsJson;
  using dpuaudit::device::SerializeCommandsJson;
  auto parsed = ParseCommandsJson(dpuaudit::ByteView(data, size));
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) std::abort();  // errors say why
    return 0;
  }
  auto text = SerializeCommandsJson(*parsed);
  if (!text.ok()) std::abort();
  auto again = ParseCommandsJson(dpuaudit::AsBytes(*text));
  if (!again.ok() || *again != *parsed) std::abort();
  return 0;
}
