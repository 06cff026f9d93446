#include "isolation/device_facts.h"

#include <utility>

#include "common/safe_text.h"
#include "device/canonical_commands.h"
#include "device/run_tool.h"
#include "firmware/boot_partitions.h"

namespace dpuaudit::isolation {
namespace {

// The primary boot partition as the mlxbf-bootctl output shows it; "" when
// the tool fails or its output does not parse.
std::string PrimaryFromBootctl(const device::DeviceSource& source) {
  StatusOr<std::string> out = device::RunTool(source, device::MlxbfBootctlArgv());
  if (!out.ok()) return "";
  StatusOr<firmware::BootctlInfo> info = firmware::ParseMlxbfBootctl(*out);
  return info.ok() ? info->primary : "";
}

DeviceFacts Collect(const device::DeviceSource& source, bool measure,
                    const firmware::BootChainInfo* reported) {
  DeviceFacts facts;
  facts.context = ProbeContext::Collect(source);
  facts.findings = RunProbes(source, facts.context);
  facts.identity = CollectIdentity(source, facts.context);
  // Tool output: safe text, like the findings (RunProbes).
  facts.device.model = SafeText(facts.identity.model);
  facts.device.serial = SafeText(facts.identity.serial);
  facts.device.part_number = SafeText(facts.identity.part_number);
  facts.device.psid = SafeText(facts.identity.psid);
  facts.device.base_mac = SafeText(facts.identity.base_mac);
  facts.device.fw_version = SafeText(facts.identity.fw_version);
  facts.firmware = *facts.context.firmware;
  if (measure) {
    // Partitions and files are streamed; the mlxbf-bootctl output,
    // /proc/cmdline and efivars the measurement reads go through `source`.
    facts.boot_chain = firmware::MeasureBootChain(source);
  } else if (reported != nullptr) {
    facts.boot_chain = *reported;
  }
  // Which boot partition is primary comes from the mlxbf-bootctl output,
  // not from a boot chain's own claim (the verifier checks that claim).
  facts.primary = PrimaryFromBootctl(source);
  if (facts.boot_chain) {
    for (Finding& f : firmware::BootChainFindings(*facts.boot_chain, facts.primary)) {
      facts.findings.push_back(std::move(f));
    }
  } else {
    Finding f;
    f.id = std::string(firmware::kBootStreamIntegrityId);
    f.expected = "intact";
    f.source = "report boot_chain";
    f.reason = "the report carries no boot_chain measurement";
    facts.findings.push_back(std::move(f));
  }
  return facts;
}

}  // namespace

nlohmann::json DeviceFacts::firmware_json() const {
  return firmware::FirmwareJson(firmware);
}

nlohmann::json DeviceFacts::boot_chain_json() const {
  return boot_chain ? firmware::BootChainJson(*boot_chain) : nlohmann::json::object();
}

DeviceFacts CollectDeviceFacts(const device::DeviceSource& source) {
  return Collect(source, /*measure=*/true, nullptr);
}

DeviceFacts CollectDeviceFacts(const device::DeviceSource& source,
                               const firmware::BootChainInfo* reported) {
  return Collect(source, /*measure=*/false, reported);
}

}  // namespace dpuaudit::isolation
