// Denial of service and data loss (issue 12 items 9-11, 17), against the
// real dpuaudit-verifier on loopback:
//  (a) a flood of challenge requests for node X that X did not sign
//      (unsigned, signed by another key, replayed, stale) cannot spend X's
//      challenge budget: X keeps attesting and stays admitted;
//  (b) one node sending many refused and accepted reports stays within its
//      storage quota, refused reports are bounded records, another node
//      keeps attesting, and retention keeps the latest N results and every
//      decision change (serve's schedule and `dpuaudit-verifier prune`);
//  (c) expired nonces are purged on the schedule, and outstanding nonces
//      per node are capped;
//  (d) the database, -wal and -shm files are 0600.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "apps/shared/http_client.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/load_agents.h"
#include "report/challenge_proof.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using itest::ControlledVerifier;
using itest::DeviceEvidence;
using itest::SimAgent;
using itest::StoreReader;
using itest::VerifierOptions;

constexpr const char* kBootstrapToken = "storage-dos-bootstrap-token-0001";
// A well-formed nonce the verifier never issued: a signed report carrying
// it is refused after its signature verified (so it is recorded).
constexpr const char* kUnknownNonce = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

nlohmann::json Json(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 01000;  // "absent"
  return st.st_mode & 0777;
}

class StorageDosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-storage-dos-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    token_file_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(WriteFileAtomic(token_file_,
                                AsBytes(std::string(kBootstrapToken) + "\n"), 0600)
                    .ok());
    itest::AdminFlags(dir_, &admin_token_file_);
    good_ = itest::CollectDevice("bf3-zero-trust");
    bad_ = itest::CollectDevice("bf3-privileged-host");
    ASSERT_TRUE(good_ && bad_);
  }
  void TearDown() override {
    verifier_.Kill();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void Start(std::vector<std::string> extra) {
    VerifierOptions o;
    o.extra = {"--policy", itest::kSrc + "/policies/zero-trust.json",
               "--bootstrap-token-file", token_file_, "--admin-token-file",
               admin_token_file_};
    o.extra.insert(o.extra.end(), extra.begin(), extra.end());
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, o, &err)) << err;
    itest::Proc p = itest::ImportFixtureRefvals(verifier_.url(), admin_token_file_);
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  }

  std::unique_ptr<apps::HttpClient> Client() {
    apps::HttpClientOptions o;
    o.timeout = std::chrono::milliseconds(20000);
    auto c = apps::HttpClient::New(verifier_.url(), o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<SimAgent> Enrolled(const std::string& id) {
    auto a = SimAgent::New(id, good_.get());
    EXPECT_TRUE(a.ok());
    auto r = Client()->PostWithBearer("/v1/nodes", "application/json", (*a)->EnrollBody(),
                                      kBootstrapToken);
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
    return std::move(*a);
  }

  // One attestation from `device` (default: the agent's own): the decision,
  // or "" with a failure recorded.
  std::string Attest(const apps::HttpClient& c, const SimAgent& a,
                     const DeviceEvidence* device = nullptr) {
    auto ch = c.Post("/v1/challenges", "application/json", a.ChallengeBody());
    if (!ch.ok() || ch->status != 201) {
      ADD_FAILURE() << a.node_id() << " challenge: "
                    << (ch.ok() ? std::to_string(ch->status) + " " + ch->body
                                : ch.status().ToString());
      return "";
    }
    std::string nonce = Json(ch->body).value("nonce", "");
    auto jws = device ? a.SignedReportFrom(*device, nonce) : a.SignedReport(nonce);
    auto r = c.Post("/v1/reports", "application/jose", *jws);
    if (!r.ok() || r->status != 200) {
      ADD_FAILURE() << a.node_id() << " report: "
                    << (r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 300)
                               : r.status().ToString());
      return "";
    }
    return Json(r->body).value("decision", "");
  }

  std::string Admission(const std::string& node) {
    auto r = Client()->GetWithBearer("/v1/nodes/" + node + "/admission", "integration-admin-token-0001");
    return r.ok() ? Json(r->body).value("decision", "") : "";
  }

  std::string db() const { return dir_ + "/verifier.db"; }

  std::string dir_, token_file_, admin_token_file_;
  std::unique_ptr<DeviceEvidence> good_, bad_;
  ControlledVerifier verifier_;
};

// (a) Item 9: before the fix, every unsigned {"node_id": X} took a token
// from X's bucket, so this flood left X with 429 and its admission lapsed.
TEST_F(StorageDosTest, ChallengeFloodCannotSpendTheNodesBudget) {
  ASSERT_NO_FATAL_FAILURE(Start({"--challenges-per-minute", "10"}));
  auto x = Enrolled("node-x");
  auto c = Client();
  ASSERT_EQ(Attest(*c, *x), "admit");

  // What a flooder can send for node-x without node-x's key.
  auto other_key = EcPrivateKey::Generate();
  auto other = Es256Signer::New(*other_key);
  const int64_t now = std::time(nullptr);
  const std::string replayed = x->ChallengeBody();
  auto first = c->Post("/v1/challenges", "application/json", replayed);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->status, 201) << first->body;
  const std::vector<std::string> flood_bodies = {
      R"({"node_id":"node-x"})",
      *report::ChallengeRequestBody("node-x", now, **other),
      replayed,
      x->ChallengeBody(now - 3600),  // node-x's own, but stale
  };

  std::atomic<bool> stop{false};
  std::atomic<int> flood_sent{0}, flood_401{0}, flood_429{0}, flood_other{0};
  std::vector<std::thread> flooders;
  for (int t = 0; t < 3; ++t) {
    flooders.emplace_back([&, t] {
      auto fc = Client();
      for (int i = 0; !stop && i < 4000; ++i) {
        auto r = fc->Post("/v1/challenges", "application/json",
                          flood_bodies[static_cast<size_t>(i + t) % flood_bodies.size()]);
        ++flood_sent;
        if (!r.ok()) continue;
        if (r->status == 401) {
          ++flood_401;
        } else if (r->status == 429) {
          ++flood_429;
        } else {
          ++flood_other;
        }
      }
    });
  }
  // Meanwhile node-x attests 7 more times (9 challenges in all of its 10).
  int admits = 0;
  for (int i = 0; i < 7; ++i) {
    if (Attest(*c, *x) == "admit") ++admits;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  for (auto& t : flooders) t.join();
  std::cout << "[ flood    ] " << flood_sent << " forged challenge requests for node-x: "
            << flood_401 << " x 401, " << flood_429 << " x 429 (client budget), "
            << flood_other << " other; node-x: " << admits << "/7 attestations admitted\n";
  EXPECT_EQ(admits, 7);
  EXPECT_EQ(flood_other, 0);
  EXPECT_GT(flood_401 + flood_429, 100);
  EXPECT_EQ(Admission("node-x"), "admit");

  // Each refusal says why.
  auto unsigned_r = c->Post("/v1/challenges", "application/json", flood_bodies[0]);
  ASSERT_TRUE(unsigned_r.ok());
  EXPECT_TRUE(unsigned_r->status == 401 || unsigned_r->status == 429) << unsigned_r->body;
  auto replay_r = c->Post("/v1/challenges", "application/json", replayed);
  ASSERT_TRUE(replay_r.ok());
  if (replay_r->status == 401) {
    EXPECT_THAT(replay_r->body, HasSubstr("challenge proof was already used."));
  }
  // No nonce was issued to anyone but node-x's own 9 requests.
  StoreReader store(db());
  auto rows = store.Rows("SELECT count(*) FROM nonces WHERE node_id = 'node-x'");
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_LE(std::stoi(rows.at(0).at(0)), 9);
}

// (a) The refusals, one by one, on a fresh verifier (no client budget
// spent yet): precise 401s.
TEST_F(StorageDosTest, ChallengeRequestsWithoutAValidProofAreRefused) {
  ASSERT_NO_FATAL_FAILURE(Start({}));
  auto x = Enrolled("node-x");
  auto c = Client();
  auto other_key = EcPrivateKey::Generate();
  auto other = Es256Signer::New(*other_key);
  const int64_t now = std::time(nullptr);
  struct Case {
    std::string name, body, message;
  };
  std::string used = x->ChallengeBody();
  auto ok = c->Post("/v1/challenges", "application/json", used);
  ASSERT_TRUE(ok.ok());
  ASSERT_EQ(ok->status, 201) << ok->body;
  std::vector<Case> cases = {
      {"unsigned", R"({"node_id":"node-x"})", "carries no proof"},
      {"another key", *report::ChallengeRequestBody("node-x", now, **other), "is not valid"},
      {"replayed", used, "challenge proof was already used."},
      {"stale", x->ChallengeBody(now - 3600), "s from verifier time"},
      {"proof not a string", R"({"node_id":"node-x","proof":1})", "must be a string"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    auto r = c->Post("/v1/challenges", "application/json", k.body);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, k.name == "proof not a string" ? 400 : 401) << r->body;
    EXPECT_THAT(r->body, HasSubstr(k.message));
  }
}

// (b) Items 10: quota, bounded refused records, retention.
TEST_F(StorageDosTest, NoisyNodeStaysInItsQuotaAndRetentionKeepsDecisionChanges) {
  ASSERT_NO_FATAL_FAILURE(Start({"--challenges-per-minute", "0", "--reports-per-minute", "0",
                                 "--report-quota-mib", "1", "--retain-reports", "3",
                                 "--retain-days", "0", "--maintenance-interval", "1"}));
  auto noisy = Enrolled("node-noisy");
  auto quiet = Enrolled("node-quiet");
  auto c = Client();
  auto refused = noisy->SignedReport(kUnknownNonce);
  ASSERT_TRUE(refused.ok());
  const size_t report_bytes = refused->size();
  std::cout << "[ storage  ] a report is " << report_bytes << " bytes\n";
  ASSERT_GT(report_bytes, 4096u);

  int refused_answers = 0;
  for (int i = 0; i < 300; ++i) {
    auto r = c->Post("/v1/reports", "application/jose", *refused);
    ASSERT_TRUE(r.ok());
    if (r->status == 404) ++refused_answers;
    if (i % 100 == 0) EXPECT_EQ(Attest(*c, *quiet), "admit") << i;
  }
  EXPECT_EQ(refused_answers, 300);
  // Decisions admit x3, deny x2, admit x3: changes at #1, #4, #6.
  std::vector<std::string> decisions;
  for (int i = 0; i < 8; ++i) {
    decisions.push_back(Attest(*c, *noisy, i == 3 || i == 4 ? bad_.get() : nullptr));
  }
  EXPECT_EQ(decisions, (std::vector<std::string>{"admit", "admit", "admit", "deny", "deny",
                                                 "admit", "admit", "admit"}));
  EXPECT_EQ(Attest(*c, *quiet), "admit");
  EXPECT_EQ(Admission("node-noisy"), "admit");

  // Give the 1 s maintenance schedule time to run a pass after the last
  // report (it logs what it pruned).
  std::string kept;
  for (int i = 0; i < 100; ++i) {
    StoreReader store(db());
    auto rows = store.Rows(
        "SELECT group_concat(decision, ',') FROM (SELECT decision FROM results "
        "WHERE node_id = 'node-noisy' ORDER BY created_at, id)");
    kept = store.ok() && !rows.empty() ? rows[0][0] : "";
    if (kept == "admit,deny,admit,admit,admit") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(kept, "admit,deny,admit,admit,admit");

  StoreReader store(db());
  auto usage = store.Rows(
      "SELECT node_id, sum(length(jws) + length(error)), count(*), "
      "sum(accepted = 0), max(CASE WHEN accepted = 0 THEN length(jws) END), "
      "min(CASE WHEN accepted = 0 THEN received_bytes END) "
      "FROM reports GROUP BY node_id ORDER BY node_id");
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_EQ(usage.size(), 2u);
  for (const auto& u : usage) {
    std::cout << "[ storage  ] " << u[0] << ": " << u[1] << " bytes in " << u[2]
              << " report rows (" << (u[3].empty() ? "0" : u[3]) << " refused records)\n";
  }
  const auto& n = usage[0];
  ASSERT_EQ(n[0], "node-noisy");
  EXPECT_LE(std::stoll(n[1]), int64_t{1} << 20);
  // Refused records: a prefix of at most 4 KiB, the full size kept; at most
  // --retain-reports of them after retention.
  if (!n[3].empty() && n[3] != "0") {
    EXPECT_LE(std::stoll(n[4]), 4096);
    EXPECT_EQ(std::stoll(n[5]), static_cast<int64_t>(report_bytes));
    EXPECT_LE(std::stoll(n[3]), 3);
  }
  auto refused_sha = store.Rows(
      "SELECT DISTINCT sha256 FROM reports WHERE accepted = 0 AND node_id = 'node-noisy'");
  for (const auto& r : refused_sha) EXPECT_EQ(r[0], Sha256Hex(AsBytes(*refused)));
  // Every kept result still has its report's digest; only the latest 3 have
  // bodies.
  auto bodies = store.Rows(
      "SELECT count(*), sum(length(r.jws) > 0), sum(r.sha256 = s.report_jws_sha256) "
      "FROM results s JOIN reports r ON r.id = s.report_id WHERE s.node_id = 'node-noisy'");
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(bodies[0][0], "5");
  EXPECT_EQ(bodies[0][1], "3");
  EXPECT_EQ(bodies[0][2], "5");
  EXPECT_EQ(Admission("node-quiet"), "admit");

  // The same retention by command, on the stopped verifier's file.
  verifier_.Stop();
  itest::Proc p = itest::Exec({itest::kBin + "/dpuaudit-verifier", "prune", "--db", db(),
                               "--retain-reports", "1", "--retain-days", "0", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  nlohmann::json counts = Json(p.out);
  std::cout << "[ storage  ] prune --retain-reports 1: " << p.out;
  // node-noisy loses #7 (neither a change nor the latest), node-quiet all
  // but its first and latest.
  EXPECT_EQ(counts.value("results_deleted", -1), 3);
  StoreReader after(db());
  auto left = after.Rows(
      "SELECT group_concat(decision, ',') FROM (SELECT decision FROM results "
      "WHERE node_id = 'node-noisy' ORDER BY created_at, id)");
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_EQ(left.at(0).at(0), "admit,deny,admit,admit");

  // The quota alone (no retention pass): 300 more refused reports fill
  // node-noisy's 1 MiB and no more; its next accepted report still fits
  // (its own oldest records make room), and node-quiet is unaffected.
  ASSERT_NO_FATAL_FAILURE(Start({"--report-quota-mib", "1", "--reports-per-minute", "0",
                                 "--maintenance-interval", "86400"}));
  auto c2 = Client();
  for (int i = 0; i < 300; ++i) {
    auto r = c2->Post("/v1/reports", "application/jose", *refused);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->status, 404) << r->body;
  }
  EXPECT_EQ(Attest(*c2, *noisy), "admit");
  EXPECT_EQ(Attest(*c2, *quiet), "admit");
  StoreReader full(db());
  auto q = full.Rows(
      "SELECT sum(length(jws) + length(error)), sum(accepted = 0) FROM reports "
      "WHERE node_id = 'node-noisy'");
  ASSERT_TRUE(full.ok()) << full.error();
  std::cout << "[ storage  ] after 300 more refused reports with no retention pass: "
            << q.at(0).at(0) << " bytes, " << q.at(0).at(1) << " refused records\n";
  EXPECT_LE(std::stoll(q.at(0).at(0)), int64_t{1} << 20);
  EXPECT_LT(std::stoll(q.at(0).at(1)), 300);
  EXPECT_GT(std::stoll(q.at(0).at(1)), 100);
}

// (c) Item 11: nonces expire and the schedule purges them; unspent nonces
// per node are capped between purges.
TEST_F(StorageDosTest, ExpiredNoncesArePurgedOnTheSchedule) {
  ASSERT_NO_FATAL_FAILURE(Start({"--nonce-ttl", "2", "--maintenance-interval", "1",
                                 "--max-outstanding-nonces", "3"}));
  auto x = Enrolled("node-x");
  auto c = Client();
  for (int i = 0; i < 6; ++i) {
    auto r = c->Post("/v1/challenges", "application/json", x->ChallengeBody());
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->status, 201) << r->body;
  }
  auto count = [&] {
    StoreReader store(db());
    auto rows = store.Rows("SELECT count(*) FROM nonces");
    return store.ok() && !rows.empty() ? std::stoi(rows[0][0]) : -1;
  };
  int outstanding = count();
  std::cout << "[ nonces   ] 6 challenges, " << outstanding << " nonces stored (cap 3)\n";
  EXPECT_LE(outstanding, 3);
  EXPECT_GE(outstanding, 1);
  auto t0 = std::chrono::steady_clock::now();
  int left = outstanding;
  while (left != 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    left = count();
  }
  std::cout << "[ nonces   ] purged after ~"
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - t0)
                   .count()
            << " ms\n";
  EXPECT_EQ(left, 0);
  EXPECT_THAT(itest::ReadAll(verifier_.log()), HasSubstr("maintenance: purged "));
}

// (d) Item 17: store files are owner-only, and a looser existing file is
// tightened.
TEST_F(StorageDosTest, StoreFilesAre0600) {
  {
    std::ofstream(db()).flush();  // an empty file: SQLite makes it a store
  }
  ASSERT_EQ(::chmod(db().c_str(), 0644), 0);
  ASSERT_NO_FATAL_FAILURE(Start({}));
  auto x = Enrolled("node-x");
  EXPECT_EQ(Attest(*Client(), *x), "admit");
  EXPECT_EQ(Mode(db()), 0600u);
  EXPECT_EQ(Mode(db() + "-wal"), 0600u);
  EXPECT_EQ(Mode(db() + "-shm"), 0600u);
}

}  // namespace
}  // namespace dpuaudit
