// UEFI boot manager variables (UEFI 2.10 §3.1, §3.3): BootCurrent,
// BootOrder and the Boot#### load options.
//
//  - BootCurrent-<global guid> as efivarfs stores it: 4 attribute bytes,
//    then a UINT16 LE naming Boot####-<global guid> (upper-case hex).
//  - Boot####: an EFI_LOAD_OPTION (UEFI 2.x §3.1.3: UINT32 Attributes,
//    UINT16 FilePathListLength, NUL-terminated UCS-2 Description, device
//    path list, optional data). Its media file-path node (type 4, subtype
//    4, UCS-2 path such as \EFI\ubuntu\shimaa64.efi) names the loader.
//  - BootOrder: UINT16 LE option numbers.
// Guarantees: bounds-checked, offsets in every error (INVALID_ARGUMENT
// "device path node at offset 74 runs past the file path list (length 200
// > 118)"); a load option with no file-path node is an error; UCS-2 with
// unpaired surrogates or NUL inside is an error.
// Does not: interpret OptionalData, or follow the device path to a device.
//
// Details:
//  - ParseBootCurrent and ParseEfiLoadOption take the whole efivarfs file;
//    their offsets count from its start (the 4 attribute bytes included),
//    so Attributes is at 4 and the Description at 10. Offsets in messages
//    are decimal.
//  - FilePathList may hold several device-path instances (firmware often
//    puts a vendor "hint" path first, e.g. the go-attestation logs): the
//    file path is taken from the first instance that has file-path nodes,
//    consecutive ones joined with '\'. A node shorter than 4 bytes, a node
//    running past the list, and a list not ending with an End Entire node
//    (0x7f/0xff) are errors. One terminating NUL in a file-path node is
//    dropped; an empty path is an error.
#ifndef DPUAUDIT_UEFI_LOAD_OPTION_H_
#define DPUAUDIT_UEFI_LOAD_OPTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::uefi {

// `data` is the whole efivarfs file (4 attribute bytes first).
StatusOr<uint16_t> ParseBootCurrent(ByteView data);

struct EfiLoadOption {
  uint32_t attributes = 0;
  std::string description;  // UTF-8
  std::string file_path;    // UTF-8, as stored: "\EFI\ubuntu\shimaa64.efi"
};
// `data` is the whole efivarfs file (4 attribute bytes first).
StatusOr<EfiLoadOption> ParseEfiLoadOption(ByteView data);

// "Boot0001": the variable name of option `n` (upper-case hex).
std::string BootOptionName(uint16_t n);
// True for "Boot" and four upper-case hex digits (not "BootNext",
// "BootOrder", "Boot000a").
bool IsBootOptionName(std::string_view name);

// BootOrder's variable data (no efivarfs attributes): the option numbers in
// order. An odd size is INVALID_ARGUMENT.
StatusOr<std::vector<uint16_t>> ParseBootOrder(ByteView data);

// The Description of an EFI_LOAD_OPTION's variable data (no efivarfs
// attributes), for display: decoded with Ucs2ToUtf8Lossy up to its NUL;
// nullopt when the data is shorter than the 6-byte header.
std::optional<std::string> LoadOptionDescription(ByteView data);

}  // namespace dpuaudit::uefi

#endif  // DPUAUDIT_UEFI_LOAD_OPTION_H_
