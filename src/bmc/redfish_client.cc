// Redfish over HTTPS to a BMC (redfish_client.h).
#include "bmc/redfish_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <thread>
#include <utility>

#include "common/bounded_buffer.h"
#include "common/bytes.h"
#include "common/files.h"
#include "common/strict_json.h"
#include "redfish/resources.h"

namespace dpuaudit::bmc {
namespace {

using nlohmann::json;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Headers {
  std::string location;
  std::string auth_token;
};

// Case-insensitive "Name:" prefix.
bool HeaderIs(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) !=
        std::tolower(static_cast<unsigned char>(name[i]))) {
      return false;
    }
  }
  return true;
}

std::string HeaderValue(std::string_view line, size_t name_size) {
  std::string_view v = line.substr(name_size + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) {
    v.remove_suffix(1);
  }
  return std::string(v.substr(0, 2048));
}

size_t HeaderCallback(char* data, size_t size, size_t n, void* user) {
  auto* h = static_cast<Headers*>(user);
  const std::string_view line(data, size * n);
  if (HeaderIs(line, "Location")) h->location = HeaderValue(line, 8);
  if (HeaderIs(line, "X-Auth-Token")) h->auth_token = HeaderValue(line, 12);
  return size * n;
}

struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

bool IsHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool Retryable(long status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

Status StatusForHttp(long status, const std::string& what) {
  const std::string msg = what + " answered HTTP " + std::to_string(status) + ".";
  if (status == 404) return NotFoundError(msg);
  if (status == 401) return UnauthenticatedError(msg + " The BMC refused the credentials.");
  if (status == 403) return PermissionDeniedError(msg);
  return UnavailableError(msg);
}

// Only "/..." paths without a scheme or authority: a BMC's Location header
// or link must not send our credentials to another host.
Status CheckPath(std::string_view path) {
  if (path.empty() || path.front() != '/' || path.find("//") == 0 ||
      path.find_first_of(" \r\n\t") != std::string_view::npos || path.size() > 1024) {
    return InvalidArgumentError("Redfish path " + strict_json::Quote(path) +
                                " is not an absolute path on the BMC.");
  }
  return OkStatus();
}

}  // namespace

StatusOr<BmcCredentials> LoadCredentialsFile(const std::string& path) {
  DPA_ASSIGN_OR_RETURN(Bytes raw, ReadPrivateFile(path, 4096, "BMC credentials file"));
  auto j = strict_json::ParseStrictJson(raw, "BMC credentials file " + path);
  if (!j.ok()) {
    // The parser quotes part of the text; the text is a secret.
    return InvalidArgumentError("BMC credentials file " + path +
                                " is not a JSON object {\"username\", \"password\"}.");
  }
  DPA_ASSIGN_OR_RETURN(strict_json::ObjectReader r,
                       strict_json::ObjectReader::New(*j, "BMC credentials file"));
  BmcCredentials c;
  auto user = r.String("username");
  auto pass = r.String("password");
  if (!user.ok() || !pass.ok() || !r.Finish().ok() || user->empty()) {
    return InvalidArgumentError("BMC credentials file " + path +
                                " must hold exactly a non-empty \"username\" and a "
                                "\"password\" string.");
  }
  c.username = *user;
  c.password = *pass;
  return c;
}

RedfishClient::RedfishClient(BmcEndpoint endpoint, BmcCredentials credentials)
    : endpoint_(std::move(endpoint)), credentials_(std::move(credentials)) {}

StatusOr<std::unique_ptr<RedfishClient>> RedfishClient::Connect(
    BmcEndpoint endpoint, BmcCredentials credentials) {
  if (endpoint.base_url.rfind("https://", 0) != 0 ||
      endpoint.base_url.find_first_of("/?#@", 8) != std::string::npos ||
      endpoint.base_url.size() <= 8) {
    return InvalidArgumentError("BMC URL " + strict_json::Quote(endpoint.base_url) +
                                " must be https://host[:port] with no path or user.");
  }
  const bool ca = !endpoint.ca_file.empty();
  const bool pin = !endpoint.pinned_key_sha256.empty();
  if (ca == pin) {
    return InvalidArgumentError("BMC " + endpoint.base_url +
                                ": give exactly one of a CA file or a pinned key.");
  }
  std::unique_ptr<RedfishClient> c(new RedfishClient(std::move(endpoint),
                                                     std::move(credentials)));
  if (pin) {
    if (!IsHex64(c->endpoint_.pinned_key_sha256)) {
      return InvalidArgumentError("BMC pinned key must be 64 lower-case hex digits "
                                  "(SHA-256 of its SubjectPublicKeyInfo).");
    }
    c->tls_mode_ = "pinned-key";
    c->pin_ = "sha256//" + Base64Encode(*HexDecode(c->endpoint_.pinned_key_sha256));
  } else {
    c->tls_mode_ = "ca";
  }
  GlobalInit();
  c->curl_ = curl_easy_init();
  if (c->curl_ == nullptr) return InternalError("curl_easy_init failed.");
  if (c->endpoint_.auth == BmcAuth::kSession) DPA_RETURN_IF_ERROR(c->Login());
  return c;
}

RedfishClient::~RedfishClient() {
  if (curl_ != nullptr && !session_uri_.empty()) {
    (void)PerformOnce("DELETE", session_uri_, nullptr);
  }
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
  std::fill(credentials_.password.begin(), credentials_.password.end(), '\0');
  std::fill(session_token_.begin(), session_token_.end(), '\0');
}

Status RedfishClient::Login() {
  const json body = {{"UserName", credentials_.username},
                     {"Password", credentials_.password}};
  const std::string text = body.dump();
  DPA_ASSIGN_OR_RETURN(Response r,
                       Perform("POST", "/redfish/v1/SessionService/Sessions", &text));
  if (r.status == 401 || r.status == 403) {
    return UnauthenticatedError("BMC " + endpoint_.base_url +
                                " refused the session login (HTTP " +
                                std::to_string(r.status) + ").");
  }
  if (r.status < 200 || r.status > 299 || r.auth_token.empty()) {
    return UnavailableError("BMC " + endpoint_.base_url +
                            " session login answered HTTP " + std::to_string(r.status) +
                            (r.auth_token.empty() ? " without an X-Auth-Token." : "."));
  }
  session_token_ = r.auth_token;
  if (CheckPath(r.location).ok()) session_uri_ = r.location;
  return OkStatus();
}

StatusOr<RedfishClient::Response> RedfishClient::Perform(const std::string& method,
                                                        std::string_view path,
                                                        const std::string* body) {
  DPA_RETURN_IF_ERROR(CheckPath(path));
  std::chrono::milliseconds wait = endpoint_.backoff;
  for (int attempt = 0;; ++attempt) {
    StatusOr<Response> r = PerformOnce(method, path, body);
    const bool transient =
        (!r.ok() && (r.status().code() == StatusCode::kUnavailable ||
                     r.status().code() == StatusCode::kDeadlineExceeded)) ||
        (r.ok() && Retryable(r->status));
    if (!transient || attempt >= endpoint_.retries) return r;
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(5000));
  }
}

StatusOr<RedfishClient::Response> RedfishClient::PerformOnce(const std::string& method,
                                                            std::string_view path,
                                                            const std::string* body) {
  ++requests_;
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  const std::string url = endpoint_.base_url + std::string(path);
  const std::string what = method + " " + url;
  Response response;
  BoundedBuffer sink{&response.body, endpoint_.max_response_bytes};
  Headers headers;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(endpoint_.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(endpoint_.timeout.count()));
  if (tls_mode_ == "ca") {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_CAINFO, endpoint_.ca_file.c_str());
  } else {
    // The pin is the identity; libcurl checks it on every connection.
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(c, CURLOPT_PINNEDPUBLICKEY, pin_.c_str());
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, BoundedBuffer::Write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, HeaderCallback);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &headers);
  curl_slist* list = curl_slist_append(nullptr, "Accept: application/json");
  std::string token_header;
  if (!session_token_.empty()) {
    token_header = "X-Auth-Token: " + session_token_;
    list = curl_slist_append(list, token_header.c_str());
  } else if (endpoint_.auth == BmcAuth::kBasic) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(c, CURLOPT_USERNAME, credentials_.username.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, credentials_.password.c_str());
  }
  if (body != nullptr) {
    list = curl_slist_append(list, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  if (method != "GET" && method != "POST") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  std::unique_ptr<curl_slist, SlistFree> owned(list);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  const CURLcode rc = curl_easy_perform(c);
  std::fill(token_header.begin(), token_header.end(), '\0');
  if (sink.overflow) {
    return ResourceExhaustedError(what + ": response larger than " +
                                  std::to_string(endpoint_.max_response_bytes) + " bytes.");
  }
  if (rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH) {
    return UnauthenticatedError(what + ": the BMC's TLS key is not the pinned key.");
  }
  if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
    return UnauthenticatedError(what + ": TLS verification failed: " +
                                std::string(errbuf[0] ? errbuf : curl_easy_strerror(rc)) + ".");
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return DeadlineExceededError(what + ": timed out: " +
                                 std::string(errbuf[0] ? errbuf : curl_easy_strerror(rc)) + ".");
  }
  if (rc != CURLE_OK) {
    return UnavailableError(what + ": " +
                            std::string(errbuf[0] ? errbuf : curl_easy_strerror(rc)) + ".");
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  // An absolute Location on this BMC becomes its path; one on another host
  // stays absolute, so CheckPath refuses to follow it.
  response.location = headers.location;
  if (response.location.rfind(endpoint_.base_url + "/", 0) == 0) {
    response.location = response.location.substr(endpoint_.base_url.size());
  }
  response.auth_token = headers.auth_token;
  return response;
}

StatusOr<json> RedfishClient::Get(std::string_view path) {
  DPA_ASSIGN_OR_RETURN(Response r, Perform("GET", path, nullptr));
  const std::string what = "GET " + std::string(path);
  if (r.status < 200 || r.status > 299) return StatusForHttp(r.status, what);
  return redfish::ParseResource(r.body, path);
}

StatusOr<PostResult> RedfishClient::Post(std::string_view path, const json& body) {
  const std::string text = body.dump();
  DPA_ASSIGN_OR_RETURN(Response r, Perform("POST", path, &text));
  const std::string what = "POST " + std::string(path);
  if (r.status < 200 || r.status > 299) return StatusForHttp(r.status, what);
  PostResult out;
  out.status = r.status;
  out.location = r.location;
  if (!r.body.empty()) {
    DPA_ASSIGN_OR_RETURN(out.body, redfish::ParseResource(r.body, path));
  }
  return out;
}

}  // namespace dpuaudit::bmc
