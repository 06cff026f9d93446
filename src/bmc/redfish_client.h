// An HTTPS Redfish client for a DPU's BMC (docs/redfish.md), over libcurl.
// The verifier pulls the BMC's evidence itself; the agent on the Arm is not
// involved.
//
// Guarantees:
// - https only; redirects are never followed.
// - TLS in exactly one of two modes, chosen by the endpoint:
//   "ca": the certificate chain is verified against `ca_file` and the host
//         name against the certificate (a mismatch is an error, always);
//   "pinned-key": the server's SubjectPublicKeyInfo SHA-256 must equal
//         `pinned_key_sha256` (libcurl CURLOPT_PINNEDPUBLICKEY); chain,
//         dates and name are not checked, because the key is the identity
//         (real BMCs serve expired self-signed certificates). The mode is
//         reported with every collection.
//   An endpoint with neither, or both, is refused before any connection.
// - Authentication: HTTP basic, or a Redfish session (POST
//   SessionService/Sessions, X-Auth-Token, DELETE on destruction).
//   Credentials come from a file that must be mode 0600 or stricter and
//   owned by the caller; they are never put in an error, a log or a URL.
// - Every request has a connect timeout and a total timeout; transport
//   failures, 429 and 502/503/504 are retried `retries` times with
//   exponential backoff (base `backoff`, doubled each time, capped at 5 s);
//   other statuses are answered at once. A response body over
//   `max_response_bytes` is RESOURCE_EXHAUSTED and the transfer is cut.
// - Get() returns the body through redfish::ParseResource (strict JSON,
//   error bodies refused).
// Does not: verify what the BMC says (the appraisal does), share one client
// between threads (one per collection), or keep credentials after
// destruction beyond the session token's lifetime on the BMC.
#ifndef DPUAUDIT_BMC_REDFISH_CLIENT_H_
#define DPUAUDIT_BMC_REDFISH_CLIENT_H_

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dpuaudit::bmc {

struct BmcCredentials {
  std::string username;
  std::string password;
};

// {"username": "...", "password": "..."}; the file must not be readable or
// writable by group or others (PERMISSION_DENIED naming the mode).
StatusOr<BmcCredentials> LoadCredentialsFile(const std::string& path);

enum class BmcAuth { kBasic, kSession };

struct BmcEndpoint {
  std::string base_url;           // "https://192.0.2.10" or with ":port"
  std::string ca_file;            // "ca" mode
  std::string pinned_key_sha256;  // "pinned-key" mode: 64 hex digits
  BmcAuth auth = BmcAuth::kSession;
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds timeout{10000};
  int retries = 2;
  std::chrono::milliseconds backoff{200};
  size_t max_response_bytes = 1024 * 1024;
};

struct PostResult {
  long status = 0;
  std::string location;  // the Location header, if any
  nlohmann::json body;   // null when the body was empty
};

class RedfishClient {
 public:
  // Checks the endpoint, then logs in when the auth is a session.
  static StatusOr<std::unique_ptr<RedfishClient>> Connect(BmcEndpoint endpoint,
                                                          BmcCredentials credentials);
  ~RedfishClient();
  RedfishClient(const RedfishClient&) = delete;
  RedfishClient& operator=(const RedfishClient&) = delete;

  // GET `path` (absolute, "/redfish/v1/..."). A 2xx body as a JSON object;
  // 404 NOT_FOUND, 401/403 UNAUTHENTICATED/PERMISSION_DENIED, other non-2xx
  // UNAVAILABLE, each naming the path and status.
  StatusOr<nlohmann::json> Get(std::string_view path);
  // POST a JSON body; any 2xx is returned with its Location header.
  StatusOr<PostResult> Post(std::string_view path, const nlohmann::json& body);

  const std::string& tls_mode() const { return tls_mode_; }
  const std::string& base_url() const { return endpoint_.base_url; }
  // Requests sent, retries included (for the benchmark and tests).
  int requests() const { return requests_; }

 private:
  struct Response {
    long status = 0;
    std::string body;
    std::string location;
    std::string auth_token;
  };
  RedfishClient(BmcEndpoint endpoint, BmcCredentials credentials);
  StatusOr<Response> Perform(const std::string& method, std::string_view path,
                             const std::string* body);
  StatusOr<Response> PerformOnce(const std::string& method, std::string_view path,
                                 const std::string* body);
  Status Login();

  BmcEndpoint endpoint_;
  BmcCredentials credentials_;
  std::string tls_mode_;
  std::string pin_;  // "sha256//<base64>"
  std::string session_token_;
  std::string session_uri_;
  int requests_ = 0;
  void* curl_ = nullptr;  // one handle: keep-alive across requests
};

}  // namespace dpuaudit::bmc

#endif  // DPUAUDIT_BMC_REDFISH_CLIENT_H_
