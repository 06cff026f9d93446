// HttpServer: the verifier's HTTP(S) front door, on GNU libmicrohttpd.
//
// Why libmicrohttpd: it is event-driven (a fixed pool of threads, each with
// its own epoll loop), so an idle, half-open or slow ("slowloris")
// connection costs a connection slot and a bounded memory pool, never a
// thread; and it enforces the limits below itself, before any of our code
// runs. (cpp-httplib 0.11, which the verifier used before, parks one worker
// thread per connection until its read timeout: eight idle sockets stalled
// the whole verifier.)
//
// Guarantees, per HttpLimits:
//  - max_connections / max_connections_per_ip: connections beyond either are
//    accepted and closed at once, without a response.
//  - request_timeout_seconds: a connection idle for that long (no byte
//    received or sent) is closed.
//  - max_header_bytes: a request line + headers larger than this is answered
//    431 header_fields_too_large before any handler runs; they live in a
//    per-connection memory pool of max_header_bytes + kPoolSlack bytes, and
//    a head that does not even fit there is answered 431 (or 414 for an
//    over-long request line) by libmicrohttpd itself.
//  - max_body_bytes: a body whose Content-Length exceeds it is answered 413
//    before a byte of it is read (the connection is then closed); a body
//    without Content-Length (chunked) is refused with 411. So memory per
//    request is bounded by max_header_bytes + kPoolSlack + max_body_bytes.
//  - A handler that throws is answered kHandlerFaultStatus (503) with the
//    JSON error code "internal" and the exception logged: a fault in the
//    verifier is never a 500 and never a dropped connection.
//  - Routing is on the raw request path (before percent-decoding): routes
//    are anchored regular expressions over [A-Za-z0-9._~:+-] segments, so an
//    encoded byte ("%2e%2e%2f", "%00") never matches a route (404) and is
//    never decoded into a node id.
//  - Lifecycle: after Quiesce() every new connection is closed at once,
//    unanswered, while connections already open keep being served;
//    Drain() waits for requests in flight (request line received, response
//    not yet fully sent) to complete; Stop() then closes everything.
//  - TLS: the certificate is handed to GnuTLS at each handshake
//    (MHD_OPTION_HTTPS_CERT_CALLBACK), so SetTlsCredentials() while serving
//    changes what new connections are served; connections already
//    established keep the certificate they negotiated.
//  - TLS session resumption: session tickets (RFC 5077 for TLS 1.2, RFC 8446
//    §4.6.1 for TLS 1.3), enabled on every connection before its handshake
//    (in the MHD_CONNECTION_NOTIFY_STARTED callback, which libmicrohttpd
//    0.9.75 runs after gnutls_init and before the first gnutls_handshake).
//    The ticket master key is 64 random bytes from
//    gnutls_session_ticket_key_generate at Start, held only in this
//    process's memory (never logged or written; zeroed with gnutls_memset
//    and freed on destruction), so a ticket resumes only at the server
//    instance that issued it, and a restart invalidates every ticket (the
//    client then makes a full handshake). GnuTLS derives the key that
//    actually encrypts tickets from it and rotates it every
//    3 × tls_ticket_lifetime_seconds, accepting the current and the
//    previous one (lib/stek.c); a ticket is refused once it is older than
//    tls_ticket_lifetime_seconds (TLS 1.2: by the issue time inside it;
//    TLS 1.3: by the age the client reports), and a resumed session never
//    extends the lifetime of the full handshake it came from. 0 disables
//    tickets. TLS 1.3 early data (0-RTT) stays off: libmicrohttpd enables
//    it only with MHD_USE_INSECURE_TLS_EARLY_DATA, which is never set.
// Handlers run on the pool threads, concurrently; they must be thread-safe.
// Does not: limit request rate (the service does, per node), or bound the
// total duration of a connection that keeps sending (only its idle time).
#ifndef DPUAUDIT_APPS_VERIFIER_HTTP_SERVER_H_
#define DPUAUDIT_APPS_VERIFIER_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dpuaudit::apps {

struct HttpLimits {
  size_t max_body_bytes = 4 << 20;
  size_t max_header_bytes = 16 << 10;
  unsigned request_timeout_seconds = 10;
  unsigned max_connections = 512;
  unsigned max_connections_per_ip = 128;
  unsigned threads = 4;
  // How long a TLS session ticket resumes (0: no tickets, every handshake
  // full); at most kMaxTlsTicketLifetimeSeconds.
  unsigned tls_ticket_lifetime_seconds = 3600;
};

inline constexpr unsigned kMaxTlsTicketLifetimeSeconds = 86400;

// Counters since Start (all threads).
struct HttpConnectionStats {
  uint64_t connections = 0;             // accepted and served (not refused)
  // TLS handshakes, counted at the first request of a connection (a
  // handshake that completes but is never followed by a request is not
  // counted): full, and resumed from a session ticket.
  uint64_t tls_full_handshakes = 0;
  uint64_t tls_resumed_handshakes = 0;
};

// The status of a request whose handler threw.
inline constexpr int kHandlerFaultStatus = 503;

// Bytes of the per-connection pool beyond max_header_bytes, for
// libmicrohttpd's own read and write buffers.
inline constexpr size_t kPoolSlack = 8 << 10;

struct ServerRequest {
  std::string method;
  std::string path;                            // raw, as received
  std::map<std::string, std::string> headers;  // lower-case names
  std::map<std::string, std::string> query;    // decoded by libmicrohttpd
  std::string body;
  std::vector<std::string> matches;  // regex groups of the route, [0] = path
  std::string remote;                // "ip:port"
  // The matched route's name (its pattern with parameters as {name}, e.g.
  // "/v1/nodes/{id}/admission"), or "other" when no route matched.
  std::string route = "other";
  // 16 random hex digits, unique per request; also the X-Request-Id
  // response header.
  std::string request_id;
  std::chrono::steady_clock::time_point received{};  // head fully read

  std::string Header(const std::string& lower_name) const;
  std::optional<std::string> Query(const std::string& name) const;
};

struct ServerResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // For the access log only (never sent): what the handler learned, "" when
  // nothing (set by routes.cc after a report, admission or challenge).
  std::string node_id;
  std::string decision;
};

using HttpHandler = std::function<void(const ServerRequest&, ServerResponse&)>;
using HttpLogger = std::function<void(const ServerRequest&, const ServerResponse&)>;
// Runs around every matched route's handler (it must call `next`), e.g. to
// set a per-request context.
using HttpMiddleware =
    std::function<void(const ServerRequest&, ServerResponse&, const HttpHandler& next)>;
// The JSON error body for a refusal the server makes itself (404, 405, 411,
// 413): (code, message) -> body.
using HttpErrorBody = std::function<std::string(const std::string&, const std::string&)>;

class HttpServer {
 public:
  HttpServer(HttpLimits limits, HttpErrorBody error_body);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Before Start only. `pattern` must match the whole raw path; `name` is
  // ServerRequest::route (without it: the pattern itself).
  void Route(std::string method, const std::string& pattern, HttpHandler handler);
  void Route(std::string method, const std::string& pattern, std::string name,
             HttpHandler handler);
  // The logger runs once per request with a response (matched or refused
  // by the server itself), after the handler.
  void SetLogger(HttpLogger logger);
  void SetMiddleware(HttpMiddleware middleware);

  // Binds host:port (port 0: any free port; host a numeric IPv4/IPv6
  // address or a name) and serves on the thread pool. TLS when both PEM
  // strings are non-empty. Returns the bound port.
  StatusOr<uint16_t> Start(const std::string& host, uint16_t port,
                           const std::string& tls_cert_pem = "",
                           const std::string& tls_key_pem = "");
  // Stops accepting, finishes in-flight handlers, closes every connection.
  void Stop();

  // Graceful shutdown, part 1: stop accepting at once (idempotent).
  void Quiesce();
  // Part 2: waits up to `deadline` for the requests in flight to complete;
  // returns how many are still in flight (0: all answered).
  size_t Drain(std::chrono::milliseconds deadline);
  size_t InFlight() const;

  // Parses and validates (TlsCredentials::FromPem) a PEM certificate chain
  // and key and makes them the ones served from the next handshake on; on
  // any error nothing changes. Before or after Start (Start calls it).
  Status SetTlsCredentials(const std::string& cert_pem, const std::string& key_pem);
  // SHA-256 of the served leaf certificate (hex), "" without TLS.
  std::string TlsLeafSha256() const;
  HttpConnectionStats ConnectionStats() const;

  const HttpLimits& limits() const { return limits_; }

  // Internal (libmicrohttpd callbacks).
  struct Impl;

 private:
  HttpLimits limits_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_HTTP_SERVER_H_
