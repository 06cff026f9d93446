#include "verifier/store/pg_store.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "common/crypto.h"
#include "verifier/store/pg.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::verifier {
namespace {

constexpr const char* kCreateMigrations =
    "CREATE TABLE IF NOT EXISTS schema_migrations (version bigint PRIMARY KEY, "
    "name text NOT NULL, sha256 text NOT NULL, applied_at bigint NOT NULL)";
constexpr const char* kListApplied =
    "SELECT version, name, sha256 FROM schema_migrations ORDER BY version";
constexpr const char* kRecordMigration =
    "INSERT INTO schema_migrations (version, name, sha256, applied_at) "
    "VALUES (?1, ?2, ?3, CAST(extract(epoch FROM now()) AS bigint))";

struct Applied {
  int64_t version = 0;
  std::string name;
  std::string sha256;
};

std::string MigrationSha256(const pg::Migration& m) {
  return Sha256Hex(ByteView(reinterpret_cast<const uint8_t*>(m.sql.data()),
                            m.sql.size()));
}

}  // namespace

Status RunMigrations(pg::Connection& c,
                     const std::vector<pg::Migration>& migrations, bool apply) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int64_t>(i) + 1) {
      return InternalError("postgres: migration " +
                           std::string(migrations[i].name) +
                           " is out of sequence (expected version " +
                           std::to_string(i + 1) + ").");
    }
  }
  DPA_ASSIGN_OR_RETURN(sql::Transaction txn, c.Begin());
  DPA_RETURN_IF_ERROR(c.Run(kCreateMigrations, "creating schema_migrations"));
  DPA_ASSIGN_OR_RETURN(std::vector<Applied> applied,
                       c.QueryAll(kListApplied, "reading schema_migrations",
                                  [](const sql::Stmt& s) {
                                    Applied a;
                                    s.Read(a.version, a.name, a.sha256);
                                    return a;
                                  }));
  for (const Applied& a : applied) {
    if (a.version < 1 || a.version > static_cast<int64_t>(migrations.size())) {
      return FailedPreconditionError(
          "postgres: the database has schema migration " +
          std::to_string(a.version) + " (" + a.name +
          "), newer than this build knows (latest " +
          std::to_string(migrations.size()) + "); refusing to use it.");
    }
    const pg::Migration& m = migrations[static_cast<size_t>(a.version - 1)];
    std::string sha = MigrationSha256(m);
    if (a.sha256 != sha || a.name != m.name) {
      return FailedPreconditionError(
          "postgres: schema migration " + std::to_string(a.version) + " (" +
          a.name + ") was applied with sha256 " + a.sha256 +
          ", but this build's " + std::string(m.name) + " has " + sha +
          "; refusing to use the database.");
    }
  }
  if (!apply && applied.size() < migrations.size()) {
    return FailedPreconditionError(
        "postgres: the database's schema is " +
        (applied.empty() ? std::string("missing")
                         : "at migration " + std::to_string(applied.size())) +
        ", this build's is at " + std::to_string(migrations.size()) + " (" +
        std::string(migrations.back().name) +
        "); `dpuaudit-verifier serve --db` brings it up to date, the operator "
        "commands never change it.");
  }
  for (size_t i = applied.size(); i < migrations.size(); ++i) {
    const pg::Migration& m = migrations[i];
    std::string sql(m.sql);
    DPA_RETURN_IF_ERROR(
        c.ExecScript(sql.c_str(), "applying migration " + std::string(m.name)));
    DPA_RETURN_IF_ERROR(c.Run(kRecordMigration, "recording migration",
                              m.version, m.name, MigrationSha256(m)));
  }
  return txn.Commit();
}

StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& conninfo,
                                                 const PgOptions& options) {
  if (options.pool_size < 1) {
    return InvalidArgumentError("postgres: the pool size must be at least 1.");
  }
  int timeout = options.connect_timeout_s;
  DPA_ASSIGN_OR_RETURN(std::unique_ptr<pg::Connection> first,
                       pg::Connection::Open(conninfo, timeout));
  DPA_RETURN_IF_ERROR(
      RunMigrations(*first, pg::Migrations(), options.create_schema));
  auto open = [conninfo, timeout]() -> StatusOr<std::unique_ptr<sql::Connection>> {
    DPA_ASSIGN_OR_RETURN(std::unique_ptr<pg::Connection> c,
                         pg::Connection::Open(conninfo, timeout));
    return std::unique_ptr<sql::Connection>(std::move(c));
  };
  return std::unique_ptr<PgStore>(new PgStore(sql::Pool::Bounded(
      std::move(first), std::move(open), options.pool_size,
      std::chrono::milliseconds(options.acquire_timeout_ms))));
}

StatusOr<std::unique_ptr<SqlStore>> OpenStore(const std::string& db,
                                              const PgOptions& options) {
  if (pg::IsConnInfo(db)) {
    DPA_ASSIGN_OR_RETURN(std::unique_ptr<PgStore> s, PgStore::Open(db, options));
    return std::unique_ptr<SqlStore>(std::move(s));
  }
  DPA_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> s, SqliteStore::Open(db));
  return std::unique_ptr<SqlStore>(std::move(s));
}

}  // namespace dpuaudit::verifier
