#include "isolation/probe_entries.h"

namespace dpuaudit::isolation::internal {

std::vector<ProbeInfo> DpuProbeEntries() { return {}; }

}  // namespace dpuaudit::isolation::internal
