#include "apps/cli/fleet.h"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <string_view>
#include <vector>

#include "apps/cli/cli_util.h"
#include "apps/shared/enrollment_print.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/files.h"

namespace dpuaudit::apps {
namespace {

using json = nlohmann::json;

constexpr std::string_view kFormat = "dpuaudit-fleet/1";

// --- Reading the document ----------------------------------------------------
// CheckFleetDocument has checked the top-level members; inside them a
// value of another type reads as empty, so a renderer never throws.

const json& Empty() {
  static const json kEmpty = json::array();
  return kEmpty;
}
const json& Arr(const json& j, const char* key) {
  if (!j.is_object()) return Empty();
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : Empty();
}
const json& Obj(const json& j, const char* key) {
  static const json kEmptyObject = json::object();
  if (!j.is_object()) return kEmptyObject;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmptyObject;
}
std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}
bool Has(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && !j[key].is_null();
}
int64_t Int(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}
std::string Num(const json& j, const char* key) { return std::to_string(Int(j, key)); }

// "2024-11-30 07:00Z"; "-" for 0.
std::string ShortTime(int64_t t) {
  if (t == 0) return "-";
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  if (gmtime_r(&tt, &tm) == nullptr) return std::to_string(t);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%MZ", &tm);
  return buf;
}

std::string Short(const std::string& digest) {
  return digest.size() > 16 ? digest.substr(0, 16) + "…" : digest;
}

std::string Or(const std::string& s, const std::string& fallback) {
  return s.empty() ? fallback : s;
}

// A node's value of an attribute, as the models section names them.
std::string NodeAttribute(const json& node, const std::string& attribute) {
  const json& facts = Obj(node, "facts");
  const json& fw = Obj(facts, "firmware");
  if (attribute.rfind("firmware.", 0) == 0) return Str(fw, attribute.substr(9).c_str());
  if (attribute == "boot.stream_sha256") return Str(facts, "boot_stream_sha256");
  return "";
}

std::string ArmRelease(const json& node) {
  for (const json& r : Arr(node, "releases")) {
    if (Str(r, "kind") == "arm") return Str(r, "release");
  }
  return "";
}

// --- Markdown ------------------------------------------------------------------

std::string MdCell(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\n': case '\r': case '\t': out += ' '; break;
      case '|': case '\\': case '`': case '*': case '_': case '[': case ']':
      case '#': case '!': case '~':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out.empty() ? "-" : out;
}

struct MdTable {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::string Render() const {
    std::string out = "|";
    for (const auto& h : head) out += " " + MdCell(h) + " |";
    out += "\n|";
    for (size_t i = 0; i < head.size(); ++i) out += " --- |";
    out += "\n";
    for (const auto& r : rows) {
      out += "|";
      for (const auto& c : r) out += " " + MdCell(c) + " |";
      out += "\n";
    }
    return out + "\n";
  }
};

// --- HTML ----------------------------------------------------------------------

// Cell text with an optional sort key (data-sort).
struct Cell {
  std::string text;
  std::string sort;
  std::string cls;
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT: implicit for rows
  Cell(const char* t) : text(t) {}             // NOLINT
  Cell(std::string t, std::string s, std::string c = "")
      : text(std::move(t)), sort(std::move(s)), cls(std::move(c)) {}
};

std::string HtmlTable(const std::string& caption, const std::vector<std::string>& head,
                      const std::vector<std::vector<Cell>>& rows, const std::string& empty) {
  if (rows.empty()) return "<p class=\"none\">" + HtmlEscape(empty) + "</p>\n";
  std::string out = "<div class=\"scroll\"><table class=\"sortable\">";
  if (!caption.empty()) out += "<caption>" + HtmlEscape(caption) + "</caption>";
  out += "<thead><tr>";
  for (const auto& h : head) out += "<th scope=\"col\">" + HtmlEscape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& r : rows) {
    out += "<tr>";
    for (const Cell& c : r) {
      out += "<td";
      if (!c.sort.empty()) out += " data-sort=\"" + HtmlEscape(c.sort) + "\"";
      if (!c.cls.empty()) out += " class=\"" + HtmlEscape(c.cls) + "\"";
      out += ">" + HtmlEscape(c.text) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

Cell TimeCell(int64_t t) { return Cell(ShortTime(t), std::to_string(t)); }

// Decisions per bucket: stacked bars, admit below deny.
std::string DecisionsSvg(const json& decisions) {
  const json& buckets = Arr(decisions, "buckets");
  if (buckets.empty()) return "";
  const int w = 1000, h = 190, left = 44, right = 8, top = 10, bottom = 30;
  const double plot_w = w - left - right, plot_h = h - top - bottom;
  int64_t max = 1;
  for (const json& b : buckets) max = std::max(max, Int(b, "admit") + Int(b, "deny"));
  const double bw = plot_w / static_cast<double>(buckets.size());
  auto fmt = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return std::string(buf);
  };
  std::string out = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(w) + " " +
                    std::to_string(h) +
                    "\" role=\"img\" aria-label=\"Admit and deny decisions per time bucket\">"
                    "<title>Decisions over time</title>";
  out += "<line class=\"axis\" x1=\"" + std::to_string(left) + "\" y1=\"" +
         std::to_string(top + static_cast<int>(plot_h)) + "\" x2=\"" +
         std::to_string(w - right) + "\" y2=\"" + std::to_string(top + static_cast<int>(plot_h)) +
         "\"/>";
  out += "<text class=\"lbl\" x=\"" + std::to_string(left - 4) + "\" y=\"" +
         std::to_string(top + 10) + "\" text-anchor=\"end\">" + std::to_string(max) + "</text>";
  out += "<text class=\"lbl\" x=\"" + std::to_string(left - 4) + "\" y=\"" +
         std::to_string(top + static_cast<int>(plot_h)) + "\" text-anchor=\"end\">0</text>";
  for (size_t i = 0; i < buckets.size(); ++i) {
    const json& b = buckets[i];
    const int64_t admit = Int(b, "admit"), deny = Int(b, "deny");
    if (admit + deny == 0) continue;
    const double x = left + bw * static_cast<double>(i);
    const double ha = plot_h * static_cast<double>(admit) / static_cast<double>(max);
    const double hd = plot_h * static_cast<double>(deny) / static_cast<double>(max);
    const double base = top + plot_h;
    const double bar = std::max(1.0, bw * 0.85);
    out += "<g><title>" +
           HtmlEscape(ShortTime(Int(b, "start")) + ": " + std::to_string(admit) + " admit, " +
                      std::to_string(deny) + " deny") +
           "</title>";
    if (admit > 0) {
      out += "<rect class=\"admit\" x=\"" + fmt(x) + "\" y=\"" + fmt(base - ha) +
             "\" width=\"" + fmt(bar) + "\" height=\"" + fmt(ha) + "\"/>";
    }
    if (deny > 0) {
      out += "<rect class=\"deny\" x=\"" + fmt(x) + "\" y=\"" + fmt(base - ha - hd) +
             "\" width=\"" + fmt(bar) + "\" height=\"" + fmt(hd) + "\"/>";
    }
    out += "</g>";
  }
  out += "<text class=\"lbl\" x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(h - 8) +
         "\">" + HtmlEscape(ShortTime(Int(buckets.front(), "start"))) + "</text>";
  out += "<text class=\"lbl\" x=\"" + std::to_string(w - right) + "\" y=\"" +
         std::to_string(h - 8) + "\" text-anchor=\"end\">" +
         HtmlEscape(ShortTime(Int(buckets.back(), "start"))) + "</text>";
  out += "</svg>\n";
  return out;
}

std::string Clip(const std::string& s, size_t max) {
  // By code points, so a multi-byte character is never cut.
  size_t cps = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && cps++ == max) break;
  }
  return i < s.size() ? s.substr(0, i) + "…" : s;
}

// One model's firmware version (and release) distribution: a row per
// attribute value, the bar its share of the model's nodes.
std::string DistributionSvg(const json& model) {
  struct Row {
    std::string label;
    int64_t count;
    bool majority;
  };
  std::vector<Row> rows;
  const int64_t nodes = std::max<int64_t>(1, Int(model, "nodes"));
  for (const json& a : Arr(model, "attributes")) {
    const std::string attr = Str(a, "attribute");
    if (attr.rfind("firmware.", 0) != 0 && attr != "release.arm") continue;
    const std::string majority = Str(a, "majority");
    for (const json& v : Arr(a, "values")) {
      rows.push_back({attr.substr(attr.find('.') + 1) + " " + Str(v, "value"), Int(v, "count"),
                      !majority.empty() && Str(v, "value") == majority});
    }
  }
  if (rows.empty()) return "";
  const int w = 1000, row_h = 18, label_w = 430, h = static_cast<int>(rows.size()) * row_h + 8;
  std::string out = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(w) + " " +
                    std::to_string(h) +
                    "\" role=\"img\" aria-label=\"Firmware version distribution\">"
                    "<title>Firmware version distribution</title>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const int y = 4 + static_cast<int>(i) * row_h;
    const int bar = std::max(2, static_cast<int>((w - label_w - 60) * r.count / nodes));
    out += "<g><title>" +
           HtmlEscape(r.label + ": " + std::to_string(r.count) + " of " +
                      std::to_string(nodes) + " nodes") +
           "</title><text class=\"lbl\" x=\"0\" y=\"" + std::to_string(y + 12) + "\">" +
           HtmlEscape(Clip(r.label, 60)) + "</text><rect class=\"" +
           (r.majority ? "maj" : "min") + "\" x=\"" + std::to_string(label_w) + "\" y=\"" +
           std::to_string(y + 2) + "\" width=\"" + std::to_string(bar) + "\" height=\"" +
           std::to_string(row_h - 5) + "\"/><text class=\"lbl\" x=\"" +
           std::to_string(label_w + bar + 6) + "\" y=\"" + std::to_string(y + 12) + "\">" +
           std::to_string(r.count) + "</text></g>";
  }
  return out + "</svg>\n";
}

// The page's one style sheet and one script, allowed by hash in the CSP.
constexpr std::string_view kStyle = R"css(
:root{color-scheme:light;--fg:#1b1f24;--mut:#57606a;--bd:#d0d7de;--bad:#b42318;--ok:#1a7f37;
--warn:#9a6700;--bg2:#f6f8fa}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1240px;padding:16px 20px 40px;font:14px/1.45 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:#fff}
h1{font-size:22px;margin:4px 0 2px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid
var(--bd);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
p.meta,p.none{color:var(--mut);margin:4px 0}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{border:1px solid var(--bd);border-radius:6px;padding:8px 14px;min-width:120px}
.card b{display:block;font-size:22px}.card.bad b{color:var(--bad)}.card span{color:var(--mut)}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;font-size:13px;margin:4px 0 10px}
caption{text-align:left;color:var(--mut);padding:2px 0}
th,td{border:1px solid var(--bd);padding:3px 7px;text-align:left;vertical-align:top;
overflow-wrap:anywhere}
th{background:var(--bg2);white-space:nowrap}
.js th{cursor:pointer}.js th:after{content:" \2195";color:var(--mut)}
th[aria-sort=ascending]:after{content:" \2191"}th[aria-sort=descending]:after{content:" \2193"}
td.bad{color:var(--bad);font-weight:600}td.ok{color:var(--ok)}td.warn{color:var(--warn)}
svg.chart{width:100%;height:auto;max-height:260px;border:1px solid var(--bd);border-radius:6px;
background:#fff}
svg .admit{fill:#2da44e}svg .deny{fill:#cf222e}svg .maj{fill:#0969da}svg .min{fill:#d4a72c}
svg .axis{stroke:#8c959f}svg .lbl{font-size:11px;fill:#57606a}
.legend span{display:inline-block;margin-right:14px;color:var(--mut)}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
.legend .admit{background:#2da44e}.legend .deny{background:#cf222e}
.legend .maj{background:#0969da}.legend .min{background:#d4a72c}
)css";

// Progressive enhancement only: click (or Enter on) a column head to sort
// its table; numbers by value, times by their data-sort key.
constexpr std::string_view kScript = R"js(
(function(){
  var num=/^-?[0-9]+(\.[0-9]+)?$/;
  function key(row,i){var c=row.cells[i];if(!c)return '';var s=c.getAttribute('data-sort');
    return s!==null?s:c.textContent;}
  document.documentElement.className+=' js';
  var tables=document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables,function(t){
    var heads=t.querySelectorAll('thead th');
    Array.prototype.forEach.call(heads,function(th,i){
      th.tabIndex=0;
      function sort(){
        var asc=th.getAttribute('aria-sort')!=='ascending';
        Array.prototype.forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var body=t.tBodies[0];
        var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){
          var x=key(a,i),y=key(b,i);
          var c=num.test(x)&&num.test(y)?parseFloat(x)-parseFloat(y):x.localeCompare(y);
          return asc?c:-c;
        });
        rows.forEach(function(r){body.appendChild(r);});
      }
      th.addEventListener('click',sort);
      th.addEventListener('keydown',function(e){
        if(e.key==='Enter'||e.key===' '){e.preventDefault();sort();}});
    });
    t.setAttribute('data-sortable','ready');
  });
})();
)js";

std::string CspHash(std::string_view text) {
  Sha256Digest d = Sha256(AsBytes(text));
  return "'sha256-" + Base64Encode(ByteView(d.data(), d.size())) + "'";
}

Cell StatusCell(const std::string& status) {
  const bool bad = status == "failed" || status == "held" || status == "stale" ||
                   status == "revoked";
  return Cell(status, "", bad ? "bad" : status == "admitted" ? "ok" : "");
}

Cell DecisionCell(const std::string& d) {
  return Cell(Or(d, "-"), "", d == "deny" ? "bad" : d == "admit" ? "ok" : "");
}

Cell ReleaseStateCell(const std::string& s) {
  return Cell(s, "", s == "revoked" || s == "expired" ? "bad" : s == "active" ? "ok" : "warn");
}

std::string Posture(const json& node) {
  std::string out;
  for (const auto& [rule, v] : Obj(node, "posture").items()) {
    if (!v.is_string()) continue;
    out += (out.empty() ? "" : ", ") + rule + "=" + v.get<std::string>();
  }
  return out;
}

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Status CheckFleetDocument(const json& doc) {
  if (!doc.is_object()) return InvalidArgumentError("the fleet report is not a JSON object.");
  if (Str(doc, "format") != kFormat) {
    return InvalidArgumentError("the fleet report's format is \"" + Str(doc, "format") +
                                "\", not \"" + std::string(kFormat) + "\".");
  }
  for (const char* key : {"models", "divergences", "stale", "failed", "no_evidence", "nodes"}) {
    if (!doc.contains(key) || !doc[key].is_array()) {
      return InvalidArgumentError(std::string("the fleet report has no \"") + key +
                                  "\" array.");
    }
  }
  for (const char* key : {"summary", "status_counts", "releases", "decisions"}) {
    if (!doc.contains(key) || !doc[key].is_object()) {
      return InvalidArgumentError(std::string("the fleet report has no \"") + key +
                                  "\" object.");
    }
  }
  if (!doc.contains("generated_at") || !doc["generated_at"].is_number_integer()) {
    return InvalidArgumentError("the fleet report has no integer \"generated_at\".");
  }
  return OkStatus();
}

std::string RenderFleetMarkdown(const json& doc) {
  const json& sum = Obj(doc, "summary");
  std::string out = "# Fleet drift report\n\n";
  out += "Generated " + MdCell(ShortTime(Int(doc, "generated_at"))) + " by the verifier (" +
         std::string(kFormat) + ").\n\n";
  MdTable s{{"nodes", "models", "divergent", "off-release", "stale", "failed/held",
             "no evidence"},
            {{Num(sum, "nodes"), Num(sum, "models"), Num(sum, "divergent_nodes"),
              Num(sum, "off_release_nodes"), Num(sum, "stale_nodes"), Num(sum, "failed_nodes"),
              Num(sum, "no_evidence_nodes")}}};
  out += s.Render();

  out += "## Nodes that diverge from their model's majority\n\n";
  MdTable d{{"node", "model", "attribute", "value", "majority"}, {}};
  for (const json& x : Arr(doc, "divergences")) {
    d.rows.push_back({Str(x, "node_id"), Str(x, "model"), Str(x, "attribute"), Str(x, "value"),
                      Str(x, "majority")});
  }
  out += d.rows.empty() ? "None: every node has its model's majority value.\n\n" : d.Render();

  out += "## Stale, failed and held nodes\n\n";
  MdTable f{{"node", "status", "since", "last decision", "held rules"}, {}};
  for (const json& x : Arr(doc, "stale")) {
    f.rows.push_back({Str(x, "node_id"), "stale", ShortTime(Int(x, "since")),
                      Str(x, "last_decision"), ""});
  }
  for (const json& x : Arr(doc, "failed")) {
    std::string rules;
    for (const json& r : Arr(x, "held_rules")) {
      if (r.is_string()) rules += (rules.empty() ? "" : ", ") + r.get<std::string>();
    }
    f.rows.push_back({Str(x, "node_id"), Str(x, "status"), ShortTime(Int(x, "since")),
                      Str(x, "last_decision"), rules});
  }
  out += f.rows.empty() ? "None.\n\n" : f.Render();

  out += "## Nodes on obsolete, revoked or unknown releases\n\n";
  MdTable r{{"node", "kind", "release", "state", "effective state", "seen"}, {}};
  for (const json& x : Arr(Obj(doc, "releases"), "off_release")) {
    r.rows.push_back({Str(x, "node_id"), Str(x, "kind"), Str(x, "release"), Str(x, "state"),
                      Str(x, "effective_state"), ShortTime(Int(x, "at"))});
  }
  out += r.rows.empty() ? "None: every node runs an active release.\n\n" : r.Render();

  if (!Arr(doc, "no_evidence").empty()) {
    out += "## Nodes whose evidence could not be examined\n\n";
    MdTable e{{"node", "reason"}, {}};
    for (const json& x : Arr(doc, "no_evidence")) {
      e.rows.push_back({Str(x, "node_id"), Str(x, "reason")});
    }
    out += e.Render();
  }

  const json& dec = Obj(doc, "decisions");
  out += "## Decisions over time\n\n";
  out += Num(dec, "admit") + " admit, " + Num(dec, "deny") + " deny from " +
         MdCell(ShortTime(Int(dec, "since"))) + " to " + MdCell(ShortTime(Int(dec, "until"))) +
         " in buckets of " + Num(dec, "bucket_seconds") + " s (empty buckets not shown).\n\n";
  MdTable t{{"bucket start", "admit", "deny"}, {}};
  for (const json& b : Arr(dec, "buckets")) {
    if (Int(b, "admit") + Int(b, "deny") == 0) continue;
    t.rows.push_back({ShortTime(Int(b, "start")), Num(b, "admit"), Num(b, "deny")});
  }
  out += t.rows.empty() ? "No results in the window.\n\n" : t.Render();

  out += "## Models\n\n";
  for (const json& m : Arr(doc, "models")) {
    out += "### " + MdCell(Str(m, "model")) + " (" + Num(m, "nodes") + " nodes)\n\n";
    MdTable a{{"attribute", "majority", "nodes with it", "other values", "unknown"}, {}};
    for (const json& x : Arr(m, "attributes")) {
      std::string others;
      const std::string maj = Str(x, "majority");
      for (const json& v : Arr(x, "values")) {
        if (Str(v, "value") == maj) continue;
        others += (others.empty() ? "" : "; ") + Str(v, "value") + " (" + Num(v, "count") + ")";
      }
      a.rows.push_back({Str(x, "attribute"),
                        Has(x, "majority") ? maj : (x.value("split", false) ? "(split)" : "-"),
                        Num(x, "majority_count") + " of " + Num(x, "observed"), others,
                        std::to_string(Arr(x, "unknown").size())});
    }
    out += a.Render();
  }

  out += "## Releases\n\n";
  MdTable rd{{"kind", "release", "state", "effective state", "nodes"}, {}};
  for (const json& x : Arr(Obj(doc, "releases"), "distribution")) {
    rd.rows.push_back({Str(x, "kind"), Str(x, "release"), Str(x, "state"),
                       Str(x, "effective_state"), Num(x, "nodes")});
  }
  out += rd.rows.empty() ? "No node has a recorded release.\n\n" : rd.Render();

  out += "## Nodes\n\n";
  MdTable n{{"node", "state", "status", "model", "decision", "decided", "ATF", "NIC FW", "BSP",
             "boot stream", "release", "posture"},
            {}};
  for (const json& x : Arr(doc, "nodes")) {
    n.rows.push_back({Str(x, "node_id"), Str(x, "state"), Str(x, "status"), Str(x, "model"),
                      Str(x, "decision"), ShortTime(Int(x, "decided_at")),
                      NodeAttribute(x, "firmware.atf"), NodeAttribute(x, "firmware.nic_fw"),
                      NodeAttribute(x, "firmware.bsp"),
                      Short(NodeAttribute(x, "boot.stream_sha256")), ArmRelease(x),
                      Posture(x)});
  }
  out += n.Render();
  return out;
}

std::string RenderFleetHtml(const json& doc) {
  const json& sum = Obj(doc, "summary");
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src " +
      CspHash(kStyle) + "; script-src " + CspHash(kScript) +
      "; img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'\">"
      "<meta name=\"referrer\" content=\"no-referrer\">"
      "<title>dpuaudit fleet drift report " +
      HtmlEscape(ShortTime(Int(doc, "generated_at"))) + "</title><style>" +
      std::string(kStyle) + "</style></head>\n<body>\n";
  out += "<h1>Fleet drift report</h1><p class=\"meta\">Generated " +
         HtmlEscape(ShortTime(Int(doc, "generated_at"))) + " by the verifier (" +
         std::string(kFormat) + "). Tables sort by a click on a column head.</p>\n";
  out += "<div class=\"cards\">";
  auto card = [&](const char* label, const char* key, bool bad_if_any) {
    const int64_t v = Int(sum, key);
    out += std::string("<div class=\"card") + (bad_if_any && v > 0 ? " bad" : "") + "\"><b>" +
           std::to_string(v) + "</b><span>" + HtmlEscape(label) + "</span></div>";
  };
  card("nodes", "nodes", false);
  card("models", "models", false);
  card("divergent", "divergent_nodes", true);
  card("off-release", "off_release_nodes", true);
  card("stale", "stale_nodes", true);
  card("failed or held", "failed_nodes", true);
  card("no evidence", "no_evidence_nodes", true);
  out += "</div>\n";

  out += "<h2 id=\"divergences\">Nodes that diverge from their model's majority</h2>\n";
  std::vector<std::vector<Cell>> rows;
  for (const json& x : Arr(doc, "divergences")) {
    rows.push_back({Str(x, "node_id"), Str(x, "model"), Str(x, "attribute"),
                    Cell(Str(x, "value"), "", "bad"), Str(x, "majority")});
  }
  out += HtmlTable("", {"node", "model", "attribute", "value", "majority"}, rows,
                   "None: every node has its model's majority value.");

  out += "<h2 id=\"status\">Stale, failed and held nodes</h2>\n";
  rows.clear();
  for (const json& x : Arr(doc, "stale")) {
    rows.push_back({Str(x, "node_id"), StatusCell("stale"), TimeCell(Int(x, "since")),
                    DecisionCell(Str(x, "last_decision")), ""});
  }
  for (const json& x : Arr(doc, "failed")) {
    std::string rules;
    for (const json& r : Arr(x, "held_rules")) {
      if (r.is_string()) rules += (rules.empty() ? "" : ", ") + r.get<std::string>();
    }
    rows.push_back({Str(x, "node_id"), StatusCell(Str(x, "status")), TimeCell(Int(x, "since")),
                    DecisionCell(Str(x, "last_decision")), rules});
  }
  out += HtmlTable("", {"node", "status", "since", "last decision", "held rules"}, rows,
                   "None.");

  out += "<h2 id=\"releases\">Nodes on obsolete, revoked or unknown releases</h2>\n";
  rows.clear();
  for (const json& x : Arr(Obj(doc, "releases"), "off_release")) {
    rows.push_back({Str(x, "node_id"), Str(x, "kind"), Str(x, "release"),
                    ReleaseStateCell(Str(x, "state")), ReleaseStateCell(Str(x, "effective_state")),
                    TimeCell(Int(x, "at"))});
  }
  out += HtmlTable("", {"node", "kind", "release", "state", "effective state", "seen"}, rows,
                   "None: every node runs an active release.");

  if (!Arr(doc, "no_evidence").empty()) {
    out += "<h2 id=\"no-evidence\">Nodes whose evidence could not be examined</h2>\n";
    rows.clear();
    for (const json& x : Arr(doc, "no_evidence")) {
      rows.push_back({Str(x, "node_id"), Str(x, "reason")});
    }
    out += HtmlTable("", {"node", "reason"}, rows, "None.");
  }

  const json& dec = Obj(doc, "decisions");
  out += "<h2 id=\"decisions\">Decisions over time</h2>\n<p class=\"meta\">" +
         Num(dec, "admit") + " admit, " + Num(dec, "deny") + " deny from " +
         HtmlEscape(ShortTime(Int(dec, "since"))) + " to " +
         HtmlEscape(ShortTime(Int(dec, "until"))) + ", buckets of " +
         Num(dec, "bucket_seconds") +
         " s.</p><p class=\"legend\"><span><i class=\"admit\"></i>admit</span>"
         "<span><i class=\"deny\"></i>deny</span></p>\n";
  out += DecisionsSvg(dec);

  out += "<h2 id=\"models\">Models</h2>\n";
  if (Arr(doc, "models").empty()) out += "<p class=\"none\">No node's evidence was examined.</p>\n";
  for (const json& m : Arr(doc, "models")) {
    out += "<h3>" + HtmlEscape(Str(m, "model")) + " (" + Num(m, "nodes") + " nodes)</h3>\n";
    out += "<p class=\"legend\"><span><i class=\"maj\"></i>majority value</span>"
           "<span><i class=\"min\"></i>other value</span></p>\n";
    out += DistributionSvg(m);
    rows.clear();
    for (const json& x : Arr(m, "attributes")) {
      std::string others, divergent;
      const std::string maj = Str(x, "majority");
      for (const json& v : Arr(x, "values")) {
        if (Str(v, "value") == maj) continue;
        others += (others.empty() ? "" : "; ") + Str(v, "value") + " (" + Num(v, "count") + ")";
      }
      for (const json& v : Arr(x, "divergent")) {
        divergent += (divergent.empty() ? "" : ", ") + Str(v, "node_id");
      }
      const bool split = x.value("split", false);
      rows.push_back({Str(x, "attribute"),
                      Has(x, "majority") ? Cell(maj) : Cell(split ? "(split)" : "-", "",
                                                             split ? "warn" : ""),
                      Cell(Num(x, "majority_count") + " of " + Num(x, "observed"),
                           Num(x, "majority_count")),
                      Cell(others, "", others.empty() ? "" : "warn"),
                      Cell(divergent, "", divergent.empty() ? "" : "bad"),
                      Cell(std::to_string(Arr(x, "unknown").size()))});
    }
    out += HtmlTable("", {"attribute", "majority", "nodes with it", "other values",
                          "divergent nodes", "unknown"},
                     rows, "No attributes.");
  }

  out += "<h2 id=\"release-distribution\">Releases</h2>\n";
  rows.clear();
  for (const json& x : Arr(Obj(doc, "releases"), "distribution")) {
    rows.push_back({Str(x, "kind"), Str(x, "release"), ReleaseStateCell(Str(x, "state")),
                    ReleaseStateCell(Str(x, "effective_state")), Num(x, "nodes")});
  }
  out += HtmlTable("", {"kind", "release", "state", "effective state", "nodes"}, rows,
                   "No node has a recorded release.");

  out += "<h2 id=\"nodes\">Nodes</h2>\n";
  rows.clear();
  for (const json& x : Arr(doc, "nodes")) {
    const std::string boot = NodeAttribute(x, "boot.stream_sha256");
    rows.push_back({Str(x, "node_id"), Str(x, "state"), StatusCell(Str(x, "status")),
                    Str(x, "model"), DecisionCell(Str(x, "decision")),
                    TimeCell(Int(x, "decided_at")), NodeAttribute(x, "firmware.atf"),
                    NodeAttribute(x, "firmware.nic_fw"), NodeAttribute(x, "firmware.bsp"),
                    Cell(Short(boot), boot), ArmRelease(x), Posture(x)});
  }
  out += HtmlTable("", {"node", "state", "status", "model", "decision", "decided", "ATF",
                        "NIC FW", "BSP", "boot stream", "release", "posture"},
                   rows, "No nodes are enrolled.");
  out += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return out;
}

int FleetReport(const FleetReportOptions& o, const AdminTarget& t) {
  if (o.format != "html" && o.format != "json" && o.format != "md") {
    return Fail(InvalidArgumentError("--format must be html, json or md."));
  }
  auto bucket = ParseDurationSeconds("--bucket", o.bucket);
  if (!bucket.ok()) return Fail(bucket.status());
  auto window = ParseDurationSeconds("--window", o.window);
  if (!window.ok()) return Fail(window.status());
  auto doc = CallVerifier(t, "GET",
                          "/v1/fleet?bucket=" + std::to_string(*bucket) +
                              "&window=" + std::to_string(*window));
  if (!doc.ok()) return FailApi(doc.status());
  if (Status s = CheckFleetDocument(*doc); !s.ok()) return Fail(s);
  const std::string text = o.format == "json" ? doc->dump(2) + "\n"
                           : o.format == "md" ? RenderFleetMarkdown(*doc)
                                              : RenderFleetHtml(*doc);
  if (o.out == "-") {
    std::cout << text << std::flush;
    return std::cout.good() ? kExitOk : Fail(UnavailableError("writing stdout failed."));
  }
  if (Status s = WriteFileAtomic(o.out, AsBytes(text), 0644); !s.ok()) {
    return Fail(s.WithPrefix(o.out));
  }
  const json& sum = (*doc)["summary"];
  std::cout << "wrote " << o.out << " (" << o.format << "): " << Int(sum, "nodes")
            << " nodes, " << Int(sum, "divergent_nodes") << " divergent, "
            << Int(sum, "off_release_nodes") << " off-release, " << Int(sum, "stale_nodes")
            << " stale, " << Int(sum, "failed_nodes") << " failed or held\n";
  return kExitOk;
}

}  // namespace dpuaudit::apps
