#include "apps/common/agent_collect.h"

#include "attest/firmware.h"
#include "isolation/identity.h"
#include "isolation/probes.h"

namespace dpuaudit::apps {

Collection CollectFromDevice(const device::DeviceSource& source) {
  device::CapturingDeviceSource capture(source);
  Collection c;
  c.findings = isolation::RunProbes(capture);
  isolation::ProbeContext ctx = isolation::ProbeContext::Discover(capture);
  isolation::DeviceIdentity id = isolation::CollectIdentity(capture, ctx);
  c.device = report::DeviceInfo{id.model,    id.serial,   id.part_number,
                                id.psid,     id.base_mac, id.fw_version};
  attest::FirmwareInfo fw =
      ctx.mst ? attest::CollectFirmware(capture, ctx.mst->path)
              : attest::CollectFirmware(capture);
  nlohmann::json firmware = nlohmann::json::object();
  if (fw.bfver_status.ok()) {
    firmware["arm"] = {{"atf", fw.bfver.atf_version},
                       {"atf_build", std::string(attest::AtfBuildName(fw.bfver.atf_build))},
                       {"uefi", fw.bfver.uefi_version},
                       {"bsp", fw.bfver.bsp_version},
                       {"os_release", fw.bfver.os_release},
                       {"boot_device", fw.bfver.boot_device},
                       {"evidence_id", fw.bfver_evidence_id}};
  } else {
    firmware["arm"] = {{"error", fw.bfver_status.message()},
                       {"evidence_id", fw.bfver_evidence_id}};
  }
  if (fw.nic_fw_status.ok()) {
    firmware["nic"] = {{"version", fw.nic_fw_version},
                       {"evidence_id", fw.nic_fw_evidence_id}};
  } else {
    firmware["nic"] = {{"error", fw.nic_fw_status.message()},
                       {"evidence_id", fw.nic_fw_evidence_id}};
  }
  c.firmware = std::move(firmware);
  c.evidence = capture.evidence();
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
  return claims;
}

}  // namespace dpuaudit::apps
