// Finds the primary MST device of the BlueField this agent runs on
// (docs/bluefield.md#mst-devices), over a DeviceSource.
//
// Order: ListDir("/dev/mst") preferring mt41692_pciconf0 (BlueField-3), then
// mt41686_pciconf0 (BlueField-2), then mt41682_pciconf0 (BlueField-1); the
// second PF (`.1`) is chosen only when the first PF is absent. If /dev/mst
// is unreadable or holds no BlueField device, `mst status -v` is parsed with
// the same preference.
//
// Guarantees: the result is a /dev/mst/ path of a BlueField device with its
// generation; NOT_FOUND (whose message names both attempts) otherwise.
// Does NOT check: that the device answers, nor that there is only one
// BlueField (the lowest-numbered pciconfN of the newest generation wins).
#ifndef DPUAUDIT_ISOLATION_MST_DISCOVERY_H_
#define DPUAUDIT_ISOLATION_MST_DISCOVERY_H_

#include <string>

#include "common/status.h"
#include "device/device_source.h"
#include "bluefield/mst_status.h"

namespace dpuaudit::isolation {

struct MstDeviceInfo {
  std::string path;  // "/dev/mst/mt41692_pciconf0"
  bluefield::Generation generation = bluefield::Generation::kUnknown;
  std::string found_by;  // "/dev/mst" or "mst status -v"
};

StatusOr<MstDeviceInfo> DiscoverMstDevice(const device::DeviceSource& source);

}  // namespace dpuaudit::isolation

#endif  // DPUAUDIT_ISOLATION_MST_DISCOVERY_H_
