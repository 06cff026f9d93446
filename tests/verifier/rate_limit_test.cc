// RateLimiter: per-node token buckets over a FakeClock.
#include "verifier/rate_limit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;

TEST(RateLimiterTest, BurstThenRefillsContinuously) {
  FakeClock clock(1'700'000'000);
  RateLimiter limit("challenges", 6, clock);  // one token every 10 s
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(limit.Take("dpu-1").ok()) << i;
  Status s = limit.Take("dpu-1");
  EXPECT_EQ(s.code(), StatusCode::kRateLimited);
  EXPECT_THAT(s.message(), HasSubstr("challenges for node \"dpu-1\" are limited to 6 per minute"));
  EXPECT_THAT(s.message(), HasSubstr("retry in 10 s."));
  clock.Advance(9);
  EXPECT_EQ(limit.Take("dpu-1").code(), StatusCode::kRateLimited);
  EXPECT_THAT(limit.Take("dpu-1").message(), HasSubstr("retry in 1 s."));
  clock.Advance(1);
  EXPECT_TRUE(limit.Take("dpu-1").ok());
  EXPECT_EQ(limit.Take("dpu-1").code(), StatusCode::kRateLimited);
  // A long pause refills to the burst size, not beyond.
  clock.Advance(3600);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(limit.Take("dpu-1").ok()) << i;
  EXPECT_EQ(limit.Take("dpu-1").code(), StatusCode::kRateLimited);
}

TEST(RateLimiterTest, NodesHaveSeparateBudgets) {
  FakeClock clock(1'700'000'000);
  RateLimiter limit("reports", 2, clock);
  ASSERT_TRUE(limit.Take("a").ok());
  ASSERT_TRUE(limit.Take("a").ok());
  EXPECT_EQ(limit.Take("a").code(), StatusCode::kRateLimited);
  EXPECT_TRUE(limit.Take("b").ok());
  EXPECT_TRUE(limit.Take("b").ok());
  EXPECT_EQ(limit.Take("b").code(), StatusCode::kRateLimited);
}

TEST(RateLimiterTest, ZeroMeansNoLimit) {
  FakeClock clock(1'700'000'000);
  RateLimiter limit("reports", 0, clock);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(limit.Take("a").ok());
}

TEST(RateLimiterTest, BoundedKeysDropIdleBucketsAndRefuseWhenAllActive) {
  FakeClock clock(1'700'000'000);
  RateLimiter limit("challenges", 2, clock, /*max_keys=*/3);
  ASSERT_TRUE(limit.Take("a").ok());
  ASSERT_TRUE(limit.Take("b").ok());
  ASSERT_TRUE(limit.Take("c").ok());
  // All three are active (not refilled): a fourth node is refused, fail closed.
  Status s = limit.Take("d");
  EXPECT_EQ(s.code(), StatusCode::kRateLimited);
  EXPECT_THAT(s.message(), HasSubstr("3 nodes are active"));
  // Once they refill they are idle and dropped; the spent state of "a" is
  // forgotten only because it had refilled anyway.
  clock.Advance(60);
  EXPECT_TRUE(limit.Take("d").ok());
  EXPECT_TRUE(limit.Take("a").ok());
}

TEST(RateLimiterTest, ConcurrentTakesNeverExceedTheBudget) {
  FakeClock clock(1'700'000'000);
  RateLimiter limit("reports", 100, clock);
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (limit.Take("n").ok()) ++granted;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), 100);
}

}  // namespace
}  // namespace dpuaudit::verifier
