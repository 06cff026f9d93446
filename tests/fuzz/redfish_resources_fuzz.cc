// Fuzz target: dpuaudit::redfish::ParseResource and every resource reader
// (src/redfish/resources.h) on one body.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "redfish/resources.h"

namespace {
template <typename T>
void Check(const dpuaudit::StatusOr<T>& r) {
  if (!r.ok() && r.status().message().empty()) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace rf = dpuaudit::redfish;
  std::string_view body(reinterpret_cast<const char*>(data), data == nullptr ? 0 : size);
  auto j = rf::ParseResource(body, "/redfish/v1/fuzz");
  Check(j);
  if (!j.ok()) return 0;
  if (!j->is_object() || j->contains("error")) std::abort();
  Check(rf::ReadServiceRoot(*j));
  Check(rf::ReadCollection(*j, "/c"));
  Check(rf::ReadSystem(*j));
  Check(rf::ReadSystemOemNvidia(*j));
  Check(rf::ReadExternalHostPrivileges(*j));
  Check(rf::ReadBios(*j));
  Check(rf::ReadSecureBoot(*j));
  Check(rf::ReadManager(*j));
  Check(rf::ReadFirmwareItem(*j, "/f"));
  Check(rf::ReadComponentIntegrity(*j, "/ci"));
  Check(rf::ReadCertificateChain(*j, "/cert"));
  Check(rf::ReadTask(*j, "/t"));
  Check(rf::ReadSignedMeasurements(*j, "/e"));
  return 0;
}
