#include "uefi/device_path.h"

#include <cstdio>

#include "uefi/le_load.h"
#include "uefi/ucs2.h"

namespace dpuaudit::uefi {
namespace {

constexpr uint32_t kAcpiPciRootHid = 0x0a0341d0;  // EISA "PNP0A03"
// A hostile path could hold thousands of nodes; descriptions stop here.
constexpr size_t kMaxDescribedNodes = 64;

std::string HexNum(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Names of other common nodes (UEFI 2.10 §10.3), without their data.
std::string NodeName(uint8_t type, uint8_t subtype) {
  struct Name {
    uint8_t type, subtype;
    const char* name;
  };
  static constexpr Name kNames[] = {
      {1, 4, "VenHw"},  {3, 5, "USB"},   {3, 10, "VenMsg"}, {3, 11, "MAC"},
      {3, 12, "IPv4"},  {3, 13, "IPv6"}, {3, 18, "Sata"},   {3, 23, "NVMe"},
      {3, 24, "Uri"},   {3, 29, "eMMC"}, {4, 2, "CDROM"},   {4, 3, "VenMedia"},
      {4, 6, "FvFile"}, {4, 7, "Fv"},    {4, 8, "Offset"},
  };
  for (const Name& n : kNames) {
    if (n.type == type && n.subtype == subtype)
      return std::string(n.name) + "()";
  }
  return "Path(" + std::to_string(type) + "," + std::to_string(subtype) + ")";
}

}  // namespace

std::optional<DevicePathNode> DevicePathWalker::Next() {
  if (fault_ || pos_ >= path_.size()) return std::nullopt;
  const size_t left = path_.size() - pos_;
  DevicePathFault f;
  f.offset = pos_;
  f.left = left;
  if (left < kDevicePathNodeHeaderBytes) {
    f.kind = DevicePathFault::Kind::kTruncatedHeader;
    fault_ = f;
    return std::nullopt;
  }
  DevicePathNode n;
  n.offset = pos_;
  n.type = path_[pos_];
  n.subtype = path_[pos_ + 1];
  n.length = LoadU16(path_, pos_ + 2);
  if (n.length < kDevicePathNodeHeaderBytes || n.length > left) {
    f.kind = n.length < kDevicePathNodeHeaderBytes
                 ? DevicePathFault::Kind::kLengthTooSmall
                 : DevicePathFault::Kind::kPastTheEnd;
    f.length = n.length;
    fault_ = f;
    return std::nullopt;
  }
  n.data = path_.subspan(pos_ + kDevicePathNodeHeaderBytes,
                         n.length - kDevicePathNodeHeaderBytes);
  pos_ += n.length;
  return n;
}

StatusOr<DevicePathText> DescribeDevicePath(ByteView path) {
  DevicePathText out;
  std::string& file = out.file;
  size_t nodes = 0;
  auto add_text = [&out](const std::string& s) {
    if (!out.text.empty()) out.text.push_back('/');
    out.text += s;
  };
  DevicePathWalker walker(path);
  while (std::optional<DevicePathNode> n = walker.Next()) {
    if (n->IsEndEntire()) break;
    if (++nodes > kMaxDescribedNodes) {
      add_text("...");
      break;
    }
    const ByteView body = n->data;
    if (n->IsFilePath()) {
      std::string piece = Ucs2ToUtf8Lossy(body);
      if (!file.empty() && file.back() != '\\' && !piece.empty() &&
          piece.front() != '\\') {
        file.push_back('\\');
      }
      file += piece;
      add_text(piece);
    } else if (n->type == kDevicePathAcpi &&
               n->subtype == kDevicePathAcpiAcpi && body.size() >= 8) {
      const uint32_t hid = LoadU32(body, 0);
      const uint32_t uid = LoadU32(body, 4);
      add_text(hid == kAcpiPciRootHid
                   ? "PciRoot(" + HexNum(uid) + ")"
                   : "Acpi(" + HexNum(hid) + "," + HexNum(uid) + ")");
    } else if (n->type == kDevicePathHardware &&
               n->subtype == kDevicePathHardwarePci && body.size() >= 2) {
      const uint8_t function = body[0];
      const uint8_t device = body[1];
      add_text("Pci(" + HexNum(device) + "," + HexNum(function) + ")");
    } else if (n->type == kDevicePathMedia &&
               n->subtype == kDevicePathMediaHardDrive && body.size() >= 4) {
      add_text("HD(" + std::to_string(LoadU32(body, 0)) + ")");
    } else {
      add_text(NodeName(n->type, n->subtype));
    }
  }
  if (const std::optional<DevicePathFault>& f = walker.fault()) {
    if (f->kind == DevicePathFault::Kind::kTruncatedHeader) {
      return InvalidArgumentError("device path node at offset " +
                                  HexNum(f->offset) + " is truncated.");
    }
    return InvalidArgumentError(
        "device path node at offset " + HexNum(f->offset) + ": Length " +
        std::to_string(f->length) + " does not fit the " +
        std::to_string(f->left) + " bytes left.");
  }
  return out;
}

}  // namespace dpuaudit::uefi
