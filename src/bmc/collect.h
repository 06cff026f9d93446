// One pull of a BMC's evidence (docs/redfish.md, docs/spdm.md): the
// posture resources, the firmware inventory and, per SPDM target, the
// certificate chain and a signed measurement transcript bound to a fresh
// nonce of ours.
//
// Guarantees: every resource is fetched independently; one that fails is
// recorded with its reason in `errors` (keyed by path) and the collection
// goes on, so the appraisal can say "unknown" per claim; except that when
// the (unauthenticated) service root cannot be fetched at all, or the
// pull's `deadline` passed, nothing more is requested and every remaining
// resource is an error saying why (a hung or impostor BMC costs one
// request's timeouts, not one per resource). The two BlueField
// SPDM targets (Bluefield_DPU_IRoT, Bluefield_ERoT) are always reported:
// a BMC without ComponentIntegrity, or without the target, gives that
// target a NOT_FOUND status, never an empty success. The nonce is 32 bytes
// from the OpenSSL DRBG per target and request. The Task is polled every
// `task_poll` until `task_timeout`; a Task that ends in any state but
// Completed, or never ends, is that target's error. The result location is
// the Task's Location header, else a message argument naming a path under
// the action, else "<action>/data".
// Does not: verify anything (spdm/ and the verifier's appraisal do); follow
// a link off the BMC (RedfishClient refuses absolute URLs).
#ifndef DPUAUDIT_BMC_COLLECT_H_
#define DPUAUDIT_BMC_COLLECT_H_

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bmc/redfish_client.h"
#include "common/bytes.h"
#include "common/status.h"
#include "redfish/resources.h"

namespace dpuaudit::bmc {

inline constexpr const char* kIrotTarget = "Bluefield_DPU_IRoT";
inline constexpr const char* kErotTarget = "Bluefield_ERoT";

struct SpdmTargetEvidence {
  std::string id;
  Status status;  // OK when chain and evidence were read
  std::string chain_pem;
  redfish::SignedMeasurementsEvidence evidence;
  Bytes nonce;  // ours, 32 bytes
};

struct BmcEvidence {
  std::string base_url;
  std::string tls_mode;
  int64_t collected_at = 0;  // unix seconds
  std::optional<redfish::ServiceRoot> service_root;
  std::optional<redfish::System> system;
  std::optional<redfish::SystemOemNvidia> oem;
  std::optional<std::map<std::string, std::string>> host_privileges;
  std::optional<redfish::Bios> bios;
  std::optional<redfish::SecureBoot> secure_boot;
  std::optional<redfish::Manager> manager;
  std::map<std::string, std::string> firmware;  // inventory Id -> Version
  std::vector<SpdmTargetEvidence> targets;
  std::map<std::string, std::string> errors;  // path -> reason
  int requests = 0;
};

struct CollectOptions {
  bool spdm = true;
  std::chrono::milliseconds task_poll{200};
  std::chrono::milliseconds task_timeout{30000};
  // The whole pull: resources not requested by then are errors "not
  // requested: the pull's deadline of N ms passed" (0: none).
  std::chrono::milliseconds deadline{0};
  int64_t now = 0;  // unix seconds, recorded
};

BmcEvidence CollectBmcEvidence(RedfishClient& client, const CollectOptions& options);

// The evidence as JSON (docs/bmc-evidence-schema.md): stable member names,
// errors per path, the SPDM transcripts in base64.
nlohmann::json BmcEvidenceJson(const BmcEvidence& e);

}  // namespace dpuaudit::bmc

#endif  // DPUAUDIT_BMC_COLLECT_H_
