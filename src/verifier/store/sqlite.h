// The SQLite implementation of the SQL layer (verifier/store/sql.h): one
// connection with its statement cache, prepared statements with typed
// binding and column access, BEGIN IMMEDIATE write transactions, and the
// mapping of SQLite result codes to Status. Knows nothing of the store's
// tables or rules.
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
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"
#include "verifier/store/sql.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dpuaudit::verifier::sqlite {

// The generic layer's types, under their SQLite-era names.
using sql::Blob;
using sql::BlobInto;
using sql::Constraint;
using sql::Stmt;
using sql::Transaction;

// The one place SQLite result codes become a Status (see the header
// comment). `db` may be null (then SQLite's text for `rc` is used).
Status ErrorStatus(int rc, std::string_view what, sqlite3* db);

// One SQLite connection, its statement cache and the mutex that guards
// both. Every call needs the mutex held (Lock, or a Transaction).
class Connection final : public sql::Connection {
 public:
  // Opens (creating if needed) the database at `path` and configures it
  // (see the header comment).
  static StatusOr<std::unique_ptr<Connection>> Open(const std::string& path,
                                                    int busy_timeout_ms);
  ~Connection() override;

  sql::Dialect dialect() const override { return sql::Dialect::kSqlite; }
  std::string_view Name() const override { return "sqlite"; }
  Status ExecScript(const char* sql, std::string_view what) override;
  int64_t Changes() const override;
  StatusOr<int64_t> LastInsertId(std::string_view what) override;
  Constraint LastConstraint() const override;
  // The rowid of the last INSERT.
  int64_t LastInsertRowid() const;

 private:
  class SqliteStmt;
  struct DbCloser {
    void operator()(sqlite3* db) const;
  };
  explicit Connection(std::unique_ptr<sqlite3, DbCloser> db);
  Status Configure(int busy_timeout_ms);
  StatusOr<sql::StmtImpl*> PrepareImpl(const char* sql) override;
  Status BeginWrite() override;
  Status CommitWrite() override;
  void RollbackWrite() override;

  // Declared before cache_, so statements are finalized first.
  std::unique_ptr<sqlite3, DbCloser> db_;
  std::unordered_map<const char*, std::unique_ptr<SqliteStmt>> cache_;
  int last_step_rc_ = 0;  // extended code of the last failed step
};

}  // namespace dpuaudit::verifier::sqlite

#endif  // DPUAUDIT_VERIFIER_STORE_SQLITE_H_
