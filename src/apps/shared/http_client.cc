#include "apps/shared/http_client.h"

#include <curl/curl.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "apps/shared/loopback.h"
#include "common/bounded_buffer.h"

namespace dpuaudit::apps {
namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

struct HttpClient::Handle {
  std::mutex mu;
  std::unique_ptr<CURL, CurlDeleter> curl;
  int64_t connects = 0;
};

HttpClient::HttpClient(std::string base_url, HttpClientOptions options)
    : base_url_(std::move(base_url)),
      options_(std::move(options)),
      handle_(std::make_unique<Handle>()) {}

int64_t HttpClient::connects() const {
  std::lock_guard<std::mutex> lock(handle_->mu);
  return handle_->connects;
}

StatusOr<std::unique_ptr<HttpClient>> HttpClient::New(std::string base_url,
                                                      HttpClientOptions options) {
  if (base_url.rfind("http://", 0) != 0 && base_url.rfind("https://", 0) != 0) {
    return InvalidArgumentError("verifier URL \"" + base_url +
                                "\" must start with http:// or https://.");
  }
  while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  std::string host = UrlHost(base_url);
  if (host.empty()) {
    return InvalidArgumentError("verifier URL \"" + base_url + "\" has no host.");
  }
  if (base_url.rfind("http://", 0) == 0 && !options.insecure_http &&
      !IsLoopbackHost(host)) {
    return FailedPreconditionError(
        "refusing plain http:// to " + host +
        ", which is not a loopback address: bearer tokens and decisions would "
        "cross the network unprotected; use https:// (with --cacert), or "
        "--insecure-http to accept the risk.");
  }
  GlobalInit();
  return std::unique_ptr<HttpClient>(
      new HttpClient(std::move(base_url), std::move(options)));
}

HttpClient::~HttpClient() = default;

StatusOr<HttpResponse> HttpClient::Get(const std::string& path) const {
  return Perform("GET", path, nullptr, nullptr);
}

StatusOr<HttpResponse> HttpClient::Post(const std::string& path,
                                        const std::string& content_type,
                                        const std::string& body) const {
  return Perform("POST", path, &content_type, &body);
}

StatusOr<HttpResponse> HttpClient::PostWithBearer(const std::string& path,
                                                  const std::string& content_type,
                                                  const std::string& body,
                                                  const std::string& token) const {
  return Perform("POST", path, &content_type, &body, &token);
}

StatusOr<HttpResponse> HttpClient::GetWithBearer(const std::string& path,
                                                 const std::string& token) const {
  return Perform("GET", path, nullptr, nullptr, &token);
}

StatusOr<HttpResponse> HttpClient::Perform(const std::string& method,
                                           const std::string& path,
                                           const std::string* content_type,
                                           const std::string* body,
                                           const std::string* bearer) const {
  std::lock_guard<std::mutex> lock(handle_->mu);
  if (!handle_->curl) {
    handle_->curl.reset(curl_easy_init());
    if (!handle_->curl) return InternalError("curl_easy_init failed.");
  }
  CURL* c = handle_->curl.get();
  // Every option back to its default; the live connection and the TLS
  // session cache stay (so the next request can reuse or resume them).
  curl_easy_reset(c);
  std::string url = base_url_ + path;
  HttpResponse response;
  BoundedBuffer sink{&response.body, options_.max_response_bytes};
  char errbuf[CURL_ERROR_SIZE] = {0};
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  // The handle outlives this call: nothing of it may point at this call's
  // locals afterwards (errbuf, sink, headers, the body).
  struct Unhook {
    CURL* c;
    ~Unhook() {
      curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
      curl_easy_setopt(c, CURLOPT_WRITEDATA, nullptr);
      curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, nullptr);
    }
  } unhook{c};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_file.empty()) {
    curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, BoundedBuffer::Write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_slist* list = curl_slist_append(nullptr, "Accept: application/json");
  if (method == "POST") {
    std::string ct = "Content-Type: " + *content_type;
    list = curl_slist_append(list, ct.c_str());
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(body->size()));
  }
  std::string auth;
  if (bearer != nullptr && !bearer->empty()) {
    auth = "Authorization: Bearer " + *bearer;
    list = curl_slist_append(list, auth.c_str());
  }
  headers.reset(list);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  CURLcode rc = curl_easy_perform(c);
  long new_connects = 0;
  curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &new_connects);
  handle_->connects += new_connects;
  if (sink.overflow) {
    return ResourceExhaustedError(method + " " + url + ": response larger than " +
                                  std::to_string(options_.max_response_bytes) +
                                  " bytes.");
  }
  if (rc != CURLE_OK) {
    std::string msg = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    return UnavailableError(method + " " + url + ": " + msg + ".");
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  char* ct = nullptr;
  curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
  if (ct) response.content_type = ct;
  return response;
}

std::string JsonStr(const nlohmann::json& j, const std::string& key,
                    const std::string& fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

Status StatusFromHttpError(const HttpResponse& response) {
  std::string detail = response.body;
  auto j = nlohmann::json::parse(response.body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error") &&
      j["error"].is_object()) {
    const auto& e = j["error"];
    detail = JsonStr(e, "code", "error") + ": " + JsonStr(e, "message");
  }
  if (detail.size() > 500) detail = detail.substr(0, 500) + "...";
  std::string msg = "HTTP " + std::to_string(response.status) + " " + detail;
  if (response.status == 404) return NotFoundError(msg);
  if (response.status == 401) return UnauthenticatedError(msg);
  if (response.status == 403) return PermissionDeniedError(msg);
  if (response.status == 409) return FailedPreconditionError(msg);
  if (response.status == 410) return DeadlineExceededError(msg);
  if (response.status >= 500) return UnavailableError(msg);
  return InvalidArgumentError(msg);
}

}  // namespace dpuaudit::apps
