// Fuzz target: bluefield::ParseMlxconfigQuery and bluefield::ClassifyOperationMode
// (docs/bluefield.md#mlxconfig, #operation-mode).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bluefield/mlxconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;  // NOLINT
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto q = bluefield::ParseMlxconfigQuery(text);
  if (!q.ok()) {
    if (q.status().message().empty()) std::abort();
    return 0;
  }
  for (const auto& p : q->params) {
    if (p.current_value.has_value() != q->has_current) std::abort();
    if (q->Find(p.name) == nullptr) std::abort();
  }
  for (bluefield::Generation g : {bluefield::Generation::kUnknown, bluefield::Generation::kBlueField2,
                       bluefield::Generation::kBlueField3}) {
    bluefield::ModeClassification m = bluefield::ClassifyOperationMode(*q, g);
    if (!q->has_current && m.mode != bluefield::OperationMode::kUnknown) std::abort();
    (void)bluefield::OperationModeName(m.mode);
  }
  return 0;
}
