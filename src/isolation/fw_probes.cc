// fw.* probes: firmware versions and their consistency
// (docs/bluefield.md#flint to #mlnx-release), read through
// firmware::CollectFirmware. Version-valued probes pass whenever the version is
// readable (observed = the version); the policy's allow-lists and min_version
// rules decide whether it is good enough, and the verifier's reference values
// whether it is approved.
#include <memory>
#include <string>
#include <string_view>

#include "firmware/inventory.h"
#include "device/canonical_commands.h"
#include "isolation/probe_entries.h"
#include "isolation/tool_run.h"

namespace dpuaudit::isolation {
namespace {

constexpr std::string_view kAtfBuildId = "fw.atf_build";
constexpr std::string_view kAtfVersionId = "fw.atf_version";
constexpr std::string_view kUefiVersionId = "fw.uefi_version";
constexpr std::string_view kBspVersionId = "fw.bsp_version";
constexpr std::string_view kOsReleaseId = "fw.os_release";
constexpr std::string_view kNicVersionId = "fw.nic_version";
constexpr std::string_view kNicConsistentId = "fw.nic_version_consistent";
constexpr std::string_view kNicStagedId = "fw.nic_staged";

constexpr auto Unknown = internal::UnknownFinding;

// The inventory the context collected once (ProbeContext::Collect); a
// context built without it (one probe run on its own) collects it here.
std::shared_ptr<const firmware::FirmwareInfo> Collect(
    const device::DeviceSource& source, const ProbeContext& ctx) {
  if (ctx.firmware) return ctx.firmware;
  return std::make_shared<const firmware::FirmwareInfo>(
      ctx.mst ? firmware::CollectFirmware(source, ctx.mst->path)
              : firmware::CollectFirmware(source));
}


// A version-valued finding from bfver: pass with the version as observed.
Finding BfverVersion(std::string_view id, const device::DeviceSource& source,
                     const ProbeContext& ctx,
                     std::string bluefield::BfverInfo::*field, std::string_view what) {
  const std::shared_ptr<const firmware::FirmwareInfo> inventory = Collect(source, ctx);
  const firmware::FirmwareInfo& fw = *inventory;
  Finding f = internal::StartCommandFinding(id, "", device::BfverArgv());
  if (!fw.bfver_status.ok()) return Unknown(std::move(f), fw.bfver_status.message());
  const std::string& v = fw.bfver.*field;
  if (v.empty()) {
    return Unknown(std::move(f), "`bfver` printed no " + std::string(what) + " version");
  }
  f.verdict = Verdict::kPass;
  f.observed = v;
  return f;
}

Finding ProbeAtfBuild(const device::DeviceSource& source, const ProbeContext& ctx) {
  const std::shared_ptr<const firmware::FirmwareInfo> inventory = Collect(source, ctx);
  const firmware::FirmwareInfo& fw = *inventory;
  Finding f = internal::StartCommandFinding(kAtfBuildId, "release", device::BfverArgv());
  if (!fw.bfver_status.ok()) return Unknown(std::move(f), fw.bfver_status.message());
  switch (fw.bfver.atf_build) {
    case bluefield::AtfBuild::kRelease:
      f.verdict = Verdict::kPass;
      f.observed = "release";
      return f;
    case bluefield::AtfBuild::kDebug:
      f.verdict = Verdict::kFail;
      f.observed = "debug";
      f.reason = "ATF " + fw.bfver.atf_version +
                 " is a debug build: not production boot firmware";
      return f;
    case bluefield::AtfBuild::kUnknown:
      break;
  }
  return Unknown(std::move(f), "ATF version '" + fw.bfver.atf_version +
                                   "' says neither (release) nor (debug)");
}

Finding ProbeAtfVersion(const device::DeviceSource& s, const ProbeContext& c) {
  return BfverVersion(kAtfVersionId, s, c, &bluefield::BfverInfo::atf_version, "ATF");
}
Finding ProbeUefiVersion(const device::DeviceSource& s, const ProbeContext& c) {
  return BfverVersion(kUefiVersionId, s, c, &bluefield::BfverInfo::uefi_version, "UEFI");
}
Finding ProbeBspVersion(const device::DeviceSource& s, const ProbeContext& c) {
  return BfverVersion(kBspVersionId, s, c, &bluefield::BfverInfo::bsp_version, "BSP");
}
Finding ProbeOsRelease(const device::DeviceSource& s, const ProbeContext& c) {
  return BfverVersion(kOsReleaseId, s, c, &bluefield::BfverInfo::os_release, "OS release");
}

Finding ProbeNicVersion(const device::DeviceSource& source, const ProbeContext& ctx) {
  if (!ctx.mst) {
    return internal::NoMstDeviceFinding(kNicVersionId, "", "flint", ctx.discovery_status);
  }
  const std::shared_ptr<const firmware::FirmwareInfo> inventory = Collect(source, ctx);
  const firmware::FirmwareInfo& fw = *inventory;
  Finding f = internal::StartCommandFinding(kNicVersionId, "",
                                            device::FlintQueryArgv(ctx.mst->path));
  if (!fw.nic_fw_status.ok()) return Unknown(std::move(f), fw.nic_fw_status.message());
  f.verdict = Verdict::kPass;
  f.observed = fw.nic_fw_version;
  return f;
}

Finding ProbeNicConsistent(const device::DeviceSource& source, const ProbeContext& ctx) {
  if (!ctx.mst) {
    return internal::NoMstDeviceFinding(kNicConsistentId, "consistent", "flint",
                                        ctx.discovery_status);
  }
  const std::shared_ptr<const firmware::FirmwareInfo> inventory = Collect(source, ctx);
  const firmware::FirmwareInfo& fw = *inventory;
  Finding f = internal::StartCommandFinding(kNicConsistentId, "consistent",
                                            device::FlintQueryArgv(ctx.mst->path));
  f.source = "flint, " + fw.sysfs_source + ", " +
             (fw.mlxfw_source.empty() ? std::string("mlxfwmanager") : fw.mlxfw_source);
  firmware::NicFwConsistency c = firmware::CheckNicFwConsistency(fw);
  if (!c.consistent) return Unknown(std::move(f), c.detail);
  f.verdict = *c.consistent ? Verdict::kPass : Verdict::kFail;
  f.observed = *c.consistent ? "consistent" : "inconsistent";
  if (!*c.consistent) {
    f.reason = "NIC firmware version sources disagree: " + c.detail +
               " (a version reported by one tool is not what another sees)";
  }
  return f;
}

Finding ProbeNicStaged(const device::DeviceSource& source, const ProbeContext& ctx) {
  if (!ctx.mst) {
    return internal::NoMstDeviceFinding(kNicStagedId, "none", "mlxfwmanager",
                                        ctx.discovery_status);
  }
  const std::shared_ptr<const firmware::FirmwareInfo> inventory = Collect(source, ctx);
  const firmware::FirmwareInfo& fw = *inventory;
  Finding f = internal::StartCommandFinding(kNicStagedId, "none",
                                            device::MlxfwmanagerQueryXmlArgv());
  if (!fw.mlxfw_source.empty()) f.source = fw.mlxfw_source;
  if (!fw.mlxfw_evidence_id.empty()) f.evidence_id = fw.mlxfw_evidence_id;
  if (!fw.mlxfw_status.ok()) return Unknown(std::move(f), fw.mlxfw_status.message());
  const std::string current = fw.MlxfwCurrent();
  const std::string available = fw.MlxfwAvailable();
  if (current.empty()) return Unknown(std::move(f), "mlxfwmanager lists no FW row");
  if (available.empty() || available == "N/A" || available == current) {
    f.verdict = Verdict::kPass;
    f.observed = "none";
    return f;
  }
  f.verdict = Verdict::kFail;
  f.observed = "staged";
  f.reason = "NIC firmware " + available + " is staged and becomes active at the next "
             "power cycle; running " + current;
  return f;
}

}  // namespace

namespace internal {

std::vector<ProbeInfo> FwProbeEntries() {
  return {
      {kAtfBuildId, "Arm Trusted Firmware is a release build (bfver)",
       {"release"}, {"release", "debug"}, &ProbeAtfBuild},
      {kAtfVersionId, "ATF (BL31) version from bfver", {}, {}, &ProbeAtfVersion},
      {kUefiVersionId, "UEFI (BL33) version from bfver", {}, {}, &ProbeUefiVersion},
      {kBspVersionId, "BSP version from bfver", {}, {}, &ProbeBspVersion},
      {kOsReleaseId, "OS release (/etc/mlnx-release as bfver prints it)", {}, {},
       &ProbeOsRelease},
      {kNicVersionId, "NIC firmware version (flint FW Version)", {}, {},
       &ProbeNicVersion},
      {kNicConsistentId,
       "NIC firmware version agrees across flint, sysfs fw_ver and mlxfwmanager",
       {"consistent"}, {"consistent", "inconsistent"}, &ProbeNicConsistent},
      {kNicStagedId, "No NIC firmware staged for the next power cycle (mlxfwmanager)",
       {"none"}, {"none", "staged"}, &ProbeNicStaged},
  };
}

std::string_view VersionComponentOf(std::string_view probe_id) {
  if (probe_id == kAtfVersionId) return "atf";
  if (probe_id == kUefiVersionId) return "uefi";
  if (probe_id == kBspVersionId) return "bsp";
  if (probe_id == kNicVersionId) return "nic-fw";
  return "";
}

}  // namespace internal
}  // namespace dpuaudit::isolation
