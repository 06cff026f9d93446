#include "uefi/variable.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/load_option_bytes.h"

namespace dpuaudit::uefi {
namespace {

using namespace ::dpuaudit::testing;  // byte builders

void PutU64(Bytes& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutGuid(Bytes& b, const Guid& g) {
  b.insert(b.end(), g.bytes.begin(), g.bytes.end());
}

// UEFI_VARIABLE_DATA.
Bytes Variable(const Guid& guid, const std::u16string& name,
               const Bytes& data) {
  Bytes b;
  PutGuid(b, guid);
  PutU64(b, name.size());
  PutU64(b, data.size());
  Append(b, Units(name));
  Append(b, data);
  return b;
}

// One EFI_SIGNATURE_LIST of `sigs` (each: owner GUID of 0x11s, then data).
Bytes SignatureList(const Guid& type, const std::vector<Bytes>& sigs,
                    size_t header = 0) {
  const size_t sig_size = 16 + (sigs.empty() ? 0 : sigs[0].size());
  Bytes b;
  PutGuid(b, type);
  PutU32(b, static_cast<uint32_t>(28 + header + sigs.size() * sig_size));
  PutU32(b, static_cast<uint32_t>(header));
  PutU32(b, static_cast<uint32_t>(sig_size));
  b.insert(b.end(), header, 0xee);
  for (const Bytes& s : sigs) {
    b.insert(b.end(), 16, 0x11);
    Append(b, s);
  }
  return b;
}

TEST(UefiVariableTest, Decodes) {
  Bytes raw = Variable(kEfiGlobalVariable, u"SecureBoot", {1});
  raw.push_back(0xaa);  // trailing bytes are ignored
  StatusOr<UefiVariable> v = DecodeUefiVariable(raw);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->guid, kEfiGlobalVariable);
  EXPECT_EQ(v->name, "SecureBoot");
  ASSERT_EQ(v->data.size(), 1u);
  EXPECT_EQ(v->data[0], 1);
  EXPECT_EQ(v->data.data(), raw.data() + 16 + 16 + 20);  // a view into raw
}

TEST(UefiVariableTest, Errors) {
  Bytes truncated = Variable(kEfiGlobalVariable, u"SecureBoot", {1});
  truncated.resize(20);
  EXPECT_EQ(DecodeUefiVariable(truncated).status().message(),
            "UnicodeNameLength at offset 0x10: need 8 bytes, 4 left.");
  Bytes long_name = Variable(kEfiGlobalVariable, u"PK", {});
  long_name[16] = 0xff;
  EXPECT_EQ(DecodeUefiVariable(long_name).status().message(),
            "UEFI variable: UnicodeNameLength 255 exceeds the 4 bytes left.");
  Bytes long_data = Variable(kEfiGlobalVariable, u"PK", {});
  long_data[24] = 3;
  EXPECT_EQ(DecodeUefiVariable(long_data).status().message(),
            "UEFI variable: VariableDataLength 3 exceeds the 0 bytes left.");
}

TEST(SignatureListTest, ParsesListsAndSignatures) {
  Bytes data = SignatureList(kEfiCertSha256, {Bytes(32, 1), Bytes(32, 2)});
  const size_t second = data.size();
  Append(data, SignatureList(kEfiCertX509, {Bytes{0x30, 0x00}}, 4));
  std::vector<EfiSignatureList> lists;
  ASSERT_TRUE(ParseSignatureLists(data, &lists).ok());
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[0].offset, 0u);
  EXPECT_EQ(lists[0].type, kEfiCertSha256);
  ASSERT_EQ(lists[0].signatures.size(), 2u);
  EXPECT_EQ(lists[0].signatures[1].data.size(), 32u);
  EXPECT_EQ(lists[0].signatures[1].data[0], 2);
  EXPECT_EQ(lists[0].signatures[0].owner.bytes[0], 0x11);
  EXPECT_EQ(lists[1].offset, second);
  EXPECT_EQ(lists[1].type, kEfiCertX509);
  ASSERT_EQ(lists[1].signatures.size(), 1u);
  EXPECT_EQ(lists[1].signatures[0].data.size(), 2u);
  lists.clear();
  ASSERT_TRUE(ParseSignatureLists({}, &lists).ok());
  EXPECT_TRUE(lists.empty());
}

TEST(SignatureListTest, AStructureErrorKeepsTheListsBeforeIt) {
  const Bytes good = SignatureList(kEfiCertSha256, {Bytes(32, 1)});
  struct Case {
    Bytes bad;
    std::string message;
  } cases[] = {
      {Bytes(10, 0), ": 10 bytes left, shorter than its 28-byte header."},
      {[] {
         Bytes b = SignatureList(kEfiCertSha256, {Bytes(32, 1)});
         b[16] = 0xff;  // SignatureListSize
         return b;
       }(),
       ": SignatureListSize 255 does not fit the 76 bytes left."},
      {[] {
         Bytes b = SignatureList(kEfiCertSha256, {Bytes(32, 1)});
         b[20] = 0x7f;  // SignatureHeaderSize
         return b;
       }(),
       ": SignatureHeaderSize 127 exceeds the list."},
      {[] {
         Bytes b = SignatureList(kEfiCertSha256, {Bytes(32, 1)});
         b[24] = 15;  // SignatureSize
         return b;
       }(),
       ": SignatureSize 15 is smaller than the 16-byte owner GUID."},
      {[] {
         Bytes b = SignatureList(kEfiCertSha256, {Bytes(32, 1)});
         b[24] = 47;  // SignatureSize
         return b;
       }(),
       ": 48 bytes of signatures are not a multiple of SignatureSize 47."},
  };
  for (const Case& c : cases) {
    Bytes data = good;
    Append(data, c.bad);
    std::vector<EfiSignatureList> lists;
    Status s = ParseSignatureLists(data, &lists);
    ASSERT_FALSE(s.ok()) << c.message;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "EFI_SIGNATURE_LIST at offset 0x4c" + c.message);
    EXPECT_EQ(lists.size(), 1u) << c.message;
  }
}

TEST(SecureBootTest, ValueAndClassification) {
  EXPECT_EQ(ParseSecureBootValue({}).value(), false);  // absent variable
  EXPECT_EQ(ParseSecureBootValue(Bytes{0}).value(), false);
  EXPECT_EQ(ParseSecureBootValue(Bytes{2}).value(), true);
  EXPECT_EQ(ParseSecureBootValue(Bytes{1, 0}).status().message(),
            "SecureBoot holds 2 bytes, expected 1.");

  using K = SecureBootVariable;
  EXPECT_EQ(ClassifySecureBootVariable(kEfiGlobalVariable, "SecureBoot"),
            K::kSecureBoot);
  EXPECT_EQ(ClassifySecureBootVariable(kEfiGlobalVariable, "PK"), K::kPk);
  EXPECT_EQ(ClassifySecureBootVariable(kEfiGlobalVariable, "KEK"), K::kKek);
  EXPECT_EQ(ClassifySecureBootVariable(kEfiImageSecurityDatabase, "db"),
            K::kDb);
  EXPECT_EQ(ClassifySecureBootVariable(kEfiImageSecurityDatabase, "dbx"),
            K::kDbx);
  EXPECT_EQ(ClassifySecureBootVariable(kEfiImageSecurityDatabase, "PK"),
            K::kOther);
  EXPECT_EQ(ClassifySecureBootVariable(kEfiGlobalVariable, "db"), K::kOther);
  EXPECT_EQ(ClassifySecureBootVariable(kEfiCertX509, "SecureBoot"), K::kOther);
}

}  // namespace
}  // namespace dpuaudit::uefi
