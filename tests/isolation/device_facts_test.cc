// isolation::CollectDeviceFacts: the one collection sequence of the agent and
// the verifier. On a recorded device it asks for flint and the firmware
// inventory once per call, and the verifier's run over the captured evidence
// derives the same facts as the agent's over the device.
#include "isolation/device_facts.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/canonical_commands.h"
#include "device/device_source.h"
#include "device/evidence.h"
#include "device/memoizing_source.h"
#include "isolation/probes.h"
#include "isolation/shared_fixtures.h"
#include "testing/fake_device_source.h"

namespace dpuaudit::isolation {
namespace {

// Counts every Run that reaches the wrapped source, by argv.
class CountingSource final : public device::ForwardingDeviceSource {
 public:
  using ForwardingDeviceSource::ForwardingDeviceSource;
  StatusOr<device::CommandResult> Run(
      const std::vector<std::string>& argv,
      const device::CommandOptions& options) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++runs_[argv];
    }
    return inner().Run(argv, options);
  }

  int Runs(const device::Argv& argv) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(argv);
    return it == runs_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mu_;
  mutable std::map<std::vector<std::string>, int> runs_;
};

constexpr char kMst[] = "/dev/mst/mt41692_pciconf0";

std::unique_ptr<device::DeviceSource> Open(const std::string& node) {
  StatusOr<std::unique_ptr<device::DeviceSource>> src =
      device::NewRecordedDeviceSource(testing::ProjectFixturePath(node));
  EXPECT_TRUE(src.ok()) << node << ": " << src.status().ToString();
  return src.ok() ? std::move(src).value() : nullptr;
}

// flint is run (and so parsed: firmware::ReadFlint parses what it ran) once,
// and the inventory collected once (bfver and mlxfwmanager are read by the
// inventory only), per call — on the agent's side and on the verifier's.
TEST(DeviceFactsTest, FlintAndInventoryOncePerCollection) {
  auto device = Open("bf3-zero-trust");
  ASSERT_NE(device, nullptr);
  const device::Argv flint = device::FlintQueryArgv(kMst);
  const device::Argv bfver = device::BfverArgv();
  const device::Argv mlxfw = device::MlxfwmanagerQueryXmlArgv();

  CountingSource agent_side(*device);
  device::CapturingDeviceSource capture(agent_side);
  DeviceFacts agent = CollectDeviceFacts(capture);
  EXPECT_EQ(agent_side.Runs(flint), 1);
  EXPECT_EQ(agent_side.Runs(bfver), 1);
  EXPECT_EQ(agent_side.Runs(mlxfw), 1);
  ASSERT_TRUE(agent.context.flint);
  EXPECT_TRUE(agent.context.flint->ok());
  ASSERT_TRUE(agent.boot_chain.has_value());

  auto evidence = device::NewEvidenceDeviceSource(capture.evidence());
  ASSERT_TRUE(evidence.ok()) << evidence.status().ToString();
  CountingSource verifier_side(**evidence);
  DeviceFacts verifier = CollectDeviceFacts(verifier_side, &*agent.boot_chain);
  EXPECT_EQ(verifier_side.Runs(flint), 1);
  EXPECT_EQ(verifier_side.Runs(bfver), 1);
  EXPECT_EQ(verifier_side.Runs(mlxfw), 1);

  // Both sides derive the same facts from the same bytes.
  EXPECT_EQ(verifier.findings, agent.findings);
  EXPECT_EQ(verifier.firmware_json(), agent.firmware_json());
  EXPECT_EQ(verifier.boot_chain_json(), agent.boot_chain_json());
  EXPECT_EQ(verifier.primary, agent.primary);
  EXPECT_EQ(verifier.primary, agent.boot_chain->partitions.primary);
  for (const DeviceFacts* f : {&agent, &verifier}) {
    EXPECT_EQ(f->device.model, "BlueField-3");
    EXPECT_FALSE(f->device.serial.empty());
    EXPECT_FALSE(f->device.psid.empty());
    EXPECT_TRUE(f->device.notes.empty());
  }
}

TEST(DeviceFactsTest, FindingsAreTheCatalogueThenTheBootChain) {
  auto device = Open("bf3-zero-trust");
  ASSERT_NE(device, nullptr);
  DeviceFacts facts = CollectDeviceFacts(*device);
  const auto& catalogue = ProbeCatalogue();
  ASSERT_EQ(facts.findings.size(), catalogue.size() + 1);
  for (size_t i = 0; i < catalogue.size(); ++i) {
    EXPECT_EQ(facts.findings[i].id, catalogue[i].id);
  }
  EXPECT_EQ(facts.findings.back().id, firmware::kBootStreamIntegrityId);
  EXPECT_EQ(std::vector<Finding>(facts.findings.begin(),
                                 facts.findings.end() - 1),
            RunProbes(*device));
}

TEST(DeviceFactsTest, AReportWithoutBootChainIsUnknownNotMeasured) {
  auto device = Open("bf3-zero-trust");
  ASSERT_NE(device, nullptr);
  DeviceFacts facts = CollectDeviceFacts(*device, nullptr);
  EXPECT_FALSE(facts.boot_chain.has_value());
  EXPECT_EQ(facts.boot_chain_json(), nlohmann::json::object());
  const Finding& f = facts.findings.back();
  EXPECT_EQ(f.id, firmware::kBootStreamIntegrityId);
  EXPECT_EQ(f.verdict, Verdict::kUnknown);
  EXPECT_EQ(f.reason, "the report carries no boot_chain measurement");
  EXPECT_FALSE(facts.primary.empty());  // still from mlxbf-bootctl
}

TEST(DeviceFactsTest, NoMstDeviceNoFlintButAnInventory) {
  testing::FakeDeviceSource empty;  // nothing installed, no /dev/mst
  CountingSource counting(empty);
  DeviceFacts facts = CollectDeviceFacts(counting, nullptr);
  EXPECT_FALSE(facts.context.mst);
  EXPECT_FALSE(facts.context.flint);
  ASSERT_TRUE(facts.context.firmware);
  EXPECT_EQ(facts.firmware.nic_fw_status.code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(counting.Runs(device::BfverArgv()), 1);
  EXPECT_EQ(facts.findings.size(), ProbeCatalogue().size() + 1);
}

}  // namespace
}  // namespace dpuaudit::isolation
