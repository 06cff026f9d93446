// A small HTTP(S) client over libcurl for the agent and the CLI.
//
// Guarantees: TLS peer and host verification are always on for https (an
// optional CA file replaces the system store); redirects are not followed;
// response bodies are bounded (RESOURCE_EXHAUSTED past the limit); every
// call has a total timeout. Transport failures are UNAVAILABLE with curl's
// message. HTTP error statuses are returned as responses, not errors.
// Plain http:// is accepted only to a loopback host (IsLoopbackHost) unless
// the caller opts in with HttpClientOptions.insecure_http: New() refuses it
// (FAILED_PRECONDITION) before any connection, so bearer tokens never cross
// a network in clear by default.
//
// Connections: one libcurl easy handle per HttpClient, reused for every
// call, so consecutive requests (an agent's challenge and its report, and
// the rounds of `run`) share one keep-alive connection; when the server
// has closed it (idle timeout, restart) the next call opens a new one
// transparently, resuming the TLS session from the ticket curl kept in the
// handle when the server still accepts it. Every option (CA, peer and host
// verification, no redirects, protocols, timeout, body limit) is set again
// on each call (curl_easy_reset keeps only the connection and the TLS
// session cache). Calls are serialised (a mutex): one request at a time per
// HttpClient.
#ifndef DPUAUDIT_APPS_SHARED_HTTP_CLIENT_H_
#define DPUAUDIT_APPS_SHARED_HTTP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "apps/shared/loopback.h"
#include "common/status.h"

namespace dpuaudit::apps {

struct HttpClientOptions {
  std::string ca_file;  // PEM bundle for https; empty = system store
  std::chrono::milliseconds timeout{15000};
  size_t max_response_bytes = 4 << 20;
  // Allow http:// to a non-loopback host (`--insecure-http`).
  bool insecure_http = false;
};

struct HttpResponse {
  long status = 0;
  std::string content_type;
  std::string body;
};

class HttpClient {
 public:
  // base_url like "http://127.0.0.1:8080" (no trailing path).
  static StatusOr<std::unique_ptr<HttpClient>> New(std::string base_url,
                                                   HttpClientOptions options);
  ~HttpClient();
  StatusOr<HttpResponse> Get(const std::string& path) const;
  StatusOr<HttpResponse> Post(const std::string& path,
                              const std::string& content_type,
                              const std::string& body) const;
  // POST with "Authorization: Bearer <token>" (omitted when token is empty).
  StatusOr<HttpResponse> PostWithBearer(const std::string& path,
                                        const std::string& content_type,
                                        const std::string& body,
                                        const std::string& token) const;
  // GET with "Authorization: Bearer <token>" (omitted when token is empty).
  StatusOr<HttpResponse> GetWithBearer(const std::string& path,
                                       const std::string& token) const;
  const std::string& base_url() const { return base_url_; }
  // Connections opened so far (CURLINFO_NUM_CONNECTS summed over the calls).
  int64_t connects() const;

 private:
  struct Handle;
  HttpClient(std::string base_url, HttpClientOptions options);
  StatusOr<HttpResponse> Perform(const std::string& method,
                                 const std::string& path,
                                 const std::string* content_type,
                                 const std::string* body,
                                 const std::string* bearer = nullptr) const;
  std::string base_url_;
  HttpClientOptions options_;
  std::unique_ptr<Handle> handle_;  // its mutex serialises Perform
};

// Turns a non-2xx response with our JSON error body into a Status whose
// message is "HTTP 409 nonce_replayed: nonce already used." (or the raw body).
Status StatusFromHttpError(const HttpResponse& response);

// j[key] if j is an object whose `key` member is a string, else `fallback`:
// never throws, whatever the verifier (or a proxy in front of it) answered.
std::string JsonStr(const nlohmann::json& j, const std::string& key,
                    const std::string& fallback = "");

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_HTTP_CLIENT_H_
