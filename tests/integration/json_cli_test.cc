// Every `dpuaudit --json` output of the report, eventlog, bfb, trust,
// refvals, bmc and spdm commands (issue 15 §5) against its schema in
// docs/schemas, over real inputs only: reports the real agent made of the
// recorded devices against a real verifier (one with a swtpm quote), the
// fixture BFBs and event log, the BMC simulator. Also: "-" reads stdin
// (bfb inspect streams it, export-quote reads the report once), a
// malformed file is exit 2 with a message naming it, and each schema
// refuses a document it does not describe (a schema that accepts anything
// is a test that cannot fail).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "attest/eventlog.h"
#include "attest/tpm/simulate.h"
#include "attest/tpm/swtpm_harness.h"
#include "attest/tpm/tpm.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"
#include "testing/child_process.h"

namespace dpuaudit::itest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kBootstrapToken[] = "json-cli-bootstrap-token-0123456789";
const std::string kEventLog = kSrc + "/tests/fixtures/eventlogs/bf3-ftpm-boot.bin";
const std::string kBfbDir = kSrc + "/tests/fixtures/bfb/";

json Json(const std::string& s) {
  auto j = json::parse(s, nullptr, false);
  return j.is_discarded() ? json() : j;
}

void WriteText(const std::string& path, const std::string& text, mode_t mode = 0644) {
  ASSERT_TRUE(WriteFileAtomic(path, AsBytes(text), mode).ok()) << path;
}

using itest::ExecWithStdin;

Proc Cli(std::vector<std::string> args) {
  args.insert(args.begin(), kBin + "/dpuaudit");
  return Exec(args);
}

// Terminal columns: UTF-8 code points ("…" is one).
size_t DisplayWidthOf(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

// The verdict order `report show` promises: failing, unknown, passing.
int Rank(const std::string& verdict) {
  return verdict == "fail" ? 0 : verdict == "unknown" ? 1 : 2;
}

// A dpuaudit-bmc-sim process (as in bmc_test.cc); stopped on destruction.
class BmcSim {
 public:
  bool Start(const std::string& dir, const std::vector<std::string>& faults, std::string* error) {
    const std::string ready = dir + "/sim.ready";
    fs::remove(ready);
    std::vector<std::string> argv = {
        kBin + "/dpuaudit-bmc-sim", "--credentials", dir + "/sim-creds.json", "--ready-file",
        ready, "--tls-cert-out", dir + "/tls.pem", "--profile",
        kSrc + "/tests/fixtures/bmc/bf3-zero-trust.json", "--spdm", "--keys-dir",
        dir + "/bmc-keys", "--anchor-out", dir + "/anchor.pem"};
    for (const std::string& f : faults) argv.insert(argv.end(), {"--fault", f});
    ::dpuaudit::testing::ChildProcessOptions options;
    options.output_file = dir + "/sim.log";
    if (!child_.Start(argv, options, error)) return false;
    std::string text;
    if (!child_.WaitForReadyFile(ready, std::chrono::seconds(10), std::chrono::milliseconds(25),
                                 &text, error)) {
      return false;
    }
    ready_ = json::parse(text);
    return true;
  }
  void Stop() { child_.Stop(); }
  std::string url() const { return ready_["url"]; }
  std::string spki() const { return ready_["tls_spki_sha256"]; }

 private:
  ::dpuaudit::testing::ChildProcess child_;
  json ready_;
};

class JsonCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-jsoncli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    if (!HaveJsonschema()) {
      GTEST_SKIP() << "python3-jsonschema is not installed (scripts/deps.sh): the schemas "
                      "cannot be checked";
    }
  }
  void TearDown() override {
    sim_.Stop();
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // `json` validates against docs/schemas/<name>.schema.json, and the schema
  // is not vacuous: the same document with one member it does not describe
  // is refused (checked once per schema).
  void ExpectSchema(const std::string& name, const std::string& text) {
    SCOPED_TRACE(name);
    const json doc = Json(text);
    ASSERT_FALSE(doc.is_null()) << "not JSON: " << text.substr(0, 400);
    EXPECT_EQ(SchemaErrors(dir_, name, text), "") << text.substr(0, 2000);
    if (!refusal_checked_.insert(name).second) return;
    json extra = doc;
    extra["member_no_schema_describes"] = true;
    EXPECT_NE(SchemaErrors(dir_, name, extra.dump()), "")
        << name << " accepts a member it does not describe";
  }

  void StartVerifier(std::vector<std::string> extra = {}) {
    WriteText(dir_ + "/bootstrap.token", std::string(kBootstrapToken) + "\n", 0600);
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", dir_ + "/bootstrap.token"};
    for (auto& f : AdminFlags(dir_, &admin_file_)) args.push_back(f);
    for (auto& f : ReaderFlags(dir_, &reader_file_)) args.push_back(f);
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    Proc imported = ImportFixtureRefvals(verifier_.url(), admin_file_);
    ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  }
  std::vector<std::string> Admin() {
    return {"--verifier", verifier_.url(), "--admin-token-file", admin_file_};
  }
  std::vector<std::string> Reader() {
    return {"--verifier", verifier_.url(), "--token-file", reader_file_};
  }

  // The real agent enrolls `node` and attests the recorded device at
  // `device_root`; returns the report file it wrote.
  std::string Attest(const std::string& node, const std::string& device_root,
                     const std::vector<std::string>& extra = {}) {
    std::vector<std::string> net = {"--verifier", verifier_.url(), "--node-id", node, "--key",
                                    dir_ + "/" + node + ".key"};
    net.insert(net.end(), extra.begin(), extra.end());
    std::vector<std::string> enroll = {kBin + "/dpuaudit-agent", "enroll",
                                       "--bootstrap-token-file", dir_ + "/bootstrap.token"};
    enroll.insert(enroll.end(), net.begin(), net.end());
    Proc e = Exec(enroll);
    EXPECT_EQ(e.exit_code, 0) << e.out << e.err;
    const std::string report = dir_ + "/" + node + ".report.jws";
    std::vector<std::string> attest = {kBin + "/dpuaudit-agent", "attest", "--device-root",
                                       device_root, "--report-out", report};
    attest.insert(attest.end(), net.begin(), net.end());
    Proc a = Exec(attest);
    EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
    return report;
  }

  std::string dir_, admin_file_, reader_file_;
  VerifierProcess verifier_;
  BmcSim sim_;
  std::set<std::string> refusal_checked_;
};

// A report given to a result command, or an EAR to a report command, is
// told apart by its JWS typ and named with the command that reads it.
TEST_F(JsonCliTest, AReportAndAnEarGivenToTheWrongCommandNameTheRightOne) {
  StartVerifier();
  const std::string report = Attest("kind-node", Fixture("bf3-zero-trust"));
  const std::string ear = dir_ + "/kind-node.ear.jwt";
  Proc again = Exec({kBin + "/dpuaudit-agent", "attest", "--device-root",
                     Fixture("bf3-zero-trust"), "--ear-out", ear, "--verifier", verifier_.url(),
                     "--node-id", "kind-node", "--key", dir_ + "/kind-node.key"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::string jwks = itest::ExportJwks(dir_ + "/verifier.key", dir_ + "/jwks.json");
  ASSERT_FALSE(jwks.empty());
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"result", "show", report, "--jwks", jwks},
           {"result", "summary", report, "--jwks", jwks},
           {"admit", "--ear", report, "--node", "kind-node", "--jwks", jwks}}) {
    Proc p = Cli(args);
    EXPECT_EQ(p.exit_code, 2) << args[0] << " " << p.out << p.err;
    EXPECT_THAT(p.out + p.err, HasSubstr("is a signed attestation report (typ dpuaudit-report+jws)"))
        << args[0];
    EXPECT_THAT(p.out + p.err, HasSubstr("dpuaudit report show " + report)) << args[0];
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"report", "show", ear},
           {"report", "firmware", ear},
           {"report", "export-quote", ear, "--out", dir_ + "/q", "--ak", dir_ + "/none.pem"}}) {
    Proc p = Cli(args);
    EXPECT_EQ(p.exit_code, 2) << args[1] << " " << p.out << p.err;
    EXPECT_THAT(p.err, HasSubstr("is an attestation result (EAR, typ JWT)")) << args[1];
    EXPECT_THAT(p.err, HasSubstr("dpuaudit result show " + ear)) << args[1];
  }
  // Given to the right command, each reads.
  EXPECT_EQ(Cli({"report", "show", report}).exit_code, 0);
  EXPECT_EQ(Cli({"result", "show", ear, "--jwks", jwks}).exit_code, 0);
}

// ---- report show / report firmware ----------------------------------------

TEST_F(JsonCliTest, ReportShowAndFirmwareOfAgentReportsFollowTheirSchemas) {
  StartVerifier();
  for (const char* device : {"bf3-zero-trust", "bf3-privileged-host", "bf3-tool-error",
                             "bf3-boot-stream-corrupt", "bf2-mft416-old-format"}) {
    SCOPED_TRACE(device);
    const std::string report = Attest(device, Fixture(device));
    // Verified against the node's enrolled key, fetched from the verifier.
    std::vector<std::string> show = {"report", "show", report, "--json"};
    for (const auto& f : Reader()) show.push_back(f);
    Proc p = Cli(show);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    ExpectSchema("report-show", p.out);
    const json j = Json(p.out);
    EXPECT_EQ(j["signature"]["verified"], true);
    EXPECT_EQ(j["header"]["kid"], device);
    EXPECT_EQ(j["claims"]["node_id"], device);
    EXPECT_FALSE(j["evidence"].empty());
    // Failing first, then unknown, then passing; every finding is the
    // agent's, re-derived here exactly as the verifier does it.
    int last = 0;
    for (const json& f : j["findings"]) {
      int rank = Rank(f["verdict"]);
      if (f["rederived"].is_object()) rank = std::min(rank, Rank(f["rederived"]["verdict"]));
      EXPECT_LE(last, rank) << f["rule_id"] << " out of order";
      last = rank;
      EXPECT_EQ(f["agrees"], true) << f.dump();
    }
    EXPECT_TRUE(j["not_reported"].empty()) << j["not_reported"].dump();

    // Without a key: shown, labelled unverified.
    Proc fw = Cli({"report", "firmware", report, "--json"});
    ASSERT_EQ(fw.exit_code, 0) << fw.err;
    ExpectSchema("report-firmware", fw.out);
    const json fj = Json(fw.out);
    EXPECT_EQ(fj["signature"]["checked"], false);
    EXPECT_THAT(fj["signature"]["reason"].get<std::string>(), HasSubstr("unverified"));
    EXPECT_EQ(fj["firmware"]["arm"]["status"], "ok");
    EXPECT_EQ(fj["boot_chain"]["status"], "ok");
    EXPECT_EQ(fj["boot_chain"], j["boot_chain"]);  // one rendering for both commands
  }
  const json denied = Json(
      Cli({"report", "show", dir_ + "/bf3-privileged-host.report.jws", "--json"}).out);
  ASSERT_FALSE(denied["findings"].empty());
  EXPECT_EQ(denied["findings"][0]["verdict"], "fail");
  EXPECT_EQ(denied["findings"][0]["tier"], "self-reported");
  bool privilege = false;
  for (const json& f : denied["findings"]) {
    if (f["rule_id"] != "host.privilege_level") continue;
    privilege = true;
    EXPECT_EQ(f["observed"], "PRIVILEGED");
    EXPECT_EQ(f["expected"], "RESTRICTED");
    EXPECT_EQ(f["rederived"]["verdict"], "fail");
    EXPECT_EQ(f["source"], "mlxprivhost -d /dev/mst/mt41692_pciconf0 q");
  }
  EXPECT_TRUE(privilege);

  // "-" reads the report from stdin.
  Proc piped = ExecWithStdin({kBin + "/dpuaudit", "report", "show", "-", "--json"},
                             dir_ + "/bf3-zero-trust.report.jws");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  ExpectSchema("report-show", piped.out);
  EXPECT_EQ(Json(piped.out)["file"], "-");

  // A tampered report under a key: exit 2, no claim shown, still JSON.
  std::string jws = ReadAll(dir_ + "/bf3-zero-trust.report.jws");
  const size_t dot = jws.find('.');
  jws[dot + 10] = jws[dot + 10] == 'A' ? 'B' : 'A';
  WriteText(dir_ + "/tampered.jws", jws);
  for (const char* command : {"show", "firmware"}) {
    std::vector<std::string> argv = {"report", command, dir_ + "/tampered.jws", "--json"};
    for (const auto& f : Reader()) argv.push_back(f);
    Proc bad = Cli(argv);
    EXPECT_EQ(bad.exit_code, 2) << bad.out;
    ExpectSchema(std::string("report-") + command, bad.out);
    const json b = Json(bad.out);
    EXPECT_EQ(b["signature"]["checked"], true);
    EXPECT_EQ(b["signature"]["verified"], false);
    EXPECT_FALSE(b.contains("claims") || b.contains("firmware") || b.contains("findings"));
    EXPECT_EQ(b["exit_code"], 2);
  }
  // The schema knows the difference: claims under a bad signature, or a
  // finding at a tier an agent cannot reach, are refused.
  json forged = Json(Cli({"report", "show", dir_ + "/bf3-zero-trust.report.jws", "--json"}).out);
  forged["findings"][0]["tier"] = "hardware-rooted";
  EXPECT_NE(SchemaErrors(dir_, "report-show", forged.dump()), "");
  json unsigned_claims = forged;
  unsigned_claims["findings"][0]["tier"] = "self-reported";
  unsigned_claims["signature"] = {{"checked", true}, {"verified", false},
                                  {"key_thumbprint", std::string(43, 'A')},
                                  {"key_source", "--pubkey x"}, {"reason", "bad"}};
  EXPECT_NE(SchemaErrors(dir_, "report-show", unsigned_claims.dump()), "");
}

// What the agent could not read is an explicit status with the agent's
// error, never an absent value: bfver missing, a boot partition and
// /proc/cmdline unreadable (a recorded device with those parts removed).
TEST_F(JsonCliTest, UnreadablePartsAreExplicitInReportFirmware) {
  StartVerifier();
  const std::string root = dir_ + "/degraded";
  fs::copy(Fixture("bf3-zero-trust"), root, fs::copy_options::recursive);
  fs::remove(root + "/fs/dev/mmcblk0boot0");
  fs::remove(root + "/fs/proc/cmdline");
  json commands = Json(ReadAll(root + "/commands.json"));
  json kept = json::array();
  for (const json& c : commands["commands"]) {
    if (c["argv"][0] != "bfver") kept.push_back(c);
  }
  commands["commands"] = kept;
  WriteText(root + "/commands.json", commands.dump(2));
  const std::string report = Attest("bf3-degraded", root);

  Proc fw = Cli({"report", "firmware", report, "--json"});
  ASSERT_EQ(fw.exit_code, 0) << fw.err;
  ExpectSchema("report-firmware", fw.out);
  const json j = Json(fw.out);
  EXPECT_EQ(j["firmware"]["arm"]["status"], "unreadable") << j["firmware"].dump();
  EXPECT_THAT(j["firmware"]["arm"]["error"].get<std::string>(), HasSubstr("bfver"));
  EXPECT_EQ(j["firmware"]["nic"]["status"], "ok");
  const json& boot = j["boot_chain"];
  ASSERT_EQ(boot["status"], "ok") << boot.dump();
  bool unreadable_partition = false;
  for (const json& p : boot["partitions"]) {
    if (p["path"] == "/dev/mmcblk0boot0") {
      unreadable_partition = true;
      EXPECT_EQ(p["status"], "unreadable") << p.dump();
      EXPECT_FALSE(p["error"].get<std::string>().empty());
      EXPECT_FALSE(p.contains("images"));
    }
  }
  EXPECT_TRUE(unreadable_partition) << boot["partitions"].dump();
  EXPECT_EQ(boot["os"]["cmdline"]["status"], "unreadable") << boot["os"].dump();
  EXPECT_THAT(boot["os"]["cmdline"]["error"].get<std::string>(), HasSubstr("/proc/cmdline"));

  Proc show = Cli({"report", "show", report, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  ExpectSchema("report-show", show.out);
  // The human output says the same, in 100 columns.
  Proc text = Cli({"report", "firmware", report});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("arm:      unreadable: "));
  EXPECT_THAT(text.out, HasSubstr("/dev/mmcblk0boot0: unreadable: "));
  std::istringstream lines(text.out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(DisplayWidthOf(line), 100u) << line;
  }
}

// ---- report export-quote (a swtpm quote) ----------------------------------

TEST_F(JsonCliTest, ExportQuoteListsTheFilesItWroteAndReadsTheReportFromStdin) {
  DPUAUDIT_SKIP_WITHOUT_SWTPM();
  // A TPM with the simulated BlueField-3 boot measured into it.
  auto inst = ::dpuaudit::testing::SwtpmInstance::Start();
  ASSERT_TRUE(inst.ok()) << inst.status().ToString();
  {
    auto raw = ReadFileLimited(kEventLog, 4 << 20);
    ASSERT_TRUE(raw.ok());
    auto log = attest::ParseEventLog(*raw);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    auto tpm = attest::tpm::Tpm::Open((*inst)->tcti());
    ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
    ASSERT_TRUE(attest::tpm::ExtendEventLog(**tpm, *log).ok());
  }
  StartVerifier({"--ek-ca-dir", (*inst)->ek_ca_dir()});
  Proc ftpm = Cli({"refvals", "import", kSrc + "/tests/fixtures/refvals/bf3-ftpm.json",
                   "--verifier", verifier_.url(), "--admin-token-file", admin_file_, "--json"});
  ASSERT_EQ(ftpm.exit_code, 0) << ftpm.err;
  ExpectSchema("refvals-import", ftpm.out);
  const std::string report = Attest("bf3-ftpm", Fixture("bf3-ftpm"), {"--tpm", (*inst)->tcti()});

  // The AK from the verifier's binding.
  const std::string out = dir_ + "/quote";
  std::vector<std::string> argv = {"report", "export-quote", report, "--out", out, "--json"};
  for (const auto& f : Reader()) argv.push_back(f);
  Proc x = Cli(argv);
  ASSERT_EQ(x.exit_code, 0) << x.out << x.err;
  ExpectSchema("report-export-quote", x.out);
  const json j = Json(x.out);
  EXPECT_EQ(j["node_id"], "bf3-ftpm");
  EXPECT_EQ(j["ak"]["checked"], true);
  EXPECT_EQ(j["signature"]["checked"], false);
  std::set<std::string> names;
  for (const json& f : j["files"]) {
    names.insert(f["name"]);
    auto bytes = ReadFileLimited(f["path"], 1 << 20);
    ASSERT_TRUE(bytes.ok()) << f.dump();
    EXPECT_EQ(f["sha256"], Sha256Hex(*bytes)) << f["name"];
    EXPECT_EQ(f["bytes"], bytes->size());
  }
  EXPECT_EQ(names, (std::set<std::string>{"quote.msg", "quote.sig", "quote.pcrs",
                                          "qualifying.hex", "ak.pub.pem", "ak.tpm2b_public"}));
  EXPECT_EQ(ReadAll(out + "/qualifying.hex"), j["qualifying_data"].get<std::string>() + "\n");

  // "-": the report from stdin, the AK from a file.
  const std::string out2 = dir_ + "/quote-stdin";
  Proc piped = ExecWithStdin({kBin + "/dpuaudit", "report", "export-quote", "-", "--out", out2,
                              "--ak", out + "/ak.pub.pem", "--json"},
                             report);
  ASSERT_EQ(piped.exit_code, 0) << piped.out << piped.err;
  ExpectSchema("report-export-quote", piped.out);
  const json k = Json(piped.out);
  EXPECT_EQ(k["file"], "-");
  EXPECT_EQ(k["qualifying_data"], j["qualifying_data"]);
  EXPECT_EQ(k["files"].size(), 5u);  // no ak.tpm2b_public: the AK came from a file
  EXPECT_EQ(ReadAll(out2 + "/quote.msg"), ReadAll(out + "/quote.msg"));

  // The command the JSON offers is the independent check, and it passes.
  if (Exec({"tpm2_checkquote", "--version"}).exit_code == 0) {
    std::vector<std::string> check = k["check_command"];
    Proc checked = Exec(check);
    EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  }
}

// ---- eventlog, bfb inspect ------------------------------------------------

TEST_F(JsonCliTest, EventlogAndBfbInspectFollowTheirSchemasFromAFileOrStdin) {
  Proc log = Cli({"eventlog", kEventLog, "--json"});
  ASSERT_EQ(log.exit_code, 0) << log.err;
  ExpectSchema("eventlog", log.out);
  EXPECT_FALSE(Json(log.out)["events"].empty());
  EXPECT_FALSE(Json(log.out)["pcrs"]["sha256"].empty());
  Proc log_piped = ExecWithStdin({kBin + "/dpuaudit", "eventlog", "-", "--json"}, kEventLog);
  ASSERT_EQ(log_piped.exit_code, 0) << log_piped.err;
  EXPECT_EQ(log_piped.out, log.out);

  for (const char* bfb : {"bf-bundle-2.9.1-40.bfb", "bf-bundle-2.9.0-90.bfb",
                          "bf-bundle-2.7.0-33.bfb"}) {
    SCOPED_TRACE(bfb);
    Proc file = Cli({"bfb", "inspect", kBfbDir + bfb, "--json"});
    ASSERT_EQ(file.exit_code, 0) << file.err;
    ExpectSchema("bfb-inspect", file.out);
    // Streamed from stdin: the same layout, byte for byte.
    Proc piped = ExecWithStdin({kBin + "/dpuaudit", "bfb", "inspect", "-", "--json"},
                               kBfbDir + bfb);
    ASSERT_EQ(piped.exit_code, 0) << piped.err;
    EXPECT_EQ(piped.out, file.out);
  }
  Proc table = ExecWithStdin({kBin + "/dpuaudit", "bfb", "inspect", "-"},
                             kBfbDir + "bf-bundle-2.9.1-40.bfb");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.substr(0, 6), "stdin\n");
  EXPECT_THAT(table.out, HasSubstr("bl31"));
  // A CRC mismatch read from stdin is still exit 1, with the JSON saying so.
  Bytes corrupt = *ReadFileLimited(kBfbDir + "bf-bundle-2.9.1-40.bfb", 64 << 20);
  corrupt[24 + 10] ^= 0x01;  // a byte of the first image's data
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/corrupt.bfb", corrupt, 0644).ok());
  Proc bad_crc = ExecWithStdin({kBin + "/dpuaudit", "bfb", "inspect", "-", "--json"},
                               dir_ + "/corrupt.bfb");
  EXPECT_EQ(bad_crc.exit_code, 1) << bad_crc.err;
  ExpectSchema("bfb-inspect", bad_crc.out);
  EXPECT_EQ(Json(bad_crc.out)["all_crc_ok"], false);
  // Stdin that is not a BFB: exit 2, named as stdin.
  WriteText(dir_ + "/not.bfb", "this is not a boot stream, not even 24 bytes of one");
  Proc not_bfb = ExecWithStdin({kBin + "/dpuaudit", "bfb", "inspect", "-", "--json"},
                               dir_ + "/not.bfb");
  EXPECT_EQ(not_bfb.exit_code, 2);
  EXPECT_THAT(not_bfb.err, HasSubstr("stdin: BFB image 0 at offset 0x0: bad magic"));
  EXPECT_EQ(not_bfb.out, "");
}

// ---- trust add / list / remove --------------------------------------------

TEST_F(JsonCliTest, TrustAddListRemoveSayWhatChangedInTheTrustFile) {
  StartVerifier();
  const std::string jwks = ExportJwks(dir_ + "/verifier.key", dir_ + "/jwks.json");
  ASSERT_FALSE(jwks.empty());
  const std::string trust = dir_ + "/trust.json";
  Proc add = Cli({"trust", "add", "--jwks", jwks, "--trust-file", trust, "--json"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  ExpectSchema("trust-change", add.out);
  const json a = Json(add.out);
  EXPECT_EQ(a["action"], "add");
  EXPECT_EQ(a["changed"], true);
  EXPECT_EQ(a["trust_file"], trust);
  ASSERT_EQ(a["keys"].size(), 1u);
  const std::string kid = a["keys"][0]["kid"];
  // Again: already pinned, nothing changed.
  Proc again = Cli({"trust", "add", "--jwks", jwks, "--trust-file", trust, "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  ExpectSchema("trust-change", again.out);
  EXPECT_EQ(Json(again.out)["changed"], false);
  EXPECT_EQ(Json(again.out)["keys"][0]["changed"], false);
  // Fetched from the verifier, only with the thumbprint confirmed.
  const std::string trust2 = dir_ + "/trust2.json";
  Proc wrong = Cli({"trust", "add", "--verifier", verifier_.url(), "--fingerprint",
                    std::string(43, 'A'), "--trust-file", trust2, "--json"});
  EXPECT_EQ(wrong.exit_code, 1);
  ExpectSchema("trust-change", wrong.out);
  EXPECT_THAT(Json(wrong.out)["reason"].get<std::string>(), HasSubstr("nothing pinned"));
  EXPECT_FALSE(fs::exists(trust2));
  Proc fetched = Cli({"trust", "add", "--verifier", verifier_.url(), "--fingerprint", kid,
                      "--trust-file", trust2, "--json"});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
  ExpectSchema("trust-change", fetched.out);

  Proc list = Cli({"trust", "list", "--trust-file", trust, "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  ExpectSchema("trust-list", list.out);
  EXPECT_EQ(Json(list.out)["keys"][0]["kid"], kid);

  Proc removed = Cli({"trust", "remove", "--trust-file", trust, "--json", "--", kid});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  ExpectSchema("trust-change", removed.out);
  EXPECT_EQ(Json(removed.out)["keys"][0]["kid"], kid);
  EXPECT_EQ(Json(removed.out)["changed"], true);
  Proc gone = Cli({"trust", "remove", "--trust-file", trust, "--json", "--", kid});
  EXPECT_EQ(gone.exit_code, 1);
  ExpectSchema("trust-change", gone.out);
  EXPECT_THAT(Json(gone.out)["reason"].get<std::string>(), HasSubstr("is not pinned"));
  EXPECT_TRUE(Json(Cli({"trust", "list", "--trust-file", trust, "--json"}).out)["keys"].empty());
}

// ---- refvals --------------------------------------------------------------

TEST_F(JsonCliTest, RefvalsCommandsPrintTheVerifiersAnswerAndTheManifest) {
  StartVerifier();
  // The fixture manifests are what the schema describes.
  for (const char* m : {"bf3-releases.json", "bf3-ftpm.json", "bf3-os-boot.json"}) {
    ExpectSchema("refvals-manifest", ReadAll(kSrc + "/tests/fixtures/refvals/" + m));
  }
  // An admitted node, so that a revocation has an admission to withdraw.
  Attest("bf3-zero-trust", Fixture("bf3-zero-trust"));

  // import-bfb --out: the manifest written (and, with "-", printed).
  const std::string bfb = kBfbDir + "bf-bundle-2.9.1-40.bfb";
  Proc dry = Cli({"refvals", "import-bfb", bfb, "--model", "BF3", "--release", "rel-a",
                  "--out", "-"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  ExpectSchema("refvals-manifest", dry.out);
  Proc out = Cli({"refvals", "import-bfb", bfb, "--model", "BF3", "--release", "rel-a",
                  "--out", dir_ + "/rel-a.json", "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  ExpectSchema("refvals-manifest", out.out);
  EXPECT_EQ(Json(out.out), Json(ReadAll(dir_ + "/rel-a.json")));
  EXPECT_EQ(Json(out.out), Json(dry.out));

  // import and import-bfb: the verifier's answer.
  std::vector<std::string> import = {"refvals", "import", dir_ + "/rel-a.json", "--json"};
  for (const auto& f : Admin()) import.push_back(f);
  Proc imported = Cli(import);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  ExpectSchema("refvals-import", imported.out);
  EXPECT_EQ(Json(imported.out)["imported"], json::array({"rel-a"}));
  std::vector<std::string> import_bfb = {"refvals", "import-bfb", bfb, "--model", "BF3",
                                         "--release", "rel-b", "--json"};
  for (const auto& f : Admin()) import_bfb.push_back(f);
  Proc posted = Cli(import_bfb);
  ASSERT_EQ(posted.exit_code, 0) << posted.err;
  ExpectSchema("refvals-import", posted.out);
  EXPECT_EQ(Json(posted.out)["imported"], json::array({"rel-b"}));

  auto transition = [&](const std::string& action, const std::string& release,
                        std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {"refvals", action, release, "--by", "alice",
                                     "--reason", "json test", "--json"};
    for (const auto& f : Admin()) argv.push_back(f);
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Cli(argv);
  };
  // Revoking the release the admitted node runs withdraws its admission
  // (before rel-a is promoted: since issue 16 §6 import-bfb stages the
  // versions the BFB carries, so an active rel-a would hold that node's
  // firmware too).
  Proc revoked = transition("revoke", "bf-bundle-2.9.1-40");
  ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
  ExpectSchema("refvals-transition", revoked.out);
  EXPECT_EQ(Json(revoked.out)["withdrawn"], json::array({"bf3-zero-trust"})) << revoked.out;
  Proc promoted = transition("promote", "rel-a");
  ASSERT_EQ(promoted.exit_code, 0) << promoted.err;
  ExpectSchema("refvals-transition", promoted.out);
  EXPECT_EQ(Json(promoted.out)["changed"],
            json::array({{{"release", "rel-a"}, {"state", "active"}}}));
  EXPECT_EQ(Json(promoted.out)["withdrawn"], json::array());
  Proc both = transition("promote", "rel-b", {"--obsolete-previous"});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  ExpectSchema("refvals-transition", both.out);
  EXPECT_EQ(Json(both.out)["changed"],
            json::array({{{"release", "rel-b"}, {"state", "active"}},
                         {{"release", "rel-a"}, {"state", "obsolete"}}}));
  Proc reinstated = transition("reinstate", "rel-a");
  ASSERT_EQ(reinstated.exit_code, 0) << reinstated.err;
  ExpectSchema("refvals-transition", reinstated.out);
  Proc obsoleted = transition("obsolete", "rel-a");
  ASSERT_EQ(obsoleted.exit_code, 0) << obsoleted.err;
  ExpectSchema("refvals-transition", obsoleted.out);
  // A refused transition is exit 1 and prints no JSON.
  Proc refused = transition("promote", "bf-bundle-2.9.1-40");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out, "");
  EXPECT_THAT(refused.err, HasSubstr("revoked"));

  std::vector<std::string> list = {"refvals", "list", "--json"};
  for (const auto& f : Admin()) list.push_back(f);
  Proc listed = Cli(list);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  ExpectSchema("refvals-list", listed.out);
  ExpectSchema("refvals-manifest", listed.out);
  std::vector<std::string> export_cmd = {"refvals", "export"};
  for (const auto& f : Admin()) export_cmd.push_back(f);
  Proc exported = Cli(export_cmd);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  ExpectSchema("refvals-list", exported.out);
  export_cmd.insert(export_cmd.end(), {"--out", dir_ + "/export.json", "--json"});
  Proc to_file = Cli(export_cmd);
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  ExpectSchema("refvals-export", to_file.out);
  EXPECT_EQ(Json(to_file.out)["releases"].size(), Json(listed.out)["releases"].size());
  ExpectSchema("refvals-list", ReadAll(dir_ + "/export.json"));

  // The manifest schema follows docs/refvals-schema.md, not just its shape.
  json bad = Json(dry.out);
  bad["releases"][0]["values"][0]["component"] = "bfb:unknown-77";
  EXPECT_NE(SchemaErrors(dir_, "refvals-manifest", bad.dump()), "");
  bad = Json(dry.out);
  bad["releases"][0]["values"] = {{{"component", "tpm-pcr:7"}, {"sha384", std::string(96, 'a')}}};
  EXPECT_NE(SchemaErrors(dir_, "refvals-manifest", bad.dump()), "");
  bad = Json(listed.out);
  bad["releases"][0]["approval"] = {{"by", "x"}};  // an export carries history, not approval
  EXPECT_NE(SchemaErrors(dir_, "refvals-list", bad.dump()), "");
}

// ---- bmc show / spdm verify -----------------------------------------------

TEST_F(JsonCliTest, BmcShowAndSpdmVerifyFollowTheirSchemasAndTheProse) {
  const std::string creds = json{{"username", "root"}, {"password", "json-cli-bmc-pw"}}.dump();
  WriteText(dir_ + "/sim-creds.json", creds, 0600);
  WriteText(dir_ + "/creds.json", creds, 0600);
  std::string error;
  ASSERT_TRUE(sim_.Start(dir_, {}, &error)) << error;
  auto show = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {"bmc", "show", "--url", sim_.url(), "--credentials",
                                     dir_ + "/creds.json", "--pin-sha256", sim_.spki(),
                                     "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Cli(argv);
  };
  Proc verified = show({"--anchors", dir_ + "/anchor.pem"});
  ASSERT_EQ(verified.exit_code, 0) << verified.err;
  ExpectSchema("bmc-show", verified.out);
  const json v = Json(verified.out);
  EXPECT_EQ(v["spdm_verification"]["Bluefield_DPU_IRoT"]["state"], "verified");
  Proc unanchored = show({});
  ASSERT_EQ(unanchored.exit_code, 0) << unanchored.err;
  ExpectSchema("bmc-show", unanchored.out);
  EXPECT_EQ(Json(unanchored.out)["spdm_verification"]["Bluefield_DPU_IRoT"]["state"],
            "not_checked");
  Proc no_spdm = show({"--no-spdm"});
  ASSERT_EQ(no_spdm.exit_code, 0) << no_spdm.err;
  ExpectSchema("bmc-show", no_spdm.out);

  // spdm verify over what the BMC served: verified, leaf only, replayed.
  const json t = v["spdm_targets"][0];
  WriteText(dir_ + "/evidence.json", json{{"SignedMeasurements", t["signed_measurements"]},
                                          {"SigningAlgorithm", t["signing_algorithm"]},
                                          {"HashingAlgorithm", t["hashing_algorithm"]},
                                          {"Version", t["version"]}}
                                         .dump());
  WriteText(dir_ + "/chain.pem", t["certificate_chain"]);
  auto verify = [&](const std::string& nonce, bool anchors) {
    std::vector<std::string> argv = {"spdm", "verify", "--evidence", dir_ + "/evidence.json",
                                     "--chain", dir_ + "/chain.pem", "--nonce", nonce, "--json"};
    if (anchors) argv.insert(argv.end(), {"--anchors", dir_ + "/anchor.pem"});
    return Cli(argv);
  };
  Proc ok = verify(t["nonce"], true);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  ExpectSchema("spdm-verify", ok.out);
  // The same entry bmc show printed for that target.
  EXPECT_EQ(Json(ok.out), v["spdm_verification"][t["id"].get<std::string>()]);
  Proc leaf = verify(t["nonce"], false);
  ASSERT_EQ(leaf.exit_code, 0) << leaf.err;
  ExpectSchema("spdm-verify", leaf.out);
  EXPECT_EQ(Json(leaf.out)["chain_validated"], false);
  Proc replay = verify(std::string(64, '0'), true);
  EXPECT_EQ(replay.exit_code, 1);
  ExpectSchema("spdm-verify", replay.out);
  EXPECT_EQ(Json(replay.out)["state"], "failed");

  // A target that was read and does not verify: exit 1, state failed.
  sim_.Stop();
  ASSERT_TRUE(sim_.Start(dir_, {"bad-signature"}, &error)) << error;
  Proc forged = show({"--anchors", dir_ + "/anchor.pem"});
  EXPECT_EQ(forged.exit_code, 1) << forged.err;
  ExpectSchema("bmc-show", forged.out);
  EXPECT_EQ(Json(forged.out)["spdm_verification"]["Bluefield_DPU_IRoT"]["state"], "failed");
  sim_.Stop();
  ASSERT_TRUE(sim_.Start(dir_, {"task-fails"}, &error)) << error;
  Proc unknown = show({"--anchors", dir_ + "/anchor.pem"});
  EXPECT_EQ(unknown.exit_code, 0) << unknown.err;
  ExpectSchema("bmc-show", unknown.out);

  // docs/bmc-evidence-schema.md and the JSON Schema name the same members
  // and the same verification states.
  const std::string prose = ReadAll(kSrc + "/docs/bmc-evidence-schema.md");
  const size_t begin = prose.find("```\n{");
  const size_t end = prose.find("```", begin + 3);
  ASSERT_NE(begin, std::string::npos);
  const std::string block = prose.substr(begin, end - begin);
  std::set<std::string> documented;
  const std::regex top_member("\n  \"([a-z_]+)\":");
  for (auto it = std::sregex_iterator(block.begin(), block.end(), top_member);
       it != std::sregex_iterator(); ++it) {
    documented.insert((*it)[1]);
  }
  const json schema = Json(ReadAll(kSrc + "/docs/schemas/bmc-show.schema.json"));
  std::set<std::string> required(schema["required"].begin(), schema["required"].end());
  std::set<std::string> described;
  for (const auto& [k, _] : schema["properties"].items()) described.insert(k);
  EXPECT_EQ(documented, required);
  EXPECT_EQ(documented, described);
  const json spdm = Json(ReadAll(kSrc + "/docs/schemas/spdm-verify.schema.json"));
  std::set<std::string> states = {spdm["$defs"]["verified_target"]["properties"]["state"]["const"]};
  for (const json& s : spdm["$defs"]["unverified_target"]["properties"]["state"]["enum"]) {
    states.insert(s);
  }
  EXPECT_EQ(states, (std::set<std::string>{"verified", "failed", "unknown", "not_checked"}));
  EXPECT_THAT(block, HasSubstr(R"("state": "verified" | "failed" | "unknown" | "not_checked")"));
}

// ---- malformed input ------------------------------------------------------

TEST_F(JsonCliTest, AMalformedFileIsExitTwoWithAMessageNamingIt) {
  const std::string bad = dir_ + "/malformed.input";
  WriteText(bad, "{this is not what any command reads", 0600);
  const std::string nonce(64, '0');
  struct Case {
    std::string name;
    std::vector<std::string> argv;
  };
  const std::vector<Case> cases = {
      {"report show", {"report", "show", bad, "--json"}},
      {"report firmware", {"report", "firmware", bad, "--json"}},
      {"report export-quote", {"report", "export-quote", bad, "--out", dir_ + "/q", "--ak", bad,
                               "--json"}},
      {"eventlog", {"eventlog", bad, "--json"}},
      {"bfb inspect", {"bfb", "inspect", bad, "--json"}},
      {"trust add", {"trust", "add", "--jwks", bad, "--trust-file", dir_ + "/t.json", "--json"}},
      {"trust list", {"trust", "list", "--trust-file", bad, "--json"}},
      {"trust remove", {"trust", "remove", "kid", "--trust-file", bad, "--json"}},
      {"refvals import", {"refvals", "import", bad, "--json", "--verifier", "http://127.0.0.1:9",
                          "--admin-token-file", bad}},
      {"refvals import-bfb", {"refvals", "import-bfb", bad, "--model", "BF3", "--out",
                              dir_ + "/m.json", "--json"}},
      {"spdm verify", {"spdm", "verify", "--evidence", bad, "--chain", bad, "--nonce", nonce,
                       "--json"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Proc p = Cli(c.argv);
    EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
    EXPECT_THAT(p.err, HasSubstr(bad)) << p.err;
    EXPECT_EQ(p.out, "");  // no half-written JSON
  }
  EXPECT_FALSE(fs::exists(dir_ + "/q"));
  EXPECT_FALSE(fs::exists(dir_ + "/m.json"));
}

}  // namespace
}  // namespace dpuaudit::itest
