#include "firmware/inventory.h"

#include <algorithm>
#include <string>
#include <vector>

#include "bluefield/flint.h"
#include "bluefield/fw_sources.h"
#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "device/run_tool.h"

namespace dpuaudit::firmware {
namespace {

using device::CommandLine;
using device::RunTool;

constexpr size_t kMaxSmallFileBytes = 4096;

void CollectBfver(const device::DeviceSource& source, FirmwareInfo& info) {
  const device::Argv argv = device::BfverArgv();
  info.bfver_source = CommandLine(argv);
  info.bfver_evidence_id = device::EvidenceIdForCommand(argv);
  StatusOr<std::string> out = RunTool(source, argv);
  if (!out.ok()) {
    info.bfver_status = out.status();
    return;
  }
  StatusOr<bluefield::BfverInfo> parsed = bluefield::ParseBfver(*out);
  if (parsed.ok()) {
    info.bfver = std::move(parsed).value();
  } else {
    info.bfver_status = parsed.status();
  }
}

void CollectMlnxRelease(const device::DeviceSource& source, FirmwareInfo& info) {
  info.mlnx_release_evidence_id =
      device::EvidenceIdForFile(device::kMlnxReleasePath);
  StatusOr<Bytes> raw = source.ReadFile(device::kMlnxReleasePath, kMaxSmallFileBytes);
  if (!raw.ok()) {
    info.mlnx_release_status = raw.status();
    return;
  }
  StatusOr<std::string> parsed = bluefield::ParseMlnxRelease(ToString(*raw));
  if (parsed.ok()) {
    info.mlnx_release = *parsed;
  } else {
    info.mlnx_release_status = parsed.status();
  }
}

void CollectSysfs(const device::DeviceSource& source, FirmwareInfo& info) {
  const std::string dir = device::kInfinibandClassDir;
  StatusOr<std::vector<std::string>> names = source.ListDir(dir);
  if (!names.ok()) {
    info.sysfs_status = names.status();
    return;
  }
  for (const std::string& name : *names) {
    if (name.rfind("mlx5_", 0) != 0) continue;
    const std::string path = dir + "/" + name + "/fw_ver";
    StatusOr<Bytes> raw = source.ReadFile(path, kMaxSmallFileBytes);
    if (!raw.ok()) {
      info.sysfs_status = raw.status().WithPrefix(path);
      info.sysfs_fw_ver.clear();
      return;
    }
    StatusOr<std::string> v = bluefield::ParseSysfsFwVer(ToString(*raw));
    if (!v.ok()) {
      info.sysfs_status = v.status().WithPrefix(path);
      info.sysfs_fw_ver.clear();
      return;
    }
    info.sysfs_fw_ver.emplace_back(name, *v);
  }
  if (info.sysfs_fw_ver.empty()) {
    info.sysfs_status = NotFoundError("no mlx5_* device under " + dir + ".");
  }
}

void CollectFlint(const FlintRead& flint, FirmwareInfo& info) {
  info.nic_fw_source = CommandLine(flint.argv);
  info.nic_fw_evidence_id = device::EvidenceIdForCommand(flint.argv);
  if (!flint.ok()) {
    info.nic_fw_status = flint.status();
    return;
  }
  const bluefield::FlintQuery& q = flint.query;
  std::string version = bluefield::FirstToken(q.Value("FW Version"));
  if (version.empty()) {
    info.nic_fw_status = InvalidArgumentError("flint output has no 'FW Version' line.");
    return;
  }
  if (version.find_first_not_of("0123456789.") != std::string::npos) {
    info.nic_fw_status = InvalidArgumentError(
        "flint 'FW Version' value '" + version + "' is not a dotted number.");
    return;
  }
  info.nic_fw_version = version;
  info.psid = bluefield::FirstToken(q.Value("PSID"));
}

// Picks our device among mlxfwmanager's: by MST path, then PSID, then the
// only one.
StatusOr<bluefield::MlxfwDevice> PickDevice(const std::vector<bluefield::MlxfwDevice>& devices,
                                 const std::string& mst, const std::string& psid) {
  for (const bluefield::MlxfwDevice& d : devices) {
    if (!mst.empty() && d.pci_device_name == mst) return d;
  }
  std::vector<const bluefield::MlxfwDevice*> by_psid;
  for (const bluefield::MlxfwDevice& d : devices) {
    if (!psid.empty() && d.psid == psid) by_psid.push_back(&d);
  }
  if (by_psid.size() == 1) return *by_psid.front();
  // Several functions of one card (same PSID) report one firmware: they are
  // interchangeable only if every version row agrees.
  if (by_psid.size() > 1 &&
      std::all_of(by_psid.begin(), by_psid.end(), [&](const bluefield::MlxfwDevice* d) {
        return d->versions == by_psid.front()->versions;
      })) {
    return *by_psid.front();
  }
  if (devices.size() == 1) return devices.front();
  return FailedPreconditionError(
      "mlxfwmanager lists " + std::to_string(devices.size()) +
      " devices and none is uniquely " + (mst.empty() ? std::string("ours") : mst) +
      (psid.empty() ? "" : " / PSID " + psid) + ".");
}

void CollectMlxfwmanager(const device::DeviceSource& source, const std::string& mst,
                         FirmwareInfo& info) {
  // XML first (safer to parse), the text form when XML is unavailable.
  const device::Argv xml_argv = device::MlxfwmanagerQueryXmlArgv();
  StatusOr<std::string> xml = RunTool(source, xml_argv);
  StatusOr<std::vector<bluefield::MlxfwDevice>> devices = xml.status();
  device::Argv used = xml_argv;
  if (xml.ok()) {
    devices = bluefield::ParseMlxfwmanagerXml(*xml);
  } else {
    const device::Argv text_argv = device::MlxfwmanagerQueryArgv();
    StatusOr<std::string> text = RunTool(source, text_argv);
    used = text_argv;
    devices = text.ok() ? bluefield::ParseMlxfwmanagerText(*text)
                        : StatusOr<std::vector<bluefield::MlxfwDevice>>(text.status());
  }
  info.mlxfw_source = CommandLine(used);
  info.mlxfw_evidence_id = device::EvidenceIdForCommand(used);
  if (!devices.ok()) {
    info.mlxfw_status = devices.status();
    return;
  }
  StatusOr<bluefield::MlxfwDevice> ours = PickDevice(*devices, mst, info.psid);
  if (!ours.ok()) {
    info.mlxfw_status = ours.status();
    return;
  }
  info.mlxfw = std::move(ours).value();
}

}  // namespace

std::string FirmwareInfo::MlxfwCurrent() const {
  if (!mlxfw) return "";
  const bluefield::FwVersionRow* row = mlxfw->Find("FW");
  return row == nullptr ? "" : row->current;
}

std::string FirmwareInfo::MlxfwAvailable() const {
  if (!mlxfw) return "";
  const bluefield::FwVersionRow* row = mlxfw->Find("FW");
  return row == nullptr ? "" : row->available;
}

FirmwareInfo CollectFirmware(const device::DeviceSource& source) {
  return CollectFirmware(source, std::string());
}

FlintRead ReadFlint(const device::DeviceSource& source, const std::string& mst) {
  FlintRead read;
  read.mst = mst;
  read.argv = device::FlintQueryArgv(mst);
  StatusOr<std::string> out = RunTool(source, read.argv);
  if (!out.ok()) {
    read.run_status = out.status();
    return read;
  }
  StatusOr<bluefield::FlintQuery> q = bluefield::ParseFlintQuery(*out);
  if (q.ok()) {
    read.query = std::move(q).value();
  } else {
    read.parse_status = q.status();
  }
  return read;
}

FirmwareInfo CollectFirmware(const device::DeviceSource& source,
                             const std::string& mst_device) {
  if (mst_device.empty()) {
    FirmwareInfo info;
    CollectBfver(source, info);
    CollectMlnxRelease(source, info);
    CollectSysfs(source, info);
    Status no_mst = FailedPreconditionError("no MST device to query the NIC firmware on.");
    info.nic_fw_status = no_mst;
    info.mlxfw_status = no_mst;
    return info;
  }
  return CollectFirmware(source, ReadFlint(source, mst_device));
}

FirmwareInfo CollectFirmware(const device::DeviceSource& source,
                             const FlintRead& flint) {
  FirmwareInfo info;
  CollectBfver(source, info);
  CollectMlnxRelease(source, info);
  CollectSysfs(source, info);
  CollectFlint(flint, info);
  CollectMlxfwmanager(source, flint.mst, info);
  return info;
}

NicFwConsistency CheckNicFwConsistency(const FirmwareInfo& fw) {
  std::vector<std::pair<std::string, std::string>> seen;  // source, version
  std::vector<std::string> failed;
  if (fw.nic_fw_status.ok()) {
    seen.emplace_back("flint", fw.nic_fw_version);
  } else {
    failed.push_back("flint: " + fw.nic_fw_status.message());
  }
  if (fw.sysfs_status.ok()) {
    for (const auto& [dev, v] : fw.sysfs_fw_ver) seen.emplace_back("sysfs " + dev, v);
  } else {
    failed.push_back("sysfs: " + fw.sysfs_status.message());
  }
  if (fw.mlxfw_status.ok() && !fw.MlxfwCurrent().empty()) {
    seen.emplace_back("mlxfwmanager", fw.MlxfwCurrent());
  } else {
    failed.push_back("mlxfwmanager: " + (fw.mlxfw_status.ok()
                                             ? std::string("no FW row")
                                             : fw.mlxfw_status.message()));
  }
  NicFwConsistency out;
  for (const auto& [src, v] : seen) {
    out.detail += (out.detail.empty() ? "" : ", ") + src + " " + v;
  }
  size_t sources = 0;
  bool has_sysfs = false;
  for (const auto& [src, v] : seen) {
    if (src.rfind("sysfs ", 0) == 0) {
      has_sysfs = true;
    } else {
      ++sources;
    }
  }
  if (has_sysfs) ++sources;
  if (sources < 2) {
    std::string why;
    for (const std::string& f : failed) why += (why.empty() ? "" : "; ") + f;
    out.detail = "fewer than two readable NIC firmware sources (" + why + ")";
    return out;
  }
  bool all_same = std::all_of(seen.begin(), seen.end(), [&](const auto& p) {
    return p.second == seen.front().second;
  });
  out.consistent = all_same;
  return out;
}

nlohmann::json FirmwareJson(const FirmwareInfo& fw) {
  nlohmann::json j = nlohmann::json::object();
  if (fw.bfver_status.ok()) {
    j["arm"] = {{"atf", fw.bfver.atf_version},
                {"atf_build", std::string(bluefield::AtfBuildName(fw.bfver.atf_build))},
                {"uefi", fw.bfver.uefi_version},
                {"bsp", fw.bfver.bsp_version},
                {"os_release", fw.bfver.os_release},
                {"boot_device", fw.bfver.boot_device}};
  } else {
    j["arm"] = {{"error", fw.bfver_status.message()}};
  }
  if (fw.nic_fw_status.ok()) {
    nlohmann::json sysfs = nlohmann::json::object();
    for (const auto& [dev, v] : fw.sysfs_fw_ver) sysfs[dev] = v;
    j["nic"] = {{"version", fw.nic_fw_version},
                {"psid", fw.psid},
                {"running", fw.MlxfwCurrent()},
                {"staged", fw.MlxfwAvailable()},
                {"sysfs", sysfs}};
  } else {
    j["nic"] = {{"error", fw.nic_fw_status.message()}};
  }
  j["mlnx_release"] = fw.mlnx_release_status.ok() ? nlohmann::json(fw.mlnx_release)
                                                  : nlohmann::json(nullptr);
  return j;
}

}  // namespace dpuaudit::firmware
