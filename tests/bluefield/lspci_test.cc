#include "bluefield/lspci.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "isolation/shared_fixtures.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::HasSubstr;

constexpr char kHead[] =
    "e2:00.0 Ethernet controller: Mellanox Technologies MT42822\n"
    "        Capabilities: [48] Vital Product Data\n";

TEST(LspciVpdTest, SharedVpdFixture) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-lspci-vvv-vpd-bf2.txt");
  StatusOr<LspciVpd> v = ParseLspciVpd(text);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->has_vpd_capability);
  EXPECT_EQ(v->serial_number, text_expected["serial_number"]);
  EXPECT_EQ(v->part_number, text_expected["part_number"]);
  EXPECT_EQ(v->engineering_changes, "A4");
  EXPECT_THAT(v->product_name, HasSubstr("BlueField-2 DPU 100GbE"));
  EXPECT_EQ(v->Value("V0"), "PCIeGen4 x16");
  EXPECT_EQ(v->fields.size(), 8u);
  EXPECT_EQ(v->note, "");
}

// The upstream test expects "UNDEFINED"; we return empty fields and a note.
TEST(LspciVpdTest, SharedNoVpdFixture) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-lspci-vvv-novpd-bf2.txt");
  ASSERT_EQ(text_expected["serial_number"], "UNDEFINED");
  StatusOr<LspciVpd> v = ParseLspciVpd(text);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->has_vpd_capability);
  EXPECT_EQ(v->serial_number, "");
  EXPECT_EQ(v->part_number, "");
  EXPECT_EQ(v->note, "the Vital Product Data block is empty");
}

TEST(LspciVpdTest, NoCapabilityAndAccessDenied) {
  StatusOr<LspciVpd> v = ParseLspciVpd(
      "e2:00.0 Ethernet controller: x\n\tRegion 0: Memory at 0\n");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->has_vpd_capability);
  EXPECT_EQ(v->note, "no Vital Product Data capability in lspci output");
  v = ParseLspciVpd("e2:00.0 x\n\tCapabilities: <access denied>\n");
  ASSERT_TRUE(v.ok());
  EXPECT_THAT(v->note, HasSubstr("<access denied>; needs root"));
}

TEST(LspciVpdTest, BlockEndsAtNextCapabilityWithoutEnd) {
  StatusOr<LspciVpd> v = ParseLspciVpd(
      std::string(kHead) +
      "                [SN] Serial number: MT1\n"
      "        Capabilities: [9c] MSI-X: Enable+ Count=64\n"
      "                [PN] Part number: not-vpd\n");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->serial_number, "MT1");
  EXPECT_EQ(v->part_number, "");
}

TEST(LspciVpdTest, TabsAndEmptyValue) {
  StatusOr<LspciVpd> v = ParseLspciVpd(
      "03:00.0 x\n\tCapabilities: [48] Vital Product Data\n"
      "\t\tRead-only fields:\n\t\t\t[PN] Part number:\n"
      "\t\t\t[SN] Serial number:   MT2 \n\t\tEnd\n");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->part_number, "");
  EXPECT_EQ(v->serial_number, "MT2");
  EXPECT_EQ(v->note, "");
}

struct Bad {
  const char* name;
  std::string text;
  const char* message;
};

class LspciVpdRejectTest : public ::testing::TestWithParam<Bad> {};

TEST_P(LspciVpdRejectTest, Rejects) {
  StatusOr<LspciVpd> v = ParseLspciVpd(GetParam().text);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(v.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LspciVpdRejectTest,
    ::testing::Values(
        Bad{"Empty", "", "lspci output is empty."},
        Bad{"Blank", "\n  \n", "lspci output is empty."},
        Bad{"Nul", std::string("e2:00.0 x\n\0\n", 12), "lspci output"},
        Bad{"RepeatedSerial",
            std::string(kHead) + "\t\t[SN] Serial number: A\n"
                                 "\t\t[SN] Serial number: B\n",
            "lspci output line 4: VPD field [SN] repeats line 3."},
        Bad{"BadKeyword", std::string(kHead) + "\t\t[SNX] Serial: A\n",
            "line 3: VPD field '[SNX] Serial: A' has no two-character"},
        Bad{"NoColon", std::string(kHead) + "\t\t[SN] Serial number A\n",
            "line 3: VPD field [SN] has no ':'."},
        Bad{"SecondBlock",
            std::string(kHead) + "\t\tEnd\n" +
                "        Capabilities: [50] Vital Product Data\n",
            "line 4: a second Vital Product Data block."}),
    [](const ::testing::TestParamInfo<Bad>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace dpuaudit::bluefield
