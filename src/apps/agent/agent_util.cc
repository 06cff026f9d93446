#include "apps/agent/agent_util.h"

#include <iostream>

#include "apps/shared/exit_code.h"

namespace dpuaudit::apps {

StatusOr<attest::tpm::EkType> EkTypeOf(const AgentFlags& f) {
  if (f.ek_type == "rsa") return attest::tpm::EkType::kRsa2048;
  if (f.ek_type == "ecc") return attest::tpm::EkType::kEccP256;
  return InvalidArgumentError("--ek-type must be rsa or ecc.");
}


int Fail(const Status& s) {
  std::cerr << "dpuaudit-agent: " << s.message() << "\n";
  return kExitError;
}

int FailVerifier(const Status& s) {
  std::cerr << "dpuaudit-agent: " << s.message() << "\n";
  return RefusalExitCode(s);
}


StatusOr<std::unique_ptr<device::DeviceSource>> OpenSource(const AgentFlags& f) {
  if (f.device_root.empty()) return device::NewLiveDeviceSource();
  return device::NewRecordedDeviceSource(f.device_root);
}

StatusOr<std::unique_ptr<HttpClient>> Client(const AgentFlags& f) {
  if (f.verifier.empty()) return InvalidArgumentError("--verifier URL is required.");
  HttpClientOptions o;
  o.ca_file = f.cacert;
  o.insecure_http = f.insecure_http;
  return HttpClient::New(f.verifier, o);
}

StatusOr<nlohmann::json> PostJson(const HttpClient& client, const std::string& path,
                                  const std::string& content_type,
                                  const std::string& body) {
  DPA_ASSIGN_OR_RETURN(HttpResponse r, client.Post(path, content_type, body));
  if (r.status < 200 || r.status >= 300) return StatusFromHttpError(r);
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError("POST " + path + ": verifier answered non-JSON.");
  }
  return j;
}


StatusOr<std::unique_ptr<Signer>> LoadSigner(const AgentFlags& f) {
  auto key = EcPrivateKey::LoadFile(f.key);
  if (!key.ok()) {
    if (key.status().code() == StatusCode::kNotFound) {
      return FailedPreconditionError("no agent key at " + f.key +
                                     "; run `dpuaudit-agent enroll` first.");
    }
    return key.status();
  }
  DPA_ASSIGN_OR_RETURN(auto signer, Es256Signer::New(*key));
  return std::unique_ptr<Signer>(std::move(signer));
}

StatusOr<std::unique_ptr<attest::tpm::Tpm>> MaybeOpenTpm(const AgentFlags& f) {
  if (f.tpm.empty()) return std::unique_ptr<attest::tpm::Tpm>();
  return attest::tpm::Tpm::Open(f.tpm);
}


}  // namespace dpuaudit::apps
