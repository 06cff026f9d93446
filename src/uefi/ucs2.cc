#include "uefi/ucs2.h"

#include <cstdint>
#include <cstdio>

namespace dpuaudit::uefi {
namespace {

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

std::string Hex16(uint32_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04X", v);
  return buf;
}

enum class Policy { kStrict, kLossy };

// The one decoder. kStrict: the first unit that does not decode is an
// error naming `what` and its offset. kLossy: see Ucs2ToUtf8Lossy.
Status Decode(ByteView b, size_t offset, std::string_view what, Policy policy,
              std::string& out) {
  constexpr uint32_t kReplacement = 0xfffd;
  const bool strict = policy == Policy::kStrict;
  out.clear();
  if (strict && b.size() % 2 != 0) {
    return InvalidArgumentError(std::string(what) + " has an odd length " +
                                std::to_string(b.size()) + " at offset " +
                                std::to_string(offset) + ".");
  }
  auto unit = [&b](size_t i) {
    return static_cast<uint32_t>(b[i] | (b[i + 1] << 8));
  };
  auto unpaired = [&](uint32_t u, size_t i) {
    return InvalidArgumentError(
        std::string(what) + " has an unpaired surrogate " + Hex16(u) +
        " at offset " + std::to_string(offset + i) + ".");
  };
  for (size_t i = 0; i + 1 < b.size(); i += 2) {
    const uint32_t u = unit(i);
    if (u == 0) {
      if (!strict) break;
      return InvalidArgumentError(std::string(what) + " has a NUL at offset " +
                                  std::to_string(offset + i) + ".");
    }
    if (u >= 0xd800 && u <= 0xdbff) {
      const uint32_t lo = i + 3 < b.size() ? unit(i + 2) : 0;
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        AppendUtf8(0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00), out);
        i += 2;
        continue;
      }
      if (strict) return unpaired(u, i);
      AppendUtf8(kReplacement, out);
    } else if (u >= 0xdc00 && u <= 0xdfff) {
      if (strict) return unpaired(u, i);
      AppendUtf8(kReplacement, out);
    } else if (!strict && (u < 0x20 || u == 0x7f)) {
      out.push_back(' ');
    } else {
      AppendUtf8(u, out);
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::string> Ucs2ToUtf8(ByteView le, size_t offset,
                                 std::string_view what) {
  std::string out;
  DPA_RETURN_IF_ERROR(Decode(le, offset, what, Policy::kStrict, out));
  return out;
}

std::string Ucs2ToUtf8Lossy(ByteView le) {
  std::string out;
  (void)Decode(le, 0, "", Policy::kLossy, out);  // never fails
  return out;
}

}  // namespace dpuaudit::uefi
