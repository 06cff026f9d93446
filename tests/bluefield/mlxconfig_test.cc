#include "bluefield/mlxconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "isolation/shared_fixtures.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::HasSubstr;

// The BF2 `-e` header of mstflint 4.25 (mstflint issue #830;
// docs/bluefield.md#mlxconfig), with trailing spaces kept; rows are appended
// by the tests.
const char kBf2Header[] =
    "Device #1:\n"
    "----------\n"
    "\n"
    "Device type:    BlueField2      \n"
    "Name:           MBF2H512C-AECO_Ax\n"
    "Description:    BlueField-2 P-Series DPU 25GbE Dual-Port SFP56; "
    "integrated BMC; PCIe Gen4 x8; Secure Boot Enabled; Crypto Enabled; 16GB "
    "on-board DDR; 1GbE OOB management; FHHL\n"
    "Device:         ca:00.0         \n"
    "\n"
    "Configurations:                                      Default         "
    "Current         Next Boot\n";

// A `-e` row in the §2.1 layout: 9 spaces, 44-char name, 16-char columns.
// A value longer than its column is followed by one space.
std::string Pad(std::string s, size_t width) {
  s.resize(std::max(width, s.size() + 1), ' ');
  return s;
}

std::string Row(const std::string& name, const std::string& d,
                const std::string& c, const std::string& n,
                const std::string& prefix = "") {
  return Pad(prefix, 9) + Pad(name, 44) + Pad(d, 16) + Pad(c, 16) + Pad(n, 16) +
         "\n";
}

std::string Header(const std::string& type) {
  std::string h = kBf2Header;
  if (type != "BlueField2") {
    h.replace(h.find("BlueField2      "), 16, type + "      ");
  }
  return h;
}

// Five INTERNAL_CPU_* rows with the same value in every column.
std::string ModeRows(const std::string& model, const std::string& owner,
                     const std::string& offload) {
  return Row("INTERNAL_CPU_MODEL", model, model, model) +
         Row("INTERNAL_CPU_PAGE_SUPPLIER", owner, owner, owner) +
         Row("INTERNAL_CPU_ESWITCH_MANAGER", owner, owner, owner) +
         Row("INTERNAL_CPU_IB_VPORT0", owner, owner, owner) +
         Row("INTERNAL_CPU_OFFLOAD_ENGINE", offload, offload, offload);
}

MlxconfigQuery MustParse(const std::string& text) {
  StatusOr<MlxconfigQuery> q = ParseMlxconfigQuery(text);
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  return q.ok() ? *q : MlxconfigQuery{};
}

TEST(MlxconfigTest, SharedEmbeddedFixtureNextBootOnly) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-mlxconfig-q-bf2-embedded.txt");
  StatusOr<MlxconfigQuery> q = ParseMlxconfigQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->device_type, "BlueField2");
  EXPECT_EQ(q->name, "MBF2M516A-EEEO_Ax");
  EXPECT_EQ(q->device, "/dev/mst/mt41686_pciconf0");
  EXPECT_FALSE(q->has_current);
  EXPECT_EQ(q->params.size(), 20u);
  const MlxconfigParam* model = q->Find("INTERNAL_CPU_MODEL");
  ASSERT_NE(model, nullptr);
  // The trap: `_INTERNAL_CPU_MODEL SEPARATED_HOST(0)` is another row.
  EXPECT_EQ(model->next_boot_value,
            text_expected["INTERNAL_CPU_MODEL"].get<std::string>());
  EXPECT_EQ(model->next_boot_value, "EMBEDDED_CPU(1)");
  EXPECT_FALSE(model->current_value.has_value());
  const MlxconfigParam* decoy = q->Find("_INTERNAL_CPU_MODEL");
  ASSERT_NE(decoy, nullptr);
  EXPECT_EQ(decoy->next_boot_value, "SEPARATED_HOST(0)");
  ASSERT_NE(q->Find("LINK_TYPE_P1"), nullptr);
  EXPECT_EQ(q->Find("LINK_TYPE_P1")->next_boot_value,
            text_expected["LINK_TYPE_P1"].get<std::string>());
  EXPECT_EQ(q->Find("HOST_CHAINING_DESCRIPTORS")->next_boot_value,
            "Array[0..7]");
  // No Current column: the mode is never read from Next Boot.
  ModeClassification m = ClassifyOperationMode(*q, Generation::kBlueField2);
  EXPECT_EQ(m.mode, OperationMode::kUnknown);
  EXPECT_THAT(m.detail, HasSubstr("no Current column"));
}

TEST(MlxconfigTest, SharedSeparatedFixture) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-mlxconfig-q-bf2-separated.txt");
  StatusOr<MlxconfigQuery> q = ParseMlxconfigQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->device, "/dev/mst/mt41686_pciconf0.1");
  ASSERT_NE(q->Find("INTERNAL_CPU_MODEL"), nullptr);
  EXPECT_EQ(q->Find("INTERNAL_CPU_MODEL")->next_boot_value,
            text_expected["INTERNAL_CPU_MODEL"].get<std::string>());
  EXPECT_EQ(q->params.size(), 2u);
}

TEST(MlxconfigTest, ProjectFixtureBf3DpuMode) {
  for (const char* node : {"bf3-zero-trust", "bf3-privileged-host"}) {
    auto text = testing::ReadTextFile(testing::ProjectFixturePath(
        std::string(node) + "/out/mlxconfig-e-q.txt"));
    ASSERT_TRUE(text.has_value()) << node;
    MlxconfigQuery q = MustParse(*text);
    EXPECT_EQ(q.device_type, "BlueField3");
    EXPECT_TRUE(q.has_current);
    EXPECT_EQ(q.device, "/dev/mst/mt41692_pciconf0");
    ASSERT_NE(q.Find("INTERNAL_CPU_OFFLOAD_ENGINE"), nullptr);
    EXPECT_EQ(q.Find("INTERNAL_CPU_OFFLOAD_ENGINE")->current_value,
              "ENABLED(0)");
    ModeClassification m =
        ClassifyOperationMode(q, GenerationFromDeviceType(q.device_type));
    EXPECT_EQ(m.mode, OperationMode::kDpu) << m.detail;
  }
}

// The §2.1 BF2 `-e` sample verbatim: its last row was cut in the source
// (two values for three columns) and must be rejected, not guessed.
TEST(MlxconfigTest, DocBf2ExtendedSampleTruncatedRowRejected) {
  std::string text = Header("BlueField2") +
                     Row("MEMIC_BAR_SIZE", "0", "0", "0") +
                     Row("INTERNAL_CPU_MODEL", "EMBEDDED_CPU(1)",
                         "EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)") +
                     "         INTERNAL_CPU_PAGE_SUPPLIER                  "
                     "ECPF(0)         ECPF(0)\n";
  StatusOr<MlxconfigQuery> q = ParseMlxconfigQuery(text);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(),
            "mlxconfig output line 12: INTERNAL_CPU_PAGE_SUPPLIER has 2 "
            "values, expected 3 (Default, Current, Next Boot).");
}

TEST(MlxconfigTest, ExtendedColumnsAndEmbeddedCpuFillingItsColumn) {
  MlxconfigQuery q =
      MustParse(Header("BlueField2") +
                Row("MEMIC_SIZE_LIMIT", "_256KB(1)", "_256KB(1)", "_256KB(1)") +
                ModeRows("EMBEDDED_CPU(1)", "ECPF(0)", "ENABLED(0)"));
  EXPECT_EQ(q.name, "MBF2H512C-AECO_Ax");
  EXPECT_EQ(q.device, "ca:00.0");
  EXPECT_EQ(q.device_type, "BlueField2");
  const MlxconfigParam* m = q.Find("INTERNAL_CPU_MODEL");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->default_value, "EMBEDDED_CPU(1)");
  EXPECT_EQ(m->current_value, "EMBEDDED_CPU(1)");
  EXPECT_EQ(m->next_boot_value, "EMBEDDED_CPU(1)");
  EXPECT_EQ(m->line, 11);
  EXPECT_EQ(ClassifyOperationMode(q, Generation::kBlueField2).mode,
            OperationMode::kDpu);
}

TEST(MlxconfigTest, PrefixesModifiedAndReadOnly) {
  MlxconfigQuery q = MustParse(
      Header("BlueField3") +
      Row("LINK_TYPE_P1", "ETH(2)", "ETH(2)", "IB(1)", "*") +
      Row("DPA_AUTHENTICATION", "False(0)", "False(0)", "False(0)", "  RO") +
      Row("NUM_OF_PF", "2", "2", "1", "*RO") +
      Row("USER_PROGRAMMABLE_CC", "False(0)", "True(1)", "True(1)", "* RO") +
      "The '*' shows parameters with next value different from "
      "default/current value.\n"
      "The 'RO' shows parameters which are for read only and cannot be "
      "changed\n");
  ASSERT_EQ(q.params.size(), 4u);
  EXPECT_TRUE(q.params[0].modified);
  EXPECT_FALSE(q.params[0].read_only);
  EXPECT_EQ(q.params[0].next_boot_value, "IB(1)");
  EXPECT_FALSE(q.params[1].modified);
  EXPECT_TRUE(q.params[1].read_only);
  EXPECT_TRUE(q.params[2].modified);
  EXPECT_TRUE(q.params[2].read_only);
  EXPECT_TRUE(q.params[3].modified);
  EXPECT_TRUE(q.params[3].read_only);
  EXPECT_EQ(q.params[3].current_value, "True(1)");
}

// Newer layout: 56-char name column and `*`/`RO` markers in the first
// columns; whitespace splitting must not care.
TEST(MlxconfigTest, WiderColumnsStillParse) {
  std::string text =
      "\nDevice #1:\n----------\n\nDevice type:        BlueField3\n"
      "Name:               900-9D3B6-00CV-AA0_Ax\n"
      "Description:        x\nDevice:             03:00.0\n\n"
      "Configurations:                                                  "
      "Default             Current             Next Boot\n"
      "        INTERNAL_CPU_MODEL                                       "
      "EMBEDDED_CPU(1)     EMBEDDED_CPU(1)     EMBEDDED_CPU(1)\n"
      "*       INTERNAL_CPU_OFFLOAD_ENGINE                              "
      "ENABLED(0)          ENABLED(0)          DISABLED(1)\n";
  MlxconfigQuery q = MustParse(text);
  ASSERT_EQ(q.params.size(), 2u);
  EXPECT_EQ(q.params[1].current_value, "ENABLED(0)");
  EXPECT_EQ(q.params[1].next_boot_value, "DISABLED(1)");
  EXPECT_TRUE(q.params[1].modified);
}

struct ModeCase {
  const char* name;
  std::string type;
  std::string model, owner, offload;
  Generation generation;
  OperationMode expected;
};

class ModeTest : public ::testing::TestWithParam<ModeCase> {};

TEST_P(ModeTest, Classifies) {
  const ModeCase& c = GetParam();
  MlxconfigQuery q =
      MustParse(Header(c.type) + ModeRows(c.model, c.owner, c.offload));
  ModeClassification m = ClassifyOperationMode(q, c.generation);
  EXPECT_EQ(m.mode, c.expected) << m.detail;
  EXPECT_THAT(m.detail, HasSubstr("INTERNAL_CPU_MODEL=" + c.model));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ModeTest,
    ::testing::Values(
        // §2.3 DPU mode BF2: EMBEDDED_CPU(1) ECPF(0) x3 ENABLED(0).
        ModeCase{"Bf2Dpu", "BlueField2", "EMBEDDED_CPU(1)", "ECPF(0)",
                 "ENABLED(0)", Generation::kBlueField2, OperationMode::kDpu},
        // §2.3 NIC mode BF2: EMBEDDED_CPU(1) EXT_HOST_PF(1) x3 DISABLED(1).
        ModeCase{"Bf2Nic", "BlueField2", "EMBEDDED_CPU(1)", "EXT_HOST_PF(1)",
                 "DISABLED(1)", Generation::kBlueField2, OperationMode::kNic},
        // BF2 half-switched: owners moved but offload still enabled.
        ModeCase{"Bf2Mixed", "BlueField2", "EMBEDDED_CPU(1)", "EXT_HOST_PF(1)",
                 "ENABLED(0)", Generation::kBlueField2,
                 OperationMode::kUnknown},
        // BF2 with offload disabled only: neither tuple.
        ModeCase{"Bf2OffloadOnly", "BlueField2", "EMBEDDED_CPU(1)", "ECPF(0)",
                 "DISABLED(1)", Generation::kBlueField2,
                 OperationMode::kUnknown},
        // §2.3 BF3: NIC mode is OFFLOAD_ENGINE DISABLED(1).
        ModeCase{"Bf3NicOffloadOnly", "BlueField3", "EMBEDDED_CPU(1)",
                 "ECPF(0)", "DISABLED(1)", Generation::kBlueField3,
                 OperationMode::kNic},
        ModeCase{"Bf3Nic", "BlueField3", "EMBEDDED_CPU(1)", "EXT_HOST_PF(1)",
                 "DISABLED(1)", Generation::kBlueField3, OperationMode::kNic},
        ModeCase{"Bf3Dpu", "BlueField3", "EMBEDDED_CPU(1)", "ECPF(0)",
                 "ENABLED(0)", Generation::kBlueField3, OperationMode::kDpu},
        ModeCase{"Bf3Inconsistent", "BlueField3", "EMBEDDED_CPU(1)",
                 "EXT_HOST_PF(1)", "ENABLED(0)", Generation::kBlueField3,
                 OperationMode::kUnknown},
        ModeCase{"SeparatedHost", "BlueField2", "SEPARATED_HOST(0)", "ECPF(0)",
                 "ENABLED(0)", Generation::kBlueField2,
                 OperationMode::kSeparatedHost},
        ModeCase{"UnknownModelValue", "BlueField2", "WEIRD(7)", "ECPF(0)",
                 "ENABLED(0)", Generation::kBlueField2,
                 OperationMode::kUnknown},
        ModeCase{"UnknownGenerationUsesBf2Rules", "ConnectX7",
                 "EMBEDDED_CPU(1)", "ECPF(0)", "DISABLED(1)",
                 Generation::kUnknown, OperationMode::kUnknown}),
    [](const ::testing::TestParamInfo<ModeCase>& param_info) {
      return std::string(param_info.param.name);
    });

// Staged change: Current says DPU, Next Boot says NIC. Parsed, and the
// mode is read from Current only.
TEST(MlxconfigTest, PendingNextBootDiffersFromCurrent) {
  MlxconfigQuery q = MustParse(Header("BlueField3") +
                               Row("INTERNAL_CPU_MODEL", "EMBEDDED_CPU(1)",
                                   "EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)") +
                               Row("INTERNAL_CPU_OFFLOAD_ENGINE", "ENABLED(0)",
                                   "ENABLED(0)", "DISABLED(1)", "*"));
  const MlxconfigParam* p = q.Find("INTERNAL_CPU_OFFLOAD_ENGINE");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->current_value, "ENABLED(0)");
  EXPECT_EQ(p->next_boot_value, "DISABLED(1)");
  EXPECT_EQ(ClassifyOperationMode(q, Generation::kBlueField3).mode,
            OperationMode::kDpu);
}

TEST(MlxconfigTest, MissingModelRowIsUnknown) {
  MlxconfigQuery q =
      MustParse(Header("BlueField3") + Row("MEMIC_BAR_SIZE", "0", "0", "0"));
  ModeClassification m = ClassifyOperationMode(q, Generation::kBlueField3);
  EXPECT_EQ(m.mode, OperationMode::kUnknown);
  EXPECT_EQ(m.detail, "no INTERNAL_CPU_MODEL row");
}

TEST(MlxconfigTest, Bf3MissingOffloadRowIsUnknown) {
  MlxconfigQuery q = MustParse(Header("BlueField3") +
                               Row("INTERNAL_CPU_MODEL", "EMBEDDED_CPU(1)",
                                   "EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)"));
  ModeClassification m = ClassifyOperationMode(q, Generation::kBlueField3);
  EXPECT_EQ(m.mode, OperationMode::kUnknown);
  EXPECT_THAT(m.detail, HasSubstr("no INTERNAL_CPU_OFFLOAD_ENGINE row"));
}

struct ErrorCase {
  const char* name;
  std::string text;
  const char* message;
};

class MlxconfigErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(MlxconfigErrorTest, Rejects) {
  StatusOr<MlxconfigQuery> q = ParseMlxconfigQuery(GetParam().text);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(q.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MlxconfigErrorTest,
    ::testing::Values(
        ErrorCase{"Empty", "", "no 'Device #1:' block"},
        ErrorCase{"ToolError",
                  "-E- Failed to open device: /dev/mst/mt41692_pciconf0\n",
                  "line 1: expected 'Device #1:'"},
        ErrorCase{"HeaderOnly", "Device #1:\n----------\nDevice type: X\n",
                  "no 'Configurations:' table"},
        ErrorCase{"MissingName",
                  "Device #1:\nDevice type: BlueField3\nDescription: d\n"
                  "Device: x\nConfigurations:   Next Boot\n",
                  "line 5: header lacks one of"},
        ErrorCase{"BadColumns",
                  "Device #1:\nDevice type: B\nName: n\nDescription: d\n"
                  "Device: x\nConfigurations:   Current\n",
                  "line 6: unknown column header 'Current'"},
        ErrorCase{"ExtraValue", Header("BlueField3") + "   X   1   2   3   4\n",
                  "line 10: X has 4 values, expected 3"},
        ErrorCase{"Repeated",
                  Header("BlueField3") + Row("X", "1", "1", "1") +
                      Row("X", "1", "1", "1"),
                  "line 11: X repeated (first on line 10)"},
        ErrorCase{"BadName", Header("BlueField3") + "  -E- oops  1 2 3\n",
                  "line 10: expected a parameter row"},
        ErrorCase{
            "SecondDevice",
            Header("BlueField3") + Row("X", "1", "1", "1") + "Device #2:\n",
            "line 11: a second device"},
        ErrorCase{"AfterFooter",
                  Header("BlueField3") + "The '*' shows ...\n" +
                      Row("X", "1", "1", "1"),
                  "line 11: unexpected line after the table footer"},
        ErrorCase{"UnknownHeaderField", "Device #1:\nFirmware: 1\n",
                  "line 2: unknown header field 'Firmware'"}),
    [](const ::testing::TestParamInfo<ErrorCase>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace dpuaudit::bluefield

namespace dpuaudit::bluefield {
namespace {

// "%-16s" columns: a 17-character value runs into the next one.
TEST(MlxconfigGluedColumnsTest, SplitsValuesLongerThanTheColumn) {
  const std::string text =
      "\nDevice #1:\n----------\n\n"
      "Device type:    BlueField2      \n"
      "Name:           MBF2H536C-CECO_Ax_Bx\n"
      "Description:    BlueField-2 DPU\n"
      "Device:         /dev/mst/mt41686_pciconf0\n\n"
      "Configurations:                                      Default         "
      "Current         Next Boot\n"
      "         INTERNAL_CPU_MODEL                          "
      "SEPARATED_HOST(0)SEPARATED_HOST(0)EMBEDDED_CPU(1) \n"
      "         MEMIC_SIZE_LIMIT                            _256KB(1)       "
      "_256KB(1)       _256KB(1)       \n";
  auto q = ParseMlxconfigQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const MlxconfigParam* p = q->Find("INTERNAL_CPU_MODEL");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->default_value, "SEPARATED_HOST(0)");
  EXPECT_EQ(p->current_value, "SEPARATED_HOST(0)");
  EXPECT_EQ(p->next_boot_value, "EMBEDDED_CPU(1)");
}

TEST(MlxconfigGluedColumnsTest, StillRejectsRowsThatAreShortForOtherReasons) {
  const std::string text =
      "\nDevice #1:\n----------\n\n"
      "Device type:    BlueField2\n"
      "Name:           MBF2H536C-CECO_Ax_Bx\n"
      "Description:    BlueField-2 DPU\n"
      "Device:         /dev/mst/mt41686_pciconf0\n\n"
      "Configurations:                                      Default         "
      "Current         Next Boot\n"
      "         INTERNAL_CPU_MODEL                          EMBEDDED_CPU(1) "
      "EMBEDDED_CPU(1)\n";
  auto q = ParseMlxconfigQuery(text);
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(q.status().message(), ::testing::HasSubstr("has 2 values, expected 3"));
}

}  // namespace
}  // namespace dpuaudit::bluefield
