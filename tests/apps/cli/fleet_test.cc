// The renderers of `dpuaudit fleet report` (issue 16 §7) on documents the
// real builder makes: every hostile string (a node id, a firmware version,
// a model, a posture value, a reason) comes out escaped in HTML and
// Markdown; the HTML is one self-contained file whose CSP hashes are those
// of its own style and script; failures come before the node table; and a
// document of another format is refused.
#include "apps/cli/fleet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>

#include "common/bytes.h"
#include "common/crypto.h"
#include "verifier/fleet.h"

namespace dpuaudit::apps {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kNow = 1'800'000'000;
const std::string kHostileId = "<script>alert('id')</script>";
const std::string kHostileVersion = "\"><img src=x onerror=alert(1)>|`*[x](javascript:y)";
const std::string kHostileModel = "</svg><script>alert(2)</script>";

verifier::FleetNode Node(const std::string& id, const std::string& atf,
                         const std::string& model = "BlueField-3",
                         const std::string& mode = "dpu") {
  verifier::FleetNode n;
  n.node.node_id = id;
  n.node.state = verifier::NodeState::kApproved;
  verifier::NodeStatusRecord s;
  s.node_id = id;
  s.status = "admitted";
  s.since = kNow - 10;
  n.status = s;
  n.has_result = true;
  n.decision = "admit";
  n.result_at = kNow - 10;
  n.report_sha256 = std::string(64, 'a');
  n.posture = {{"dpu.operation_mode", mode}};
  verifier::FleetNodeFacts f;
  f.model = model;
  f.atf = atf;
  f.nic_fw = "32.43.2402";
  f.boot_stream_sha256 = std::string(64, 'b');
  n.facts = f;
  return n;
}

json HostileDoc() {
  verifier::FleetInput in;
  in.now = kNow;
  in.nodes.push_back(Node("n1", "atf-1"));
  in.nodes.push_back(Node("n2", "atf-1"));
  in.nodes.push_back(Node(kHostileId, kHostileVersion, "BlueField-3", "<b>nic</b>"));
  in.nodes.push_back(Node("m1", kHostileVersion, kHostileModel));
  verifier::FleetNode stale = Node("gone&away", "atf-1");
  stale.status->status = "stale";
  in.nodes.push_back(stale);
  verifier::FleetNode broken = Node("broken", "atf-1");
  broken.facts.reset();
  broken.facts_error = "the stored report does not verify: <evil>";
  in.nodes.push_back(broken);
  in.node_releases = {{kHostileId, "arm", "rel<1>", kNow - 5}};
  in.decisions = {{(kNow / 3600) * 3600, 3, 1}};
  return verifier::BuildFleetReport(in);
}

TEST(FleetRenderTest, HtmlEscapesEveryStringFromTheStore) {
  json doc = HostileDoc();
  ASSERT_TRUE(CheckFleetDocument(doc).ok()) << CheckFleetDocument(doc).ToString();
  ASSERT_EQ(doc["divergences"].size(), 2u) << doc["divergences"].dump(2);  // the id's atf and mode
  const std::string html = RenderFleetHtml(doc);
  // Only our own script and no markup from the data.
  EXPECT_THAT(html, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, Not(HasSubstr("<b>nic")));
  EXPECT_THAT(html, Not(HasSubstr("<evil>")));
  EXPECT_THAT(html, Not(HasSubstr("rel<1>")));
  EXPECT_THAT(html, Not(HasSubstr("</svg><script")));
  size_t scripts = 0;
  for (size_t at = html.find("<script"); at != std::string::npos;
       at = html.find("<script", at + 1)) {
    ++scripts;
  }
  EXPECT_EQ(scripts, 1u);
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;id&#39;)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
  EXPECT_THAT(html, HasSubstr("gone&amp;away"));
  EXPECT_THAT(html, HasSubstr("&lt;b&gt;nic&lt;/b&gt;"));
  // In headings, and inside the SVG (the distribution chart's titles).
  EXPECT_THAT(html, HasSubstr("<h3>&lt;/svg&gt;&lt;script&gt;alert(2)"));
  EXPECT_THAT(html, HasSubstr("<title>atf &quot;&gt;&lt;img"));
}

TEST(FleetRenderTest, HtmlIsSelfContainedAndItsCspAllowsOnlyItsOwnStyleAndScript) {
  const std::string html = RenderFleetHtml(HostileDoc());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Nothing fetched: no URL of any scheme, no src/href attributes.
  EXPECT_THAT(html, Not(HasSubstr("http:")));
  EXPECT_THAT(html, Not(HasSubstr("https:")));
  EXPECT_THAT(html, Not(HasSubstr("//fonts")));
  EXPECT_THAT(html, Not(HasSubstr(" src=\"")));
  EXPECT_THAT(html, Not(HasSubstr(" href=\"")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  EXPECT_THAT(html, Not(HasSubstr("url(")));
  auto between = [&](const std::string& open, const std::string& close) {
    size_t a = html.find(open);
    size_t b = html.find(close, a);
    EXPECT_NE(a, std::string::npos) << open;
    EXPECT_NE(b, std::string::npos) << close;
    return a == std::string::npos || b == std::string::npos
               ? std::string()
               : html.substr(a + open.size(), b - a - open.size());
  };
  auto hash = [](const std::string& s) {
    Sha256Digest d = Sha256(AsBytes(s));
    return "'sha256-" + Base64Encode(ByteView(d.data(), d.size())) + "'";
  };
  const std::string csp = between("http-equiv=\"Content-Security-Policy\" content=\"", "\">");
  EXPECT_THAT(csp, HasSubstr("default-src 'none'"));
  EXPECT_THAT(csp, HasSubstr("script-src " + hash(between("<script>", "</script>"))));
  EXPECT_THAT(csp, HasSubstr("style-src " + hash(between("<style>", "</style>"))));
  // No inline style attributes or event handlers (the CSP would block them).
  EXPECT_THAT(html, Not(HasSubstr(" style=")));
  EXPECT_FALSE(std::regex_search(html, std::regex(" on[a-z]+=\"")));
  // Static charts and sortable tables.
  EXPECT_THAT(html, HasSubstr("<svg class=\"chart\""));
  EXPECT_THAT(html, HasSubstr("aria-label=\"Admit and deny decisions per time bucket\""));
  EXPECT_THAT(html, HasSubstr("aria-label=\"Firmware version distribution\""));
  EXPECT_THAT(html, HasSubstr("<table class=\"sortable\">"));
  EXPECT_THAT(html, HasSubstr("3 admit, 1 deny"));
}

TEST(FleetRenderTest, FailuresComeBeforeTheNodeTable) {
  const std::string html = RenderFleetHtml(HostileDoc());
  const size_t divergences = html.find("id=\"divergences\"");
  const size_t status = html.find("id=\"status\"");
  const size_t nodes = html.find("id=\"nodes\"");
  ASSERT_NE(divergences, std::string::npos);
  ASSERT_NE(nodes, std::string::npos);
  EXPECT_LT(divergences, status);
  EXPECT_LT(status, nodes);
  // The stale node and the one without evidence are named before the table.
  EXPECT_LT(html.find("gone&amp;away"), nodes);
  EXPECT_LT(html.find("broken"), nodes);
}

TEST(FleetRenderTest, MarkdownEscapesAndKeepsTheTablesWhole) {
  const std::string md = RenderFleetMarkdown(HostileDoc());
  EXPECT_THAT(md, Not(HasSubstr("<script>")));
  EXPECT_THAT(md, Not(HasSubstr("<img")));
  EXPECT_THAT(md, Not(HasSubstr("[x](javascript")));
  EXPECT_THAT(md, HasSubstr("\\[x\\](javascript"));
  EXPECT_THAT(md, HasSubstr("&lt;script&gt;"));
  EXPECT_THAT(md, HasSubstr("\\|"));
  // Every row of the divergence table has the header's five cells: an
  // escaped pipe does not split a cell.
  const size_t at = md.find("## Nodes that diverge");
  ASSERT_NE(at, std::string::npos);
  std::string section = md.substr(at, md.find("\n## ", at + 1) - at);
  size_t rows = 0;
  std::istringstream lines(section);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '|') continue;
    ++rows;
    std::string unescaped = std::regex_replace(line, std::regex(R"(\\\|)"), "");
    EXPECT_EQ(std::count(unescaped.begin(), unescaped.end(), '|'), 6) << line;
  }
  EXPECT_EQ(rows, 4u);  // head, rule, two divergences
  EXPECT_THAT(md, HasSubstr("# Fleet drift report"));
  EXPECT_THAT(md, HasSubstr("| stale |"));
}

TEST(FleetRenderTest, OtherDocumentsAreRefused) {
  json doc = HostileDoc();
  EXPECT_TRUE(CheckFleetDocument(doc).ok());
  json wrong = doc;
  wrong["format"] = "dpuaudit-fleet/2";
  EXPECT_THAT(CheckFleetDocument(wrong).message(), HasSubstr("dpuaudit-fleet/2"));
  for (const char* key : {"nodes", "models", "summary", "decisions", "generated_at"}) {
    json missing = doc;
    missing.erase(key);
    EXPECT_EQ(CheckFleetDocument(missing).code(), StatusCode::kInvalidArgument) << key;
    EXPECT_THAT(CheckFleetDocument(missing).message(), HasSubstr(key));
  }
  EXPECT_EQ(CheckFleetDocument(json::array()).code(), StatusCode::kInvalidArgument);
  // Members of unexpected types inside render as empty, never throw.
  json odd = doc;
  odd["nodes"] = json::array({1, "x", json::object({{"node_id", 5}, {"facts", "no"}})});
  odd["models"] = json::array({json::object({{"attributes", 3}})});
  EXPECT_NO_THROW(RenderFleetHtml(odd));
  EXPECT_NO_THROW(RenderFleetMarkdown(odd));
}

TEST(FleetRenderTest, HtmlEscapeCoversTheFiveCharacters) {
  EXPECT_EQ(HtmlEscape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&#39;f");
  EXPECT_EQ(HtmlEscape("plain ünïcode"), "plain ünïcode");
}

}  // namespace
}  // namespace dpuaudit::apps
