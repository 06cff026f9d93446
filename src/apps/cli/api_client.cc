#include "apps/cli/api_client.h"

#include <iostream>

#include "apps/shared/exit_code.h"
#include "apps/shared/http_client.h"
#include "apps/shared/token_file.h"

namespace dpuaudit::apps {

StatusOr<std::string> CallVerifierRaw(const AdminTarget& t, std::string_view method,
                                      const std::string& path, const std::string& body,
                                      size_t max_response_bytes) {
  if (t.verifier.empty()) {
    return InvalidArgumentError("--verifier (or $DPUAUDIT_VERIFIER) is required.");
  }
  if (t.token_file.empty()) {
    return InvalidArgumentError(
        "a token file is required (--token-file / --admin-token-file or $DPUAUDIT_TOKEN_FILE).");
  }
  DPA_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(t.token_file, "verifier API"));
  HttpClientOptions o;
  o.ca_file = t.cacert;
  o.insecure_http = t.insecure_http;
  o.max_response_bytes = max_response_bytes;
  DPA_ASSIGN_OR_RETURN(auto client, HttpClient::New(t.verifier, o));
  StatusOr<HttpResponse> r = method == "GET"
                                 ? client->GetWithBearer(path, token)
                                 : client->PostWithBearer(path, "application/json",
                                                          body.empty() ? "{}" : body, token);
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) return StatusFromHttpError(*r);
  return std::move(r->body);
}

StatusOr<nlohmann::json> CallVerifier(const AdminTarget& t, std::string_view method,
                                      const std::string& path, const std::string& body) {
  // 16 MiB: a refvals export of every release.
  DPA_ASSIGN_OR_RETURN(std::string text, CallVerifierRaw(t, method, path, body, 16u << 20));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return UnavailableError(std::string(method) + " " + path +
                            ": the reply is not a JSON object.");
  }
  return j;
}

int ApiExitCode(const Status& s) { return RefusalExitCode(s); }

int FailApi(const Status& s) {
  std::cerr << "dpuaudit: " << s.message() << "\n";
  return ApiExitCode(s);
}

}  // namespace dpuaudit::apps
