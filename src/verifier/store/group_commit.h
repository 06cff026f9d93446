// Group commit: concurrent writers share one write transaction, so one
// fsync (SQLite) or one WAL flush (PostgreSQL) makes a whole batch durable
// (docs/architecture.md#storage, issue 17).
//
// Guarantees:
//  - Run(op) returns only after the transaction that ran `op` committed (OK)
//    or rolled back (the error): a caller is answered only when its write is
//    on stable storage, exactly as with one transaction per call.
//  - Each op of a batch runs under its own savepoint, in arrival order: an op
//    that fails is rolled back alone and gets its own error, the others of
//    its batch still commit. Every op sees the writes of the ops before it,
//    so read-check-write rules (single-use nonces, quotas, the audit chain's
//    head) hold as if the ops had run one transaction each, in that order.
//  - A batch of one op runs exactly as a single transaction (no savepoint).
//  - If the batch's transaction cannot go on (its savepoint cannot be rolled
//    back, e.g. SQLite rolled the whole transaction back on a full disk) or
//    its COMMIT fails, every op of the batch that had not already failed gets
//    that error: nothing of the batch is durable and no caller is told it is.
//  - No leader thread: the first waiting caller runs the batch of everything
//    queued (at most max_batch ops) while later callers queue for the next.
//    The extra wait a caller can see is bounded by one batch's run time; it
//    is measured (Stats) and no timer adds latency when there is no
//    contention.
// Does not: retry a failed batch; reorder ops; batch reads.
#ifndef DPUAUDIT_VERIFIER_STORE_GROUP_COMMIT_H_
#define DPUAUDIT_VERIFIER_STORE_GROUP_COMMIT_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "common/status.h"
#include "verifier/store/sql.h"

namespace dpuaudit::verifier::sql {

class GroupCommitter {
 public:
  // The work one caller does inside the shared transaction, on the
  // transaction's connection (its mutex held).
  using Op = std::function<Status(Connection&)>;

  struct Stats {
    int64_t batches = 0;     // transactions committed or rolled back
    int64_t ops = 0;         // ops run
    int64_t max_batch = 0;   // largest batch
    int64_t wait_us_total = 0;  // queueing before an op's batch began
    int64_t wait_us_max = 0;
    int64_t commit_us_total = 0;  // batch run time, BEGIN to COMMIT
  };

  explicit GroupCommitter(Pool* pool, int max_batch = 64)
      : pool_(pool), max_batch_(max_batch < 1 ? 1 : max_batch) {}
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Runs `op` in a write transaction, possibly shared with concurrent
  // callers' ops; returns once that transaction has ended (see above).
  Status Run(const Op& op);

  Stats stats() const;
  // Ops waiting for a batch to take them (tests use it to build a batch).
  int64_t queued() const;

 private:
  struct Pending;
  void RunBatch(Pending** batch, int n);

  Pool* pool_;
  const int max_batch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending*> queue_;
  bool running_ = false;
  Stats stats_;
};

}  // namespace dpuaudit::verifier::sql

#endif  // DPUAUDIT_VERIFIER_STORE_GROUP_COMMIT_H_
