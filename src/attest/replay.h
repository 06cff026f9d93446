// Replaying an (untrusted) event log against a verified quote: the only way
// to events and boot state a decision may use (trust lives in types; step 7
// of attest/quote.h).
//
// Guarantees:
//  - ReplayAgainstQuote replays strictly first (attest/eventlog.h). Every
//    PCR the quote selected in a bank that the log also carries must equal
//    the replayed value, and a PCR the log extends must be selected by the
//    quote or it is not compared (its events are then NOT verified: they
//    are dropped from the VerifiedBootLog). PCRs the quote selected that
//    the log never extends must be all-zero (an unlogged extend is a
//    mismatch), except PCRs 10 and 11-23 which are left to runtime
//    measurements and compared only when the log extends them.
//  - If strict replay mismatches, each named quirk is tried alone, in
//    enum order; the first that makes every compared PCR match is used and
//    recorded in quirks_applied. Otherwise FAILED_PRECONDITION naming the
//    first mismatching bank and PCR with both values:
//    "sha256 PCR 4: log replays to 3f…, quote has 9a…".
//  - A bank the quote selected but the log lacks (e.g. a SHA1-format log and
//    a sha256 quote) is an error, never a silent pass.
#ifndef DPUAUDIT_ATTEST_REPLAY_H_
#define DPUAUDIT_ATTEST_REPLAY_H_

#include <string>
#include <vector>

#include "attest/eventlog.h"
#include "attest/quote.h"
#include "common/status.h"

namespace dpuaudit::attest {

class VerifiedBootLog {
 public:
  // Events whose PCR is covered by the quote and matched, in log order.
  // EV_NO_ACTION events (Spec ID, StartupLocality, ...) are never extended,
  // so no PCR vouches for them: they are not included.
  const std::vector<TcgEvent>& events() const { return events_; }
  EventLogFormat format() const { return format_; }
  const std::vector<ReplayQuirk>& quirks_applied() const { return quirks_; }
  // PCRs (bank -> indexes) whose replay matched the quote.
  const std::map<uint16_t, std::set<uint32_t>>& matched() const { return matched_; }

 private:
  friend StatusOr<VerifiedBootLog> ReplayAgainstQuote(const EventLog&,
                                                      const QuotedPcrs&);
  VerifiedBootLog() = default;
  std::vector<TcgEvent> events_;
  EventLogFormat format_ = EventLogFormat::kCryptoAgile;
  std::vector<ReplayQuirk> quirks_;
  std::map<uint16_t, std::set<uint32_t>> matched_;
};

StatusOr<VerifiedBootLog> ReplayAgainstQuote(const EventLog& log,
                                             const QuotedPcrs& quoted);

// Boot state from verified events only.
BootState DeriveBootState(const VerifiedBootLog& log);

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_ATTEST_REPLAY_H_
