#include "apps/cli/report_view.h"

#include <algorithm>
#include <regex>
#include <set>

#include "apps/cli/cli_util.h"
#include "apps/shared/table.h"
#include "firmware/boot_chain.h"

namespace dpuaudit::apps {
namespace {

using nlohmann::json;

constexpr size_t kColumns = 100;
constexpr size_t kDigestChars = 32;  // hex digits shown of a digest

std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Short(const std::string& alg, const std::string& hex) {
  if (hex.empty()) return "-";
  return alg + ":" + (hex.size() > kDigestChars ? hex.substr(0, kDigestChars) + "…" : hex);
}

bool IsHex(const std::string& s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::vector<FindingView> FindingViews(const std::vector<report::DecisionReason>& reasons) {
  std::vector<FindingView> out;
  for (const auto& r : reasons) {
    out.push_back({r.rule_id, r.verdict, r.observed, r.expected,
                   std::string(report::ClaimTierName(r.tier)), r.source, r.reason,
                   r.action.empty() || r.verdict == Verdict::kPass ? "" : "action " + r.action});
  }
  return out;
}

std::string GroupedFindingsText(const std::vector<FindingView>& findings) {
  std::string out;
  for (Verdict v : {Verdict::kFail, Verdict::kUnknown}) {
    std::vector<const FindingView*> group;
    for (const auto& f : findings) {
      if (f.verdict == v) group.push_back(&f);
    }
    out += std::string(VerdictName(v)) + " (" + std::to_string(group.size()) + ")" +
           (group.empty() ? "\n" : ":\n");
    for (const FindingView* f : group) {
      out += Wrap(f->rule_id + ": observed \"" + f->observed + "\", expected \"" + f->expected +
                      "\"" + (f->note.empty() ? "" : " (" + f->note + ")"),
                  kColumns, "  ", "      ");
      out += Wrap("tier " + (f->tier.empty() ? std::string("-") : f->tier) + ", source " +
                      (f->source.empty() ? std::string("-") : f->source),
                  kColumns, "      ", "      ");
      if (!f->reason.empty()) out += Wrap(f->reason, kColumns, "      ", "      ");
    }
  }
  std::string ids;
  size_t passing = 0;
  for (const auto& f : findings) {
    if (f.verdict != Verdict::kPass) continue;
    ids += (ids.empty() ? "" : ", ") + f.rule_id;
    ++passing;
  }
  out += "pass (" + std::to_string(passing) + ")" + (passing == 0 ? "\n" : ":\n");
  if (passing > 0) out += Wrap(ids, kColumns, "  ", "  ");
  return FitLines(out, kColumns);
}

json GroupedFindingsJson(const std::vector<FindingView>& findings) {
  json g = {{"fail", json::array()}, {"unknown", json::array()}, {"pass", json::array()}};
  for (const auto& f : findings) g[std::string(VerdictName(f.verdict))].push_back(f.rule_id);
  return g;
}

json FirmwareTableJson(const report::ReportClaims& c) {
  json rows = json::array();
  const json& fw = c.firmware;
  const json arm = fw.is_object() && fw.contains("arm") ? fw["arm"] : json();
  auto add = [&](const std::string& component, const std::string& version, json digest,
                 const std::string& source) {
    rows.push_back({{"component", component},
                    {"version", version.empty() ? json(nullptr) : json(version)},
                    {"digest", std::move(digest)},
                    {"source", source}});
  };
  add("atf", Str(arm, "atf"), nullptr, "bfver");
  add("uefi", Str(arm, "uefi"), nullptr, "bfver");
  add("bsp", Str(arm, "bsp"), nullptr, "bfver");
  add("os", Str(arm, "os_release"), nullptr, "bfver");
  const json nic = fw.is_object() && fw.contains("nic") ? fw["nic"] : json();
  const std::string running = Str(nic, "version").empty() ? Str(nic, "running")
                                                          : Str(nic, "version");
  add("nic-fw", running, nullptr, "flint");
  const std::string staged = Str(nic, "staged");
  if (!staged.empty() && staged != "N/A" && staged != running) {
    add("nic-fw (staged)", staged, nullptr, "mlxfwmanager");
  }
  if (!c.boot_chain.empty()) {
    if (auto b = firmware::ParseBootChainJson(c.boot_chain); b.ok()) {
      const firmware::PartitionMeasurement* p = b->partitions.Primary();
      if (p != nullptr && !p->sha256.empty()) {
        add("boot-stream", p->path, json("sha256:" + p->sha256), "boot partition");
      }
    }
  }
  return rows;
}

json BootChainTableJson(const report::ReportClaims& c) {
  json rows = json::array();
  if (c.boot_chain.empty()) return rows;
  auto b = firmware::ParseBootChainJson(c.boot_chain);
  if (!b.ok()) return rows;
  if (const firmware::PartitionMeasurement* p = b->partitions.Primary();
      p != nullptr && p->layout) {
    for (const bluefield::BfbImage& img : p->layout->images) {
      rows.push_back({{"stage", img.name},
                      {"digest", "sha384:" + img.sha384},
                      {"integrity", img.crc_ok ? "crc ok" : "CRC BAD"},
                      {"signed", "not recorded"}});
    }
  }
  for (const firmware::OsArtefact& a : b->os.artefacts) {
    json row = {{"stage", "os:" + a.role}, {"signed", "not recorded"}};
    if (a.status.ok()) {
      row["digest"] = "sha384:" + a.sha384;
      row["integrity"] = "measured";
    } else {
      row["digest"] = nullptr;
      row["integrity"] = "not measured: " + a.status.message();
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string FirmwareTablesText(const report::ReportClaims& c) {
  std::string out = "firmware (as the agent reports it):\n";
  Table ft({"COMPONENT", "VERSION", "DIGEST"}, 48);
  for (const json& r : FirmwareTableJson(c)) {
    std::string digest = r["digest"].is_string() ? r["digest"].get<std::string>() : "-";
    if (digest.size() > 7 + kDigestChars) digest = digest.substr(0, 7 + kDigestChars) + "…";
    ft.AddRow({r["component"].get<std::string>(),
               r["version"].is_string() ? r["version"].get<std::string>() : "(not reported)",
               digest});
  }
  out += ft.Render();
  const json boot = BootChainTableJson(c);
  out += "\nboot chain (primary partition, then OS artefacts):\n";
  if (boot.empty()) {
    out += "  the report carries no readable boot_chain measurement\n";
  } else {
    Table bt({"STAGE", "DIGEST", "INTEGRITY", "SIGNED/VERIFIED"}, 44);
    for (const json& r : boot) {
      std::string digest = r["digest"].is_string() ? r["digest"].get<std::string>() : "-";
      const size_t colon = digest.find(':');
      if (colon != std::string::npos) digest = Short(digest.substr(0, colon), digest.substr(colon + 1));
      bt.AddRow({r["stage"].get<std::string>(), digest, r["integrity"].get<std::string>(),
                 r["signed"].get<std::string>()});
    }
    out += bt.Render();
    out += "  (the boot_chain records digests and CRCs; whether each stage was signature-\n"
           "  verified is not part of it: see boot.* findings)\n";
  }
  return FitLines(out, kColumns);
}

json CollateralJson(const json& payload) {
  json out = {{"recorded", false}};
  if (!payload.is_object() || !payload.contains("dpuaudit") || !payload["dpuaudit"].is_object()) {
    return out;
  }
  const json& d = payload["dpuaudit"];
  if (d.contains("policy") && d["policy"].is_object()) out["policy"] = d["policy"];
  if (!d.contains("collateral")) return out;
  const json& c = d["collateral"];
  out["recorded"] = true;
  if (!c.is_object()) {
    out["error"] = "dpuaudit.collateral is not an object.";
    return out;
  }
  json matched = json::array();
  json anchors = json::array();
  std::string error;
  const json refvals = c.value("refvals", json());
  if (refvals.is_object()) {
    const std::string sha = Str(refvals, "sha256");
    out["refvals_sha256"] = IsHex(sha, 64) ? json(sha) : json(nullptr);
    if (!sha.empty() && !IsHex(sha, 64)) error = "collateral.refvals.sha256 is not 64 hex digits.";
    if (refvals.contains("matched") && refvals["matched"].is_array()) {
      for (const json& m : refvals["matched"]) {
        const std::string rel = Str(m, "release");
        const std::string msha = Str(m, "sha256");
        if (rel.empty()) {
          error = "a collateral.refvals.matched entry has no release.";
          continue;
        }
        matched.push_back({{"release", rel}, {"sha256", IsHex(msha, 64) ? json(msha) : json(nullptr)}});
      }
    }
  } else {
    out["refvals_sha256"] = nullptr;
  }
  if (c.contains("trust_anchors") && c["trust_anchors"].is_array()) {
    for (const json& a : c["trust_anchors"]) {
      const std::string set = Str(a, "set");
      const std::string sha = Str(a, "sha256");
      if (set.empty()) {
        error = "a collateral.trust_anchors entry has no set.";
        continue;
      }
      anchors.push_back({{"set", set}, {"sha256", IsHex(sha, 64) ? json(sha) : json(nullptr)}});
    }
  }
  out["matched"] = std::move(matched);
  out["trust_anchors"] = std::move(anchors);
  if (!error.empty()) out["error"] = error;
  return out;
}

std::string CollateralText(const json& c) {
  std::string out = "collateral: ";
  if (!c.value("recorded", false)) {
    out += "not recorded (this EAR predates dpuaudit.collateral)\n";
    return out;
  }
  out += "\n";
  const json sha = c.value("refvals_sha256", json());
  out += "  reference values  " + (sha.is_string() ? "sha256:" + sha.get<std::string>()
                                                   : std::string("(no digest)")) + "\n";
  const json matched = c.value("matched", json::array());
  if (matched.empty()) out += "  matched releases  none\n";
  for (const json& m : matched) {
    out += "  matched release   " + m["release"].get<std::string>() +
           (m["sha256"].is_string() ? "  sha256:" + m["sha256"].get<std::string>().substr(0, 32) + "…"
                                    : std::string()) +
           "\n";
  }
  for (const json& a : c.value("trust_anchors", json::array())) {
    out += "  trust anchors     " + a["set"].get<std::string>() +
           (a["sha256"].is_string() ? "  sha256:" + a["sha256"].get<std::string>().substr(0, 32) + "…"
                                    : std::string()) +
           "\n";
  }
  if (c.contains("error")) out += "  malformed: " + c["error"].get<std::string>() + "\n";
  return FitLines(out, kColumns);
}

std::vector<std::string> ReleasesNamedInReasons(const std::vector<report::DecisionReason>& r) {
  static const std::regex kMatches("matches release ([A-Za-z0-9._+:~-]{1,128})");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& x : r) {
    if (x.rule_id.rfind("refval.", 0) != 0 && x.rule_id != "tpm.reference_values") continue;
    for (std::sregex_iterator it(x.reason.begin(), x.reason.end(), kMatches), end; it != end;
         ++it) {
      std::string label = (*it)[1].str();
      while (!label.empty() && (label.back() == '.' || label.back() == ':')) label.pop_back();
      if (seen.insert(label).second) out.push_back(label);
    }
  }
  return out;
}

}  // namespace dpuaudit::apps
