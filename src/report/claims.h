// Report format v1 (docs/architecture.md#report-format): the claims an agent
// signs, their canonical bytes, and their strict parser.
//
// Guarantees:
//  - SerializeClaims is deterministic: compact JSON, object members in
//    sorted order (nlohmann's std::map), evidence and findings in the given
//    order. The same ReportClaims always gives the same bytes.
//  - ParseClaims is strict and never throws. The payload must be one JSON
//    object; duplicate object keys are rejected at every level (detected by
//    an nlohmann parser callback before objects are built) and nesting is
//    limited to 64 levels. Unknown members are rejected at every level we
//    model (top, device, evidence[i], findings[i]); "firmware",
//    "boot_chain" and "tpm" must be objects but their content is carried
//    as-is. Types are exact (integers are never floats). format must be
//    "dpuaudit-report/1"; node_id 1-128 chars of [A-Za-z0-9._-]; nonce
//    base64url of exactly 32 bytes; issued_at >= 0; evidence within
//    ClaimsLimits, ids unique, kind command|file|dir with argv (command) or
//    path (file/dir) and nothing else, source equal to the one derived from
//    argv/path, raw_b64/stderr_b64 canonical base64, sha256 64 lower-case
//    hex equal to SHA-256(raw); findings with verdict pass|fail|unknown, an
//    unknown finding has a reason, an evidence_id (when set) names an
//    evidence entry. Every error is INVALID_ARGUMENT (RESOURCE_EXHAUSTED for
//    limits) and names the JSON path: `findings[1].verdict "maybe" is not
//    pass|fail|unknown.`
//  - SignReport refuses (INVALID_ARGUMENT) claims that ParseClaims would
//    reject, so an agent never sends a report the verifier cannot read.
//  - VerifyReport checks the JWS (ES256 pinned, typ "dpuaudit-report+jws")
//    before the payload reaches ParseClaims: a forged or tampered report is
//    never parsed.
// Does not: check the nonce against issued nonces, issued_at against a
// clock, the TPM quote, or whether the findings follow from the evidence
// (the verifier re-derives them). The content of firmware/boot_chain/tpm is
// not validated here.
#ifndef DPUAUDIT_REPORT_CLAIMS_H_
#define DPUAUDIT_REPORT_CLAIMS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/finding.h"
#include "common/status.h"
#include "device/evidence.h"
#include "report/jws.h"

namespace dpuaudit::report {

inline constexpr std::string_view kReportFormatV1 = "dpuaudit-report/1";
inline constexpr std::string_view kReportJwsTyp = "dpuaudit-report+jws";
inline constexpr size_t kNonceBytes = 32;  // docs/architecture.md#http-api
inline constexpr size_t kMaxNodeIdChars = 128;

struct DeviceInfo {
  std::string model;  // "BlueField-3"
  std::string serial;
  std::string part_number;
  std::string psid;
  std::string base_mac;
  std::string fw_version;
  bool operator==(const DeviceInfo&) const = default;
};

struct ReportClaims {
  std::string format = std::string(kReportFormatV1);
  std::string node_id;
  std::string nonce;      // base64url, as issued by the verifier
  int64_t issued_at = 0;  // unix seconds
  DeviceInfo device;
  std::vector<device::Evidence> evidence;
  std::vector<Finding> findings;
  nlohmann::json firmware = nlohmann::json::object();
  nlohmann::json boot_chain = nlohmann::json::object();
  std::optional<nlohmann::json> tpm;  // an object when present
  bool operator==(const ReportClaims&) const = default;
};

struct ClaimsLimits {
  size_t max_payload_bytes = 8u << 20;  // 8 MiB of JSON
  size_t max_evidence = 256;
  size_t max_raw_bytes = 1u << 20;        // per raw / stderr blob, decoded
  size_t max_total_raw_bytes = 4u << 20;  // all raw + stderr, decoded
  size_t max_findings = 1024;
};

// "command" | "file" | "dir": device::EvidenceKindName, except that a value
// outside the enum is "command".
std::string_view EvidenceKindJsonName(device::EvidenceKind kind);
// The evidence "source": device::Evidence::Source() (argv joined by single
// spaces, or the path).
std::string EvidenceSourceOf(const device::Evidence& e);

// The report's "device" member: {"model", "serial", "part_number", "psid",
// "base_mac", "fw_version"} (also what `dpuaudit report show --json` prints).
nlohmann::json DeviceInfoJson(const DeviceInfo& device);

std::string SerializeClaims(const ReportClaims& claims);
// The same claims without the "tpm" member: the bytes whose SHA-256 goes
// into the TPM quote's qualifying data (docs/architecture.md#report-format).
std::string SerializeClaimsWithoutTpm(const ReportClaims& claims);

StatusOr<ReportClaims> ParseClaims(ByteView json,
                                   const ClaimsLimits& limits = {});

StatusOr<std::string> SignReport(const ReportClaims& claims,
                                 const Signer& signer, const std::string& kid);

struct VerifiedReport {
  ReportClaims claims;
  Bytes payload;           // the exact signed payload bytes
  std::string jws_sha256;  // hex SHA-256 of the JWS as received
  std::string kid;         // from the (verified) protected header
};

StatusOr<VerifiedReport> VerifyReport(std::string_view jws,
                                      const Verifier& verifier,
                                      size_t max_bytes = kDefaultMaxJwsBytes,
                                      const ClaimsLimits& limits = {});

}  // namespace dpuaudit::report

#endif  // DPUAUDIT_REPORT_CLAIMS_H_
