// VerifierService: the audit log's checkpoints, the collateral every
// result names, and bundle export (issue 16, verifier/bundle.h,
// docs/audit.md).

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/crypto.h"
#include "common/strict_json.h"
#include "verifier/audit_chain.h"
#include "verifier/bundle.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {
namespace {

// SHA-256 over "<name>\0<sha256 of content>\n" for each regular file of
// `dir`, sorted by name: the EK CA set by content ("" when unreadable).
std::string DirectorySetSha256(const std::string& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) files.push_back(e.path());
  }
  if (ec) return "";
  std::sort(files.begin(), files.end());
  std::string manifest;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    manifest += f.filename().string();
    manifest.push_back('\0');
    manifest += Sha256Hex(AsBytes(body));
    manifest.push_back('\n');
  }
  return Sha256Hex(AsBytes(manifest));
}

// Entries per read when a bundle is assembled, and the most a bundle holds.
constexpr int64_t kEntryPage = 10'000;
constexpr int64_t kMaxBundleEntries = 2'000'000;

}  // namespace

Status VerifierService::EnsurePolicyRecorded(const Policy& p) {
  std::lock_guard<std::mutex> lock(collateral_mu_);
  if (policy_recorded_ == &p) return OkStatus();
  DPA_RETURN_IF_ERROR(
      store_->RecordPolicy(p.name(), p.sha256(), p.document(), clock_.NowUnixSeconds())
          .status());
  policy_recorded_ = &p;
  return OkStatus();
}

std::vector<report::CollateralRef> VerifierService::TrustAnchorsFor(bool tpm_bound,
                                                                   bool bmc_configured) {
  std::lock_guard<std::mutex> lock(collateral_mu_);
  std::vector<report::CollateralRef> out;
  if (tpm_bound && !options_.ek_ca_dir.empty()) {
    if (!ek_ca_sha256_) ek_ca_sha256_ = DirectorySetSha256(options_.ek_ca_dir);
    if (!ek_ca_sha256_->empty()) out.push_back({"ek-ca", *ek_ca_sha256_});
  }
  if (bmc_configured && bmc_ != nullptr && bmc_->anchors().size() > 0) {
    if (!dice_roots_sha256_) {
      std::vector<std::string> spki = bmc_->anchors().SpkiHashes();
      std::sort(spki.begin(), spki.end());
      std::string joined;
      for (const std::string& h : spki) joined += h + "\n";
      dice_roots_sha256_ = Sha256Hex(AsBytes(joined));
    }
    out.push_back({"dice-roots", *dice_roots_sha256_});
  }
  return out;
}

StatusOr<CheckpointRecord> VerifierService::Checkpoint() {
  DPA_ASSIGN_OR_RETURN(AuditLogHead head, store_->GetAuditLogHead());
  DPA_ASSIGN_OR_RETURN(std::vector<CheckpointRecord> latest, store_->ListCheckpoints(1));
  if (!latest.empty() && latest.front().size == head.size &&
      latest.front().head_hash == head.head_hash) {
    return latest.front();
  }
  verifier::Checkpoint cp{head.size, head.head_hash, clock_.NowUnixSeconds(),
                          options_.verifier_id};
  DPA_ASSIGN_OR_RETURN(std::string jws, SignCheckpoint(cp, *signer_, kid_));
  CheckpointRecord rec{cp.size, cp.head_hash, cp.time, jws};
  DPA_RETURN_IF_ERROR(store_->PutCheckpoint(rec));
  return rec;
}

StatusOr<std::string> VerifierService::ExportBundle(const std::optional<std::string>& bearer,
                                                    std::string_view node_id, int64_t since,
                                                    int64_t until) {
  DPA_RETURN_IF_ERROR(CheckReader(bearer));
  if (since < 0 || until < since) {
    return InvalidArgumentError("since must be >= 0 and until >= since.");
  }
  DPA_ASSIGN_OR_RETURN(NodeRecord node, store_->GetNode(node_id));
  Bundle b;
  b.node_id = node.node_id;
  b.exported_at = clock_.NowUnixSeconds();
  b.since = since;
  b.until = until;
  b.verifier_instance = options_.verifier_id;
  b.verifier_keys = Jwks();
  DPA_ASSIGN_OR_RETURN(std::vector<ReportRecord> reports,
                       store_->ListNodeReports(node.node_id, since, until));
  for (const ReportRecord& r : reports) {
    b.reports.push_back({r.id, r.sha256, r.received_at, r.accepted, r.error,
                         r.received_bytes > 0 ? r.received_bytes
                                              : static_cast<int64_t>(r.jws.size()),
                         r.jws});
  }
  DPA_ASSIGN_OR_RETURN(std::vector<ResultRecord> results,
                       store_->ListNodeResults(node.node_id, since, until));
  std::set<std::string> wanted;
  for (const ResultRecord& r : results) {
    b.results.push_back({r.id, r.report_jws_sha256, r.created_at, r.decision, r.ear_jwt,
                         r.context_json});
    if (r.context_json.empty()) continue;
    auto ctx = strict_json::ParseStrictJson(AsBytes(r.context_json), "appraisal context");
    if (!ctx.ok()) continue;  // the bundle verifier names it
    for (const char* key : {"policy_sha256", "refvals_sha256"}) {
      if (ctx->contains(key) && (*ctx)[key].is_string()) wanted.insert((*ctx)[key]);
    }
  }
  for (const std::string& sha : wanted) {
    std::string kind;
    StatusOr<std::string> body = store_->GetCollateral(sha, &kind);
    if (!body.ok()) {
      if (body.status().code() == StatusCode::kNotFound) continue;  // named on verify
      return body.status();
    }
    b.collateral.push_back({sha, kind, *std::move(body)});
  }
  // The log from the node's first entry of the window to a fresh checkpoint.
  DPA_ASSIGN_OR_RETURN(CheckpointRecord cp, Checkpoint());
  DPA_ASSIGN_OR_RETURN(int64_t first, store_->FirstAuditSeqForNode(node.node_id, since));
  if (first == 0 || first > cp.size) first = std::max<int64_t>(cp.size, 1);
  if (cp.size > 0 && cp.size - first + 1 > kMaxBundleEntries) {
    return ResourceExhaustedError(
        "the bundle would hold " + std::to_string(cp.size - first + 1) +
        " audit log entries, over " + std::to_string(kMaxBundleEntries) +
        "; narrow it with since.");
  }
  for (int64_t seq = first; cp.size > 0 && seq <= cp.size;) {
    DPA_ASSIGN_OR_RETURN(std::vector<AuditLogRow> rows,
                         store_->ListAuditLog(seq, std::min(kEntryPage, cp.size - seq + 1)));
    if (rows.empty()) break;
    for (AuditLogRow& r : rows) {
      b.entries.push_back({r.seq, std::move(r.entry), std::move(r.prev_hash),
                           std::move(r.entry_hash)});
    }
    seq = b.entries.back().seq + 1;
  }
  b.checkpoint = cp.jws;
  return strict_json::DumpJson(BundleJson(b));
}

}  // namespace dpuaudit::verifier
