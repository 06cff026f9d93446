#include "isolation/probe_entries.h"

namespace dpuaudit::isolation::internal {

std::vector<ProbeInfo> NicProbeEntries() { return {}; }

}  // namespace dpuaudit::isolation::internal
