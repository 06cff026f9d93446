// What the agent measures on one run: every posture and firmware probe, the
// device identity, firmware versions, the boot chain (boot partitions' BFB
// images and OS boot artefacts, streamed and digested), and the raw
// evidence behind all of them.
//
// Guarantees: every DeviceSource access made while collecting is captured
// as Evidence (so the verifier can re-run the same probes on exactly what
// the agent saw); collection never fails as a whole — what cannot be read
// shows up as unknown findings and empty identity fields.
#ifndef DPUAUDIT_APPS_COMMON_AGENT_COLLECT_H_
#define DPUAUDIT_APPS_COMMON_AGENT_COLLECT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/finding.h"
#include "device/device_source.h"
#include "device/evidence.h"
#include "report/claims.h"

namespace dpuaudit::apps {

struct Collection {
  std::vector<Finding> findings;
  report::DeviceInfo device;
  nlohmann::json firmware = nlohmann::json::object();
  nlohmann::json boot_chain = nlohmann::json::object();
  std::vector<device::Evidence> evidence;
  std::vector<std::string> streamed_paths;  // files measured by streaming
};

Collection CollectFromDevice(const device::DeviceSource& source);

// Claims for a report bound to `nonce`.
report::ReportClaims BuildClaims(const Collection& c, const std::string& node_id,
                                 const std::string& nonce, int64_t issued_at);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_COMMON_AGENT_COLLECT_H_
