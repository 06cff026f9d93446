#include "uefi/device_path.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "testing/load_option_bytes.h"

namespace dpuaudit::uefi {
namespace {

using namespace ::dpuaudit::testing;  // byte builders

Bytes AcpiPciRoot(uint32_t uid) {
  Bytes d;
  PutU32(d, 0x0a0341d0);  // HID: EISA PNP0A03
  PutU32(d, uid);
  return Node(2, 1, d);
}

TEST(DevicePathWalkerTest, YieldsEveryNodeWithItsOffset) {
  Bytes path = AcpiPciRoot(0);
  Append(path, Node(1, 1, {0x00, 0x1d}));  // Pci(0x1d,0x0)
  Append(path, Node(0x7f, 0x01, {}));      // End Instance
  Append(path, FileNode(u"\\a.efi"));
  Append(path, EndNode());
  DevicePathWalker w(path);
  std::vector<size_t> offsets;
  std::vector<bool> ends;
  while (std::optional<DevicePathNode> n = w.Next()) {
    offsets.push_back(n->offset);
    ends.push_back(n->IsEnd());
  }
  EXPECT_FALSE(w.fault().has_value());
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 12, 18, 22, 40}));
  EXPECT_EQ(ends, (std::vector<bool>{false, false, true, false, true}));
}

TEST(DevicePathWalkerTest, Faults) {
  struct Case {
    Bytes path;
    DevicePathFault::Kind kind;
    size_t offset, length, left;
  } cases[] = {
      {Bytes{0x7f, 0xff, 4}, DevicePathFault::Kind::kTruncatedHeader, 0, 0, 3},
      {Bytes{0x7f, 0xff, 2, 0}, DevicePathFault::Kind::kLengthTooSmall, 0, 2,
       4},
      {Bytes{4, 4, 6, 0, 0x41, 0, 0x7f, 0xff, 9, 0, 0},
       DevicePathFault::Kind::kPastTheEnd, 6, 9, 5},
  };
  for (const Case& c : cases) {
    DevicePathWalker w(c.path);
    while (w.Next()) {
    }
    ASSERT_TRUE(w.fault().has_value());
    EXPECT_EQ(w.fault()->kind, c.kind);
    EXPECT_EQ(w.fault()->offset, c.offset);
    EXPECT_EQ(w.fault()->length, c.length);
    EXPECT_EQ(w.fault()->left, c.left);
    EXPECT_FALSE(w.Next().has_value());  // stays stopped
  }
}

TEST(DescribeDevicePathTest, RendersNodesAndJoinsTheFilePath) {
  Bytes path = AcpiPciRoot(0);
  Append(path, Node(1, 1, {0x00, 0x1d}));
  Append(path, HdNode());
  Append(path, FileNode(u"\\EFI"));
  Append(path, FileNode(u"BOOT\\BOOTAA64.EFI"));
  Append(path, Node(3, 5, {1, 2}));  // USB
  Append(path, Node(9, 9, {}));      // unknown
  Append(path, EndNode());
  Append(path, Node(3, 11, {}));  // after End Entire: not rendered
  StatusOr<DevicePathText> t = DescribeDevicePath(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->file, "\\EFI\\BOOT\\BOOTAA64.EFI");
  EXPECT_EQ(t->text,
            "PciRoot(0x0)/Pci(0x1d,0x0)/HD(1)/\\EFI/BOOT\\BOOTAA64.EFI/USB()/"
            "Path(9,9)");
}

TEST(DescribeDevicePathTest, StopsAfter64Nodes) {
  Bytes path;
  for (int i = 0; i < 70; ++i) Append(path, Node(3, 5, {}));
  StatusOr<DevicePathText> t = DescribeDevicePath(path);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->text.ends_with("/USB()/...")) << t->text;
  EXPECT_EQ(t->text.size(), 64 * 6 + 3);
  EXPECT_EQ(t->file, "");
}

TEST(DescribeDevicePathTest, ErrorsNameTheHexOffset) {
  Bytes path = FileNode(u"\\a");
  const size_t bad = path.size();  // 10
  Bytes truncated = path;
  Append(truncated, Bytes{0x7f, 0xff});
  EXPECT_EQ(DescribeDevicePath(truncated).status().message(),
            "device path node at offset 0xa is truncated.");
  Bytes past = path;
  Append(past, Bytes{0x7f, 0xff, 9, 0, 0});
  EXPECT_EQ(DescribeDevicePath(past).status().message(),
            "device path node at offset 0xa: Length 9 does not fit the 5 bytes "
            "left.");
  Bytes short_len = path;
  Append(short_len, Bytes{0x7f, 0xff, 3, 0});
  EXPECT_EQ(DescribeDevicePath(short_len).status().message(),
            "device path node at offset 0xa: Length 3 does not fit the 4 bytes "
            "left.");
  EXPECT_EQ(bad, 10u);
}

}  // namespace
}  // namespace dpuaudit::uefi
