// Byte builders for UEFI load options and device paths (UEFI 2.x §3.1.3,
// §10.3), shared by tests/uefi and tests/firmware.
#ifndef DPUAUDIT_TESTS_TESTING_LOAD_OPTION_BYTES_H_
#define DPUAUDIT_TESTS_TESTING_LOAD_OPTION_BYTES_H_

#include <cstdint>
#include <string>

#include "common/bytes.h"

namespace dpuaudit::testing {

inline void PutU16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
inline void PutU32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void Append(Bytes& b, const Bytes& more) {
  b.insert(b.end(), more.begin(), more.end());
}
// UTF-16LE code units, no terminator.
inline Bytes Units(const std::u16string& s) {
  Bytes b;
  for (char16_t c : s) PutU16(b, static_cast<uint16_t>(c));
  return b;
}
// A device path node: Type, SubType, UINT16 Length (header included), data.
inline Bytes Node(uint8_t type, uint8_t sub, const Bytes& data) {
  Bytes b = {type, sub};
  PutU16(b, static_cast<uint16_t>(4 + data.size()));
  Append(b, data);
  return b;
}
// Media / File Path (4/4): NUL-terminated UCS-2 PathName.
inline Bytes FileNode(const std::u16string& path) {
  return Node(4, 4, Units(path + u'\0'));
}
// End Entire Device Path (0x7f/0xff), length 4.
inline Bytes EndNode() { return Node(0x7f, 0xff, {}); }
// Media / Hard Drive (4/1), 42 bytes as on an Ubuntu ESP (GPT partition 1).
inline Bytes HdNode() {
  Bytes d;
  PutU32(d, 1);  // PartitionNumber
  for (int i = 0; i < 8; ++i)
    d.push_back(i == 1 ? 0x08 : 0);  // PartitionStart 2048
  for (int i = 0; i < 8; ++i) d.push_back(i == 2 ? 0x10 : 0);  // PartitionSize
  for (int i = 0; i < 16; ++i)
    d.push_back(static_cast<uint8_t>(0xa0 + i));  // GPT GUID
  d.push_back(0x02);                              // PartitionFormat: GPT
  d.push_back(0x02);                              // SignatureType: GUID
  return Node(4, 1, d);
}
// An efivarfs Boot#### file: UINT32 efivarfs attributes (NV|BS|RT = 7),
// then EFI_LOAD_OPTION: UINT32 Attributes, UINT16 FilePathListLength,
// NUL-terminated UCS-2 Description, FilePathList, OptionalData.
inline Bytes LoadOptionFile(uint32_t attributes,
                            const std::u16string& description,
                            const Bytes& list, const Bytes& optional = {},
                            int list_len_override = -1) {
  Bytes b;
  PutU32(b, 7);
  PutU32(b, attributes);
  PutU16(b, static_cast<uint16_t>(list_len_override >= 0 ? list_len_override
                                                         : list.size()));
  Append(b, Units(description + u'\0'));
  Append(b, list);
  Append(b, optional);
  return b;
}
inline Bytes ShimList(
    const std::u16string& path = u"\\EFI\\ubuntu\\shimaa64.efi") {
  Bytes l = HdNode();
  Append(l, FileNode(path));
  Append(l, EndNode());
  return l;
}
// efivarfs BootCurrent: attributes (BS|RT = 6), UINT16 LE.
inline Bytes BootCurrentFile(uint16_t n) {
  Bytes b;
  PutU32(b, 6);
  PutU16(b, n);
  return b;
}

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_TESTING_LOAD_OPTION_BYTES_H_
