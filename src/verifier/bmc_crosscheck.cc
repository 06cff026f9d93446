// The agent's claims against the node's BMC (bmc_crosscheck.h).
#include "verifier/bmc_crosscheck.h"

#include <optional>
#include <sstream>
#include <utility>

#include "common/safe_text.h"

namespace dpuaudit::verifier {
namespace {

// What the BMC says, mapped to the agent's vocabulary, or why it cannot.
struct BmcValue {
  std::optional<std::string> value;
  std::string source;  // the Redfish resource and field
  std::string why;     // when !value
};

BmcValue Missing(std::string source, const bmc::BmcEvidence& e, const std::string& path,
                 const std::string& what) {
  auto err = e.errors.find(path);
  return {std::nullopt, std::move(source),
          err != e.errors.end() ? err->second : "the BMC did not report " + what};
}

BmcValue OperationMode(const bmc::BmcEvidence& e) {
  const std::string src = "BMC " + e.base_url + " Systems/Bluefield/Oem/Nvidia Mode";
  if (!e.oem || !e.oem->mode) return Missing(src, e, "/redfish/v1/Systems/Bluefield/Oem/Nvidia", "Mode");
  const std::string& m = *e.oem->mode;
  if (m == "NicMode") return {"nic", src, ""};
  if (m != "DpuMode") return {std::nullopt, src, "the BMC reports Mode \"" + m + "\""};
  if (e.bios && e.bios->internal_cpu_model == std::optional<std::string>("Separated")) {
    return {"separated_host", src + " + Bios InternalCPUModel", ""};
  }
  return {"dpu", src, ""};
}

BmcValue HostRshim(const bmc::BmcEvidence& e) {
  const std::string src = "BMC " + e.base_url + " Systems/Bluefield/Oem/Nvidia HostRshim";
  if (!e.oem || !e.oem->host_rshim) {
    return Missing(src, e, "/redfish/v1/Systems/Bluefield/Oem/Nvidia", "HostRshim");
  }
  if (*e.oem->host_rshim == "Disabled") return {"TRUE", src, ""};
  if (*e.oem->host_rshim == "Enabled") return {"FALSE", src, ""};
  return {std::nullopt, src, "the BMC reports HostRshim \"" + *e.oem->host_rshim + "\""};
}

BmcValue PrivilegeLevel(const bmc::BmcEvidence& e) {
  const std::string src = "BMC " + e.base_url + " Systems/Bluefield/Bios HostPrivilegeLevel";
  if (!e.bios || !e.bios->host_privilege_level) {
    return Missing(src, e, "/redfish/v1/Systems/Bluefield/Bios", "HostPrivilegeLevel");
  }
  const std::string& v = *e.bios->host_privilege_level;
  if (v == "Restricted") return {"RESTRICTED", src, ""};
  if (v == "Privileged") return {"PRIVILEGED", src, ""};
  return {std::nullopt, src, "the BMC reports HostPrivilegeLevel \"" + v + "\""};
}

BmcValue SecureBoot(const bmc::BmcEvidence& e) {
  const std::string src = "BMC " + e.base_url + " Systems/Bluefield/SecureBoot";
  if (!e.secure_boot || !e.secure_boot->enable) {
    return Missing(src, e, "/redfish/v1/Systems/Bluefield/SecureBoot", "SecureBootEnable");
  }
  if (e.secure_boot->mode == std::optional<std::string>("SetupMode")) {
    return {"setup_mode", src, ""};
  }
  const bool on = *e.secure_boot->enable &&
                  e.secure_boot->current_boot == std::optional<std::string>("Enabled");
  return {on ? "enabled" : "disabled", src, ""};
}

BmcValue Firmware(const bmc::BmcEvidence& e, const std::string& item) {
  const std::string src = "BMC " + e.base_url + " UpdateService/FirmwareInventory/" + item;
  auto it = e.firmware.find(item);
  if (it == e.firmware.end()) {
    return Missing(src, e, "/redfish/v1/UpdateService/FirmwareInventory/" + item,
                   "FirmwareInventory/" + item);
  }
  return {it->second, src, ""};
}

const Finding* FindById(const std::vector<Finding>& fs, const std::string& id) {
  for (const Finding& f : fs) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// Every comma-separated host value equals `bmc`.
bool Agrees(const std::string& agent, const std::string& bmc) {
  if (agent.empty()) return false;
  std::stringstream ss(agent);
  for (std::string part; std::getline(ss, part, ',');) {
    if (part != bmc) return false;
  }
  return true;
}

Finding Compare(const std::string& id, const std::string& agent_id, const std::string& agent_value,
                const std::string& agent_source, bool agent_known, const std::string& agent_why,
                const BmcValue& b, BmcCrossCheck& out) {
  Finding f;
  f.id = id;
  f.expected = "the agent's and the BMC's values agree";
  f.source = b.source;
  if (!agent_known) {
    f.verdict = Verdict::kUnknown;
    f.reason = agent_id + " is not known from the agent's evidence (" + agent_why +
               "), so it cannot be corroborated";
  } else if (!b.value) {
    f.verdict = Verdict::kUnknown;
    f.reason = "the BMC path is unavailable for " + agent_id + ": " + b.why;
  } else if (Agrees(agent_value, *b.value)) {
    f.verdict = Verdict::kPass;
    f.observed = "agree";
    f.reason = agent_id + " " + agent_value + " is corroborated by " + b.source;
    out.tiers[agent_id] = Tier::kCorroborated;
  } else {
    f.verdict = Verdict::kFail;
    f.observed = "agent " + agent_value + ", BMC " + *b.value;
    f.reason = "the paths diverge: the agent reports " + agent_id + " " + agent_value +
               " (" + agent_source + ") but the BMC reports " + *b.value + " (" + b.source +
               ")";
    out.contraindicated.insert(id);
  }
  MakeSafe(f);
  return f;
}

}  // namespace

const std::vector<std::string>& BmcCrossCheckIds() {
  static const std::vector<std::string> kIds = {
      "bmc.dpu.operation_mode", "bmc.host.rshim_disabled", "bmc.host.privilege_level",
      "bmc.boot.secure_boot",   "bmc.fw.atf_version",      "bmc.fw.uefi_version",
      "bmc.fw.bsp_version",     "bmc.fw.nic_version",      "bmc.serial"};
  return kIds;
}

BmcCrossCheck CrossCheckBmc(const std::vector<Finding>& agent_findings,
                            const std::string& agent_serial, const bmc::BmcEvidence& e) {
  BmcCrossCheck out;
  struct Pairing {
    const char* agent_id;
    BmcValue bmc;
  };
  const Pairing pairings[] = {
      {"dpu.operation_mode", OperationMode(e)},
      {"host.rshim_disabled", HostRshim(e)},
      {"host.privilege_level", PrivilegeLevel(e)},
      {"boot.secure_boot", SecureBoot(e)},
      {"fw.atf_version", Firmware(e, "DPU_ATF")},
      {"fw.uefi_version", Firmware(e, "DPU_UEFI")},
      {"fw.bsp_version", Firmware(e, "DPU_BSP")},
      {"fw.nic_version", Firmware(e, "DPU_NIC")},
  };
  for (const Pairing& p : pairings) {
    const Finding* a = FindById(agent_findings, p.agent_id);
    const bool known = a != nullptr && a->verdict != Verdict::kUnknown && !a->observed.empty();
    const std::string why = a == nullptr ? "no such finding" : a->reason;
    out.findings.push_back(Compare(std::string("bmc.") + p.agent_id, p.agent_id,
                                   a ? a->observed : "", a ? a->source : "", known, why, p.bmc,
                                   out));
  }
  BmcValue serial{std::nullopt, "BMC " + e.base_url + " Systems/Bluefield SerialNumber", ""};
  if (e.system && e.system->serial_number) {
    serial.value = *e.system->serial_number;
  } else {
    serial = Missing(serial.source, e, "/redfish/v1/Systems/Bluefield", "SerialNumber");
  }
  out.findings.push_back(Compare("bmc.serial", "device.identity", agent_serial,
                                 "the report's device identity", !agent_serial.empty(),
                                 "no serial in the report", serial, out));
  return out;
}

}  // namespace dpuaudit::verifier
