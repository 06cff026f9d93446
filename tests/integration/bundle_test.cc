// Issue 16: the hash-chained audit log, audit bundles and policy what-if,
// against the real binaries: a verifier, agents attesting recorded devices,
// `dpuaudit bundle export` through the reader API, `dpuaudit bundle verify`
// offline, `dpuaudit-verifier audit verify` on the store, `dpuaudit policy
// test`. Each kind of tampering fails naming the item; an independent
// Python script (tests/tools/audit_chain_check.py) recomputes the chain and
// checks the checkpoint signature, and npm's jose verifies every report and
// EAR of the bundle.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"
#include "testing/jose_dir.h"

namespace dpuaudit::itest {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kBootstrapToken[] = "bundle-test-bootstrap-token-0123456789";

void WriteText(const std::string& path, const std::string& text, mode_t mode = 0644) {
  ASSERT_TRUE(WriteFileAtomic(path, AsBytes(text), mode).ok()) << path;
}

Proc Cli(std::vector<std::string> args) {
  args.insert(args.begin(), kBin + "/dpuaudit");
  return Exec(args);
}

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-bundle-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void StartVerifier() {
    WriteText(dir_ + "/bootstrap.token", std::string(kBootstrapToken) + "\n", 0600);
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", dir_ + "/bootstrap.token"};
    for (auto& f : AdminFlags(dir_, &admin_file_)) args.push_back(f);
    for (auto& f : ReaderFlags(dir_, &reader_file_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    Proc imported = ImportFixtureRefvals(verifier_.url(), admin_file_);
    ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
    jwks_ = ExportJwks(dir_ + "/verifier.key", dir_ + "/jwks.json");
    ASSERT_FALSE(jwks_.empty());
  }
  std::vector<std::string> Reader() {
    return {"--verifier", verifier_.url(), "--token-file", reader_file_};
  }
  // Enrolls `node` and attests the recorded device `times` times.
  void Attest(const std::string& node, const std::string& device, int times) {
    std::vector<std::string> net = {"--verifier", verifier_.url(), "--node-id", node, "--key",
                                    dir_ + "/" + node + ".key"};
    std::vector<std::string> enroll = {kBin + "/dpuaudit-agent", "enroll",
                                       "--bootstrap-token-file", dir_ + "/bootstrap.token"};
    enroll.insert(enroll.end(), net.begin(), net.end());
    Proc e = Exec(enroll);
    ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
    for (int i = 0; i < times; ++i) {
      std::vector<std::string> attest = {kBin + "/dpuaudit-agent", "attest", "--device-root",
                                         Fixture(device)};
      attest.insert(attest.end(), net.begin(), net.end());
      Proc a = Exec(attest);
      ASSERT_TRUE(a.exit_code == 0 || a.exit_code == 1) << a.out << a.err;
    }
  }
  std::string Export(const std::string& node) {
    const std::string out = dir_ + "/" + node + ".bundle.json";
    std::vector<std::string> args = {"bundle", "export", "--node", node, "--out", out};
    for (auto& f : Reader()) args.push_back(f);
    Proc p = Cli(args);
    EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
    EXPECT_THAT(p.out, HasSubstr("wrote " + out));
    return out;
  }
  Proc Verify(const std::string& bundle, const std::string& trust = "") {
    return Cli({"bundle", "verify", bundle, "--trust", trust.empty() ? jwks_ : trust});
  }
  // A tampered copy of `bundle`.
  std::string Tampered(const std::string& bundle, const std::string& name,
                       const std::function<void(json&)>& edit) {
    json j = json::parse(ReadAll(bundle));
    edit(j);
    const std::string out = dir_ + "/" + name + ".json";
    WriteText(out, j.dump());
    return out;
  }

  std::string dir_, admin_file_, reader_file_, jwks_;
  VerifierProcess verifier_;
};

// Export, verify offline with a re-appraisal identical to every signed EAR,
// then each kind of tampering fails naming what was changed.
TEST_F(BundleTest, ExportedBundleVerifiesAndEachTamperingIsNamed) {
  StartVerifier();
  Attest("bf3-a", "bf3-zero-trust", 3);
  Attest("bf3-b", "bf3-privileged-host", 1);  // other entries in between
  Attest("bf3-a-2", "bf3-zero-trust", 1);
  const std::string bundle = Export("bf3-a");
  EXPECT_EQ(fs::status(bundle).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);

  // Without the reader or admin token nothing is exported (401 → exit 2).
  WriteText(dir_ + "/wrong.token", "not-the-reader-token-0123456789\n", 0600);
  Proc anon = Cli({"bundle", "export", "--node", "bf3-a", "--out", dir_ + "/anon.json",
                   "--verifier", verifier_.url(), "--token-file", dir_ + "/wrong.token"});
  EXPECT_EQ(anon.exit_code, 2) << anon.out << anon.err;
  EXPECT_FALSE(fs::exists(dir_ + "/anon.json"));

  Proc ok = Verify(bundle);
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("VERIFIED  bundle of node bf3-a"));
  EXPECT_THAT(ok.out, HasSubstr("re-appraised: 3 identical"));
  Proc okj = Cli({"bundle", "verify", bundle, "--trust", jwks_, "--json"});
  ASSERT_EQ(okj.exit_code, 0) << okj.err;
  json v = ParseJson(okj.out);
  EXPECT_EQ(v["reports"], 3);
  EXPECT_EQ(v["results"], 3);
  EXPECT_EQ(v["reappraised_full"], 3);
  if (HaveJsonschema()) EXPECT_EQ(SchemaErrors(dir_, "bundle-verify", okj.out), "");

  const json original = json::parse(ReadAll(bundle));
  // The EAR names its collateral: the policy and the reference values.
  {
    const json& entries = original["log"]["entries"];
    bool policy_logged = false;
    for (const json& e : entries) {
      policy_logged = policy_logged || json::parse(e["entry"].get<std::string>())["kind"] ==
                                           "policy.loaded";
    }
    (void)policy_logged;  // the policy entry predates the node's window
    json ctx = json::parse(original["results"][0]["context"].get<std::string>());
    EXPECT_EQ(ctx["node"]["node_id"], "bf3-a");
    std::set<std::string> kinds;
    for (const json& c : original["collateral"]) kinds.insert(c["kind"]);
    EXPECT_EQ(kinds, (std::set<std::string>{"policy", "refvals"}));
  }

  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    std::string item;  // what the failure must name
  };
  const int64_t report_id = original["reports"][0]["report_id"];
  const int64_t result_id = original["results"][1]["result_id"];
  std::vector<Case> cases = {
      {"report-byte",
       [](json& j) {
         std::string jws = j["reports"][0]["jws"];
         size_t dot = jws.find('.');
         jws[dot + 40] = jws[dot + 40] == 'A' ? 'B' : 'A';  // one byte of the payload
         j["reports"][0]["jws"] = jws;
       },
       "report " + std::to_string(report_id)},
      {"result-decision",
       [](json& j) {
         j["results"][1]["decision"] = j["results"][1]["decision"] == "admit" ? "deny" : "admit";
       },
       "result " + std::to_string(result_id)},
      {"removed-entry",
       [](json& j) {
         auto& e = j["log"]["entries"];
         e.erase(e.begin() + static_cast<long>(e.size() / 2));
       },
       "audit log entry"},
      {"reordered-entries",
       [](json& j) {
         auto& e = j["log"]["entries"];
         std::swap(e[1], e[2]);
       },
       "audit log entry"},
      {"swapped-policy",
       [](json& j) {
         for (json& c : j["collateral"]) {
           if (c["kind"] != "policy") continue;
           json p = json::parse(c["body"].get<std::string>());
           p["rules"][0]["action"] = "warn";
           c["body"] = p.dump();
         }
       },
       "collateral policy"},
      {"swapped-release",
       [](json& j) {
         for (json& c : j["collateral"]) {
           if (c["kind"] != "refvals") continue;
           json m = json::parse(c["body"].get<std::string>());
           json& state = m["releases"][0]["state"];
           state = state == "revoked" ? "active" : "revoked";
           c["body"] = m.dump();
         }
       },
       "collateral refvals"},
      {"forged-checkpoint",
       [](json& j) {
         std::string cp = j["log"]["checkpoint"];
         size_t a = cp.find('.'), b = cp.rfind('.');
         Bytes raw = *Base64UrlDecode(cp.substr(a + 1, b - a - 1));
         json payload = json::parse(std::string(raw.begin(), raw.end()));
         payload["size"] = payload["size"].get<int64_t>() + 1;
         j["log"]["checkpoint"] =
             cp.substr(0, a + 1) + Base64UrlEncode(AsBytes(payload.dump())) + cp.substr(b);
       },
       "checkpoint"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Proc p = Verify(Tampered(bundle, c.name, c.edit));
    EXPECT_EQ(p.exit_code, 1) << p.out << p.err;
    EXPECT_THAT(p.out, HasSubstr("NOT VERIFIED"));
    EXPECT_THAT(p.out, HasSubstr("FAIL  " + c.item)) << p.out;
  }
  // The wrong verifier key: nothing verifies.
  Proc keygen = Exec({"openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                       "ec_paramgen_curve:P-256", "-out", dir_ + "/other.key"});
  ASSERT_EQ(keygen.exit_code, 0) << keygen.err;
  fs::permissions(dir_ + "/other.key", fs::perms::owner_read | fs::perms::owner_write);
  const std::string other = ExportJwks(dir_ + "/other.key", dir_ + "/other.jwks.json");
  ASSERT_FALSE(other.empty());
  Proc wrong = Verify(bundle, other);
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_THAT(wrong.out, HasSubstr("FAIL  checkpoint"));
  EXPECT_THAT(wrong.out, HasSubstr("checkpoint is signed by key"));
  EXPECT_THAT(wrong.out, HasSubstr("checkpoint: not verified"));
  // Unusable input is exit 2, naming the file.
  WriteText(dir_ + "/not-a-bundle.json", "{\"bundle\": 1}");
  Proc bad = Verify(dir_ + "/not-a-bundle.json");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("not-a-bundle.json"));

  // Independent of the code under test: Python recomputes the chain and
  // checks the checkpoint signature.
  Proc py = Exec({"python3", kSrc + "/tests/tools/audit_chain_check.py", bundle, jwks_});
  if (py.err.find("No module named 'cryptography'") != std::string::npos) {
    GTEST_SKIP() << "python3-cryptography is not installed (scripts/deps.sh)";
  }
  ASSERT_EQ(py.exit_code, 0) << py.err;
  json pyj = ParseJson(py.out);
  EXPECT_EQ(pyj["entries"], original["log"]["entries"].size());
  Proc py_bad = Exec({"python3", kSrc + "/tests/tools/audit_chain_check.py",
                      dir_ + "/removed-entry.json", jwks_});
  EXPECT_EQ(py_bad.exit_code, 1);
}

// npm's jose verifies every report under its node key and every EAR under
// the verifier JWKS.
TEST_F(BundleTest, ReportsAndEarsInABundleVerifyWithJose) {
  std::string why;
  auto jose_dir = ::dpuaudit::testing::jose::JoseDir(&why);
  if (!jose_dir) GTEST_SKIP() << "npm jose unavailable: " << why;
  StartVerifier();
  Attest("bf3-j", "bf3-zero-trust", 2);
  const std::string bundle = Export("bf3-j");
  fs::copy_file(kSrc + "/tests/integration/bundle_jose.mjs", *jose_dir / "bundle_jose.mjs",
                fs::copy_options::overwrite_existing);
  Proc p = Exec({"node", (*jose_dir / "bundle_jose.mjs").string(), bundle, jwks_});
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  json j = ParseJson(p.out);
  EXPECT_EQ(j["reports_verified"], 2);
  EXPECT_EQ(j["ears_verified"], 2);
  EXPECT_EQ(j["report_typ"], "dpuaudit-report+jws");
}

// The store's whole chain: intact, then an edited entry is named; a
// checkpoint signed by the verifier covers it.
TEST_F(BundleTest, AuditVerifyWalksTheStoreAndNamesTheFirstBrokenLink) {
  StartVerifier();
  Attest("bf3-s", "bf3-zero-trust", 2);
  Export("bf3-s");  // signs a checkpoint
  verifier_.Stop();  // and one more at shutdown
  const std::string db = dir_ + "/verifier.db";
  Proc ok = Exec({kBin + "/dpuaudit-verifier", "audit", "verify", "--db", db, "--trust", jwks_});
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("chain intact"));
  EXPECT_THAT(ok.out, HasSubstr("verified, under pinned keys from"));
  Proc js = Exec({kBin + "/dpuaudit-verifier", "audit", "verify", "--db", db, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  if (HaveJsonschema()) EXPECT_EQ(SchemaErrors(dir_, "audit-verify", js.out), "");
  json v = ParseJson(js.out);
  ASSERT_GT(v["entries"].get<int64_t>(), 5);
  // Every kind the run produced is there: the policy, the releases, the
  // enrolment and approval, reports, results, decision changes, the key.
  // Edit entry 3 in the database, as root on the verifier host could.
  Proc edit = Exec({"python3", "-c",
                    "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                    "c.execute(\"UPDATE audit_log SET entry=replace(entry,'\\\"time\\\":',"
                    "'\\\"time\\\": ') WHERE seq=3\"); c.commit()",
                    db});
  ASSERT_EQ(edit.exit_code, 0) << edit.err;
  Proc broken = Exec({kBin + "/dpuaudit-verifier", "audit", "verify", "--db", db});
  EXPECT_EQ(broken.exit_code, 1) << broken.out;
  EXPECT_THAT(broken.out, HasSubstr("BROKEN  audit log entry 3:"));
  // A checkpoint by hand.
  Proc cp = Exec({kBin + "/dpuaudit-verifier", "audit", "checkpoint", "--db", db, "--key",
                  dir_ + "/verifier.key", "--json"});
  EXPECT_EQ(cp.exit_code, 0) << cp.err;
  if (HaveJsonschema()) EXPECT_EQ(SchemaErrors(dir_, "audit-checkpoint", cp.out), "");
}

// A candidate policy tried on verified bundles: the nodes whose decision
// would change, and why.
TEST_F(BundleTest, PolicyTestListsTheNodesWhoseDecisionWouldChange) {
  StartVerifier();
  Attest("bf3-p", "bf3-zero-trust", 1);
  Attest("bf3-q", "bf3-privileged-host", 1);
  fs::create_directories(dir_ + "/bundles");
  for (const char* node : {"bf3-p", "bf3-q"}) {
    std::string b = Export(node);
    fs::rename(b, dir_ + "/bundles/" + node + ".json");
  }
  // The current policy changes nothing.
  Proc same = Cli({"policy", "test", kSrc + "/policies/zero-trust.json", "--reports",
                   dir_ + "/bundles", "--trust", jwks_});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_THAT(same.out, HasSubstr("would change: 0 of 2 results"));
  // A candidate that requires the RShim enabled denies the admitted node.
  json policy = json::parse(ReadAll(kSrc + "/policies/zero-trust.json"));
  for (json& r : policy["rules"]) {
    if (r["id"] == "host.rshim_disabled") r["expect"] = "FALSE";
  }
  policy["name"] = "candidate";
  WriteText(dir_ + "/candidate.json", policy.dump(2));
  Proc changed = Cli({"policy", "test", dir_ + "/candidate.json", "--reports",
                      dir_ + "/bundles", "--trust", jwks_});
  EXPECT_EQ(changed.exit_code, 1) << changed.out << changed.err;
  EXPECT_THAT(changed.out, HasSubstr("CHANGES  bf3-p"));
  EXPECT_THAT(changed.out, HasSubstr("admit -> deny"));
  EXPECT_THAT(changed.out, HasSubstr("newly failing: host.rshim_disabled"));
  Proc js = Cli({"policy", "test", dir_ + "/candidate.json", "--bundle",
                 dir_ + "/bundles/bf3-p.json", "--trust", jwks_, "--json"});
  EXPECT_EQ(js.exit_code, 1) << js.err;
  if (HaveJsonschema()) EXPECT_EQ(SchemaErrors(dir_, "policy-test", js.out), "");
  EXPECT_EQ(ParseJson(js.out)["admit_to_deny"], 1);
  // A tampered bundle is refused before anything is re-appraised.
  json b = json::parse(ReadAll(dir_ + "/bundles/bf3-p.json"));
  b["results"][0]["decision"] = "deny";
  WriteText(dir_ + "/tampered.json", b.dump());
  Proc refused = Cli({"policy", "test", dir_ + "/candidate.json", "--bundle",
                      dir_ + "/tampered.json", "--trust", jwks_});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("does not verify"));
}

}  // namespace
}  // namespace dpuaudit::itest
