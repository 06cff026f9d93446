#include "verifier/work_budget.h"

#include <time.h>

#include <algorithm>
#include <chrono>

namespace dpuaudit::verifier {

WorkBudget::WorkBudget(std::string what, WorkBudgetOptions options)
    : what_(std::move(what)), options_(std::move(options)) {
  options_.max_concurrent = std::max<uint32_t>(options_.max_concurrent, 1);
  available_us_ = int64_t{options_.cpu_ms_per_second} * 1000;
  updated_us_ = NowUs();
}

int64_t WorkBudget::NowUs() const {
  if (options_.now_us) return options_.now_us();
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t WorkBudget::ThreadCpuMicros() {
  struct timespec ts {};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}

void WorkBudget::RefillLocked(int64_t now_us) {
  const int64_t capacity = int64_t{options_.cpu_ms_per_second} * 1000;
  const int64_t elapsed = std::max<int64_t>(now_us - updated_us_, 0);
  // rate: cpu_ms_per_second ms per s = cpu_ms_per_second / 1000 us per us.
  available_us_ = std::min(
      capacity, available_us_ + elapsed * options_.cpu_ms_per_second / 1000);
  updated_us_ = now_us;
}

StatusOr<WorkBudget::Ticket> WorkBudget::Begin() {
  if (options_.cpu_ms_per_second == 0) return Ticket(nullptr, 0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    RefillLocked(NowUs());
    if (running_ >= options_.max_concurrent) {
      return RateLimitedError(what_ + ": limited to " +
                              std::to_string(options_.max_concurrent) +
                              " at a time; retry in 1 s.");
    }
    if (available_us_ <= 0) {
      // Time until the bucket is positive again, rounded up to seconds.
      const int64_t rate_per_s = int64_t{options_.cpu_ms_per_second} * 1000;
      const int64_t wait_s = (-available_us_ + rate_per_s) / rate_per_s;
      return RateLimitedError(
          what_ + ": limited to " +
          std::to_string(options_.cpu_ms_per_second) +
          " ms of CPU per second in all; retry in " +
          std::to_string(std::max<int64_t>(wait_s, 1)) + " s.");
    }
    ++running_;
  }
  return Ticket(this, ThreadCpuMicros());
}

void WorkBudget::Charge(int64_t cpu_us) {
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(NowUs());
  available_us_ -= std::max<int64_t>(cpu_us, 0);
}

void WorkBudget::End(int64_t cpu_us) {
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(NowUs());
  available_us_ -= std::max<int64_t>(cpu_us, 0);
  if (running_ > 0) --running_;
}

int64_t WorkBudget::available_us() {
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(NowUs());
  return available_us_;
}

WorkBudget::Ticket::Ticket(WorkBudget* budget, int64_t cpu_start_us)
    : budget_(budget), cpu_start_us_(cpu_start_us) {}

WorkBudget::Ticket::Ticket(Ticket&& other) noexcept
    : budget_(other.budget_), cpu_start_us_(other.cpu_start_us_) {
  other.budget_ = nullptr;
}

WorkBudget::Ticket::~Ticket() {
  if (budget_ != nullptr) budget_->End(ThreadCpuMicros() - cpu_start_us_);
}

}  // namespace dpuaudit::verifier
