// Fuzzes ParseClaims (dpuaudit-report/1 and /2). Property: whatever parses
// re-serialises to bytes that parse to the same claims, and serialisation
// is a fixed point; resolving /2 by-digest items against the report's own
// full items never changes the signed bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "report/claims.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  auto claims = report::ParseClaims(ByteView(data, size));
  if (!claims.ok()) return 0;
  std::string bytes = report::SerializeClaims(*claims);
  auto again = report::ParseClaims(AsBytes(bytes));
  if (!again.ok() || !(*again == *claims)) std::abort();
  if (report::SerializeClaims(*again) != bytes) std::abort();
  if (!claims->by_digest.empty()) {
    std::vector<device::Evidence> full;
    for (const auto& e : claims->evidence) {
      if (claims->by_digest.count(e.id) == 0) full.push_back(e);
    }
    std::vector<std::string> missing =
        report::ResolveEvidence(*claims, report::IndexHeldEvidence(full));
    if (missing.empty() != claims->evidence_resolved) std::abort();
    if (report::SerializeClaims(*claims) != bytes) std::abort();
  }
  return 0;
}
