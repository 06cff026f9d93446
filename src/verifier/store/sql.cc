#include "verifier/store/sql.h"

#include <algorithm>
#include <string>
#include <utility>

namespace dpuaudit::verifier::sql {

Status Stmt::Run(std::string_view what) {
  DPA_ASSIGN_OR_RETURN(bool row, Step(what));
  if (row) {
    return InternalError(std::string(conn_->Name()) + ": " +
                         std::string(what) + ": unexpected row.");
  }
  return OkStatus();
}

StatusOr<Stmt> Connection::Prepare(const char* sql) {
  DPA_ASSIGN_OR_RETURN(StmtImpl * impl, PrepareImpl(sql));
  return Stmt(this, impl);
}

StatusOr<Transaction> Connection::Begin() { return Transaction::Begin(*this); }

// --- Transaction -------------------------------------------------------------

StatusOr<Transaction> Transaction::Begin(Connection& conn) {
  std::unique_lock<std::mutex> lock = conn.Lock();
  DPA_RETURN_IF_ERROR(conn.BeginWrite());
  return Transaction(std::move(lock), conn);
}

Transaction::~Transaction() {
  if (!done_) conn_->RollbackWrite();
}

Status Transaction::Commit() {
  DPA_RETURN_IF_ERROR(conn_->CommitWrite());
  done_ = true;
  lock_.unlock();  // the transaction is over: the connection is free again
  return OkStatus();
}

// --- Pool --------------------------------------------------------------------

Lease::~Lease() {
  if (conn_ != nullptr && pool_ != nullptr) pool_->Release(conn_);
}

std::unique_ptr<Pool> Pool::Shared(std::unique_ptr<Connection> conn) {
  std::unique_ptr<Pool> p(new Pool());
  p->shared_ = true;
  p->dialect_ = conn->dialect();
  p->idle_.push_back(std::move(conn));
  return p;
}

std::unique_ptr<Pool> Pool::Bounded(std::unique_ptr<Connection> first,
                                    Opener open, int size,
                                    std::chrono::milliseconds timeout) {
  std::unique_ptr<Pool> p(new Pool());
  p->dialect_ = first->dialect();
  p->size_ = std::max(size, 1);
  p->timeout_ = timeout;
  p->open_ = std::move(open);
  p->idle_.push_back(std::move(first));
  return p;
}

Pool::~Pool() = default;

StatusOr<Lease> Pool::Acquire() {
  if (shared_) return Lease(this, idle_.front().get());
  std::unique_lock<std::mutex> lock(mu_);
  auto can_go = [&] {
    return !idle_.empty() ||
           static_cast<int>(lent_.size()) + opening_ < size_;
  };
  if (!cv_.wait_for(lock, timeout_, can_go)) {
    return UnavailableError(
        "store: all " + std::to_string(size_) +
        " database connections are busy (waited " +
        std::to_string(timeout_.count()) + " ms); raise --db-pool.");
  }
  if (!idle_.empty()) {
    lent_.push_back(std::move(idle_.back()));
    idle_.pop_back();
    return Lease(this, lent_.back().get());
  }
  ++opening_;
  lock.unlock();
  StatusOr<std::unique_ptr<Connection>> opened = open_();
  lock.lock();
  --opening_;
  if (!opened.ok()) {
    cv_.notify_one();
    return opened.status();
  }
  lent_.push_back(*std::move(opened));
  return Lease(this, lent_.back().get());
}

void Pool::Release(Connection* conn) {
  if (shared_) return;
  std::unique_ptr<Connection> dropped;  // closed outside mu_
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(lent_.begin(), lent_.end(),
                           [&](const auto& c) { return c.get() == conn; });
    if (it == lent_.end()) return;
    std::unique_ptr<Connection> c = std::move(*it);
    lent_.erase(it);
    if (c->Broken()) {
      dropped = std::move(c);
    } else {
      idle_.push_back(std::move(c));
    }
  }
  cv_.notify_one();
}

}  // namespace dpuaudit::verifier::sql
