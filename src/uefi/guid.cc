#include "uefi/guid.h"

#include <algorithm>
#include <cstdio>

#include "common/text_lines.h"

namespace dpuaudit::uefi {

Guid Guid::FromBytes(ByteView b) {
  Guid g;
  std::copy_n(b.begin(), std::min(b.size(), g.bytes.size()), g.bytes.begin());
  return g;
}

std::string Guid::ToString() const {
  const auto& b = bytes;
  char buf[kGuidTextLength + 1];
  std::snprintf(buf, sizeof buf,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                "%02x%02x%02x%02x%02x%02x",
                b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9],
                b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

StatusOr<Guid> ParseGuid(std::string_view text) {
  std::optional<Guid> g = internal::GuidFromText(text);
  if (!g) {
    return InvalidArgumentError(
        "'" + text::Excerpt(text) +
        "' is not a GUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx).");
  }
  return *g;
}

}  // namespace dpuaudit::uefi
