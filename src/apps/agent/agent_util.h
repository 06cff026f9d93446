// Helpers of the agent's commands: exit codes, error printing, the device
// source, the verifier client, the signing key and the TPM.
#ifndef DPUAUDIT_APPS_AGENT_AGENT_UTIL_H_
#define DPUAUDIT_APPS_AGENT_AGENT_UTIL_H_

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/agent/commands.h"
#include "apps/shared/http_client.h"
#include "attest/tpm/tpm.h"
#include "common/crypto.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::apps {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitError = 2;

inline constexpr size_t kMaxEventLogBytes = 2u << 20;  // attest::TpmClaimsLimits

// Prints "dpuaudit-agent: <message>" to stderr; returns kExitError.
int Fail(const Status& s);
// The same, for an answer of the verifier: returns 1 when it refused the
// thing named (HTTP 409/410), else 2 (apps/shared/exit_code.h
// RefusalExitCode, the rule of every binary).
int FailVerifier(const Status& s);
StatusOr<attest::tpm::EkType> EkTypeOf(const AgentFlags& f);
// The live device, or the recorded folder of --device-root.
StatusOr<std::unique_ptr<device::DeviceSource>> OpenSource(const AgentFlags& f);
// INVALID_ARGUMENT without --verifier.
StatusOr<std::unique_ptr<HttpClient>> Client(const AgentFlags& f);
// POST; a non-2xx answer is its error Status, a non-object answer
// INVALID_ARGUMENT.
StatusOr<nlohmann::json> PostJson(const HttpClient& client, const std::string& path,
                                  const std::string& content_type,
                                  const std::string& body);
// FAILED_PRECONDITION "run `dpuaudit-agent enroll` first" without a key.
StatusOr<std::unique_ptr<Signer>> LoadSigner(const AgentFlags& f);
// No TPM (nullptr) without --tpm.
StatusOr<std::unique_ptr<attest::tpm::Tpm>> MaybeOpenTpm(const AgentFlags& f);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_AGENT_AGENT_UTIL_H_
