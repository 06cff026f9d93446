// Fuzzes ParseEar. Property: whatever parses re-serialises to bytes that
// parse to the same result, and serialisation is a fixed point.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "report/ear.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  auto ar = report::ParseEar(ByteView(data, size));
  if (!ar.ok()) return 0;
  std::string bytes = report::SerializeEar(*ar);
  auto again = report::ParseEar(AsBytes(bytes));
  if (!again.ok() || !(*again == *ar)) std::abort();
  if (report::SerializeEar(*again) != bytes) std::abort();
  return 0;
}
