// Internal: the parts of the probe catalogue kept next to their probes.
// ProbeCatalogue() (probes.cc) lists the host-restriction and mode probes
// itself and appends these, in this order. Each list is static data; ids
// stay unique across all of them (tested).
#ifndef DPUAUDIT_ISOLATION_PROBE_ENTRIES_H_
#define DPUAUDIT_ISOLATION_PROBE_ENTRIES_H_

#include <vector>

#include "isolation/probes.h"

namespace dpuaudit::isolation::internal {

// dpu.* probes beyond dpu.operation_mode (dpu_probes.cc).
std::vector<ProbeInfo> DpuProbeEntries();
// boot.* and os.* probes (boot_probes.cc).
std::vector<ProbeInfo> BootProbeEntries();
// nic.* probes (nic_probes.cc).
std::vector<ProbeInfo> NicProbeEntries();
// fw.* probes (fw_probes.cc).
std::vector<ProbeInfo> FwProbeEntries();
std::string_view VersionComponentOf(std::string_view probe_id);

}  // namespace dpuaudit::isolation::internal

#endif  // DPUAUDIT_ISOLATION_PROBE_ENTRIES_H_
