#include "apps/verifier/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>

#include "apps/verifier/tls_credentials.h"

#include <spdlog/spdlog.h>

#include "common/crypto.h"
#include "common/bytes.h"

namespace dpuaudit::apps {

struct HttpServer::Impl {
  struct RouteEntry {
    std::string method;
    std::regex pattern;
    HttpHandler handler;
    std::string name;
  };
  // One per request: created by the URI log callback (which sees the raw
  // URI before libmicrohttpd decodes it), freed when the request completes.
  struct RequestState {
    std::string raw_uri;
    bool started = false;
    bool answered = false;  // a response was queued on the first call
    ServerRequest request;
  };

  HttpLimits limits;
  HttpErrorBody error_body;
  std::vector<RouteEntry> routes;
  HttpLogger logger;
  HttpMiddleware middleware;
  MHD_Daemon* daemon = nullptr;
  // Open connections (all threads), for the accept policy.
  std::atomic<unsigned> open_connections{0};
  // Requests begun (URI received) and not yet completed, for Drain().
  std::mutex in_flight_mu;
  std::condition_variable in_flight_cv;
  size_t in_flight = 0;
  bool quiesced = false;
  std::atomic<bool> quiescing{false};  // read by OnAccept on every thread
  // TLS: every credential set installed, the current one last. Superseded
  // ones stay alive until the server is destroyed: GnuTLS keeps pointers
  // to the certificate and key it was handed for the rest of a session.
  std::mutex tls_mu;
  std::vector<std::shared_ptr<const TlsCredentials>> tls;
  // Session tickets (set by Start before the daemon runs, then read-only):
  // null when tickets are off or the server is plain HTTP.
  std::unique_ptr<const TlsTicketKey> ticket_key;
  std::atomic<bool> ticket_warned{false};
  // HttpConnectionStats.
  std::atomic<uint64_t> connections{0};
  std::atomic<uint64_t> tls_full{0};
  std::atomic<uint64_t> tls_resumed{0};
};

namespace {
// One per connection (its socket context), from NOTIFY_STARTED to
// NOTIFY_CLOSED.
struct ConnectionState {
  HttpServer::Impl* impl;
  bool handshake_counted = false;  // touched only by the connection's thread
};

using Impl = HttpServer::Impl;
using RequestState = HttpServer::Impl::RequestState;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Printable ASCII only (for the access log: paths are attacker-chosen).
std::string Printable(std::string_view s, size_t max = 200) {
  std::string out;
  for (char ch : s.substr(0, max)) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

void* OnUri(void* cls, const char* uri, MHD_Connection*) {
  auto& impl = *static_cast<Impl*>(cls);
  {
    std::lock_guard<std::mutex> lock(impl.in_flight_mu);
    ++impl.in_flight;
  }
  auto* state = new RequestState();
  state->raw_uri = uri != nullptr ? uri : "";
  return state;
}

// Connections beyond max_connections are accepted and closed at once (the
// accept policy says no), rather than left waiting in the listen backlog.
MHD_Result OnAccept(void* cls, const sockaddr*, socklen_t) {
  auto& impl = *static_cast<Impl*>(cls);
  // Stopping (Quiesce): every new connection is closed at once, unanswered.
  if (impl.quiescing.load()) return MHD_NO;
  return impl.open_connections.load() >= impl.limits.max_connections ? MHD_NO : MHD_YES;
}

// Session tickets for one session, before its handshake. A failure costs
// only resumption (the handshake is then full), so it is logged once and the
// connection is served.
void EnableTickets(Impl& impl, MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  int rc = GNUTLS_E_INVALID_SESSION;
  if (info != nullptr && info->tls_session != nullptr) {
    auto session = static_cast<gnutls_session_t>(info->tls_session);
    rc = gnutls_session_ticket_enable_server(session, impl.ticket_key->datum());
    // The ticket lifetime; GnuTLS rotates the ticket encryption key every
    // 3 × this (lib/stek.c, STEK_ROTATION_PERIOD_PRODUCT).
    if (rc >= 0) {
      gnutls_db_set_cache_expiration(
          session, static_cast<int>(impl.limits.tls_ticket_lifetime_seconds));
    }
  }
  if (rc < 0 && !impl.ticket_warned.exchange(true)) {
    spdlog::warn("TLS session tickets could not be enabled on a connection ({}); its "
                 "handshake is full (logged once)",
                 gnutls_strerror(rc));
  }
}

void OnConnection(void* cls, MHD_Connection* c, void** socket_context,
                  MHD_ConnectionNotificationCode code) {
  auto& impl = *static_cast<Impl*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    // libmicrohttpd 0.9.75 calls this in new_connection_process_, after
    // new_connection_prepare_ made the GnuTLS session (gnutls_init,
    // priorities, credentials) and before the socket joins the epoll set,
    // so before the first gnutls_handshake: OnTlsRetrieve finds the server
    // here, and tickets enabled here apply to this handshake.
    // (No exception may cross this C callback: out of memory leaves the
    // context null, and OnTlsRetrieve then fails the handshake.)
    *socket_context = new (std::nothrow) ConnectionState{&impl};
    ++impl.open_connections;
    ++impl.connections;
    if (impl.ticket_key != nullptr) EnableTickets(impl, c);
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    // (The GnuTLS session is already gone here.)
    delete static_cast<ConnectionState*>(*socket_context);
    *socket_context = nullptr;
    --impl.open_connections;
  }
}

// At a connection's first request, its handshake is complete: count it as
// full or resumed.
void CountHandshake(Impl& impl, MHD_Connection* c) {
  const MHD_ConnectionInfo* ctx = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (ctx == nullptr || ctx->socket_context == nullptr) return;
  auto& conn = *static_cast<ConnectionState*>(ctx->socket_context);
  if (conn.handshake_counted) return;
  conn.handshake_counted = true;
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return;  // plain HTTP
  if (gnutls_session_is_resumed(static_cast<gnutls_session_t>(info->tls_session)) != 0) {
    ++impl.tls_resumed;
  } else {
    ++impl.tls_full;
  }
}

// Request line + header lines as sent ("Name: value\r\n" each).
size_t HeadBytes(const ServerRequest& req, const std::string& raw_uri, const char* version) {
  size_t n = req.method.size() + 1 + raw_uri.size() + 1 +
             std::strlen(version != nullptr ? version : "") + 2;
  for (const auto& [k, v] : req.headers) n += k.size() + 2 + v.size() + 2;
  return n + 2;
}

void OnCompleted(void* cls, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
  if (*con_cls == nullptr) return;
  delete static_cast<RequestState*>(*con_cls);
  *con_cls = nullptr;
  auto& impl = *static_cast<Impl*>(cls);
  std::lock_guard<std::mutex> lock(impl.in_flight_mu);
  --impl.in_flight;
  impl.in_flight_cv.notify_all();
}

// GnuTLS's certificate retrieve callback (gnutls_certificate_retrieve_
// function2, via MHD_OPTION_HTTPS_CERT_CALLBACK): the server's current
// credentials, read at each handshake. The session pointer is the
// MHD_Connection (libmicrohttpd sets it), whose socket context OnConnection
// set to the server. Anything missing: no certificate (the handshake fails).
int OnTlsRetrieve(gnutls_session_t session, const gnutls_datum_t*, int,
                  const gnutls_pk_algorithm_t*, int, gnutls_pcert_st** pcert,
                  unsigned int* pcert_length, gnutls_privkey_t* privkey) {
  *pcert_length = 0;
  auto* c = static_cast<MHD_Connection*>(gnutls_session_get_ptr(session));
  if (c == nullptr) return -1;
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (info == nullptr || info->socket_context == nullptr) return -1;
  auto& impl = *static_cast<ConnectionState*>(info->socket_context)->impl;
  std::lock_guard<std::mutex> lock(impl.tls_mu);
  if (impl.tls.empty()) return -1;
  const TlsCredentials& creds = *impl.tls.back();
  *pcert = creds.chain();
  *pcert_length = creds.chain_length();
  *privkey = creds.key();
  return 0;
}

void OnMhdLog(void*, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string msg(buf);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
  // Debug: under a flood of bad clients these would be one line each.
  spdlog::debug("http: {}", Printable(msg, 400));
}

MHD_Result CollectHeader(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(cls);
  if (key == nullptr) return MHD_YES;
  std::string k = Lower(key);
  std::string v = value != nullptr ? value : "";
  auto it = headers->find(k);
  if (it == headers->end()) {
    headers->emplace(std::move(k), std::move(v));
  } else {
    it->second += ", " + v;  // RFC 9110 §5.3 field-line combination
  }
  return MHD_YES;
}

MHD_Result CollectQuery(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* query = static_cast<std::map<std::string, std::string>*>(cls);
  if (key != nullptr) query->emplace(key, value != nullptr ? value : "");
  return MHD_YES;
}

MHD_Result Send(MHD_Connection* c, const ServerResponse& res) {
  MHD_Response* r = MHD_create_response_from_buffer(
      res.body.size(), const_cast<char*>(res.body.data()), MHD_RESPMEM_MUST_COPY);
  if (r == nullptr) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res.content_type.c_str());
  for (const auto& [k, v] : res.headers) MHD_add_response_header(r, k.c_str(), v.c_str());
  MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(res.status), r);
  MHD_destroy_response(r);
  return ok;
}

std::string RemoteOf(MHD_Connection* c) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

void Log(const Impl& impl, const ServerRequest& req, ServerResponse& res) {
  res.headers.emplace_back("X-Request-Id", req.request_id);
  if (impl.logger) impl.logger(req, res);
}

// 16 hex digits from the CSPRNG (a counter-based id if it ever fails).
std::string NewRequestId() {
  static std::atomic<uint64_t> fallback{0};
  auto bytes = RandomBytes(8);
  if (bytes.ok()) return HexEncode(*bytes);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(0xffff000000000000ull | ++fallback));
  return buf;
}

MHD_Result Refuse(Impl& impl, MHD_Connection* c, RequestState& st, int status,
                  const std::string& code, const std::string& message) {
  ServerResponse res;
  res.status = status;
  res.body = impl.error_body(code, message);
  st.answered = true;
  Log(impl, st.request, res);
  return Send(c, res);
}

MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* /*url (decoded)*/,
                     const char* method, const char* version, const char* upload_data,
                     size_t* upload_data_size, void** con_cls) {
  auto& impl = *static_cast<Impl*>(cls);
  auto* st = static_cast<RequestState*>(*con_cls);
  if (st == nullptr) return MHD_NO;  // the URI callback always runs first
  if (st->answered) {
    // The refusal is queued; drop whatever body still arrives.
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (!st->started) {
    st->started = true;
    CountHandshake(impl, c);
    ServerRequest& req = st->request;
    req.method = method != nullptr ? method : "";
    std::string_view raw = st->raw_uri;
    req.path = std::string(raw.substr(0, raw.find('?')));
    req.remote = RemoteOf(c);
    req.received = std::chrono::steady_clock::now();
    req.request_id = NewRequestId();
    MHD_get_connection_values(c, MHD_HEADER_KIND, &CollectHeader, &req.headers);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, &CollectQuery, &req.query);
    // libmicrohttpd's pool (max_header_bytes + slack) already bounds the
    // memory; this makes the limit exact.
    if (size_t head = HeadBytes(req, st->raw_uri, version);
        head > impl.limits.max_header_bytes) {
      return Refuse(impl, c, *st, 431, "header_fields_too_large",
                    "request line and headers of " + std::to_string(head) +
                        " bytes exceed the limit of " +
                        std::to_string(impl.limits.max_header_bytes) + " bytes.");
    }

    // Route first: nothing is read for an endpoint that does not exist.
    const Impl::RouteEntry* route = nullptr;
    bool path_known = false;
    std::smatch m;
    for (const auto& r : impl.routes) {
      if (!std::regex_match(req.path, m, r.pattern)) continue;
      path_known = true;
      if (r.method == req.method) {
        route = &r;
        break;
      }
    }
    if (route == nullptr) {
      if (path_known) {
        return Refuse(impl, c, *st, 405, "method_not_allowed",
                      "method " + Printable(req.method, 16) + " is not allowed on " +
                          Printable(req.path) + ".");
      }
      return Refuse(impl, c, *st, 404, "not_found", "no such endpoint.");
    }
    std::regex_match(req.path, m, route->pattern);
    for (const auto& g : m) req.matches.push_back(g.str());
    req.route = route->name;

    const std::string te = req.Header("transfer-encoding");
    const std::string cl = req.Header("content-length");
    if (!te.empty()) {
      return Refuse(impl, c, *st, 411, "length_required",
                    "Transfer-Encoding is not accepted; send the body with a "
                    "Content-Length.");
    }
    if (!cl.empty()) {
      // libmicrohttpd has validated it as a decimal number already.
      unsigned long long n = std::strtoull(cl.c_str(), nullptr, 10);
      if (n > impl.limits.max_body_bytes) {
        return Refuse(impl, c, *st, 413, "payload_too_large",
                      "request body of " + std::to_string(n) +
                          " bytes exceeds the limit of " +
                          std::to_string(impl.limits.max_body_bytes) +
                          " bytes; it was not read and not parsed.");
      }
      req.body.reserve(static_cast<size_t>(n));
    }
    return MHD_YES;
  }
  if (*upload_data_size > 0) {
    ServerRequest& req = st->request;
    if (req.body.size() + *upload_data_size > impl.limits.max_body_bytes) {
      // Cannot happen with a checked Content-Length; fail closed anyway.
      return MHD_NO;
    }
    req.body.append(upload_data, *upload_data_size);
    *upload_data_size = 0;
    return MHD_YES;
  }
  // Whole request received: dispatch.
  ServerResponse res;
  for (const auto& r : impl.routes) {
    if (r.method == st->request.method && std::regex_match(st->request.path, r.pattern)) {
      // A handler that throws is a verifier fault, never the client's: it
      // is logged and answered as kHandlerFaultStatus, so no input can
      // produce a 500 (or a dropped connection).
      bool threw = true;
      std::string fault = "an exception that is not a std::exception";
      try {
        if (impl.middleware) {
          impl.middleware(st->request, res, r.handler);
        } else {
          r.handler(st->request, res);
        }
        threw = false;
      } catch (const std::exception& e) {
        fault = e.what();
      } catch (...) {
      }
      if (threw) {
        spdlog::error("handler for {} {} threw: {}", st->request.method,
                      Printable(st->request.path), Printable(fault));
        res = ServerResponse{};
        res.status = kHandlerFaultStatus;
        res.body = impl.error_body(
            "internal",
            "the verifier could not complete this request (a fault in the "
            "verifier, logged; not an error in the request).");
      }
      break;
    }
  }
  st->answered = true;
  Log(impl, st->request, res);
  return Send(c, res);
}

StatusOr<std::vector<uint8_t>> ResolveAddress(const std::string& host, uint16_t port,
                                              int* family) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(),
                       &hints, &res);
  if (rc != 0 || res == nullptr) {
    return InvalidArgumentError("cannot resolve listen address \"" + host +
                                "\": " + gai_strerror(rc));
  }
  std::vector<uint8_t> addr(reinterpret_cast<uint8_t*>(res->ai_addr),
                            reinterpret_cast<uint8_t*>(res->ai_addr) + res->ai_addrlen);
  *family = res->ai_family;
  freeaddrinfo(res);
  return addr;
}

}  // namespace

std::string ServerRequest::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::optional<std::string> ServerRequest::Query(const std::string& name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

HttpServer::HttpServer(HttpLimits limits, HttpErrorBody error_body)
    : limits_(limits), impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->error_body = std::move(error_body);
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Route(std::string method, const std::string& pattern, HttpHandler handler) {
  Route(std::move(method), pattern, pattern, std::move(handler));
}

void HttpServer::Route(std::string method, const std::string& pattern, std::string name,
                       HttpHandler handler) {
  impl_->routes.push_back(Impl::RouteEntry{std::move(method), std::regex(pattern),
                                           std::move(handler), std::move(name)});
}

void HttpServer::SetLogger(HttpLogger logger) { impl_->logger = std::move(logger); }

void HttpServer::SetMiddleware(HttpMiddleware middleware) {
  impl_->middleware = std::move(middleware);
}

StatusOr<uint16_t> HttpServer::Start(const std::string& host, uint16_t port,
                                     const std::string& tls_cert_pem,
                                     const std::string& tls_key_pem) {
  if (impl_->daemon != nullptr) return FailedPreconditionError("server already started.");
  if (limits_.threads == 0 || limits_.max_connections == 0 ||
      limits_.max_connections_per_ip == 0 || limits_.request_timeout_seconds == 0 ||
      limits_.max_header_bytes < 1024) {
    return InvalidArgumentError(
        "HTTP limits: threads, connections and timeout must be positive and "
        "max_header_bytes at least 1024.");
  }
  if (limits_.tls_ticket_lifetime_seconds > kMaxTlsTicketLifetimeSeconds) {
    return InvalidArgumentError("TLS session ticket lifetime of " +
                                std::to_string(limits_.tls_ticket_lifetime_seconds) +
                                " s exceeds the limit of " +
                                std::to_string(kMaxTlsTicketLifetimeSeconds) + " s.");
  }
  int family = AF_INET;
  DPA_ASSIGN_OR_RETURN(std::vector<uint8_t> addr, ResolveAddress(host, port, &family));
  unsigned flags =
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_USE_ITC;
  if (family == AF_INET6) flags |= MHD_USE_IPv6;
  const bool tls = !tls_cert_pem.empty() && !tls_key_pem.empty();
  if (tls) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
      return UnimplementedError("this libmicrohttpd was built without TLS support.");
    }
    flags |= MHD_USE_TLS;
    DPA_RETURN_IF_ERROR(SetTlsCredentials(tls_cert_pem, tls_key_pem));
    if (limits_.tls_ticket_lifetime_seconds > 0) {
      DPA_ASSIGN_OR_RETURN(impl_->ticket_key, TlsTicketKey::Generate());
    }
  }
  std::vector<MHD_OptionItem> opts = {
      // First, so that libmicrohttpd's own messages go to our log too.
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&OnMhdLog), impl_.get()},
      {MHD_OPTION_SOCK_ADDR, 0, addr.data()},
      {MHD_OPTION_THREAD_POOL_SIZE, static_cast<intptr_t>(limits_.threads), nullptr},
      // Headroom over max_connections so that excess connections are
      // accepted and closed by OnAccept instead of queuing in the backlog.
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(limits_.max_connections + 64),
       nullptr},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&OnConnection), impl_.get()},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT,
       static_cast<intptr_t>(limits_.max_connections_per_ip), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(limits_.request_timeout_seconds),
       nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT,
       static_cast<intptr_t>(limits_.max_header_bytes + kPoolSlack), nullptr},
      {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, nullptr},
      {MHD_OPTION_URI_LOG_CALLBACK, reinterpret_cast<intptr_t>(&OnUri), impl_.get()},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&OnCompleted), impl_.get()},
  };
  if (tls) {
    opts.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0,
                    const_cast<char*>("NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2")});
  }
  opts.push_back({MHD_OPTION_END, 0, nullptr});
  // The certificate callback as a variadic option (its type is checked
  // against gnutls_certificate_retrieve_function2 here).
  gnutls_certificate_retrieve_function2* retrieve = &OnTlsRetrieve;
  impl_->daemon =
      tls ? MHD_start_daemon(flags, port, &OnAccept, impl_.get(), &OnRequest, impl_.get(),
                             MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_HTTPS_CERT_CALLBACK,
                             retrieve, MHD_OPTION_END)
          : MHD_start_daemon(flags, port, &OnAccept, impl_.get(), &OnRequest, impl_.get(),
                             MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
  if (impl_->daemon == nullptr) {
    return UnavailableError("cannot start the HTTP server on " + host + ":" +
                            std::to_string(port) +
                            " (address in use, bad TLS certificate or key, or limits "
                            "rejected; see the log above).");
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(impl_->daemon, MHD_DAEMON_INFO_BIND_PORT);
  if (info == nullptr) {
    Stop();
    return InternalError("cannot read the bound port.");
  }
  return static_cast<uint16_t>(info->port);
}

Status HttpServer::SetTlsCredentials(const std::string& cert_pem,
                                     const std::string& key_pem) {
  DPA_ASSIGN_OR_RETURN(std::shared_ptr<const TlsCredentials> creds,
                       TlsCredentials::FromPem(cert_pem, key_pem));
  std::lock_guard<std::mutex> lock(impl_->tls_mu);
  impl_->tls.push_back(std::move(creds));
  return OkStatus();
}

std::string HttpServer::TlsLeafSha256() const {
  std::lock_guard<std::mutex> lock(impl_->tls_mu);
  return impl_->tls.empty() ? "" : impl_->tls.back()->leaf_sha256();
}

HttpConnectionStats HttpServer::ConnectionStats() const {
  HttpConnectionStats st;
  st.connections = impl_->connections.load();
  st.tls_full_handshakes = impl_->tls_full.load();
  st.tls_resumed_handshakes = impl_->tls_resumed.load();
  return st;
}

void HttpServer::Quiesce() {
  if (!impl_ || impl_->daemon == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(impl_->in_flight_mu);
    if (impl_->quiesced) return;
    impl_->quiesced = true;
  }
  // New connections are accepted and closed at once by OnAccept, never
  // answered. (libmicrohttpd 0.9.75's MHD_quiesce_daemon races its epoll
  // worker threads and can abort the process: "Failed to remove listen FD
  // from epoll set"; so the listen socket stays with the daemon until Stop.)
  impl_->quiescing.store(true);
}

size_t HttpServer::Drain(std::chrono::milliseconds deadline) {
  if (!impl_) return 0;
  std::unique_lock<std::mutex> lock(impl_->in_flight_mu);
  impl_->in_flight_cv.wait_for(lock, deadline, [this] { return impl_->in_flight == 0; });
  return impl_->in_flight;
}

size_t HttpServer::InFlight() const {
  std::lock_guard<std::mutex> lock(impl_->in_flight_mu);
  return impl_->in_flight;
}

void HttpServer::Stop() {
  if (impl_ && impl_->daemon != nullptr) {
    MHD_stop_daemon(impl_->daemon);
    impl_->daemon = nullptr;
  }
}

}  // namespace dpuaudit::apps
