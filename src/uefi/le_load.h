// Unchecked little-endian loads for the UEFI parsers of this room (UEFI
// stores every multi-byte field little-endian).
//
// Guarantees: LoadU16/LoadU32 read exactly 2/4 bytes at `at`.
// Does not: check bounds; the caller has (use ByteReader where it has not).
#ifndef DPUAUDIT_UEFI_LE_LOAD_H_
#define DPUAUDIT_UEFI_LE_LOAD_H_

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"

namespace dpuaudit::uefi {

inline uint16_t LoadU16(ByteView d, size_t at) {
  return static_cast<uint16_t>(d[at] | (d[at + 1] << 8));
}
inline uint32_t LoadU32(ByteView d, size_t at) {
  return static_cast<uint32_t>(d[at]) |
         (static_cast<uint32_t>(d[at + 1]) << 8) |
         (static_cast<uint32_t>(d[at + 2]) << 16) |
         (static_cast<uint32_t>(d[at + 3]) << 24);
}

}  // namespace dpuaudit::uefi

#endif  // DPUAUDIT_UEFI_LE_LOAD_H_
