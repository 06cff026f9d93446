// Readers of the Redfish resources a BlueField-3 BMC serves
// (docs/redfish.md): pure functions from a response body to the fields
// dpuaudit judges.
//
// Guarantees: every body goes through ParseResource first: strict JSON
// (common/strict_json.h: no duplicate keys, valid UTF-8, bounded depth), at
// most kMaxResourceBytes, an object, and not a Redfish error body. A body
// that carries an "error" member is refused even when it also carries
// data (real BMCs send both). A field that is present with the wrong JSON
// type is INVALID_ARGUMENT naming the resource and the field, never
// treated as absent; an absent field stays nullopt so that the appraisal
// can say "unknown" with the reason. Members we do not read are ignored
// (Redfish resources carry many). BIOS attributes are read under both
// spellings BMC firmware has used ("HostPrivilegeLevel" and, before BMC
// 24.10, "Host Privilege Level"); both present and different is an error.
// Does not: fetch anything (verifier/bmc does), follow links, or judge a
// value (the verifier's appraisal does).
#ifndef DPUAUDIT_REDFISH_RESOURCES_H_
#define DPUAUDIT_REDFISH_RESOURCES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dpuaudit::redfish {

inline constexpr size_t kMaxResourceBytes = 1024 * 1024;

// Well-known paths on a BlueField BMC.
inline constexpr std::string_view kServiceRoot = "/redfish/v1";
inline constexpr std::string_view kSystem = "/redfish/v1/Systems/Bluefield";
inline constexpr std::string_view kSystemOemNvidia =
    "/redfish/v1/Systems/Bluefield/Oem/Nvidia";
inline constexpr std::string_view kExternalHostPrivileges =
    "/redfish/v1/Systems/Bluefield/Oem/Nvidia/Connectx/ExternalHostPrivileges";
inline constexpr std::string_view kBios = "/redfish/v1/Systems/Bluefield/Bios";
inline constexpr std::string_view kSecureBoot = "/redfish/v1/Systems/Bluefield/SecureBoot";
inline constexpr std::string_view kManager = "/redfish/v1/Managers/Bluefield_BMC";
inline constexpr std::string_view kFirmwareInventory =
    "/redfish/v1/UpdateService/FirmwareInventory";
inline constexpr std::string_view kComponentIntegrity = "/redfish/v1/ComponentIntegrity";

// The body as a JSON object (see Guarantees). `uri` names it in errors. A
// Redfish error body is UNAVAILABLE "<uri> answered a Redfish error:
// <code>: <message>" (the code and message quoted and truncated).
StatusOr<nlohmann::json> ParseResource(std::string_view body, std::string_view uri);

struct ServiceRoot {
  std::optional<std::string> product, vendor, redfish_version;
  bool has_component_integrity = false;  // a ComponentIntegrity link
};
StatusOr<ServiceRoot> ReadServiceRoot(const nlohmann::json& j);

// The "@odata.id" of every member of a collection, in order. A member
// without one, or a non-array Members, is an error.
StatusOr<std::vector<std::string>> ReadCollection(const nlohmann::json& j,
                                                  std::string_view uri);

struct System {
  std::optional<std::string> serial_number, model, power_state;
};
StatusOr<System> ReadSystem(const nlohmann::json& j);

// Systems/Bluefield/Oem/Nvidia.
struct SystemOemNvidia {
  std::optional<std::string> mode;        // "DpuMode" | "NicMode" | ...
  std::optional<std::string> host_rshim;  // "Disabled" | "Enabled" | ...
};
StatusOr<SystemOemNvidia> ReadSystemOemNvidia(const nlohmann::json& j);

// .../Connectx/ExternalHostPrivileges: ExternalHostPrivilege.HostPriv*,
// each "Enabled" | "Disabled" | "Default".
StatusOr<std::map<std::string, std::string>> ReadExternalHostPrivileges(
    const nlohmann::json& j);

struct Bios {
  std::optional<std::string> host_privilege_level;  // "Restricted" | "Privileged"
  std::optional<std::string> internal_cpu_model;    // "Embedded" | "Separated"
  std::optional<std::string> nic_mode;              // "DpuMode" | "NicMode"
  std::optional<bool> enable_optee;
};
StatusOr<Bios> ReadBios(const nlohmann::json& j);

struct SecureBoot {
  std::optional<bool> enable;               // SecureBootEnable
  std::optional<std::string> current_boot;  // SecureBootCurrentBoot "Enabled"|"Disabled"
  std::optional<std::string> mode;          // SecureBootMode "UserMode"|"SetupMode"|...
};
StatusOr<SecureBoot> ReadSecureBoot(const nlohmann::json& j);

struct Manager {
  std::optional<std::string> firmware_version, model, date_time;
};
StatusOr<Manager> ReadManager(const nlohmann::json& j);

// One FirmwareInventory member: its Id and Version (both required).
struct FirmwareItem {
  std::string id;
  std::string version;
};
StatusOr<FirmwareItem> ReadFirmwareItem(const nlohmann::json& j, std::string_view uri);

// One ComponentIntegrity member.
struct ComponentIntegrity {
  std::string id;
  std::optional<bool> enabled;        // ComponentIntegrityEnabled
  std::optional<std::string> type;    // "SPDM"
  std::optional<std::string> type_version;  // "1.1.0"
  std::optional<std::string> certificate_uri;  // SPDM.IdentityAuthentication...
  std::optional<std::string> measurements_action;  // the action's target
};
StatusOr<ComponentIntegrity> ReadComponentIntegrity(const nlohmann::json& j,
                                                    std::string_view uri);

// A Certificates/CertChain resource: its PEM chain (CertificateString,
// required; CertificateType must be "PEMchain" or "PEM" when present).
StatusOr<std::string> ReadCertificateChain(const nlohmann::json& j, std::string_view uri);

// A TaskService task.
struct Task {
  std::string state;                      // TaskState: "Running" | "Completed" | ...
  std::optional<std::string> status;      // TaskStatus: "OK" | "Critical" | ...
  std::vector<std::string> message_args;  // every MessageArgs string, in order
  std::optional<std::string> location;    // a Location header named in the payload
};
StatusOr<Task> ReadTask(const nlohmann::json& j, std::string_view uri);

// The SPDMGetSignedMeasurements result.
struct SignedMeasurementsEvidence {
  std::string signed_measurements;  // base64
  std::string signing_algorithm;
  std::string hashing_algorithm;
  std::string version;
};
StatusOr<SignedMeasurementsEvidence> ReadSignedMeasurements(const nlohmann::json& j,
                                                            std::string_view uri);

}  // namespace dpuaudit::redfish

#endif  // DPUAUDIT_REDFISH_RESOURCES_H_
