// Helpers shared by the probe tests: a ProbeContext with a discovered MST
// device, and running one catalogue probe by id.
#ifndef DPUAUDIT_TESTS_ISOLATION_PROBE_TEST_UTIL_H_
#define DPUAUDIT_TESTS_ISOLATION_PROBE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "testing/fake_device_source.h"
#include "isolation/probes.h"

namespace dpuaudit::isolation::probe_testing {

inline ProbeContext ContextWithMst(const std::string& mst, bluefield::Generation gen) {
  ProbeContext ctx;
  ctx.mst = MstDeviceInfo{mst, gen, "/dev/mst"};
  return ctx;
}

// Runs the catalogue probe `id`; a missing probe fails the test.
inline Finding RunCatalogueProbe(std::string_view id,
                                 const device::DeviceSource& src,
                                 const ProbeContext& ctx) {
  const ProbeInfo* info = FindProbe(id);
  EXPECT_NE(info, nullptr) << id << " is not in the catalogue";
  if (info == nullptr) return Finding{};
  return info->function(src, ctx);
}

}  // namespace dpuaudit::isolation::probe_testing

#endif  // DPUAUDIT_TESTS_ISOLATION_PROBE_TEST_UTIL_H_
