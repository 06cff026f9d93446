// The pure parts of dpuaudit-loadgen: nearest-rank percentiles, the
// open-loop schedule, error counting and the procfs parsers (on real
// /proc text of this machine as well as on fixed lines).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cstdint>
#include <string>
#include <vector>

#include "apps/loadgen/pacing.h"
#include "apps/loadgen/proc_cpu.h"
#include "apps/loadgen/stats.h"
#include "common/files.h"

namespace dpuaudit::apps::loadgen {
namespace {

TEST(LoadgenPercentileTest, NearestRankOnSmallSets) {
  std::vector<int64_t> one = {7};
  EXPECT_EQ(Percentile(one, 50), 7);
  EXPECT_EQ(Percentile(one, 99), 7);
  std::vector<int64_t> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(Percentile(ten, 0), 1);
  EXPECT_EQ(Percentile(ten, 10), 1);   // rank ceil(1.0) = 1
  EXPECT_EQ(Percentile(ten, 11), 2);   // rank ceil(1.1) = 2
  EXPECT_EQ(Percentile(ten, 50), 5);   // rank 5
  EXPECT_EQ(Percentile(ten, 95), 10);  // rank ceil(9.5) = 10
  EXPECT_EQ(Percentile(ten, 100), 10);
  std::vector<int64_t> none;
  EXPECT_EQ(Percentile(none, 50), 0);
}

TEST(LoadgenPercentileTest, HundredSamplesGiveExactRanks) {
  std::vector<int64_t> v;
  for (int i = 100; i >= 1; --i) v.push_back(i * 10);  // unsorted on purpose
  LatencySummary s = Summarize(v);
  EXPECT_EQ(s.count, 100);
  EXPECT_EQ(s.p50_us, 500);
  EXPECT_EQ(s.p95_us, 950);
  EXPECT_EQ(s.p99_us, 990);
  EXPECT_EQ(s.max_us, 1000);
  EXPECT_DOUBLE_EQ(s.mean_us, 505.0);
  std::vector<int64_t> empty;
  LatencySummary e = Summarize(empty);
  EXPECT_EQ(e.count, 0);
  EXPECT_EQ(e.p99_us, 0);
}

TEST(LoadgenPercentileTest, OneOutlierInAThousandShowsAtP99NineOnly) {
  std::vector<int64_t> v(1000, 5);
  v[123] = 900;
  LatencySummary s = Summarize(v);
  EXPECT_EQ(s.p99_us, 5);  // rank 990
  EXPECT_EQ(s.max_us, 900);
  EXPECT_EQ(Percentile(v, 99.9), 5);    // rank 999
  EXPECT_EQ(Percentile(v, 99.95), 900);  // rank 1000
}

TEST(LoadgenScheduleTest, NodesSpreadEvenlyThenEveryInterval) {
  const int64_t s = 30'000'000'000;  // 30 s
  Schedule sch(1000, s);
  EXPECT_DOUBLE_EQ(sch.TargetPerSecond(), 1000.0 / 30.0);
  EXPECT_EQ(sch.Node(0), 0);
  EXPECT_EQ(sch.DueNs(0), 0);
  EXPECT_EQ(sch.Node(1), 1);
  EXPECT_EQ(sch.DueNs(1), 30'000'000);  // 30 ms apart
  EXPECT_EQ(sch.Node(999), 999);
  EXPECT_EQ(sch.DueNs(999), 999 * 30'000'000LL);
  // The second round: node 0 again exactly one interval later.
  EXPECT_EQ(sch.Node(1000), 0);
  EXPECT_EQ(sch.DueNs(1000), s);
  EXPECT_EQ(sch.DueNs(1001), s + 30'000'000);
  // Monotonic, each node every interval.
  for (int64_t j = 1; j < 5000; ++j) {
    ASSERT_GE(sch.DueNs(j), sch.DueNs(j - 1)) << j;
    if (j >= 1000) ASSERT_EQ(sch.DueNs(j) - sch.DueNs(j - 1000), s) << j;
  }
}

TEST(LoadgenScheduleTest, DueCountInvertsDueNs) {
  for (auto [nodes, interval] : {std::pair<int64_t, int64_t>{1000, 30'000'000'000},
                                 {7, 1'000'000'000},
                                 {3, 10},  // rounding: 0, 3, 6 ns
                                 {100000, 30'000'000'000},
                                 {1, 5}}) {
    Schedule sch(nodes, interval);
    EXPECT_EQ(sch.DueCount(-1), 0);
    for (int64_t j = 0; j < 3 * nodes && j < 30000; j += 1 + j / 7) {
      const int64_t t = sch.DueNs(j);
      // j is due at t, so at least j + 1 are due; none after j is due before t.
      ASSERT_GE(sch.DueCount(t), j + 1) << nodes << " " << j;
      if (sch.DueNs(j + 1) > t) ASSERT_EQ(sch.DueCount(t), j + 1) << nodes << " " << j;
      if (t > 0 && (j == 0 || sch.DueNs(j - 1) < t)) {
        ASSERT_EQ(sch.DueCount(t - 1), j) << nodes << " " << j;
      }
    }
  }
  // 20 s of a 1,000-node, 30 s fleet: 666.67 due -> 667 (0 s through 19.98 s).
  Schedule sch(1000, 30'000'000'000);
  EXPECT_EQ(sch.DueCount(20'000'000'000 - 1), 667);
}

TEST(LoadgenErrorCountsTest, CountsByRequestAndKindKeepingTheFirstMessage) {
  ErrorCounts a, b;
  a.Add("challenge", "http 429", "first");
  a.Add("challenge", "http 429", "second");
  a.Add("report", "curl 7", "refused");
  b.Add("challenge", "http 429", "third");
  b.Add("report", "http 409", "nonce_replayed");
  a.Merge(b);
  EXPECT_EQ(a.Total(), 5);
  ASSERT_EQ(a.entries().size(), 3u);
  const auto& e = a.entries().at({"challenge", "http 429"});
  EXPECT_EQ(e.count, 3);
  EXPECT_EQ(e.message, "first");
  EXPECT_EQ(a.entries().at({"report", "http 409"}).message, "nonce_replayed");
}

TEST(LoadgenProcTest, StatFieldsAfterTheLastParenthesis) {
  // A command name with spaces and ')' must not shift the fields.
  const std::string line =
      "4242 (dpu (audit) x) S 1 4242 4242 0 -1 4194560 1803 0 0 0 "
      "1234 567 0 0 20 0 5 0 12345 1000000 500 18446744073709551615\n";
  auto t = ParseProcStatCpuTicks(line);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, 1234u + 567u);
  EXPECT_FALSE(ParseProcStatCpuTicks("4242 dpuaudit S 1 2 3").ok());
  EXPECT_FALSE(ParseProcStatCpuTicks("4242 (x) S 1 2").ok());
  EXPECT_FALSE(ParseProcStatCpuTicks("4242 (x) S 1 2 3 4 5 6 7 8 9 10 abc 5 6").ok());
}

TEST(LoadgenProcTest, StatusMemoryFields) {
  const std::string status =
      "Name:\tdpuaudit-verifi\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\n"
      "VmRSS:\t   46512 kB\nThreads:\t9\n";
  auto rss = ParseProcStatusKib(status, "VmRSS");
  ASSERT_TRUE(rss.ok()) << rss.status().message();
  EXPECT_EQ(*rss, 46512u);
  auto hwm = ParseProcStatusKib(status, "VmHWM");
  ASSERT_TRUE(hwm.ok());
  EXPECT_EQ(*hwm, 51200u);
  // "VmRSS" must not match a longer name, and a missing field is NOT_FOUND.
  EXPECT_EQ(ParseProcStatusKib("VmRSSX:\t1 kB\n", "VmRSS").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(ParseProcStatusKib("VmRSS:\t12 MB\n", "VmRSS").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseProcStatusKib("VmRSS:\tlots kB\n", "VmRSS").status().code(),
            StatusCode::kInvalidArgument);
  // This process: resident now, and a peak at least that.
  auto self = ReadProcessMemory(getpid());
  ASSERT_TRUE(self.ok()) << self.status().message();
  EXPECT_GT(self->rss_bytes, 0u);
  EXPECT_GE(self->peak_rss_bytes, self->rss_bytes);
}

TEST(LoadgenProcTest, SelfStatParsesAndGrowsWithWork) {
  auto before = ProcessCpuSeconds(getpid());
  ASSERT_TRUE(before.ok()) << before.status().message();
  volatile uint64_t x = 0;
  const double start = SelfCpuSeconds();
  while (SelfCpuSeconds() - start < 0.05) {
    for (int i = 0; i < 100000; ++i) x = x + static_cast<uint64_t>(i);
  }
  auto after = ProcessCpuSeconds(getpid());
  ASSERT_TRUE(after.ok());
  EXPECT_GT(*after, *before);  // 50 ms of CPU is at least a few ticks
  EXPECT_GE(UsableCpus(), 1);
}

TEST(LoadgenProcTest, ListeningInodesFromNetTcpText) {
  const std::string text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
      "       0 55501 1 0000000000000000 100 0 0 10 0\n"
      "   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000 "
      "       0 55502 1 0000000000000000 20 4 30 10 -1\n"
      "   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
      "       0 1234 1 0000000000000000 100 0 0 10 0\n";
  // 0x1F90 = 8080: only the LISTEN line, not the established one.
  EXPECT_EQ(ParseListeningInodes(text, 8080), std::vector<uint64_t>{55501});
  EXPECT_EQ(ParseListeningInodes(text, 22), std::vector<uint64_t>{1234});
  EXPECT_TRUE(ParseListeningInodes(text, 443).empty());
  EXPECT_TRUE(ParseListeningInodes("", 8080).empty());
}

TEST(LoadgenProcTest, FindsThisProcessByItsListeningPort) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  auto pid = FindListeningPid(port);
  ASSERT_TRUE(pid.ok()) << pid.status().message();
  EXPECT_EQ(*pid, getpid());
  close(fd);
  EXPECT_FALSE(FindListeningPid(port).ok());  // closed: nobody listens
}

}  // namespace
}  // namespace dpuaudit::apps::loadgen
