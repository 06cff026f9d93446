// One keep-alive HTTP(S) connection of the load generator: a libcurl easy
// handle reused for every request, so the TLS handshake is paid once per
// connection, not once per request (unlike apps/shared/http_client.h, which
// opens a handle per call).
//
// Guarantees: TLS peer and host verification are on for https (the CA file
// replaces the system store); redirects are not followed; response bodies
// are bounded (the transfer fails past the limit); every request has a
// total timeout. Plain http:// only to a loopback host. The handle is
// owned (RAII) and used by one thread at a time. CloseAfterNext() makes the
// next request the last one on its connection (Connection: close on our
// side, FORBID_REUSE), so the request after it opens a new connection: how
// the generator makes reconnects. connects() counts the connections opened.
// A reconnect resumes the TLS session: libcurl keeps the session (the
// server's ticket) in the handle, so the generator's reconnects cost what a
// real agent's do (HttpClient, the same way), not a full handshake each
// (tests/integration/loadgen_test.cc checks it in the verifier's /metrics).
// Does not: retry, or treat an HTTP error status as a transport error.
#ifndef DPUAUDIT_APPS_LOADGEN_CONNECTION_H_
#define DPUAUDIT_APPS_LOADGEN_CONNECTION_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace dpuaudit::apps::loadgen {

struct HttpResult {
  int curl_code = 0;         // CURLcode; 0 = the exchange completed
  std::string curl_message;  // when curl_code != 0
  long status = 0;           // HTTP status when curl_code == 0
  std::string body;
};

class Connection {
 public:
  struct Options {
    std::string ca_file;  // empty: system store
    std::chrono::milliseconds timeout{30000};
    size_t max_response_bytes = 1 << 20;
  };
  // base_url "https://host:port" (no path).
  static StatusOr<std::unique_ptr<Connection>> New(const std::string& base_url,
                                                   const Options& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // POST `body`; "Authorization: Bearer <bearer>" when bearer is non-empty.
  HttpResult Post(const std::string& path, const std::string& content_type,
                  const std::string& body, const std::string& bearer = "");
  void CloseAfterNext() { close_after_next_ = true; }
  int64_t connects() const { return connects_; }

 private:
  struct Handle;
  Connection(std::string base_url, Options options);
  std::string base_url_;
  Options options_;
  std::unique_ptr<Handle> handle_;
  bool close_after_next_ = false;
  int64_t connects_ = 0;
};

}  // namespace dpuaudit::apps::loadgen

#endif  // DPUAUDIT_APPS_LOADGEN_CONNECTION_H_
