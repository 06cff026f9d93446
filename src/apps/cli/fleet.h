// `dpuaudit fleet report` (issue 16 §7, docs/fleet-report.md): the fleet
// drift report the verifier builds (GET /v1/fleet, reader token), written
// as JSON (the "dpuaudit-fleet/1" document as served), Markdown (tables) or
// one self-contained HTML file.
//
// Exit codes: 0 written; 2 usage or runtime error (verifier unreachable,
// HTTP 401/403/404, a document that is not "dpuaudit-fleet/1", the output
// file not writable), printed to stderr.
//
// Guarantees: the renderers are pure functions of the document; every
// string of it is escaped for the output (HTML: & < > " ' as entities, in
// text, attributes and the inline SVG alike; Markdown: HTML-significant
// characters as entities, Markdown punctuation and table pipes
// backslash-escaped), so a hostile node id or version is shown, never
// interpreted. The HTML file loads nothing (no network, no fonts, no
// images by URL: its Content-Security-Policy allows only its own inline
// style and script, by hash), is readable without JavaScript (tables and
// charts are static HTML and SVG), and its one small script only makes
// the tables sortable. Divergences, stale, failed and off-release nodes
// come before the full node table ("failures first").
// Does not: judge anything (the verifier's document says what diverges);
// colour anything on a terminal.
#ifndef DPUAUDIT_APPS_CLI_FLEET_H_
#define DPUAUDIT_APPS_CLI_FLEET_H_

#include <nlohmann/json.hpp>
#include <string>

#include "apps/cli/api_client.h"
#include "common/status.h"

namespace dpuaudit::apps {

struct FleetReportOptions {
  std::string format = "html";  // html | json | md
  std::string out;              // file, or "-" for stdout
  std::string bucket = "1h";    // decisions-over-time bucket width
  std::string window = "7d";    // ... over this long
};

int FleetReport(const FleetReportOptions& o, const AdminTarget& t);

// INVALID_ARGUMENT unless `doc` is an object with format
// "dpuaudit-fleet/1" and the members the renderers read, of their types.
Status CheckFleetDocument(const nlohmann::json& doc);
std::string RenderFleetMarkdown(const nlohmann::json& doc);
std::string RenderFleetHtml(const nlohmann::json& doc);
// The HTML escape the renderer uses: & < > " ' as entities.
std::string HtmlEscape(std::string_view s);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_FLEET_H_
