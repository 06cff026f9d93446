#include "bluefield/fw_sources.h"

#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

// The kernel prints u16 fields; 9 digits keeps every value orderable by
// ParseComparableVersion("nic-fw", ...).
constexpr size_t kMaxFieldDigits = 9;
constexpr size_t kMinSubminorDigits = 4;  // "%04d"

bool AllDigits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string_view DropOneNewline(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

}  // namespace

StatusOr<std::string> ParseSysfsFwVer(std::string_view text) {
  const std::string_view v = DropOneNewline(text);
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("fw_ver '" + text::Excerpt(text) + "' " +
                                std::string(why) + ".");
  };
  size_t dot1 = v.find('.');
  size_t dot2 = dot1 == std::string_view::npos ? dot1 : v.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos ||
      v.find('.', dot2 + 1) != std::string_view::npos) {
    return bad("is not three dot-separated fields (major.minor.subminor)");
  }
  const std::string_view fields[3] = {v.substr(0, dot1),
                                      v.substr(dot1 + 1, dot2 - dot1 - 1),
                                      v.substr(dot2 + 1)};
  for (std::string_view f : fields) {
    if (f.empty() || f.size() > kMaxFieldDigits || !AllDigits(f)) {
      return bad("has a field that is not 1 to 9 decimal digits");
    }
  }
  if (fields[2].size() < kMinSubminorDigits) {
    return bad(
        "has a subminor of fewer than 4 digits (the kernel prints %04d)");
  }
  return std::string(v);
}

StatusOr<std::string> ParseMlnxRelease(std::string_view text) {
  const std::string_view v = DropOneNewline(text);
  if (v.empty()) {
    return InvalidArgumentError("/etc/mlnx-release is empty.");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(v[i]);
    if (c <= 0x20 || c >= 0x7f) {
      return InvalidArgumentError(
          "/etc/mlnx-release '" + text::Excerpt(text) + "' has byte 0x" +
          HexEncode(ByteView(&c, 1)) + " at offset " + std::to_string(i) +
          "; expected one line of printable ASCII without spaces.");
    }
  }
  return std::string(v);
}

}  // namespace dpuaudit::bluefield
