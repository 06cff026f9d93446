#include "redfish/resources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "testing/shared_redfish_fixtures.h"
#include "testing/status_matchers.h"

namespace dpuaudit::redfish {
namespace {

using ::dpuaudit::testing::ReadSharedRedfish;
using ::dpuaudit::testing::StatusCodeIs;
using ::dpuaudit::testing::StatusHas;
using nlohmann::json;

// The resource at Redfish path `uri` of a captured mockup, parsed.
#define RESOURCE_OR_SKIP(var, mockup, uri)                                      \
  json var;                                                                     \
  do {                                                                          \
    const std::string dpa_rel_ =                                                \
        std::string(mockup) + std::string(uri) + "/index.json";                 \
    auto dpa_text_ = ::dpuaudit::testing::ReadSharedRedfish(dpa_rel_);          \
    if (!dpa_text_) {                                                           \
      GTEST_SKIP() << "shared fixture redfish/" << dpa_rel_ << " is absent under " \
                   << DPUAUDIT_SHARED_DIR;                                      \
    }                                                                           \
    auto dpa_j_ = ParseResource(*dpa_text_, uri);                               \
    ASSERT_TRUE(dpa_j_.ok()) << dpa_j_.status().ToString();                     \
    var = *dpa_j_;                                                              \
  } while (false)

constexpr char kDpu[] = "nvidia_dpu";

TEST(RedfishBlueField3CaptureTest, PostureResourcesReadAsTheCaptureShows) {
  RESOURCE_OR_SKIP(root, kDpu, std::string(kServiceRoot));
  auto r = ReadServiceRoot(root);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->product, "Nvidia-BMCMezz");
  EXPECT_EQ(r->redfish_version, "1.17.0");
  EXPECT_FALSE(r->has_component_integrity);  // BF-24.10-10: no SPDM

  RESOURCE_OR_SKIP(sys, kDpu, std::string(kSystem));
  EXPECT_EQ(ReadSystem(sys)->serial_number, "MT2423600ANG");
  EXPECT_EQ(ReadSystem(sys)->model, "BlueField-3 SmartNIC Main Card");

  RESOURCE_OR_SKIP(oem, kDpu, std::string(kSystemOemNvidia));
  auto o = ReadSystemOemNvidia(oem);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->mode, "DpuMode");
  EXPECT_EQ(o->host_rshim, "Disabled");

  RESOURCE_OR_SKIP(priv, kDpu, std::string(kExternalHostPrivileges));
  auto p = ReadExternalHostPrivileges(priv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->size(), 8u);
  for (const auto& [k, v] : *p) EXPECT_EQ(v, "Default") << k;
  EXPECT_EQ(p->count("HostPrivNvGlobal"), 1u);

  RESOURCE_OR_SKIP(bios, kDpu, std::string(kBios));
  auto b = ReadBios(bios);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->host_privilege_level, "Restricted");
  EXPECT_EQ(b->internal_cpu_model, "Embedded");
  EXPECT_EQ(b->nic_mode, "DpuMode");
  EXPECT_EQ(b->enable_optee, false);

  RESOURCE_OR_SKIP(sb, kDpu, std::string(kSecureBoot));
  auto s = ReadSecureBoot(sb);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->enable, false);
  EXPECT_EQ(s->current_boot, "Disabled");
  EXPECT_EQ(s->mode, "SetupMode");

  RESOURCE_OR_SKIP(mgr, kDpu, std::string(kManager));
  EXPECT_EQ(ReadManager(mgr)->firmware_version, "BF-24.10-10");
}

TEST(RedfishBlueField3CaptureTest, FirmwareInventoryListsEveryComponent) {
  RESOURCE_OR_SKIP(inv, kDpu, std::string(kFirmwareInventory));
  auto members = ReadCollection(inv, kFirmwareInventory);
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  std::map<std::string, std::string> versions;
  for (const std::string& uri : *members) {
    auto text = ReadSharedRedfish(std::string(kDpu) + uri + "/index.json");
    ASSERT_TRUE(text.has_value()) << uri;
    auto j = ParseResource(*text, uri);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    auto item = ReadFirmwareItem(*j, uri);
    ASSERT_TRUE(item.ok()) << item.status().ToString();
    versions[item->id] = item->version;
  }
  EXPECT_EQ(versions["DPU_ATF"], "v2.2(release):4.9.0-25-g0ce57e322");
  EXPECT_EQ(versions["DPU_UEFI"], "4.9.0-46-g7e3911bd4d");
  EXPECT_EQ(versions["DPU_BSP"], "4.9.0.13378");
  EXPECT_EQ(versions["DPU_NIC"], "32.43.1008");
  EXPECT_EQ(versions["BMC_Firmware"], "BF-24.10-10");
  EXPECT_EQ(versions["Bluefield_FW_ERoT"], "00.02.0182.0000_n02");
  EXPECT_EQ(versions["DPU_OS"], "bf-bundle-2.9.0-90_24.10_ubuntu-22.04_prod");
}

TEST(RedfishBlueField3CaptureTest, EveryCapturedErrorBodyIsRefusedEvenWithData) {
  auto expected_text = ReadSharedRedfish("expected.json");
  if (!expected_text) GTEST_SKIP() << "redfish/expected.json is absent";
  const json expected = json::parse(*expected_text);
  int refused = 0;
  for (const auto& [path, note] : expected["error_bodies"].items()) {
    auto text = ReadSharedRedfish(path);
    ASSERT_TRUE(text.has_value()) << path;
    EXPECT_THAT(ParseResource(*text, path).status(),
                StatusHas(StatusCode::kUnavailable, "answered a Redfish error: \"Base."))
        << path;
    ++refused;
  }
  EXPECT_EQ(refused, 7);
}

TEST(RedfishComponentIntegrityTest, BothActionSpellingsAndTheCertificateLinkAreRead) {
  RESOURCE_OR_SKIP(gb, "nvidia_gb200", "/redfish/v1/ComponentIntegrity/HGX_IRoT_GPU_0");
  auto c = ReadComponentIntegrity(gb, "HGX_IRoT_GPU_0");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->enabled, true);
  EXPECT_EQ(c->type, "SPDM");
  EXPECT_EQ(c->type_version, "1.1.0");
  EXPECT_EQ(c->certificate_uri, "/redfish/v1/Chassis/HGX_IRoT_GPU_0/Certificates/CertChain");
  EXPECT_EQ(c->measurements_action,
            "/redfish/v1/ComponentIntegrity/HGX_IRoT_GPU_0/Actions/"
            "ComponentIntegrity.SPDMGetSignedMeasurements");
  RESOURCE_OR_SKIP(chain, "nvidia_gb200",
                   "/redfish/v1/Chassis/HGX_IRoT_GPU_0/Certificates/CertChain");
  auto pem = ReadCertificateChain(chain, "CertChain");
  ASSERT_TRUE(pem.ok()) << pem.status().ToString();
  EXPECT_EQ(pem->rfind("-----BEGIN CERTIFICATE-----", 0), 0u);
  RESOURCE_OR_SKIP(cx7, "nvidia_gb200", "/redfish/v1/Chassis/IRoT_CX7_0/Certificates/CertChain");
  EXPECT_THAT(ReadCertificateChain(cx7, "IRoT_CX7_0 CertChain").status(),
              StatusHas(StatusCode::kInvalidArgument, "CertificateString is missing"));
}

TEST(RedfishComponentIntegrityTest, EvidenceShapeOfTheTestSupportSample) {
  auto text = ReadSharedRedfish("spdm/bmm-test-support-evidence.json");
  if (!text) GTEST_SKIP() << "spdm/bmm-test-support-evidence.json is absent";
  auto j = ParseResource(*text, "evidence");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto e = ReadSignedMeasurements(*j, "evidence");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->signing_algorithm, "TPM_ALG_ECDSA_ECC_NIST_P384");
  EXPECT_EQ(e->hashing_algorithm, "TPM_ALG_SHA_512");
  EXPECT_EQ(e->version, "1.1.0");
}

// ---- synthetic bodies ----

TEST(RedfishParseTest, BadBodiesAreRefusedPrecisely) {
  EXPECT_THAT(ParseResource("[1]", "/x").status(),
              StatusHas(StatusCode::kInvalidArgument, "/x is not a JSON object"));
  EXPECT_THAT(ParseResource("{\"a\":1,\"a\":2}", "/x").status(),
              StatusCodeIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseResource("{\"a\":", "/x").status(),
              StatusCodeIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseResource(std::string(kMaxResourceBytes + 1, ' '), "/x").status(),
              StatusHas(StatusCode::kResourceExhausted, "more than 1048576"));
  EXPECT_THAT(ParseResource("{\"error\":{\"code\":\"Base.1.0.X\",\"message\":\"m\\u0007\"}}",
                            "/x")
                  .status(),
              StatusHas(StatusCode::kUnavailable, "\"Base.1.0.X\": \"m\\u0007\""));
}

TEST(RedfishParseTest, WrongTypesAreErrorsNotAbsences) {
  EXPECT_THAT(ReadSystemOemNvidia(json::parse(R"({"Mode": 1})")).status(),
              StatusHas(StatusCode::kInvalidArgument, "Oem/Nvidia Mode must be a string"));
  EXPECT_THAT(ReadSecureBoot(json::parse(R"({"SecureBootEnable": "false"})")).status(),
              StatusHas(StatusCode::kInvalidArgument, "SecureBootEnable must be a boolean"));
  EXPECT_THAT(ReadBios(json::parse(R"({"Attributes": []})")).status(),
              StatusHas(StatusCode::kInvalidArgument, "Attributes must be an object"));
  EXPECT_THAT(ReadExternalHostPrivileges(
                  json::parse(R"({"ExternalHostPrivilege": {"HostPrivNvGlobal": true}})"))
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, "HostPrivNvGlobal must be a string"));
  EXPECT_THAT(ReadCollection(json::parse(R"({"Members": [{"x": 1}]})"), "/c").status(),
              StatusHas(StatusCode::kInvalidArgument, "Members[0] has no @odata.id"));
  EXPECT_THAT(ReadFirmwareItem(json::parse(R"({"Id": "DPU_ATF"})"), "/f").status(),
              StatusHas(StatusCode::kInvalidArgument, "/f Version is missing"));
  // Absent stays absent.
  auto o = ReadSystemOemNvidia(json::parse("{}"));
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->mode.has_value());
}

TEST(RedfishParseTest, BiosAttributesUnderBothSpellings) {
  auto old = ReadBios(json::parse(R"({"Attributes": {"Host Privilege Level": "Privileged"}})"));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->host_privilege_level, "Privileged");
  EXPECT_THAT(ReadBios(json::parse(R"({"Attributes": {"HostPrivilegeLevel": "Restricted",
                                       "Host Privilege Level": "Privileged"}})"))
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, "disagree"));
}

TEST(RedfishParseTest, TaskStateMessagesAndLocation) {
  auto t = ReadTask(json::parse(R"({"TaskState": "Completed", "TaskStatus": "OK",
      "Messages": [{"MessageArgs": ["/redfish/v1/x/data"]}],
      "Payload": {"HttpHeaders": ["Content-Type: x", "Location: /redfish/v1/x/data"]}})"),
                    "/t/1");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->state, "Completed");
  EXPECT_EQ(t->location, "/redfish/v1/x/data");
  EXPECT_EQ(t->message_args, std::vector<std::string>{"/redfish/v1/x/data"});
  EXPECT_THAT(ReadTask(json::parse("{}"), "/t/1").status(),
              StatusHas(StatusCode::kInvalidArgument, "/t/1 TaskState is missing"));
}

}  // namespace
}  // namespace dpuaudit::redfish
