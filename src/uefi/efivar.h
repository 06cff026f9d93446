// UEFI variables as Linux efivarfs exposes them.
//
// Guarantees: strict parsing of the raw file bytes; wrong sizes, missing
// attribute bits and out-of-range values are INVALID_ARGUMENT naming the
// byte offset.
// Does not: tell whether the value is true (the Arm OS reports it).
#ifndef DPUAUDIT_UEFI_EFIVAR_H_
#define DPUAUDIT_UEFI_EFIVAR_H_

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::uefi {

// ---- UEFI efivars (efivarfs) ----

// An efivarfs file is the variable's attributes followed by its data
// (Linux Documentation/filesystems/efivarfs.rst). For the one-byte global
// variables SecureBoot and SetupMode (UEFI 2.10 §3.3, value 0 or 1):
//
//   offset  size  field
//   0x0     4     Attributes, UINT32 little-endian (EFI_VARIABLE_*)
//   0x4     1     Data: 0 or 1
//   0x5           end (no trailing bytes)
inline constexpr size_t kEfiVarAttributesSize = 4;
inline constexpr size_t kEfiVarU8Size = kEfiVarAttributesSize + 1;
// UEFI 2.10 §8.2 (GetVariable): efivarfs only lists variables with
// RUNTIME_ACCESS, so a real file always has this bit.
inline constexpr uint32_t kEfiVariableRuntimeAccess = 0x00000004;

struct EfiVarU8 {
  uint32_t attributes = 0;
  uint8_t value = 0;
};

// Strict: exactly kEfiVarU8Size bytes, RUNTIME_ACCESS set, value 0 or 1.
// Does not check any other attribute bit.
StatusOr<EfiVarU8> ParseEfiVarU8(ByteView bytes);
}  // namespace dpuaudit::uefi

#endif  // DPUAUDIT_UEFI_EFIVAR_H_
