// One table: every recorded device under tests/fixtures/devices/ × every
// probe id, with the verdict and observed value the state must produce
// (run through device::NewRecordedDeviceSource + isolation::RunProbes).
// Each device isolates one posture state (its PROVENANCE.md); everything not
// listed in its overrides must pass with the zero-trust value. A row whose
// probe is not in the catalogue yet skips with the reason, never passes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/device_source.h"
#include "isolation/probes.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::isolation {
namespace {

using ::testing::HasSubstr;

struct Expect {
  Verdict verdict;
  std::string observed;       // "" for unknown
  std::string reason_substr;  // checked when non-empty
};

// What bf3-zero-trust shows for every probe (all pass).
const std::map<std::string, Expect>& ZeroTrust() {
  static const auto* m = new std::map<std::string, Expect>{
      {"host.privilege_level", {Verdict::kPass, "RESTRICTED", ""}},
      {"host.rshim_disabled", {Verdict::kPass, "TRUE", ""}},
      {"host.tracer_disabled", {Verdict::kPass, "TRUE", ""}},
      {"host.counter_read_disabled", {Verdict::kPass, "TRUE", ""}},
      {"host.port_owner_disabled", {Verdict::kPass, "TRUE", ""}},
      {"dpu.operation_mode", {Verdict::kPass, "dpu", ""}},
      {"dpu.pending_change", {Verdict::kPass, "none", ""}},
      {"boot.arm_lifecycle", {Verdict::kPass, "GA Secured", ""}},
      {"boot.secure_boot", {Verdict::kPass, "enabled", ""}},
      {"boot.production_keys", {Verdict::kPass, "production", ""}},
      {"os.kernel_lockdown", {Verdict::kPass, "integrity", ""}},
      {"nic.fw_security", {Verdict::kPass, "production", ""}},
      // Firmware (release bf-bundle-2.9.1-40 unless a state overrides it).
      {"fw.atf_build", {Verdict::kPass, "release", ""}},
      {"fw.atf_version", {Verdict::kPass, "v2.2(release):4.9.1-21-gfc25b08d9", ""}},
      {"fw.uefi_version", {Verdict::kPass, "4.9.1-36-g0c3239837a", ""}},
      {"fw.bsp_version", {Verdict::kPass, "4.9.1.13442", ""}},
      {"fw.os_release", {Verdict::kPass, "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod", ""}},
      {"fw.nic_version", {Verdict::kPass, "32.43.2402", ""}},
      {"fw.nic_version_consistent", {Verdict::kPass, "consistent", ""}},
      {"fw.nic_staged", {Verdict::kPass, "none", ""}},
  };
  return *m;
}

// The bfver / NIC versions of an older release (make_bf3_fixtures.py).
std::map<std::string, Expect> Release(const std::string& atf, const std::string& uefi,
                                      const std::string& bsp, const std::string& os,
                                      const std::string& nic) {
  return {{"fw.atf_version", {Verdict::kPass, atf, ""}},
          {"fw.uefi_version", {Verdict::kPass, uefi, ""}},
          {"fw.bsp_version", {Verdict::kPass, bsp, ""}},
          {"fw.os_release", {Verdict::kPass, os, ""}},
          {"fw.nic_version", {Verdict::kPass, nic, ""}}};
}

const std::vector<std::string> kHostIds = {
    "host.privilege_level", "host.rshim_disabled", "host.tracer_disabled",
    "host.counter_read_disabled", "host.port_owner_disabled"};

std::map<std::string, Expect> AllHostUnknown(const std::string& why) {
  std::map<std::string, Expect> m;
  for (const std::string& id : kHostIds) m[id] = {Verdict::kUnknown, "", why};
  return m;
}

// device -> the probes whose result differs from ZeroTrust().
const std::map<std::string, std::map<std::string, Expect>>& States() {
  static const auto* m =
      new std::map<std::string, std::map<std::string, Expect>>{
          {"bf3-zero-trust", {}},
          {"bf2-mft416-old-format", {{"fw.nic_version", {Verdict::kPass, "24.35.2000", ""}}}},
          {"bf3-privileged-host",
           {{"host.privilege_level",
             {Verdict::kFail, "PRIVILEGED", "NV-config read fails"}},
            {"host.rshim_disabled", {Verdict::kFail, "FALSE", ""}},
            {"host.tracer_disabled", {Verdict::kFail, "FALSE", ""}},
            {"host.counter_read_disabled", {Verdict::kFail, "FALSE", ""}},
            {"host.port_owner_disabled", {Verdict::kFail, "FALSE", ""}}}},
          {"bf3-partially-restricted",
           {{"host.rshim_disabled", {Verdict::kFail, "FALSE", ""}},
            {"host.tracer_disabled", {Verdict::kFail, "FALSE", ""}},
            {"host.counter_read_disabled", {Verdict::kFail, "FALSE", ""}},
            {"host.port_owner_disabled", {Verdict::kFail, "FALSE", ""}}}},
          {"bf3-nic-mode",
           {{"dpu.operation_mode", {Verdict::kFail, "nic", ""}}}},
          {"bf2-separated-host",
           {{"dpu.operation_mode", {Verdict::kFail, "separated_host", ""}},
            {"fw.nic_version", {Verdict::kPass, "24.35.2000", ""}}}},
          {"bf3-pending-mode-change",
           {{"dpu.pending_change",
             {Verdict::kFail, "pending", ""}}}},
          {"bf3-dev-keys",
           {{"boot.arm_lifecycle",
             {Verdict::kFail, "Secured (development)", ""}},
            {"boot.production_keys", {Verdict::kFail, "development", ""}}}},
          {"bf3-secure-boot-off",
           {{"boot.secure_boot", {Verdict::kFail, "disabled", ""}}}},
          {"bf3-tool-missing", AllHostUnknown("exit 127")},
          {"bf3-tool-error", AllHostUnknown("exited with status 1")},
          {"bf3-debug-firmware",
           {{"nic.fw_security", {Verdict::kFail, "debug", ""}}}},
          {"bf3-fw-outdated",
           Release("v2.2(release):4.9.0-25-g0ce57e322", "4.9.0-46-g7e3911bd4d",
                   "4.9.0.13378", "bf-bundle-2.9.0-90_24.10_ubuntu-22.04_prod",
                   "32.43.1008")},
          {"bf3-fw-revoked",
           Release("v2.2(release):4.7.0-25-g5569834", "4.7.0-42-g13081ae", "4.7.0.13127",
                   "bf-bundle-2.7.0-33_24.04_ubuntu-22.04_prod", "32.41.1000")},
          {"bf3-debug-atf",
           {{"fw.atf_build", {Verdict::kFail, "debug", "debug build"}},
            {"fw.atf_version", {Verdict::kPass, "v2.2(debug):4.9.1-21-gfc25b08d9", ""}}}},
          {"bf3-dev-nic-firmware",
           {{"nic.fw_security", {Verdict::kFail, "development", ""}}}},
          {"bf3-fw-mixed",
           {{"fw.nic_version", {Verdict::kPass, "32.43.1008", ""}},
            {"fw.nic_version_consistent",
             {Verdict::kFail, "inconsistent", "sysfs mlx5_0 32.43.2402"}},
            {"fw.nic_staged", {Verdict::kFail, "staged", "32.43.2402 is staged"}}}},
          {"bf3-boot-stream-corrupt", {}},
      };
  return *m;
}

struct Row {
  std::string device;
  std::string id;
  Expect expect;
};

std::vector<Row> Rows() {
  std::vector<Row> rows;
  for (const auto& [device, overrides] : States()) {
    for (const auto& [id, zt] : ZeroTrust()) {
      auto it = overrides.find(id);
      rows.push_back({device, id, it == overrides.end() ? zt : it->second});
    }
  }
  return rows;
}

// Findings per device, computed once.
const std::vector<Finding>* FindingsOf(const std::string& device) {
  static auto* cache = new std::map<std::string, std::vector<Finding>>();
  auto it = cache->find(device);
  if (it != cache->end()) return &it->second;
  StatusOr<std::unique_ptr<device::DeviceSource>> src =
      device::NewRecordedDeviceSource(testing::ProjectFixturePath(device));
  if (!src.ok()) {
    ADD_FAILURE() << device << ": " << src.status().ToString();
    return nullptr;
  }
  (*cache)[device] = RunProbes(**src);
  return &(*cache)[device];
}

class FixtureStatesTest : public ::testing::TestWithParam<Row> {};

TEST_P(FixtureStatesTest, VerdictAndObserved) {
  const Row& row = GetParam();
  if (FindProbe(row.id) == nullptr) {
    GTEST_SKIP() << "probe " << row.id
                 << " is not in the catalogue yet; expectation for "
                 << row.device << " is " << VerdictName(row.expect.verdict)
                 << " \"" << row.expect.observed << "\"";
  }
  const std::vector<Finding>* findings = FindingsOf(row.device);
  ASSERT_NE(findings, nullptr);
  ASSERT_EQ(findings->size(), ProbeCatalogue().size());
  const Finding* f = nullptr;
  for (const Finding& x : *findings) {
    if (x.id == row.id) {
      ASSERT_EQ(f, nullptr) << "two findings for " << row.id;
      f = &x;
    }
  }
  ASSERT_NE(f, nullptr) << "no finding for " << row.id;
  EXPECT_EQ(f->verdict, row.expect.verdict)
      << row.device << " " << row.id << ": observed \"" << f->observed
      << "\", reason: " << f->reason;
  EXPECT_EQ(f->observed, row.expect.observed) << f->reason;
  EXPECT_FALSE(f->source.empty());
  EXPECT_FALSE(f->evidence_id.empty());
  if (f->verdict != Verdict::kPass) {
    EXPECT_FALSE(f->reason.empty());
  }
  if (!row.expect.reason_substr.empty()) {
    EXPECT_THAT(f->reason, HasSubstr(row.expect.reason_substr));
  }
}

std::string RowName(const ::testing::TestParamInfo<Row>& info) {
  std::string s = info.param.device + "__" + info.param.id;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllDevicesAllProbes, FixtureStatesTest,
                         ::testing::ValuesIn(Rows()), RowName);

// Every catalogue probe has a column in the table, so a new probe cannot
// land without expectations for every state.
TEST(FixtureStatesCatalogueTest, TableCoversCatalogue) {
  for (const ProbeInfo& p : ProbeCatalogue()) {
    EXPECT_TRUE(ZeroTrust().count(std::string(p.id)))
        << "no fixture-state expectations for probe " << p.id;
  }
}

}  // namespace
}  // namespace dpuaudit::isolation
