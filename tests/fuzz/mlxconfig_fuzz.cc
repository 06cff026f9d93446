// Fuzz target: isolation::ParseMlxconfigQuery and ClassifyOperationMode
// (BLUEFIELD.md §2.1, §2.3).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "isolation/mlxconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit::isolation;  // NOLINT
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto q = ParseMlxconfigQuery(text);
  if (!q.ok()) {
    if (q.status().message().empty()) std::abort();
    return 0;
  }
  for (const auto& p : q->params) {
    if (p.current_value.has_value() != q->has_current) std::abort();
    if (q->Find(p.name) == nullptr) std::abort();
  }
  for (Generation g : {Generation::kUnknown, Generation::kBlueField2,
                       Generation::kBlueField3}) {
    ModeClassification m = ClassifyOperationMode(*q, g);
    if (!q->has_current && m.mode != OperationMode::kUnknown) std::abort();
    (void)OperationModeName(m.mode);
  }
  return 0;
}
