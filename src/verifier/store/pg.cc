#include "verifier/store/pg.h"

#include <libpq-fe.h>

#include <charconv>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace dpuaudit::verifier::pg {
namespace {

// Type OIDs (pg_type.dat).
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kTextOid = 25;

struct PgResultClearer {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, PgResultClearer>;

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '.')) {
    s.pop_back();
  }
  return s;
}

bool StartsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A write statement (run under a savepoint inside a transaction).
bool IsWrite(std::string_view sql) {
  size_t i = sql.find_first_not_of(" \n\t");
  if (i == std::string_view::npos) return false;
  std::string_view s = sql.substr(i);
  return StartsWith(s, "INSERT") || StartsWith(s, "UPDATE") ||
         StartsWith(s, "DELETE") || StartsWith(s, "WITH");
}

}  // namespace

bool IsConnInfo(std::string_view db) {
  for (std::string_view p : {"postgresql://", "postgres://", "host=",
                             "hostaddr=", "dbname=", "service=", "user="}) {
    if (StartsWith(db, p)) return true;
  }
  return false;
}

std::string RedactConnInfo(std::string_view conninfo) {
  std::string s(conninfo);
  if (StartsWith(s, "postgresql://") || StartsWith(s, "postgres://")) {
    size_t scheme = s.find("://") + 3;
    size_t at = s.find('@', scheme);
    size_t slash = s.find('/', scheme);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      size_t colon = s.find(':', scheme);
      if (colon != std::string::npos && colon < at) {
        s.replace(colon, at - colon, ":REDACTED");
      }
    }
    // password=... in the query string.
    size_t q = s.find('?');
    while (q != std::string::npos) {
      size_t k = s.find("password=", q);
      if (k == std::string::npos) break;
      size_t end = s.find('&', k);
      s.replace(k, (end == std::string::npos ? s.size() : end) - k,
                "password=REDACTED");
      q = s.find('&', k);
    }
    return s;
  }
  // Keyword form: password=value or password='quoted value'.
  size_t k = 0;
  while ((k = s.find("password", k)) != std::string::npos) {
    size_t eq = s.find_first_not_of(' ', k + 8);
    if (eq == std::string::npos || s[eq] != '=') {
      k += 8;
      continue;
    }
    size_t v = s.find_first_not_of(' ', eq + 1);
    size_t end = v;
    if (v != std::string::npos && s[v] == '\'') {
      end = v + 1;
      while (end < s.size() && s[end] != '\'') end += (s[end] == '\\') ? 2 : 1;
      end = std::min(end + 1, s.size());
    } else if (v != std::string::npos) {
      end = s.find(' ', v);
      if (end == std::string::npos) end = s.size();
    } else {
      v = end = s.size();
    }
    s.replace(k, end - k, "password=REDACTED");
    k += 17;
  }
  return s;
}

Status ErrorStatus(std::string_view what, PGconn* conn, PGresult* res) {
  std::string detail;
  const char* state = nullptr;
  const char* constraint = nullptr;
  if (res != nullptr) {
    const char* primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    detail = primary != nullptr ? primary : PQresultErrorMessage(res);
    state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
  }
  if (detail.empty() && conn != nullptr) detail = PQerrorMessage(conn);
  if (detail.empty()) detail = "unknown error";
  std::string msg =
      "postgres: " + std::string(what) + ": " + Trimmed(detail) + ".";
  bool lost = conn == nullptr || PQstatus(conn) != CONNECTION_OK;
  std::string_view code = state != nullptr ? state : "";
  if (code.empty() || lost) return UnavailableError(std::move(msg));
  if (code == "23505") return AlreadyExistsError(std::move(msg));
  (void)constraint;
  if (StartsWith(code, "23")) return FailedPreconditionError(std::move(msg));
  if (code == "40001" || code == "40P01" || StartsWith(code, "57P") ||
      StartsWith(code, "53") || StartsWith(code, "08")) {
    return UnavailableError(std::move(msg));
  }
  if (StartsWith(code, "54")) return ResourceExhaustedError(std::move(msg));
  if (code == "42501" || StartsWith(code, "28")) {
    return PermissionDeniedError(std::move(msg));
  }
  if (code == "XX001" || code == "XX002") return DataLossError(std::move(msg));
  return InternalError(std::move(msg));
}

std::string RewritePlaceholders(std::string_view sql, int* max_param) {
  std::string out;
  out.reserve(sql.size());
  int max = 0;
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote != 0) {
      out += c;
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
      continue;
    }
    if (c == '?' && i + 1 < sql.size() && sql[i + 1] >= '0' &&
        sql[i + 1] <= '9') {
      size_t j = i + 1;
      int n = 0;
      while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') {
        n = n * 10 + (sql[j] - '0');
        ++j;
      }
      if (n > max) max = n;
      out += '$';
      out.append(sql.substr(i + 1, j - i - 1));
      i = j - 1;
      continue;
    }
    out += c;
  }
  if (max_param != nullptr) *max_param = max;
  return out;
}

// --- Stmt --------------------------------------------------------------------

class Connection::PgStmt final : public sql::StmtImpl {
 public:
  PgStmt(Connection* conn, std::string text, int params, bool write)
      : conn_(conn),
        text_(std::move(text)),
        write_(write),
        values_(static_cast<size_t>(params)),
        is_null_(static_cast<size_t>(params), true),
        types_(static_cast<size_t>(params), kInt8Oid),
        formats_(static_cast<size_t>(params), 0) {}

  void BindText(int i, std::string_view v) override {
    Set(i, std::string(v), kTextOid, 0);
  }
  void BindBlob(int i, std::string_view v) override {
    Set(i, std::string(v), kByteaOid, 1);
  }
  void BindInt(int i, int64_t v) override {
    Set(i, std::to_string(v), kInt8Oid, 0);
  }
  void BindNull(int i) override {
    if (!Valid(i)) return;
    is_null_[Idx(i)] = true;
    types_[Idx(i)] = kInt8Oid;
  }

  StatusOr<bool> Step(std::string_view what) override {
    conn_->last_constraint_ = sql::Constraint::kNone;
    if (!bind_status_.ok()) return bind_status_;
    if (result_ != nullptr) {
      ++row_;
      return row_ < PQntuples(result_.get());
    }
    return Execute(what);
  }

  std::string ColText(int col) const override {
    if (ColIsNull(col)) return std::string();
    const char* v = PQgetvalue(result_.get(), row_, col);
    int n = PQgetlength(result_.get(), row_, col);
    return std::string(v, static_cast<size_t>(n));
  }
  std::string ColBlob(int col) const override {
    std::string t = ColText(col);
    if (!StartsWith(t, "\\x")) return t;  // not bytea: the text itself
    std::string out;
    out.reserve((t.size() - 2) / 2);
    for (size_t i = 2; i + 1 < t.size(); i += 2) {
      int hi = HexValue(t[i]), lo = HexValue(t[i + 1]);
      if (hi < 0 || lo < 0) break;
      out += static_cast<char>((hi << 4) | lo);
    }
    return out;
  }
  int64_t ColInt(int col) const override {
    if (ColIsNull(col)) return 0;
    const char* v = PQgetvalue(result_.get(), row_, col);
    if (std::strcmp(v, "t") == 0) return 1;
    if (std::strcmp(v, "f") == 0) return 0;
    int64_t out = 0;
    std::from_chars(v, v + std::strlen(v), out);
    return out;
  }
  bool ColIsNull(int col) const override {
    return result_ == nullptr || row_ >= PQntuples(result_.get()) ||
           PQgetisnull(result_.get(), row_, col) != 0;
  }
  void Reset() override {
    result_.reset();
    row_ = 0;
    bind_status_ = OkStatus();
    for (size_t i = 0; i < values_.size(); ++i) {
      values_[i].clear();
      is_null_[i] = true;
      types_[i] = kInt8Oid;
      formats_[i] = 0;
    }
  }

 private:
  static size_t Idx(int i) { return static_cast<size_t>(i - 1); }
  bool Valid(int i) {
    if (i >= 1 && static_cast<size_t>(i) <= values_.size()) return true;
    if (bind_status_.ok()) {
      bind_status_ = InternalError("postgres: binding parameter: index " +
                                   std::to_string(i) + " out of range.");
    }
    return false;
  }
  void Set(int i, std::string v, Oid type, int format) {
    if (!Valid(i)) return;
    values_[Idx(i)] = std::move(v);
    is_null_[Idx(i)] = false;
    types_[Idx(i)] = type;
    formats_[Idx(i)] = format;
  }

  StatusOr<bool> Execute(std::string_view what) {
    PGconn* pc = conn_->conn_.get();
    bool savepoint = write_ && conn_->in_txn_;
    if (savepoint) {
      DPA_RETURN_IF_ERROR(conn_->Exec("SAVEPOINT dpa_stmt", what));
    }
    size_t n = values_.size();
    std::vector<const char*> ptrs(n);
    std::vector<int> lengths(n);
    for (size_t i = 0; i < n; ++i) {
      ptrs[i] = is_null_[i] ? nullptr : values_[i].data();
      lengths[i] = static_cast<int>(values_[i].size());
    }
    Result res(PQexecParams(pc, text_.c_str(), static_cast<int>(n),
                            types_.data(), ptrs.data(), lengths.data(),
                            formats_.data(), 0));
    ExecStatusType st =
        res != nullptr ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const char* state =
          res != nullptr ? PQresultErrorField(res.get(), PG_DIAG_SQLSTATE)
                         : nullptr;
      std::string_view code = state != nullptr ? state : "";
      if (code == "23505") {
        const char* name =
            PQresultErrorField(res.get(), PG_DIAG_CONSTRAINT_NAME);
        std::string_view nm = name != nullptr ? name : "";
        conn_->last_constraint_ =
            nm.size() >= 5 && nm.substr(nm.size() - 5) == "_pkey"
                ? sql::Constraint::kPrimaryKey
                : sql::Constraint::kUnique;
      } else if (code == "23503") {
        conn_->last_constraint_ = sql::Constraint::kForeignKey;
      } else if (StartsWith(code, "23")) {
        conn_->last_constraint_ = sql::Constraint::kOther;
      }
      Status s = ErrorStatus(what, pc, res.get());
      if (savepoint && PQstatus(pc) == CONNECTION_OK) {
        (void)conn_->Exec("ROLLBACK TO SAVEPOINT dpa_stmt", what);
        (void)conn_->Exec("RELEASE SAVEPOINT dpa_stmt", what);
      }
      return s;
    }
    if (savepoint) {
      DPA_RETURN_IF_ERROR(conn_->Exec("RELEASE SAVEPOINT dpa_stmt", what));
    }
    if (st == PGRES_COMMAND_OK) {
      const char* tuples = PQcmdTuples(res.get());
      int64_t changed = 0;
      std::from_chars(tuples, tuples + std::strlen(tuples), changed);
      conn_->changes_ = changed;
      return false;
    }
    const char* tuples = PQcmdTuples(res.get());
    int64_t changed = 0;
    std::from_chars(tuples, tuples + std::strlen(tuples), changed);
    conn_->changes_ = changed;
    result_ = std::move(res);
    row_ = 0;
    return PQntuples(result_.get()) > 0;
  }

  Connection* conn_;
  std::string text_;
  bool write_;
  std::vector<std::string> values_;
  std::vector<bool> is_null_;
  std::vector<Oid> types_;
  std::vector<int> formats_;
  Status bind_status_;
  Result result_;
  int row_ = 0;
};

// --- Connection --------------------------------------------------------------

void Connection::PgConnCloser::operator()(PGconn* c) const { PQfinish(c); }

Connection::Connection(std::unique_ptr<PGconn, PgConnCloser> conn)
    : conn_(std::move(conn)) {}

Connection::~Connection() {
  cache_.clear();  // results before the connection
}

namespace {
void IgnoreNotice(void*, const char*) {}
}  // namespace

StatusOr<std::unique_ptr<Connection>> Connection::Open(
    const std::string& conninfo, int connect_timeout_s) {
  if (conninfo.empty()) {
    return InvalidArgumentError("postgres: connection string is empty.");
  }
  // libpq's keyword arrays: the caller's string (a URI or keywords,
  // expanded by expand_dbname) plus defaults it does not set.
  std::string timeout = std::to_string(connect_timeout_s);
  const char* keys[] = {"dbname", "connect_timeout", "application_name",
                        nullptr};
  const char* values[] = {conninfo.c_str(), timeout.c_str(),
                          "dpuaudit-verifier", nullptr};
  std::unique_ptr<PGconn, PgConnCloser> pc(
      PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (pc == nullptr) {
    return UnavailableError("postgres: connecting to " +
                            RedactConnInfo(conninfo) + ": out of memory.");
  }
  if (PQstatus(pc.get()) != CONNECTION_OK) {
    std::string err = Trimmed(PQerrorMessage(pc.get()));
    std::string msg = "postgres: connecting to " + RedactConnInfo(conninfo) +
                      ": " + err + ".";
    if (err.find("password authentication failed") != std::string::npos ||
        err.find("no password supplied") != std::string::npos ||
        err.find("permission denied") != std::string::npos) {
      return PermissionDeniedError(std::move(msg));
    }
    return UnavailableError(std::move(msg));
  }
  PQsetNoticeProcessor(pc.get(), IgnoreNotice, nullptr);
  std::unique_ptr<Connection> c(new Connection(std::move(pc)));
  DPA_RETURN_IF_ERROR(c->Exec("SET synchronous_commit = on",
                              "setting synchronous_commit"));
  DPA_RETURN_IF_ERROR(
      c->Exec("SET client_min_messages = warning", "setting client_min_messages"));
  return c;
}

bool Connection::Broken() const {
  return PQstatus(conn_.get()) != CONNECTION_OK;
}

Status Connection::Exec(const char* sql, std::string_view what) {
  Result res(PQexec(conn_.get(), sql));
  ExecStatusType st =
      res != nullptr ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return ErrorStatus(what, conn_.get(), res.get());
  }
  return OkStatus();
}

Status Connection::ExecScript(const char* sql, std::string_view what) {
  // PQexec runs a multi-statement text as one implicit transaction (or
  // inside the caller's).
  return Exec(sql, what);
}

StatusOr<sql::StmtImpl*> Connection::PrepareImpl(const char* sql) {
  last_constraint_ = sql::Constraint::kNone;
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    int params = 0;
    std::string text = RewritePlaceholders(sql, &params);
    it = cache_
             .emplace(sql, std::make_unique<PgStmt>(this, std::move(text),
                                                    params, IsWrite(sql)))
             .first;
  }
  return it->second.get();
}

StatusOr<int64_t> Connection::LastInsertId(std::string_view what) {
  Result res(PQexec(conn_.get(), "SELECT lastval()"));
  if (res == nullptr || PQresultStatus(res.get()) != PGRES_TUPLES_OK ||
      PQntuples(res.get()) != 1) {
    return ErrorStatus(what, conn_.get(), res.get());
  }
  const char* v = PQgetvalue(res.get(), 0, 0);
  int64_t id = 0;
  std::from_chars(v, v + std::strlen(v), id);
  return id;
}

Status Connection::BeginWrite() {
  DPA_RETURN_IF_ERROR(Exec("BEGIN", "beginning transaction"));
  in_txn_ = true;
  Status s = Exec("SELECT pg_advisory_xact_lock(1146110295)",
                  "taking the write lock");
  if (!s.ok()) {
    RollbackWrite();
    return s;
  }
  return OkStatus();
}

Status Connection::CommitWrite() {
  Result res(PQexec(conn_.get(), "COMMIT"));
  ExecStatusType st =
      res != nullptr ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK) {
    return ErrorStatus("committing", conn_.get(), res.get());
  }
  in_txn_ = false;
  if (std::strcmp(PQcmdStatus(res.get()), "COMMIT") != 0) {
    return UnavailableError(
        "postgres: committing: the server rolled the transaction back.");
  }
  return OkStatus();
}

void Connection::RollbackWrite() {
  in_txn_ = false;
  if (PQstatus(conn_.get()) == CONNECTION_OK) {
    (void)Exec("ROLLBACK", "rolling back");
  }
}

static_assert(kWriteLockKey == 1146110295, "keep BeginWrite's key in sync");

}  // namespace dpuaudit::verifier::pg
