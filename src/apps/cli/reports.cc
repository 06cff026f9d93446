#include "apps/cli/reports.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/cli/cli_util.h"
#include "apps/cli/firmware.h"
#include "apps/cli/quote.h"
#include "apps/cli/report_view.h"
#include "apps/shared/http_client.h"
#include "apps/shared/table.h"
#include "apps/shared/token_file.h"
#include "apps/shared/utc_time.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "device/evidence.h"
#include "device/memoizing_source.h"
#include "firmware/boot_chain.h"
#include "isolation/device_facts.h"
#include "report/claims.h"
#include "report/jws.h"

namespace dpuaudit::apps {
namespace {

using nlohmann::json;

constexpr size_t kColumns = 100;  // the width human output fits
// Every finding of a report is the agent's own claim over evidence from the
// Arm OS (docs/architecture.md, claim tiers): re-deriving it here checks the
// agent's parsing, not the bytes.
constexpr char kReportTier[] = "self-reported";

StatusOr<std::unique_ptr<HttpClient>> Client(const ReadTarget& t) {
  HttpClientOptions o;
  o.ca_file = t.cacert;
  o.insecure_http = t.insecure_http;
  return HttpClient::New(t.verifier, o);
}

StatusOr<json> GetJson(const HttpClient& c, const ReadTarget& t, const std::string& path) {
  std::string token;
  if (!t.token_file.empty()) {
    DPA_ASSIGN_OR_RETURN(token, ReadTokenFile(t.token_file, "reader"));
  }
  DPA_ASSIGN_OR_RETURN(HttpResponse r, c.GetWithBearer(path, token));
  if (r.status != 200) return StatusFromHttpError(r);
  auto j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return InvalidArgumentError("GET " + path + ": not JSON.");
  return j;
}

// What `report show|firmware` say about the JWS signature.
struct SignatureCheck {
  bool checked = false;   // a key was given (--pubkey or the verifier's record)
  bool verified = false;  // ... and the signature verifies under it
  std::string key_thumbprint;  // the key checked against (when checked)
  std::string key_source;      // "--pubkey FILE" | "verifier URL, node KID"
  std::string reason;          // why not checked, or why it does not verify

  std::string Line() const {
    if (!checked) return "NOT CHECKED (give --pubkey or --verifier); claims below are unverified";
    if (!verified) return "INVALID: " + reason;
    return "valid (ES256, key " + key_thumbprint + ")";
  }
  json Json() const {
    json j = {{"checked", checked}, {"verified", verified}};
    if (checked) {
      j["key_thumbprint"] = key_thumbprint;
      j["key_source"] = key_source;
    }
    if (!reason.empty()) j["reason"] = reason;
    return j;
  }
};

// A report read for display. `claims` is unset exactly when a key was
// given and the signature does not verify: claims are never shown under a
// bad signature.
struct LoadedReport {
  std::string text;  // the JWS as read (trimmed), whose sha256 an EAR names
  report::UnverifiedJwsHeader header;
  SignatureCheck signature;
  std::optional<report::ReportClaims> claims;
};

StatusOr<LoadedReport> LoadReportForDisplay(const std::string& file,
                                            const std::string& pubkey_file,
                                            const ReadTarget& verifier) {
  auto text = ReadText(file);  // "-": stdin
  if (!text.ok()) return text.status().WithPrefix(file);
  const std::string& jws = *text;
  DPA_RETURN_IF_ERROR(CheckJwsKind(jws, JwsKind::kReport, file));
  LoadedReport out;
  out.text = jws;
  auto header = report::PeekUnverifiedHeader(jws);
  if (!header.ok()) return header.status().WithPrefix(file);
  out.header = *header;
  std::optional<EcPublicKey> key;
  if (!pubkey_file.empty()) {
    DPA_ASSIGN_OR_RETURN(std::string pem, ReadText(pubkey_file));
    auto k = EcPublicKey::FromPem(pem);
    if (!k.ok()) return k.status().WithPrefix(pubkey_file);
    key = *k;
    out.signature.key_source = "--pubkey " + pubkey_file;
  } else if (!verifier.verifier.empty()) {
    DPA_ASSIGN_OR_RETURN(auto c, Client(verifier));
    DPA_ASSIGN_OR_RETURN(json node, GetJson(*c, verifier, "/v1/nodes/" + header->kid));
    if (!node.contains("public_key")) {
      return InvalidArgumentError("verifier did not return the node's key.");
    }
    DPA_ASSIGN_OR_RETURN(EcPublicKey k, report::ParsePublicJwk(node["public_key"]));
    key = k;
    out.signature.key_source = "verifier " + verifier.verifier + ", node " + header->kid;
  }
  if (key) {
    out.signature.checked = true;
    out.signature.key_thumbprint = key->Thumbprint();
    DPA_ASSIGN_OR_RETURN(auto v, Es256Verifier::New(*key));
    auto verified = report::VerifyReport(jws, *v);
    if (!verified.ok()) {
      out.signature.reason = verified.status().message();
      return out;  // no claims: never show claims under a bad signature
    }
    out.signature.verified = true;
    out.claims = verified->claims;
    return out;
  }
  out.signature.reason = "no key given (--pubkey or --verifier): the claims are unverified";
  DPA_ASSIGN_OR_RETURN(Bytes payload, UnverifiedJwsPayload(jws));
  auto parsed = report::ParseClaims(payload);
  if (!parsed.ok()) return parsed.status().WithPrefix(file);
  out.claims = *parsed;
  return out;
}

json HeaderJson(const report::UnverifiedJwsHeader& h) {
  return {{"alg", h.alg}, {"kid", h.kid}, {"typ", h.typ}};
}

// The document both report commands start with.
json ReportJson(const std::string& file, const LoadedReport& r) {
  return {{"file", file}, {"signature", r.signature.Json()}, {"header", HeaderJson(r.header)}};
}

void PrintJson(const json& j) {
  std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

// --- dpuaudit report show --------------------------------------------------

int Rank(Verdict v) { return v == Verdict::kFail ? 0 : v == Verdict::kUnknown ? 1 : 2; }

// One row of `report show`: the agent's finding (unset when the agent's
// report lacks a finding the evidence gives) and the one re-derived here
// (unset when the evidence gives none for that id).
struct FindingRow {
  std::optional<Finding> agent;
  std::optional<Finding> rederived;
  const Finding& any() const { return agent ? *agent : *rederived; }
  // As the verifier judges consistency (verifier/appraise.cc): the same
  // verdict and observed value.
  bool agrees() const {
    return agent && rederived && agent->verdict == rederived->verdict &&
           agent->observed == rederived->observed;
  }
  // The agent did not report it, or reported it otherwise.
  bool differs() const { return !agent || (rederived && !agrees()); }
  int rank() const {
    return std::min(agent ? Rank(agent->verdict) : 2, rederived ? Rank(rederived->verdict) : 2);
  }
};

// Every agent finding next to its re-derivation, then the re-derived ones
// the agent did not report; failing first, then unknown, then passing
// (stable: report order within each).
std::vector<FindingRow> FindingRows(const report::ReportClaims& c) {
  // Re-derive every finding from the evidence with the verifier's own
  // sequence (isolation::CollectDeviceFacts over the evidence, the report's
  // boot chain standing in for the streamed partitions and files).
  std::map<std::string, Finding> rederived;
  std::vector<std::string> order;
  // A dpuaudit-report/2 report's by-digest items have no bytes here (the
  // verifier resolves them against the node's base): nothing is
  // re-derived from them.
  auto src = c.evidence_resolved
                 ? device::NewEvidenceDeviceSource(c.evidence)
                 : StatusOr<std::unique_ptr<device::DeviceSource>>(FailedPreconditionError(
                       "evidence carried by digest"));
  if (src.ok()) {
    device::MemoizingDeviceSource memo(**src);
    std::optional<firmware::BootChainInfo> boot;
    if (!c.boot_chain.empty()) {
      if (auto b = firmware::ParseBootChainJson(c.boot_chain); b.ok()) boot = std::move(*b);
    }
    for (Finding& f : isolation::CollectDeviceFacts(memo, boot ? &*boot : nullptr).findings) {
      order.push_back(f.id);
      rederived[f.id] = std::move(f);
    }
  }
  std::vector<FindingRow> rows;
  std::map<std::string, bool> reported;
  for (const Finding& f : c.findings) {
    FindingRow row;
    row.agent = f;
    if (auto it = rederived.find(f.id); it != rederived.end()) row.rederived = it->second;
    reported[f.id] = true;
    rows.push_back(std::move(row));
  }
  for (const std::string& id : order) {
    if (reported.count(id) == 0) rows.push_back(FindingRow{std::nullopt, rederived[id]});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const FindingRow& a, const FindingRow& b) { return a.rank() < b.rank(); });
  return rows;
}

json FindingJson(const Finding& f) {
  return {{"rule_id", f.id},
          {"verdict", std::string(VerdictName(f.verdict))},
          {"observed", f.observed},
          {"expected", f.expected},
          {"source", f.source},
          {"tier", kReportTier},
          {"reason", f.reason},
          {"evidence_id", f.evidence_id}};
}

json EvidenceJson(const device::Evidence& e, const report::ReportClaims& c) {
  json j = {{"id", e.id},
          {"kind", std::string(report::EvidenceKindJsonName(e.kind))},
          {"source", report::EvidenceSourceOf(e)},
          {"exit_code", e.exit_code},
          {"timed_out", e.timed_out},
          {"truncated", e.truncated},
          {"bytes", e.raw.size()},
          {"stderr_bytes", e.stderr_raw.size()},
          {"sha256", e.sha256}};
  if (c.format == report::kReportFormatV2) j["by_digest"] = c.by_digest.count(e.id) != 0;
  return j;
}

// The worse of the agent's and the re-derived verdict, as the table ranks.
Verdict RowVerdict(const FindingRow& row) {
  const int rank = row.rank();
  return rank == 0 ? Verdict::kFail : rank == 1 ? Verdict::kUnknown : Verdict::kPass;
}

std::vector<FindingView> RowViews(const std::vector<FindingRow>& rows) {
  std::vector<FindingView> out;
  for (const FindingRow& row : rows) {
    const Finding& f = row.any();
    FindingView v{f.id, RowVerdict(row), f.observed, f.expected, kReportTier, f.source, f.reason,
                  ""};
    if (!row.agent) {
      v.note = "not reported by the agent; re-derived here";
    } else if (row.rederived && !row.agrees()) {
      v.note = "re-derived: " + std::string(VerdictName(row.rederived->verdict)) + ", observed \"" +
               row.rederived->observed + "\"";
    }
    out.push_back(std::move(v));
  }
  return out;
}

// `report show --ear FILE`: the EAR for this report (matched by the
// report's sha256), its matched releases and collateral. The EAR's
// signature is not checked here (`dpuaudit result show` does).
struct EarView {
  json j;            // the "ear" member of --json
  std::string text;  // the lines next to the firmware table
};

StatusOr<EarView> LoadEarView(const std::string& ear_file, const std::string& report_text) {
  DPA_ASSIGN_OR_RETURN(std::string jwt, ReadText(ear_file));
  DPA_RETURN_IF_ERROR(CheckJwsKind(jwt, JwsKind::kResult, ear_file));
  DPA_ASSIGN_OR_RETURN(Bytes payload, UnverifiedJwsPayload(jwt));
  auto ear = report::ParseEar(payload);
  if (!ear.ok()) return ear.status().WithPrefix(ear_file);
  const std::string report_sha = Sha256Hex(AsBytes(report_text));
  if (ear->dpuaudit.report_sha256 != report_sha) {
    return InvalidArgumentError(ear_file + " is the result of another report (its report_sha256 " +
                                ear->dpuaudit.report_sha256.substr(0, 16) + "…, this report's " +
                                report_sha.substr(0, 16) + "…).");
  }
  json collateral = CollateralJson(json::parse(ToString(payload), nullptr, false));
  json named = ReleasesNamedInReasons(ear->dpuaudit.reasons);
  EarView v;
  v.j = {{"file", ear_file},
         {"signature", "not checked (dpuaudit result show checks it)"},
         {"decision", std::string(report::DecisionName(ear->dpuaudit.decision))},
         {"report_sha256", report_sha},
         {"releases_in_reasons", named},
         {"collateral", collateral}};
  std::string t = "\nreference values (EAR " + ear_file + ", signature not checked here; decision " +
                  std::string(report::DecisionName(ear->dpuaudit.decision)) + "):\n";
  std::string list;
  for (const auto& n : named) list += (list.empty() ? "" : ", ") + n.get<std::string>();
  t += "  releases its refval findings matched: " +
       (list.empty() ? std::string("not named (an EAR records no reason for a passing rule; "
                                   "dpuaudit.collateral names them)")
                     : list) +
       "\n";
  t += CollateralText(collateral);
  for (const auto& r : ear->dpuaudit.reasons) {
    if (r.rule_id.rfind("refval.", 0) != 0) continue;
    t += "  " + r.rule_id + "  " + std::string(VerdictName(r.verdict)) + "  observed " +
         r.observed + "\n";
  }
  v.text = FitLines(t, kColumns);
  return v;
}

json ShowJson(const std::string& file, const LoadedReport& r) {
  json j = ReportJson(file, r);
  if (!r.claims) {
    j["exit_code"] = kExitError;
    return j;
  }
  const report::ReportClaims& c = *r.claims;
  j["claims"] = {{"format", c.format},
                 {"node_id", c.node_id},
                 {"nonce", c.nonce},
                 {"issued_at", c.issued_at},
                 {"issued_at_utc", UtcTime(c.issued_at, "%Y-%m-%dT%H:%M:%SZ")},
                 {"device", report::DeviceInfoJson(c.device)},
                 {"has_tpm_quote", c.tpm.has_value()}};
  json fw = FirmwareSectionsJson(c);
  j["firmware"] = std::move(fw["firmware"]);
  j["boot_chain"] = std::move(fw["boot_chain"]);
  json evidence = json::array();
  for (const auto& e : c.evidence) evidence.push_back(EvidenceJson(e, c));
  j["evidence"] = std::move(evidence);
  json findings = json::array();
  json not_reported = json::array();
  for (const FindingRow& row : FindingRows(c)) {
    if (!row.agent) {
      not_reported.push_back(FindingJson(*row.rederived));
      continue;
    }
    json f = FindingJson(*row.agent);
    if (row.rederived) {
      f["rederived"] = {{"verdict", std::string(VerdictName(row.rederived->verdict))},
                        {"observed", row.rederived->observed},
                        {"expected", row.rederived->expected},
                        {"source", row.rederived->source},
                        {"reason", row.rederived->reason}};
      f["agrees"] = row.agrees();
    } else {
      f["rederived"] = nullptr;  // the evidence gives no finding of this id
      f["agrees"] = nullptr;
    }
    findings.push_back(std::move(f));
  }
  j["findings"] = std::move(findings);
  j["not_reported"] = std::move(not_reported);
  j["groups"] = GroupedFindingsJson(RowViews(FindingRows(c)));
  j["firmware_table"] = FirmwareTableJson(c);
  j["boot_chain_table"] = BootChainTableJson(c);
  j["exit_code"] = kExitOk;
  return j;
}

std::string Clip(std::string s, size_t max) {
  if (DisplayWidth(s) <= max) return s;
  std::string out;
  size_t w = 0;
  for (char ch : s) {
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80 && ++w >= max) break;
    out.push_back(ch);
  }
  return out + "…";
}

std::string ShowText(const std::string& file, const LoadedReport& r) {
  std::string out = "report:     " + file + "\n" + "signature:  " + r.signature.Line() + "\n";
  if (!r.claims) return FitLines(out, kColumns);
  const report::ReportClaims& c = *r.claims;
  const report::DeviceInfo& d = c.device;
  out += "format:     " + c.format + "\n" + "node:       " + c.node_id + "\n" +
         "nonce:      " + c.nonce + "\n" + "issued at:  " + TimeString(c.issued_at) + "\n" +
         "device:     " + d.model + "  serial " + d.serial + "  part " + d.part_number + "\n" +
         "            psid " + d.psid + "  mac " + d.base_mac + "  fw " + d.fw_version + "\n";
  out += "\n" + FirmwareTablesText(c);

  out += "\nevidence (" + std::to_string(c.evidence.size()) + "; their sources: --json):\n";
  Table ev({"ID", "EXIT", "BYTES", "SHA-256"}, 50);
  for (const auto& e : c.evidence) {
    ev.AddRow({e.id,
               std::to_string(e.exit_code) + (e.timed_out ? " timeout" : "") +
                   (e.truncated ? " truncated" : ""),
               std::to_string(e.raw.size()), e.sha256.substr(0, 16)});
  }
  out += ev.Render();

  const std::vector<FindingRow> rows = FindingRows(c);
  out += "\nfindings (agent's verdict, and re-derived here from the evidence; failing and "
         "unknown first):\n";
  Table ft({"PROBE", "AGENT", "RE-DERIVED", "OBSERVED", "EXPECTED"}, 26);
  bool any_differs = false;
  for (const FindingRow& row : rows) {
    std::string again = "-";
    if (row.rederived) again = std::string(VerdictName(row.rederived->verdict));
    if (row.differs()) again += "*";
    any_differs |= row.differs();
    const Finding& f = row.agent ? *row.agent : *row.rederived;
    ft.AddRow({f.id, row.agent ? std::string(VerdictName(row.agent->verdict)) : "-", again,
               Clip(f.observed, 22), Clip(f.expected, 22)});
  }
  out += ft.Render();
  if (any_differs) {
    out += "* the re-derived finding differs from the agent's (verdict or observed value), or "
           "the agent did not report it\n";
  }
  // Issue 16 §5: grouped fail, unknown, pass, each with observed vs
  // expected, its tier and its evidence source (every field: --json).
  out += "\nfindings by verdict (observed vs expected, trust tier, evidence source, reason):\n" +
         GroupedFindingsText(RowViews(rows));
  return FitLines(out, kColumns);
}

}  // namespace

int ReportFirmware(const std::string& file, const std::string& pubkey_file,
                   const ReadTarget& verifier, bool as_json) {
  auto loaded = LoadReportForDisplay(file, pubkey_file, verifier);
  if (!loaded.ok()) return Fail(loaded.status());
  const int rc = loaded->claims ? kExitOk : kExitError;  // never claims under a bad signature
  if (as_json) {
    json j = ReportJson(file, *loaded);
    if (loaded->claims) {
      j["node_id"] = loaded->claims->node_id;
      json fw = FirmwareSectionsJson(*loaded->claims);
      j["firmware"] = std::move(fw["firmware"]);
      j["boot_chain"] = std::move(fw["boot_chain"]);
    }
    j["exit_code"] = rc;
    PrintJson(j);
    return rc;
  }
  std::cout << FitLines("report:     " + file + "\n" + "signature:  " +
                            loaded->signature.Line() + "\n",
                        kColumns);
  if (!loaded->claims) return rc;
  std::cout << DescribeFirmware(*loaded->claims);
  return rc;
}

int ReportShow(const std::string& file, const std::string& pubkey_file,
               const ReadTarget& verifier, bool as_json, const std::string& ear_file) {
  if (file == "-" && ear_file == "-") {
    std::cerr << "dpuaudit: the report and --ear cannot both be read from stdin.\n";
    return kExitError;
  }
  auto loaded = LoadReportForDisplay(file, pubkey_file, verifier);
  if (!loaded.ok()) return Fail(loaded.status());
  std::optional<EarView> ear;
  if (!ear_file.empty() && loaded->claims) {
    auto v = LoadEarView(ear_file, loaded->text);
    if (!v.ok()) return Fail(v.status());
    ear = std::move(*v);
  }
  if (as_json) {
    json j = ShowJson(file, *loaded);
    if (ear) j["ear"] = ear->j;
    PrintJson(j);
  } else {
    std::string text = ShowText(file, *loaded);
    if (ear) {
      // Next to the firmware tables: after them, before the evidence.
      const size_t at = text.find("\nevidence (");
      text.insert(at == std::string::npos ? text.size() : at, ear->text);
    }
    std::cout << text;
  }
  return loaded->claims ? kExitOk : kExitError;  // a bad signature: 2
}

// `report export-quote`: the AK comes from --ak, or from the verifier's
// record of the node that signed the report.
int ExportQuoteCmd(const std::string& file, const std::string& out, const std::string& ak,
                   const ReadTarget& verifier, bool as_json) {
  if (ak.empty() && verifier.verifier.empty()) {
    std::cerr << "dpuaudit: report export-quote needs --ak FILE or --verifier URL.\n";
    return kExitError;
  }
  auto run = [&]() -> Status {
    auto jws = ReadText(file);  // "-": stdin, read once
    if (!jws.ok()) return jws.status().WithPrefix(file);
    DPA_RETURN_IF_ERROR(CheckJwsKind(*jws, JwsKind::kReport, file));
    QuoteExport x;
    x.report_name = file;
    x.out_dir = out;
    x.ak_file = ak;
    if (ak.empty()) {
      auto header = report::PeekUnverifiedHeader(*jws, report::kDefaultMaxJwsBytes);
      if (!header.ok()) return header.status().WithPrefix(file);
      DPA_ASSIGN_OR_RETURN(auto c, Client(verifier));
      DPA_ASSIGN_OR_RETURN(json node, GetJson(*c, verifier, "/v1/nodes/" + header->kid));
      if (!node.contains("tpm") || !node["tpm"].is_object() ||
          !node["tpm"].value("ak_public_b64", json()).is_string()) {
        return FailedPreconditionError("node " + header->kid + " has no TPM binding at " +
                                       verifier.verifier + ".");
      }
      DPA_ASSIGN_OR_RETURN(x.ak_bytes,
                           Base64Decode(node["tpm"]["ak_public_b64"].get<std::string>()));
      x.ak_source = "verifier " + verifier.verifier + ", node " + header->kid;
    } else {
      x.ak_source = "--ak " + ak;
    }
    DPA_ASSIGN_OR_RETURN(QuoteExportResult result, ExportQuote(*jws, x));
    if (as_json) {
      PrintJson(QuoteExportJson(result));
    } else {
      std::cout << QuoteExportText(result);
    }
    return OkStatus();
  };
  Status s = run();
  if (!s.ok()) return Fail(s);
  return kExitOk;
}

}  // namespace dpuaudit::apps
