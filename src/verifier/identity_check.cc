#include "verifier/identity_check.h"

#include <string>

#include "common/strict_json.h"

namespace dpuaudit::verifier {
namespace {

constexpr std::string_view kSource = "flint, sysfs serial, PCI VPD evidence";

std::string Shown(const std::string& v) {
  return v.empty() ? "(none)" : strict_json::Quote(v);
}

}  // namespace

std::vector<report::DecisionReason> CheckReportedIdentity(
    const report::DeviceInfo& claimed, const report::DeviceInfo& derived,
    std::string_view pinned_serial) {
  std::vector<report::DecisionReason> out;
  struct Field {
    const char* name;
    const std::string& claimed;
    const std::string& derived;
  };
  for (const Field& f : {Field{"model", claimed.model, derived.model},
                         Field{"serial", claimed.serial, derived.serial},
                         Field{"part_number", claimed.part_number,
                               derived.part_number},
                         Field{"psid", claimed.psid, derived.psid},
                         Field{"base_mac", claimed.base_mac, derived.base_mac},
                         Field{"fw_version", claimed.fw_version,
                               derived.fw_version}}) {
    if (f.claimed == f.derived) continue;
    out.push_back(
        {std::string(kDeviceIdentityRule), Verdict::kFail,
         std::string("evidence: ") + f.name + " " + Shown(f.derived),
         std::string("report device.") + f.name + " " + Shown(f.claimed),
         std::string(kSource),
         std::string("the report's device block names ") + f.name + " " +
             Shown(f.claimed) + " but its evidence shows " + Shown(f.derived) +
             ": the report describes another DPU than its evidence",
         report::ClaimTier::kSelfReported});
  }
  if (!pinned_serial.empty() && derived.serial != pinned_serial) {
    const std::string pinned(pinned_serial);
    bool unknown = derived.serial.empty();
    out.push_back(
        {std::string(kDeviceIdentityRule),
         unknown ? Verdict::kUnknown : Verdict::kFail,
         "enrolled serial " + Shown(pinned),
         "evidence: serial " + Shown(derived.serial), std::string(kSource),
         unknown ? "the node was enrolled as serial " + Shown(pinned) +
                       " but its evidence shows no serial"
                 : "the node was enrolled as serial " + Shown(pinned) +
                       " but its evidence shows serial " +
                       Shown(derived.serial) + ": another DPU",
         report::ClaimTier::kSelfReported});
  }
  return out;
}

}  // namespace dpuaudit::verifier
