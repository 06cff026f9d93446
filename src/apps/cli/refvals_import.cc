#include "apps/cli/refvals_import.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "apps/cli/cli_util.h"
#include "apps/shared/enrollment_print.h"
#include "apps/shared/http_client.h"
#include "attest/tpm_claims.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/digest.h"
#include "device/evidence.h"
#include "device/memoizing_source.h"
#include "firmware/boot_chain.h"
#include "isolation/device_facts.h"
#include "report/claims.h"
#include "verifier/refvals/model.h"

namespace dpuaudit::apps {

namespace {

using nlohmann::json;

constexpr uint32_t kDefaultLastPcr = 9;  // PCR 10 and up: runtime (IMA, ...)

std::string FileLabel(const std::string& file) {
  return file == "-" ? "stdin" : std::filesystem::path(file).filename().string();
}

// What the values were proposed from, for the output.
struct Provenance {
  std::string kind;  // "eventlog" | "report"
  std::string file;
  std::string sha256;  // of the input bytes
  bool authenticated = false;
  std::string key;     // "--node-key FILE (thumbprint …)" when authenticated
  std::string note;    // why the values can be trusted, or why not
  std::vector<std::string> notes;
  json Json() const {
    json j = {{"kind", kind},          {"file", file},         {"sha256", sha256},
              {"authenticated", authenticated}, {"note", note}, {"notes", notes}};
    if (!key.empty()) j["key"] = key;
    return j;
  }
};

std::string DefaultRelease(const std::string& prefix, const std::string& sha256) {
  return prefix + "-" + sha256.substr(0, 12);
}

// Builds the one-release manifest, validates it, then prints (--dry-run) or
// posts it. Exit codes as documented in --help.
int Propose(const ProposeOptions& o, const AdminTarget& t, const Provenance& p,
            const std::string& release, json values) {
  std::optional<std::string> model = verifier::CanonicalModel(o.model);
  if (!model) return Fail(InvalidArgumentError("--model \"" + o.model + "\" is not BF2 or BF3."));
  if (values.empty()) {
    return Fail(FailedPreconditionError(p.file + ": nothing to propose (no reference value could "
                                        "be derived from it)."));
  }
  json rel = {{"release", release},
              {"model", *model},
              {"state", "pending"},
              {"approval",
               {{"by", o.by.empty() ? LoginName() : o.by},
                {"reason", o.reason.empty()
                               ? "proposed from " + p.kind + " " + FileLabel(p.file) +
                                     (p.authenticated ? "" : " (unauthenticated file)")
                               : o.reason}}},
              {"values", std::move(values)}};
  if (!o.psids.empty()) rel["psids"] = o.psids;
  json manifest = {{"schema", std::string(verifier::kRefManifestSchema)},
                   {"releases", json::array({rel})}};
  auto parsed = verifier::ParseRefManifest(manifest.dump(), 0);
  if (!parsed.ok()) return Fail(parsed.status());
  const size_t count = rel["values"].size();
  if (!p.authenticated) {
    std::cerr << "dpuaudit: WARNING: " << p.note << "\n";
  }
  for (const std::string& n : p.notes) std::cerr << "dpuaudit: note: " << n << "\n";
  if (o.dry_run) {
    // The manifest it would send (docs/schemas/refvals-manifest.schema.json).
    std::cout << manifest.dump(2) << "\n";
    return kExitOk;
  }
  if (t.verifier.empty() || t.token_file.empty()) {
    std::cerr << "dpuaudit: this command needs --verifier and --admin-token-file, or "
                 "--dry-run.\n";
    return kExitError;
  }
  auto r = CallVerifier(t, "POST", "/v1/refvals", manifest.dump());
  if (!r.ok()) return FailApi(r.status());
  if (o.json) {
    // docs/schemas/refvals-propose.schema.json
    std::cout << json{{"source", p.Json()},
                      {"release", release},
                      {"model", *model},
                      {"state", "pending"},
                      {"values", count},
                      {"answer", *r}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  std::cout << "staged release " << release << " (" << *model << ", pending, " << count
            << " values) from " << p.kind << " " << FileLabel(p.file) << "\n";
  if (!p.authenticated) std::cout << "  UNAUTHENTICATED source: " << p.note << "\n";
  for (const auto& v : rel["values"]) {
    std::string d = v.contains("sha256")   ? "sha256:" + v["sha256"].get<std::string>()
                    : v.contains("sha384") ? "sha384:" + v["sha384"].get<std::string>()
                                           : "";
    std::string line = "  " + v["component"].get<std::string>();
    if (v.contains("version")) line += "  " + v["version"].get<std::string>();
    if (!d.empty()) line += "  " + d.substr(0, 7 + 32) + "…";
    std::cout << line << "\n";
  }
  std::cout << "promote it with: dpuaudit refvals promote " << release
            << " --by NAME --reason TEXT\n";
  return kExitOk;
}

// The PCR selection of --pcr, checked.
Status CheckPcrs(const std::vector<uint32_t>& pcrs) {
  for (uint32_t p : pcrs) {
    if (p > 23) {
      return InvalidArgumentError("--pcr " + std::to_string(p) + " out of range [0, 23].");
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<json> EventLogValues(const attest::EventLog& log, const std::vector<uint32_t>& pcrs,
                              std::vector<std::string>* notes) {
  DPA_RETURN_IF_ERROR(CheckPcrs(pcrs));
  const attest::ReplayResult replay = attest::ReplayEventLog(log);
  auto bank = replay.pcrs.find(attest::kTpmAlgSha256);
  if (bank == replay.pcrs.end()) {
    return FailedPreconditionError(
        "the event log has no sha256 bank (format " +
        std::string(attest::EventLogFormatName(log.format)) +
        "); tpm-pcr reference values are sha256 PCRs.");
  }
  const std::set<uint32_t> wanted(pcrs.begin(), pcrs.end());
  json values = json::array();
  std::vector<uint32_t> skipped;
  for (const auto& [pcr, value] : bank->second) {
    const bool selected = wanted.empty() ? pcr <= kDefaultLastPcr : wanted.count(pcr) > 0;
    if (!selected) {
      skipped.push_back(pcr);
      continue;
    }
    values.push_back({{"component", "tpm-pcr:" + std::to_string(pcr)},
                      {"sha256", HexEncode(value)}});
  }
  for (uint32_t p : wanted) {
    if (bank->second.count(p) == 0 && notes != nullptr) {
      notes->push_back("PCR " + std::to_string(p) + " is not extended by the log; no value.");
    }
  }
  if (!skipped.empty() && notes != nullptr) {
    std::string list;
    for (uint32_t p : skipped) list += (list.empty() ? "" : ", ") + std::to_string(p);
    notes->push_back("PCRs " + list +
                     " are extended by the log but not proposed (runtime measurements such as "
                     "IMA change them after boot; choose with --pcr).");
  }
  if (values.empty()) {
    return FailedPreconditionError("the event log extends none of the selected PCRs.");
  }
  std::set<std::string> apps;
  const attest::BootState state = attest::ExtractBootState(log.events);
  for (const attest::BootApplication& a : state.boot_applications) {
    if (a.sha256.empty() || !apps.insert(a.sha256).second) continue;
    values.push_back({{"component", "tpm-app"}, {"sha256", a.sha256}});
  }
  return values;
}

int RefvalsImportEventlog(const ProposeOptions& o, const AdminTarget& t) {
  const attest::EventLogLimits limits;
  StatusOr<Bytes> raw = ReadBytes(o.file, limits.max_bytes);  // "-": stdin
  if (!raw.ok()) return Fail(raw.status().WithPrefix(o.file));
  StatusOr<attest::EventLog> log = attest::ParseEventLog(*raw, limits);
  if (!log.ok()) return Fail(log.status().WithPrefix(o.file));
  Provenance p;
  p.kind = "eventlog";
  p.file = o.file;
  p.sha256 = Sha256Hex(*raw);
  p.note = "the event log " + FileLabel(o.file) +
           " is unauthenticated data: the values are what it replays to, and only as good as "
           "the machine it was taken from (promote only a log you took yourself).";
  StatusOr<json> values = EventLogValues(*log, o.pcrs, &p.notes);
  if (!values.ok()) return Fail(values.status().WithPrefix(o.file));
  const std::string release =
      o.release.empty() ? DefaultRelease("eventlog", p.sha256) : o.release;
  return Propose(o, t, p, release, std::move(*values));
}

int RefvalsImportReport(const ProposeOptions& o, const AdminTarget& t) {
  auto text = ReadText(o.file);  // "-": stdin
  if (!text.ok()) return Fail(text.status().WithPrefix(o.file));
  const std::string& jws = *text;
  if (Status kind = CheckJwsKind(jws, JwsKind::kReport, o.file); !kind.ok()) return Fail(kind);
  Provenance p;
  p.kind = "report";
  p.file = o.file;
  p.sha256 = Sha256Hex(AsBytes(jws));
  std::optional<report::ReportClaims> claims;
  if (!o.node_key.empty()) {
    auto pem = ReadText(o.node_key);
    if (!pem.ok()) return Fail(pem.status().WithPrefix(o.node_key));
    auto key = EcPublicKey::FromPem(*pem);
    if (!key.ok()) return Fail(key.status().WithPrefix(o.node_key));
    auto v = Es256Verifier::New(*key);
    if (!v.ok()) return Fail(v.status());
    auto verified = report::VerifyReport(jws, **v);
    if (!verified.ok()) {
      std::cerr << "dpuaudit: " << o.file << ": the signature does not verify under "
                << o.node_key << ": " << verified.status().message()
                << " Nothing was proposed.\n";
      return kExitDeny;
    }
    claims = verified->claims;
    p.authenticated = true;
    p.key = "--node-key " + o.node_key + " (thumbprint " + key->Thumbprint() + ")";
    p.note = "the report's signature verifies under " + p.key + ".";
  } else {
    auto payload = UnverifiedJwsPayload(jws);
    if (!payload.ok()) return Fail(payload.status().WithPrefix(o.file));
    auto parsed = report::ParseClaims(*payload);
    if (!parsed.ok()) return Fail(parsed.status().WithPrefix(o.file));
    claims = *parsed;
    p.note = "the report " + FileLabel(o.file) +
             " was NOT signature-checked (no --node-key): the values come from an "
             "UNAUTHENTICATED file.";
  }
  if (!claims->evidence_resolved) {
    return Fail(FailedPreconditionError(
        o.file + " carries evidence by digest (dpuaudit-report/2), whose bytes are in the "
                 "node's base report only; propose from a report with every item in full "
                 "(dpuaudit-agent attest --report-format 1, or the base report)."));
  }
  const report::ReportClaims& c = *claims;
  // The firmware facts as the verifier derives them (verifier/appraise.cc
  // BuildFacts): versions re-derived from the evidence, digests from the
  // boot chain measured by the agent.
  json values = json::array();
  auto src = device::NewEvidenceDeviceSource(c.evidence);
  if (!src.ok()) return Fail(src.status().WithPrefix(o.file));
  device::MemoizingDeviceSource memo(**src);
  std::optional<firmware::BootChainInfo> boot;
  if (!c.boot_chain.empty()) {
    auto b = firmware::ParseBootChainJson(c.boot_chain);
    if (!b.ok()) return Fail(b.status().WithPrefix(o.file + ": boot_chain"));
    boot = std::move(*b);
  }
  const isolation::DeviceFacts facts = isolation::CollectDeviceFacts(memo, boot ? &*boot : nullptr);
  const firmware::FirmwareInfo& fw = facts.firmware;
  std::optional<std::string> report_model = verifier::CanonicalModel(facts.identity.model);
  if (report_model && *report_model != verifier::CanonicalModel(o.model).value_or("")) {
    return Fail(InvalidArgumentError(o.file + ": the report is from a " + *report_model +
                                     ", not --model " + o.model + "."));
  }
  if (fw.bfver_status.ok()) {
    for (const auto& [component, v] :
         std::vector<std::pair<std::string, std::string>>{{"atf", fw.bfver.atf_version},
                                                          {"uefi", fw.bfver.uefi_version},
                                                          {"bsp", fw.bfver.bsp_version},
                                                          {"os", fw.bfver.os_release}}) {
      if (!v.empty()) values.push_back({{"component", component}, {"version", v}});
    }
  } else {
    p.notes.push_back("bfver could not be read from the report's evidence (" +
                      fw.bfver_status.message() + "): no atf/uefi/bsp/os versions.");
  }
  if (fw.nic_fw_status.ok() && !fw.nic_fw_version.empty()) {
    values.push_back({{"component", "nic-fw"}, {"version", fw.nic_fw_version}});
  } else {
    p.notes.push_back("no NIC firmware version in the report's evidence.");
  }
  if (boot) {
    const firmware::PartitionMeasurement* primary = nullptr;
    for (const auto& m : boot->partitions.partitions) {
      if (!facts.primary.empty() && m.path == facts.primary) primary = &m;
    }
    if (primary == nullptr || !primary->status.ok() || !primary->layout) {
      p.notes.push_back("the primary boot partition was not measured: no bfb:<image> values.");
    } else if (!primary->layout->all_crc_ok) {
      return Fail(FailedPreconditionError(
          o.file + ": an image CRC of the primary boot partition does not match; a corrupt "
                   "boot stream cannot be a reference."));
    } else {
      std::set<std::string> seen;
      for (const auto& img : primary->layout->images) {
        if (!img.known_id || !seen.insert(img.name + img.sha384).second) continue;
        values.push_back({{"component", "bfb:" + img.name},
                          {"sha384", img.sha384},
                          {"sha512", img.sha512}});
      }
    }
    for (const auto& a : boot->os.artefacts) {
      if (a.status.ok()) values.push_back({{"component", "os:" + a.role}, {"sha384", a.sha384}});
    }
  } else {
    p.notes.push_back("the report carries no boot_chain: no boot-stream or OS digests.");
  }
  if (c.tpm) {
    auto tpm = attest::ParseTpmClaims(*c.tpm);
    if (!tpm.ok()) return Fail(tpm.status().WithPrefix(o.file + ": tpm"));
    if (tpm->eventlog.empty()) {
      p.notes.push_back("the report's TPM evidence has no event log: no tpm-pcr values.");
    } else {
      auto log = attest::ParseEventLog(tpm->eventlog);
      if (!log.ok()) return Fail(log.status().WithPrefix(o.file + ": tpm event log"));
      auto tv = EventLogValues(*log, o.pcrs, &p.notes);
      if (!tv.ok()) {
        p.notes.push_back("tpm event log: " + tv.status().message());
      } else {
        // The replay must agree with the PCRs the report's quote carries.
        auto quoted = tpm->pcrs.find(attest::kTpmAlgSha256);
        for (const auto& v : *tv) {
          const std::string comp = v["component"].get<std::string>();
          if (comp.rfind("tpm-pcr:", 0) == 0 && quoted != tpm->pcrs.end()) {
            const uint32_t pcr = static_cast<uint32_t>(std::stoul(comp.substr(8)));
            auto q = quoted->second.find(pcr);
            if (q != quoted->second.end() && HexEncode(q->second) != v["sha256"]) {
              return Fail(FailedPreconditionError(
                  o.file + ": sha256 PCR " + std::to_string(pcr) +
                  ": the event log replays to " + v["sha256"].get<std::string>().substr(0, 16) +
                  "…, the quote carries " + HexEncode(q->second).substr(0, 16) +
                  "…; a log that does not match its quote cannot be a reference."));
            }
          }
          values.push_back(v);
        }
      }
    }
  }
  std::string release = o.release;
  if (release.empty()) {
    release = fw.bfver_status.ok() && !fw.bfver.os_release.empty()
                  ? fw.bfver.os_release
                  : DefaultRelease("report", p.sha256);
  }
  return Propose(o, t, p, release, std::move(values));
}

int RefvalsWithdraw(const std::string& release, const std::string& by, const std::string& reason,
                    bool json, const AdminTarget& t) {
  std::string path;
  for (unsigned char ch : release) {
    // Labels are [A-Za-z0-9._+:~-]; anything else is refused before sending.
    if (!(std::isalnum(ch) || ch == '.' || ch == '_' || ch == '+' || ch == ':' || ch == '~' ||
          ch == '-')) {
      return Fail(InvalidArgumentError("\"" + release + "\" is not a release label."));
    }
  }
  path = "/v1/refvals/" + release + "/withdraw";
  auto r = CallVerifier(t, "POST", path, nlohmann::json{{"by", by}, {"reason", reason}}.dump());
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "withdrew pending release " << JsonStr(*r, "withdrawn_release", release) << " ("
            << JsonStr(*r, "model", "?") << ", " << r->value("values", 0) << " values); the "
            << "label may be imported again\n";
  return kExitOk;
}

}  // namespace dpuaudit::apps
