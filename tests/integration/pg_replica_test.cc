// Two `dpuaudit-verifier serve` replicas on one PostgreSQL database, end to
// end (docs/architecture.md#storage): simulated agents (recorded-device
// evidence) enroll and attest through both, one replica is SIGKILLed mid-run
// and its agents fail over to the other. Every attestation acknowledged to
// an agent (a result returned) must be stored and visible through the
// surviving replica, no nonce is redeemed twice, and `audit verify` finds
// one unbroken chain. Runs in the "pg." ctest copies (the pg_server
// fixture); skipped, saying so, elsewhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/shared/http_client.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/load_agents.h"
#include "verifier/store/test_store.h"

namespace dpuaudit {
namespace {

namespace fs = std::filesystem;
using itest::ControlledVerifier;
using itest::DeviceEvidence;
using itest::SimAgent;
using itest::VerifierOptions;

constexpr const char* kBootstrapToken = "pg-replica-bootstrap-token-0001";
constexpr const char* kAdminToken = "integration-admin-token-0001";
constexpr int kAgents = 16;
constexpr int kRounds = 4;
constexpr int kThreads = 4;

nlohmann::json Json(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

struct Ack {
  std::string node_id, decision, ear_jwt, report_sha256, nonce;
};

class PgReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_POSTGRES_ONLY();
    DPA_REQUIRE_TEST_STORE(db_);
    dir_ = db_.dir().path();
    token_file_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(
        WriteFileAtomic(token_file_, AsBytes(std::string(kBootstrapToken) + "\n"), 0600).ok());
    itest::AdminFlags(dir_, &admin_token_file_);
    for (int r = 0; r < 2; ++r) fs::create_directories(ReplicaDir(r));
  }
  void TearDown() override {
    for (auto& v : replicas_) v.Kill();
  }
  std::string ReplicaDir(int r) const { return dir_ + "/replica" + std::to_string(r); }

  void StartReplica(int r) {
    VerifierOptions o;
    o.db = db_.db();
    o.key = dir_ + "/verifier.key";  // one signing key for the service
    o.extra = {"--policy",     itest::kSrc + "/policies/zero-trust.json",
               "--bootstrap-token-file", token_file_,
               "--admin-token-file",     admin_token_file_,
               "--nonce-ttl",            "600",
               "--db-pool",              "3",
               "--verifier-id",          "replica-" + std::to_string(r),
               "--checkpoint-interval",  "0"};
    std::string err;
    ASSERT_TRUE(replicas_[r].Start(ReplicaDir(r), o, &err)) << err;
  }
  std::unique_ptr<apps::HttpClient> Client(int r) {
    apps::HttpClientOptions o;
    o.timeout = std::chrono::milliseconds(20000);
    auto c = apps::HttpClient::New(replicas_[r].url(), o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // One attestation of `agent` at replica `r`: enroll (idempotent), challenge,
  // report. true with `ack` filled when a result was returned; false when
  // the replica could not be reached (it was killed); a refusal fails the
  // test.
  bool Attest(int r, const SimAgent& agent, Ack* ack) {
    auto c = Client(r);
    if (c == nullptr) return false;
    auto e = c->PostWithBearer("/v1/nodes", "application/json", agent.EnrollBody(),
                               kBootstrapToken);
    if (!e.ok()) return false;
    EXPECT_TRUE(e->status == 201 || e->status == 200) << e->status << " " << e->body;
    auto ch = c->Post("/v1/challenges", "application/json", agent.ChallengeBody());
    if (!ch.ok()) return false;
    if (ch->status != 201) {
      ADD_FAILURE() << agent.node_id() << ": challenge: " << ch->status << " " << ch->body;
      return false;
    }
    std::string nonce = Json(ch->body).value("nonce", "");
    auto jws = agent.SignedReport(nonce);
    EXPECT_TRUE(jws.ok());
    if (!jws.ok()) return false;
    auto rep = c->Post("/v1/reports", "application/jose", *jws);
    if (!rep.ok()) return false;  // killed in flight: not acknowledged
    if (rep->status != 200) {
      ADD_FAILURE() << agent.node_id() << ": report: " << rep->status << " " << rep->body;
      return false;
    }
    nlohmann::json j = Json(rep->body);
    *ack = Ack{agent.node_id(), j.value("decision", ""), j.value("ear", ""),
               Sha256Hex(AsBytes(*jws)), nonce};
    return true;
  }

  ::dpuaudit::testing::TestStoreDb db_;
  std::string dir_, token_file_, admin_token_file_;
  ControlledVerifier replicas_[2];
};

TEST_F(PgReplicaTest, AcknowledgedAttestationsSurviveAReplicaKilledMidRun) {
  ASSERT_NO_FATAL_FAILURE(StartReplica(0));
  ASSERT_NO_FATAL_FAILURE(StartReplica(1));  // migrations already applied by 0
  itest::Proc imported = itest::ImportFixtureRefvals(replicas_[0].url(), admin_token_file_);
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;

  std::vector<std::unique_ptr<DeviceEvidence>> devices;
  devices.push_back(itest::CollectDevice("bf3-zero-trust"));
  devices.push_back(itest::CollectDevice("bf3-privileged-host"));
  for (auto& d : devices) ASSERT_NE(d, nullptr);
  std::vector<std::unique_ptr<SimAgent>> agents;
  for (int i = 0; i < kAgents; ++i) {
    auto a = SimAgent::New("pg-node-" + std::to_string(i), devices[i % 2].get());
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    agents.push_back(std::move(*a));
  }

  std::mutex mu;
  std::vector<Ack> acks;
  std::atomic<bool> killed{false};
  std::atomic<int> acked{0}, failovers{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (int i = t; i < kAgents; i += kThreads) {
          // Agents alternate between the replicas; replica 1's fail over
          // to replica 0 once it is gone.
          int r = i % 2;
          Ack ack;
          bool ok = Attest(r, *agents[i], &ack);
          if (!ok && r == 1 && killed) {
            ++failovers;
            ok = Attest(0, *agents[i], &ack);
          }
          if (ok) {
            std::lock_guard<std::mutex> lock(mu);
            acks.push_back(ack);
            ++acked;
          }
        }
      }
    });
  }
  // Kill replica 1 mid-run, while requests are in flight on it.
  while (acked < kAgents && !HasFailure()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  killed = true;
  replicas_[1].Kill();
  for (auto& th : threads) th.join();
  ASSERT_FALSE(HasFailure());
  ASSERT_GE(acks.size(), static_cast<size_t>(kAgents * kRounds) - kThreads);
  EXPECT_TRUE(replicas_[0].Alive()) << itest::ReadAll(replicas_[0].log());

  // Every acknowledged result is in the database...
  std::set<std::string> nonces;
  for (const Ack& a : acks) {
    EXPECT_FALSE(a.ear_jwt.empty());
    EXPECT_EQ(db_.Int("SELECT count(*) FROM results r JOIN reports p ON p.id = r.report_id "
                      "WHERE r.ear_jwt = '" + a.ear_jwt + "' AND r.node_id = '" + a.node_id +
                      "' AND r.decision = '" + a.decision + "' AND p.sha256 = '" +
                      a.report_sha256 + "' AND p.accepted = 1"),
              1)
        << a.node_id << " report " << a.report_sha256;
    EXPECT_TRUE(nonces.insert(a.nonce).second) << "nonce " << a.nonce << " acknowledged twice";
  }
  // ...no nonce is redeemed by two accepted reports...
  EXPECT_EQ(db_.Int("SELECT count(*) FROM (SELECT nonce FROM nonces WHERE used_at IS NOT NULL "
                    "GROUP BY nonce HAVING count(*) > 1) d"),
            0);
  // ...and the surviving replica shows each node's last acknowledged
  // decision.
  std::map<std::string, std::string> last;
  for (const Ack& a : acks) last[a.node_id] = a.decision;
  auto c = Client(0);
  ASSERT_NE(c, nullptr);
  for (const auto& [node, decision] : last) {
    auto n = c->GetWithBearer("/v1/nodes/" + node, kAdminToken);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(n->status, 200) << n->body;
    EXPECT_EQ(Json(n->body)["latest"].value("decision", ""), decision) << node;
  }
  // One chain, through both replicas' writes and the kill.
  itest::Proc verify = itest::Exec({itest::kBin + "/dpuaudit-verifier", "audit", "verify",
                                    "--db", db_.db(), "--json"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_EQ(Json(verify.out).value("verified", false), true) << verify.out;
  // The operator commands read the same database.
  itest::Proc nodes = itest::Exec({itest::kBin + "/dpuaudit-verifier", "nodes", "list", "--db",
                                   db_.db(), "--json"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_EQ(Json(nodes.out)["nodes"].size(), static_cast<size_t>(kAgents)) << nodes.out;
  // The password is in neither replica's log, nor in a refusal.
  const std::string url = db_.db();
  std::string password = url.substr(url.find(':', 13) + 1, url.find('@') - url.find(':', 13) - 1);
  ASSERT_GE(password.size(), 8u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(itest::ReadAll(replicas_[r].log()), ::testing::Not(::testing::HasSubstr(password)));
  }
  std::string no_db = url.substr(0, url.rfind('/')) + "/no_such_database";
  itest::Proc refused =
      itest::Exec({itest::kBin + "/dpuaudit-verifier", "nodes", "list", "--db", no_db});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_THAT(refused.err, ::testing::HasSubstr("REDACTED"));
  EXPECT_THAT(refused.err + refused.out, ::testing::Not(::testing::HasSubstr(password)));
  std::cout << "[ pg       ] " << acks.size() << " acknowledged attestations, " << failovers
            << " fail-overs after the kill\n";
}

}  // namespace
}  // namespace dpuaudit
