// WorkBudget: a process-wide bound on the CPU that requests nobody vouched
// for (no token) may spend on expensive checks, e.g. the compositeness test
// of an RSA key at enrollment (~0.6 s of CPU for a 4096-bit prime "modulus"
// in a 1.5 KB request).
//
// Guarantees:
//  - At most `max_concurrent` pieces of work run at once; one more is
//    refused at once (RATE_LIMITED "<what>: limited to N at a time; retry
//    in 1 s.").
//  - CPU is accounted as a token bucket of CPU-milliseconds: it holds at
//    most `cpu_ms_per_second` (one second's worth) and refills at
//    `cpu_ms_per_second` per second of monotonic time. Work may start only
//    while the bucket is positive; when it ends, the CPU time its thread
//    really used (CLOCK_THREAD_CPUTIME_ID, measured by the Ticket) is
//    deducted, so the bucket may go negative (debt) and later work waits
//    until the debt is repaid: RATE_LIMITED "<what>: limited to N ms of
//    CPU per second in all; retry in S s." (S >= 1; the HTTP layer turns the
//    number into Retry-After). Sustained, the work uses at most
//    cpu_ms_per_second per second plus one piece's cost per refusal window.
//  - cpu_ms_per_second == 0 turns the budget off (nothing is refused).
//    Thread-safe.
// Does not: preempt work that has started (one piece can exceed the
// budget; the debt then refuses later ones), tell honest from hostile
// callers (an attacker can spend the budget that honest token-less callers
// share; callers with a token should not use it), or persist across
// restarts.
#ifndef DPUAUDIT_VERIFIER_WORK_BUDGET_H_
#define DPUAUDIT_VERIFIER_WORK_BUDGET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"

namespace dpuaudit::verifier {

struct WorkBudgetOptions {
  uint32_t cpu_ms_per_second = 200;
  uint32_t max_concurrent = 1;
  // Monotonic time in microseconds; the steady clock when empty (tests
  // inject their own).
  std::function<int64_t()> now_us;
};

class WorkBudget {
 public:
  // `what` names the work in errors ("unauthenticated enrollment checks").
  WorkBudget(std::string what, WorkBudgetOptions options);
  WorkBudget(const WorkBudget&) = delete;
  WorkBudget& operator=(const WorkBudget&) = delete;

  // One admitted piece of work: measures its thread's CPU time from
  // construction to destruction and charges it to the budget. Must be
  // destroyed on the thread that took it.
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();

   private:
    friend class WorkBudget;
    Ticket(WorkBudget* budget, int64_t cpu_start_us);
    WorkBudget* budget_;
    int64_t cpu_start_us_;
  };

  // A ticket, or RATE_LIMITED (see above).
  StatusOr<Ticket> Begin();

  // Charges `cpu_us` as if a ticket had used it (for tests and for work
  // measured elsewhere).
  void Charge(int64_t cpu_us);
  // The bucket's content now, CPU microseconds (negative: debt).
  int64_t available_us();
  uint32_t cpu_ms_per_second() const { return options_.cpu_ms_per_second; }
  uint32_t max_concurrent() const { return options_.max_concurrent; }

  // This thread's CPU time, microseconds (CLOCK_THREAD_CPUTIME_ID).
  static int64_t ThreadCpuMicros();

 private:
  int64_t NowUs() const;
  void RefillLocked(int64_t now_us);
  void End(int64_t cpu_us);

  std::string what_;
  WorkBudgetOptions options_;
  std::mutex mu_;
  int64_t available_us_ = 0;
  int64_t updated_us_ = 0;
  uint32_t running_ = 0;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_WORK_BUDGET_H_
