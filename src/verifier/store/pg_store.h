// PgStore: the PostgreSQL Store backend, one database shared by any number
// of verifier replicas (docs/architecture.md#storage). Its logic is
// SqlStore's (verifier/store/sql_store.h), the same as SQLite's.
//
// Guarantees, beyond the Store contract:
//  - A bounded pool of at most PgOptions::pool_size connections (default 4,
//    independent of the number of cores); a call that finds every
//    connection busy for acquire_timeout_ms is UNAVAILABLE, never a hang. A
//    connection the server dropped is discarded and a new one opened on the
//    next call.
//  - Every write is one transaction holding the advisory lock
//    pg::kWriteLockKey (verifier/store/pg.h): writers on every replica run
//    one at a time, exactly as SQLite's BEGIN IMMEDIATE, so a nonce issued
//    by replica A is redeemable exactly once at any replica, and the audit
//    chain's head is read and extended without forks. Reads run on any
//    pooled connection without the lock, at READ COMMITTED.
//  - synchronous_commit is on: an OK return is on the server's stable
//    storage (and on a synchronous standby's, if the server has one).
//  - The schema is the versioned migrations src/verifier/store/pg_migrations
//    (embedded at build time), recorded in schema_migrations (version,
//    name, sha256, applied_at) and applied at Open, in order, in one
//    transaction under the write lock. A database with a migration this
//    build does not know (a newer version), or whose recorded sha256
//    differs from this build's file, is refused with FAILED_PRECONDITION
//    naming the migration.
//  - The connection string's password never appears in a message or log
//    (pg::RedactConnInfo); libpq's PGPASSFILE / ~/.pgpass apply.
//  - The webhook outbox is claimed per replica (ClaimDueOutbox; column
//    webhook_outbox.claimed_until, migration 0002_outbox_claims): one
//    UPDATE over SELECT ... FOR UPDATE OF webhook_outbox SKIP LOCKED, run
//    outside the write lock, so two replicas' dispatchers claiming at once
//    get disjoint rows and never send the same delivery while its claim
//    (lease) runs. Recording the attempt (MarkOutboxDelivered / Failed)
//    ends the claim; a claim whose replica died runs out after its lease
//    and the row is due again (at least once: receivers deduplicate by
//    event id). Leases are judged by the claiming replica's clock: replicas'
//    clocks must agree to well within a lease (minutes).
//  - With PgOptions::create_schema false (the operator commands) Open
//    refuses a database whose schema is missing or behind this build's
//    with FAILED_PRECONDITION instead of migrating it.
// Does not: create the database or its role; downgrade or roll back a
// migration; encrypt the connection unless the connection string asks
// (use sslmode=verify-full).
#ifndef DPUAUDIT_VERIFIER_STORE_PG_STORE_H_
#define DPUAUDIT_VERIFIER_STORE_PG_STORE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "verifier/store/pg_migrations.h"
#include "verifier/store/sql_store.h"

namespace dpuaudit::verifier {
namespace pg {
class Connection;
}  // namespace pg

struct PgOptions {
  int pool_size = 4;             // --db-pool
  int acquire_timeout_ms = 5000;  // waiting for a free connection
  int connect_timeout_s = 5;      // unless the connection string says
  // Apply missing migrations at Open (serve); false: refuse a database
  // that is not up to date (the operator commands never change a schema).
  bool create_schema = true;
};

class PgStore final : public SqlStore {
 public:
  // Connects to `conninfo` (postgresql:// URI or libpq keywords) and brings
  // its schema up to date (see the header comment).
  static StatusOr<std::unique_ptr<PgStore>> Open(const std::string& conninfo,
                                                 const PgOptions& options = {});

 private:
  explicit PgStore(std::unique_ptr<sql::Pool> pool)
      : SqlStore(std::move(pool)) {}
};

// Applies `migrations` (versions increasing) to the database on `c`, in one
// transaction under the write lock (see the header comment). Exposed so
// tests can offer altered or newer migration lists.
// With `apply` false, a database missing any of `migrations` is
// FAILED_PRECONDITION (nothing is changed).
Status RunMigrations(pg::Connection& c,
                     const std::vector<pg::Migration>& migrations,
                     bool apply = true);

// The store `db` names: a PostgreSQL database when pg::IsConnInfo(db)
// (verifier/store/pg.h), else a SQLite file path.
StatusOr<std::unique_ptr<SqlStore>> OpenStore(const std::string& db,
                                              const PgOptions& options = {});

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_STORE_PG_STORE_H_
