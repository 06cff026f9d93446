#include "uefi/efivar.h"

#include <string>

namespace dpuaudit::uefi {

StatusOr<EfiVarU8> ParseEfiVarU8(ByteView bytes) {
  if (bytes.size() != kEfiVarU8Size) {
    return InvalidArgumentError(
        "efivar is " + std::to_string(bytes.size()) + " bytes, expected " +
        std::to_string(kEfiVarU8Size) +
        " (4 attribute bytes then 1 data byte).");
  }
  ByteReader r(bytes);
  DPA_ASSIGN_OR_RETURN(uint32_t attributes, r.U32Le("efivar attributes"));
  DPA_ASSIGN_OR_RETURN(uint8_t value, r.U8("efivar data"));
  if ((attributes & kEfiVariableRuntimeAccess) == 0) {
    return InvalidArgumentError("efivar attributes " + Hex32(attributes) +
                                " at offset 0x0 lack RUNTIME_ACCESS (0x4).");
  }
  if (value > 1) {
    return InvalidArgumentError("efivar data byte at offset 0x4 is " +
                                std::to_string(value) +
                                ", expected 0 or 1.");
  }
  return EfiVarU8{attributes, value};
}

}  // namespace dpuaudit::uefi
