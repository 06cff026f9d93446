#include "apps/common/agent_collect.h"

#include "firmware/boot_chain.h"
#include "firmware/inventory.h"
#include "common/safe_text.h"
#include "isolation/identity.h"
#include "isolation/probes.h"

namespace dpuaudit::apps {

Collection CollectFromDevice(const device::DeviceSource& source) {
  device::CapturingDeviceSource capture(source);
  Collection c;
  c.findings = isolation::RunProbes(capture);
  isolation::ProbeContext ctx = isolation::ProbeContext::Discover(capture);
  isolation::DeviceIdentity id = isolation::CollectIdentity(capture, ctx);
  // Tool output: safe text, like the findings (isolation::RunProbes).
  c.device = report::DeviceInfo{SafeText(id.model),    SafeText(id.serial),
                                SafeText(id.part_number), SafeText(id.psid),
                                SafeText(id.base_mac), SafeText(id.fw_version)};
  firmware::FirmwareInfo fw =
      ctx.mst ? firmware::CollectFirmware(capture, ctx.mst->path)
              : firmware::CollectFirmware(capture);
  c.firmware = firmware::FirmwareJson(fw);
  // Boot chain: partitions and files are streamed (not captured); the
  // mlxbf-bootctl output, /proc/cmdline and efivars it reads are.
  firmware::BootChainInfo boot = firmware::MeasureBootChain(capture);
  for (Finding& f : firmware::BootChainFindings(boot, boot.partitions.primary)) {
    c.findings.push_back(std::move(f));
  }
  c.boot_chain = firmware::BootChainJson(boot);
  c.evidence = capture.evidence();
  c.streamed_paths = capture.streamed_paths();
  return c;
}

report::ReportClaims BuildClaims(const Collection& c, const std::string& node_id,
                                 const std::string& nonce, int64_t issued_at) {
  report::ReportClaims claims;
  claims.node_id = node_id;
  claims.nonce = nonce;
  claims.issued_at = issued_at;
  claims.device = c.device;
  claims.evidence = c.evidence;
  claims.findings = c.findings;
  claims.firmware = c.firmware;
  claims.boot_chain = c.boot_chain;
  return claims;
}

}  // namespace dpuaudit::apps
