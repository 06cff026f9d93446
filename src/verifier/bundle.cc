#include "verifier/bundle.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "attest/tpm_claims.h"
#include "common/crypto.h"
#include "common/strict_json.h"
#include "firmware/boot_chain.h"
#include "report/claims.h"
#include "report/ear.h"
#include "verifier/appraisal_context.h"
#include "verifier/appraise.h"
#include "verifier/refvals/index.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;
using strict_json::Index;
using strict_json::ObjectReader;
using strict_json::Quote;

std::string Short(std::string_view hex) { return std::string(hex.substr(0, 12)) + "…"; }

std::string ReportName(const BundleReport& r) {
  return "report " + std::to_string(r.report_id) + " (sha256 " + Short(r.sha256) + ")";
}
std::string ResultName(const BundleResult& r) {
  return "result " + std::to_string(r.result_id);
}

bool IsBmcRule(const std::string& id) {
  return id.rfind("bmc.", 0) == 0 || id.rfind("irot.", 0) == 0 || id.rfind("erot.", 0) == 0;
}

// What an entry's data says, read loosely: entries passed VerifyAuditChain.
int64_t IntOf(const json& data, const char* key) {
  auto it = data.find(key);
  return it != data.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}
std::string StrOf(const json& data, const char* key) {
  auto it = data.find(key);
  return it != data.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The collateral a re-appraisal needs, parsed once per hash.
struct Collateral {
  std::map<std::string, const BundleCollateral*> by_hash;
  std::map<std::string, std::shared_ptr<const Policy>> policies;
  std::map<std::string, std::shared_ptr<const RefIndex>> refs;
};

StatusOr<std::shared_ptr<const Policy>> PolicyOf(Collateral& c, const std::string& sha) {
  if (auto it = c.policies.find(sha); it != c.policies.end()) return it->second;
  auto it = c.by_hash.find(sha);
  if (it == c.by_hash.end() || it->second->kind != "policy") {
    return NotFoundError("policy " + Short(sha) + " is not in the bundle");
  }
  DPA_ASSIGN_OR_RETURN(Policy p, Policy::Create(it->second->body, KnownRules()));
  auto shared = std::make_shared<const Policy>(std::move(p));
  c.policies[sha] = shared;
  return shared;
}

StatusOr<std::shared_ptr<const RefIndex>> RefsOf(Collateral& c, const std::string& sha) {
  if (auto it = c.refs.find(sha); it != c.refs.end()) return it->second;
  auto it = c.by_hash.find(sha);
  if (it == c.by_hash.end() || it->second->kind != "refvals") {
    return NotFoundError("reference values " + Short(sha) + " are not in the bundle");
  }
  DPA_ASSIGN_OR_RETURN(std::vector<RefRelease> releases,
                       ParseRefManifest(it->second->body, 0));
  auto index = std::make_shared<const RefIndex>(std::move(releases));
  if (index->sha256() != sha) {
    return InvalidArgumentError("reference values " + Short(sha) +
                                " do not read back to the same canonical manifest");
  }
  c.refs[sha] = index;
  return index;
}

// Node keys by (PEM, thumbprint), decoded once per bundle: a PEM decode
// costs as much as a signature check.
using KeyCache = std::map<std::pair<std::string, std::string>, std::shared_ptr<Es256Verifier>>;

StatusOr<std::shared_ptr<Es256Verifier>> NodeKey(KeyCache& cache, const NodeRecord& node) {
  auto k = std::make_pair(node.public_key_pem, node.key_thumbprint);
  if (auto it = cache.find(k); it != cache.end()) return it->second;
  DPA_ASSIGN_OR_RETURN(EcPublicKey key, EcPublicKey::FromPem(node.public_key_pem));
  if (key.Thumbprint() != node.key_thumbprint) {
    return InvalidArgumentError("the context's node key does not match its thumbprint");
  }
  DPA_ASSIGN_OR_RETURN(std::unique_ptr<Es256Verifier> verifier, Es256Verifier::New(key));
  std::shared_ptr<Es256Verifier> shared = std::move(verifier);
  cache[k] = shared;
  return shared;
}

// Appraise exactly as the verifier did, from the context, with `policy`.
// `reports`: the bundle's accepted reports with a body, by JWS digest, for
// the base of a dpuaudit-report/2 report (docs/architecture.md#report-format).
StatusOr<Appraisal> Reappraise(const AppraisalContext& ctx, const BundleReport& report,
                               const Policy& policy, const RefIndex& refs, KeyCache& keys,
                               const std::map<std::string, const BundleReport*>& reports) {
  DPA_ASSIGN_OR_RETURN(std::shared_ptr<Es256Verifier> verifier, NodeKey(keys, ctx.node));
  StatusOr<report::VerifiedReport> verified = report::VerifyReport(report.jws, *verifier);
  if (!verified.ok()) {
    return UnauthenticatedError("the report does not verify under the node key " +
                                Short(ctx.node.key_thumbprint) + ": " +
                                verified.status().message());
  }
  if (!verified->claims.evidence_resolved) {
    // Its by-digest evidence from its base, in the bundle, verified under
    // the same node key and carrying every item in full.
    const std::string& base_sha = verified->claims.evidence_base;
    auto base = reports.find(base_sha);
    if (base == reports.end() || base->second->jws.empty()) {
      return FailedPreconditionError("the report carries evidence by digest and its base " +
                                     base_sha.substr(0, 16) + "… is not in the bundle");
    }
    StatusOr<report::VerifiedReport> b = report::VerifyReport(base->second->jws, *verifier);
    if (!b.ok() || b->claims.node_id != verified->claims.node_id ||
        !b->claims.by_digest.empty() ||
        !report::ResolveEvidence(verified->claims,
                                 report::IndexHeldEvidence(b->claims.evidence))
             .empty()) {
      return FailedPreconditionError("the report's base " + base_sha.substr(0, 16) +
                                     "… does not hold its evidence carried by digest");
    }
  }
  std::optional<firmware::BootChainInfo> boot;
  if (!verified->claims.boot_chain.empty()) {
    DPA_ASSIGN_OR_RETURN(firmware::BootChainInfo parsed,
                         firmware::ParseBootChainJson(verified->claims.boot_chain));
    boot = std::move(parsed);
  }
  std::optional<attest::TpmClaims> tpm_claims;
  if (verified->claims.tpm) {
    DPA_ASSIGN_OR_RETURN(attest::TpmClaims parsed, attest::ParseTpmClaims(*verified->claims.tpm));
    tpm_claims = std::move(parsed);
  }
  AppraisalInput in;
  in.report = &*verified;
  in.boot_chain = boot ? &*boot : nullptr;
  in.tpm_claims = tpm_claims ? &*tpm_claims : nullptr;
  in.node = &ctx.node;
  in.tpm_binding = ctx.tpm_binding ? &*ctx.tpm_binding : nullptr;
  in.refs = &refs;
  in.previous_release = ctx.previous_release;
  in.policy = &policy;
  in.verifier_id = ctx.verifier_id;
  in.bmc_configured = ctx.bmc_configured;
  in.bmc = nullptr;  // the pull is not in the bundle: see "partial"
  in.bmc_max_age_seconds = ctx.bmc_max_age_seconds;
  in.bmc_key_sha256 = ctx.bmc_key_sha256;
  in.now = ctx.now;
  in.trust_anchors = ctx.trust_anchors;
  return Appraise(in);
}

// The first difference between two results, in words ("" when equal).
std::string Difference(const report::AttestationResult& recorded,
                       const report::AttestationResult& recomputed, bool bmc_partial) {
  const auto& a = recorded.dpuaudit;
  const auto& b = recomputed.dpuaudit;
  if (!bmc_partial && a.decision != b.decision) {
    return "decision recorded " + std::string(report::DecisionName(a.decision)) +
           ", re-appraised " + std::string(report::DecisionName(b.decision));
  }
  std::map<std::string, const report::DecisionReason*> ra, rb;
  for (const auto& r : a.reasons) if (!(bmc_partial && IsBmcRule(r.rule_id))) ra[r.rule_id] = &r;
  for (const auto& r : b.reasons) if (!(bmc_partial && IsBmcRule(r.rule_id))) rb[r.rule_id] = &r;
  for (const auto& [id, r] : ra) {
    auto it = rb.find(id);
    if (it == rb.end()) return "reason " + id + " is recorded but not re-derived";
    if (!(*r == *it->second)) {
      return "reason " + id + ": recorded " + std::string(VerdictName(r->verdict)) +
             " (observed " + Quote(r->observed) + "), re-appraised " +
             std::string(VerdictName(it->second->verdict)) + " (observed " +
             Quote(it->second->observed) + ")";
    }
  }
  for (const auto& [id, r] : rb) {
    if (!ra.count(id)) return "reason " + id + " is re-derived but not recorded";
  }
  if (bmc_partial) return "";
  if (a.policy != b.policy) return "the policy it names differs";
  if (a.collateral != b.collateral) return "the collateral it names differs";
  if (a.report_sha256 != b.report_sha256) return "the report it names differs";
  if (recorded.iat != recomputed.iat || recorded.exp != recomputed.exp) {
    return "iat/exp differ";
  }
  if (recorded.submods != recomputed.submods) return "the AR4SI submods differ";
  if (!(recorded == recomputed)) return "the EAR differs from the re-appraisal";
  return "";
}

}  // namespace

json BundleJson(const Bundle& b) {
  json reports = json::array(), results = json::array(), collateral = json::array(),
       entries = json::array();
  for (const BundleReport& r : b.reports) {
    reports.push_back({{"report_id", r.report_id}, {"sha256", r.sha256},
                       {"received_at", r.received_at}, {"accepted", r.accepted},
                       {"error", r.error}, {"bytes", r.bytes}, {"jws", r.jws}});
  }
  for (const BundleResult& r : b.results) {
    results.push_back({{"result_id", r.result_id}, {"report_sha256", r.report_sha256},
                       {"created_at", r.created_at}, {"decision", r.decision},
                       {"ear", r.ear}, {"context", r.context}});
  }
  for (const BundleCollateral& c : b.collateral) {
    collateral.push_back({{"sha256", c.sha256}, {"kind", c.kind}, {"body", c.body}});
  }
  for (const ChainedEntry& e : b.entries) {
    entries.push_back({{"seq", e.seq}, {"entry", e.entry}, {"prev_hash", e.prev_hash},
                       {"entry_hash", e.entry_hash}});
  }
  return {{"bundle", kBundleFormat},
          {"node_id", b.node_id},
          {"exported_at", b.exported_at},
          {"since", b.since},
          {"until", b.until},
          {"verifier", {{"instance", b.verifier_instance}, {"keys", b.verifier_keys}}},
          {"reports", std::move(reports)},
          {"results", std::move(results)},
          {"collateral", std::move(collateral)},
          {"log", {{"entries", std::move(entries)}, {"checkpoint", b.checkpoint}}}};
}

StatusOr<Bundle> ParseBundle(std::string_view text) {
  if (text.size() > kMaxBundleBytes) {
    return ResourceExhaustedError("bundle is " + std::to_string(text.size()) +
                                  " bytes, over the limit of " +
                                  std::to_string(kMaxBundleBytes) + ".");
  }
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(AsBytes(text), "bundle"));
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, ""));
  DPA_ASSIGN_OR_RETURN(std::string format, r.String("bundle"));
  if (format != kBundleFormat) {
    return InvalidArgumentError("bundle " + Quote(format) + " is not " +
                                std::string(kBundleFormat) + ".");
  }
  Bundle b;
  DPA_ASSIGN_OR_RETURN(b.node_id, r.String("node_id"));
  DPA_ASSIGN_OR_RETURN(b.exported_at, r.Int64("exported_at"));
  DPA_ASSIGN_OR_RETURN(b.since, r.Int64("since"));
  DPA_ASSIGN_OR_RETURN(b.until, r.Int64("until"));
  DPA_ASSIGN_OR_RETURN(const json* verifier, r.Object("verifier"));
  {
    DPA_ASSIGN_OR_RETURN(ObjectReader v, ObjectReader::New(*verifier, "verifier"));
    DPA_ASSIGN_OR_RETURN(b.verifier_instance, v.String("instance"));
    DPA_ASSIGN_OR_RETURN(const json* keys, v.Object("keys"));
    b.verifier_keys = *keys;
    DPA_RETURN_IF_ERROR(v.Finish());
  }
  DPA_ASSIGN_OR_RETURN(const json* reports, r.Array("reports"));
  for (size_t i = 0; i < reports->size(); ++i) {
    DPA_ASSIGN_OR_RETURN(ObjectReader x, ObjectReader::New((*reports)[i], Index("reports", i)));
    BundleReport rep;
    DPA_ASSIGN_OR_RETURN(rep.report_id, x.Int64("report_id"));
    DPA_ASSIGN_OR_RETURN(rep.sha256, x.String("sha256"));
    DPA_ASSIGN_OR_RETURN(rep.received_at, x.Int64("received_at"));
    DPA_ASSIGN_OR_RETURN(rep.accepted, x.Bool("accepted"));
    DPA_ASSIGN_OR_RETURN(rep.error, x.String("error"));
    DPA_ASSIGN_OR_RETURN(rep.bytes, x.Int64("bytes"));
    DPA_ASSIGN_OR_RETURN(rep.jws, x.String("jws"));
    DPA_RETURN_IF_ERROR(x.Finish());
    b.reports.push_back(std::move(rep));
  }
  DPA_ASSIGN_OR_RETURN(const json* results, r.Array("results"));
  for (size_t i = 0; i < results->size(); ++i) {
    DPA_ASSIGN_OR_RETURN(ObjectReader x, ObjectReader::New((*results)[i], Index("results", i)));
    BundleResult res;
    DPA_ASSIGN_OR_RETURN(res.result_id, x.Int64("result_id"));
    DPA_ASSIGN_OR_RETURN(res.report_sha256, x.String("report_sha256"));
    DPA_ASSIGN_OR_RETURN(res.created_at, x.Int64("created_at"));
    DPA_ASSIGN_OR_RETURN(res.decision, x.String("decision"));
    DPA_ASSIGN_OR_RETURN(res.ear, x.String("ear"));
    DPA_ASSIGN_OR_RETURN(res.context, x.String("context"));
    DPA_RETURN_IF_ERROR(x.Finish());
    b.results.push_back(std::move(res));
  }
  DPA_ASSIGN_OR_RETURN(const json* collateral, r.Array("collateral"));
  for (size_t i = 0; i < collateral->size(); ++i) {
    DPA_ASSIGN_OR_RETURN(ObjectReader x,
                         ObjectReader::New((*collateral)[i], Index("collateral", i)));
    BundleCollateral c;
    DPA_ASSIGN_OR_RETURN(c.sha256, x.String("sha256"));
    DPA_ASSIGN_OR_RETURN(c.kind, x.String("kind"));
    DPA_ASSIGN_OR_RETURN(c.body, x.String("body"));
    DPA_RETURN_IF_ERROR(x.Finish());
    if (c.kind != "policy" && c.kind != "refvals") {
      return InvalidArgumentError(Index("collateral", i) + ".kind " + Quote(c.kind) +
                                  " is not policy|refvals.");
    }
    b.collateral.push_back(std::move(c));
  }
  DPA_ASSIGN_OR_RETURN(const json* log, r.Object("log"));
  {
    DPA_ASSIGN_OR_RETURN(ObjectReader l, ObjectReader::New(*log, "log"));
    DPA_ASSIGN_OR_RETURN(const json* entries, l.Array("entries"));
    for (size_t i = 0; i < entries->size(); ++i) {
      DPA_ASSIGN_OR_RETURN(ObjectReader x,
                           ObjectReader::New((*entries)[i], Index("log.entries", i)));
      ChainedEntry e;
      DPA_ASSIGN_OR_RETURN(e.seq, x.Int64("seq"));
      DPA_ASSIGN_OR_RETURN(e.entry, x.String("entry"));
      DPA_ASSIGN_OR_RETURN(e.prev_hash, x.String("prev_hash"));
      DPA_ASSIGN_OR_RETURN(e.entry_hash, x.String("entry_hash"));
      DPA_RETURN_IF_ERROR(x.Finish());
      b.entries.push_back(std::move(e));
    }
    DPA_ASSIGN_OR_RETURN(b.checkpoint, l.String("checkpoint"));
    DPA_RETURN_IF_ERROR(l.Finish());
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return b;
}

BundleVerdict VerifyBundle(const Bundle& b, const report::TrustedKeys& keys) {
  BundleVerdict v;
  auto fail = [&](std::string item, std::string why) {
    v.failures.push_back({std::move(item), std::move(why)});
  };
  v.entries = static_cast<int64_t>(b.entries.size());
  v.reports = static_cast<int64_t>(b.reports.size());
  v.results = static_cast<int64_t>(b.results.size());

  // 1. The checkpoint, under a pinned verifier key.
  StatusOr<Checkpoint> cp = VerifyCheckpoint(b.checkpoint, keys, &v.checkpoint_kid);
  if (!cp.ok()) {
    fail("checkpoint", cp.status().message());
  } else {
    v.checkpoint = *cp;
  }
  // 2. The chain of entries, ending at the checkpoint's head.
  bool chain_ok = false;
  if (b.entries.empty()) {
    if (cp.ok() && cp->size > 0) fail("audit log", "the bundle holds no entries");
  } else {
    Status chained = VerifyAuditChain(b.entries, b.entries.front().prev_hash);
    if (!chained.ok()) {
      std::string msg = chained.message();
      size_t colon = msg.find(": ");
      fail(colon == std::string::npos ? "audit log" : msg.substr(0, colon),
           colon == std::string::npos ? msg : msg.substr(colon + 2));
    } else {
      chain_ok = true;
      if (cp.ok() && (b.entries.back().seq != cp->size ||
                      b.entries.back().entry_hash != cp->head_hash)) {
        fail("checkpoint", "it covers " + std::to_string(cp->size) + " entries with head " +
                               Short(cp->head_hash) + ", the log segment ends at entry " +
                               std::to_string(b.entries.back().seq) + " with hash " +
                               Short(b.entries.back().entry_hash));
        chain_ok = false;
      }
    }
  }
  // 3. The entries of this node, and what retention removed.
  std::map<int64_t, AuditEntry> report_entries, result_entries;  // by item id
  std::set<int64_t> pruned_bodies, deleted_results, deleted_reports;
  bool first_node_entry = true;
  for (const ChainedEntry& c : b.entries) {
    StatusOr<AuditEntry> e = ParseAuditEntry(c.entry);
    if (!e.ok()) continue;  // reported by VerifyAuditChain
    if (e->kind == kAuditRetention) {
      for (const json& id : e->data.value("bodies_dropped", json::array())) {
        if (id.is_number_integer()) pruned_bodies.insert(id.get<int64_t>());
      }
      for (const json& d : e->data.value("results_deleted", json::array())) {
        if (!d.is_object()) continue;
        deleted_results.insert(IntOf(d, "result_id"));
        deleted_reports.insert(IntOf(d, "report_id"));
      }
      continue;
    }
    if (e->node_id != b.node_id) continue;
    if (first_node_entry && e->time >= b.since) {
      first_node_entry = false;
      // The node's entry before the segment must predate the window.
      const json& prev = e->data.contains("node_prev") ? e->data["node_prev"] : json();
      if (prev.is_object() && IntOf(prev, "time") >= b.since && IntOf(prev, "seq") < c.seq &&
          IntOf(prev, "seq") < b.entries.front().seq) {
        fail("audit log entry " + std::to_string(c.seq),
             "the node's previous entry (" + std::to_string(IntOf(prev, "seq")) +
                 ") is inside the window but not in the bundle: entries were cut "
                 "from the front");
      }
    }
    if (e->time < b.since || e->time > b.until) continue;
    if (e->kind == kAuditReportAccepted || e->kind == kAuditReportRefused) {
      report_entries[IntOf(e->data, "report_id")] = *e;
    } else if (e->kind == kAuditResult) {
      result_entries[IntOf(e->data, "result_id")] = *e;
    }
  }
  if (!chain_ok) {
    v.verified = false;
    return v;  // nothing below can be trusted to match
  }
  // 4. Collateral hashes.
  Collateral coll;
  KeyCache node_keys;
  for (const BundleCollateral& c : b.collateral) {
    if (Sha256Hex(AsBytes(c.body)) != c.sha256) {
      fail("collateral " + c.kind + " " + Short(c.sha256),
           "its body hashes to " + Short(Sha256Hex(AsBytes(c.body))) + ", not to its name");
      continue;
    }
    coll.by_hash[c.sha256] = &c;
  }
  // 5. Reports against the log, both ways.
  std::map<std::string, const BundleReport*> report_by_sha;
  std::set<int64_t> seen_reports;
  for (const BundleReport& r : b.reports) {
    seen_reports.insert(r.report_id);
    auto it = report_entries.find(r.report_id);
    if (it == report_entries.end()) {
      fail(ReportName(r), "no audit log entry of the node's window records it");
      continue;
    }
    const AuditEntry& e = it->second;
    if (StrOf(e.data, "report_sha256") != r.sha256 ||
        (e.kind == kAuditReportAccepted) != r.accepted) {
      fail(ReportName(r), "it differs from audit log entry " + std::to_string(e.seq));
      continue;
    }
    if (r.jws.empty()) {
      if (r.accepted && !pruned_bodies.count(r.report_id)) {
        fail(ReportName(r), "its body is missing and no retention entry removed it");
      } else {
        ++v.pruned;
      }
      continue;
    }
    if (r.accepted && Sha256Hex(AsBytes(r.jws)) != r.sha256) {
      fail(ReportName(r), "its bytes hash to " + Short(Sha256Hex(AsBytes(r.jws))) +
                              ", not to the sha256 the log records");
      continue;
    }
    if (r.accepted) report_by_sha[r.sha256] = &r;
  }
  for (const auto& [id, e] : report_entries) {
    if (e.kind != kAuditReportAccepted || seen_reports.count(id)) continue;
    if (deleted_reports.count(id)) {
      ++v.pruned;
      continue;
    }
    fail("audit log entry " + std::to_string(e.seq),
         "report " + std::to_string(id) + " (sha256 " + Short(StrOf(e.data, "report_sha256")) +
             ") of the node's window is not in the bundle");
  }
  // 6. Results: log, EAR signature, collateral, re-appraisal.
  std::set<int64_t> seen_results;
  for (const BundleResult& r : b.results) {
    seen_results.insert(r.result_id);
    const std::string name = ResultName(r);
    auto it = result_entries.find(r.result_id);
    if (it == result_entries.end()) {
      fail(name, "no audit log entry of the node's window records it");
      continue;
    }
    const AuditEntry& e = it->second;
    if (StrOf(e.data, "ear_sha256") != Sha256Hex(AsBytes(r.ear))) {
      fail(name, "its EAR is not the one audit log entry " + std::to_string(e.seq) +
                     " records");
      continue;
    }
    if (StrOf(e.data, "decision") != r.decision ||
        StrOf(e.data, "report_sha256") != r.report_sha256) {
      fail(name, "its decision or report differs from audit log entry " +
                     std::to_string(e.seq) + " (logged " + StrOf(e.data, "decision") + ")");
      continue;
    }
    const std::string logged_ctx = StrOf(e.data, "context_sha256");
    if (logged_ctx != (r.context.empty() ? "" : Sha256Hex(AsBytes(r.context)))) {
      fail(name, "its appraisal context is not the one audit log entry " +
                     std::to_string(e.seq) + " records");
      continue;
    }
    StatusOr<report::AttestationResult> ear = report::VerifyPinnedEar(
        r.ear, keys, std::max(b.exported_at, r.created_at), report::kDefaultMaxSkewSeconds,
        /*allow_expired=*/true);
    if (!ear.ok()) {
      fail(name, "its EAR does not verify under the pinned verifier keys: " +
                     ear.status().message());
      continue;
    }
    if (ear->dpuaudit.node_id != b.node_id ||
        std::string(report::DecisionName(ear->dpuaudit.decision)) != r.decision ||
        ear->dpuaudit.report_sha256 != r.report_sha256) {
      fail(name, "its signed EAR says node " + Quote(ear->dpuaudit.node_id) + ", decision " +
                     std::string(report::DecisionName(ear->dpuaudit.decision)) +
                     ": not what the bundle records");
      continue;
    }
    if (r.context.empty()) {
      ++v.not_reappraisable;
      continue;
    }
    StatusOr<AppraisalContext> ctx = ParseAppraisalContext(r.context);
    if (!ctx.ok()) {
      fail(name, "appraisal context: " + ctx.status().message());
      continue;
    }
    if (ear->dpuaudit.policy.sha256 != ctx->policy_sha256 ||
        (!ear->dpuaudit.collateral.empty() &&
         ear->dpuaudit.collateral.refvals_sha256 != ctx->refvals_sha256)) {
      fail(name, "the policy or reference values its signed EAR names differ from its "
                 "appraisal context");
      continue;
    }
    if (ctx->node.node_id != b.node_id) {
      fail(name, "its appraisal context is about node " + Quote(ctx->node.node_id));
      continue;
    }
    auto rep = report_by_sha.find(r.report_sha256);
    if (rep == report_by_sha.end()) {
      bool pruned = false;
      for (const BundleReport& x : b.reports) {
        pruned = pruned || (x.sha256 == r.report_sha256 && x.jws.empty());
      }
      if (!pruned) {
        for (const auto& [id, re] : report_entries) {
          pruned = pruned || (StrOf(re.data, "report_sha256") == r.report_sha256 &&
                              deleted_reports.count(id));
        }
      }
      if (pruned) {
        ++v.not_reappraisable;
      } else {
        fail(name, "the report it appraises (sha256 " + Short(r.report_sha256) +
                       ") is not in the bundle");
      }
      continue;
    }
    StatusOr<std::shared_ptr<const Policy>> policy = PolicyOf(coll, ctx->policy_sha256);
    if (!policy.ok()) {
      fail(name, policy.status().message());
      continue;
    }
    StatusOr<std::shared_ptr<const RefIndex>> refs = RefsOf(coll, ctx->refvals_sha256);
    if (!refs.ok()) {
      fail(name, refs.status().message());
      continue;
    }
    StatusOr<Appraisal> again =
        Reappraise(*ctx, *rep->second, **policy, **refs, node_keys, report_by_sha);
    if (!again.ok()) {
      fail(name, "re-appraisal: " + again.status().message());
      continue;
    }
    report::AttestationResult recorded = *ear;
    // A withdrawal after a reference-value change (VerifierService::
    // ReappraiseNode) says so in a first reason the appraisal does not make.
    if (!recorded.dpuaudit.reasons.empty() &&
        recorded.dpuaudit.reasons.front().rule_id == "verifier.reappraisal") {
      recorded.dpuaudit.reasons.erase(recorded.dpuaudit.reasons.begin());
    }
    std::string diff = Difference(recorded, again->result, ctx->bmc_configured);
    if (!diff.empty()) {
      fail(name, "re-appraised with the bundled policy and reference values: " + diff);
      continue;
    }
    if (ctx->bmc_configured) {
      ++v.reappraised_partial;
    } else {
      ++v.reappraised_full;
    }
  }
  for (const auto& [id, e] : result_entries) {
    if (seen_results.count(id)) continue;
    if (deleted_results.count(id)) {
      ++v.pruned;
      continue;
    }
    fail("audit log entry " + std::to_string(e.seq),
         "result " + std::to_string(id) + " (" + StrOf(e.data, "decision") +
             ") of the node's window is not in the bundle");
  }
  v.verified = v.failures.empty();
  return v;
}

std::vector<WhatIf> WhatIfUnder(const Bundle& b, const Policy& candidate) {
  std::vector<WhatIf> out;
  Collateral coll;
  KeyCache node_keys;
  for (const BundleCollateral& c : b.collateral) coll.by_hash[c.sha256] = &c;
  std::map<std::string, const BundleReport*> report_by_sha;
  for (const BundleReport& r : b.reports) {
    if (r.accepted && !r.jws.empty()) report_by_sha[r.sha256] = &r;
  }
  for (const BundleResult& r : b.results) {
    WhatIf w;
    w.result_id = r.result_id;
    w.node_id = b.node_id;
    w.created_at = r.created_at;
    w.recorded = r.decision;
    auto error = [&](std::string why) {
      w.error = std::move(why);
      out.push_back(w);
    };
    if (r.context.empty()) { error("no appraisal context was recorded"); continue; }
    StatusOr<AppraisalContext> ctx = ParseAppraisalContext(r.context);
    if (!ctx.ok()) { error(ctx.status().message()); continue; }
    auto rep = report_by_sha.find(r.report_sha256);
    if (rep == report_by_sha.end()) { error("the report body is not in the bundle"); continue; }
    StatusOr<std::shared_ptr<const RefIndex>> refs = RefsOf(coll, ctx->refvals_sha256);
    if (!refs.ok()) { error(refs.status().message()); continue; }
    StatusOr<std::shared_ptr<const Policy>> recorded_policy = PolicyOf(coll, ctx->policy_sha256);
    if (!recorded_policy.ok()) { error(recorded_policy.status().message()); continue; }
    StatusOr<Appraisal> before =
        Reappraise(*ctx, *rep->second, **recorded_policy, **refs, node_keys, report_by_sha);
    StatusOr<Appraisal> after =
        Reappraise(*ctx, *rep->second, candidate, **refs, node_keys, report_by_sha);
    if (!before.ok() || !after.ok()) {
      error((before.ok() ? after : before).status().message());
      continue;
    }
    w.candidate = std::string(report::DecisionName(after->result.dpuaudit.decision));
    auto failing = [](const Appraisal& a) {
      std::set<std::string> ids;
      for (const auto& reason : a.result.dpuaudit.reasons) {
        if (reason.verdict != Verdict::kPass && reason.action != report::kActionWarn) {
          ids.insert(reason.rule_id);
        }
      }
      return ids;
    };
    std::set<std::string> was = failing(*before), now = failing(*after);
    for (const std::string& id : now) if (!was.count(id)) w.newly_failing.push_back(id);
    for (const std::string& id : was) if (!now.count(id)) w.no_longer_failing.push_back(id);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace dpuaudit::verifier
