#include "verifier/audit_chain.h"

#include <array>
#include <memory>
#include <utility>

#include "common/bytes.h"
#include "common/strict_json.h"
#include "report/jws.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;
using strict_json::ObjectReader;
using strict_json::Quote;

std::string SeqName(int64_t seq) { return "audit log entry " + std::to_string(seq); }

}  // namespace

bool IsAuditKind(std::string_view kind) {
  static constexpr std::array<std::string_view, 10> kKinds = {
      kAuditReportAccepted, kAuditReportRefused, kAuditResult,  kAuditStatus,
      kAuditPolicy,         kAuditRefvals,       kAuditNode,    kAuditKey,
      kAuditTpm,            kAuditRetention};
  for (std::string_view k : kKinds) {
    if (k == kind) return true;
  }
  return false;
}

std::string CanonicalAuditEntry(const AuditEntry& e) {
  json j = {{"seq", e.seq},
            {"time", e.time},
            {"kind", e.kind},
            {"node", e.node_id},
            {"data", e.data.is_object() ? e.data : json::object()}};
  return strict_json::DumpJson(j);
}

StatusOr<AuditEntry> ParseAuditEntry(std::string_view canonical) {
  if (canonical.size() > kMaxAuditEntryBytes) {
    return InvalidArgumentError("audit log entry is " +
                                std::to_string(canonical.size()) +
                                " bytes, over the limit of " +
                                std::to_string(kMaxAuditEntryBytes) + ".");
  }
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(AsBytes(canonical),
                                                            "audit log entry"));
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, ""));
  AuditEntry e;
  DPA_ASSIGN_OR_RETURN(e.seq, r.Int64("seq"));
  DPA_ASSIGN_OR_RETURN(e.time, r.Int64("time"));
  DPA_ASSIGN_OR_RETURN(e.kind, r.String("kind"));
  DPA_ASSIGN_OR_RETURN(e.node_id, r.String("node"));
  DPA_ASSIGN_OR_RETURN(const json* data, r.Object("data"));
  e.data = *data;
  DPA_RETURN_IF_ERROR(r.Finish());
  if (e.seq < 1) return InvalidArgumentError("seq " + std::to_string(e.seq) + " is below 1.");
  if (e.time < 0) return InvalidArgumentError("time is negative.");
  if (!IsAuditKind(e.kind)) {
    return InvalidArgumentError("kind " + Quote(e.kind) + " is not a known entry kind.");
  }
  if (CanonicalAuditEntry(e) != canonical) {
    return InvalidArgumentError("the entry is not in canonical form (sorted keys, "
                                "no whitespace).");
  }
  return e;
}

StatusOr<std::string> AuditEntryHash(std::string_view prev_hash_hex,
                                     std::string_view canonical) {
  if (!IsLowerHexOfLength(prev_hash_hex, 64)) {
    return InvalidArgumentError("prev_hash must be 64 lower-case hex digits.");
  }
  DPA_ASSIGN_OR_RETURN(Bytes input, HexDecode(prev_hash_hex));
  input.insert(input.end(), canonical.begin(), canonical.end());
  return Sha256Hex(input);
}

Status VerifyAuditChain(std::span<const ChainedEntry> entries,
                        std::string_view start_prev_hash) {
  std::string prev(start_prev_hash);
  int64_t expected_seq = entries.empty() ? 0 : entries.front().seq;
  for (const ChainedEntry& c : entries) {
    const std::string name = SeqName(c.seq);
    if (c.seq != expected_seq) {
      return DataLossError(name + ": expected seq " + std::to_string(expected_seq) +
                           " (entries are missing or out of order).");
    }
    StatusOr<AuditEntry> parsed = ParseAuditEntry(c.entry);
    if (!parsed.ok()) {
      return DataLossError(name + ": " + parsed.status().message());
    }
    if (parsed->seq != c.seq) {
      return DataLossError(name + ": its bytes say seq " + std::to_string(parsed->seq) + ".");
    }
    if (c.prev_hash != prev) {
      return DataLossError(name + ": prev_hash " + c.prev_hash.substr(0, 16) +
                           "… is not the previous entry's hash " + prev.substr(0, 16) +
                           "… (an entry before it was removed, changed or reordered).");
    }
    DPA_ASSIGN_OR_RETURN(std::string h, AuditEntryHash(prev, c.entry));
    if (h != c.entry_hash) {
      return DataLossError(name + ": entry_hash does not match SHA-256(prev_hash ‖ "
                           "entry): the entry was changed.");
    }
    prev = h;
    ++expected_seq;
  }
  return OkStatus();
}

StatusOr<std::string> SignCheckpoint(const Checkpoint& cp, const Signer& signer,
                                     const std::string& kid) {
  json j = {{"log", kAuditLogFormat},
            {"size", cp.size},
            {"head_hash", cp.head_hash},
            {"time", cp.time}};
  if (!cp.verifier.empty()) j["verifier"] = cp.verifier;
  report::JwsHeader header;
  header.kid = kid;
  header.typ = std::string(kCheckpointTyp);
  return report::SignCompact(AsBytes(strict_json::DumpJson(j)), signer, header);
}

StatusOr<Checkpoint> VerifyCheckpoint(std::string_view jws,
                                      const report::TrustedKeys& keys,
                                      std::string* kid) {
  DPA_ASSIGN_OR_RETURN(report::UnverifiedJwsHeader peek,
                       report::PeekUnverifiedHeader(jws, 64 * 1024));
  const report::TrustedKey* key = keys.Find(peek.kid);
  if (key == nullptr) {
    return UnauthenticatedError("checkpoint is signed by key " + Quote(peek.kid) +
                                ", which is not pinned.");
  }
  DPA_ASSIGN_OR_RETURN(std::unique_ptr<Es256Verifier> verifier,
                       Es256Verifier::New(key->key));
  StatusOr<report::VerifiedJws> verified = report::VerifyJws(jws, *verifier);
  if (!verified.ok()) {
    return UnauthenticatedError("checkpoint signature: " + verified.status().message());
  }
  if (verified->typ() != kCheckpointTyp) {
    return InvalidArgumentError("JWS typ " + Quote(verified->typ()) + " is not " +
                                std::string(kCheckpointTyp) + ".");
  }
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(verified->payload(),
                                                            "checkpoint"));
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, ""));
  DPA_ASSIGN_OR_RETURN(std::string log, r.String("log"));
  if (log != kAuditLogFormat) {
    return InvalidArgumentError("checkpoint log " + Quote(log) + " is not " +
                                std::string(kAuditLogFormat) + ".");
  }
  Checkpoint cp;
  DPA_ASSIGN_OR_RETURN(cp.size, r.Int64("size"));
  DPA_ASSIGN_OR_RETURN(cp.head_hash, r.String("head_hash"));
  DPA_ASSIGN_OR_RETURN(cp.time, r.Int64("time"));
  bool present = false;
  DPA_ASSIGN_OR_RETURN(cp.verifier, r.OptionalString("verifier", &present));
  DPA_RETURN_IF_ERROR(r.Finish());
  if (cp.size < 0) return InvalidArgumentError("checkpoint size is negative.");
  if (!IsLowerHexOfLength(cp.head_hash, 64)) {
    return InvalidArgumentError("checkpoint head_hash must be 64 lower-case hex digits.");
  }
  if (kid != nullptr) *kid = key->kid;
  return cp;
}

}  // namespace dpuaudit::verifier
