// Helpers for the adversarial integration tests (adversarial_test.cc):
//  - DbSnapshot: every row of every table of the verifier's SQLite file,
//    read through a separate read-only connection, so a test can assert
//    that a refused request changed nothing (or exactly what it changed);
//  - RawConn: a plain TCP client for what libcurl will not send (dot
//    segments, NUL bytes, half-sent heads, bodies that never end) and for
//    watching when the server closes a connection;
//  - SignRawJws / HmacSha256: JWS bytes exactly as an attacker writes them.
// Does not: speak TLS, follow redirects, or decode chunked responses (the
// verifier answers with Content-Length).
#ifndef DPUAUDIT_TESTS_INTEGRATION_ADVERSARIAL_UTIL_H_
#define DPUAUDIT_TESTS_INTEGRATION_ADVERSARIAL_UTIL_H_

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"

namespace dpuaudit::itest {

// --- SQLite snapshots ---------------------------------------------------------

struct DbTable {
  std::vector<std::string> columns;  // "rowid" first when the table has one
  // Rows in rowid order; each value rendered as "NULL", "i:<int>",
  // "r:<real>", "t:<text>" or "b:<hex>".
  std::vector<std::vector<std::string>> rows;
  bool operator==(const DbTable&) const = default;
};
using DbSnapshot = std::map<std::string, DbTable>;

inline std::string RenderValue(sqlite3_stmt* st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL:
      return "NULL";
    case SQLITE_INTEGER:
      return "i:" + std::to_string(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
      return "r:" + std::to_string(sqlite3_column_double(st, i));
    case SQLITE_TEXT: {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
      return "t:" + std::string(t, static_cast<size_t>(sqlite3_column_bytes(st, i)));
    }
    default: {
      const auto* b = static_cast<const uint8_t*>(sqlite3_column_blob(st, i));
      int n = sqlite3_column_bytes(st, i);
      return "b:" + HexEncode(ByteView(b, static_cast<size_t>(n)));
    }
  }
}

// Every table of the database at `path` (read-only; the verifier keeps
// running). On failure the snapshot holds one table "!error" with the
// message, so a comparison fails loudly instead of passing vacuously.
inline DbSnapshot SnapshotDb(const std::string& path) {
  DbSnapshot out;
  auto fail = [&out](const std::string& what) {
    out.clear();
    out["!error"].rows.push_back({what});
    return out;
  };
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    return fail("open " + path + ": " + msg);
  }
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
  sqlite3_busy_timeout(db.get(), 5000);
  auto query = [&](const std::string& sql, DbTable* table) -> std::string {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      return sqlite3_errmsg(db.get());
    }
    int n = sqlite3_column_count(st);
    table->columns.clear();
    for (int i = 0; i < n; ++i) table->columns.push_back(sqlite3_column_name(st, i));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < n; ++i) row.push_back(RenderValue(st, i));
      table->rows.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? "" : sqlite3_errmsg(db.get());
  };
  // One read transaction, so all tables come from the same state.
  sqlite3_exec(db.get(), "BEGIN", nullptr, nullptr, nullptr);
  DbTable names;
  if (std::string e = query("SELECT name FROM sqlite_master WHERE type = 'table' "
                            "ORDER BY name",
                            &names);
      !e.empty()) {
    return fail("list tables: " + e);
  }
  for (const auto& row : names.rows) {
    std::string name = row[0].substr(2);  // "t:"
    DbTable t;
    std::string e = query("SELECT rowid, * FROM \"" + name + "\" ORDER BY rowid", &t);
    if (!e.empty()) {  // WITHOUT ROWID: order by every column
      t = DbTable{};
      e = query("SELECT * FROM \"" + name + "\" ORDER BY 1, 2", &t);
    }
    if (!e.empty()) return fail("read " + name + ": " + e);
    out[name] = std::move(t);
  }
  sqlite3_exec(db.get(), "COMMIT", nullptr, nullptr, nullptr);
  return out;
}

// What changed in one table, matching rows on their first column (rowid).
struct TableDiff {
  std::vector<std::vector<std::string>> added, removed, changed_to;
  bool empty() const { return added.empty() && removed.empty() && changed_to.empty(); }
};

inline std::map<std::string, TableDiff> DiffDb(const DbSnapshot& before,
                                               const DbSnapshot& after) {
  std::map<std::string, TableDiff> out;
  auto keyed = [](const DbTable* t) {
    std::map<std::string, const std::vector<std::string>*> m;
    if (t != nullptr) {
      for (const auto& r : t->rows) m[r.empty() ? "" : r[0]] = &r;
    }
    return m;
  };
  std::map<std::string, bool> names;
  for (const auto& [n, t] : before) names[n] = true;
  for (const auto& [n, t] : after) names[n] = true;
  for (const auto& [name, unused] : names) {
    auto b = before.find(name);
    auto a = after.find(name);
    auto bm = keyed(b == before.end() ? nullptr : &b->second);
    auto am = keyed(a == after.end() ? nullptr : &a->second);
    TableDiff d;
    for (const auto& [k, row] : am) {
      auto it = bm.find(k);
      if (it == bm.end()) {
        d.added.push_back(*row);
      } else if (*it->second != *row) {
        d.changed_to.push_back(*row);
      }
    }
    for (const auto& [k, row] : bm) {
      if (!am.count(k)) d.removed.push_back(*row);
    }
    if (!d.empty()) out[name] = std::move(d);
  }
  return out;
}

// "reports: +1 -0 ~0; results: +1 -0 ~0" (for failure messages).
inline std::string DescribeDiff(const std::map<std::string, TableDiff>& diff) {
  std::string s;
  for (const auto& [name, d] : diff) {
    if (!s.empty()) s += "; ";
    s += name + ": +" + std::to_string(d.added.size()) + " -" +
         std::to_string(d.removed.size()) + " ~" + std::to_string(d.changed_to.size());
    for (const auto& r : d.added) {
      std::string row;
      for (const auto& v : r) row += (row.empty() ? "" : " | ") + v.substr(0, 120);
      s += "\n    + " + row;
    }
  }
  return s.empty() ? "(no change)" : s;
}

// The value of `column` in `row` of `table`, "" when there is no such column.
inline std::string Column(const DbTable& table, const std::vector<std::string>& row,
                          const std::string& column) {
  for (size_t i = 0; i < table.columns.size() && i < row.size(); ++i) {
    if (table.columns[i] == column) return row[i];
  }
  return "";
}

// --- Raw HTTP over TCP -----------------------------------------------------------

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// "http://127.0.0.1:8080" -> 8080 (0 if there is no port).
inline uint16_t PortOf(const std::string& url) {
  size_t colon = url.rfind(':');
  if (colon == std::string::npos) return 0;
  return static_cast<uint16_t>(std::stoi(url.substr(colon + 1)));
}

class RawConn {
 public:
  // A non-blocking connect from `source` to 127.0.0.1:`port`; nullptr when
  // it is refused or does not complete within `timeout_ms`.
  static std::unique_ptr<RawConn> Open(uint16_t port, const char* source = "127.0.0.1",
                                       int timeout_ms = 3000) {
    std::unique_ptr<RawConn> c(new RawConn(StartConnect(port, source)));
    if (c->fd_ < 0 || !c->WaitConnected(timeout_ms)) return nullptr;
    return c;
  }
  // The socket of a connect that is still in progress (for opening many
  // at once); -1 on failure.
  static int StartConnect(uint16_t port, const char* source) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &src.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
      ::close(fd);
      return -1;
    }
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0 &&
        errno != EINPROGRESS) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  explicit RawConn(int fd) : fd_(fd) {}
  ~RawConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  int fd() const { return fd_; }

  bool WaitConnected(int timeout_ms) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return false;
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0;
  }

  // Sends all of `data` within `timeout_ms`; false when the peer closed or
  // reset the connection, or the time ran out.
  bool Send(std::string_view data, int timeout_ms = 5000) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
      int left = MsLeft(deadline);
      if (left <= 0) return false;
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, left);
    }
    return true;
  }

  // Sends what fits into the socket now (no waiting); returns the bytes
  // sent, or -1 when the peer closed or reset the connection.
  ssize_t SendSome(std::string_view data) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) return n;
    return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
  }

  // Whether bytes (or EOF) can be read right now.
  bool Readable(int timeout_ms = 0) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) == 1;
  }

  // Reads one response (head and a Content-Length body, or everything up to
  // EOF). nullopt when no complete head arrived before `timeout_ms` or the
  // connection closed first; `received` then holds what did arrive.
  std::optional<RawResponse> ReadResponse(int timeout_ms, std::string* received = nullptr) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    bool eof = false;
    for (;;) {
      size_t head_end = buf_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        RawResponse r;
        if (!ParseHead(buf_.substr(0, head_end), &r)) break;
        size_t body_at = head_end + 4;
        auto cl = r.headers.find("content-length");
        if (cl != r.headers.end()) {
          size_t want = std::stoul(cl->second);
          if (buf_.size() - body_at >= want) {
            r.body = buf_.substr(body_at, want);
            buf_.erase(0, body_at + want);
            return r;
          }
        } else if (eof) {
          r.body = buf_.substr(body_at);
          buf_.clear();
          return r;
        }
      }
      if (eof) break;
      int left = MsLeft(deadline);
      if (left <= 0) break;
      eof = !ReadSome(left);
    }
    if (received != nullptr) *received = buf_;
    return std::nullopt;
  }

  // True when the server closes (EOF or reset) within `timeout_ms`; any
  // bytes that arrived first are appended to *received.
  bool WaitClosed(int timeout_ms, std::string* received = nullptr) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      int left = MsLeft(deadline);
      if (left <= 0) break;
      if (!ReadSome(left)) {
        if (received != nullptr) *received = buf_;
        return true;
      }
    }
    if (received != nullptr) *received = buf_;
    return false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static int MsLeft(Clock::time_point deadline) {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
               .count()));
  }
  // false on EOF or error; true when data arrived or the time ran out.
  bool ReadSome(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return true;
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buf_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    return false;
  }
  static bool ParseHead(const std::string& head, RawResponse* r) {
    size_t eol = head.find("\r\n");
    std::string status_line = head.substr(0, eol);
    if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) return false;
    r->status = std::atoi(status_line.c_str() + 9);
    size_t at = eol == std::string::npos ? head.size() : eol + 2;
    while (at < head.size()) {
      size_t end = head.find("\r\n", at);
      if (end == std::string::npos) end = head.size();
      std::string line = head.substr(at, end - at);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        r->headers[name] = value;
      }
      at = end + 2;
    }
    return true;
  }

  int fd_;
  std::string buf_;
};

// One request on a fresh connection; nullopt when nothing complete came back.
inline std::optional<RawResponse> RawRequest(uint16_t port, const std::string& request,
                                             int timeout_ms = 5000,
                                             const char* source = "127.0.0.1") {
  auto c = RawConn::Open(port, source, timeout_ms);
  if (!c || !c->Send(request, timeout_ms)) return std::nullopt;
  return c->ReadResponse(timeout_ms);
}

// --- JWS bytes as an attacker writes them -------------------------------------

// BASE64URL(header) "." BASE64URL(payload) "." BASE64URL(Sign(...)), the
// header text taken as is (duplicate keys, any alg).
inline std::string SignRawJws(std::string_view header, std::string_view payload,
                              const Signer& signer) {
  std::string input = Base64UrlEncode(AsBytes(header)) + "." + Base64UrlEncode(AsBytes(payload));
  auto sig = signer.Sign(AsBytes(input));
  return input + "." + (sig.ok() ? Base64UrlEncode(*sig) : std::string("signing-failed"));
}

inline Bytes Hmac(const EVP_MD* md, ByteView key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(md, key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return Bytes(out, out + len);
}

// The flattened JSON serialisation of a compact JWS, segments as they are
// (empty ones too).
inline std::string Flatten(const std::string& compact) {
  size_t a = compact.find('.');
  size_t b = compact.find('.', a + 1);
  auto q = [](std::string_view s) { return "\"" + std::string(s) + "\""; };
  return "{\"protected\":" + q(compact.substr(0, a)) +
         ",\"payload\":" + q(compact.substr(a + 1, b - a - 1)) +
         ",\"signature\":" + q(compact.substr(b + 1)) + "}";
}

}  // namespace dpuaudit::itest

#endif  // DPUAUDIT_TESTS_INTEGRATION_ADVERSARIAL_UTIL_H_
