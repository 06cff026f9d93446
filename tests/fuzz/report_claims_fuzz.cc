// Fuzzes ParseClaims. Property: whatever parses re-serialises to bytes that
// parse to the same claims, and serialisation is a fixed point.
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
  return 0;
}
