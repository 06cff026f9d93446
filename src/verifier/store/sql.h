// The backend-neutral SQL layer under the store (SqlStore): a connection
// with typed, borrowed statements, RAII write transactions, and a bounded
// pool of connections. SQLite (verifier/store/sqlite.h) and PostgreSQL
// (verifier/store/pg.h) implement it; the store's logic is written once
// against this API. Knows nothing of the store's tables or rules.
//
// Guarantees:
//  - SQL text is a literal written with ?1, ?2, ... placeholders; values are
//    only ever bound as parameters (each backend maps the placeholders to its
//    own at prepare time). Where the dialects differ the caller chooses the
//    text by Connection::dialect().
//  - No backend handle escapes a Connection or Stmt.
//  - Every backend error becomes a Status in one place per backend
//    (sqlite::ErrorStatus, pg::ErrorStatus), as "<backend>: <what>:
//    <server message>.", with the same code mapping: busy/locked/connection
//    lost/serialisation failure/disk full/out of memory UNAVAILABLE, primary
//    key or unique violation ALREADY_EXISTS, any other constraint
//    FAILED_PRECONDITION, corruption DATA_LOSS, too big RESOURCE_EXHAUSTED,
//    permission PERMISSION_DENIED, anything else INTERNAL.
//  - A Transaction holds the connection's mutex for its life and is the
//    backend's exclusive write transaction (SQLite BEGIN IMMEDIATE;
//    PostgreSQL BEGIN plus one transaction-scoped advisory lock, so writers
//    on every connection and replica run one at a time); it rolls back when
//    it goes away uncommitted.
//  - Pool::Acquire hands out a connection for the caller's exclusive use
//    (SQLite: the one shared connection, whose mutex then serialises
//    callers) and waits at most the pool's timeout before UNAVAILABLE; a
//    connection that reports itself broken is dropped when its Lease ends
//    and a new one is opened on demand.
// Does not: retry a failed statement or transaction; run several statements
// from one SQL text except in ExecScript; share a Connection between
// threads without the mutex (Lock / Transaction).
#ifndef DPUAUDIT_VERIFIER_STORE_SQL_H_
#define DPUAUDIT_VERIFIER_STORE_SQL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dpuaudit::verifier::sql {

enum class Dialect { kSqlite, kPostgres };

// Which constraint a failed step broke.
enum class Constraint { kNone, kPrimaryKey, kUnique, kForeignKey, kOther };

// A blob parameter (text is bound as text, this as a blob / bytea).
struct Blob {
  std::string_view bytes;
};

// A blob column to read into (Stmt::Read).
struct BlobInto {
  std::string& bytes;
};

// One backend's prepared statement. Binding errors are kept and reported
// by Step; Reset clears the bindings and any pending rows.
class StmtImpl {
 public:
  virtual ~StmtImpl() = default;
  virtual void BindText(int i, std::string_view v) = 0;
  virtual void BindBlob(int i, std::string_view v) = 0;
  virtual void BindInt(int i, int64_t v) = 0;
  virtual void BindNull(int i) = 0;
  virtual StatusOr<bool> Step(std::string_view what) = 0;
  virtual std::string ColText(int col) const = 0;
  virtual std::string ColBlob(int col) const = 0;
  virtual int64_t ColInt(int col) const = 0;
  virtual bool ColIsNull(int col) const = 0;
  virtual void Reset() = 0;
};

class Connection;

// A borrowed, cached prepared statement. The statement is reset and its
// bindings cleared when this object goes away, so the cache can hand it out
// again. Movable; at most one Stmt per SQL text may be alive at once.
class Stmt {
 public:
  Stmt(Connection* conn, StmtImpl* impl) : conn_(conn), impl_(impl) {}
  ~Stmt() {
    if (impl_ != nullptr) impl_->Reset();
  }
  Stmt(Stmt&& other) noexcept
      : conn_(other.conn_), impl_(std::exchange(other.impl_, nullptr)) {}
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Text(int i, std::string_view v) {
    impl_->BindText(i, v);
    return *this;
  }
  Stmt& BlobAt(int i, std::string_view v) {
    impl_->BindBlob(i, v);
    return *this;
  }
  Stmt& Int(int i, int64_t v) {
    impl_->BindInt(i, v);
    return *this;
  }
  Stmt& OptionalInt(int i, const std::optional<int64_t>& v) {
    return v ? Int(i, *v) : Null(i);
  }
  // An integer NULL.
  Stmt& Null(int i) {
    impl_->BindNull(i);
    return *this;
  }

  // Binds `args` to parameters ?1, ?2, ... in order: string-like as text,
  // Blob as a blob, integers as 64-bit integers, std::optional<int64_t> as
  // an integer or NULL.
  template <typename... Args>
  Stmt& Bind(const Args&... args) {
    if constexpr (sizeof...(Args) > 0) {
      int i = 0;
      (BindOne(++i, args), ...);
    }
    return *this;
  }

  // true: a row is ready; false: done. A failed step is recorded on the
  // connection (Connection::LastConstraint).
  StatusOr<bool> Step(std::string_view what) { return impl_->Step(what); }
  // Runs a statement that returns no rows (a row is INTERNAL).
  Status Run(std::string_view what);

  std::string ColText(int col) const { return impl_->ColText(col); }
  std::string ColBlob(int col) const { return impl_->ColBlob(col); }
  int64_t ColInt(int col) const { return impl_->ColInt(col); }
  bool ColIsNull(int col) const { return impl_->ColIsNull(col); }
  std::optional<int64_t> ColOptionalInt(int col) const {
    if (ColIsNull(col)) return std::nullopt;
    return ColInt(col);
  }
  // Reads columns 0, 1, ... into `fields` in order, by type: std::string
  // as text, BlobInto as a blob, int64_t, std::optional<int64_t> (NULL:
  // nullopt), bool (non-zero).
  template <typename... Fields>
  void Read(Fields&&... fields) const {
    int i = 0;
    (ReadOne(i++, fields), ...);
  }

 private:
  void ReadOne(int col, std::string& v) const { v = ColText(col); }
  void ReadOne(int col, int64_t& v) const { v = ColInt(col); }
  void ReadOne(int col, bool& v) const { v = ColInt(col) != 0; }
  void ReadOne(int col, std::optional<int64_t>& v) const {
    v = ColOptionalInt(col);
  }
  void ReadOne(int col, BlobInto v) const { v.bytes = ColBlob(col); }
  void BindOne(int i, std::string_view v) { Text(i, v); }
  void BindOne(int i, const Blob& v) { BlobAt(i, v.bytes); }
  void BindOne(int i, int64_t v) { Int(i, v); }
  void BindOne(int i, const std::optional<int64_t>& v) { OptionalInt(i, v); }

  Connection* conn_;
  StmtImpl* impl_;
};

namespace internal {
// What a row converter returns, without its StatusOr.
template <typename F>
struct RowTypeOf {
  using R = std::decay_t<std::invoke_result_t<F&, const Stmt&>>;
  template <typename X>
  struct Unwrap {
    using type = X;
  };
  template <typename X>
  struct Unwrap<StatusOr<X>> {
    using type = X;
  };
  using type = typename Unwrap<R>::type;
};
template <typename F>
using RowType = typename RowTypeOf<F>::type;
template <typename X>
StatusOr<X> AsStatusOr(StatusOr<X> v) {
  return v;
}
template <typename X>
StatusOr<X> AsStatusOr(X v) {
  return StatusOr<X>(std::move(v));
}
inline int64_t IntColumn(const Stmt& s) { return s.ColInt(0); }
}  // namespace internal

class Transaction;

// One connection, its statement cache and the mutex that guards both.
// Every call needs the mutex held (Lock, or a Transaction).
class Connection {
 public:
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  virtual Dialect dialect() const = 0;
  // "sqlite" | "postgres": the prefix of this backend's messages.
  virtual std::string_view Name() const = 0;

  [[nodiscard]] std::unique_lock<std::mutex> Lock() {
    return std::unique_lock<std::mutex>(mu_);
  }
  // Takes the mutex and begins an exclusive write transaction.
  StatusOr<Transaction> Begin();

  // The cached statement for `sql` (prepared once per connection).
  StatusOr<Stmt> Prepare(const char* sql);

  // Prepare, bind `args`, run a statement that returns no rows.
  template <typename... Args>
  Status Run(const char* sql, std::string_view what, const Args&... args) {
    DPA_ASSIGN_OR_RETURN(Stmt stmt, Prepare(sql));
    return stmt.Bind(args...).Run(what);
  }
  // Run, then the number of rows it changed.
  template <typename... Args>
  StatusOr<int64_t> RunChanges(const char* sql, std::string_view what,
                               const Args&... args) {
    DPA_RETURN_IF_ERROR(Run(sql, what, args...));
    return Changes();
  }
  // Run an INSERT, then the id it assigned (the rowid / identity column).
  template <typename... Args>
  StatusOr<int64_t> Insert(const char* sql, std::string_view what,
                           const Args&... args) {
    DPA_RETURN_IF_ERROR(Run(sql, what, args...));
    return LastInsertId(what);
  }
  // The first column of the first row as an integer; no row is INTERNAL
  // "<backend>: <what> returned no row.".
  template <typename... Args>
  StatusOr<int64_t> QueryInt(const char* sql, std::string_view what,
                             const Args&... args) {
    DPA_ASSIGN_OR_RETURN(std::optional<int64_t> v,
                         QueryOne(sql, what, internal::IntColumn, args...));
    if (!v) {
      return InternalError(std::string(Name()) + ": " + std::string(what) +
                           " returned no row.");
    }
    return *v;
  }
  // The first row converted by `from_row(const Stmt&)` (returning T or
  // StatusOr<T>), or nullopt when there is none.
  template <typename F, typename... Args>
  auto QueryOne(const char* sql, std::string_view what, F&& from_row,
                const Args&... args)
      -> StatusOr<std::optional<internal::RowType<F>>> {
    using T = internal::RowType<F>;
    DPA_ASSIGN_OR_RETURN(Stmt stmt, Prepare(sql));
    stmt.Bind(args...);
    DPA_ASSIGN_OR_RETURN(bool row, stmt.Step(what));
    if (!row) return std::optional<T>();
    DPA_ASSIGN_OR_RETURN(T value, internal::AsStatusOr(from_row(stmt)));
    return std::optional<T>(std::move(value));
  }
  // Every row, converted by `from_row`, in the order the query returns.
  template <typename F, typename... Args>
  auto QueryAll(const char* sql, std::string_view what, F&& from_row,
                const Args&... args)
      -> StatusOr<std::vector<internal::RowType<F>>> {
    using T = internal::RowType<F>;
    DPA_ASSIGN_OR_RETURN(Stmt stmt, Prepare(sql));
    stmt.Bind(args...);
    std::vector<T> out;
    while (true) {
      DPA_ASSIGN_OR_RETURN(bool row, stmt.Step(what));
      if (!row) break;
      DPA_ASSIGN_OR_RETURN(T value, internal::AsStatusOr(from_row(stmt)));
      out.push_back(std::move(value));
    }
    return out;
  }

  // Runs static SQL text of several statements (DDL), each in turn.
  virtual Status ExecScript(const char* sql, std::string_view what) = 0;

  // Rows changed by the last statement.
  virtual int64_t Changes() const = 0;
  // The id the last INSERT on this connection assigned.
  virtual StatusOr<int64_t> LastInsertId(std::string_view what) = 0;
  // The constraint the last failed step on this connection broke (kNone
  // when the last step did not fail on one).
  virtual Constraint LastConstraint() const = 0;
  // The connection is unusable (the server went away): a pool drops it.
  virtual bool Broken() const { return false; }

 protected:
  Connection() = default;
  virtual StatusOr<StmtImpl*> PrepareImpl(const char* sql) = 0;
  // Begins / ends the exclusive write transaction (mutex held).
  virtual Status BeginWrite() = 0;
  virtual Status CommitWrite() = 0;
  virtual void RollbackWrite() = 0;

 private:
  friend class Transaction;
  std::mutex mu_;
};

// A write transaction under the connection's mutex; ROLLBACK when it goes
// away uncommitted. Movable, not copyable.
class Transaction {
 public:
  // Begins on `conn`, taking its mutex for the transaction's life.
  static StatusOr<Transaction> Begin(Connection& conn);
  ~Transaction();
  Transaction(Transaction&& other) noexcept
      : lock_(std::move(other.lock_)),
        conn_(other.conn_),
        done_(std::exchange(other.done_, true)) {}
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // COMMIT; on success the mutex is released (the Transaction is done and
  // the connection may be used, or another transaction begun, at once). On
  // failure the transaction still rolls back when it goes away.
  Status Commit();

 private:
  Transaction(std::unique_lock<std::mutex> lock, Connection& conn)
      : lock_(std::move(lock)), conn_(&conn) {}
  // Destroyed after ~Transaction's ROLLBACK, so the rollback runs locked.
  std::unique_lock<std::mutex> lock_;
  Connection* conn_;
  bool done_ = false;
};

class Pool;

// A connection borrowed from a Pool; returned (or, when broken, dropped)
// when the Lease goes away. Movable.
class Lease {
 public:
  Lease(Pool* pool, Connection* conn) : pool_(pool), conn_(conn) {}
  ~Lease();
  Lease(Lease&& other) noexcept
      : pool_(other.pool_), conn_(std::exchange(other.conn_, nullptr)) {}
  Lease& operator=(Lease&&) = delete;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  Connection* operator->() const { return conn_; }
  Connection& operator*() const { return *conn_; }

 private:
  Pool* pool_;
  Connection* conn_;
};

// Connections for a store. Shared: one connection every Acquire returns
// (its own mutex serialises the callers; SQLite). Bounded: at most `size`
// connections, each lent to one caller at a time, opened on demand by
// `open`; Acquire waits at most `timeout` for one to come free, then
// UNAVAILABLE.
class Pool {
 public:
  using Opener = std::function<StatusOr<std::unique_ptr<Connection>>()>;

  static std::unique_ptr<Pool> Shared(std::unique_ptr<Connection> conn);
  // `first` (may be null) is the first idle connection.
  static std::unique_ptr<Pool> Bounded(std::unique_ptr<Connection> first,
                                       Opener open, int size,
                                       std::chrono::milliseconds timeout);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  StatusOr<Lease> Acquire();
  Dialect dialect() const { return dialect_; }
  int size() const { return size_; }

 private:
  friend class Lease;
  Pool() = default;
  void Release(Connection* conn);

  bool shared_ = false;
  Dialect dialect_ = Dialect::kSqlite;
  int size_ = 1;
  std::chrono::milliseconds timeout_{0};
  Opener open_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::vector<std::unique_ptr<Connection>> lent_;
  int opening_ = 0;  // connections being opened outside mu_
};

}  // namespace dpuaudit::verifier::sql

#endif  // DPUAUDIT_VERIFIER_STORE_SQL_H_
