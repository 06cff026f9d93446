// The store backend a store test runs on, chosen by the environment, so the
// Store contract suites run against SQLite and PostgreSQL alike.
//
//  - SQLite (the default): a file "verifier.db" in a fresh TempDir.
//  - PostgreSQL when DPUAUDIT_TEST_PG_URL is a connection string, or
//    DPUAUDIT_TEST_PG_URL_FILE names a file holding one (the file
//    scripts/pg-test-server.sh writes; tests/CMakeLists.txt sets it for the
//    "pg." copies of the store suites). Each TestStoreDb gets a database of
//    its own, CREATE DATABASE with a unique name over an admin connection to
//    the URL's database (copied from a template this build's migrations
//    were applied to, dpa_tmpl_<digest>, made once per server and kept),
//    dropped (WITH (FORCE)) when the TestStoreDb goes away; Open opens that
//    same database again ("reopen").
//  - DPUAUDIT_TEST_PG_URL_FILE set but the file missing or empty (no
//    server: the PostgreSQL binaries are not installed) makes unavailable()
//    say why: the test skips with that reason, or fails when CI=true.
// Exec / Int / Text run raw SQL on the database behind the store (to count
// rows, or damage one) on either backend; EXPECT success.
// Tests that look behind the Store API at the SQLite file (PRAGMAs, file
// modes, a full disk) are SQLite-only: DPA_SQLITE_ONLY skips them on
// PostgreSQL, printing why.
#ifndef DPUAUDIT_TESTS_VERIFIER_STORE_TEST_STORE_H_
#define DPUAUDIT_TESTS_VERIFIER_STORE_TEST_STORE_H_

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "common/crypto.h"
#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"
#include "verifier/store/pg.h"
#include "verifier/store/pg_migrations.h"
#include "verifier/store/pg_store.h"
#include "verifier/store/sql_store.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::testing {

// The PostgreSQL URL the environment selects: nullopt for SQLite; "" when
// PostgreSQL is selected but no server is running (see the header comment).
inline std::optional<std::string> TestPgUrl() {
  if (const char* url = std::getenv("DPUAUDIT_TEST_PG_URL"); url != nullptr && *url) {
    return std::string(url);
  }
  const char* file = std::getenv("DPUAUDIT_TEST_PG_URL_FILE");
  if (file == nullptr || *file == '\0') return std::nullopt;
  std::ifstream in(file);
  std::string url;
  std::getline(in, url);
  return url;
}

inline bool TestOnPostgres() { return TestPgUrl().has_value(); }

inline bool TestInCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

// `url` (a postgresql:// URI) naming database `dbname` instead.
inline std::string PgUrlWithDatabase(const std::string& url, const std::string& dbname) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  size_t slash = url.find('/', scheme + 3);
  size_t query = url.find('?', scheme + 3);
  std::string head = url.substr(0, std::min(slash, query));
  std::string tail = query == std::string::npos ? "" : url.substr(query);
  return head + "/" + dbname + tail;
}

class TestStoreDb {
 public:
  TestStoreDb() {
    std::optional<std::string> url = TestPgUrl();
    if (!url) {
      path_ = dir_.File("verifier.db");
      return;
    }
    pg_ = true;
    if (url->empty()) {
      unavailable_ =
          "PostgreSQL is selected (DPUAUDIT_TEST_PG_URL_FILE) but no test server is "
          "running: scripts/pg-test-server.sh found no PostgreSQL binaries (Debian: "
          "apt-get install postgresql)";
      return;
    }
    admin_url_ = *url;
    static std::atomic<int> counter{0};
    std::random_device rd;
    name_ = "dpa_t_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
            std::to_string(rd() % 1000000);
    auto admin = verifier::pg::Connection::Open(admin_url_, 10);
    if (!admin.ok()) {
      unavailable_ = "cannot connect to the PostgreSQL test server: " +
                     admin.status().ToString();
      return;
    }
    auto lock = (*admin)->Lock();
    auto tmpl = Template(**admin);
    if (!tmpl.ok()) {
      unavailable_ = "cannot make the migrated template database: " + tmpl.status().ToString();
      return;
    }
    Status made = (*admin)->Exec(("CREATE DATABASE " + name_ + " TEMPLATE " + *tmpl).c_str(),
                                 "creating test database");
    if (!made.ok()) {
      unavailable_ = "cannot create the test database: " + made.ToString();
      return;
    }
    created_ = true;
    url_ = PgUrlWithDatabase(admin_url_, name_);
  }
  // The DROP is sent, not waited for: the server finishes it after the
  // test (with fsync on a drop takes ~0.4 s, most of a store test's time).
  ~TestStoreDb() {
    raw_.reset();
    if (!created_) return;
    std::unique_ptr<PGconn, PgFinish> admin(PQconnectdb(admin_url_.c_str()));
    if (PQstatus(admin.get()) != CONNECTION_OK) {
      ADD_FAILURE() << "dropping " << name_ << ": " << PQerrorMessage(admin.get());
      return;
    }
    std::string drop = "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)";
    EXPECT_EQ(PQsendQuery(admin.get(), drop.c_str()), 1) << PQerrorMessage(admin.get());
    EXPECT_EQ(PQflush(admin.get()), 0);
  }
  TestStoreDb(const TestStoreDb&) = delete;
  TestStoreDb& operator=(const TestStoreDb&) = delete;

  bool pg() const { return pg_; }
  // Why this backend cannot run ("" when it can).
  const std::string& unavailable() const { return unavailable_; }
  // What `--db` would be: the SQLite path or the PostgreSQL URL (with the
  // test role's password).
  const std::string& db() const { return pg_ ? url_ : path_; }
  // The SQLite file (SQLite only).
  const std::string& path() const { return path_; }
  // The scratch directory (both backends).
  const TempDir& dir() const { return dir_; }
  // The database name (PostgreSQL only).
  const std::string& name() const { return name_; }

  // Raw SQL behind the store's back (see the header comment).
  void Exec(const std::string& sql) {
    if (!pg_) return RawDb(path_).Exec(sql.c_str());
    PgResult r = PgQuery(sql);
    EXPECT_TRUE(r.ok) << sql << ": " << r.error;
  }
  int64_t Int(const std::string& sql) {
    if (!pg_) return RawDb(path_).Int(sql.c_str());
    std::string v = PgText(sql, "0");
    if (v == "t" || v == "f") return v == "t" ? 1 : 0;  // a boolean column
    return v.empty() ? 0 : std::stoll(v);
  }
  std::string Text(const std::string& sql) {
    if (!pg_) return RawDb(path_).Text(sql.c_str());
    return PgText(sql, "");
  }

  // Opens the store (again, for a "reopen" or a second instance).
  StatusOr<std::unique_ptr<verifier::SqlStore>> Open(
      const verifier::PgOptions& options = {}) const {
    if (!unavailable_.empty()) return UnavailableError(unavailable_);
    if (pg_) {
      DPA_ASSIGN_OR_RETURN(auto s, verifier::PgStore::Open(url_, options));
      return std::unique_ptr<verifier::SqlStore>(std::move(s));
    }
    DPA_ASSIGN_OR_RETURN(auto s, verifier::SqliteStore::Open(path_));
    return std::unique_ptr<verifier::SqlStore>(std::move(s));
  }

 private:
  // A database with this build's migrations applied (by PgStore::Open, so
  // Open's migration path runs once per server and build), made once per
  // server under an advisory lock and copied for each test: running the
  // migrations in every test would cost ~0.3 s each.
  StatusOr<std::string> Template(verifier::pg::Connection& admin) {
    std::string digest;
    for (const auto& m : verifier::pg::Migrations()) digest += std::string(m.name) + "\n" + std::string(m.sql);
    std::string tmpl = "dpa_tmpl_" + Sha256Hex(AsBytes(digest)).substr(0, 16);
    DPA_RETURN_IF_ERROR(admin.Exec("SELECT pg_advisory_lock(1146106957)", "template lock"));
    auto exists = admin.QueryInt("SELECT count(*) FROM pg_database WHERE datname = ?1",
                                 "finding the template", tmpl);
    Status made = exists.status();
    if (made.ok() && *exists == 0) {
      made = admin.Exec(("CREATE DATABASE " + tmpl).c_str(), "creating the template");
      if (made.ok()) {
        auto store = verifier::PgStore::Open(PgUrlWithDatabase(admin_url_, tmpl));
        made = store.status();
      }
      if (!made.ok()) {
        (void)admin.Exec(("DROP DATABASE IF EXISTS " + tmpl + " WITH (FORCE)").c_str(), "drop");
      }
    }
    (void)admin.Exec("SELECT pg_advisory_unlock(1146106957)", "template unlock");
    DPA_RETURN_IF_ERROR(made);
    return tmpl;
  }

  struct PgResult {
    bool ok = false;
    std::string error, value;
    bool row = false;
  };
  PgResult PgQuery(const std::string& sql) {
    PgResult out;
    if (raw_ == nullptr) {
      raw_.reset(PQconnectdb(url_.c_str()));
    }
    if (PQstatus(raw_.get()) != CONNECTION_OK) {
      out.error = PQerrorMessage(raw_.get());
      raw_.reset();
      return out;
    }
    std::unique_ptr<PGresult, void (*)(PGresult*)> res(PQexec(raw_.get(), sql.c_str()), PQclear);
    ExecStatusType st = PQresultStatus(res.get());
    out.ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!out.ok) out.error = PQresultErrorMessage(res.get());
    if (st == PGRES_TUPLES_OK && PQntuples(res.get()) > 0) {
      out.row = true;
      out.value = PQgetvalue(res.get(), 0, 0);
      if (PQftype(res.get(), 0) == 17) {  // bytea, as RawDb::Text's blob
        size_t n = 0;
        unsigned char* raw = PQunescapeBytea(
            reinterpret_cast<const unsigned char*>(out.value.c_str()), &n);
        out.value.assign(reinterpret_cast<const char*>(raw), n);
        PQfreemem(raw);
      }
    }
    return out;
  }
  std::string PgText(const std::string& sql, const std::string& fallback) {
    PgResult r = PgQuery(sql);
    EXPECT_TRUE(r.ok && r.row) << sql << ": " << (r.ok ? "no row" : r.error);
    return r.row ? r.value : fallback;
  }
  struct PgFinish {
    void operator()(PGconn* c) const { PQfinish(c); }
  };

  TempDir dir_;
  std::unique_ptr<PGconn, PgFinish> raw_;
  bool pg_ = false;
  bool created_ = false;
  std::string path_, admin_url_, url_, name_, unavailable_;
};

}  // namespace dpuaudit::testing

// In SetUp: skip (or, with CI=true, fail) when the selected backend cannot
// run.
#define DPA_REQUIRE_TEST_STORE(db)                                   \
  do {                                                               \
    if (!(db).unavailable().empty()) {                               \
      if (::dpuaudit::testing::TestInCi()) {                         \
        FAIL() << "CI=true: " << (db).unavailable();                 \
      }                                                              \
      GTEST_SKIP() << (db).unavailable();                            \
    }                                                                \
  } while (0)

// At the top of a test that inspects or damages the SQLite file itself.
#define DPA_SQLITE_ONLY(why)                                                  \
  do {                                                                        \
    if (::dpuaudit::testing::TestOnPostgres()) {                              \
      GTEST_SKIP() << "SQLite only (" << (why) << "); this run is PostgreSQL"; \
    }                                                                         \
  } while (0)

// At the top of a test of PostgreSQL alone.
#define DPA_POSTGRES_ONLY()                                                       \
  do {                                                                            \
    if (!::dpuaudit::testing::TestOnPostgres()) {                                 \
      GTEST_SKIP() << "PostgreSQL only: set DPUAUDIT_TEST_PG_URL (or run the pg. " \
                      "copies in ctest)";                                         \
    }                                                                             \
  } while (0)

#endif  // DPUAUDIT_TESTS_VERIFIER_STORE_TEST_STORE_H_
