// The hash-chained audit log (issue 16 §1, docs/audit.md): its entry
// format, the chain rule, and signed checkpoints. Pure: the store appends
// (verifier/store/sqlite_audit.cc) and the offline bundle verifier
// (verifier/bundle.h) both use these functions, so both sides agree on
// every byte.
//
// An entry is canonical JSON (strict_json::DumpJson: sorted keys, no
// whitespace) {"data":{…},"kind":K,"node":ID,"seq":N,"time":T}, and
//
//   entry_hash(N) = SHA-256(entry_hash(N-1) ‖ canonical entry N)
//
// over the raw 32-byte previous hash (32 zero bytes before entry 1) and
// the canonical bytes. seq runs 1, 2, 3, … with no gap. A checkpoint
// {size, head_hash, time} is a compact JWS (ES256, typ
// "dpuaudit-checkpoint+jwt", kid = the verifier key's thumbprint) signed by
// the verifier's EAR key: whoever holds an earlier checkpoint can tell an
// append from a rewrite.
//
// Guarantees: VerifyAuditChain names the first broken link (its seq and
// what is wrong) and reads nothing beyond what it is given; an entry is
// accepted only when its bytes are exactly the canonical form of what they
// parse to. Does not: detect a rewrite of the whole chain by someone holding
// the verifier key (a checkpoint kept elsewhere does).
#ifndef DPUAUDIT_VERIFIER_AUDIT_CHAIN_H_
#define DPUAUDIT_VERIFIER_AUDIT_CHAIN_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/status.h"
#include "report/admission.h"

namespace dpuaudit::verifier {

inline constexpr std::string_view kAuditLogFormat = "dpuaudit-audit-log/1";
inline constexpr std::string_view kCheckpointTyp = "dpuaudit-checkpoint+jwt";
// The hash before entry 1: 32 zero bytes, in hex.
inline constexpr std::string_view kAuditGenesisHash =
    "0000000000000000000000000000000000000000000000000000000000000000";
// An entry's canonical form may not exceed this (entries carry hashes and
// short fields, never report bodies).
inline constexpr size_t kMaxAuditEntryBytes = 16 * 1024;

// The kinds of entry (docs/audit.md#kinds).
inline constexpr std::string_view kAuditReportAccepted = "report.accepted";
inline constexpr std::string_view kAuditReportRefused = "report.refused";
inline constexpr std::string_view kAuditResult = "result";
inline constexpr std::string_view kAuditStatus = "status";
inline constexpr std::string_view kAuditPolicy = "policy.loaded";
inline constexpr std::string_view kAuditRefvals = "refvals.changed";
inline constexpr std::string_view kAuditNode = "node";  // enrolment, approval…
inline constexpr std::string_view kAuditKey = "key.registered";
inline constexpr std::string_view kAuditTpm = "tpm.binding";
inline constexpr std::string_view kAuditRetention = "retention.pruned";
bool IsAuditKind(std::string_view kind);

struct AuditEntry {
  int64_t seq = 0;
  int64_t time = 0;
  std::string kind;
  std::string node_id;  // "" for fleet-wide entries (policy, refvals, keys)
  nlohmann::json data = nlohmann::json::object();
};

std::string CanonicalAuditEntry(const AuditEntry& e);
// Strict: the five members only, kind known, seq >= 1, time >= 0, data an
// object, and `canonical` byte-identical to CanonicalAuditEntry of the
// result (INVALID_ARGUMENT naming the defect otherwise).
StatusOr<AuditEntry> ParseAuditEntry(std::string_view canonical);

// Hex SHA-256(raw(prev_hash_hex) ‖ canonical). prev_hash_hex must be 64
// hex digits (INVALID_ARGUMENT otherwise).
StatusOr<std::string> AuditEntryHash(std::string_view prev_hash_hex,
                                     std::string_view canonical);

// One stored entry: its canonical bytes and the two hashes the store keeps.
struct ChainedEntry {
  int64_t seq = 0;
  std::string entry;       // canonical bytes
  std::string prev_hash;   // hex
  std::string entry_hash;  // hex
};

// Checks `entries` as one contiguous run of the chain that starts after
// `start_prev_hash` (kAuditGenesisHash for seq 1): seq increases by one,
// each entry parses (ParseAuditEntry) with the seq it is stored under,
// prev_hash is the previous entry_hash, and entry_hash is recomputed.
// DATA_LOSS "audit log entry <seq>: …" naming the first broken link.
Status VerifyAuditChain(std::span<const ChainedEntry> entries,
                        std::string_view start_prev_hash);

struct Checkpoint {
  int64_t size = 0;       // entries covered: seq 1..size
  std::string head_hash;  // entry_hash(size), hex (kAuditGenesisHash at 0)
  int64_t time = 0;
  std::string verifier;   // the verifier instance id ("" when none)
  bool operator==(const Checkpoint&) const = default;
};

StatusOr<std::string> SignCheckpoint(const Checkpoint& cp, const Signer& signer,
                                     const std::string& kid);
// Verifies the JWS under the pinned key its kid names (ES256 only, typ
// kCheckpointTyp) before parsing its payload strictly. UNAUTHENTICATED
// when no pinned key has its kid or the signature fails; INVALID_ARGUMENT
// for a malformed payload. `kid` receives the key that verified it.
StatusOr<Checkpoint> VerifyCheckpoint(std::string_view jws,
                                      const report::TrustedKeys& keys,
                                      std::string* kid = nullptr);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_AUDIT_CHAIN_H_
