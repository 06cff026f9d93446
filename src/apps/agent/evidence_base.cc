#include "apps/agent/evidence_base.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/files.h"
#include "common/strict_json.h"

namespace dpuaudit::apps {

std::string EvidenceBasePath(const std::string& key_path) {
  return key_path + ".evidence-base";
}

std::optional<EvidenceBase> LoadEvidenceBase(const std::string& path) {
  auto raw = ReadFileLimited(path, 1u << 20);
  if (!raw.ok()) {
    if (raw.status().code() != StatusCode::kNotFound) {
      spdlog::warn("{}: {}; sending full evidence", path, raw.status().message());
    }
    return std::nullopt;
  }
  auto bad = [&](const std::string& why) -> std::optional<EvidenceBase> {
    spdlog::warn("{}: {}; sending full evidence", path, why);
    return std::nullopt;
  };
  auto parsed = strict_json::ParseStrictJson(*raw, path);
  if (!parsed.ok()) return bad(parsed.status().message());
  const nlohmann::json& j = *parsed;
  if (!j.is_object() || j.value("format", "") != kEvidenceBaseFormat ||
      !j.contains("items") || !j["items"].is_array()) {
    return bad("not a " + std::string(kEvidenceBaseFormat) + " document");
  }
  EvidenceBase b;
  b.verifier = j.value("verifier", "");
  b.node_id = j.value("node_id", "");
  b.report_sha256 = j.value("report_sha256", "");
  if (!IsLowerHexOfLength(b.report_sha256, 64)) return bad("report_sha256 is not a SHA-256");
  for (const auto& d : j["items"]) {
    if (!d.is_string() || !IsLowerHexOfLength(d.get<std::string>(), 64)) {
      return bad("items holds a value that is not a SHA-256");
    }
    b.item_digests.insert(d.get<std::string>());
  }
  return b;
}

Status SaveEvidenceBase(const std::string& path, const EvidenceBase& base) {
  nlohmann::json j = {{"format", kEvidenceBaseFormat},
                      {"verifier", base.verifier},
                      {"node_id", base.node_id},
                      {"report_sha256", base.report_sha256},
                      {"items", base.item_digests}};
  return WriteFileAtomic(path, AsBytes(strict_json::DumpJson(j)), 0600);
}

EvidenceBase EvidenceBaseOf(const report::ReportClaims& claims,
                            const std::string& jws, const std::string& verifier) {
  EvidenceBase b;
  b.verifier = verifier;
  b.node_id = claims.node_id;
  b.report_sha256 = Sha256Hex(AsBytes(jws));
  for (const device::Evidence& e : claims.evidence) {
    b.item_digests.insert(report::EvidenceItemDigest(e));
  }
  return b;
}

}  // namespace dpuaudit::apps
