// The boot stream installed on the BlueField's eMMC boot partitions
// (docs/bluefield.md#boot-chain): which partition is primary (`mlxbf-bootctl`),
// and the BFB layout and digests of each partition, read through a
// DeviceSource stream (a recorded device holds them as regular files under
// fs/dev/).
//
// `mlxbf-bootctl` (no arguments) prints, e.g.:
//   primary: /dev/mmcblk0boot1
//   backup: /dev/mmcblk0boot0
//   boot-bus-width: x8
//   reset to x1 after reboot: FALSE
//   boot watchdog interval: 0          (newer versions)
//   boot watchdog mode: disabled       (newer versions)
//   watchdog-swap: disabled
//   lifecycle state: GA Secured
//   secure boot key free slots: 3
// Guarantees (ParseMlxbfBootctl): every line is `key: value`; primary and
// backup are required and must be /dev/mmcblk0boot0 or /dev/mmcblk0boot1 and
// differ; a repeated key or a line without ": " is INVALID_ARGUMENT naming
// the line; unknown keys are kept in `other`.
//
// Guarantees (MeasureBootPartitions): never fails as a whole. bootctl_status
// says why the primary is unknown; each partition has its own status (NOT_FOUND
// when absent, the bluefield::ParseBfb error when it holds no valid stream, prefixed
// with the path). The whole partition's SHA-256 is computed in the same pass
// as the layout; a partition that holds no valid stream is still read to its
// end and hashed. `sha256` is "" when the partition could not be read to its
// end (absent, read error, larger than bluefield::BfbLimits::max_total_bytes); `size`
// is then the bytes read before the failure. Partitions are streamed with
// DeviceSource::OpenStream (bounded memory).
// Does not: decide whether the digests are approved (verifier), nor prove
// that the partition read is the one the boot ROM used (self-reported).
#ifndef DPUAUDIT_FIRMWARE_BOOT_PARTITIONS_H_
#define DPUAUDIT_FIRMWARE_BOOT_PARTITIONS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bluefield/bfb.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::firmware {

struct BootctlInfo {
  std::string primary;  // "/dev/mmcblk0boot1"
  std::string backup;   // "/dev/mmcblk0boot0"
  std::string lifecycle_state;  // "GA Secured" ("" if absent)
  std::vector<std::pair<std::string, std::string>> other;
};

StatusOr<BootctlInfo> ParseMlxbfBootctl(std::string_view text);

struct PartitionMeasurement {
  std::string path;       // "/dev/mmcblk0boot0"
  Status status;          // OK iff read and parsed as a BFB
  uint64_t size = 0;      // bytes read
  std::string sha256;     // of all bytes read ("" if not read)
  std::optional<bluefield::BfbLayout> layout;  // set iff status.ok()
};

struct BootPartitions {
  Status bootctl_status;            // why `primary` is empty, if it is
  std::string bootctl_evidence_id;  // of `mlxbf-bootctl`
  std::string primary;              // from mlxbf-bootctl
  std::vector<PartitionMeasurement> partitions;  // boot0 then boot1
  // The primary's measurement, nullptr if unknown or not measured (its
  // status is not OK: see `partitions` for the reason).
  const PartitionMeasurement* Primary() const;
};

BootPartitions MeasureBootPartitions(const device::DeviceSource& source);

// The report's boot_chain["partitions"] value:
// {"primary": "/dev/..."|null, "bootctl_error": "..."(only when unknown),
//  "items": [{"path", "size", "sha256", "error"(only when not ok),
//             "layout": <bluefield::BfbLayoutJson as an object>}]}
nlohmann::json BootPartitionsJson(const BootPartitions& p);
// Strict inverse (verifier): unknown members, wrong types, bad hex, more
// than 2 items, or a layout that contradicts itself (image offsets not
// increasing, end_offset/total_bytes inconsistent) are INVALID_ARGUMENT
// naming the JSON path ("partitions.items[1].layout.images[3].sha384").
// bootctl_status of the result is OK when "primary" is a string, otherwise
// UNAVAILABLE with the carried error; a per-item "error" becomes an
// UNAVAILABLE status with that message. Also rejected: "primary" or an item
// "path" other than kBootPartition0/1, a repeated item path, "bootctl_error"
// missing when "primary" is null (or present when it is not), an item with
// both or neither of "error" and "layout", an empty error, a measured item
// without sha256 or whose "size" is not its layout's total_bytes.
// bootctl_evidence_id is set to the canonical id of `mlxbf-bootctl`.
StatusOr<BootPartitions> ParseBootPartitionsJson(const nlohmann::json& j);


}  // namespace dpuaudit::firmware

#endif  // DPUAUDIT_FIRMWARE_BOOT_PARTITIONS_H_
