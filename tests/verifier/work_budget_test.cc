// WorkBudget (issue 12): CPU-milliseconds per second and concurrency for
// the expensive checks of requests nobody vouched for, with an injected
// monotonic clock and real thread CPU time.
#include "verifier/work_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>
#include <optional>
#include <thread>

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;

// Burns about `us` microseconds of this thread's CPU.
void Spin(int64_t us) {
  const int64_t start = WorkBudget::ThreadCpuMicros();
  volatile uint64_t x = 0;
  while (WorkBudget::ThreadCpuMicros() - start < us) x = x + 1;
}

struct FakeTime {
  std::atomic<int64_t> us{1'000'000};
  WorkBudgetOptions Options(uint32_t ms_per_s, uint32_t concurrent) {
    return WorkBudgetOptions{ms_per_s, concurrent, [this] { return us.load(); }};
  }
};

TEST(WorkBudgetTest, ChargesMeasuredThreadCpuAndRefusesWhenSpent) {
  FakeTime t;
  WorkBudget budget("checks", t.Options(50, 4));
  EXPECT_EQ(budget.available_us(), 50'000);
  {
    auto ticket = budget.Begin();
    ASSERT_TRUE(ticket.ok()) << ticket.status().ToString();
    Spin(80'000);  // more than the whole budget: allowed to finish
  }
  const int64_t debt = budget.available_us();
  EXPECT_LE(debt, 50'000 - 80'000);
  EXPECT_GT(debt, 50'000 - 80'000 * 10);  // measured, not wildly off
  auto refused = budget.Begin();
  EXPECT_EQ(refused.status().code(), StatusCode::kRateLimited);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("checks: limited to 50 ms of CPU per second in all; retry in "));
  // The debt is repaid at 50 ms per second of (fake) time.
  t.us += 1'000'000;
  EXPECT_EQ(budget.available_us(), debt + 50'000);
  t.us += 10'000'000;
  EXPECT_EQ(budget.available_us(), 50'000);  // capped at one second's worth
  EXPECT_TRUE(budget.Begin().ok());
}

TEST(WorkBudgetTest, RetryAfterCoversTheDebt) {
  FakeTime t;
  WorkBudget budget("checks", t.Options(100, 1));
  budget.Charge(350'000);  // 100 - 350 = -250 ms: 2.5 s to repay
  auto refused = budget.Begin();
  EXPECT_EQ(refused.status(),
            RateLimitedError("checks: limited to 100 ms of CPU per second in "
                             "all; retry in 3 s."));
  t.us += 2'400'000;
  EXPECT_EQ(budget.Begin().status().code(), StatusCode::kRateLimited);
  t.us += 200'000;
  EXPECT_TRUE(budget.Begin().ok());
}

TEST(WorkBudgetTest, LimitsConcurrency) {
  FakeTime t;
  WorkBudget budget("checks", t.Options(1000, 2));
  std::optional<StatusOr<WorkBudget::Ticket>> a(budget.Begin()), b(budget.Begin());
  ASSERT_TRUE(a->ok());
  ASSERT_TRUE(b->ok());
  EXPECT_EQ(budget.Begin().status(),
            RateLimitedError("checks: limited to 2 at a time; retry in 1 s."));
  a.reset();
  EXPECT_TRUE(budget.Begin().ok());
}

TEST(WorkBudgetTest, ZeroMeansNoLimit) {
  WorkBudget budget("checks", WorkBudgetOptions{0, 1, {}});
  budget.Charge(1'000'000'000);
  std::optional<StatusOr<WorkBudget::Ticket>> a(budget.Begin());
  ASSERT_TRUE(a->ok());
  EXPECT_TRUE(budget.Begin().ok());  // neither CPU nor concurrency limited
}

// Many threads at once: the CPU they are admitted to spend stays within
// the budget plus one piece per concurrent slot.
TEST(WorkBudgetTest, ConcurrentCallersStayWithinTheBudget) {
  FakeTime t;  // time stands still: nothing refills
  WorkBudget budget("checks", t.Options(100, 2));
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      while (true) {
        auto ticket = budget.Begin();
        if (ticket.ok()) {
          ++admitted;
          Spin(20'000);
        } else if (ticket.status().message().find("at a time") !=
                   std::string::npos) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        } else {
          return;  // the CPU budget is spent, and time stands still
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  // 100 ms budget, >= 20 ms pieces, 2 at a time: a piece starts only while
  // the budget is positive (at most 4 finished), so 5 or 6 are admitted.
  EXPECT_GE(admitted.load(), 5);
  EXPECT_LE(admitted.load(), 6);
  EXPECT_LE(budget.available_us(), 0);
}

}  // namespace
}  // namespace dpuaudit::verifier
