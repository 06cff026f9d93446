// Group commit (verifier/store/group_commit.h) on a real SQLite file:
// batches form while a transaction runs, each op is undone alone, a lost
// transaction fails the whole batch, nothing unacknowledged is durable.
#include "verifier/store/group_commit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing/temp_dir.h"
#include "verifier/store/sqlite.h"

namespace dpuaudit::verifier::sql {
namespace {

using ::dpuaudit::testing::TempDir;

constexpr const char* kInsert = "INSERT INTO t (k) VALUES (?1)";

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = sqlite::Connection::Open(dir_.File("g.db"), 1000);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_TRUE(
        (*c)->ExecScript("CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL) STRICT",
                         "creating t")
            .ok());
    pool_ = Pool::Shared(*std::move(c));
    group_ = std::make_unique<GroupCommitter>(pool_.get());
  }

  GroupCommitter::Op Insert(const std::string& k) {
    return [k](Connection& c) { return c.Run(kInsert, "inserting", k); };
  }
  // Rows; with `k`, rows with that key. (The layer caches statements by
  // their static text.)
  int64_t Count(const char* k = nullptr) {
    auto lease = pool_->Acquire();
    auto lock = (*lease)->Lock();
    if (k == nullptr) {
      return (*lease)->QueryInt("SELECT count(*) FROM t", "counting").value();
    }
    return (*lease)
        ->QueryInt("SELECT count(*) FROM t WHERE k = ?1", "counting",
                   std::string(k))
        .value();
  }

  // Runs `first` on this thread's batch while `ops.size()` other callers
  // queue behind it; they then run as one batch. Returns their statuses.
  std::vector<Status> QueueBehind(const GroupCommitter::Op& first,
                                  const std::vector<GroupCommitter::Op>& ops) {
    std::atomic<bool> started{false}, release{false};
    std::vector<Status> out(ops.size());
    std::thread head([&] {
      Status s = group_->Run([&](Connection& c) {
        started = true;
        while (!release.load()) std::this_thread::yield();
        return first(c);
      });
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    while (!started.load()) std::this_thread::yield();  // its batch runs
    std::vector<std::thread> tail;
    for (size_t i = 0; i < ops.size(); ++i) {
      // One at a time, so the batch holds them in this order.
      tail.emplace_back([&, i] { out[i] = group_->Run(ops[i]); });
      while (group_->queued() != static_cast<int64_t>(i + 1)) {
        std::this_thread::yield();
      }
    }
    release = true;
    head.join();
    for (auto& t : tail) t.join();
    return out;
  }

  TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<GroupCommitter> group_;
};

TEST_F(GroupCommitTest, CallersQueuedBehindARunningBatchShareOneTransaction) {
  std::vector<GroupCommitter::Op> ops;
  for (int i = 0; i < 10; ++i) ops.push_back(Insert("k" + std::to_string(i)));
  std::vector<Status> got = QueueBehind(Insert("head"), ops);
  for (const Status& s : got) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Count(), 11);
  GroupCommitter::Stats st = group_->stats();
  EXPECT_EQ(st.batches, 2);  // the head's, then the ten together
  EXPECT_EQ(st.ops, 11);
  EXPECT_EQ(st.max_batch, 10);
}

TEST_F(GroupCommitTest, AFailingOpIsUndoneAloneAndGetsItsOwnError) {
  // The third op inserts two rows, the second of which is a duplicate: its
  // first row must be undone too; the ops around it commit.
  std::vector<GroupCommitter::Op> ops = {
      Insert("a"), Insert("b"),
      [](Connection& c) -> Status {
        DPA_RETURN_IF_ERROR(c.Run(kInsert, "inserting", std::string("c")));
        return c.Run(kInsert, "inserting", std::string("a"));
      },
      Insert("d")};
  std::vector<Status> got = QueueBehind(Insert("head"), ops);
  EXPECT_TRUE(got[0].ok());
  EXPECT_TRUE(got[1].ok());
  EXPECT_EQ(got[2].code(), StatusCode::kAlreadyExists) << got[2].ToString();
  EXPECT_TRUE(got[3].ok());
  EXPECT_EQ(Count(), 4);  // head, a, b, d
  EXPECT_EQ(Count("c"), 0);
}

TEST_F(GroupCommitTest, TheSecondOfTwoWritesOfOneKeyInABatchLoses) {
  // A single-use value (a nonce) spent twice in one batch: once only.
  std::vector<Status> got =
      QueueBehind(Insert("head"), {Insert("nonce"), Insert("nonce")});
  EXPECT_TRUE(got[0].ok());
  EXPECT_EQ(got[1].code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Count("nonce"), 1);
}

TEST_F(GroupCommitTest, ALostTransactionFailsTheWholeBatchAndKeepsNothing) {
  // The second op ends the shared transaction behind the committer's back
  // (as SQLite does on a full disk), then fails: the op before it was
  // rolled back with it and must not be told it is durable.
  std::vector<GroupCommitter::Op> ops = {
      Insert("a"),
      [](Connection& c) -> Status {
        EXPECT_TRUE(c.ExecScript("ROLLBACK", "rolling back").ok());
        return UnavailableError("sqlite: disk full.");
      },
      Insert("c")};
  std::vector<Status> got = QueueBehind(Insert("head"), ops);
  EXPECT_EQ(got[1].ToString(), UnavailableError("sqlite: disk full.").ToString());
  for (int i : {0, 2}) {
    EXPECT_EQ(got[i].code(), StatusCode::kUnavailable) << got[i].ToString();
    EXPECT_NE(got[i].message().find("shared write transaction was lost"),
              std::string::npos)
        << got[i].ToString();
  }
  EXPECT_EQ(Count(), 1);  // the head's batch only
  // The committer goes on: the next caller commits.
  EXPECT_TRUE(group_->Run(Insert("after")).ok());
  EXPECT_EQ(Count(), 2);
}

TEST_F(GroupCommitTest, ABatchOfOneIsAPlainTransaction) {
  EXPECT_TRUE(group_->Run(Insert("x")).ok());
  Status dup = group_->Run(Insert("x"));
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Count(), 1);
  EXPECT_EQ(group_->stats().batches, 2);
}

TEST_F(GroupCommitTest, ManyConcurrentWritersAllCommitExactlyOnce) {
  constexpr int kThreads = 8, kEach = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!group_->Run(Insert(std::to_string(t) + "-" + std::to_string(i)))
                 .ok()) {
          failed++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(Count(), kThreads * kEach);
  GroupCommitter::Stats st = group_->stats();
  EXPECT_EQ(st.ops, kThreads * kEach);
  EXPECT_LE(st.batches, st.ops);
  EXPECT_LE(st.max_batch, kThreads);  // each thread has one op at a time
}

}  // namespace
}  // namespace dpuaudit::verifier::sql
