// EFI_DEVICE_PATH_PROTOCOL (UEFI 2.10 §10.3): a list of nodes
//   +0 UINT8  Type        (0x01 hardware, 0x02 ACPI, 0x03 messaging,
//                          0x04 media, 0x7f end)
//   +1 UINT8  SubType     (end: 0xff end entire, 0x01 end instance)
//   +2 UINT16 Length      (of the whole node, header included, >= 4)
//   +4 ...    data        (media file path, 4/4: UCS-2 PathName, usually
//                          NUL-terminated)
// A path may hold several instances, each ended by an End Instance node;
// the last ends with End Entire.
//
// DevicePathWalker is the one node walker; the load option parser
// (uefi/load_option.h) and DescribeDevicePath use it and word their own
// errors from its DevicePathFault.
// Guarantees: bounds-checked; a node is only returned when its header and
// its whole Length fit the remaining bytes; nothing is allocated per node.
// Does not: check End nodes (callers decide what ends a path), or decode
// node data (DescribeDevicePath decodes a few kinds for display).
#ifndef DPUAUDIT_UEFI_DEVICE_PATH_H_
#define DPUAUDIT_UEFI_DEVICE_PATH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::uefi {

inline constexpr size_t kDevicePathNodeHeaderBytes = 4;
inline constexpr uint8_t kDevicePathHardware = 0x01;
inline constexpr uint8_t kDevicePathAcpi = 0x02;
inline constexpr uint8_t kDevicePathMessaging = 0x03;
inline constexpr uint8_t kDevicePathMedia = 0x04;
inline constexpr uint8_t kDevicePathEnd = 0x7f;
inline constexpr uint8_t kDevicePathEndEntire = 0xff;
inline constexpr uint8_t kDevicePathEndInstance = 0x01;
inline constexpr uint8_t kDevicePathHardwarePci = 0x01;
inline constexpr uint8_t kDevicePathAcpiAcpi = 0x01;
inline constexpr uint8_t kDevicePathMediaHardDrive = 0x01;
inline constexpr uint8_t kDevicePathMediaFilePath = 0x04;

struct DevicePathNode {
  size_t offset = 0;  // of the node's header in the walked bytes
  uint8_t type = 0;
  uint8_t subtype = 0;
  size_t length = 0;  // Length: header included
  ByteView data;      // the Length - 4 bytes after the header

  bool IsEndEntire() const {
    return type == kDevicePathEnd && subtype == kDevicePathEndEntire;
  }
  bool IsEnd() const {  // End Entire or End Instance
    return type == kDevicePathEnd && (subtype == kDevicePathEndEntire ||
                                      subtype == kDevicePathEndInstance);
  }
  bool IsFilePath() const {
    return type == kDevicePathMedia && subtype == kDevicePathMediaFilePath;
  }
};

// Why the walk stopped before the end of the bytes.
struct DevicePathFault {
  enum class Kind {
    kTruncatedHeader,  // fewer than 4 bytes left
    kLengthTooSmall,   // Length < 4
    kPastTheEnd,       // Length > the bytes left
  };
  Kind kind = Kind::kTruncatedHeader;
  size_t offset = 0;  // of the bad node
  size_t length = 0;  // its Length (kLengthTooSmall, kPastTheEnd)
  size_t left = 0;    // bytes left from the node's offset
};

// while (std::optional<DevicePathNode> n = walker.Next()) { ... }
// if (walker.fault()) ... — Next() returns nullopt at the end of the bytes
// or at the first malformed node (then fault() is set and stays set).
class DevicePathWalker {
 public:
  explicit DevicePathWalker(ByteView path) : path_(path) {}
  std::optional<DevicePathNode> Next();
  const std::optional<DevicePathFault>& fault() const { return fault_; }

 private:
  ByteView path_;
  size_t pos_ = 0;
  std::optional<DevicePathFault> fault_;
};

// A device path for display (event-log image loads). Walks up to End
// Entire (or the end of the bytes); every node before it is rendered:
// "PciRoot(0x0)/Pci(0x1d,0x0)/HD(1)/\EFI\BOOT\BOOTAA64.EFI"; ACPI PCI root,
// PCI, hard drive and file path nodes with their data, other common nodes
// by name ("USB()", "VenHw()"), unknown ones as "Path(type,subtype)". More
// than 64 nodes: the text ends with "..." and the walk stops.
struct DevicePathText {
  std::string file;  // the file-path nodes joined with '\'; "" if none
  std::string text;  // the nodes joined with '/'
};
// File names are decoded with Ucs2ToUtf8Lossy. A malformed node is
// INVALID_ARGUMENT with its hex offset in `path`: "device path node at
// offset 0x2c: Length 9 does not fit the 6 bytes left."
StatusOr<DevicePathText> DescribeDevicePath(ByteView path);

}  // namespace dpuaudit::uefi

#endif  // DPUAUDIT_UEFI_DEVICE_PATH_H_
