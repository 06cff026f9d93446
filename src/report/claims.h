// Report formats v1 and v2 (docs/architecture.md#report-format): the claims
// an agent signs, their canonical bytes, and their strict parser.
//
// v2 ("dpuaudit-report/2") is v1 with two additions, so that evidence that
// did not change since the node's last full report is not sent again:
//  - every evidence item has "by_digest" (bool) and, when its stderr is not
//    empty, "stderr_sha256" (hex SHA-256 of the stderr bytes). A by-digest
//    item has every v1 member except raw_b64 and stderr_b64; a full item has
//    them all (stderr_b64 exactly when stderr_sha256) and both digests are
//    checked against the bytes.
//  - "evidence_base": the hex SHA-256 of the JWS of the node's accepted
//    report whose evidence the by-digest items name; present exactly when
//    at least one item is by digest.
// The item digest (EvidenceItemDigest) is SHA-256 over the canonical JSON
// of every member the derivation of findings reads — id, kind, argv|path,
// exit_code, timed_out, truncated, sha256, stderr_sha256 — so a by-digest
// item resolves (ResolveEvidence) only to a base item equal to it in all of
// these, and the signature over the claims covers them all.
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
//    evidence entry. v2 as above; a by-digest item carrying raw_b64 or
//    stderr_b64, a full item without raw_b64, stderr_sha256 and stderr_b64
//    without each other or on a file/dir, v2 members in a v1 report, an
//    evidence_base that is not 64 lower-case hex or is present without any
//    by-digest item (or absent with one) are all refused. Every error is INVALID_ARGUMENT (RESOURCE_EXHAUSTED for
//    limits) and names the JSON path: `findings[1].verdict "maybe" is not
//    pass|fail|unknown.`
//  - SignReport refuses (INVALID_ARGUMENT) claims that ParseClaims would
//    reject, so an agent never sends a report the verifier cannot read;
//    also by-digest items outside v2, and a by-digest item whose recorded
//    stderr digest is not that of its bytes (the signer must hold them).
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
#include <map>
#include <optional>
#include <set>
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
inline constexpr std::string_view kReportFormatV2 = "dpuaudit-report/2";
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
  // v2 only. The items carried by digest, by evidence id, each mapped to
  // the hex SHA-256 of its stderr ("" when it has none). Serialisation
  // writes these items without raw_b64/stderr_b64. After ParseClaims their
  // Evidence has every member but empty raw and stderr_raw, and
  // evidence_resolved is false until ResolveEvidence fills them.
  std::map<std::string, std::string> by_digest;
  std::string evidence_base;  // v2: hex SHA-256 of the base report's JWS
  bool evidence_resolved = true;
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

// Hex SHA-256 of the stderr bytes, "" when there are none.
std::string StderrSha256(const device::Evidence& e);
// The item digest (above) of `e`, whose stderr has `stderr_sha256`.
std::string EvidenceItemDigest(const device::Evidence& e,
                               std::string_view stderr_sha256);
// The same, from e's own stderr bytes.
std::string EvidenceItemDigest(const device::Evidence& e);

// Turns `claims` into v2 carrying by digest every item whose item digest is
// in `held` (the digests of the items of the report `base_sha256`, which the
// verifier holds in full); the others stay full. With no item held it is a
// full v2 report (no evidence_base).
void CarryByDigest(ReportClaims& claims, std::string_view base_sha256,
                   const std::set<std::string>& held);

// Evidence a verifier holds in full for one node (the items of its base
// report), by id, each with its item digest computed from the bytes.
struct HeldEvidence {
  struct Item {
    std::string digest;
    device::Evidence evidence;
  };
  std::map<std::string, Item> items;
  size_t bytes = 0;  // raw + stderr, for cache accounting
};
// `base` must be full items (a report with no by-digest item); their
// sha256 is recomputed from the bytes.
HeldEvidence IndexHeldEvidence(std::vector<device::Evidence> base);

// Fills each by-digest item of parsed v2 claims from `held`: an item
// resolves to the held item with the same id and the same item digest.
// Returns the ids that do not resolve, in evidence order; then nothing is
// changed. Empty: every item resolved, evidence_resolved is true, and
// SerializeClaims still gives the signed bytes.
std::vector<std::string> ResolveEvidence(ReportClaims& claims,
                                         const HeldEvidence& held);

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
