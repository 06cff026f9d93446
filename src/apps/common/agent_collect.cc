#include "apps/common/agent_collect.h"

#include <utility>

#include "device/memoizing_source.h"
#include "isolation/device_facts.h"

namespace dpuaudit::apps {

Collection CollectFromDevice(const device::DeviceSource& source) {
  device::CapturingDeviceSource capture(source);
  // Every request answered once, so each reader sees the same bytes.
  device::MemoizingDeviceSource memo(capture);
  isolation::DeviceFacts facts = isolation::CollectDeviceFacts(memo);
  Collection c;
  c.findings = std::move(facts.findings);
  const isolation::DeviceIdentity& id = facts.device;  // SafeText already
  c.device = report::DeviceInfo{id.model,  id.serial,   id.part_number,
                                id.psid,   id.base_mac, id.fw_version};
  c.firmware = facts.firmware_json();
  c.boot_chain = facts.boot_chain_json();
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
