#include "isolation/probe_entries.h"

namespace dpuaudit::isolation::internal {

std::vector<ProbeInfo> BootProbeEntries() { return {}; }

}  // namespace dpuaudit::isolation::internal
