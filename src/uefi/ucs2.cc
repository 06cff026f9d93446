#include "uefi/ucs2.h"

#include "common/utf.h"

namespace dpuaudit::uefi {

StatusOr<std::string> Ucs2ToUtf8(ByteView le, size_t offset,
                                 std::string_view what) {
  if (le.size() % 2 != 0) {
    return InvalidArgumentError(std::string(what) + " has an odd length " +
                                std::to_string(le.size()) + " at offset " +
                                std::to_string(offset) + ".");
  }
  return Utf16LeToUtf8(le, what, offset);
}

std::string Ucs2ToUtf8Lossy(ByteView le) { return Utf16LeToUtf8Lossy(le); }

}  // namespace dpuaudit::uefi
