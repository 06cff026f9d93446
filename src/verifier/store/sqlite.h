// The generic SQLite layer under SqliteStore: one connection with its
// statement cache, borrowed prepared statements with typed binding and
// column access, RAII write transactions, and the mapping of SQLite result
// codes to Status. Knows nothing of the store's tables or rules.
//
// Guarantees:
//  - No raw sqlite3* or sqlite3_stmt* escapes a Connection or Stmt: the
//    connection is closed, and every cached statement finalized, when the
//    Connection goes away (statements first).
//  - Every SQLite error becomes a Status in one place (ErrorStatus), as
//    "sqlite: <what>: <SQLite's message>.": busy, locked, cannot open, I/O,
//    protocol, disk full and out of memory are UNAVAILABLE; a primary-key or
//    unique constraint ALREADY_EXISTS, any other constraint
//    FAILED_PRECONDITION; corruption or not a database DATA_LOSS; too big
//    RESOURCE_EXHAUSTED; permission, read-only and authorisation
//    PERMISSION_DENIED; anything else INTERNAL.
//  - Values are only ever bound as parameters; SQL text is a literal.
//  - A Transaction is BEGIN IMMEDIATE (the write lock up front, so a writer
//    on another connection waits for the busy timeout instead of failing
//    mid-way) and holds the connection's mutex; it rolls back when it goes
//    away uncommitted.
//  - Open creates the file 0600 before SQLite sees it and tightens an
//    existing database, -wal or -shm file to owner-only; then sets the busy
//    timeout, SQLITE_DBCONFIG_DEFENSIVE, an untrusted schema,
//    journal_mode=WAL (refused unless SQLite confirms it, e.g. for
//    ":memory:"), synchronous=FULL and foreign_keys=ON, each checked.
// Does not: retry on busy beyond the busy timeout; run several statements
// from one SQL text except in ExecScript; share a Connection between
// threads without the mutex (Lock / Transaction).
#ifndef DPUAUDIT_VERIFIER_STORE_SQLITE_H_
#define DPUAUDIT_VERIFIER_STORE_SQLITE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dpuaudit::verifier::sqlite {

// The one place SQLite result codes become a Status (see the header
// comment). `db` may be null (then SQLite's text for `rc` is used).
Status ErrorStatus(int rc, std::string_view what, sqlite3* db);

// Which constraint a failed step broke (from its extended result code).
enum class Constraint { kNone, kPrimaryKey, kUnique, kForeignKey, kOther };

// A blob parameter (text is bound as TEXT, this as BLOB).
struct Blob {
  std::string_view bytes;
};

// A blob column to read into (Stmt::Read).
struct BlobInto {
  std::string& bytes;
};

class Connection;

// A borrowed, cached prepared statement. Binding errors are kept and
// reported by Step. The statement is reset and its bindings cleared when
// this object goes away, so the cache can hand it out again. Movable; at
// most one Stmt per SQL text may be alive at once.
class Stmt {
 public:
  Stmt(Connection* conn, sqlite3_stmt* stmt) : conn_(conn), stmt_(stmt) {}
  ~Stmt();
  Stmt(Stmt&& other) noexcept
      : conn_(other.conn_),
        stmt_(std::exchange(other.stmt_, nullptr)),
        bind_status_(std::move(other.bind_status_)) {}
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Text(int i, std::string_view v);
  Stmt& BlobAt(int i, std::string_view v);
  Stmt& Int(int i, int64_t v);
  Stmt& OptionalInt(int i, const std::optional<int64_t>& v);
  Stmt& Null(int i);

  // Binds `args` to parameters ?1, ?2, ... in order: string-like as TEXT,
  // Blob as BLOB, integers as INTEGER, std::optional<int64_t> as INTEGER or
  // NULL.
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
  StatusOr<bool> Step(std::string_view what);
  // Runs a statement that returns no rows (a row is INTERNAL).
  Status Run(std::string_view what);

  std::string ColText(int col) const;
  std::string ColBlob(int col) const;
  int64_t ColInt(int col) const;
  bool ColIsNull(int col) const;
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
  Stmt& Check(int rc);

  Connection* conn_;
  sqlite3_stmt* stmt_;
  Status bind_status_;
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

// One SQLite connection, its statement cache and the mutex that guards
// both. Every call needs the mutex held (Lock, or a Transaction).
class Connection {
 public:
  // Opens (creating if needed) the database at `path` and configures it
  // (see the header comment).
  static StatusOr<std::unique_ptr<Connection>> Open(const std::string& path,
                                                    int busy_timeout_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  [[nodiscard]] std::unique_lock<std::mutex> Lock() {
    return std::unique_lock<std::mutex>(mu_);
  }
  // Takes the mutex and BEGIN IMMEDIATE.
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
  // Run an INSERT, then the rowid it assigned.
  template <typename... Args>
  StatusOr<int64_t> Insert(const char* sql, std::string_view what,
                           const Args&... args) {
    DPA_RETURN_IF_ERROR(Run(sql, what, args...));
    return LastInsertRowid();
  }
  // The first column of the first row as an integer; no row is INTERNAL
  // "sqlite: <what> returned no row.".
  template <typename... Args>
  StatusOr<int64_t> QueryInt(const char* sql, std::string_view what,
                             const Args&... args) {
    DPA_ASSIGN_OR_RETURN(std::optional<int64_t> v,
                         QueryOne(sql, what, internal::IntColumn, args...));
    if (!v) {
      return InternalError("sqlite: " + std::string(what) +
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
  Status ExecScript(const char* sql, std::string_view what);

  // Rows changed by the last statement; rowid of the last INSERT.
  int64_t Changes() const;
  int64_t LastInsertRowid() const;
  // The constraint the last failed step on this connection broke (kNone
  // when the last step did not fail on one).
  Constraint LastConstraint() const;

 private:
  friend class Stmt;
  struct DbCloser {
    void operator()(sqlite3* db) const;
  };
  struct StmtFinalizer {
    void operator()(sqlite3_stmt* s) const;
  };
  explicit Connection(std::unique_ptr<sqlite3, DbCloser> db);
  Status Configure(int busy_timeout_ms);

  std::mutex mu_;
  // Declared before cache_, so statements are finalized first.
  std::unique_ptr<sqlite3, DbCloser> db_;
  std::unordered_map<const char*, std::unique_ptr<sqlite3_stmt, StmtFinalizer>>
      cache_;
  int last_step_rc_ = 0;  // extended code of the last failed step
};

// A write transaction: BEGIN IMMEDIATE under the connection's mutex;
// ROLLBACK when it goes away uncommitted. Movable, not copyable.
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

}  // namespace dpuaudit::verifier::sqlite

#endif  // DPUAUDIT_VERIFIER_STORE_SQLITE_H_
