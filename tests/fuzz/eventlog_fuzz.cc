// Fuzz target: attest::ParseEventLog, then everything that consumes a parsed
// log (replay, JSON, descriptions, boot state). Checks the invariants the
// header promises: errors have a message, indexes/offsets are ordered, the
// replay only has PCRs some event extends, a digest binding's proven bytes
// are inside the event, the JSON serialises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "attest/eventlog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit::attest;
  dpuaudit::ByteView bytes(data, data == nullptr ? 0 : size);
  EventLogLimits limits;
  limits.max_event_data = 1u << 16;
  auto log = ParseEventLog(bytes, limits);
  if (!log.ok()) {
    if (log.status().message().empty()) std::abort();
    return 0;
  }
  if (log->events.empty() || log->algorithms.empty()) std::abort();
  std::set<uint32_t> extended;
  for (size_t i = 0; i < log->events.size(); ++i) {
    const TcgEvent& e = log->events[i];
    if (e.index != i) std::abort();
    // Only EV_NO_ACTION events may name a PCR outside [0, 23].
    if (e.type != kEvNoAction && e.pcr > kMaxPcrIndex) std::abort();
    // A binding's proven bytes lie inside the event's data; a mismatch or
    // an undefined binding says why.
    DataBinding b = CheckDataBinding(e);
    if (b.kind == DataBinding::Kind::kBound) {
      const auto begin = reinterpret_cast<uintptr_t>(e.data.data());
      const auto proven = reinterpret_cast<uintptr_t>(b.proven.data());
      if (!b.proven.empty() &&
          (proven < begin ||
           proven + b.proven.size() > begin + e.data.size())) {
        std::abort();
      }
      if (b.rule.empty()) std::abort();
    } else if (b.reason.empty()) {
      std::abort();
    }
    if (i > 0 && e.offset <= log->events[i - 1].offset) std::abort();
    if (e.type != kEvNoAction) extended.insert(e.pcr);
  }
  for (ReplayQuirk q : {ReplayQuirk::kUnloggedStartupLocality3}) {
    ReplayResult r = ReplayEventLog(*log, {q});
    (void)r;
  }
  ReplayResult replay = ReplayEventLog(*log);
  for (const auto& [alg, bank] : replay.pcrs) {
    for (const auto& [pcr, value] : bank) {
      if (!extended.contains(pcr) || value.empty()) std::abort();
    }
  }
  std::string dumped =
      EventLogJson(*log, replay)
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  BootState state = ExtractBootState(log->events);
  std::string state_json = BootStateJson(state).dump(
      -1, ' ', false, nlohmann::json::error_handler_t::strict);
  if (dumped.empty() || state_json.empty()) std::abort();
  return 0;
}
