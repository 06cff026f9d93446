#include "verifier/store/group_commit.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace dpuaudit::verifier::sql {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MicrosSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t)
      .count();
}

}  // namespace

struct GroupCommitter::Pending {
  const Op* op = nullptr;
  Status status;
  bool done = false;
  Clock::time_point queued_at;
};

Status GroupCommitter::Run(const Op& op) {
  Pending self;
  self.op = &op;
  self.queued_at = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&self);
  while (!self.done) {
    if (running_) {
      cv_.wait(lock);
      continue;
    }
    // Nobody is running a batch: this caller runs everything queued (its
    // own op among them unless more than max_batch were queued before it).
    running_ = true;
    std::vector<Pending*> batch;
    int n = std::min<int>(max_batch_, static_cast<int>(queue_.size()));
    batch.assign(queue_.begin(), queue_.begin() + n);
    queue_.erase(queue_.begin(), queue_.begin() + n);
    const Clock::time_point began = Clock::now();
    for (Pending* p : batch) {
      int64_t w = std::chrono::duration_cast<std::chrono::microseconds>(
                      began - p->queued_at)
                      .count();
      stats_.wait_us_total += w;
      stats_.wait_us_max = std::max(stats_.wait_us_max, w);
    }
    lock.unlock();
    RunBatch(batch.data(), n);
    const int64_t took = MicrosSince(began);
    lock.lock();
    stats_.batches++;
    stats_.ops += n;
    stats_.max_batch = std::max<int64_t>(stats_.max_batch, n);
    stats_.commit_us_total += took;
    for (Pending* p : batch) p->done = true;
    running_ = false;
    cv_.notify_all();
  }
  return self.status;
}

void GroupCommitter::RunBatch(Pending** batch, int n) {
  auto fail_all = [&](const Status& s) {
    for (int i = 0; i < n; ++i) {
      if (batch[i]->status.ok()) batch[i]->status = s;
    }
  };
  StatusOr<Lease> lease = pool_->Acquire();
  if (!lease.ok()) return fail_all(lease.status());
  Connection& conn = **lease;
  StatusOr<Transaction> txn = conn.Begin();
  if (!txn.ok()) return fail_all(txn.status());
  if (n == 1) {
    // One op: one plain transaction, as without group commit.
    Status s = (*batch[0]->op)(conn);
    if (s.ok()) s = txn->Commit();
    batch[0]->status = std::move(s);
    return;  // an uncommitted txn rolls back as it goes away
  }
  int succeeded = 0;
  for (int i = 0; i < n; ++i) {
    Pending* p = batch[i];
    if (Status s = conn.ExecScript("SAVEPOINT dpa_group", "opening savepoint");
        !s.ok()) {
      return fail_all(s);
    }
    p->status = (*p->op)(conn);
    if (p->status.ok()) {
      ++succeeded;
      if (Status s =
              conn.ExecScript("RELEASE SAVEPOINT dpa_group", "releasing savepoint");
          !s.ok()) {
        return fail_all(s);
      }
      continue;
    }
    // This op alone is undone. If the savepoint is gone the transaction is
    // (SQLite rolls back on a full disk or I/O error): the whole batch
    // fails, the ops before this one included.
    Status undo = conn.ExecScript("ROLLBACK TO SAVEPOINT dpa_group",
                                  "rolling back to savepoint");
    if (undo.ok()) {
      undo = conn.ExecScript("RELEASE SAVEPOINT dpa_group", "releasing savepoint");
    }
    if (!undo.ok()) {
      Status batch_error(p->status.code(),
                         "the shared write transaction was lost (" +
                             p->status.message() + ")");
      for (int j = 0; j < i; ++j) batch[j]->status = batch_error;
      for (int j = i + 1; j < n; ++j) batch[j]->status = batch_error;
      return;
    }
  }
  if (succeeded == 0) return;  // nothing to commit: ~Transaction rolls back
  if (Status s = txn->Commit(); !s.ok()) fail_all(s);
}

GroupCommitter::Stats GroupCommitter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

int64_t GroupCommitter::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

}  // namespace dpuaudit::verifier::sql
