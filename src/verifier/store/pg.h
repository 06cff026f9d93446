// The PostgreSQL implementation of the SQL layer (verifier/store/sql.h),
// over the libpq C API: one server session per Connection, statements run
// with PQexecParams and typed parameters, results in text format.
//
// Guarantees:
//  - Every PGconn and PGresult is owned by RAII (PgConnCloser,
//    PgResultClearer); none escapes this file.
//  - Statement text keeps the layer's ?1 ?2 placeholders; they are rewritten
//    to $1 $2 once per statement (outside string literals and quoted
//    identifiers). Parameters are sent typed: text as text, blobs as binary
//    bytea, integers as int8 (NULL too); bytea columns are decoded from hex,
//    booleans read as integers 1 / 0.
//  - Every PostgreSQL error becomes a Status in one place (ErrorStatus), as
//    "postgres: <what>: <server message>.", by SQLSTATE: 23505 unique or
//    primary key ALREADY_EXISTS (the constraint name ending in "_pkey" is a
//    primary key), 23503 foreign key and other 23xxx FAILED_PRECONDITION;
//    a lost connection, 40001, 40P01, 57P01-57P03, 53xxx (disk full, out of
//    memory, too many connections) and 08xxx UNAVAILABLE; 54xxx
//    RESOURCE_EXHAUSTED; 42501 and 28xxx PERMISSION_DENIED; XX001 / XX002
//    DATA_LOSS; anything else INTERNAL.
//  - A write transaction is BEGIN, then pg_advisory_xact_lock(kWriteLockKey)
//    (one constant key for every dpuaudit store), so writers on every
//    connection of every replica run one at a time, like SQLite's BEGIN
//    IMMEDIATE; the lock goes with COMMIT or ROLLBACK. A COMMIT the server
//    answers with ROLLBACK is an error. Inside a transaction every write
//    statement runs under a savepoint, so a failed statement (a constraint
//    the store then explains) leaves the transaction usable, as in SQLite.
//  - synchronous_commit is set to on for the session: an OK commit is on
//    the server's stable storage.
// Does not: reconnect (a lost connection reports Broken() and the pool
// replaces it); log or return the password of a connection string
// (RedactConnInfo); use TLS unless the connection string asks for it.
#ifndef DPUAUDIT_VERIFIER_STORE_PG_H_
#define DPUAUDIT_VERIFIER_STORE_PG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"
#include "verifier/store/sql.h"

struct pg_conn;
struct pg_result;

namespace dpuaudit::verifier::pg {

// The advisory lock key every write transaction takes ("DPAW").
inline constexpr int64_t kWriteLockKey = 0x44504157;

// Whether `db` names a PostgreSQL database rather than a SQLite path: a
// postgresql:// or postgres:// URI, or a libpq keyword string starting with
// "host=", "hostaddr=", "dbname=", "service=" or "user=".
bool IsConnInfo(std::string_view db);

// `conninfo` with any password removed (URI user:password@ and
// password=... keywords), for logs and messages.
std::string RedactConnInfo(std::string_view conninfo);

// The one place a failed PostgreSQL result becomes a Status (see the
// header comment). `res` may be null (then the connection's message).
Status ErrorStatus(std::string_view what, pg_conn* conn, pg_result* res);

// ?N placeholders to $N, outside '...' and "..." (exposed for tests).
std::string RewritePlaceholders(std::string_view sql, int* max_param);

class Connection final : public sql::Connection {
 public:
  // Connects with `conninfo` (URI or keyword string; PGPASSFILE and the
  // other libpq environment variables apply) and configures the session.
  // `connect_timeout_s` bounds the connect when conninfo does not.
  static StatusOr<std::unique_ptr<Connection>> Open(
      const std::string& conninfo, int connect_timeout_s);
  ~Connection() override;

  sql::Dialect dialect() const override { return sql::Dialect::kPostgres; }
  std::string_view Name() const override { return "postgres"; }
  Status ExecScript(const char* sql, std::string_view what) override;
  int64_t Changes() const override { return changes_; }
  StatusOr<int64_t> LastInsertId(std::string_view what) override;
  sql::Constraint LastConstraint() const override { return last_constraint_; }
  bool Broken() const override;

  // Runs one parameterless command outside the statement cache.
  Status Exec(const char* sql, std::string_view what);

 private:
  class PgStmt;
  struct PgConnCloser {
    void operator()(pg_conn* c) const;
  };
  explicit Connection(std::unique_ptr<pg_conn, PgConnCloser> conn);
  StatusOr<sql::StmtImpl*> PrepareImpl(const char* sql) override;
  Status BeginWrite() override;
  Status CommitWrite() override;
  void RollbackWrite() override;

  std::unique_ptr<pg_conn, PgConnCloser> conn_;
  std::unordered_map<const char*, std::unique_ptr<PgStmt>> cache_;
  int64_t changes_ = 0;
  sql::Constraint last_constraint_ = sql::Constraint::kNone;
  bool in_txn_ = false;
};

}  // namespace dpuaudit::verifier::pg

#endif  // DPUAUDIT_VERIFIER_STORE_PG_H_
