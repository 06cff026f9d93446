#include "bluefield/flint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "isolation/shared_fixtures.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FlintTest, SharedBf2QueryFullFixture) {
  SHARED_FIXTURE_OR_SKIP(text, "bmm-flint-q-full-bf2.txt");
  StatusOr<FlintQuery> q = ParseFlintQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  for (const char* key :
       {"FW Version", "FW Release Date", "Part Number", "Product Version",
        "PSID", "Security Attributes", "Life cycle", "Secure Boot Capable"}) {
    EXPECT_EQ(q->Value(key), text_expected[key].get<std::string>()) << key;
  }
  EXPECT_EQ(FirstToken(q->Value("Base MAC")),
            text_expected["Base MAC"].get<std::string>());
  // First match wins: the product description, not the GUID table header.
  EXPECT_THAT(q->Value("Description"), HasSubstr("BlueField-2 P-Series DPU"));
  EXPECT_EQ(q->fields[7].key, "Description");
  EXPECT_EQ(q->fields[7].value, "UID                GuidsNumber");
  // Column-0 Rom Info continuation lines.
  EXPECT_THAT(q->rom_info,
              ElementsAre("type=UEFI Virtio net version=21.4.10 "
                          "cpu=AMD64,AARCH64",
                          "type=UEFI Virtio blk version=22.4.10 "
                          "cpu=AMD64,AARCH64",
                          "type=UEFI version=14.28.16 cpu=AMD64,AARCH64",
                          "type=PXE version=3.6.805 cpu=AMD64"));
  EXPECT_EQ(q->Value("Security Ver Program"), "Manually ; Disabled");
  EXPECT_EQ(q->Find("Image type")->line, 1);
  EXPECT_EQ(q->Find("Base GUID")->line, 12);
}

TEST(FlintTest, ProjectFixtureBf3IndentedRomInfo) {
  auto text = testing::ReadTextFile(
      testing::ProjectFixturePath("bf3-zero-trust/out/flint-q-full.txt"));
  ASSERT_TRUE(text.has_value());
  StatusOr<FlintQuery> q = ParseFlintQuery(*text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->Value("FW Version"), "32.43.2402");
  EXPECT_EQ(q->Value("PSID"), "MT_0000009001");
  EXPECT_EQ(FirstToken(q->Value("Base MAC")), "0200a1000001");
  EXPECT_EQ(q->Value("Life cycle"), "GA SECURED");
  EXPECT_EQ(q->Value("Security Attributes"), "secure-fw");
  EXPECT_EQ(q->rom_info.size(), 4u);
  EXPECT_EQ(q->rom_info[3], "type=PXE version=3.7.400 cpu=AMD64");
}

// BF3 `mstflint q` sample (docs/bluefield.md#flint; no `full` fields).
TEST(FlintTest, DocBf3QuerySample) {
  const std::string text =
      "Image type:            FS4\n"
      "FW Version:            32.41.1000\n"
      "FW Release Date:       28.4.2024\n"
      "Product Version:       32.41.1000\n"
      "Rom Info:              type=UEFI Virtio net version=21.4.13 "
      "cpu=AMD64,AARCH64\n"
      "                       type=UEFI Virtio blk version=22.4.13 "
      "cpu=AMD64,AARCH64\n"
      "                       type=UEFI version=14.34.12 cpu=AMD64,AARCH64\n"
      "                       type=PXE version=3.7.400 cpu=AMD64\n"
      "Description:           UID                GuidsNumber\n"
      "Base GUID:             946dae03004f296a        38\n"
      "Base MAC:              946dae4f296a            38\n"
      "Image VSD:             N/A\n"
      "Device VSD:            N/A\n"
      "PSID:                  MT_0000000998\n";
  StatusOr<FlintQuery> q = ParseFlintQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->Value("PSID"), "MT_0000000998");
  EXPECT_EQ(q->Value("Part Number"), "");
  EXPECT_EQ(q->Find("Part Number"), nullptr);
  // Here the only Description is the GUID header; callers must not take it
  // for a product description (identity does not use it).
  EXPECT_EQ(q->Value("Description"), "UID                GuidsNumber");
  EXPECT_EQ(q->rom_info.size(), 4u);
}

TEST(FlintTest, SecurityAttributesWithSuffixesKeptVerbatim) {
  StatusOr<FlintQuery> q = ParseFlintQuery(
      "Security Attributes:   secure-fw, dev\nLife cycle:            "
      "PRE PRODUCTION\n");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->Value("Security Attributes"), "secure-fw, dev");
  EXPECT_EQ(q->Value("Life cycle"), "PRE PRODUCTION");
}

struct ErrorCase {
  const char* name;
  std::string text;
  const char* message;
};

class FlintErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(FlintErrorTest, Rejects) {
  StatusOr<FlintQuery> q = ParseFlintQuery(GetParam().text);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(q.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FlintErrorTest,
    ::testing::Values(
        ErrorCase{"Empty", "", "flint output: no fields."},
        ErrorCase{"BlankOnly", "\n\n", "flint output: no fields."},
        ErrorCase{"ToolError",
                  "-E- Cannot open Device: /dev/mst/mt41692_pciconf0. "
                  "HW access is disabled on the device.\n",
                  "line 1: expected 'Key: value'"},
        ErrorCase{"IndentedFirst", "   type=PXE\n",
                  "line 1: expected 'Key: value'"},
        ErrorCase{"StrayLine", "FW Version: 1\nPSID: x\ngarbage\n",
                  "line 3: expected 'Key: value', got 'garbage'"},
        ErrorCase{"Nul", std::string("FW Version: 1\0\n", 15),
                  "line 1: contains a NUL byte"}),
    [](const ::testing::TestParamInfo<ErrorCase>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace dpuaudit::bluefield
