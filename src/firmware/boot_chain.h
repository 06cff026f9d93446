// The report's "boot_chain" section: what the agent measured of the boot
// chain (boot partitions and their BFB images; OS boot artefacts and the
// kernel command line), and the boot-chain findings the verifier derives
// from it.
//
// Trust: the digests are measured by the agent (self-reported tier) — the
// partitions and files are far too large to carry as evidence. Small inputs
// the measurement depends on (mlxbf-bootctl output, /proc/cmdline, efivars)
// are captured as ordinary evidence, so the verifier re-derives which
// partition is primary and checks the claim against it.
//
// JSON: {"format": "dpuaudit-boot-chain/1",
//        "partitions": <BootPartitionsJson>, "os": <OsBootJson>}
// Guarantees: ParseBootChainJson is strict (unknown members, wrong format,
// and every error of the part parsers, naming the JSON path).
#ifndef DPUAUDIT_FIRMWARE_BOOT_CHAIN_H_
#define DPUAUDIT_FIRMWARE_BOOT_CHAIN_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "firmware/boot_partitions.h"
#include "firmware/os_boot.h"
#include "common/finding.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::firmware {

inline constexpr std::string_view kBootChainFormat = "dpuaudit-boot-chain/1";

struct BootChainInfo {
  BootPartitions partitions;
  OsBootInfo os;
};

BootChainInfo MeasureBootChain(const device::DeviceSource& source);
nlohmann::json BootChainJson(const BootChainInfo& info);
StatusOr<BootChainInfo> ParseBootChainJson(const nlohmann::json& j);

// Finding ids derived from a boot chain, in this order:
//   boot.stream_integrity  "intact" (the primary partition parsed as a BFB
//                          and every image CRC matched) | "corrupt" (a CRC
//                          mismatch); unknown when the primary is unknown or
//                          unreadable.
inline constexpr std::string_view kBootStreamIntegrityId = "boot.stream_integrity";
const std::vector<std::string_view>& BootChainFindingIds();

// `primary` is the primary partition as re-derived from mlxbf-bootctl
// evidence by the caller ("" when unknown: the finding is then unknown).
// The findings are MakeSafe (common/finding.h).
std::vector<Finding> BootChainFindings(const BootChainInfo& info,
                                       const std::string& primary);

}  // namespace dpuaudit::firmware

#endif  // DPUAUDIT_FIRMWARE_BOOT_CHAIN_H_
