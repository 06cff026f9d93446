#include "apps/loadgen/connection.h"

#include <curl/curl.h>

#include <mutex>

#include "apps/shared/loopback.h"
#include "common/bounded_buffer.h"

namespace dpuaudit::apps::loadgen {

struct Connection::Handle {
  struct CurlDeleter {
    void operator()(CURL* c) const { curl_easy_cleanup(c); }
  };
  struct SlistDeleter {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
  };
  std::unique_ptr<CURL, CurlDeleter> curl;
};

Connection::Connection(std::string base_url, Options options)
    : base_url_(std::move(base_url)), options_(std::move(options)) {}

Connection::~Connection() = default;

StatusOr<std::unique_ptr<Connection>> Connection::New(const std::string& base_url,
                                                      const Options& options) {
  std::string url = base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return InvalidArgumentError("verifier URL \"" + url +
                                "\" must start with http:// or https://.");
  }
  const std::string host = UrlHost(url);
  if (host.empty()) return InvalidArgumentError("verifier URL \"" + url + "\" has no host.");
  if (url.rfind("http://", 0) == 0 && !IsLoopbackHost(host)) {
    return FailedPreconditionError("refusing plain http:// to " + host +
                                   ", which is not a loopback address; use https://.");
  }
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<Connection> c(new Connection(url, options));
  c->handle_ = std::make_unique<Handle>();
  c->handle_->curl.reset(curl_easy_init());
  if (!c->handle_->curl) return InternalError("curl_easy_init failed.");
  CURL* h = c->handle_->curl.get();
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_MAXCONNECTS, 1L);  // one connection per handle
  if (!options.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options.ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, BoundedBuffer::Write);
  return c;
}

HttpResult Connection::Post(const std::string& path, const std::string& content_type,
                            const std::string& body, const std::string& bearer) {
  HttpResult r;
  CURL* h = handle_->curl.get();
  const std::string url = base_url_ + path;
  BoundedBuffer sink{&r.body, options_.max_response_bytes};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_slist* list = curl_slist_append(nullptr, "Accept: application/json");
  const std::string ct = "Content-Type: " + content_type;
  list = curl_slist_append(list, ct.c_str());
  std::string auth;
  if (!bearer.empty()) {
    auth = "Authorization: Bearer " + bearer;
    list = curl_slist_append(list, auth.c_str());
  }
  const bool closing = close_after_next_;
  if (closing) list = curl_slist_append(list, "Connection: close");
  std::unique_ptr<curl_slist, Handle::SlistDeleter> headers(list);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_FORBID_REUSE, closing ? 1L : 0L);
  close_after_next_ = false;
  const CURLcode rc = curl_easy_perform(h);
  long new_connects = 0;
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &new_connects);
  connects_ += new_connects;
  // The handle keeps no pointer into this call's locals.
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, nullptr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, nullptr);
  if (sink.overflow) {
    r.curl_code = CURLE_WRITE_ERROR;
    r.curl_message = "response larger than " + std::to_string(options_.max_response_bytes) +
                     " bytes";
    return r;
  }
  if (rc != CURLE_OK) {
    r.curl_code = static_cast<int>(rc);
    r.curl_message = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    return r;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

}  // namespace dpuaudit::apps::loadgen
