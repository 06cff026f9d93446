#include "uefi/load_option.h"

#include <algorithm>
#include <cstdio>

#include "uefi/device_path.h"
#include "uefi/le_load.h"
#include "uefi/ucs2.h"

namespace dpuaudit::uefi {
namespace {

constexpr size_t kEfiAttributeBytes = 4;
constexpr size_t kLoadOptionHeaderBytes = kEfiAttributeBytes + 4 + 2;

// A malformed node of the file path list starting at `list_off`.
Status FaultError(const DevicePathFault& f, size_t list_off) {
  const std::string at = std::to_string(list_off + f.offset);
  switch (f.kind) {
    case DevicePathFault::Kind::kTruncatedHeader:
      return InvalidArgumentError("device path node at offset " + at +
                                  " is truncated (" + std::to_string(f.left) +
                                  " bytes left in the file path list).");
    case DevicePathFault::Kind::kLengthTooSmall:
      return InvalidArgumentError("device path node at offset " + at +
                                  " has length " + std::to_string(f.length) +
                                  " (< 4).");
    case DevicePathFault::Kind::kPastTheEnd:
      break;
  }
  return InvalidArgumentError("device path node at offset " + at +
                              " runs past the file path list (length " +
                              std::to_string(f.length) + " > " +
                              std::to_string(f.left) + ").");
}

}  // namespace

StatusOr<uint16_t> ParseBootCurrent(ByteView data) {
  if (data.size() != kEfiAttributeBytes + 2) {
    return InvalidArgumentError(
        "BootCurrent is " + std::to_string(data.size()) +
        " bytes; expected 6 (4 attribute bytes, then a UINT16).");
  }
  return LoadU16(data, kEfiAttributeBytes);
}

// EFI_LOAD_OPTION (UEFI 2.x §3.1.3), after the efivarfs attributes:
//   +0  UINT32  efivarfs attributes (not part of the variable)
//   +4  UINT32  Attributes
//   +8  UINT16  FilePathListLength
//   +10 CHAR16  Description[]   NUL-terminated
//   ... EFI_DEVICE_PATH_PROTOCOL FilePathList[FilePathListLength bytes]
//   ... UINT8   OptionalData[]  (the rest; not interpreted)
StatusOr<EfiLoadOption> ParseEfiLoadOption(ByteView data) {
  // Offsets in messages are decimal, as in the header's contract.
  if (data.size() < kLoadOptionHeaderBytes) {
    return InvalidArgumentError(
        "load option is " + std::to_string(data.size()) +
        " bytes; its header (efivarfs attributes, Attributes, "
        "FilePathListLength) needs 10.");
  }
  EfiLoadOption lo;
  lo.attributes = LoadU32(data, kEfiAttributeBytes);
  const size_t list_len = LoadU16(data, kEfiAttributeBytes + 4);

  const size_t desc_off = kLoadOptionHeaderBytes;
  size_t pos = desc_off;
  while (true) {
    if (data.size() - pos < 2) {
      return InvalidArgumentError("description at offset " +
                                  std::to_string(desc_off) +
                                  " is not NUL-terminated (the data ends at "
                                  "offset " +
                                  std::to_string(data.size()) + ").");
    }
    const uint16_t u = LoadU16(data, pos);
    pos += 2;
    if (u == 0) break;
  }
  DPA_ASSIGN_OR_RETURN(lo.description,
                       Ucs2ToUtf8(data.subspan(desc_off, pos - 2 - desc_off),
                                  desc_off, "description"));

  const size_t list_off = pos;
  if (list_len > data.size() - list_off) {
    return InvalidArgumentError(
        "file path list at offset " + std::to_string(list_off) + " (length " +
        std::to_string(list_len) + ") runs past the end of the data (" +
        std::to_string(data.size() - list_off) + " bytes left).");
  }
  const ByteView list = data.subspan(list_off, list_len);

  // The file path is the concatenation of the file-path nodes of the first
  // device-path instance that has any (a path may be split over nodes).
  bool have_path = false, instance_has_path = false, last_was_end = false;
  DevicePathWalker walker(list);
  while (std::optional<DevicePathNode> n = walker.Next()) {
    const size_t node_off = list_off + n->offset;
    last_was_end = n->IsEndEntire();
    if (n->IsEnd()) {
      if (instance_has_path) have_path = true;
    } else if (n->IsFilePath() && !have_path) {
      if (n->length % 2 != 0) {
        return InvalidArgumentError(
            "file path node at offset " + std::to_string(node_off) +
            " has odd length " + std::to_string(n->length) + ".");
      }
      ByteView units = n->data;
      if (units.size() >= 2 && LoadU16(units, units.size() - 2) == 0) {
        units = units.first(units.size() - 2);
      }
      DPA_ASSIGN_OR_RETURN(
          std::string segment,
          Ucs2ToUtf8(units, node_off + kDevicePathNodeHeaderBytes,
                     "file path node at offset " + std::to_string(node_off)));
      if (segment.empty()) {
        return InvalidArgumentError("file path node at offset " +
                                    std::to_string(node_off) + " is empty.");
      }
      if (!lo.file_path.empty() && lo.file_path.back() != '\\' &&
          segment.front() != '\\') {
        lo.file_path += '\\';
      }
      lo.file_path += segment;
      instance_has_path = true;
    }
  }
  if (walker.fault()) return FaultError(*walker.fault(), list_off);
  if (!last_was_end) {
    return InvalidArgumentError(
        "file path list at offset " + std::to_string(list_off) +
        " does not end with an end-of-device-path node (type 0x7f, subtype "
        "0xff).");
  }
  if (lo.file_path.empty()) {
    return InvalidArgumentError(
        "load option has no media file-path node (type 4, subtype 4).");
  }
  return lo;
}

std::string BootOptionName(uint16_t n) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "Boot%04X", n);
  return buf;
}

bool IsBootOptionName(std::string_view name) {
  if (name.size() != 8 || name.substr(0, 4) != "Boot") return false;
  return std::all_of(name.begin() + 4, name.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
  });
}

StatusOr<std::vector<uint16_t>> ParseBootOrder(ByteView data) {
  if (data.size() % 2 != 0) {
    return InvalidArgumentError("BootOrder is " + std::to_string(data.size()) +
                                " bytes; expected UINT16s (an even size).");
  }
  std::vector<uint16_t> order;
  order.reserve(data.size() / 2);
  for (size_t i = 0; i + 1 < data.size(); i += 2) {
    order.push_back(LoadU16(data, i));
  }
  return order;
}

std::optional<std::string> LoadOptionDescription(ByteView data) {
  if (data.size() < 6) return std::nullopt;
  return Ucs2ToUtf8Lossy(data.subspan(6));
}

}  // namespace dpuaudit::uefi
