#include "firmware/boot_chain.h"

#include "common/strict_json.h"
#include "device/canonical_commands.h"
#include "device/evidence.h"

namespace dpuaudit::firmware {

BootChainInfo MeasureBootChain(const device::DeviceSource& source) {
  BootChainInfo info;
  info.partitions = MeasureBootPartitions(source);
  info.os = MeasureOsBoot(source);
  return info;
}

nlohmann::json BootChainJson(const BootChainInfo& info) {
  return {{"format", std::string(kBootChainFormat)},
          {"partitions", BootPartitionsJson(info.partitions)},
          {"os", OsBootJson(info.os)}};
}

StatusOr<BootChainInfo> ParseBootChainJson(const nlohmann::json& j) {
  DPA_RETURN_IF_ERROR(strict_json::RequireOnlyMembers(
      j, "boot_chain", {"format", "partitions", "os"}));
  auto format = j.find("format");
  if (format == j.end() || !format->is_string() ||
      format->get<std::string>() != kBootChainFormat) {
    return InvalidArgumentError("boot_chain.format must be \"" +
                                std::string(kBootChainFormat) + "\".");
  }
  auto partitions = j.find("partitions");
  auto os = j.find("os");
  if (partitions == j.end()) return InvalidArgumentError("boot_chain.partitions is missing.");
  if (os == j.end()) return InvalidArgumentError("boot_chain.os is missing.");
  BootChainInfo info;
  StatusOr<BootPartitions> p = ParseBootPartitionsJson(*partitions);
  if (!p.ok()) return p.status().WithPrefix("boot_chain");
  info.partitions = std::move(p).value();
  StatusOr<OsBootInfo> o = ParseOsBootJson(*os);
  if (!o.ok()) return o.status().WithPrefix("boot_chain");
  info.os = std::move(o).value();
  return info;
}

const std::vector<std::string_view>& BootChainFindingIds() {
  static const std::vector<std::string_view> kIds = {kBootStreamIntegrityId};
  return kIds;
}

namespace {

Finding BootStreamFinding(const BootChainInfo& info, const std::string& primary) {
  Finding f;
  f.id = std::string(kBootStreamIntegrityId);
  f.expected = "intact";
  f.source = primary.empty() ? "boot partitions" : "boot partition " + primary;
  // The primary comes from mlxbf-bootctl, the evidence the verifier has.
  f.evidence_id = device::EvidenceIdForCommand(device::MlxbfBootctlArgv());
  auto unknown = [&](std::string reason) {
    f.verdict = Verdict::kUnknown;
    f.reason = std::move(reason);
    return f;
  };
  if (primary.empty()) {
    return unknown("the primary boot partition is unknown (mlxbf-bootctl: " +
                   (info.partitions.bootctl_status.ok()
                        ? std::string("no evidence")
                        : info.partitions.bootctl_status.message()) +
                   ")");
  }
  const PartitionMeasurement* m = nullptr;
  for (const PartitionMeasurement& p : info.partitions.partitions) {
    if (p.path == primary) m = &p;
  }
  if (m == nullptr) return unknown("the primary " + primary + " was not measured");
  if (!m->status.ok() || !m->layout) {
    return unknown(primary + " holds no readable boot stream: " + m->status.message());
  }
  std::string bad;
  for (const bluefield::BfbImage& img : m->layout->images) {
    if (!img.crc_ok) {
      bad += (bad.empty() ? "" : ", ") + img.name + " at offset " +
             std::to_string(img.offset);
    }
  }
  std::string trailing;
  if (m->layout->trailing == bluefield::BfbTrailing::kGarbage) {
    trailing = "; " + std::to_string(m->layout->trailing_bytes) +
               " bytes of non-padding data follow the stream at offset " +
               std::to_string(m->layout->end_offset);
  }
  if (!bad.empty()) {
    f.verdict = Verdict::kFail;
    f.observed = "corrupt";
    f.reason = "image CRC mismatch in " + primary + ": " + bad + trailing;
  } else {
    f.verdict = Verdict::kPass;
    f.observed = "intact";
    f.reason = std::to_string(m->layout->images.size()) + " images, all CRCs match" +
               trailing;
  }
  return f;
}

}  // namespace

std::vector<Finding> BootChainFindings(const BootChainInfo& info,
                                       const std::string& primary) {
  Finding f = BootStreamFinding(info, primary);
  // Partition paths and parser messages come from the device.
  MakeSafe(f);
  return {f};
}

}  // namespace dpuaudit::firmware
