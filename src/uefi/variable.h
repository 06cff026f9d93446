// UEFI variable data as measured into a TCG event log, and the Secure Boot
// variables' values.
//
// UEFI_VARIABLE_DATA (TCG PC Client PFP §10.4.3, EV_EFI_VARIABLE_*):
//  +----------------+-------------------+--------------------+
//  | VariableName   | UnicodeNameLength | VariableDataLength |
//  | GUID (16)      | u64 (characters)  | u64 (bytes)        |
//  +----------------+-------------------+--------------------+
//  | UnicodeName[UnicodeNameLength] (UTF-16LE, no NUL) | VariableData |
//
// EFI_SIGNATURE_LIST (UEFI 2.10 §32.4.1), the value of PK, KEK, db, dbx:
//  +---------------+-------------------+---------------------+---------------+
//  | SignatureType | SignatureListSize | SignatureHeaderSize | SignatureSize |
//  | GUID (16)     | u32               | u32                 | u32           |
//  +---------------+-------------------+---------------------+---------------+
//  | SignatureHeader[HeaderSize] | EFI_SIGNATURE_DATA[n] (SignatureSize each) |
// EFI_SIGNATURE_DATA: SignatureOwner GUID (16) | SignatureData[Size - 16].
//
// Guarantees: bounds-checked; errors are INVALID_ARGUMENT naming the field
// and the bytes left; every ByteView returned points into the input.
// Does not: decode certificates (X.509 is the caller's), or check that a
// variable's name suits its GUID beyond ClassifySecureBootVariable.
#ifndef DPUAUDIT_UEFI_VARIABLE_H_
#define DPUAUDIT_UEFI_VARIABLE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "uefi/guid.h"

namespace dpuaudit::uefi {

struct UefiVariable {
  Guid guid;
  std::string name;  // UTF-8 (Ucs2ToUtf8Lossy)
  ByteView data;     // VariableData
};
// Trailing bytes after VariableData are ignored.
StatusOr<UefiVariable> DecodeUefiVariable(ByteView data);

inline constexpr size_t kSignatureListHeaderBytes = 28;

struct EfiSignatureData {
  Guid owner;
  ByteView data;  // SignatureData (SignatureSize - 16 bytes)
};
struct EfiSignatureList {
  size_t offset = 0;  // in the variable data
  Guid type;          // kEfiCertX509, kEfiCertSha256, ...
  std::vector<EfiSignatureData> signatures;
};
// A sequence of EFI_SIGNATURE_LISTs (a whole variable value), appended to
// *lists in order. A structure error stops the walk: the error names the
// list's hex offset ("EFI_SIGNATURE_LIST at offset 0x0: SignatureListSize
// 4294967295 does not fit the 28 bytes left.") and *lists keeps the lists
// before it.
Status ParseSignatureLists(ByteView data, std::vector<EfiSignatureList>* lists);

// The SecureBoot variable's value: an absent variable is logged with no
// data (false); one byte, non-zero is true. More bytes are INVALID_ARGUMENT
// ("SecureBoot holds 2 bytes, expected 1.").
StatusOr<bool> ParseSecureBootValue(ByteView data);

// The Secure Boot policy variables, by vendor GUID and name.
enum class SecureBootVariable { kOther, kSecureBoot, kPk, kKek, kDb, kDbx };
// SecureBoot, PK, KEK of EFI_GLOBAL_VARIABLE; db, dbx of
// EFI_IMAGE_SECURITY_DATABASE; anything else is kOther.
SecureBootVariable ClassifySecureBootVariable(const Guid& guid,
                                              std::string_view name);

}  // namespace dpuaudit::uefi

#endif  // DPUAUDIT_UEFI_VARIABLE_H_
