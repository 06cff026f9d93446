// Issue 16 §6, reference values without hand-writing: the real binaries.
// `refvals import-bfb` with the versions decoded from the BFB (its info
// image), refused without versions unless --allow-digest-only;
// `import-eventlog` proposing exactly the PCRs the real TCG logs replay to;
// `import-report` from a known-good node, signature-checked with
// --node-key; `withdraw` of a pending release (and refused otherwise), with
// its audit event.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "bluefield/bfb.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;
using itest::ReadAll;
using nlohmann::json;
namespace fs = std::filesystem;

const std::string kBfb = kSrc + "/tests/fixtures/bfb/bf-bundle-2.9.1-40.bfb";
const std::string kSharedLogs = kSrc + "/../shared/fixtures/eventlogs";
const std::string kOwnLogs = kSrc + "/tests/fixtures/eventlogs";

void WriteText(const std::string& path, const std::string& text) {
  ASSERT_TRUE(WriteFileAtomic(path, AsBytes(text), 0600).ok());
}

class RefvalsImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-refimport-XXXXXX";
    dir_ = mkdtemp(tmpl);
    token_file_ = dir_ + "/token";
    WriteText(token_file_, "integration-test-bootstrap-token-42\n");
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  void StartVerifier() {
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", token_file_, "--audit-log",
                                     dir_ + "/audit.log"};
    for (auto& f : itest::AdminFlags(dir_, &admin_token_file_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
  }
  std::vector<std::string> Admin(std::vector<std::string> argv) {
    argv.insert(argv.begin(), kBin + "/dpuaudit");
    for (const std::string& a :
         {std::string("--verifier"), verifier_.url(), std::string("--admin-token-file"),
          admin_token_file_}) {
      argv.push_back(a);
    }
    return argv;
  }
  Proc Enroll(const std::string& node) {
    return Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(), "--node-id",
                 node, "--key", dir_ + "/" + node + ".key", "--bootstrap-token-file",
                 token_file_});
  }
  Proc Attest(const std::string& node, const std::string& device) {
    return Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", verifier_.url(), "--node-id",
                 node, "--key", dir_ + "/" + node + ".key", "--device-root", Fixture(device),
                 "--report-out", dir_ + "/" + node + ".report.jws", "--ear-out",
                 dir_ + "/" + node + ".ear.jwt"});
  }
  std::string PublicKey(const std::string& node) {
    Proc p = Exec({kBin + "/dpuaudit-agent", "pubkey", "--key", dir_ + "/" + node + ".key"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    const std::string path = dir_ + "/" + node + ".pub.pem";
    WriteText(path, p.out);
    return path;
  }
  std::string dir_, token_file_, admin_token_file_;
  itest::VerifierProcess verifier_;
};

TEST_F(RefvalsImportTest, BfbVersionsAreDecodedAndTheStagedReleaseMatchesItsNode) {
  // bfb inspect shows what the info image carries.
  Proc inspect = Exec({kBin + "/dpuaudit", "bfb", "inspect", "--json", kBfb});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "bfb-inspect", inspect.out), "");
  }
  json v = json::parse(inspect.out)["versions"];
  EXPECT_EQ(v["info"], "ok");
  std::set<std::string> bf3;
  for (const auto& c : v["components"]) {
    if (c["model"] == "BlueField-3") bf3.insert(c["component"].get<std::string>() + "=" +
                                                c["version"].get<std::string>());
  }
  EXPECT_EQ(bf3, (std::set<std::string>{"atf=v2.2(release):4.9.1-21-gfc25b08d9",
                                        "uefi=4.9.1-36-g0c3239837a", "bsp=4.9.1.13442",
                                        "nic-fw=32.43.2402"}));
  Proc table = Exec({kBin + "/dpuaudit", "bfb", "inspect", kBfb});
  EXPECT_THAT(table.out, HasSubstr("versions (info image: ok)"));
  EXPECT_THAT(table.out, HasSubstr("from info image member BF3_ATF"));

  // Staged from the file with only the OS release given by hand (NVIDIA's
  // info image names none): the node's versions all match, as pending.
  StartVerifier();
  Proc staged = Exec(Admin({"refvals", "import-bfb", kBfb, "--model", "BF3", "--version",
                            "os=bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod", "--by", "ops",
                            "--reason", "rollout"}));
  ASSERT_EQ(staged.exit_code, 0) << staged.out << staged.err;
  ASSERT_EQ(Enroll("canary").exit_code, 0);
  Proc canary = Attest("canary", "bf3-zero-trust");
  ASSERT_EQ(canary.exit_code, 0) << canary.err;
  for (const char* rule : {"refval.arm_firmware", "refval.os_release", "refval.nic_firmware",
                           "refval.boot_stream"}) {
    EXPECT_THAT(canary.out, HasSubstr(std::string(rule) + " fail: observed pending, expected active"))
        << canary.out;
  }
  Proc promote = Exec(Admin({"refvals", "promote", "bf-bundle-2.9.1-40", "--by", "ops",
                             "--reason", "canary matched"}));
  ASSERT_EQ(promote.exit_code, 0) << promote.err;
  Proc after = Attest("canary", "bf3-zero-trust");
  EXPECT_THAT(after.out, Not(HasSubstr("refval.arm_firmware fail")));
  EXPECT_THAT(after.out, Not(HasSubstr("refval.nic_firmware fail")));
}

TEST_F(RefvalsImportTest, ABfbWithoutVersionsIsRefusedUnlessDigestOnlyIsAsked) {
  // The same images, the info image without versions (as older builders
  // wrote it), and no bfver strings in the firmware.
  auto layout = bluefield::ParseBfbBytes(*ReadFileLimited(kBfb, 1 << 20));
  ASSERT_TRUE(layout.ok());
  Bytes raw = *ReadFileLimited(kBfb, 1 << 20);
  std::vector<std::pair<uint8_t, Bytes>> images;
  for (const auto& img : layout->images) {
    Bytes data(raw.begin() + static_cast<long>(img.data_offset),
               raw.begin() + static_cast<long>(img.data_offset + img.header.image_len));
    if (img.name == "info") data = ToBytes("{\"release\": \"bf-bundle-2.9.1-40\"}\n");
    images.push_back({img.header.image_id, data});
  }
  const std::string bare = dir_ + "/bare.bfb";
  ASSERT_TRUE(WriteFileAtomic(bare, bluefield::BuildBfb(images), 0644).ok());
  Proc refused = Exec({kBin + "/dpuaudit", "refvals", "import-bfb", bare, "--model", "BF3",
                       "--out", dir_ + "/m.json"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("carries no component versions"));
  EXPECT_THAT(refused.err, HasSubstr("--allow-digest-only"));
  EXPECT_FALSE(fs::exists(dir_ + "/m.json"));
  Proc forced = Exec({kBin + "/dpuaudit", "refvals", "import-bfb", bare, "--model", "BF3",
                      "--allow-digest-only", "--out", dir_ + "/m.json"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_THAT(forced.err, HasSubstr("WARNING: importing release bare WITHOUT VERSIONS"));
  json m = json::parse(ReadAll(dir_ + "/m.json"));
  for (const auto& val : m["releases"][0]["values"]) EXPECT_FALSE(val.contains("version"));
  // A version given by hand is enough.
  Proc given = Exec({kBin + "/dpuaudit", "refvals", "import-bfb", bare, "--model", "BF3",
                     "--version", "nic-fw=32.43.2402", "--out", "-"});
  EXPECT_EQ(given.exit_code, 0) << given.err;
}

// Every PCR the log extends, as <name>.expected-pcrs.json has it.
void ExpectProposesExpectedPcrs(const std::string& dir, const std::string& name,
                                const std::string& scratch) {
  SCOPED_TRACE(name);
  json expected = json::parse(ReadAll(dir + "/" + name + ".expected-pcrs.json"));
  std::vector<std::string> argv = {kBin + "/dpuaudit", "refvals", "import-eventlog",
                                   dir + "/" + name + ".bin", "--dry-run"};
  for (int p = 0; p <= 23; ++p) {
    argv.push_back("--pcr");
    argv.push_back(std::to_string(p));
  }
  Proc all = Exec(argv);
  if (!expected["pcrs"].contains("sha256")) {
    EXPECT_EQ(all.exit_code, 2);
    EXPECT_THAT(all.err, HasSubstr("no sha256 bank"));
    return;
  }
  ASSERT_EQ(all.exit_code, 0) << all.err;
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(scratch, "refvals-manifest", all.out), "");
  }
  json m = json::parse(all.out);
  ASSERT_EQ(m["releases"].size(), 1u);
  EXPECT_EQ(m["releases"][0]["state"], "pending");
  std::map<std::string, std::string> proposed;
  for (const auto& v : m["releases"][0]["values"]) {
    const std::string c = v["component"];
    if (c.rfind("tpm-pcr:", 0) == 0) proposed[c.substr(8)] = v["sha256"];
  }
  // Exactly the PCRs the log extends (as `dpuaudit eventlog` replays them),
  // each with the value the expectation gives.
  Proc replay = Exec({kBin + "/dpuaudit", "eventlog", "--json", dir + "/" + name + ".bin"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  std::set<std::string> extended;
  const json replayed = json::parse(replay.out);  // outlives the loop (items() refers to it)
  for (const auto& [pcr, hex] : replayed.at("pcrs").at("sha256").items()) {
    extended.insert(pcr);
  }
  std::map<std::string, std::string> want;
  for (const auto& [pcr, hex] : expected["pcrs"]["sha256"].items()) want[pcr] = hex;
  std::set<std::string> got;
  for (const auto& [pcr, hex] : proposed) {
    got.insert(pcr);
    ASSERT_TRUE(want.count(pcr)) << "proposed PCR " << pcr << " is not expected";
    EXPECT_EQ(hex, want[pcr]) << "PCR " << pcr;
  }
  EXPECT_EQ(got, extended);
  EXPECT_FALSE(got.empty());
  // By default only PCRs 0-9.
  Proc def = Exec({kBin + "/dpuaudit", "refvals", "import-eventlog", dir + "/" + name + ".bin",
                   "--dry-run"});
  ASSERT_EQ(def.exit_code, 0) << def.err;
  const json defaults = json::parse(def.out);  // the loop ranges over a part of it
  for (const auto& v : defaults.at("releases").at(0).at("values")) {
    const std::string c = v["component"];
    if (c.rfind("tpm-pcr:", 0) == 0) {
      EXPECT_LE(std::stoi(c.substr(8)), 9) << c;
      EXPECT_EQ(v["sha256"], want[c.substr(8)]);
    }
  }
  EXPECT_THAT(def.err, HasSubstr("unauthenticated"));
}

TEST_F(RefvalsImportTest, ImportEventlogProposesExactlyTheReplayedPcrs) {
  ExpectProposesExpectedPcrs(kOwnLogs, "bf3-ftpm-boot", dir_);
  if (!fs::is_directory(kSharedLogs)) {
    GTEST_SKIP() << "shared event logs not found at " << kSharedLogs;
  }
  int logs = 0;
  for (const auto& e : fs::directory_iterator(kSharedLogs)) {
    if (e.path().extension() != ".bin") continue;
    const std::string name = e.path().stem();
    if (name == "t2t-specid-vendordata") continue;  // rejected by the parser (documented)
    ExpectProposesExpectedPcrs(kSharedLogs, name, dir_);
    ++logs;
  }
  EXPECT_GE(logs, 13);
  // Boot applications become tpm-app values.
  Proc apps = Exec({kBin + "/dpuaudit", "refvals", "import-eventlog",
                    kSharedLogs + "/gat-crypto-agile.bin", "--dry-run"});
  ASSERT_EQ(apps.exit_code, 0);
  EXPECT_THAT(apps.out, HasSubstr("\"tpm-app\""));
  // A file that is not an event log: exit 2, nothing printed on stdout.
  Proc bad = Exec({kBin + "/dpuaudit", "refvals", "import-eventlog", kBfb, "--dry-run"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
}

TEST_F(RefvalsImportTest, WithdrawOnlyAPendingReleaseAndAuditIt) {
  StartVerifier();
  Proc staged = Exec(Admin({"refvals", "import-eventlog", kOwnLogs + "/bf3-ftpm-boot.bin",
                            "--release", "oops-1", "--json"}));
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "refvals-propose", staged.out), "");
  }
  EXPECT_EQ(json::parse(staged.out)["source"]["authenticated"], false);
  Proc gone = Exec(Admin({"refvals", "withdraw", "oops-1", "--reason", "wrong file", "--by",
                          "alice", "--json"}));
  ASSERT_EQ(gone.exit_code, 0) << gone.err;
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "refvals-withdraw", gone.out), "");
  }
  EXPECT_EQ(json::parse(gone.out)["withdrawn_release"], "oops-1");
  Proc list = Exec(Admin({"refvals", "list"}));
  EXPECT_THAT(list.out, Not(HasSubstr("oops-1")));
  // Gone: unknown now (exit 2), and the label can be imported again.
  Proc again = Exec(Admin({"refvals", "withdraw", "oops-1", "--reason", "twice"}));
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr("not known"));
  Proc reimport = Exec(Admin({"refvals", "import-eventlog", kOwnLogs + "/bf3-ftpm-boot.bin",
                              "--release", "oops-1"}));
  EXPECT_EQ(reimport.exit_code, 0) << reimport.err;
  // Active, obsolete and revoked releases are refused with exit 1.
  ASSERT_EQ(itest::ImportFixtureRefvals(verifier_.url(), admin_token_file_).exit_code, 0);
  for (const char* label : {"bf-bundle-2.9.1-40", "bf-bundle-2.9.0-90", "bf-bundle-2.7.0-33"}) {
    Proc refused = Exec(Admin({"refvals", "withdraw", label, "--reason", "nope"}));
    EXPECT_EQ(refused.exit_code, 1) << label;
    EXPECT_THAT(refused.err, HasSubstr("only a pending release can be withdrawn")) << label;
  }
  Proc still = Exec(Admin({"refvals", "list"}));
  EXPECT_THAT(still.out, HasSubstr("bf-bundle-2.9.1-40  BlueField-3  active"));
  // Usage: --reason is required (exit 2).
  EXPECT_EQ(Exec(Admin({"refvals", "withdraw", "oops-1"})).exit_code, 2);
  // Every withdrawal, done or refused, is an audit event.
  const std::string audit = ReadAll(dir_ + "/audit.log");
  EXPECT_THAT(audit, HasSubstr("\"event\":\"refvals_withdraw\""));
  EXPECT_THAT(audit, HasSubstr("withdraw oops-1 (pending"));
  EXPECT_THAT(audit, HasSubstr("\"actor\":\"alice\""));
  EXPECT_THAT(audit, HasSubstr("withdraw bf-bundle-2.9.1-40: release bf-bundle-2.9.1-40 is active"));
}

TEST_F(RefvalsImportTest, ImportReportFromAKnownGoodNode) {
  StartVerifier();
  ASSERT_EQ(Enroll("golden").exit_code, 0);
  ASSERT_EQ(Attest("golden", "bf3-zero-trust").exit_code, 0);
  const std::string report = dir_ + "/golden.report.jws";
  const std::string key = PublicKey("golden");
  Proc checked = Exec({kBin + "/dpuaudit", "refvals", "import-report", report, "--node-key", key,
                       "--dry-run"});
  ASSERT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_THAT(checked.err, Not(HasSubstr("UNAUTHENTICATED")));
  json m = json::parse(checked.out);
  const json& rel = m["releases"][0];
  EXPECT_EQ(rel["release"], "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod");
  EXPECT_EQ(rel["state"], "pending");
  std::map<std::string, std::string> versions;
  std::set<std::string> components;
  for (const auto& v : rel["values"]) {
    components.insert(v["component"]);
    if (v.contains("version")) versions[v["component"]] = v["version"];
  }
  EXPECT_EQ(versions["atf"], "v2.2(release):4.9.1-21-gfc25b08d9");
  EXPECT_EQ(versions["uefi"], "4.9.1-36-g0c3239837a");
  EXPECT_EQ(versions["bsp"], "4.9.1.13442");
  EXPECT_EQ(versions["os"], "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod");
  EXPECT_EQ(versions["nic-fw"], "32.43.2402");
  EXPECT_TRUE(components.count("bfb:bl31"));
  EXPECT_TRUE(components.count("os:kernel"));
  // Without a key: said loudly, and in the approval reason.
  Proc unchecked = Exec({kBin + "/dpuaudit", "refvals", "import-report", report, "--dry-run"});
  ASSERT_EQ(unchecked.exit_code, 0) << unchecked.err;
  EXPECT_THAT(unchecked.err, HasSubstr("UNAUTHENTICATED file"));
  EXPECT_THAT(unchecked.out, HasSubstr("(unauthenticated file)"));
  // A tampered report under the key: exit 1, nothing proposed.
  std::string jws = ReadAll(report);
  const size_t dot = jws.find('.');
  jws[dot + 12] = jws[dot + 12] == 'A' ? 'B' : 'A';
  WriteText(dir_ + "/tampered.jws", jws);
  Proc tampered = Exec({kBin + "/dpuaudit", "refvals", "import-report", dir_ + "/tampered.jws",
                        "--node-key", key, "--dry-run"});
  EXPECT_EQ(tampered.exit_code, 1);
  EXPECT_EQ(tampered.out, "");
  EXPECT_THAT(tampered.err, HasSubstr("does not verify"));
  // An EAR is not a report.
  Proc wrong = Exec({kBin + "/dpuaudit", "refvals", "import-report", dir_ + "/golden.ear.jwt",
                     "--dry-run"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.err, HasSubstr("not a report"));
  // Staged for real (stdin), it matches the node it came from as pending.
  Proc staged = itest::ExecWithStdin(
      Admin({"refvals", "import-report", "-", "--node-key", key, "--json"}), report);
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "refvals-propose", staged.out), "");
  }
  EXPECT_EQ(json::parse(staged.out)["source"]["authenticated"], true);
  Proc again = Attest("golden", "bf3-zero-trust");
  EXPECT_THAT(again.out, HasSubstr("refval.arm_firmware fail: observed pending, expected active"));
  EXPECT_THAT(again.out, HasSubstr("refval.boot_stream fail: observed pending, expected active"));
}

}  // namespace
}  // namespace dpuaudit
