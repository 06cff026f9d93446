#include "bluefield/mlxfwmanager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "isolation/shared_fixtures.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ProjectBluefieldFixture(const std::string& name) {
  auto text = testing::ReadTextFile(std::string(DPUAUDIT_SOURCE_DIR) +
                                    "/tests/fixtures/bluefield/" + name);
  EXPECT_TRUE(text.has_value()) << name;
  return text.value_or("");
}

std::string RemoveLine(const std::string& text, const std::string& line) {
  size_t at = text.find(line + "\n");
  EXPECT_NE(at, std::string::npos) << line;
  if (at == std::string::npos) return text;
  return text.substr(0, at) + text.substr(at + line.size() + 1);
}

// A one-device text block with the given version rows and extra lines.
std::string TextDevice(
    const std::string& rows,
    const std::string& psid_line = "  PSID:             MT_0000000767\n") {
  return "Querying Mellanox devices firmware ...\n"
         "\n"
         "Device #1:\n"
         "----------\n"
         "\n"
         "  Device Type:      BlueField2\n" +
         psid_line + "  Versions:         Current        Available\n" + rows +
         "\n"
         "  Status:           No matching image found\n";
}

// ---- text: real samples ----

// bf2_facts_test.py sample. Its authors inserted "UEFI Virtio x  1.2.3.4"
// (expected.json note), a row with one version column: rejected by design
// (see mlxfwmanager.h), naming the line.
TEST(MlxfwmanagerTextTest, SharedBf2FixtureRejectsTheInsertedShortRow) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-mlxfwmanager-query-bf2.txt");
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerText(text);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("line 17"));
  EXPECT_THAT(d.status().message(), HasSubstr("UEFI Virtio x  1.2.3.4"));
}

TEST(MlxfwmanagerTextTest, SharedBf2FixtureWithoutTheInsertedRow) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-mlxfwmanager-query-bf2.txt");
  StatusOr<std::vector<MlxfwDevice>> d =
      ParseMlxfwmanagerText(RemoveLine(text, "     UEFI Virtio x  1.2.3.4"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 1u);
  const MlxfwDevice& dev = (*d)[0];
  EXPECT_EQ(dev.psid, text_expected["PSID"].get<std::string>());
  for (const char* row : {"FW", "PXE", "UEFI", "UNKNOWN_ROM"}) {
    const FwVersionRow* r = dev.Find(row);
    ASSERT_NE(r, nullptr) << row;
    EXPECT_EQ(r->current, text_expected[row].get<std::string>()) << row;
    EXPECT_EQ(r->available, "N/A") << row;
  }
  EXPECT_EQ(dev.versions.size(), 4u);
  EXPECT_EQ(dev.Find("UEFI Virtio x"), nullptr);
  EXPECT_EQ(dev.part_number, "MBF2M516A-EEEO_Ax");
  EXPECT_EQ(dev.base_mac, "043f72a45a9c");
  EXPECT_EQ(dev.base_guid, "");  // not printed by this device
  EXPECT_EQ(dev.pci_device_name, "/dev/mst/mt41686_pciconf0");
  EXPECT_EQ(dev.status, "No matching image found");
}

// Dell BF2 sample (docs/bluefield.md#mlxfwmanager): ROM names with spaces,
// trailing spaces.
TEST(MlxfwmanagerTextTest, DellBf2WithRomRowsAndTrailingSpaces) {
  const std::string text =
      ProjectBluefieldFixture("mlxfwmanager-query-dell-bf2.txt");
  ASSERT_THAT(text, HasSubstr("N/A           \n"));  // fixture kept verbatim
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerText(text);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  MlxfwDevice want;
  want.device_type = "BlueField2";
  want.part_number = "0JNDCM_Dx";
  want.description = "NVIDIA Bluefield-2 Dual Port 25 GbE SFP Crypto DPU";
  want.psid = "DEL0000000033";
  want.pci_device_name = "/dev/mst/mt41686_pciconf0";
  want.base_guid = "58a2e1030004a9da";
  want.base_mac = "58a2e104a9da";
  want.versions = {{"FW", "24.36.7506", "N/A"},
                   {"PXE", "3.7.0200", "N/A"},
                   {"UEFI", "14.31.0010", "N/A"},
                   {"UEFI Virtio blk", "22.4.0010", "N/A"},
                   {"UEFI Virtio net", "21.4.0010", "N/A"}};
  want.status = "No matching image found";
  EXPECT_THAT(*d, ElementsAre(want));
}

TEST(MlxfwmanagerTextTest, SonicBf2FwRowOnly) {
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerText(
      ProjectBluefieldFixture("mlxfwmanager-query-sonic-bf2.txt"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].psid, "MT_0000000767");
  EXPECT_THAT((*d)[0].versions,
              ElementsAre(FwVersionRow{"FW", "24.99.0932", "N/A"}));
  EXPECT_EQ((*d)[0].description,
            "BlueField-2 P-Series DPU 100GbE Dual-Port QSFP56; integrated "
            "BMC; PCIe Gen4 x16; Secure Boot Enabled; Crypto Disabled; 32GB "
            "on-board DDR; 1GbE OOB management; FHHL");
  EXPECT_EQ((*d)[0].base_guid, "08c0eb0300e14b94");
}

TEST(MlxfwmanagerTextTest, TwoDevicesCrlfAndStagedVersion) {
  std::string one =
      TextDevice("     FW             24.36.7506     24.40.1000\n");
  std::string two = one.substr(one.find("Device #1:"));
  two.replace(two.find("#1"), 2, "#2");
  two.replace(two.find("MT_0000000767"), 13, "MT_0000000768");
  std::string text = one + "\n" + two;
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerText(crlf);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].psid, "MT_0000000767");
  EXPECT_EQ((*d)[1].psid, "MT_0000000768");
  EXPECT_EQ((*d)[1].Find("FW")->available, "24.40.1000");
}

TEST(MlxfwmanagerTextTest, UnknownFieldIsSkippedButStillUnique) {
  std::string text = TextDevice("     FW             24.36.7506     N/A\n",
                                "  PSID:             MT_0000000767\n"
                                "  Port1 GUID:       0123456789abcdef\n");
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerText(text);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)[0].psid, "MT_0000000767");

  text = TextDevice("     FW             24.36.7506     N/A\n",
                    "  PSID:             MT_0000000767\n"
                    "  Port1 GUID:       0123456789abcdef\n"
                    "  Port1 GUID:       0123456789abcdef\n");
  d = ParseMlxfwmanagerText(text);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "mlxfwmanager output line 9: duplicate field 'Port1 GUID'.");
}

struct TextErrorCase {
  const char* name;
  std::string text;
  const char* message;  // exact
};

TEST(MlxfwmanagerTextTest, ErrorsNameTheLine) {
  const std::string fw = "     FW             24.36.7506     N/A\n";
  const std::vector<TextErrorCase> cases = {
      {"empty", "", "mlxfwmanager output: no 'Device #1:' block."},
      {"preamble only", "Querying Mellanox devices firmware ...\n\n",
       "mlxfwmanager output: no 'Device #1:' block."},
      {"junk before device", "-E- No devices found\n",
       "mlxfwmanager output line 1: unexpected '-E- No devices found' before "
       "the first 'Device #1:'."},
      {"no psid", TextDevice(fw, ""),
       "mlxfwmanager output: device #1 (line 3) has no PSID."},
      {"no fw row", TextDevice("     PXE            3.7.0200       N/A\n"),
       "mlxfwmanager output: device #1 (line 3) has no FW version row."},
      {"two tokens", TextDevice(fw + "     UEFI   14.31.0010\n"),
       "mlxfwmanager output line 10: version row '     UEFI   14.31.0010' "
       "has 2 tokens; expected a name, a current and an available version."},
      {"shifted columns", TextDevice(fw + "     UEFI Virtio x  1.2.3.4\n"),
       "mlxfwmanager output line 10: version row '     UEFI Virtio x  "
       "1.2.3.4' does not end with two versions (current, available; "
       "\"N/A\" allowed)."},
      {"duplicate row", TextDevice(fw + fw),
       "mlxfwmanager output line 10: duplicate version row 'FW'."},
      {"duplicate psid",
       TextDevice(fw, "  PSID:             A\n  PSID:             B\n"),
       "mlxfwmanager output line 8: duplicate field 'PSID'."},
      {"row after blank", TextDevice(fw + "\n     PXE   3.7.0200   N/A\n"),
       "mlxfwmanager output line 11: unexpected 'PXE   3.7.0200   N/A' "
       "inside device #1."},
      {"bad versions header",
       "Device #1:\n  PSID: X\n  Versions:   Available Current\n" + fw,
       "mlxfwmanager output line 3: 'Versions:' header is 'Available "
       "Current'; expected 'Current Available'."},
      {"device out of order", "Device #2:\n",
       "mlxfwmanager output line 1: 'Device #2:' out of order; expected "
       "Device #1."},
      {"nul byte", TextDevice(fw) + std::string("\0", 1),
       "mlxfwmanager output line 12: contains a NUL byte."},
  };
  for (const TextErrorCase& c : cases) {
    StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerText(c.text);
    ASSERT_FALSE(d.ok()) << c.name;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(d.status().message(), c.message) << c.name;
  }
}

TEST(MlxfwmanagerTextTest, SecondDeviceIsCheckedToo) {
  std::string one = TextDevice("     FW             24.36.7506     N/A\n");
  std::string text = one + "\nDevice #2:\n----------\n  PSID:   MT_2\n";
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerText(text);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "mlxfwmanager output: device #2 (line 13) has no FW version row.");
}

// ---- XML ----

TEST(MlxfwmanagerXmlTest, SharedBf3EightDevices) {
  SHARED_FIXTURE_OR_SKIP(xml, "bmm-mlxfwmanager-query-xml-bf3.xml");
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerXml(xml);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), xml_expected["devices"].get<size_t>());
  for (const MlxfwDevice& dev : *d) {
    EXPECT_EQ(dev.device_type, xml_expected["type"].get<std::string>());
    EXPECT_EQ(dev.psid, xml_expected["psid"].get<std::string>());
    EXPECT_EQ(dev.part_number, xml_expected["partNumber"].get<std::string>());
    ASSERT_NE(dev.Find("FW"), nullptr);
    EXPECT_EQ(dev.Find("FW")->current, xml_expected["FW"].get<std::string>());
  }
  const MlxfwDevice& first = (*d)[0];
  EXPECT_EQ(first.pci_device_name,
            xml_expected["first_pciName"].get<std::string>());
  EXPECT_EQ(first.base_mac, xml_expected["first_Base_Mac"].get<std::string>());
  EXPECT_THAT(first.versions,
              ElementsAre(FwVersionRow{"FW", "32.42.1000", "N/A"},
                          FwVersionRow{"PXE", "3.7.0500", "N/A"},
                          FwVersionRow{"UEFI", "14.35.0015", "N/A"},
                          FwVersionRow{"UEFI Virtio blk", "22.4.0013", "N/A"},
                          FwVersionRow{"UEFI Virtio net", "21.4.0013", "N/A"}));
  EXPECT_EQ(first.status, "No matching image found");
  EXPECT_THAT(first.description,
              HasSubstr("NVIDIA BlueField-3 B3140L E-Series FHHL SuperNIC"));
  EXPECT_EQ((*d)[7].pci_device_name, "0000:4d:00.0");
  EXPECT_EQ((*d)[7].base_mac, "c470bd31eaee");
}

// The Dell text sample written as XML gives the same rows.
TEST(MlxfwmanagerXmlTest, SameRowNamesAsTheTextForm) {
  const std::string xml =
      "<?xml version=\"1.0\"?>\n"
      "<Devices>\n"
      "  <Device pciName=\"/dev/mst/mt41686_pciconf0\" type=\"BlueField2\" "
      "psid=\"DEL0000000033\" partNumber=\"0JNDCM_Dx\">\n"
      "    <Versions>\n"
      "      <FW current=\"24.36.7506\" available=\"N/A\"/>\n"
      "      <PXE current=\"3.7.0200\" available=\"N/A\"/>\n"
      "      <UEFI current=\"14.31.0010\" available=\"N/A\"/>\n"
      "      <UEFI_Virtio_blk current=\"22.4.0010\" available=\"N/A\"/>\n"
      "      <UEFI_Virtio_net current=\"21.4.0010\" available=\"N/A\"/>\n"
      "    </Versions>\n"
      "    <MACs Base_Mac=\"58a2e104a9da\" />\n"
      "    <Status> No matching image found </Status>\n"
      "    <Description>NVIDIA Bluefield-2 Dual Port 25 GbE SFP Crypto "
      "DPU</Description>\n"
      "    <Future attr=\"ignored\"/>\n"
      "  </Device>\n"
      "</Devices>\n";
  StatusOr<std::vector<MlxfwDevice>> x = ParseMlxfwmanagerXml(xml);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  StatusOr<std::vector<MlxfwDevice>> t = ParseMlxfwmanagerText(
      ProjectBluefieldFixture("mlxfwmanager-query-dell-bf2.txt"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(x->size(), 1u);
  MlxfwDevice from_text = (*t)[0];
  from_text.base_guid.clear();  // not in the XML form
  EXPECT_EQ((*x)[0], from_text);
}

TEST(MlxfwmanagerXmlTest, DtdEntitiesAreNotExpanded) {
  const std::string xml =
      "<!DOCTYPE Devices [<!ENTITY psid \"MT_FROM_DTD\">"
      "<!ENTITY ext SYSTEM \"file:///etc/passwd\">]>"
      "<Devices><Device psid=\"&psid;\"><Versions>"
      "<FW current=\"1.2.3\" available=\"N/A\"/></Versions>"
      "<Description>&ext;</Description></Device></Devices>";
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerXml(xml);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)[0].psid, "&psid;");
  EXPECT_EQ((*d)[0].description, "&ext;");
}

TEST(MlxfwmanagerXmlTest, BuiltInEntitiesAreExpanded) {
  const std::string xml =
      "<Devices><Device psid=\"MT_&#x31;\"><Versions>"
      "<FW current=\"1.2.3\" available=\"N/A\"/></Versions>"
      "<Description>A &amp; B</Description></Device></Devices>";
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerXml(xml);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)[0].psid, "MT_1");
  EXPECT_EQ((*d)[0].description, "A & B");
}

TEST(MlxfwmanagerXmlTest, RefusesMoreThanOneMebibyte) {
  std::string xml = "<Devices>" + std::string((1 << 20), ' ') + "</Devices>";
  StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerXml(xml);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(d.status().message(), "mlxfwmanager XML is " +
                                      std::to_string(xml.size()) +
                                      " bytes; the limit is 1 MiB.");
}

TEST(MlxfwmanagerXmlTest, ErrorsNameTheElement) {
  const std::string fw = "<FW current=\"1.2.3\" available=\"N/A\"/>";
  auto dev = [](const std::string& attrs, const std::string& body) {
    return "<Devices><Device" + attrs + ">" + body + "</Device></Devices>";
  };
  const std::string psid = " pciName=\"0000:03:00.0\" psid=\"MT_1\"";
  const std::vector<TextErrorCase> cases = {
      {"not xml", "<Devices><Device>",
       "mlxfwmanager XML at offset 16: Start-end tags mismatch."},
      {"empty", "", "mlxfwmanager XML at offset 0: No document element found."},
      {"wrong root", "<Device/>",
       "mlxfwmanager XML: the top-level element is not <Devices>."},
      {"two roots", "<Devices/><Devices/>",
       "mlxfwmanager XML: more than one top-level element."},
      {"no device", "<Devices></Devices>",
       "mlxfwmanager XML: <Devices> holds no <Device>."},
      {"other child", "<Devices><Card/></Devices>",
       "mlxfwmanager XML: Devices/Card at device 1 is not a <Device>."},
      {"no psid",
       dev(" pciName=\"0000:03:00.0\"", "<Versions>" + fw + "</Versions>"),
       "mlxfwmanager XML: Devices/Device[1] (pciName 0000:03:00.0) has no "
       "PSID."},
      {"no fw", dev(psid, "<Versions/>"),
       "mlxfwmanager XML: Devices/Device[1] (pciName 0000:03:00.0) has no FW "
       "version row."},
      {"row without available",
       dev(psid, "<Versions><FW current=\"1.2.3\"/></Versions>"),
       "mlxfwmanager XML: Devices/Device[1] (pciName 0000:03:00.0)/Versions/FW "
       "needs 'current' and 'available' attributes."},
      {"row not a version",
       dev(psid, "<Versions><FW current=\"x\" available=\"N/A\"/></Versions>"),
       "mlxfwmanager XML: Devices/Device[1] (pciName 0000:03:00.0)/Versions/FW "
       "has current 'x', available 'N/A'; expected versions or \"N/A\"."},
      {"duplicate row", dev(psid, "<Versions>" + fw + fw + "</Versions>"),
       "mlxfwmanager XML: Devices/Device[1] (pciName 0000:03:00.0)/Versions/FW "
       "is repeated."},
      {"duplicate versions",
       dev(psid, "<Versions>" + fw + "</Versions><Versions/>"),
       "mlxfwmanager XML: Devices/Device[1] (pciName 0000:03:00.0)/Versions is "
       "repeated."},
      {"duplicate attribute", dev(psid + " psid=\"MT_2\"", fw),
       "mlxfwmanager XML: Devices/Device[1] (pciName 0000:03:00.0): attribute "
       "'psid' is repeated."},
      {"text in device", dev(psid, "junk<Versions>" + fw + "</Versions>"),
       "mlxfwmanager XML: Devices/Device[1] (pciName 0000:03:00.0) holds "
       "text; expected elements."},
      {"nul", std::string("<Devices>\0</Devices>", 20),
       "mlxfwmanager XML: NUL byte at offset 9."},
  };
  for (const TextErrorCase& c : cases) {
    StatusOr<std::vector<MlxfwDevice>> d = ParseMlxfwmanagerXml(c.text);
    ASSERT_FALSE(d.ok()) << c.name;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(d.status().message(), c.message) << c.name;
  }
}

TEST(MlxfwDeviceTest, FindIsExact) {
  MlxfwDevice d;
  d.versions = {{"UEFI", "14.31.0010", "N/A"},
                {"UEFI Virtio blk", "22.4.0010", "N/A"}};
  ASSERT_NE(d.Find("UEFI"), nullptr);
  EXPECT_EQ(d.Find("UEFI")->current, "14.31.0010");
  EXPECT_EQ(d.Find("UEFI Virtio blk")->current, "22.4.0010");
  EXPECT_EQ(d.Find("UEFI Virtio"), nullptr);
  EXPECT_EQ(d.Find("uefi"), nullptr);
}

}  // namespace
}  // namespace dpuaudit::bluefield
