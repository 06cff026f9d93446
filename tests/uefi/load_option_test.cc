#include "uefi/load_option.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "isolation/shared_fixtures.h"
#include "testing/load_option_bytes.h"

namespace dpuaudit::uefi {
namespace {

using namespace ::dpuaudit::testing;  // byte builders

// ---- BootCurrent ----

TEST(BootCurrentTest, ParsesUint16AfterAttributes) {
  StatusOr<uint16_t> n = ParseBootCurrent(BootCurrentFile(0x0001));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  n = ParseBootCurrent(BootCurrentFile(0xBEEF));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0xBEEF);
}

TEST(BootCurrentTest, RejectsOtherSizes) {
  for (size_t size : {0u, 4u, 5u, 7u, 8u}) {
    Bytes b(size, 0x06);
    StatusOr<uint16_t> n = ParseBootCurrent(b);
    ASSERT_FALSE(n.ok()) << size;
    EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(n.status().message(),
              "BootCurrent is " + std::to_string(size) +
                  " bytes; expected 6 (4 attribute bytes, then a UINT16).");
  }
}

// ---- EFI_LOAD_OPTION ----

TEST(EfiLoadOptionTest, BlueFieldUbuntuEntry) {
  StatusOr<EfiLoadOption> lo =
      ParseEfiLoadOption(LoadOptionFile(1, u"ubuntu0", ShimList()));
  ASSERT_TRUE(lo.ok()) << lo.status().ToString();
  EXPECT_EQ(lo->attributes, 1u);
  EXPECT_EQ(lo->description, "ubuntu0");
  EXPECT_EQ(lo->file_path, "\\EFI\\ubuntu\\shimaa64.efi");
}

TEST(EfiLoadOptionTest, OptionalDataAndSecondInstanceAndNonAscii) {
  // A vendor "hint" instance without a file path first (as the
  // go-attestation logs show), then the HD + file path instance.
  Bytes list = Node(1, 4, Bytes(16, 0xee));  // Hardware / Vendor
  Append(list, EndNode());
  Append(list, ShimList(u"\\EFI\\debian\\shimaa64.efi"));
  const Bytes optional = {'R', 'C', 0, 0};
  // "Ubuntu é 𝄞": é is one code unit, U+1D11E a surrogate pair.
  StatusOr<EfiLoadOption> lo = ParseEfiLoadOption(
      LoadOptionFile(9, u"Ubuntu \u00e9 \U0001D11E", list, optional));
  ASSERT_TRUE(lo.ok()) << lo.status().ToString();
  EXPECT_EQ(lo->attributes, 9u);
  EXPECT_EQ(lo->description, "Ubuntu \xc3\xa9 \xf0\x9d\x84\x9e");
  EXPECT_EQ(lo->file_path, "\\EFI\\debian\\shimaa64.efi");
}

TEST(EfiLoadOptionTest, FirstInstanceWithAPathWins) {
  Bytes list = HdNode();
  Append(list, FileNode(u"\\EFI\\a\\shimaa64.efi"));
  Append(list, Node(0x7f, 0x01, {}));  // End This Instance
  Append(list, FileNode(u"\\EFI\\b\\other.efi"));
  Append(list, EndNode());
  StatusOr<EfiLoadOption> lo =
      ParseEfiLoadOption(LoadOptionFile(1, u"a", list));
  ASSERT_TRUE(lo.ok()) << lo.status().ToString();
  EXPECT_EQ(lo->file_path, "\\EFI\\a\\shimaa64.efi");
}

TEST(EfiLoadOptionTest, SplitFilePathNodesAreJoined) {
  Bytes list = HdNode();
  Append(list, FileNode(u"\\EFI"));
  Append(list, FileNode(u"ubuntu\\shimaa64.efi"));
  Append(list, EndNode());
  StatusOr<EfiLoadOption> lo = ParseEfiLoadOption(LoadOptionFile(1, u"", list));
  ASSERT_TRUE(lo.ok()) << lo.status().ToString();
  EXPECT_EQ(lo->description, "");
  EXPECT_EQ(lo->file_path, "\\EFI\\ubuntu\\shimaa64.efi");
}

TEST(EfiLoadOptionTest, PathWithoutTerminatorIsAccepted) {
  Bytes list = Node(4, 4, Units(u"\\EFI\\BOOT\\BOOTAA64.EFI"));
  Append(list, EndNode());
  StatusOr<EfiLoadOption> lo =
      ParseEfiLoadOption(LoadOptionFile(1, u"x", list));
  ASSERT_TRUE(lo.ok()) << lo.status().ToString();
  EXPECT_EQ(lo->file_path, "\\EFI\\BOOT\\BOOTAA64.EFI");
}

struct LoadOptionErrorCase {
  const char* name;
  Bytes data;
  std::string message;  // exact
};

TEST(EfiLoadOptionTest, ErrorsNameTheOffset) {
  // Layout of LoadOptionFile(1, u"ub", ...): efivarfs attributes 0-3,
  // Attributes 4-7, FilePathListLength 8-9, "ub\0" 10-15, list from 16.
  Bytes truncated_header = LoadOptionFile(1, u"ub", ShimList());
  truncated_header.resize(9);
  Bytes unterminated = LoadOptionFile(1, u"ub", {});
  unterminated.resize(14);  // drops the description's NUL
  Bytes odd_list = Node(4, 4, Bytes{'\\', 0, 'a'});  // length 7
  Append(odd_list, EndNode());
  const std::vector<LoadOptionErrorCase> cases = {
      {"truncated header", truncated_header,
       "load option is 9 bytes; its header (efivarfs attributes, Attributes, "
       "FilePathListLength) needs 10."},
      {"unterminated description", unterminated,
       "description at offset 10 is not NUL-terminated (the data ends at "
       "offset 14)."},
      {"unpaired high surrogate",
       LoadOptionFile(1, std::u16string(u"a") + char16_t(0xd800) + u"b",
                      ShimList()),
       "description has an unpaired surrogate 0xD800 at offset 12."},
      {"lone low surrogate",
       LoadOptionFile(1, std::u16string(1, char16_t(0xdc00)), ShimList()),
       "description has an unpaired surrogate 0xDC00 at offset 10."},
      {"list past the end", LoadOptionFile(1, u"ub", ShimList(), {}, 500),
       "file path list at offset 16 (length 500) runs past the end of the "
       "data (" +
           std::to_string(ShimList().size()) + " bytes left)."},
      {"truncated node header", LoadOptionFile(1, u"ub", Bytes{4, 4}),
       "device path node at offset 16 is truncated (2 bytes left in the file "
       "path list)."},
      {"node length below 4",
       LoadOptionFile(1, u"ub", Bytes{4, 4, 2, 0, 0x7f, 0xff, 4, 0}),
       "device path node at offset 16 has length 2 (< 4)."},
      {"node past the list",
       [] {
         Bytes l = HdNode();  // 42 bytes at 16..57
         Bytes f = FileNode(u"\\EFI\\ubuntu\\shimaa64.efi");
         f[2] = 200;  // Length 200 > the 58 bytes left (54 + end node 4)
         f[3] = 0;
         Append(l, f);
         Append(l, EndNode());
         return LoadOptionFile(1, u"ub", l);
       }(),
       "device path node at offset 58 runs past the file path list (length "
       "200 > 58)."},
      {"odd file path node", LoadOptionFile(1, u"ub", odd_list),
       "file path node at offset 16 has odd length 7."},
      {"nul inside the path",
       [] {
         Bytes l = Node(
             4, 4, Units(std::u16string(u"\\EFI") + u'\0' + u"x.efi" + u'\0'));
         Append(l, EndNode());
         return LoadOptionFile(1, u"ub", l);
       }(),
       "file path node at offset 16 has a NUL at offset 28."},
      {"unpaired surrogate in the path",
       [] {
         Bytes l = Node(
             4, 4,
             Units(std::u16string(u"\\") + char16_t(0xdbff) + u"\\x" + u'\0'));
         Append(l, EndNode());
         return LoadOptionFile(1, u"ub", l);
       }(),
       "file path node at offset 16 has an unpaired surrogate 0xDBFF at "
       "offset 22."},
      {"empty path",
       [] {
         Bytes l = FileNode(u"");
         Append(l, EndNode());
         return LoadOptionFile(1, u"ub", l);
       }(),
       "file path node at offset 16 is empty."},
      {"no end node",
       [] {
         Bytes l = HdNode();
         Append(l, FileNode(u"\\EFI\\ubuntu\\shimaa64.efi"));
         return LoadOptionFile(1, u"ub", l);
       }(),
       "file path list at offset 16 does not end with an end-of-device-path "
       "node (type 0x7f, subtype 0xff)."},
      {"empty list", LoadOptionFile(1, u"ub", {}),
       "file path list at offset 16 does not end with an end-of-device-path "
       "node (type 0x7f, subtype 0xff)."},
      {"no file path node",
       [] {
         Bytes l = HdNode();
         Append(l, EndNode());
         return LoadOptionFile(1, u"ub", l);
       }(),
       "load option has no media file-path node (type 4, subtype 4)."},
  };
  for (const LoadOptionErrorCase& c : cases) {
    StatusOr<EfiLoadOption> lo = ParseEfiLoadOption(c.data);
    ASSERT_FALSE(lo.ok()) << c.name;
    EXPECT_EQ(lo.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(lo.status().message(), c.message) << c.name;
  }
}

// Real Boot#### variables from the shared TCG event logs: the data of
// EV_EFI_VARIABLE_BOOT events (UEFI_VARIABLE_DATA: GUID, UINT64 name
// length, UINT64 data length, UCS-2 name, data = the EFI_LOAD_OPTION).
struct RealOption {
  const char* log;
  size_t offset;  // of the variable data in the log file
  size_t length;
  const char* variable;
  uint32_t attributes;
  const char* description;
  const char* file_path;  // nullptr: no file-path node (error expected)
};

TEST(EfiLoadOptionTest, RealLoadOptionsFromSharedEventLogs) {
  const std::string dir =
      std::string(DPUAUDIT_SHARED_DIR) + "/fixtures/eventlogs/";
  if (!std::filesystem::exists(dir + "tss-pc-client.bin")) {
    GTEST_SKIP() << "shared event logs are absent under " << dir;
  }
  const std::vector<RealOption> cases = {
      {"tss-pc-client.bin", 0x3e6d, 118, "Boot0005", 1, "ubuntu",
       "\\EFI\\ubuntu\\shimx64.efi"},
      // A vendor hint instance first, then HD + file path.
      {"gat-crypto-agile.bin", 0x3192, 142, "Boot0001", 9, "ubuntu",
       "\\EFI\\ubuntu\\shimx64.efi"},
      // 136 bytes of OptionalData.
      {"gat-crypto-agile.bin", 0x345a, 324, "Boot0000", 9,
       "Windows Boot Manager", "\\EFI\\Microsoft\\Boot\\bootmgfw.efi"},
      {"gat-linux-tpm12.bin", 0x2a0d, 118, "Boot0000", 1, "debian",
       "\\EFI\\debian\\grubx64.efi"},
      {"t2t-event-arch-linux.bin", 0x3692, 160, "Boot0000", 1,
       "Linux Boot Manager", "\\EFI\\SYSTEMD\\SYSTEMD-BOOTX64.EFI"},
      // PCI device path, no file: an error for us.
      {"t2t-event-bootorder.bin", 0x5e0, 78, "Boot0001", 1, "UEFI Misc Device",
       nullptr},
      // Firmware-volume app (FvFile), no file path.
      {"t2t-event-bootorder.bin", 0x6a6, 62, "Boot0000", 0x109, "UiApp",
       nullptr},
  };
  for (const RealOption& c : cases) {
    auto file = testing::ReadTextFile(dir + c.log);
    ASSERT_TRUE(file.has_value()) << c.log;
    const std::string_view log(*file);
    // Check the UEFI_VARIABLE_DATA header in front of the data.
    const size_t header = c.offset - 32 - 16;
    ASSERT_LE(c.offset + c.length, log.size()) << c.log;
    Bytes head(log.begin() + static_cast<long>(header),
               log.begin() + static_cast<long>(c.offset));
    EXPECT_EQ(head[16], 8) << "UnicodeNameLength, " << c.log;
    EXPECT_EQ(head[24] | (head[25] << 8), static_cast<int>(c.length))
        << "VariableDataLength, " << c.log;
    std::string name;
    for (size_t i = 32; i < 48; i += 2)
      name.push_back(static_cast<char>(head[i]));
    ASSERT_EQ(name, c.variable) << c.log;

    Bytes efivar = {7, 0, 0, 0};  // efivarfs attributes, not in the log
    efivar.insert(efivar.end(), log.begin() + static_cast<long>(c.offset),
                  log.begin() + static_cast<long>(c.offset + c.length));
    StatusOr<EfiLoadOption> lo = ParseEfiLoadOption(efivar);
    if (c.file_path == nullptr) {
      ASSERT_FALSE(lo.ok()) << c.log << " " << c.variable;
      EXPECT_EQ(lo.status().message(),
                "load option has no media file-path node (type 4, subtype 4).");
      continue;
    }
    ASSERT_TRUE(lo.ok()) << c.log << " " << c.variable << ": "
                         << lo.status().ToString();
    EXPECT_EQ(lo->attributes, c.attributes) << c.log;
    EXPECT_EQ(lo->description, c.description) << c.log;
    EXPECT_EQ(lo->file_path, c.file_path) << c.log;
  }
}

// ---- names, BootOrder, descriptions ----

TEST(BootOptionNameTest, FormatsAndRecognises) {
  EXPECT_EQ(BootOptionName(0x0001), "Boot0001");
  EXPECT_EQ(BootOptionName(0xBEEF), "BootBEEF");
  EXPECT_TRUE(IsBootOptionName("Boot000A"));
  for (const char* not_option : {"BootOrder", "BootNext", "Boot000a", "Boot01",
                                 "Boot00010", "boot0001", "Root0001"}) {
    EXPECT_FALSE(IsBootOptionName(not_option)) << not_option;
  }
}

TEST(BootOrderTest, ParsesUint16s) {
  StatusOr<std::vector<uint16_t>> order =
      ParseBootOrder(Bytes{0x01, 0x00, 0x0a, 0x00, 0xef, 0xbe});
  ASSERT_TRUE(order.ok()) << order.status().ToString();
  EXPECT_EQ(*order, (std::vector<uint16_t>{0x0001, 0x000a, 0xbeef}));
  order = ParseBootOrder(Bytes{});
  ASSERT_TRUE(order.ok());
  EXPECT_TRUE(order->empty());
  order = ParseBootOrder(Bytes{1, 0, 2});
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(order.status().message(),
            "BootOrder is 3 bytes; expected UINT16s (an even size).");
}

TEST(LoadOptionDescriptionTest, LossyUpToTheNul) {
  // Variable data (no efivarfs attributes): Attributes, FilePathListLength,
  // then the description.
  Bytes data = LoadOptionFile(1, u"ubuntu\u0001", ShimList());
  data.erase(data.begin(), data.begin() + 4);
  EXPECT_EQ(LoadOptionDescription(data), std::optional<std::string>("ubuntu "));
  EXPECT_EQ(LoadOptionDescription(Bytes(5, 0)), std::nullopt);
  EXPECT_EQ(LoadOptionDescription(Bytes(6, 0)), std::optional<std::string>(""));
}

}  // namespace
}  // namespace dpuaudit::uefi
