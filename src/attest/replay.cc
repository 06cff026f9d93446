// Replay of an untrusted event log against verified quote PCRs (replay.h).
#include "attest/replay.h"

#include <string>
#include <utility>
#include <vector>

namespace dpuaudit::attest {
namespace {

// PC Client PFP §3.3.4: PCRs 0-9 are extended only by the pre-OS
// measurements the log records; an unlogged non-zero value there is a
// mismatch. PCR 10 (IMA) and 11-23 are left to runtime.
constexpr uint32_t kLastBootPcr = 9;

// The value PCR `pcr` holds before its first extend, as ReplayEventLog
// assumes it (eventlog.h): all zero but PCR 0's last byte.
Bytes InitialValue(uint32_t pcr, size_t size, const ReplayResult& r,
                   const std::vector<ReplayQuirk>& quirks) {
  Bytes v(size, 0);
  if (pcr != 0 || size == 0) return v;
  v.back() = Pcr0InitialLocality(r, quirks);
  return v;
}

// Every PCR the quote selected (in a bank the log carries, checked by the
// caller) against the replay. Fills `matched`; FAILED_PRECONDITION at the
// first mismatch, in bank then PCR order.
Status Compare(const ReplayResult& r, const std::vector<ReplayQuirk>& quirks,
               const QuotedPcrs& quoted,
               std::map<uint16_t, std::set<uint32_t>>* matched) {
  matched->clear();
  for (const auto& [alg, selected] : quoted.selection()) {
    const std::string bank_name = HashAlgName(alg);
    auto log_bank = r.pcrs.find(alg);
    auto quote_bank = quoted.banks().find(alg);
    for (uint32_t pcr : selected) {
      const Bytes* quote_value = nullptr;
      if (quote_bank != quoted.banks().end()) {
        auto it = quote_bank->second.find(pcr);
        if (it != quote_bank->second.end()) quote_value = &it->second;
      }
      if (quote_value == nullptr) {
        return FailedPreconditionError("the quote has no value for " +
                                       bank_name + " PCR " +
                                       std::to_string(pcr) + ".");
      }
      Bytes expected;
      auto logged = log_bank->second.find(pcr);
      if (logged != log_bank->second.end()) {
        expected = logged->second;
      } else if (pcr <= kLastBootPcr) {
        expected = InitialValue(
            pcr, HashAlgDigestSize(alg).value_or(quote_value->size()), r,
            quirks);
      } else {
        continue;  // runtime PCR the log does not describe: not compared
      }
      if (expected != *quote_value) {
        return FailedPreconditionError(
            bank_name + " PCR " + std::to_string(pcr) + ": log replays to " +
            HexEncode(expected) + ", quote has " + HexEncode(*quote_value) +
            ".");
      }
      (*matched)[alg].insert(pcr);
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<VerifiedBootLog> ReplayAgainstQuote(const EventLog& log,
                                             const QuotedPcrs& quoted) {
  const ReplayResult strict = ReplayEventLog(log);
  for (const auto& [alg, selected] : quoted.selection()) {
    if (selected.empty()) continue;
    if (!strict.pcrs.contains(alg)) {
      return FailedPreconditionError(
          "the quote selects " + HashAlgName(alg) + " PCRs but the " +
          std::string(EventLogFormatName(log.format)) + " event log has no " +
          HashAlgName(alg) + " bank to replay.");
    }
  }

  VerifiedBootLog out;
  out.format_ = log.format;
  Status s = Compare(strict, {}, quoted, &out.matched_);
  if (!s.ok()) {
    // Named quirks, one at a time, only after strict replay failed
    // (docs/architecture.md#design-rules). The strict mismatch is what
    // gets reported.
    bool fixed = false;
    for (const ReplayQuirkInfo& info : ReplayQuirks()) {
      const std::vector<ReplayQuirk> quirks = {info.quirk};
      const ReplayResult r = ReplayEventLog(log, quirks);
      if (Compare(r, quirks, quoted, &out.matched_).ok()) {
        out.quirks_ = quirks;
        fixed = true;
        break;
      }
    }
    if (!fixed) return s;
  }

  // Events whose PCR matched in at least one bank. EV_NO_ACTION events are
  // never extended, so no PCR vouches for them: they are dropped too.
  for (const TcgEvent& e : log.events) {
    if (e.type == kEvNoAction) continue;
    bool verified = false;
    for (const auto& [alg, pcrs] : out.matched_) {
      if (pcrs.contains(e.pcr) && e.DigestFor(alg) != nullptr) verified = true;
    }
    if (verified) out.events_.push_back(e);
  }
  return out;
}

BootState DeriveBootState(const VerifiedBootLog& log) {
  return ExtractBootState(log.events());
}

}  // namespace dpuaudit::attest
