// `dpuaudit fleet report` (issue 16 §7) against a real verifier and real
// agents over recorded devices: three zero-trust nodes, one on the previous
// (obsolete, later revoked) release, one in NIC mode (denied: failed), one
// whose bfver prints markup, and one that went stale under `--stale-after`
// before the verifier restarted without it. The JSON validates against
// docs/schemas/fleet-report.schema.json and names each divergent node with
// its model's majority; Markdown and HTML escape the markup; GET /v1/fleet
// wants the reader token. Headless Chromium renders the HTML file: a
// screenshot that is not blank, no console error or CSP refusal, and the
// tables still there after the sort script ran.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/shared/http_client.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"

namespace dpuaudit {
namespace {

using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::ParseJson;
using itest::Proc;
using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

constexpr char kBootstrap[] = "fleet-report-bootstrap-token-0001";
constexpr char kHostileBsp[] = "4.9.1.13442<script>alert(\"bsp\")</script>";

class FleetReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-fleet-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/bootstrap.token",
                                AsBytes(std::string(kBootstrap) + "\n"), 0600)
                    .ok());
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  void StartVerifier(const std::string& stale_after) {
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", dir_ + "/bootstrap.token",
                                     "--stale-after", stale_after};
    for (auto& f : itest::AdminFlags(dir_, &admin_file_)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader_file_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
  }
  void ImportRefvals() {
    Proc p = itest::ImportFixtureRefvals(verifier_.url(), admin_file_);
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  }
  // The real agent enrolls `node` (bootstrap token: approved at once) and
  // attests `device_root`; a deny is still a report sent.
  void Attest(const std::string& node, const std::string& device_root) {
    std::vector<std::string> net = {"--verifier", verifier_.url(), "--node-id", node, "--key",
                                    dir_ + "/" + node + ".key"};
    std::vector<std::string> enroll = {kBin + "/dpuaudit-agent", "enroll",
                                       "--bootstrap-token-file", dir_ + "/bootstrap.token"};
    enroll.insert(enroll.end(), net.begin(), net.end());
    Proc e = Exec(enroll);
    ASSERT_EQ(e.exit_code, 0) << node << ": " << e.out << e.err;
    std::vector<std::string> attest = {kBin + "/dpuaudit-agent", "attest", "--device-root",
                                       device_root};
    attest.insert(attest.end(), net.begin(), net.end());
    Proc a = Exec(attest);
    ASSERT_TRUE(a.exit_code == 0 || a.exit_code == 1) << node << ": " << a.out << a.err;
  }
  // A copy of bf3-zero-trust whose bfver prints markup in the BSP version.
  std::string HostileDevice() {
    const std::string root = dir_ + "/hostile-device";
    fs::copy(Fixture("bf3-zero-trust"), root, fs::copy_options::recursive);
    const std::string bfver = root + "/out/bfver.txt";
    std::string text = itest::ReadAll(bfver);
    const std::string bsp = "4.9.1.13442";
    EXPECT_NE(text.find(bsp), std::string::npos);
    text.replace(text.find(bsp), bsp.size(), kHostileBsp);
    fs::permissions(bfver, fs::perms::owner_write, fs::perm_options::add);
    EXPECT_TRUE(WriteFileAtomic(bfver, AsBytes(text), 0644).ok());
    return root;
  }
  Proc Fleet(std::vector<std::string> args, const std::string& token_file) {
    std::vector<std::string> argv = {kBin + "/dpuaudit", "fleet", "report", "--verifier",
                                     verifier_.url(), "--token-file", token_file};
    argv.insert(argv.end(), args.begin(), args.end());
    return Exec(argv);
  }
  json FleetJson() {
    const std::string out = dir_ + "/fleet.json";
    Proc p = Fleet({"--format", "json", "--out", out}, reader_file_);
    EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
    const std::string text = itest::ReadAll(out);
    if (itest::HaveJsonschema()) {
      EXPECT_EQ(itest::SchemaErrors(dir_, "fleet-report", text), "") << text.substr(0, 3000);
      json extra = ParseJson(text);
      extra["member_no_schema_describes"] = true;
      EXPECT_NE(itest::SchemaErrors(dir_, "fleet-report", extra.dump()), "")
          << "the schema accepts a member it does not describe";
    }
    return ParseJson(text);
  }
  apps::HttpResponse Get(const std::string& path, const std::string& token) {
    auto c = apps::HttpClient::New(verifier_.url(), {});
    EXPECT_TRUE(c.ok());
    auto r = (*c)->GetWithBearer(path, token);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }
  static bool Lists(const json& entries, const std::string& node) {
    for (const json& e : entries) {
      if (e.value("node_id", "") == node) return true;
    }
    return false;
  }
  static json DivergenceOf(const json& doc, const std::string& node, const std::string& attr) {
    for (const json& d : doc["divergences"]) {
      if (d.value("node_id", "") == node && d.value("attribute", "") == attr) return d;
    }
    return json();
  }
  static json OffRelease(const json& doc, const std::string& node) {
    for (const json& d : doc["releases"]["off_release"]) {
      if (d.value("node_id", "") == node) return d;
    }
    return json();
  }

  std::string dir_, admin_file_, reader_file_;
  itest::VerifierProcess verifier_;
};

TEST_F(FleetReportTest, NamesDivergentStaleFailedAndOffReleaseNodesInEveryFormat) {
  // Phase 1: a node that stops attesting goes stale (stored by the sweep).
  StartVerifier("3s");
  ImportRefvals();
  Attest("stale-1", Fixture("bf3-zero-trust"));
  bool stale = false;
  for (int i = 0; i < 150 && !stale; ++i) {
    auto r = Get("/v1/fleet", itest::kReaderToken);
    stale = r.status == 200 && Lists(ParseJson(r.body)["stale"], "stale-1");
    if (!stale) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(stale) << "stale-1 never went stale; " << itest::ReadAll(verifier_.log());
  // Phase 2: no stale timer, so the rest of the fleet stays as attested;
  // the stored stale status survives the restart.
  verifier_.Stop();
  StartVerifier("0");
  for (const char* n : {"zt-1", "zt-2", "zt-3"}) Attest(n, Fixture("bf3-zero-trust"));
  Attest("old-1", Fixture("bf3-fw-outdated"));
  Attest("nic-1", Fixture("bf3-nic-mode"));
  Attest("hostile-1", HostileDevice());

  // The reader (or admin) token only.
  EXPECT_EQ(Get("/v1/fleet", "").status, 401);
  EXPECT_EQ(Get("/v1/fleet", "not-the-token").status, 401);
  EXPECT_EQ(Get("/v1/fleet", "integration-admin-token-0001").status, 200);
  auto bad = Get("/v1/fleet?bucket=10", itest::kReaderToken);
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("bucket"));

  json doc = FleetJson();
  ASSERT_EQ(doc.value("format", ""), "dpuaudit-fleet/1") << doc.dump(2).substr(0, 2000);
  EXPECT_EQ(doc["summary"]["nodes"], 7);
  ASSERT_EQ(doc["models"].size(), 1u) << doc["models"].dump(2);
  EXPECT_EQ(doc["models"][0]["model"], "BlueField-3");
  EXPECT_TRUE(doc["no_evidence"].empty()) << doc["no_evidence"].dump(2);
  // The node on the previous release diverges on its firmware, the
  // majority being the zero-trust nodes' values.
  json fw = DivergenceOf(doc, "old-1", "firmware.nic_fw");
  EXPECT_EQ(fw.value("value", ""), "32.43.1008") << doc["divergences"].dump(2);
  EXPECT_EQ(fw.value("majority", ""), "32.43.2402");
  EXPECT_FALSE(DivergenceOf(doc, "old-1", "firmware.bsp").is_null());
  EXPECT_FALSE(DivergenceOf(doc, "old-1", "boot.stream_sha256").is_null());
  // NIC mode: a posture divergence (and a failed node).
  json mode = DivergenceOf(doc, "nic-1", "posture.dpu.operation_mode");
  EXPECT_FALSE(mode.is_null()) << doc["divergences"].dump(2);
  EXPECT_EQ(mode.value("majority", ""), "dpu");
  EXPECT_TRUE(Lists(doc["failed"], "nic-1")) << doc["failed"].dump(2);
  // The markup is carried as text.
  EXPECT_EQ(DivergenceOf(doc, "hostile-1", "firmware.bsp").value("value", ""), kHostileBsp);
  // The zero-trust nodes diverge from nothing.
  for (const char* n : {"zt-1", "zt-2", "zt-3", "stale-1"}) {
    for (const json& d : doc["divergences"]) EXPECT_NE(d.value("node_id", ""), n) << d.dump();
  }
  EXPECT_TRUE(Lists(doc["stale"], "stale-1")) << doc["stale"].dump(2);
  EXPECT_EQ(OffRelease(doc, "old-1").value("effective_state", ""), "obsolete")
      << doc["releases"].dump(2);
  EXPECT_EQ(OffRelease(doc, "old-1").value("release", ""), "bf-bundle-2.9.0-90");
  EXPECT_TRUE(OffRelease(doc, "zt-1").is_null());
  EXPECT_GE(doc["decisions"]["admit"].get<int>(), 4);
  EXPECT_GE(doc["decisions"]["deny"].get<int>(), 1);

  // The old release is revoked: old-1's admission is withdrawn and the
  // release it was last seen on is now revoked.
  Proc rv = Exec({kBin + "/dpuaudit", "refvals", "revoke", "bf-bundle-2.9.0-90", "--by",
                  "fleet-test", "--reason", "CVE in the old ATF", "--verifier", verifier_.url(),
                  "--admin-token-file", admin_file_});
  ASSERT_EQ(rv.exit_code, 0) << rv.out << rv.err;
  doc = FleetJson();
  EXPECT_EQ(OffRelease(doc, "old-1").value("effective_state", ""), "revoked")
      << doc["releases"].dump(2);
  EXPECT_TRUE(Lists(doc["failed"], "old-1")) << doc["failed"].dump(2);

  // Markdown, to a file and to stdout.
  const std::string md_file = dir_ + "/fleet.md";
  Proc md = Fleet({"--format", "md", "--out", md_file}, reader_file_);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_THAT(md.out, HasSubstr("wrote " + md_file));
  const std::string text = itest::ReadAll(md_file);
  for (const char* n : {"old-1", "nic-1", "stale-1", "hostile-1", "bf-bundle-2.9.0-90"}) {
    EXPECT_THAT(text, HasSubstr(n));
  }
  EXPECT_THAT(text, Not(HasSubstr("<script>")));
  EXPECT_THAT(text, HasSubstr("&lt;script&gt;"));
  Proc md_out = Fleet({"--format", "md", "--out", "-"}, reader_file_);
  ASSERT_EQ(md_out.exit_code, 0) << md_out.err;
  EXPECT_THAT(md_out.out, HasSubstr("# Fleet drift report"));
  EXPECT_THAT(md_out.out, HasSubstr("posture.dpu.operation\\_mode"));

  // HTML.
  const std::string html_file = dir_ + "/fleet.html";
  Proc html = Fleet({"--format", "html", "--out", html_file, "--bucket", "15m", "--window", "1d"},
                    reader_file_);
  ASSERT_EQ(html.exit_code, 0) << html.err;
  const std::string page = itest::ReadAll(html_file);
  EXPECT_THAT(page, HasSubstr("old-1"));
  EXPECT_THAT(page, HasSubstr("&lt;script&gt;alert(&quot;bsp&quot;)"));
  EXPECT_THAT(page, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(page, HasSubstr("buckets of 900 s"));

  // Usage and API errors exit 2 and say why.
  Proc fmt = Fleet({"--format", "pdf", "--out", "-"}, reader_file_);
  EXPECT_EQ(fmt.exit_code, 2);
  Proc no_out = Fleet({"--format", "json"}, reader_file_);
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_THAT(no_out.err, HasSubstr("--out"));
  Proc window = Fleet({"--format", "json", "--out", "-", "--bucket", "1m", "--window", "30d"},
                      reader_file_);
  EXPECT_EQ(window.exit_code, 2);
  EXPECT_THAT(window.err, HasSubstr("2000 buckets"));
  const std::string wrong = dir_ + "/wrong.token";
  ASSERT_TRUE(
      WriteFileAtomic(wrong, AsBytes(std::string("not-the-reader-token-0001\n")), 0600).ok());
  Proc denied = Fleet({"--format", "json", "--out", "-"}, wrong);
  EXPECT_EQ(denied.exit_code, 2);
  EXPECT_THAT(denied.err, HasSubstr("401"));
  Proc unwritable = Fleet({"--format", "json", "--out", dir_ + "/no/such/dir/x.json"},
                          reader_file_);
  EXPECT_EQ(unwritable.exit_code, 2);
}

// Headless Chromium (Debian's `chromium`, scripts/deps.sh) on the HTML file:
// it renders (a screenshot well above a blank page's), logs no console
// error and no CSP refusal (so the CSP hashes are right and the script
// ran), and the DOM after the script still holds the tables, marked ready
// by the sort script. A canary page with a thrown error proves the
// console check can see one.
class FleetHtmlInChromiumTest : public FleetReportTest {
 protected:
  std::string Chromium() {
    for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
      if (fs::exists(p)) return p;
    }
    return "";
  }
  Proc Run(const std::string& chromium, std::vector<std::string> args, const std::string& url) {
    std::vector<std::string> argv = {chromium,
                                     "--headless=new",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--disable-dev-shm-usage",
                                     "--no-first-run",
                                     "--no-default-browser-check",
                                     "--user-data-dir=" + dir_ + "/chromium-profile",
                                     "--enable-logging=stderr",
                                     "--v=0",
                                     "--window-size=1280,2000"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(url);
    return Exec(argv);
  }
  // The page's console messages and CSP refusals from Chromium's log.
  static std::vector<std::string> ConsoleLines(const std::string& log) {
    std::vector<std::string> out;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (line.find("CONSOLE") != std::string::npos ||
          line.find("Uncaught") != std::string::npos ||
          line.find("Refused to") != std::string::npos) {
        out.push_back(line);
      }
    }
    return out;
  }
  static size_t PngSize(const std::string& path, uint32_t* width, uint32_t* height) {
    std::string png = itest::ReadAll(path);
    if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return 0;
    auto be32 = [&](size_t at) {
      return (uint32_t{static_cast<uint8_t>(png[at])} << 24) |
             (uint32_t{static_cast<uint8_t>(png[at + 1])} << 16) |
             (uint32_t{static_cast<uint8_t>(png[at + 2])} << 8) |
             uint32_t{static_cast<uint8_t>(png[at + 3])};
    };
    *width = be32(16);
    *height = be32(20);
    return png.size();
  }
};

TEST_F(FleetHtmlInChromiumTest, RendersWithoutConsoleErrorsAndKeepsItsTables) {
  const std::string chromium = Chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/deps.sh installs Debian's chromium)";
  }
  StartVerifier("0");
  ImportRefvals();
  Attest("zt-1", Fixture("bf3-zero-trust"));
  Attest("zt-2", Fixture("bf3-zero-trust"));
  Attest("nic-1", Fixture("bf3-nic-mode"));
  Attest("hostile-1", HostileDevice());
  const std::string html_file = dir_ + "/fleet.html";
  Proc html = Fleet({"--format", "html", "--out", html_file}, reader_file_);
  ASSERT_EQ(html.exit_code, 0) << html.err;

  // The canary: a thrown error must show in the log, or the check is blind.
  const std::string canary = dir_ + "/canary.html";
  ASSERT_TRUE(WriteFileAtomic(canary,
                              AsBytes(std::string("<!DOCTYPE html><html><body><p>canary</p>"
                                                  "<script>throw new Error('canary-error')"
                                                  "</script></body></html>")),
                              0644)
                  .ok());
  Proc c = Run(chromium, {"--screenshot=" + dir_ + "/canary.png"}, "file://" + canary);
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  std::vector<std::string> canary_lines = ConsoleLines(c.err);
  ASSERT_FALSE(canary_lines.empty()) << "chromium logged no console line for a thrown error:\n"
                                     << c.err;
  EXPECT_THAT(canary_lines.front() + (canary_lines.size() > 1 ? canary_lines[1] : ""),
              HasSubstr("canary-error"));

  const std::string shot = dir_ + "/fleet.png";
  Proc s = Run(chromium, {"--screenshot=" + shot}, "file://" + html_file);
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
  EXPECT_TRUE(ConsoleLines(s.err).empty()) << s.err;
  uint32_t w = 0, h = 0, cw = 0, ch = 0;
  const size_t size = PngSize(shot, &w, &h);
  const size_t blank = PngSize(dir_ + "/canary.png", &cw, &ch);
  ASSERT_GT(size, 0u) << "no PNG at " << shot << "\n" << s.err;
  EXPECT_EQ(w, 1280u);
  EXPECT_EQ(h, 2000u);
  EXPECT_GT(size, 3 * blank) << "the screenshot is hardly more than a blank page's";

  Proc dom = Run(chromium, {"--dump-dom"}, "file://" + html_file);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_TRUE(ConsoleLines(dom.err).empty()) << dom.err;
  EXPECT_THAT(dom.out, HasSubstr("data-sortable=\"ready\""));  // the script ran
  EXPECT_THAT(dom.out, HasSubstr("class=\" js\""));
  EXPECT_THAT(dom.out, HasSubstr("nic-1"));
  EXPECT_THAT(dom.out, HasSubstr("<svg class=\"chart\""));
  EXPECT_THAT(dom.out, Not(HasSubstr("<script>alert")));
  size_t tables = 0;
  for (size_t at = dom.out.find("<table"); at != std::string::npos;
       at = dom.out.find("<table", at + 1)) {
    ++tables;
  }
  EXPECT_GE(tables, 5u);
}

}  // namespace
}  // namespace dpuaudit
