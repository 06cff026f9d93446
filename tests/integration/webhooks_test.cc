// Issue 15 end to end: the real dpuaudit-verifier over TLS on loopback, the
// real agent and CLI, and a real HTTPS webhook receiver
// (tests/testing/webhook_receiver.h). Decision events are delivered signed
// and at least once through the store's outbox: through failed deliveries,
// a receiver that is down for a while, duplicates (recognised by event id)
// and a verifier killed mid-outbox. Nodes that stop attesting go stale and
// are denied; a restart revives neither a stale nor a failed node; a
// sticky failure stays denied through passing reports until acknowledged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"
#include "testing/webhook_receiver.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;
using itest::VerifierProcess;
using json = nlohmann::json;

constexpr const char* kSecret = "integration-webhook-secret-0123456789abcdef";

class WebhooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-webhooks-XXXXXX";
    dir_ = mkdtemp(tmpl);
    Proc certs = Exec({"/bin/bash", kSrc + "/certs/make-test-certs.sh", dir_ + "/certs"});
    ASSERT_EQ(certs.exit_code, 0) << certs.err;
    ca_ = dir_ + "/certs/ca.pem";
    receiver_ = std::make_unique<testing::WebhookReceiver>(
        kSecret, itest::ReadAll(dir_ + "/certs/server.pem"),
        itest::ReadAll(dir_ + "/certs/server.key"));
    ASSERT_TRUE(receiver_->Start());
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/hook.secret", AsBytes(std::string(kSecret) + "\n"), 0600)
                    .ok());
    json config = {{"schema", "dpuaudit-webhooks/1"},
                   {"retry", {{"initial_seconds", 1}, {"max_seconds", 2}}},
                   {"endpoints",
                    {{{"name", "netctl"},
                      {"url", receiver_->url()},
                      {"secret_file", dir_ + "/hook.secret"},
                      {"ca_file", ca_},
                      {"timeout_ms", 2000}}}}};
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/webhooks.json", AsBytes(config.dump(2)), 0644).ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/bootstrap.token",
                                AsBytes(std::string("webhooks-test-bootstrap-token-42\n")), 0600)
                    .ok());
  }
  void TearDown() override {
    verifier_.Stop();
    receiver_->Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void StartVerifier(const std::string& stale_after = "0",
                     const std::string& policy = kSrc + "/policies/zero-trust.json",
                     bool import_refvals = true) {
    std::vector<std::string> args = {"--policy", policy,
                                     "--bootstrap-token-file", dir_ + "/bootstrap.token",
                                     "--tls-cert", dir_ + "/certs/server.pem",
                                     "--tls-key", dir_ + "/certs/server.key",
                                     "--webhooks", dir_ + "/webhooks.json",
                                     "--stale-after", stale_after};
    for (auto& f : itest::AdminFlags(dir_, &admin_token_)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader_token_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err, listen_)) << err;
    // Keep the port across restarts (the agent is configured with the URL).
    listen_ = verifier_.url().substr(std::string("https://").size());
    if (import_refvals && !imported_) {
      Proc p = Exec({kBin + "/dpuaudit", "refvals", "import", itest::kFixtureRefvals,
                     "--verifier", verifier_.url(), "--admin-token-file", admin_token_,
                     "--cacert", ca_});
      ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
      imported_ = true;
    }
  }
  std::string Key(const std::string& node) { return dir_ + "/" + node + ".key"; }
  Proc Enroll(const std::string& node) {
    return Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(), "--node-id",
                 node, "--key", Key(node), "--bootstrap-token-file", dir_ + "/bootstrap.token",
                 "--cacert", ca_});
  }
  Proc Attest(const std::string& node, const std::string& device) {
    return Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", verifier_.url(),
                 "--node-id", node, "--key", Key(node), "--device-root", Fixture(device),
                 "--cacert", ca_});
  }
  json Admission(const std::string& node) {
    Proc p = Exec({kBin + "/dpuaudit", "admit", "--verifier", verifier_.url(), "--node", node,
                   "--token-file", reader_token_, "--cacert", ca_, "--json", "--jwks",
                   itest::ExportJwks(dir_ + "/verifier.key", dir_ + "/jwks.json")});
    last_admit_out_ = p.out;
    json j = json::parse(p.out, nullptr, false);
    if (j.is_discarded()) return json{{"exit", p.exit_code}, {"raw", p.out + p.err}};
    j["exit"] = p.exit_code;
    return j;
  }
  // The accepted events of `node`, by type, in order.
  std::vector<std::string> Types(const std::string& node) {
    std::vector<std::string> out;
    for (const json& e : receiver_->accepted_events()) {
      if (e.value("node_id", "") == node) out.push_back(e.value("type", ""));
    }
    return out;
  }
  bool WaitForType(const std::string& node, const std::string& type,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    return receiver_->WaitFor(
        [&] {
          for (const std::string& t : Types(node)) {
            if (t == type) return true;
          }
          return false;
        },
        timeout);
  }
  // Polls `dpuaudit webhooks status` until nothing is pending (exit 0,
  // backlog 0), at most 30 s.
  bool WaitForEmptyOutbox() {
    for (int i = 0; i < 300; ++i) {
      Proc st = WebhooksStatus();
      json j = json::parse(st.out, nullptr, false);
      if (st.exit_code == 0 && !j.is_discarded() && j["backlog"] == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  Proc WebhooksStatus() {
    return Exec({kBin + "/dpuaudit", "webhooks", "status", "--verifier", verifier_.url(),
                 "--admin-token-file", admin_token_, "--cacert", ca_, "--json"});
  }

  std::string dir_, ca_, admin_token_, reader_token_, listen_ = "127.0.0.1:0";
  std::string last_admit_out_;  // the raw `dpuaudit admit --json` output
  bool imported_ = false;
  std::unique_ptr<testing::WebhookReceiver> receiver_;
  VerifierProcess verifier_;
};

TEST_F(WebhooksTest, SignedEventsArriveAtLeastOnceThroughFailuresAndDowntime) {
  StartVerifier();
  ASSERT_EQ(Enroll("n1").exit_code, 0);
  ASSERT_TRUE(WaitForType("n1", "node.approved"));
  // The receiver records the next three deliveries and answers 503: the
  // verifier must send the same event again (same id) until it gets a 2xx.
  receiver_->FailNext(3);
  Proc a = Attest("n1", "bf3-zero-trust");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_TRUE(WaitForType("n1", "node.admitted"));
  std::string admitted_id;
  for (const json& e : receiver_->accepted_events()) {
    if (e.value("type", "") == "node.admitted") admitted_id = e.value("event_id", "");
  }
  int copies = 0;
  for (const auto& d : receiver_->deliveries()) {
    EXPECT_TRUE(d.signature_ok) << d.body;
    if (d.event_id == admitted_id) ++copies;
  }
  EXPECT_EQ(copies, 4) << "three failed attempts, then the accepted one";
  // The payload names the decision and carries the EAR.
  json admitted = receiver_->accepted_events().back();
  EXPECT_EQ(admitted["decision"], "admit");
  EXPECT_EQ(admitted["from"], "unattested");
  EXPECT_EQ(admitted["to"], "admitted");
  EXPECT_FALSE(admitted["result"]["ear"].get<std::string>().empty());

  // The receiver has it; wait until the verifier has recorded the 2xx too
  // (else stopping the receiver below races the answer, and the event is
  // rightly sent again).
  ASSERT_TRUE(WaitForEmptyOutbox());
  // Down for a while: the deny is queued, visible as failing, and delivered
  // once the receiver is back on the same port.
  receiver_->Stop();
  ASSERT_EQ(Attest("n1", "bf3-privileged-host").exit_code, 0);  // sent; denied
  Proc st;
  for (int i = 0; i < 100; ++i) {
    st = WebhooksStatus();
    if (st.exit_code == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(st.exit_code, 1) << st.out << st.err;
  json status = json::parse(st.out);
  EXPECT_EQ(status["backlog"], 1);
  EXPECT_EQ(status["endpoints"][0]["failing"], 1);
  EXPECT_FALSE(status["stuck"][0]["last_error"].get<std::string>().empty());
  ASSERT_TRUE(receiver_->Start(receiver_->port()));
  ASSERT_TRUE(WaitForType("n1", "node.denied"));
  json denied = receiver_->accepted_events().back();
  EXPECT_EQ(denied["to"], "failed");
  EXPECT_EQ(denied["decision"], "deny");
  bool names_rule = false;
  for (const json& r : denied["result"]["failing"]) {
    if (r["rule_id"] == "host.privilege_level") names_rule = true;
  }
  EXPECT_TRUE(names_rule) << denied.dump();
  EXPECT_TRUE(WaitForEmptyOutbox());
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "webhooks-status", WebhooksStatus().out), "");
    for (const json& e : receiver_->accepted_events()) {
      EXPECT_EQ(itest::SchemaErrors(dir_, "event", e.dump()), "") << e.dump();
    }
    (void)Admission("n1");
    EXPECT_EQ(itest::SchemaErrors(dir_, "admit", last_admit_out_), "");
  }
  // Each event id accepted once, in the order the changes happened.
  EXPECT_EQ(Types("n1"),
            (std::vector<std::string>{"node.approved", "node.admitted", "node.denied"}));
}

TEST_F(WebhooksTest, VerifierKilledMidOutboxDeliversAfterRestart) {
  StartVerifier();
  ASSERT_EQ(Enroll("n1").exit_code, 0);
  ASSERT_TRUE(WaitForType("n1", "node.approved"));
  receiver_->Stop();
  ASSERT_EQ(Attest("n1", "bf3-zero-trust").exit_code, 0);
  ASSERT_EQ(Attest("n1", "bf3-nic-mode").exit_code, 0);  // sent; denied
  // SIGKILL: no flush, no goodbye. The outbox is in the store.
  verifier_.Kill();
  ASSERT_TRUE(receiver_->Start(receiver_->port()));
  StartVerifier();
  ASSERT_TRUE(WaitForType("n1", "node.denied"));
  EXPECT_EQ(Types("n1"),
            (std::vector<std::string>{"node.approved", "node.admitted", "node.denied"}));
  for (const auto& d : receiver_->deliveries()) EXPECT_TRUE(d.signature_ok);
}

TEST_F(WebhooksTest, SilentNodeGoesStaleIsDeniedAndARestartDoesNotReviveIt) {
  StartVerifier("4s");
  ASSERT_EQ(Enroll("n1").exit_code, 0);
  ASSERT_EQ(Attest("n1", "bf3-zero-trust").exit_code, 0);
  ASSERT_TRUE(WaitForType("n1", "node.admitted"));
  // The agent stops: within the TTL plus a sweep the node is stale.
  ASSERT_TRUE(WaitForType("n1", "node.stale"));
  json a = Admission("n1");
  EXPECT_EQ(a["exit"], 1) << a.dump();
  EXPECT_EQ(a.value("status", ""), "stale") << a.dump();
  EXPECT_THAT(a.value("reason", ""), HasSubstr("stale")) << a.dump();
  // A restart neither revives it nor forgets it was stale (no second event).
  verifier_.Stop();
  StartVerifier("4s");
  a = Admission("n1");
  EXPECT_EQ(a["exit"], 1) << a.dump();
  EXPECT_EQ(a.value("status", ""), "stale");
  // A fresh passing report is the only way back.
  ASSERT_EQ(Attest("n1", "bf3-zero-trust").exit_code, 0);
  a = Admission("n1");
  EXPECT_EQ(a["exit"], 0) << a.dump();
  ASSERT_TRUE(receiver_->WaitFor([&] { return Types("n1").size() >= 4; },
                                 std::chrono::seconds(20)));
  EXPECT_EQ(Types("n1"), (std::vector<std::string>{"node.approved", "node.admitted",
                                                   "node.stale", "node.admitted"}));
}

TEST_F(WebhooksTest, FailedIsNotUnreachableAndARestartDoesNotReviveAFailedNode) {
  StartVerifier("1h");
  ASSERT_EQ(Enroll("n1").exit_code, 0);
  json a = Admission("n1");
  EXPECT_EQ(a.value("status", ""), "unattested") << a.dump();
  Proc denied = Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", verifier_.url(),
                      "--node-id", "n1", "--key", Key("n1"), "--device-root",
                      Fixture("bf3-privileged-host"), "--cacert", ca_, "--json",
                      "--ear-out", dir_ + "/n1.ear.jwt"});
  ASSERT_EQ(denied.exit_code, 0) << denied.err;  // sent; denied
  json line = json::parse(denied.out, nullptr, false);
  ASSERT_FALSE(line.is_discarded()) << denied.out;
  EXPECT_EQ(line["decision"], "deny");
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "agent-attest", denied.out), "");
    const std::string jwks = itest::ExportJwks(dir_ + "/verifier.key", dir_ + "/jwks.json");
    Proc show = Exec({kBin + "/dpuaudit", "result", "show", dir_ + "/n1.ear.jwt", "--jwks", jwks,
                      "--json"});
    EXPECT_EQ(show.exit_code, 0) << show.err;
    EXPECT_EQ(itest::SchemaErrors(dir_, "result-show", show.out), "");
    EXPECT_EQ(json::parse(show.out)["signature"]["verified"], true) << show.out;
    Proc summary = Exec({kBin + "/dpuaudit", "result", "summary", dir_ + "/n1.ear.jwt",
                         "--jwks", jwks, "--json"});
    EXPECT_EQ(summary.exit_code, 0) << summary.err;
    EXPECT_EQ(itest::SchemaErrors(dir_, "result-summary", summary.out), "");
    EXPECT_EQ(json::parse(summary.out)["results"][0]["decision"], "deny") << summary.out;
  }
  a = Admission("n1");
  EXPECT_EQ(a["exit"], 1);
  EXPECT_EQ(a.value("status", ""), "failed") << a.dump();
  verifier_.Stop();
  StartVerifier("1h");
  a = Admission("n1");
  EXPECT_EQ(a["exit"], 1);
  EXPECT_EQ(a.value("status", ""), "failed") << a.dump();

  // Human output: colour only on a terminal (script(1) gives the command a
  // pty), never with NO_COLOR, never when piped; failing rules first.
  const std::string gate = kBin + "/dpuaudit admit --verifier " + verifier_.url() +
                           " --node n1 --token-file " + reader_token_ + " --cacert " + ca_ +
                           " --jwks " + dir_ + "/jwks.json";
  Proc piped = Exec({"/bin/sh", "-c", gate});
  EXPECT_EQ(piped.exit_code, 1);
  EXPECT_THAT(piped.out, HasSubstr("n1: deny (failed)"));
  EXPECT_EQ(piped.out.find('\x1b'), std::string::npos) << piped.out;
  if (Exec({"/bin/sh", "-c", "command -v script"}).exit_code != 0) {
    std::printf("note: script(1) is missing (bsdutils); the terminal case is not checked\n");
    return;
  }
  Proc tty = Exec({"/usr/bin/env", "-u", "NO_COLOR", "TERM=xterm", "script", "-qec", gate,
                   "/dev/null"});
  EXPECT_THAT(tty.out, HasSubstr("\x1b[31mdeny\x1b[0m")) << tty.out;
  Proc no_colour = Exec({"/usr/bin/env", "NO_COLOR=1", "TERM=xterm", "script", "-qec", gate,
                         "/dev/null"});
  EXPECT_THAT(no_colour.out, HasSubstr("n1: deny"));
  EXPECT_EQ(no_colour.out.find('\x1b'), std::string::npos) << no_colour.out;
}

TEST_F(WebhooksTest, StickyFailureStaysDeniedUntilAcknowledged) {
  // zero-trust with host.privilege_level sticky.
  json policy = json::parse(itest::ReadAll(kSrc + "/policies/zero-trust.json"));
  for (json& r : policy["rules"]) {
    if (r["id"] == "host.privilege_level") r["sticky"] = true;
  }
  policy["name"] = "zero-trust-sticky";
  const std::string policy_file = dir_ + "/sticky.json";
  ASSERT_TRUE(WriteFileAtomic(policy_file, AsBytes(policy.dump(2)), 0644).ok());
  StartVerifier("0", policy_file);
  ASSERT_EQ(Enroll("n1").exit_code, 0);
  ASSERT_EQ(Attest("n1", "bf3-zero-trust").exit_code, 0);
  ASSERT_EQ(Attest("n1", "bf3-privileged-host").exit_code, 0);  // sent; denied
  // Fixed and passing again, but held.
  Proc pass = Attest("n1", "bf3-zero-trust");
  json a = Admission("n1");
  EXPECT_EQ(a["exit"], 1) << a.dump() << pass.out;
  EXPECT_EQ(a.value("status", ""), "held") << a.dump();
  EXPECT_THAT(a.value("reason", ""), HasSubstr("host.privilege_level"));
  // Survives a restart too.
  verifier_.Stop();
  StartVerifier("0", policy_file);
  EXPECT_EQ(Admission("n1").value("status", ""), "held");
  Proc ack = Exec({kBin + "/dpuaudit", "node", "ack", "n1", "--by", "alice", "--reason",
                   "host re-restricted, ticket 42", "--verifier", verifier_.url(),
                   "--admin-token-file", admin_token_, "--cacert", ca_, "--json"});
  ASSERT_EQ(ack.exit_code, 0) << ack.out << ack.err;
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "node-ack", ack.out), "");
    (void)Admission("n1");  // held no more, still denied
    EXPECT_EQ(itest::SchemaErrors(dir_, "admit", last_admit_out_), "");
  }
  // Acknowledged: still denied until a fresh report passes.
  a = Admission("n1");
  EXPECT_EQ(a["exit"], 1);
  ASSERT_EQ(Attest("n1", "bf3-zero-trust").exit_code, 0);
  EXPECT_EQ(Admission("n1")["exit"], 0);
  // Nothing to acknowledge now: refused (exit 1), state unchanged.
  Proc again = Exec({kBin + "/dpuaudit", "node", "ack", "n1", "--reason", "x", "--verifier",
                     verifier_.url(), "--admin-token-file", admin_token_, "--cacert", ca_});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_THAT(again.err, HasSubstr("not held"));
  ASSERT_TRUE(receiver_->WaitFor([&] { return Types("n1").size() >= 5; },
                                 std::chrono::seconds(20)));
  EXPECT_EQ(Types("n1"), (std::vector<std::string>{"node.approved", "node.admitted",
                                                   "node.held", "node.acknowledged",
                                                   "node.admitted"}));
}

TEST_F(WebhooksTest, EventsListAndRevocationEvent) {
  StartVerifier();
  ASSERT_EQ(Enroll("n1").exit_code, 0);
  ASSERT_EQ(Attest("n1", "bf3-zero-trust").exit_code, 0);
  Proc rv = Exec({kBin + "/dpuaudit", "nodes", "revoke", "n1", "--by", "bob", "--reason",
                  "decommissioned", "--verifier", verifier_.url(), "--admin-token-file",
                  admin_token_, "--cacert", ca_});
  ASSERT_EQ(rv.exit_code, 0) << rv.err;
  Proc ev = Exec({kBin + "/dpuaudit", "events", "--node", "n1", "--json", "--verifier",
                  verifier_.url(), "--token-file", reader_token_, "--cacert", ca_});
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "events", ev.out), "");
    // The schema can fail: an event without its id does not validate.
    json broken = json::parse(ev.out);
    broken["events"][0].erase("event_id");
    EXPECT_NE(itest::SchemaErrors(dir_, "events", broken.dump()), "");
  } else {
    std::printf("note: python3-jsonschema is missing; --json outputs not validated\n");
  }
  json events = json::parse(ev.out)["events"];
  ASSERT_EQ(events.size(), 3u) << ev.out;
  EXPECT_EQ(events[2]["type"], "node.revoked");
  EXPECT_EQ(events[2]["actor"], "bob");
  EXPECT_LT(events[0]["seq"].get<int64_t>(), events[2]["seq"].get<int64_t>());
  // Bad query values are a 400 (exit 2), not a 500.
  Proc bad = Exec({kBin + "/dpuaudit", "events", "--limit", "0", "--verifier", verifier_.url(),
                   "--token-file", reader_token_, "--cacert", ca_});
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace dpuaudit
