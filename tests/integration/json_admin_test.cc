// Issue 15 §5 against the real binaries on loopback: every --json output of
// the `dpuaudit` admin and reader API commands (tokens, nodes, node show,
// revoke, bmc), of the local `dpuaudit-verifier` commands on its database
// (approve, reject, revoke, nodes, tokens, keys, prune, tpm reset, jwks)
// and of the agent (enroll, probe, record, rekey, pubkey) validates against
// its schema in docs/schemas/ (itest::SchemaErrors); a local command prints
// the same document as the admin API command of the same name; the local
// commands that change state append an audit event each (source "local",
// the --by value or login name as actor), also when refused; and a
// refusal by the verifier exits 1 for HTTP 409/410, else 2, in the agent as
// in `dpuaudit`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "apps/shared/http_client.h"
#include "attest/tpm/swtpm_harness.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;
using json = nlohmann::json;

json Json(const std::string& s) {
  json j = json::parse(s, nullptr, false);
  return j.is_discarded() ? json() : j;
}

std::set<std::string> Keys(const json& j) {
  std::set<std::string> out;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) out.insert(k);
  }
  return out;
}

// The JSON lines of a file; a line that does not parse is a failure.
std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

class JsonAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!itest::HaveJsonschema()) {
      GTEST_SKIP() << "python3-jsonschema is not installed (scripts/deps.sh): the --json "
                      "outputs cannot be validated";
    }
    char tmpl[] = "/tmp/dpuaudit-jsonadmin-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    bootstrap_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(
        WriteFileAtomic(bootstrap_, AsBytes(std::string("jsonadmin-bootstrap-token-77\n")), 0600)
            .ok());
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }
  void StartVerifier(std::vector<std::string> extra = {},
                     const std::string& policy = kSrc + "/policies/zero-trust.json") {
    std::vector<std::string> args = {"--policy", policy, "--bootstrap-token-file", bootstrap_,
                                     "--audit-log", dir_ + "/server-audit.log"};
    for (auto& f : itest::AdminFlags(dir_, &admin_)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader_)) args.push_back(f);
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    db_ = dir_ + "/verifier.db";
  }
  // `dpuaudit ARGS` with the verifier and token from the environment.
  Proc Cli(std::vector<std::string> args, const std::string& token_file) {
    std::vector<std::string> argv = {"/usr/bin/env", "DPUAUDIT_VERIFIER=" + verifier_.url(),
                                     "DPUAUDIT_TOKEN_FILE=" + token_file, kBin + "/dpuaudit"};
    argv.insert(argv.end(), args.begin(), args.end());
    return Exec(argv);
  }
  // `dpuaudit-verifier ARGS --db DB`.
  Proc Local(std::vector<std::string> args) {
    args.insert(args.begin(), kBin + "/dpuaudit-verifier");
    args.push_back("--db");
    args.push_back(db_);
    return Exec(args);
  }
  std::string Key(const std::string& node) { return dir_ + "/" + node + ".key"; }
  // `dpuaudit-agent COMMAND --verifier URL --node-id NODE --key KEY ARGS`.
  Proc Agent(const std::string& command, const std::string& node,
             std::vector<std::string> args = {}) {
    std::vector<std::string> argv = {kBin + "/dpuaudit-agent", command, "--verifier",
                                     verifier_.url(), "--node-id", node, "--key", Key(node)};
    argv.insert(argv.end(), args.begin(), args.end());
    return Exec(argv);
  }
  Proc Enroll(const std::string& node, std::vector<std::string> args = {}) {
    args.insert(args.begin(), {"--device-root", Fixture("bf3-zero-trust"), "--json"});
    return Agent("enroll", node, args);
  }
  // A new token for `node`, written to a new file; returns the file.
  std::string IssueToken(const std::string& node) {
    const std::string file = dir_ + "/" + node + "." + std::to_string(++tokens_) + ".token";
    Proc p = Cli({"tokens", "issue", node, "--out", file}, admin_);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return file;
  }
  // The command exited `exit_code` and printed a document of schema `name`.
  void ExpectSchema(const std::string& name, const Proc& p, int exit_code = 0) {
    EXPECT_EQ(p.exit_code, exit_code) << name << ": " << p.out << p.err;
    EXPECT_EQ(itest::SchemaErrors(dir_, name, p.out), "") << name << ":\n" << p.out;
  }
  std::string SchemaErrors(const std::string& name, const json& j) {
    return itest::SchemaErrors(dir_, name, j.dump());
  }

  std::string dir_, db_, admin_, reader_, bootstrap_;
  int tokens_ = 0;
  itest::VerifierProcess verifier_;
};

// A. `dpuaudit` over the admin and reader API, and the agent's outputs.
TEST_F(JsonAdminTest, AdminApiAndAgentCommandsPrintTheirSchemas) {
  StartVerifier();
  ASSERT_EQ(itest::ImportFixtureRefvals(verifier_.url(), admin_).exit_code, 0);

  // tokens issue: the secret on stdout, or only in --out's file.
  Proc issued = Cli({"tokens", "issue", "tok-1", "--by", "alice", "--json"}, admin_);
  ExpectSchema("tokens-issue", issued);
  EXPECT_THAT(Json(issued.out).value("token", ""), HasSubstr("dpaet_"));
  const std::string token_file = dir_ + "/tok-2.token";
  Proc to_file = Cli({"tokens", "issue", "tok-2", "--out", token_file, "--json"}, admin_);
  ExpectSchema("tokens-issue", to_file);
  EXPECT_FALSE(Json(to_file.out).contains("token")) << to_file.out;
  EXPECT_EQ(Json(to_file.out)["token_file"], token_file);
  struct stat st {};
  ASSERT_EQ(stat(token_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ExpectSchema("tokens-list", Cli({"tokens", "list", "--json"}, admin_));

  // The agent enrolls with the token (approved) and without one (pending).
  Proc enrolled = Enroll("tok-2", {"--token-file", token_file});
  ExpectSchema("agent-enroll", enrolled);
  json e = Json(enrolled.out);
  EXPECT_EQ(e["state"], "approved");
  EXPECT_EQ(e["key_created"], true);
  EXPECT_EQ(e["verifier"]["http_status"], 201);
  EXPECT_EQ(e["device"]["serial"], "MT2334X00001");
  Proc pending = Enroll("pend-1");
  ExpectSchema("agent-enroll", pending);
  EXPECT_EQ(Json(pending.out)["state"], "pending");
  EXPECT_TRUE(Enroll("pend-2").exit_code == 0);
  Proc pub = Exec({kBin + "/dpuaudit-agent", "pubkey", "--key", Key("tok-2"), "--json"});
  ExpectSchema("agent-pubkey", pub);
  EXPECT_EQ(Json(pub.out)["key_thumbprint"], e["key_thumbprint"]);
  EXPECT_EQ(Json(pub.out)["public_key"]["kid"], e["key_thumbprint"]);

  // Probe and record: local, no verifier.
  ExpectSchema("agent-probe", Exec({kBin + "/dpuaudit-agent", "probe", "--device-root",
                                    Fixture("bf3-zero-trust"), "--json"}));
  ExpectSchema("agent-probe", Exec({kBin + "/dpuaudit-agent", "probe", "--device-root",
                                    Fixture("bf3-zero-trust"), "--json", "--policy",
                                    kSrc + "/policies/zero-trust.json"}));
  Proc rec = Exec({kBin + "/dpuaudit-agent", "record", "--device-root",
                   Fixture("bf3-zero-trust"), "--out", dir_ + "/recording", "--json"});
  ExpectSchema("agent-record", rec);
  EXPECT_GT(Json(rec.out)["observations"].size(), 5u) << rec.out;
  EXPECT_TRUE(fs::exists(dir_ + "/recording/commands.json"));

  // node show: before and after a result; nodes list.
  ExpectSchema("node-show", Cli({"node", "show", "tok-2", "--json"}, reader_));
  Proc a = Agent("attest", "tok-2", {"--device-root", Fixture("bf3-zero-trust")});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  Proc shown = Cli({"node", "show", "tok-2", "--json"}, reader_);
  ExpectSchema("node-show", shown);
  EXPECT_EQ(Json(shown.out)["latest"]["decision"], "admit") << shown.out;
  Proc shown_pending = Cli({"node", "show", "pend-1", "--json"}, reader_);
  ExpectSchema("node-show", shown_pending);
  EXPECT_TRUE(Json(shown_pending.out)["latest"].is_null());
  EXPECT_TRUE(Json(shown_pending.out).contains("pending_expires_at"));
  ExpectSchema("nodes-list", Cli({"nodes", "list", "--json"}, reader_));

  ExpectSchema("approve", Cli({"approve", "pend-1", "--thumbprint",
                               Json(pending.out)["key_thumbprint"].get<std::string>(), "--by",
                               "op", "--json"},
                              admin_));
  ExpectSchema("reject", Cli({"reject", "pend-2", "--by", "op", "--reason", "squatter", "--json"},
                             admin_));

  // tokens revoke (the unused tok-1 token).
  Proc revoked_token =
      Cli({"tokens", "revoke", Json(issued.out)["token_id"].get<std::string>(), "--by", "bob",
           "--json"},
          admin_);
  ExpectSchema("token-revoke", revoked_token);
  EXPECT_EQ(Json(revoked_token.out)["revoked_by"], "bob");

  // rekey, then revoke (both spellings).
  Proc rekeyed = Agent("rekey", "tok-2", {"--new-key", dir_ + "/tok-2.new.key", "--json"});
  ExpectSchema("agent-rekey", rekeyed);
  EXPECT_EQ(Json(rekeyed.out)["previous_key_thumbprint"], e["key_thumbprint"]);
  EXPECT_NE(Json(rekeyed.out)["key_thumbprint"], e["key_thumbprint"]);
  Proc revoked = Cli({"nodes", "revoke", "tok-2", "--by", "bob", "--reason", "RMA", "--json"},
                     admin_);
  ExpectSchema("node-revoke", revoked);
  EXPECT_EQ(Json(revoked.out)["revocation"]["reason"], "RMA");
  ExpectSchema("node-revoke",
               Cli({"revoke", "pend-1", "--by", "bob", "--reason", "gone", "--json"}, admin_));

  // The server audits a rejection like every other admin action.
  bool rejection = false;
  for (const json& ev : JsonLines(itest::ReadAll(dir_ + "/server-audit.log"))) {
    EXPECT_EQ(ev.value("source", ""), "server") << ev.dump();
    if (ev.value("event", "") == "rejection") {
      rejection = true;
      EXPECT_EQ(ev.value("actor", ""), "op");
      EXPECT_EQ(ev.value("node_id", ""), "pend-2");
      EXPECT_EQ(ev.value("outcome", ""), "ok");
      EXPECT_EQ(ev.value("route", ""), "/v1/nodes/{id}/reject");
    }
  }
  EXPECT_TRUE(rejection) << itest::ReadAll(dir_ + "/server-audit.log");

  // The schemas are not vacuous: a member too many, or one missing, fails.
  json extra = Json(shown.out);
  extra["admin"] = true;
  EXPECT_NE(SchemaErrors("node-show", extra), "");
  json no_secret = Json(issued.out);
  no_secret.erase("token");
  EXPECT_NE(SchemaErrors("tokens-issue", no_secret), "");
  json wrong_state = Json(revoked.out);
  wrong_state["state"] = "approved";
  EXPECT_NE(SchemaErrors("node-revoke", wrong_state), "");
  json probe = Json(Exec({kBin + "/dpuaudit-agent", "probe", "--device-root",
                          Fixture("bf3-zero-trust"), "--json"})
                        .out);
  ASSERT_FALSE(probe["findings"].empty());
  probe["findings"][0]["verdict"] = "unknown";
  probe["findings"][0]["reason"] = "";
  EXPECT_NE(SchemaErrors("agent-probe", probe), "") << "an unknown finding needs a reason";
}

// D. The agent maps the verifier's refusals as `dpuaudit` does: 409/410 ->
// 1, any other refusal -> 2.
TEST_F(JsonAdminTest, AgentEnrollRefusalsExitLikeEveryBinary) {
  StartVerifier();
  ASSERT_EQ(Enroll("ref-1", {"--token-file", IssueToken("ref-1")}).exit_code, 0);
  // A second token for the approved node, with another key: 409.
  const std::string again = IssueToken("ref-1");
  Proc other_key = Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(),
                         "--node-id", "ref-1", "--key", dir_ + "/other.key", "--token-file",
                         again, "--device-root", Fixture("bf3-zero-trust")});
  EXPECT_EQ(other_key.exit_code, 1) << other_key.out << other_key.err;
  EXPECT_THAT(other_key.err, HasSubstr("HTTP 409"));
  EXPECT_THAT(other_key.err, HasSubstr("approved with another key"));
  // A token for another node: 403, exit 2.
  Proc wrong_node = Enroll("ref-2", {"--token-file", again});
  EXPECT_EQ(wrong_node.exit_code, 2) << wrong_node.out << wrong_node.err;
  EXPECT_THAT(wrong_node.err, HasSubstr("HTTP 403"));
  EXPECT_TRUE(wrong_node.out.empty()) << "--json prints nothing on a refusal";
  // `dpuaudit` on the same kind of refusal: 409 -> 1.
  Proc approve = Cli({"approve", "ref-1", "--thumbprint", std::string(43, 'A'), "--by", "op"},
                     admin_);
  EXPECT_EQ(approve.exit_code, 1) << approve.err;
}

// A. The BMC commands against a real BMC simulator the verifier pulls.
TEST_F(JsonAdminTest, BmcCommandsPrintTheirSchemas) {
  const std::string creds = json{{"username", "root"}, {"password", "jsonadmin-bmc-pw"}}.dump();
  for (const char* f : {"/sim-creds.json", "/creds.json"}) {
    ASSERT_TRUE(WriteFileAtomic(dir_ + f, AsBytes(creds), 0600).ok());
  }
  testing::ChildProcess sim;
  testing::ChildProcessOptions so;
  so.output_file = dir_ + "/sim.log";
  std::string err, ready;
  ASSERT_TRUE(sim.Start({kBin + "/dpuaudit-bmc-sim", "--credentials", dir_ + "/sim-creds.json",
                         "--ready-file", dir_ + "/sim.ready", "--tls-cert-out",
                         dir_ + "/tls.pem", "--profile",
                         kSrc + "/tests/fixtures/bmc/bf3-zero-trust.json", "--spdm",
                         "--keys-dir", dir_ + "/keys", "--anchor-out", dir_ + "/anchor.pem"},
                        so, &err))
      << err;
  ASSERT_TRUE(sim.WaitForReadyFile(dir_ + "/sim.ready", std::chrono::seconds(10),
                                   std::chrono::milliseconds(25), &ready, &err))
      << err;
  const json s = Json(ready);
  const json config = {{"schema", "dpuaudit-bmc-config/1"},
                       {"trust_anchors", {"anchor.pem"}},
                       {"interval_seconds", 5},
                       {"min_repull_seconds", 0},
                       {"nodes",
                        {{"bf3-bmc",
                          {{"url", s["url"]},
                           {"pin_sha256", s["tls_spki_sha256"]},
                           {"auth", "basic"},
                           {"credentials_file", "creds.json"},
                           {"timeout_ms", 3000}}}}}};
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/bmc-config.json", AsBytes(config.dump(2)), 0644).ok());
  StartVerifier({"--bmc-config", dir_ + "/bmc-config.json"},
                kSrc + "/policies/zero-trust-bmc.json");
  ASSERT_EQ(Enroll("bf3-bmc", {"--token-file", bootstrap_}).exit_code, 0);

  Proc status;
  for (int i = 0; i < 300; ++i) {
    status = Cli({"bmc", "status", "--node", "bf3-bmc", "--json"}, reader_);
    if (status.exit_code == 0 && Json(status.out)["latest"].is_object()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ExpectSchema("bmc-status", status);
  ASSERT_TRUE(Json(status.out)["latest"].is_object()) << "no BMC pull: " << status.out;
  EXPECT_TRUE(Json(status.out)["stored"].contains("bmc-binding")) << status.out;

  Proc approved = Cli({"bmc", "approve", "--node", "bf3-bmc", "--target", "irot", "--by",
                       "alice", "--reason", "CHG-1", "--json"},
                      admin_);
  ExpectSchema("bmc-admin", approved);
  EXPECT_EQ(Json(approved.out)["target"], "irot");
  EXPECT_FALSE(Json(approved.out)["baseline"].empty());
  Proc rebound = Cli({"bmc", "rebind", "--node", "bf3-bmc", "--by", "bob", "--reason",
                      "RMA 77", "--json"},
                     admin_);
  ExpectSchema("bmc-admin", rebound);
  EXPECT_EQ(Json(rebound.out)["set_by"], "bob");
  // The two shapes are told apart: a rebind is no baseline approval.
  json mixed = Json(rebound.out);
  mixed["target"] = "irot";
  EXPECT_NE(SchemaErrors("bmc-admin", mixed), "");
  // A node without a BMC: 404, exit 2, nothing on stdout.
  Proc none = Cli({"bmc", "status", "--node", "no-bmc", "--json"}, reader_);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(none.out.empty());
  sim.Stop();
}

// B. The local commands: the API commands' shapes, and an audit event for
// every change.
TEST_F(JsonAdminTest, LocalCommandsShareTheApiShapesAndAuditEachChange) {
  StartVerifier();
  ASSERT_EQ(itest::ImportFixtureRefvals(verifier_.url(), admin_).exit_code, 0);
  std::map<std::string, std::string> thumbprint;
  for (const char* n : {"loc-1", "loc-2", "loc-3", "loc-5"}) {
    Proc p = Enroll(n);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    thumbprint[n] = Json(p.out).value("key_thumbprint", "");
  }
  ASSERT_EQ(Enroll("loc-4", {"--token-file", bootstrap_}).exit_code, 0);
  ASSERT_EQ(Agent("attest", "loc-4", {"--device-root", Fixture("bf3-zero-trust")}).exit_code, 0);
  const std::string audit = dir_ + "/local-audit.log";

  Proc approved = Local({"approve", "loc-1", "--thumbprint", thumbprint["loc-1"], "--by",
                         "alice", "--json", "--audit-log", audit});
  ExpectSchema("approve", approved);
  Proc api_approved =
      Cli({"approve", "loc-3", "--thumbprint", thumbprint["loc-3"], "--by", "op", "--json"},
          admin_);
  ExpectSchema("approve", api_approved);
  EXPECT_EQ(Keys(Json(approved.out)), Keys(Json(api_approved.out)));
  Proc refused = Local({"approve", "loc-2", "--thumbprint", std::string(43, 'A'), "--by",
                        "alice", "--json", "--audit-log", audit});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(refused.out.empty());
  ExpectSchema("reject", Local({"reject", "loc-2", "--by", "op", "--reason", "squatter",
                                "--json", "--audit-log", audit}));
  // The environment names the file as well.
  Proc issued = Exec({"/usr/bin/env", "DPUAUDIT_AUDIT_LOG=" + audit, kBin + "/dpuaudit-verifier",
                      "tokens", "issue", "loc-9", "--by", "carol", "--json", "--db", db_});
  ExpectSchema("tokens-issue", issued);

  // Listings and views: the very document the API commands print.
  Proc list = Local({"nodes", "list", "--json"});
  ExpectSchema("nodes-list", list);
  EXPECT_EQ(Json(list.out), Json(Cli({"nodes", "list", "--json"}, reader_).out));
  Proc show = Local({"nodes", "show", "loc-4", "--json"});
  ExpectSchema("node-show", show);
  EXPECT_TRUE(Json(show.out)["latest"].is_object()) << show.out;
  EXPECT_EQ(Json(show.out), Json(Cli({"node", "show", "loc-4", "--json"}, reader_).out));
  Proc tokens = Local({"tokens", "list", "--json"});
  ExpectSchema("tokens-list", tokens);
  EXPECT_EQ(Json(tokens.out), Json(Cli({"tokens", "list", "--json"}, admin_).out));

  Proc revoked = Local({"revoke", "loc-1", "--by", "dave", "--reason", "key leaked", "--json",
                        "--audit-log", audit});
  ExpectSchema("node-revoke", revoked);
  Proc api_revoked =
      Cli({"revoke", "loc-3", "--by", "op", "--reason", "gone", "--json"}, admin_);
  ExpectSchema("node-revoke", api_revoked);
  EXPECT_EQ(Keys(Json(revoked.out)), Keys(Json(api_revoked.out)));

  ExpectSchema("keys-list", Local({"keys", "list", "--json"}));
  Proc pruned = Local({"prune", "--by", "erin", "--json", "--audit-log", audit});
  ExpectSchema("prune", pruned);
  Proc jwks = Exec({kBin + "/dpuaudit-verifier", "jwks", "--key", dir_ + "/verifier.key"});
  ExpectSchema("jwks", jwks);
  auto c = apps::HttpClient::New(verifier_.url(), {});
  ASSERT_TRUE(c.ok());
  auto published = (*c)->Get("/.well-known/jwks.json");
  ASSERT_TRUE(published.ok());
  EXPECT_EQ(Json(jwks.out), Json(published->body));
  EXPECT_EQ(itest::SchemaErrors(dir_, "jwks", published->body), "");

  // Without --audit-log the event goes to stderr.
  Proc to_stderr = Local({"reject", "loc-5", "--by", "frank"});
  EXPECT_EQ(to_stderr.exit_code, 0) << to_stderr.err;
  EXPECT_THAT(to_stderr.err, HasSubstr("dpuaudit-verifier: audit {"));
  EXPECT_THAT(to_stderr.err, HasSubstr("\"event\":\"rejection\""));
  // An --audit-log that cannot be opened stops the command before it
  // changes anything.
  Proc no_log = Local({"revoke", "loc-4", "--by", "x", "--reason", "y", "--audit-log",
                       dir_ + "/no/such/dir/audit.log"});
  EXPECT_EQ(no_log.exit_code, 2);
  EXPECT_THAT(no_log.err, HasSubstr("--audit-log"));
  EXPECT_EQ(Json(Local({"nodes", "show", "loc-4", "--json"}).out)["state"], "approved");

  // The audit file: 0600, one JSON object per line, in order.
  struct stat st {};
  ASSERT_EQ(stat(audit.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string text = itest::ReadAll(audit);
  EXPECT_THAT(text, Not(HasSubstr("dpaet_"))) << "a token secret in the audit log";
  std::vector<json> events = JsonLines(text);
  struct Want {
    const char* event;
    const char* actor;
    const char* node;
    const char* outcome;
  };
  const std::vector<Want> want = {{"approval", "alice", "loc-1", "ok"},
                                  {"approval", "alice", "loc-2", "refused"},
                                  {"rejection", "op", "loc-2", "ok"},
                                  {"enrollment_token_issued", "carol", "loc-9", "ok"},
                                  {"revocation", "dave", "loc-1", "ok"},
                                  {"prune", "erin", "", "ok"}};
  ASSERT_EQ(events.size(), want.size()) << text;
  const int64_t now = std::time(nullptr);
  for (size_t i = 0; i < want.size(); ++i) {
    const json& ev = events[i];
    EXPECT_EQ(ev.value("event", ""), want[i].event) << ev.dump();
    EXPECT_EQ(ev.value("actor", ""), want[i].actor) << ev.dump();
    EXPECT_EQ(ev.value("node_id", ""), want[i].node) << ev.dump();
    EXPECT_EQ(ev.value("outcome", ""), want[i].outcome) << ev.dump();
    EXPECT_EQ(ev.value("source", ""), "local") << ev.dump();
    EXPECT_FALSE(ev.value("detail", "").empty()) << ev.dump();
    EXPECT_GT(ev.value("at", int64_t{0}), now - 600) << ev.dump();
    EXPECT_FALSE(ev.contains("client") || ev.contains("route") || ev.contains("request_id"))
        << ev.dump();
  }
  EXPECT_THAT(events[1].value("detail", ""), HasSubstr(thumbprint["loc-2"]));
  EXPECT_THAT(events[3].value("detail", ""),
              HasSubstr(Json(issued.out).value("token_id", "?")));
}

// B/C. A TPM-bound node (a private software TPM): the agent's enroll
// --json, node show's "tpm", and `tpm reset --json` with its audit event.
TEST_F(JsonAdminTest, TpmBoundNodeAndTpmReset) {
  DPUAUDIT_SKIP_WITHOUT_SWTPM();
  auto tpm = testing::SwtpmInstance::Start();
  ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
  StartVerifier({"--ek-ca-dir", (*tpm)->ek_ca_dir()});
  Proc enrolled = Agent("enroll", "tpm-1",
                        {"--token-file", bootstrap_, "--tpm", (*tpm)->tcti(), "--device-root",
                         Fixture("bf3-ftpm"), "--json"});
  ExpectSchema("agent-enroll", enrolled);
  EXPECT_EQ(Json(enrolled.out)["tpm"]["state"], "active") << enrolled.out;
  Proc shown = Cli({"node", "show", "tpm-1", "--json"}, reader_);
  ExpectSchema("node-show", shown);
  EXPECT_EQ(Json(shown.out)["tpm"]["ak_name"], Json(enrolled.out)["tpm"]["ak_name"]);
  EXPECT_EQ(Json(Local({"nodes", "show", "tpm-1", "--json"}).out), Json(shown.out));

  const std::string audit = dir_ + "/local-audit.log";
  Proc reset = Local({"tpm", "reset", "tpm-1", "--force", "--reason", "TPM replaced", "--by",
                      "gina", "--json", "--audit-log", audit});
  ExpectSchema("tpm-reset", reset);
  EXPECT_EQ(Json(reset.out)["deleted_tpm_state"], "active");
  Proc again = Local({"tpm", "reset", "tpm-1", "--json", "--audit-log", audit});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_THAT(again.err, HasSubstr("has no TPM binding"));
  std::vector<json> events = JsonLines(itest::ReadAll(audit));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].value("event", ""), "tpm_reset");
  EXPECT_EQ(events[0].value("actor", ""), "gina");
  EXPECT_EQ(events[0].value("node_id", ""), "tpm-1");
  EXPECT_EQ(events[0].value("outcome", ""), "ok");
  EXPECT_THAT(events[0].value("detail", ""), HasSubstr("TPM replaced"));
  EXPECT_EQ(events[1].value("outcome", ""), "refused");
  EXPECT_EQ(events[1].value("source", ""), "local");
  EXPECT_TRUE(Json(Cli({"node", "show", "tpm-1", "--json"}, reader_).out)["tpm"].is_null());
}

}  // namespace
}  // namespace dpuaudit
