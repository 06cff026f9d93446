// The operator interface over the admin API (issue 15 §5) against the real
// binaries on loopback: GET /v1/nodes (reader token, pages), approve and
// reject through `dpuaudit` (strict bodies, 409 naming both thumbprints),
// explain's exit codes, the DPUAUDIT_* environment, `serve --config` (an
// unknown key or bad value exits 2), `dpuaudit --config` (flags > file >
// environment), local commands refusing a --db that
// does not exist, and every --json output against docs/schemas.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/shared/http_client.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"
#include "report/jws.h"

namespace dpuaudit {
namespace {

using itest::ParseJson;

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;

class OperatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-ops-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  void StartVerifier(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json"};
    for (auto& f : itest::AdminFlags(dir_, &admin_file_)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader_file_)) args.push_back(f);
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
  }
  // `dpuaudit ARGS` with the client settings from the environment.
  Proc Cli(std::vector<std::string> args, const std::string& token_file) {
    std::vector<std::string> argv = {"/usr/bin/env", "DPUAUDIT_VERIFIER=" + verifier_.url(),
                                     "DPUAUDIT_TOKEN_FILE=" + token_file, kBin + "/dpuaudit"};
    argv.insert(argv.end(), args.begin(), args.end());
    return Exec(argv);
  }
  std::string Enroll(const std::string& node) {
    std::string key = dir_ + "/" + node + ".key";
    bool created = false;
    auto k = EcPrivateKey::LoadOrCreateFile(key, &created);
    EXPECT_TRUE(k.ok());
    Proc p = Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(),
                   "--node-id", node, "--key", key, "--device-root",
                   Fixture("bf3-zero-trust")});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return k.ok() ? k->public_key().Thumbprint() : "";
  }
  apps::HttpResponse Request(const std::string& method, const std::string& path,
                             const std::string& body, const std::string& token) {
    auto c = apps::HttpClient::New(verifier_.url(), {});
    EXPECT_TRUE(c.ok());
    auto r = method == "GET" ? (*c)->GetWithBearer(path, token)
                             : (*c)->PostWithBearer(path, "application/json", body, token);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }
  std::string SchemaErrors(const std::string& name, const std::string& json) {
    return itest::SchemaErrors(dir_, name, json);
  }
  bool HaveJsonschema() { return itest::HaveJsonschema(); }

  std::string dir_, admin_file_, reader_file_;
  itest::VerifierProcess verifier_;
};

TEST_F(OperatorTest, ListApproveRejectExplainOverTheAdminApi) {
  StartVerifier();
  const std::string t1 = Enroll("ops-1");
  Enroll("ops-2");
  Enroll("ops-3");

  // Listing: reader token, pages in node-id order; no token 401.
  EXPECT_EQ(Request("GET", "/v1/nodes", "", "").status, 401);
  auto page = Request("GET", "/v1/nodes?limit=2", "", itest::kReaderToken);
  ASSERT_EQ(page.status, 200) << page.body;
  auto j = ParseJson(page.body);
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][0]["node_id"], "ops-1");
  EXPECT_EQ(j["next_after"], "ops-2");
  auto rest = ParseJson(Request("GET", "/v1/nodes?limit=2&after=ops-2", "", itest::kReaderToken).body);
  ASSERT_EQ(rest["nodes"].size(), 1u);
  EXPECT_EQ(rest["nodes"][0]["node_id"], "ops-3");
  EXPECT_TRUE(rest["next_after"].is_null());
  EXPECT_EQ(Request("GET", "/v1/nodes?limit=0", "", itest::kReaderToken).status, 400);

  Proc list = Cli({"nodes", "list"}, reader_file_);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("ops-3"));
  EXPECT_THAT(list.out, HasSubstr("pending"));

  // Strict bodies: an unknown member is refused, nothing changes.
  const std::string admin_token = "integration-admin-token-0001";
  auto extra = Request("POST", "/v1/nodes/ops-1/approve",
                       R"({"thumbprint":")" + t1 + R"(","by":"op","admin":true})", admin_token);
  EXPECT_EQ(extra.status, 400) << extra.body;
  EXPECT_THAT(extra.body, HasSubstr("admin"));
  // The reader token cannot approve.
  EXPECT_EQ(Request("POST", "/v1/nodes/ops-1/approve",
                    R"({"thumbprint":")" + t1 + R"(","by":"op"})", itest::kReaderToken)
                .status,
            401);

  // A wrong thumbprint: 409 naming both, exit 1; the right one approves.
  const std::string wrong(43, 'A');
  Proc bad = Cli({"approve", "ops-1", "--thumbprint", wrong, "--by", "op"}, admin_file_);
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("409"));
  EXPECT_THAT(bad.err, HasSubstr(t1));
  EXPECT_THAT(bad.err, HasSubstr(wrong));
  Proc ok = Cli({"approve", "ops-1", "--thumbprint", t1, "--by", "op", "--reason", "label",
                 "--json"},
                admin_file_);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ParseJson(ok.out)["state"], "approved");
  // Unknown node: 404, exit 2. A reader token on an admin route: exit 2.
  EXPECT_EQ(Cli({"approve", "ghost", "--thumbprint", wrong, "--by", "op"}, admin_file_).exit_code,
            2);
  EXPECT_EQ(Cli({"reject", "ops-2", "--by", "op", "--reason", "x"}, reader_file_).exit_code, 2);

  Proc rj = Cli({"reject", "ops-2", "--by", "op", "--reason", "not ours", "--json"}, admin_file_);
  ASSERT_EQ(rj.exit_code, 0) << rj.err;
  EXPECT_EQ(Request("GET", "/v1/nodes/ops-2", "", itest::kReaderToken).status, 404);
  // Reject is for pending nodes: ops-1 is approved (409, exit 1).
  EXPECT_EQ(Cli({"reject", "ops-1", "--by", "op", "--reason", "x"}, admin_file_).exit_code, 1);

  // explain: denied (no reference values yet) -> 1 with the failing rules
  // first; admitted once they are imported -> 0; pending -> 1; ghost -> 2.
  auto attest = [&] {
    return Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", verifier_.url(),
                 "--node-id", "ops-1", "--key", dir_ + "/ops-1.key", "--device-root",
                 Fixture("bf3-zero-trust")});
  };
  Proc a = attest();
  ASSERT_NE(a.exit_code, 2) << a.err;
  Proc ex = Cli({"explain", "ops-1"}, reader_file_);
  EXPECT_EQ(ex.exit_code, 1) << ex.out << ex.err;
  EXPECT_THAT(ex.out, HasSubstr("ops-1: deny"));
  EXPECT_THAT(ex.out, HasSubstr("fail/deny  refval."));
  Proc ex_json = Cli({"explain", "ops-1", "--json"}, reader_file_);
  EXPECT_EQ(ex_json.exit_code, 1);
  auto reasons = ParseJson(ex_json.out)["reasons"];
  ASSERT_TRUE(reasons.is_array());
  ASSERT_FALSE(reasons.empty());
  // Failing and unknown rules come first.
  bool seen_pass = false;
  for (const auto& r : reasons) {
    if (r["verdict"] == "pass") seen_pass = true;
    else EXPECT_FALSE(seen_pass) << reasons.dump(2);
  }
  Proc imported = itest::ImportFixtureRefvals(verifier_.url(), admin_file_);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  ASSERT_EQ(attest().exit_code, 0);
  Proc ex_admit = Cli({"explain", "ops-1", "--json"}, reader_file_);
  EXPECT_EQ(ex_admit.exit_code, 0) << ex_admit.out << ex_admit.err;
  EXPECT_EQ(ParseJson(ex_admit.out)["decision"], "admit");
  Proc ex_pending = Cli({"explain", "ops-3"}, reader_file_);
  EXPECT_EQ(ex_pending.exit_code, 1) << ex_pending.out;
  EXPECT_THAT(ex_pending.out, HasSubstr("pending"));
  EXPECT_EQ(Cli({"explain", "ghost"}, reader_file_).exit_code, 2);
  // Flags override the environment: a wrong --verifier wins and fails.
  EXPECT_EQ(Cli({"nodes", "list", "--verifier", "http://127.0.0.1:1"}, reader_file_).exit_code,
            2);

  // Every --json output validates against its schema.
  if (!HaveJsonschema()) GTEST_SKIP() << "python3-jsonschema is not installed (scripts/deps.sh)";
  Proc lj = Cli({"nodes", "list", "--json"}, reader_file_);
  ASSERT_EQ(lj.exit_code, 0);
  EXPECT_EQ(SchemaErrors("nodes-list", lj.out), "");
  EXPECT_EQ(SchemaErrors("approve", ok.out), "");
  EXPECT_EQ(SchemaErrors("reject", rj.out), "");
  EXPECT_EQ(SchemaErrors("explain", ex_json.out), "");
  EXPECT_EQ(SchemaErrors("explain", ex_admit.out), "");
  EXPECT_EQ(SchemaErrors("explain", Cli({"explain", "ops-3", "--json"}, reader_file_).out), "");
  // A schema that cannot fail would prove nothing.
  EXPECT_NE(SchemaErrors("reject", R"({"node_id":"x"})"), "");
}

TEST_F(OperatorTest, ServeFromAConfigFileAndRefuseUnknownKeys) {
  const std::string cfg = dir_ + "/verifier.toml";
  ASSERT_TRUE(WriteFileAtomic(cfg,
                              AsBytes("policy = \"" + kSrc +
                                      "/policies/zero-trust.json\"\nnonce-ttl = 30\n"
                                      "verifier-id = \"from-config\"\n"),
                              0600)
                  .ok());
  // The policy comes from the file; the harness's flags (--listen, --db,
  // --key) come from the command line.
  std::string err;
  ASSERT_TRUE(verifier_.Start(dir_, {"--config", cfg}, &err)) << err;
  auto c = apps::HttpClient::New(verifier_.url(), {});
  ASSERT_TRUE(c.ok());
  auto ready = (*c)->Get("/readyz");
  ASSERT_TRUE(ready.ok());
  EXPECT_EQ(ready->status, 200);
  verifier_.Stop();

  auto serve = [&](const std::string& text) {
    EXPECT_TRUE(WriteFileAtomic(cfg, AsBytes(text), 0600).ok());
    return Exec({kBin + "/dpuaudit-verifier", "serve", "--config", cfg, "--db",
                 dir_ + "/verifier.db", "--key", dir_ + "/verifier.key", "--policy",
                 kSrc + "/policies/zero-trust.json", "--listen", "127.0.0.1:0"});
  };
  Proc unknown = serve("nonce-tll = 30\n");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("nonce-tll"));
  Proc bad = serve("nonce-ttl = \"soon\"\n");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out + bad.err, HasSubstr("nonce-ttl"));
  Proc section = serve("[serve]\nlisten = \"127.0.0.1:0\"\n");
  EXPECT_EQ(section.exit_code, 2);
  Proc missing = Exec({kBin + "/dpuaudit-verifier", "serve", "--config", dir_ + "/nope.toml",
                       "--db", dir_ + "/verifier.db", "--key", dir_ + "/k", "--policy", "p"});
  EXPECT_EQ(missing.exit_code, 2);
}

TEST_F(OperatorTest, CliConfigFileSuppliesFlagsFlagsWinAndUnknownKeysExit2) {
  StartVerifier();
  Enroll("cfg-1");
  // [nodes.list] holds what an operator repeats; no flag, no environment.
  const std::string cfg = dir_ + "/dpuaudit.toml";
  ASSERT_TRUE(WriteFileAtomic(cfg,
                              AsBytes("[nodes.list]\nverifier = \"" + verifier_.url() +
                                      "\"\ntoken-file = \"" + reader_file_ +
                                      "\"\njson = true\n"),
                              0600)
                  .ok());
  Proc listed = Exec({kBin + "/dpuaudit", "--config", cfg, "nodes", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(ParseJson(listed.out)["nodes"][0]["node_id"], "cfg-1") << listed.out;
  // The same file through $DPUAUDIT_CONFIG.
  Proc from_env = Exec({"/usr/bin/env", "DPUAUDIT_CONFIG=" + cfg, kBin + "/dpuaudit", "nodes",
                        "list"});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  // A flag given wins over the file (a verifier that is not there: exit 2).
  Proc flag = Exec({kBin + "/dpuaudit", "--config", cfg, "nodes", "list", "--verifier",
                    "http://127.0.0.1:1"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_THAT(flag.err, HasSubstr("127.0.0.1:1"));
  // The file wins over the environment.
  Proc env = Exec({"/usr/bin/env", "DPUAUDIT_VERIFIER=http://127.0.0.1:1", kBin + "/dpuaudit",
                   "--config", cfg, "nodes", "list"});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  // A misspelt key is a usage error naming it; so is a file that is missing.
  ASSERT_TRUE(WriteFileAtomic(cfg, AsBytes("[nodes.list]\nverifer = \"x\"\n"), 0600).ok());
  Proc typo = Exec({kBin + "/dpuaudit", "--config", cfg, "nodes", "list"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.err, HasSubstr("verifer"));
  Proc missing = Exec({kBin + "/dpuaudit", "--config", dir_ + "/nope.toml", "nodes", "list"});
  EXPECT_EQ(missing.exit_code, 2);
}

TEST_F(OperatorTest, LocalCommandsRefuseADatabaseThatDoesNotExist) {
  const std::string typo = dir_ + "/verifer.db";
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"approve", "n", "--thumbprint", "t"},
           {"reject", "n"},
           {"nodes", "list"},
           {"tokens", "list"},
           {"prune"}}) {
    std::vector<std::string> argv = {kBin + "/dpuaudit-verifier"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--db");
    argv.push_back(typo);
    Proc p = Exec(argv);
    EXPECT_EQ(p.exit_code, 2) << args[0] << p.err;
    EXPECT_THAT(p.err, HasSubstr("no such database")) << args[0];
    EXPECT_FALSE(fs::exists(typo)) << args[0] << " created the database";
  }
}

}  // namespace
}  // namespace dpuaudit
