// Fuzz target: dpuaudit::uefi::ParseEfiVarU8 (efivarfs SecureBoot/SetupMode).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "uefi/efivar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dpuaudit::ByteView bytes(data, data == nullptr ? 0 : size);
  auto v = dpuaudit::uefi::ParseEfiVarU8(bytes);
  if (v.ok()) {
    if (size != dpuaudit::uefi::kEfiVarU8Size || v->value > 1) {
      std::abort();
    }
  } else if (v.status().message().empty()) {
    std::abort();
  }
  return 0;
}
