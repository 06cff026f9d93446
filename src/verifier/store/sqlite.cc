#include "verifier/store/sqlite.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

namespace dpuaudit::verifier::sqlite {

Status ErrorStatus(int rc, std::string_view what, sqlite3* db) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string msg = "sqlite: " + std::string(what) + ": " + detail + ".";
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
    // Disk full (ENOSPC) and out of memory are the server's trouble, not
    // the request's: UNAVAILABLE (HTTP 503), never RESOURCE_EXHAUSTED,
    // which the API answers with 413 "payload too large".
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return UnavailableError(std::move(msg));
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY ||
          rc == SQLITE_CONSTRAINT_UNIQUE) {
        return AlreadyExistsError(std::move(msg));
      }
      return FailedPreconditionError(std::move(msg));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLossError(std::move(msg));
    case SQLITE_TOOBIG:
      return ResourceExhaustedError(std::move(msg));
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return PermissionDeniedError(std::move(msg));
    default:
      return InternalError(std::move(msg));
  }
}

// --- Stmt --------------------------------------------------------------------

// A prepared statement, owned by the connection's cache.
class Connection::SqliteStmt final : public sql::StmtImpl {
 public:
  SqliteStmt(Connection* conn, sqlite3_stmt* stmt) : conn_(conn), stmt_(stmt) {}
  ~SqliteStmt() override { sqlite3_finalize(stmt_); }
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;

  void BindText(int i, std::string_view v) override {
    Check(sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT,
                              SQLITE_UTF8));
  }
  void BindBlob(int i, std::string_view v) override {
    Check(sqlite3_bind_blob64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT));
  }
  void BindInt(int i, int64_t v) override {
    Check(sqlite3_bind_int64(stmt_, i, v));
  }
  void BindNull(int i) override { Check(sqlite3_bind_null(stmt_, i)); }

  StatusOr<bool> Step(std::string_view what) override {
    conn_->last_step_rc_ = 0;
    if (!bind_status_.ok()) return bind_status_;
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    conn_->last_step_rc_ = rc;
    return ErrorStatus(rc, what, conn_->db_.get());
  }

  std::string ColText(int col) const override {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    if (p == nullptr || n <= 0) return std::string();
    return std::string(reinterpret_cast<const char*>(p),
                       static_cast<size_t>(n));
  }
  std::string ColBlob(int col) const override {
    const void* p = sqlite3_column_blob(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    if (p == nullptr || n <= 0) return std::string();
    return std::string(static_cast<const char*>(p), static_cast<size_t>(n));
  }
  int64_t ColInt(int col) const override {
    return sqlite3_column_int64(stmt_, col);
  }
  bool ColIsNull(int col) const override {
    return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
  }
  void Reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    bind_status_ = OkStatus();
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK && bind_status_.ok()) {
      bind_status_ = ErrorStatus(rc, "binding parameter", conn_->db_.get());
    }
  }

  Connection* conn_;
  sqlite3_stmt* stmt_;
  Status bind_status_;
};

// --- Connection --------------------------------------------------------------

void Connection::DbCloser::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}

Connection::Connection(std::unique_ptr<sqlite3, DbCloser> db)
    : db_(std::move(db)) {}

Connection::~Connection() {
  cache_.clear();  // statements before the connection
}

namespace {

// Tightens one file to owner-only (mode & 0700) if it exists; with
// `create`, creates it 0600 first. The store holds node keys, nonces and
// results: group or others must not read it.
Status OwnerOnly(const std::string& path, bool create) {
  int fd = ::open(path.c_str(),
                  O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                      (create ? O_CREAT : 0),
                  0600);
  if (fd < 0) {
    // A missing file (or, with create, a missing directory): SQLite opens it
    // or says why in its own words.
    if (errno == ENOENT) return OkStatus();
    if (errno == EISDIR) {
      return FailedPreconditionError("sqlite: " + path +
                                     " is not a regular file.");
    }
    std::string msg =
        "sqlite: cannot open " + path + ": " + std::strerror(errno) + ".";
    return errno == EACCES || errno == EPERM
               ? PermissionDeniedError(std::move(msg))
               : UnavailableError(std::move(msg));
  }
  struct stat st {};
  Status s = OkStatus();
  if (::fstat(fd, &st) != 0) {
    s = UnavailableError("sqlite: cannot stat " + path + ": " +
                         std::strerror(errno) + ".");
  } else if (!S_ISREG(st.st_mode)) {
    s = FailedPreconditionError("sqlite: " + path + " is not a regular file.");
  } else if ((st.st_mode & 077) != 0 &&
             ::fchmod(fd, st.st_mode & 0700) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    s = PermissionDeniedError(
        "sqlite: " + path + " has mode " + mode +
        " (readable beyond its owner) and cannot be tightened to owner-only: " +
        std::strerror(errno) + "; chmod 600 it or use another --db.");
  }
  ::close(fd);
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& path,
                                                       int busy_timeout_ms) {
  if (path.empty()) return InvalidArgumentError("sqlite: path is empty.");
  if (path != ":memory:") {
    // Created 0600 before SQLite sees it: SQLite gives -wal and -shm the
    // database file's mode. Existing files with looser modes are tightened.
    DPA_RETURN_IF_ERROR(OwnerOnly(path, /*create=*/true));
    DPA_RETURN_IF_ERROR(OwnerOnly(path + "-wal", /*create=*/false));
    DPA_RETURN_IF_ERROR(OwnerOnly(path + "-shm", /*create=*/false));
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  std::unique_ptr<sqlite3, DbCloser> db(raw);  // owned even when open fails
  if (rc != SQLITE_OK) return ErrorStatus(rc, "opening " + path, db.get());
  sqlite3_extended_result_codes(db.get(), 1);
  std::unique_ptr<Connection> conn(new Connection(std::move(db)));
  DPA_RETURN_IF_ERROR(conn->Configure(busy_timeout_ms));
  return conn;
}

Status Connection::Configure(int busy_timeout_ms) {
  sqlite3* db = db_.get();
  int rc = sqlite3_busy_timeout(db, busy_timeout_ms);
  if (rc != SQLITE_OK) return ErrorStatus(rc, "setting busy_timeout", db);
  rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  if (rc != SQLITE_OK) return ErrorStatus(rc, "enabling defensive mode", db);
  rc = sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  if (rc != SQLITE_OK) return ErrorStatus(rc, "distrusting schema", db);

  DPA_ASSIGN_OR_RETURN(
      std::optional<std::string> mode,
      QueryOne("PRAGMA journal_mode = WAL", "setting journal_mode",
               [](const Stmt& s) { return s.ColText(0); }));
  if (mode.value_or("") != "wal") {
    return FailedPreconditionError("sqlite: journal_mode is \"" +
                                   mode.value_or("") + "\", not \"wal\".");
  }
  DPA_RETURN_IF_ERROR(Run("PRAGMA synchronous = FULL", "setting synchronous"));
  DPA_ASSIGN_OR_RETURN(int64_t sync,
                       QueryInt("PRAGMA synchronous", "reading synchronous"));
  if (sync != 2) {
    return FailedPreconditionError("sqlite: synchronous is " +
                                   std::to_string(sync) + ", not FULL (2).");
  }
  DPA_RETURN_IF_ERROR(
      Run("PRAGMA foreign_keys = ON", "enabling foreign_keys"));
  DPA_ASSIGN_OR_RETURN(int64_t fk,
                       QueryInt("PRAGMA foreign_keys", "reading foreign_keys"));
  if (fk != 1) return FailedPreconditionError("sqlite: foreign_keys is off.");
  return OkStatus();
}

StatusOr<sql::StmtImpl*> Connection::PrepareImpl(const char* sql) {
  last_step_rc_ = 0;
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT,
                                &raw, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(raw);
      return ErrorStatus(rc, "preparing statement", db_.get());
    }
    it = cache_.emplace(sql, std::make_unique<SqliteStmt>(this, raw)).first;
  }
  return it->second.get();
}

Status Connection::ExecScript(const char* sql, std::string_view what) {
  int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return ErrorStatus(rc, what, db_.get());
  return OkStatus();
}

int64_t Connection::Changes() const {
  return static_cast<int64_t>(sqlite3_changes64(db_.get()));
}

StatusOr<int64_t> Connection::LastInsertId(std::string_view) {
  return LastInsertRowid();
}

int64_t Connection::LastInsertRowid() const {
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_.get()));
}

Constraint Connection::LastConstraint() const {
  switch (last_step_rc_) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
      return Constraint::kPrimaryKey;
    case SQLITE_CONSTRAINT_UNIQUE:
      return Constraint::kUnique;
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return Constraint::kForeignKey;
    default:
      return (last_step_rc_ & 0xff) == SQLITE_CONSTRAINT ? Constraint::kOther
                                                         : Constraint::kNone;
  }
}

// --- Write transactions ------------------------------------------------------

Status Connection::BeginWrite() {
  return Run("BEGIN IMMEDIATE", "beginning transaction");
}

Status Connection::CommitWrite() { return Run("COMMIT", "committing"); }

void Connection::RollbackWrite() { (void)Run("ROLLBACK", "rolling back"); }

}  // namespace dpuaudit::verifier::sqlite
