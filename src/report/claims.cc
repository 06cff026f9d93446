#include "report/claims.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>

#include "common/strict_json.h"

namespace dpuaudit::report {
namespace {

using device::Evidence;
using device::EvidenceKind;
using strict_json::Index;
using strict_json::ObjectReader;
using strict_json::Quote;
using nlohmann::json;

// v1 always full; v2 with "by_digest" and "stderr_sha256", and without the
// bytes when `by_digest` names the item (its value: the stderr digest).
json EvidenceToJson(const Evidence& e, bool v2,
                    const std::map<std::string, std::string>& by_digest) {
  auto carried = v2 ? by_digest.find(e.id) : by_digest.end();
  const bool digest_only = carried != by_digest.end();
  json j = {{"id", e.id},
            {"kind", EvidenceKindJsonName(e.kind)},
            {"source", EvidenceSourceOf(e)},
            {"exit_code", e.exit_code},
            {"timed_out", e.timed_out},
            {"truncated", e.truncated},
            {"sha256", e.sha256}};
  if (!digest_only) j["raw_b64"] = Base64Encode(e.raw);
  if (e.kind == EvidenceKind::kCommand) {
    j["argv"] = e.argv;
  } else {
    j["path"] = e.path;
  }
  if (!digest_only && !e.stderr_raw.empty()) {
    j["stderr_b64"] = Base64Encode(e.stderr_raw);
  }
  if (v2) {
    j["by_digest"] = digest_only;
    const std::string stderr_sha256 =
        digest_only ? carried->second : StderrSha256(e);
    if (!stderr_sha256.empty()) j["stderr_sha256"] = stderr_sha256;
  }
  return j;
}

json FindingToJson(const Finding& f) {
  return json{{"id", f.id},
              {"verdict", VerdictName(f.verdict)},
              {"observed", f.observed},
              {"expected", f.expected},
              {"source", f.source},
              {"reason", f.reason},
              {"evidence_id", f.evidence_id}};
}

}  // namespace

nlohmann::json DeviceInfoJson(const DeviceInfo& d) {
  return json{{"model", d.model},
              {"serial", d.serial},
              {"part_number", d.part_number},
              {"psid", d.psid},
              {"base_mac", d.base_mac},
              {"fw_version", d.fw_version}};
}

namespace {

json ClaimsToJson(const ReportClaims& c, bool with_tpm) {
  const bool v2 = c.format == kReportFormatV2;
  json evidence = json::array();
  for (const Evidence& e : c.evidence) {
    evidence.push_back(EvidenceToJson(e, v2, c.by_digest));
  }
  json findings = json::array();
  for (const Finding& f : c.findings) findings.push_back(FindingToJson(f));
  json j = {{"format", c.format},
            {"node_id", c.node_id},
            {"nonce", c.nonce},
            {"issued_at", c.issued_at},
            {"device", DeviceInfoJson(c.device)},
            {"evidence", std::move(evidence)},
            {"findings", std::move(findings)},
            {"firmware", c.firmware},
            {"boot_chain", c.boot_chain}};
  if (with_tpm && c.tpm.has_value()) j["tpm"] = *c.tpm;
  if (v2 && !c.evidence_base.empty()) j["evidence_base"] = c.evidence_base;
  return j;
}

bool IsNodeIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
         c == '-';
}



StatusOr<DeviceInfo> ParseDevice(const json& j) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, "device"));
  DeviceInfo d;
  DPA_ASSIGN_OR_RETURN(d.model, r.String("model"));
  DPA_ASSIGN_OR_RETURN(d.serial, r.String("serial"));
  DPA_ASSIGN_OR_RETURN(d.part_number, r.String("part_number"));
  DPA_ASSIGN_OR_RETURN(d.psid, r.String("psid"));
  DPA_ASSIGN_OR_RETURN(d.base_mac, r.String("base_mac"));
  DPA_ASSIGN_OR_RETURN(d.fw_version, r.String("fw_version"));
  DPA_RETURN_IF_ERROR(r.Finish());
  return d;
}

bool IsSha256Hex(const std::string& s) {
  return s.size() == 64 && IsLowerHex(s);
}

// `v2`: the item's by_digest/stderr_sha256 members are read; a by-digest
// item sets *stderr_digest (the stderr digest, "" when none) and has no
// bytes.
StatusOr<Evidence> ParseEvidence(const json& j, const std::string& path,
                                 const ClaimsLimits& limits, size_t* total_raw,
                                 bool v2,
                                 std::optional<std::string>* stderr_digest) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, path));
  Evidence e;
  DPA_ASSIGN_OR_RETURN(e.id, r.String("id"));
  if (e.id.empty()) return InvalidArgumentError(path + ".id is empty.");
  DPA_ASSIGN_OR_RETURN(std::string kind, r.String("kind"));
  if (kind == "command") {
    e.kind = EvidenceKind::kCommand;
  } else if (kind == "file") {
    e.kind = EvidenceKind::kFile;
  } else if (kind == "dir") {
    e.kind = EvidenceKind::kDir;
  } else {
    return InvalidArgumentError(path + ".kind " + Quote(kind) +
                                " is not command|file|dir.");
  }
  if (e.kind == EvidenceKind::kCommand) {
    if (r.Has("path")) {
      return InvalidArgumentError(path + ".path is not allowed for a command.");
    }
    DPA_ASSIGN_OR_RETURN(const json* argv, r.Array("argv"));
    if (argv->empty()) {
      return InvalidArgumentError(path + ".argv is empty.");
    }
    for (size_t i = 0; i < argv->size(); ++i) {
      if (!(*argv)[i].is_string()) {
        return InvalidArgumentError(Index(path + ".argv", i) +
                                    " must be a string.");
      }
      e.argv.push_back((*argv)[i].get<std::string>());
    }
  } else {
    if (r.Has("argv")) {
      return InvalidArgumentError(path + ".argv is not allowed for a " + kind +
                                  ".");
    }
    if (r.Has("stderr_b64")) {
      return InvalidArgumentError(path + ".stderr_b64 is not allowed for a " +
                                  kind + ".");
    }
    DPA_ASSIGN_OR_RETURN(e.path, r.String("path"));
    if (e.path.empty() || e.path[0] != '/') {
      return InvalidArgumentError(path + ".path " + Quote(e.path) +
                                  " is not an absolute path.");
    }
  }
  DPA_ASSIGN_OR_RETURN(std::string source, r.String("source"));
  if (source != EvidenceSourceOf(e)) {
    return InvalidArgumentError(
        path + ".source " + Quote(source) + " does not match its " +
        (e.kind == EvidenceKind::kCommand ? "argv." : "path."));
  }
  DPA_ASSIGN_OR_RETURN(int64_t exit_code, r.Int64("exit_code"));
  if (exit_code < std::numeric_limits<int>::min() ||
      exit_code > std::numeric_limits<int>::max()) {
    return InvalidArgumentError(
        path + ".exit_code " + std::to_string(exit_code) + " is out of range.");
  }
  e.exit_code = static_cast<int>(exit_code);
  DPA_ASSIGN_OR_RETURN(e.timed_out, r.Bool("timed_out"));
  DPA_ASSIGN_OR_RETURN(e.truncated, r.Bool("truncated"));
  bool by_digest = false;
  std::string stderr_sha256;
  if (v2) {
    DPA_ASSIGN_OR_RETURN(by_digest, r.Bool("by_digest"));
    bool has_stderr_sha256 = false;
    DPA_ASSIGN_OR_RETURN(stderr_sha256, r.OptionalString("stderr_sha256",
                                                         &has_stderr_sha256));
    if (has_stderr_sha256) {
      if (e.kind != EvidenceKind::kCommand) {
        return InvalidArgumentError(path + ".stderr_sha256 is not allowed for a " +
                                    std::string(EvidenceKindJsonName(e.kind)) + ".");
      }
      if (!IsSha256Hex(stderr_sha256)) {
        return InvalidArgumentError(
            path + ".stderr_sha256 must be 64 lower-case hex digits.");
      }
    }
    if (by_digest) {
      if (r.Has("raw_b64")) {
        return InvalidArgumentError(
            path + ".raw_b64 is not allowed for an item carried by digest.");
      }
      if (r.Has("stderr_b64")) {
        return InvalidArgumentError(
            path + ".stderr_b64 is not allowed for an item carried by digest.");
      }
    } else if (r.Has("stderr_b64") != has_stderr_sha256) {
      return InvalidArgumentError(
          path + (has_stderr_sha256 ? ".stderr_sha256 needs stderr_b64."
                                    : ".stderr_b64 needs stderr_sha256."));
    }
  }
  if (!by_digest) {
    DPA_ASSIGN_OR_RETURN(std::string raw_b64, r.String("raw_b64"));
    DPA_ASSIGN_OR_RETURN(e.raw, strict_json::DecodeBase64Bounded(
                                    raw_b64, limits.max_raw_bytes,
                                    path + ".raw_b64"));
    bool has_stderr = false;
    DPA_ASSIGN_OR_RETURN(std::string stderr_b64,
                         r.OptionalString("stderr_b64", &has_stderr));
    if (has_stderr) {
      DPA_ASSIGN_OR_RETURN(e.stderr_raw, strict_json::DecodeBase64Bounded(
                                             stderr_b64, limits.max_raw_bytes,
                                             path + ".stderr_b64"));
      if (v2 && e.stderr_raw.empty()) {
        return InvalidArgumentError(path +
                                    ".stderr_b64 is empty (omit it and "
                                    "stderr_sha256).");
      }
      if (v2 && Sha256Hex(e.stderr_raw) != stderr_sha256) {
        return InvalidArgumentError(path +
                                    ".stderr_sha256 does not match stderr_b64.");
      }
    }
    *total_raw += e.raw.size() + e.stderr_raw.size();
    if (*total_raw > limits.max_total_raw_bytes) {
      return ResourceExhaustedError(
          "evidence raw and stderr bytes exceed the total limit of " +
          std::to_string(limits.max_total_raw_bytes) + " at " + path + ".");
    }
  }
  DPA_ASSIGN_OR_RETURN(e.sha256, r.String("sha256"));
  if (!IsSha256Hex(e.sha256)) {
    return InvalidArgumentError(path +
                                ".sha256 must be 64 lower-case hex digits.");
  }
  if (!by_digest && e.sha256 != Sha256Hex(e.raw)) {
    return InvalidArgumentError(path + ".sha256 does not match raw_b64.");
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  if (by_digest) *stderr_digest = stderr_sha256;
  return e;
}

StatusOr<Finding> ParseFinding(const json& j, const std::string& path) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, path));
  Finding f;
  DPA_ASSIGN_OR_RETURN(f.id, r.String("id"));
  if (f.id.empty()) return InvalidArgumentError(path + ".id is empty.");
  DPA_ASSIGN_OR_RETURN(std::string verdict, r.String("verdict"));
  std::optional<Verdict> v = ParseVerdict(verdict);
  if (!v.has_value()) {
    return InvalidArgumentError(path + ".verdict " + Quote(verdict) +
                                " is not pass|fail|unknown.");
  }
  f.verdict = *v;
  DPA_ASSIGN_OR_RETURN(f.observed, r.String("observed"));
  DPA_ASSIGN_OR_RETURN(f.expected, r.String("expected"));
  DPA_ASSIGN_OR_RETURN(f.source, r.String("source"));
  DPA_ASSIGN_OR_RETURN(f.reason, r.String("reason"));
  DPA_ASSIGN_OR_RETURN(f.evidence_id, r.String("evidence_id"));
  DPA_RETURN_IF_ERROR(r.Finish());
  if (f.verdict == Verdict::kUnknown && f.reason.empty()) {
    return InvalidArgumentError(path + " is unknown but has no reason.");
  }
  return f;
}

}  // namespace

std::string_view EvidenceKindJsonName(EvidenceKind kind) {
  // The same names; a value outside the enum is written as "command".
  const std::string_view name = device::EvidenceKindName(kind);
  return name == "unknown" ? "command" : name;
}

std::string EvidenceSourceOf(const Evidence& e) { return e.Source(); }

std::string StderrSha256(const Evidence& e) {
  return e.stderr_raw.empty() ? std::string() : Sha256Hex(e.stderr_raw);
}

std::string EvidenceItemDigest(const Evidence& e,
                               std::string_view stderr_sha256) {
  json j = {{"id", e.id},
            {"kind", EvidenceKindJsonName(e.kind)},
            {"exit_code", e.exit_code},
            {"timed_out", e.timed_out},
            {"truncated", e.truncated},
            {"sha256", e.sha256},
            {"stderr_sha256", std::string(stderr_sha256)}};
  if (e.kind == EvidenceKind::kCommand) {
    j["argv"] = e.argv;
  } else {
    j["path"] = e.path;
  }
  return Sha256Hex(AsBytes(strict_json::DumpJson(j)));
}

std::string EvidenceItemDigest(const Evidence& e) {
  return EvidenceItemDigest(e, StderrSha256(e));
}

void CarryByDigest(ReportClaims& claims, std::string_view base_sha256,
                   const std::set<std::string>& held) {
  claims.format = std::string(kReportFormatV2);
  claims.by_digest.clear();
  claims.evidence_base.clear();
  for (const Evidence& e : claims.evidence) {
    if (held.count(EvidenceItemDigest(e)) != 0) {
      claims.by_digest.emplace(e.id, StderrSha256(e));
    }
  }
  if (!claims.by_digest.empty()) claims.evidence_base = std::string(base_sha256);
  claims.evidence_resolved = true;
}

HeldEvidence IndexHeldEvidence(std::vector<Evidence> base) {
  HeldEvidence held;
  for (Evidence& e : base) {
    // From the bytes, whatever the sha256 member says.
    e.sha256 = Sha256Hex(e.raw);
    std::string digest = EvidenceItemDigest(e);
    held.bytes += e.raw.size() + e.stderr_raw.size();
    std::string id = e.id;
    held.items.emplace(std::move(id), HeldEvidence::Item{std::move(digest), std::move(e)});
  }
  return held;
}

std::vector<std::string> ResolveEvidence(ReportClaims& claims,
                                         const HeldEvidence& held) {
  std::vector<std::string> missing;
  std::vector<std::pair<Evidence*, const Evidence*>> fill;
  for (Evidence& e : claims.evidence) {
    auto carried = claims.by_digest.find(e.id);
    if (carried == claims.by_digest.end()) continue;
    auto it = held.items.find(e.id);
    if (it == held.items.end() ||
        it->second.digest != EvidenceItemDigest(e, carried->second)) {
      missing.push_back(e.id);
      continue;
    }
    fill.emplace_back(&e, &it->second.evidence);
  }
  if (!missing.empty()) return missing;
  for (auto& [to, from] : fill) {
    to->raw = from->raw;
    to->stderr_raw = from->stderr_raw;
  }
  claims.evidence_resolved = true;
  return missing;
}

std::string SerializeClaims(const ReportClaims& claims) {
  return strict_json::DumpJson(ClaimsToJson(claims, /*with_tpm=*/true));
}

std::string SerializeClaimsWithoutTpm(const ReportClaims& claims) {
  return strict_json::DumpJson(ClaimsToJson(claims, /*with_tpm=*/false));
}

StatusOr<ReportClaims> ParseClaims(ByteView bytes, const ClaimsLimits& limits) {
  if (bytes.size() > limits.max_payload_bytes) {
    return ResourceExhaustedError(
        "report payload of " + std::to_string(bytes.size()) +
        " bytes exceeds the limit of " +
        std::to_string(limits.max_payload_bytes) + " bytes.");
  }
  DPA_ASSIGN_OR_RETURN(json j,
                       strict_json::ParseStrictJson(bytes, "report payload"));
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, ""));
  ReportClaims c;
  // The version first, so a future format gets a precise error rather
  // than "unknown member".
  DPA_ASSIGN_OR_RETURN(c.format, r.String("format"));
  if (c.format != kReportFormatV1 && c.format != kReportFormatV2) {
    return InvalidArgumentError("format " + Quote(c.format) +
                                " is not supported (expected \"" +
                                std::string(kReportFormatV1) + "\" or \"" +
                                std::string(kReportFormatV2) + "\").");
  }
  const bool v2 = c.format == kReportFormatV2;
  DPA_ASSIGN_OR_RETURN(c.node_id, r.String("node_id"));
  if (c.node_id.empty() || c.node_id.size() > kMaxNodeIdChars ||
      !std::all_of(c.node_id.begin(), c.node_id.end(), IsNodeIdChar)) {
    return InvalidArgumentError("node_id " + Quote(c.node_id) +
                                " must be 1-128 characters of "
                                "[A-Za-z0-9._-].");
  }
  DPA_ASSIGN_OR_RETURN(c.nonce, r.String("nonce"));
  auto nonce = Base64UrlDecode(c.nonce);
  if (!nonce.ok()) return nonce.status().WithPrefix("nonce");
  if (nonce->size() != kNonceBytes) {
    return InvalidArgumentError("nonce must decode to 32 bytes, got " +
                                std::to_string(nonce->size()) + ".");
  }
  DPA_ASSIGN_OR_RETURN(c.issued_at, r.Int64("issued_at"));
  if (c.issued_at < 0) {
    return InvalidArgumentError("issued_at " + std::to_string(c.issued_at) +
                                " is negative.");
  }
  DPA_ASSIGN_OR_RETURN(const json* device, r.Object("device"));
  DPA_ASSIGN_OR_RETURN(c.device, ParseDevice(*device));

  DPA_ASSIGN_OR_RETURN(const json* evidence, r.Array("evidence"));
  if (evidence->size() > limits.max_evidence) {
    return ResourceExhaustedError("evidence has " +
                                  std::to_string(evidence->size()) +
                                  " entries, more than the limit of " +
                                  std::to_string(limits.max_evidence) + ".");
  }
  std::map<std::string, size_t> evidence_index;
  size_t total_raw = 0;
  for (size_t i = 0; i < evidence->size(); ++i) {
    std::string path = Index("evidence", i);
    std::optional<std::string> stderr_digest;
    DPA_ASSIGN_OR_RETURN(Evidence e,
                         ParseEvidence((*evidence)[i], path, limits, &total_raw,
                                       v2, &stderr_digest));
    auto [it, inserted] = evidence_index.emplace(e.id, i);
    if (!inserted) {
      return InvalidArgumentError(path + ".id " + Quote(e.id) + " duplicates " +
                                  Index("evidence", it->second) + ".");
    }
    if (stderr_digest) c.by_digest.emplace(e.id, std::move(*stderr_digest));
    c.evidence.push_back(std::move(e));
  }

  DPA_ASSIGN_OR_RETURN(const json* findings, r.Array("findings"));
  if (findings->size() > limits.max_findings) {
    return ResourceExhaustedError("findings has " +
                                  std::to_string(findings->size()) +
                                  " entries, more than the limit of " +
                                  std::to_string(limits.max_findings) + ".");
  }
  for (size_t i = 0; i < findings->size(); ++i) {
    std::string path = Index("findings", i);
    DPA_ASSIGN_OR_RETURN(Finding f, ParseFinding((*findings)[i], path));
    if (!f.evidence_id.empty() && !evidence_index.contains(f.evidence_id)) {
      return InvalidArgumentError(path + ".evidence_id " +
                                  Quote(f.evidence_id) +
                                  " names no evidence entry.");
    }
    // The agent's text is valid UTF-8 here (ParseStrictJson) but may hold
    // control characters; compared with and shown like the verifier's own.
    MakeSafe(f);
    c.findings.push_back(std::move(f));
  }

  DPA_ASSIGN_OR_RETURN(const json* firmware, r.Object("firmware"));
  c.firmware = *firmware;
  DPA_ASSIGN_OR_RETURN(const json* boot_chain, r.Object("boot_chain"));
  c.boot_chain = *boot_chain;
  if (r.Has("tpm")) {
    DPA_ASSIGN_OR_RETURN(const json* tpm, r.Object("tpm"));
    c.tpm = *tpm;
  }
  if (v2) {
    bool has_base = false;
    DPA_ASSIGN_OR_RETURN(c.evidence_base,
                         r.OptionalString("evidence_base", &has_base));
    if (has_base && !IsSha256Hex(c.evidence_base)) {
      return InvalidArgumentError(
          "evidence_base must be 64 lower-case hex digits.");
    }
    if (has_base && c.by_digest.empty()) {
      return InvalidArgumentError(
          "evidence_base is set but no evidence item is carried by digest.");
    }
    if (!has_base && !c.by_digest.empty()) {
      return InvalidArgumentError("evidence " + Quote(c.by_digest.begin()->first) +
                                  " is carried by digest but evidence_base is "
                                  "missing.");
    }
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  c.evidence_resolved = c.by_digest.empty();
  return c;
}

StatusOr<std::string> SignReport(const ReportClaims& claims,
                                 const Signer& signer, const std::string& kid) {
  if (claims.format != kReportFormatV2 &&
      (!claims.by_digest.empty() || !claims.evidence_base.empty())) {
    return InvalidArgumentError(
        "refusing to sign an invalid report: only " +
        std::string(kReportFormatV2) + " carries evidence by digest.");
  }
  for (const Evidence& e : claims.evidence) {
    auto it = claims.by_digest.find(e.id);
    if (it != claims.by_digest.end() && it->second != StderrSha256(e)) {
      return InvalidArgumentError(
          "refusing to sign an invalid report: the stderr digest of " +
          Quote(e.id) + " does not match its bytes.");
    }
  }
  std::string payload = SerializeClaims(claims);
  // Limits are the verifier's business; here only well-formedness counts.
  ClaimsLimits unlimited;
  unlimited.max_payload_bytes = std::numeric_limits<size_t>::max();
  unlimited.max_evidence = std::numeric_limits<size_t>::max();
  unlimited.max_raw_bytes = std::numeric_limits<size_t>::max() / 2;
  unlimited.max_total_raw_bytes = std::numeric_limits<size_t>::max();
  unlimited.max_findings = std::numeric_limits<size_t>::max();
  auto check = ParseClaims(AsBytes(payload), unlimited);
  if (!check.ok()) {
    return check.status().WithPrefix("refusing to sign an invalid report");
  }
  JwsHeader header;
  header.kid = kid;
  header.typ = std::string(kReportJwsTyp);
  return SignCompact(AsBytes(payload), signer, header);
}

StatusOr<VerifiedReport> VerifyReport(std::string_view jws,
                                      const Verifier& verifier,
                                      size_t max_bytes,
                                      const ClaimsLimits& limits) {
  DPA_ASSIGN_OR_RETURN(VerifiedJws verified,
                       VerifyJws(jws, verifier, kAlgEs256, max_bytes));
  // RFC 7515 §4.1.9: "application/" may be omitted; media types are
  // case-insensitive.
  std::string typ = verified.typ();
  std::transform(typ.begin(), typ.end(), typ.begin(), [](char ch) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  });
  if (typ != kReportJwsTyp &&
      typ != "application/" + std::string(kReportJwsTyp)) {
    return InvalidArgumentError("JWS typ " + Quote(verified.typ()) +
                                " is not \"" + std::string(kReportJwsTyp) +
                                "\".");
  }
  VerifiedReport out;
  out.kid = verified.kid();
  out.jws_sha256 = Sha256Hex(AsBytes(jws));
  out.payload = std::move(verified).payload();
  DPA_ASSIGN_OR_RETURN(out.claims, ParseClaims(out.payload, limits));
  return out;
}

}  // namespace dpuaudit::report
