// Crash safety of the verifier's store, end to end: the real
// dpuaudit-verifier (SQLite in WAL mode, synchronous=FULL) is
//  - SIGKILLed at random moments while ~300 simulated agents attest through
//    it, and restarted on the same database each time: every result a client
//    was given must be stored, no nonce may be redeemed twice, and the file
//    must pass integrity_check / foreign_key_check after every kill;
//  - run out of disk (RLIMIT_FSIZE, so writes fail with EFBIG; and, when
//    tmpfs can be mounted, a really full tmpfs, so writes fail with
//    ENOSPC): a write that does not fit must fail with a 5xx naming the
//    storage failure (never a 2xx, never a 4xx), one that fits may succeed
//    and must then be stored, the server must stay up, nothing a failed
//    request touched may be left half-written (a spent nonce without its
//    result, a node left pending by a failed token enrollment), and once
//    space is back everything acknowledged is intact and usable.
// Assertions hold for every kill timing; only the timing is random (seeded,
// the seed printed; DPUAUDIT_CRASH_SEED replays one). Scale with
// DPUAUDIT_CRASH_AGENTS (default 300) and DPUAUDIT_CRASH_KILLS (default 6).
#include <errno.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/shared/http_client.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/load_agents.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using itest::ControlledVerifier;
using itest::DeviceEvidence;
using itest::SimAgent;
using itest::StoreReader;
using itest::VerifierOptions;

constexpr int kClientThreads = 4;
// Rounds every agent completes; agents keep attesting (up to kMaxRounds)
// until the last kill, so the kills always land under load.
constexpr int kTargetRounds = 3;
constexpr int kMaxRounds = 10;
// One challenge per agent per 1.1 s at most: well inside the verifier's
// default 60 challenges / 60 reports per node and minute.
constexpr auto kAgentPacing = std::chrono::milliseconds(1100);
constexpr auto kLoadDeadline = std::chrono::seconds(240);

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::atoi(v);
}

nlohmann::json Json(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

std::string Brief(const apps::HttpResponse& r) {
  return "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 300);
}

// One acknowledged attestation: what the client was told.
struct Ack {
  std::string node_id;
  std::string decision;
  std::string ear_jwt;
  std::string report_jws;
  std::string report_sha256;
  std::string nonce;
};

class CrashSafetyBase : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-crash-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    token_file_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(WriteFileAtomic(token_file_,
                                AsBytes(std::string(kBootstrapToken) + "\n"),
                                0600)
                    .ok());
    itest::AdminFlags(dir_, &admin_token_file_);
  }

  void TearDown() override {
    verifier_.Kill();
    if (!mounted_.empty()) umount2(mounted_.c_str(), MNT_DETACH);
    if (!HasFailure()) {
      fs::remove_all(dir_);
    } else {
      std::cout << "[ crash    ] kept " << dir_ << " for inspection\n";
    }
  }

  static constexpr const char* kBootstrapToken =
      "crash-safety-bootstrap-token-0001";

  // Flags every verifier in these tests runs with. Nonces live 10 minutes so
  // that no outcome depends on how slow a loaded machine is.
  std::vector<std::string> BaseFlags() const {
    return {"--policy",
            itest::kSrc + "/policies/zero-trust.json",
            "--bootstrap-token-file",
            token_file_,
            "--admin-token-file",
            admin_token_file_,
            "--nonce-ttl",
            "600"};
  }

  void StartVerifier(const VerifierOptions& o) {
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, o, &err)) << err;
  }

  void ImportRefvals() {
    itest::Proc p =
        itest::ImportFixtureRefvals(verifier_.url(), admin_token_file_);
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  }

  std::unique_ptr<apps::HttpClient> Client() {
    apps::HttpClientOptions o;
    o.timeout = std::chrono::milliseconds(20000);
    auto c = apps::HttpClient::New(verifier_.url(), o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // The database the verifier just left behind (killed or stopped) must be
  // sound: integrity_check "ok" and no foreign key violated.
  void ExpectSoundDatabase(const std::string& db_path,
                           const std::string& when) {
    StoreReader db(db_path);
    ASSERT_TRUE(db.ok()) << when << ": " << db.error();
    EXPECT_EQ(db.IntegrityCheck(), "ok") << when;
    EXPECT_EQ(db.ForeignKeyCheck(), "") << when;
  }

  // Enrolls `agent` with the bootstrap token and attests once; returns what
  // the client was acknowledged.
  void EnrollAndAttest(const apps::HttpClient& c, const SimAgent& agent,
                       Ack* ack) {
    auto e = c.PostWithBearer("/v1/nodes", "application/json",
                              agent.EnrollBody(), kBootstrapToken);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_EQ(e->status, 201) << Brief(*e);
    ASSERT_EQ(Json(e->body)["state"], "approved") << e->body;
    std::string nonce;
    ASSERT_NO_FATAL_FAILURE(nonce = Challenge(c, agent));
    auto jws = agent.SignedReport(nonce);
    ASSERT_TRUE(jws.ok()) << jws.status().ToString();
    auto r = c.Post("/v1/reports", "application/jose", *jws);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << Brief(*r);
    nlohmann::json j = Json(r->body);
    *ack = Ack{agent.node_id(),          j.value("decision", ""),
               j.value("ear", ""),       *jws,
               Sha256Hex(AsBytes(*jws)), nonce};
  }

  std::string Challenge(const apps::HttpClient& c, const SimAgent& agent) {
    auto r =
        c.Post("/v1/challenges", "application/json", agent.ChallengeBody());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return "";
    EXPECT_EQ(r->status, 201) << Brief(*r);
    return Json(r->body).value("nonce", "");
  }

  // Every acknowledged result is stored: the EAR the client got, for the
  // same node and decision, appraising an accepted report with the digest
  // of the bytes the client sent, bound to the nonce it was challenged with.
  void ExpectAcknowledgedStored(StoreReader& db, const std::vector<Ack>& acks) {
    std::map<std::string, std::vector<std::string>> by_ear;
    for (auto& row : db.Rows("SELECT r.ear_jwt, r.node_id, r.decision, "
                             "r.report_jws_sha256, p.sha256, "
                             "p.accepted, p.node_id FROM results r JOIN "
                             "reports p ON p.id = r.report_id")) {
      by_ear[row[0]] = row;
    }
    ASSERT_TRUE(db.ok()) << db.error();
    int missing = 0;
    for (const Ack& a : acks) {
      auto it = by_ear.find(a.ear_jwt);
      if (it == by_ear.end()) {
        if (++missing <= 5)
          ADD_FAILURE() << "acknowledged result of " << a.node_id << " (report "
                        << a.report_sha256 << ") is not stored";
        continue;
      }
      const auto& row = it->second;
      EXPECT_EQ(row[1], a.node_id);
      EXPECT_EQ(row[2], a.decision) << a.node_id;
      EXPECT_EQ(row[3], a.report_sha256) << a.node_id;
      EXPECT_EQ(row[4], a.report_sha256) << a.node_id;
      EXPECT_EQ(row[5], "1")
          << a.node_id << ": the report of an acknowledged result is not "
          << "marked accepted";
      EXPECT_EQ(row[6], a.node_id);
      nlohmann::json ear = itest::UnverifiedPayload(a.ear_jwt);
      EXPECT_EQ(ear["dpuaudit"].value("report_sha256", ""), a.report_sha256)
          << a.node_id;
      EXPECT_EQ(ear.value("eat_nonce", ""), a.nonce) << a.node_id;
    }
    EXPECT_EQ(missing, 0) << missing << " of " << acks.size()
                          << " acknowledged results are missing";
  }

  // Nothing is half-written: every accepted report has exactly one result
  // and every result an accepted report; no nonce is redeemed by two
  // accepted reports; with `spent_needs_result`, every consumed nonce
  // belongs to a stored accepted report (so, by the above, to a result).
  void ExpectNoHalfWrites(StoreReader& db, const std::string& when,
                          bool spent_needs_result) {
    auto lonely = db.Rows(
        "SELECT p.id, p.node_id FROM reports p WHERE p.accepted = 1 AND "
        "(SELECT count(*) FROM results r WHERE r.report_id = p.id) != 1");
    EXPECT_TRUE(lonely.empty())
        << when << ": " << lonely.size()
        << " accepted reports without exactly one result, first "
        << (lonely.empty() ? "" : lonely[0][1]);
    auto orphans = db.Rows(
        "SELECT r.id FROM results r JOIN reports p ON p.id = r.report_id "
        "WHERE p.accepted != 1");
    EXPECT_TRUE(orphans.empty()) << when << ": results of reports not accepted";
    std::map<std::string, int> redeemed;
    for (auto& row : db.Rows("SELECT jws FROM reports WHERE accepted = 1")) {
      ++redeemed[itest::UnverifiedPayload(row[0]).value("nonce", "")];
    }
    EXPECT_EQ(redeemed.count(""), 0u)
        << when << ": an accepted report without a nonce";
    for (const auto& [nonce, n] : redeemed) {
      EXPECT_EQ(n, 1) << when << ": nonce " << nonce << " redeemed by " << n
                      << " accepted reports";
    }
    int consumed_without_result = 0;
    std::vector<std::vector<std::string>> used;
    if (spent_needs_result) {
      used = db.Rows(
          "SELECT nonce, node_id FROM nonces WHERE used_at IS NOT NULL");
    }
    for (auto& row : used) {
      if (redeemed.count(row[0]) == 0 && ++consumed_without_result <= 5) {
        ADD_FAILURE() << when << ": nonce " << row[0] << " of " << row[1]
                      << " is consumed but no stored result redeemed it";
      }
    }
    EXPECT_EQ(consumed_without_result, 0) << when;
    ASSERT_TRUE(db.ok()) << db.error();
  }

  std::string dir_, token_file_, admin_token_file_, mounted_;
  ControlledVerifier verifier_;
};

// --- Full disk --------------------------------------------------------------

// Where the next write to `db_path`-wal goes: just past the last valid frame.
// The WAL header (https://www.sqlite.org/fileformat2.html §4.1) gives the
// page size (big-endian u32 at offset 8); the WAL-index header at the start
// of the -shm file (§4.5, native byte order) gives mxFrame, the last valid
// frame (u32 at offset 16). Frames are a 24-byte header and one page, after
// the 32-byte WAL header. Read with no writer running and after a reader
// has opened the file (which rebuilds the -shm after a crash).
struct WalEnd {
  uint64_t page_size = 0;
  uint64_t frames = 0;
  uint64_t frame_size() const { return page_size + 24; }
  uint64_t end() const { return 32 + frames * frame_size(); }
};

WalEnd ReadWalEnd(const std::string& db_path) {
  WalEnd w;
  std::string wal = itest::ReadAll(db_path + "-wal");
  std::string shm = itest::ReadAll(db_path + "-shm");
  if (wal.size() < 32 || shm.size() < 48) return w;
  for (size_t i = 8; i < 12; ++i)
    w.page_size = w.page_size << 8 | static_cast<uint8_t>(wal[i]);
  uint32_t mx = 0;
  std::memcpy(&mx, shm.data() + 16, sizeof(mx));
  w.frames = mx;
  return w;
}

// The nodes, results and challenges in place before the disk fills, and
// what was attempted while it was full.
struct FullDiskState {
  std::vector<std::unique_ptr<DeviceEvidence>> devices;
  std::vector<std::unique_ptr<SimAgent>> agents;
  // Acknowledged results.
  std::vector<Ack> acks;
  // Acknowledged challenges, one per agent, for reports sent while full.
  std::vector<std::string> spare_nonces;
  // Acknowledged while short of space: nonces, and nodes with their state.
  std::vector<std::string> acked_nonces;
  std::map<std::string, std::string> acked_nodes;
  // Refused while short of space.
  std::set<std::string> refused_report_shas;
  std::vector<std::string> refused_nodes;
  // Every answer, e.g. "room0halfframes: POST /v1/reports (full-0) -> 503".
  std::vector<std::string> answers;
};

class CrashSafetyTest : public CrashSafetyBase {
 protected:
  // Enrolls four agents, attests each once and challenges each once more;
  // then SIGKILLs the verifier with nothing in flight.
  void PrepareBeforeFull(const VerifierOptions& o, FullDiskState* s) {
    ASSERT_NO_FATAL_FAILURE(StartVerifier(o));
    ASSERT_NO_FATAL_FAILURE(ImportRefvals());
    s->devices.push_back(itest::CollectDevice("bf3-zero-trust"));
    s->devices.push_back(itest::CollectDevice("bf3-privileged-host"));
    ASSERT_TRUE(s->devices[0] && s->devices[1]);
    auto c = Client();
    for (int i = 0; i < 4; ++i) {
      auto a = SimAgent::New("full-" + std::to_string(i),
                             s->devices[i == 3 ? 1 : 0].get());
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      s->agents.push_back(std::move(*a));
      Ack ack;
      ASSERT_NO_FATAL_FAILURE(EnrollAndAttest(*c, *s->agents.back(), &ack));
      s->acks.push_back(ack);
    }
    for (auto& a : s->agents) {
      std::string nonce;
      ASSERT_NO_FATAL_FAILURE(nonce = Challenge(*c, *a));
      ASSERT_FALSE(nonce.empty());
      s->spare_nonces.push_back(nonce);
    }
    verifier_.Kill();
    ASSERT_NO_FATAL_FAILURE(
        ExpectSoundDatabase(o.db, "before the disk filled"));
  }

  // The answer to a write while space is short: a 2xx (true; the caller
  // checks it was stored; a failure when `must_fail`) or a 5xx with our
  // JSON error body naming the storage failure (false). Anything else (a
  // 4xx, no answer) fails the test.
  bool AcknowledgedElseStorageFailure(const StatusOr<apps::HttpResponse>& r,
                                      const std::string& what, bool must_fail,
                                      FullDiskState* s) {
    if (!r.ok()) {
      ADD_FAILURE() << what << ": no answer (" << r.status().ToString() << ")";
      return false;
    }
    s->answers.push_back(what + " -> " + std::to_string(r->status));
    if (r->status >= 200 && r->status < 300) {
      EXPECT_FALSE(must_fail)
          << what << ": acknowledged with no space to store it: " << Brief(*r);
      return true;
    }
    EXPECT_GE(r->status, 500) << what << ": " << Brief(*r);
    EXPECT_LE(r->status, 599) << what << ": " << Brief(*r);
    nlohmann::json j = Json(r->body);
    bool body = j.contains("error") && j["error"].is_object();
    EXPECT_TRUE(body) << what << ": " << r->body;
    if (body) {
      EXPECT_FALSE(j["error"].value("code", "").empty())
          << what << ": " << r->body;
      EXPECT_THAT(j["error"].value("message", ""), HasSubstr("sqlite:"))
          << what;
    }
    return false;
  }

  // With the verifier short of space: a report (tens of KiB) never fits and
  // is refused; challenges and enrollments (a page or two) are refused, or,
  // when `no_room` is false, may be acknowledged and then must be stored.
  // Requests that write nothing are answered as usual; the server stays up.
  void WriteRequestsWhileFull(const std::string& phase, bool no_room,
                              FullDiskState* s) {
    auto c = Client();
    auto ch = c->Post("/v1/challenges", "application/json",
                      s->agents[0]->ChallengeBody());
    if (AcknowledgedElseStorageFailure(
            ch,
            phase + ": POST /v1/challenges (" + s->agents[0]->node_id() + ")",
            no_room, s)) {
      s->acked_nonces.push_back(Json(ch->body).value("nonce", ""));
    }
    for (size_t i = 0; i < s->agents.size(); ++i) {
      auto jws = s->agents[i]->SignedReport(s->spare_nonces[i]);
      ASSERT_TRUE(jws.ok()) << jws.status().ToString();
      s->refused_report_shas.insert(Sha256Hex(AsBytes(*jws)));
      AcknowledgedElseStorageFailure(
          c->Post("/v1/reports", "application/jose", *jws),
          phase + ": POST /v1/reports (" + s->agents[i]->node_id() + ")",
          /*must_fail=*/true, s);
    }
    for (bool with_token : {true, false}) {
      auto late =
          SimAgent::New("late-" + phase + (with_token ? "" : "-pending"),
                        s->devices[0].get());
      ASSERT_TRUE(late.ok());
      auto r = c->PostWithBearer("/v1/nodes", "application/json",
                                 (*late)->EnrollBody(),
                                 with_token ? kBootstrapToken : "");
      if (AcknowledgedElseStorageFailure(
              r, phase + ": POST /v1/nodes (" + (*late)->node_id() + ")",
              no_room, s)) {
        s->acked_nodes[(*late)->node_id()] = Json(r->body).value("state", "");
      } else {
        s->refused_nodes.push_back((*late)->node_id());
      }
    }
    // Nothing to write: still answered.
    auto again = c->PostWithBearer("/v1/nodes", "application/json",
                                   s->agents[1]->EnrollBody(), kBootstrapToken);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->status, 200)
        << phase << ": idempotent re-enrollment: " << Brief(*again);
    auto node = c->GetWithBearer("/v1/nodes/" + s->agents[0]->node_id(),
                                 "integration-admin-token-0001");
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    EXPECT_EQ(node->status, 200) << phase << ": " << Brief(*node);
    EXPECT_EQ(Json(node->body)["latest"].value("decision", ""),
              s->acks[0].decision);
    auto health = c->Get("/healthz");
    ASSERT_TRUE(health.ok());
    EXPECT_EQ(health->status, 200);
    EXPECT_TRUE(verifier_.Alive())
        << phase << ": the verifier died: " << itest::ReadAll(verifier_.log());
  }

  // What a refused request touched is absent: no row of a refused report,
  // no refused node, every spare nonce still unspent, and nothing
  // half-written anywhere; what was acknowledged is stored.
  void ExpectNothingFromRefusedRequests(const std::string& db_path,
                                        const std::string& when,
                                        FullDiskState* s) {
    ASSERT_NO_FATAL_FAILURE(ExpectSoundDatabase(db_path, when));
    StoreReader db(db_path);
    ASSERT_TRUE(db.ok()) << db.error();
    for (const std::string& sha : s->refused_report_shas) {
      EXPECT_TRUE(
          db.Rows("SELECT id FROM reports WHERE sha256 = ?1", {sha}).empty())
          << when << ": a report refused for lack of space is stored (" << sha
          << ")";
    }
    for (const std::string& id : s->refused_nodes) {
      auto row = db.Rows("SELECT state FROM nodes WHERE node_id = ?1", {id});
      EXPECT_TRUE(row.empty())
          << when << ": node " << id << " was refused for lack of "
          << "space but is stored as " << (row.empty() ? "" : row[0][0]);
    }
    for (const auto& [id, state] : s->acked_nodes) {
      auto row = db.Rows("SELECT state FROM nodes WHERE node_id = ?1", {id});
      ASSERT_EQ(row.size(), 1u)
          << when << ": acknowledged enrollment of " << id << " is not stored";
      EXPECT_EQ(row[0][0], state) << when << ": " << id;
    }
    for (const std::string& nonce : s->acked_nonces) {
      auto row = db.Rows("SELECT used_at IS NULL FROM nonces WHERE nonce = ?1",
                         {nonce});
      ASSERT_EQ(row.size(), 1u)
          << when << ": acknowledged challenge " << nonce << " is not stored";
      EXPECT_EQ(row[0][0], "1") << when << ": " << nonce;
    }
    for (size_t i = 0; i < s->spare_nonces.size(); ++i) {
      auto row = db.Rows("SELECT used_at IS NULL FROM nonces WHERE nonce = ?1",
                         {s->spare_nonces[i]});
      ASSERT_EQ(row.size(), 1u) << when << ": acknowledged challenge of "
                                << s->agents[i]->node_id() << " is gone";
      EXPECT_EQ(row[0][0], "1")
          << when << ": the nonce of " << s->agents[i]->node_id()
          << " is spent, but its report was refused";
    }
    ExpectAcknowledgedStored(db, s->acks);
    ExpectNoHalfWrites(db, when, /*spent_needs_result=*/true);
  }

  // Space back: the verifier starts on the same file, everything
  // acknowledged before is intact, and the challenges issued before the
  // disk filled still redeem (once).
  void ExpectRecovered(const VerifierOptions& o, FullDiskState* s) {
    ASSERT_NO_FATAL_FAILURE(StartVerifier(o));
    auto c = Client();
    for (size_t i = 0; i < s->agents.size(); ++i) {
      auto jws = s->agents[i]->SignedReport(s->spare_nonces[i]);
      ASSERT_TRUE(jws.ok());
      auto r = c->Post("/v1/reports", "application/jose", *jws);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->status, 200) << s->agents[i]->node_id() << ": " << Brief(*r);
      nlohmann::json j = Json(r->body);
      s->acks.push_back(Ack{s->agents[i]->node_id(), j.value("decision", ""),
                            j.value("ear", ""), *jws, Sha256Hex(AsBytes(*jws)),
                            s->spare_nonces[i]});
      auto replay = c->Post("/v1/reports", "application/jose", *jws);
      ASSERT_TRUE(replay.ok());
      EXPECT_EQ(replay->status, 409) << Brief(*replay);
    }
    auto late = SimAgent::New("late-after-recovery", s->devices[0].get());
    ASSERT_TRUE(late.ok());
    Ack ack;
    ASSERT_NO_FATAL_FAILURE(EnrollAndAttest(*c, **late, &ack));
    s->acks.push_back(ack);
    verifier_.Stop();
    ASSERT_NO_FATAL_FAILURE(ExpectSoundDatabase(o.db, "after recovery"));
    StoreReader db(o.db);
    ASSERT_TRUE(db.ok()) << db.error();
    ExpectAcknowledgedStored(db, s->acks);
    ExpectNoHalfWrites(db, "after recovery", /*spent_needs_result=*/true);
  }

  void PrintAnswers(const FullDiskState& s) {
    std::cout << "[ crash    ] answers while short of space:";
    for (const auto& a : s.answers) std::cout << "\n[ crash    ]   " << a;
    std::cout << "\n";
  }
};

// --- SIGKILL under load -----------------------------------------------------

struct LoadStats {
  std::atomic<int> challenges_acked{0};
  std::atomic<int> reports_acked{0};
  std::atomic<int> transport_errors{0};  // connection refused / reset / timeout
  std::atomic<int> server_errors{0};     // 5xx answers
  std::mutex mu;
  std::vector<Ack> acks;
  std::vector<std::string> unexpected;  // anything but 2xx, 5xx or no answer
};

struct AgentProgress {
  int acked = 0;
  bool failed = false;
  Clock::time_point next_at{};
};

// One attestation round for `agent`: challenge, sign, submit. A transport
// error or a 5xx ends the round (the next one fetches a new challenge).
void AttestOnce(const apps::HttpClient& c, const SimAgent& agent,
                AgentProgress& p, LoadStats& stats) {
  auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(stats.mu);
    stats.unexpected.push_back(agent.node_id() + ": " + what);
    p.failed = true;
  };
  auto ch = c.Post("/v1/challenges", "application/json", agent.ChallengeBody());
  if (!ch.ok()) {
    ++stats.transport_errors;
    return;
  }
  if (ch->status >= 500) {
    ++stats.server_errors;
    return;
  }
  if (ch->status != 201) return fail("challenge: " + Brief(*ch));
  ++stats.challenges_acked;
  std::string nonce = Json(ch->body).value("nonce", "");
  auto jws = agent.SignedReport(nonce);
  if (!jws.ok()) return fail("signing: " + jws.status().ToString());
  auto r = c.Post("/v1/reports", "application/jose", *jws);
  if (!r.ok()) {
    ++stats.transport_errors;
    return;
  }
  if (r->status >= 500) {
    ++stats.server_errors;
    return;
  }
  if (r->status != 200) return fail("report: " + Brief(*r));
  nlohmann::json j = Json(r->body);
  Ack a{agent.node_id(),          j.value("decision", ""),
        j.value("ear", ""),       *jws,
        Sha256Hex(AsBytes(*jws)), nonce};
  if (a.decision.empty() || a.ear_jwt.empty())
    return fail("report: " + Brief(*r));
  ++stats.reports_acked;
  ++p.acked;
  std::lock_guard<std::mutex> lock(stats.mu);
  stats.acks.push_back(std::move(a));
}

TEST_F(CrashSafetyTest, SigkillUnderLoadLosesNothingAcknowledged) {
  const int n_agents = EnvInt("DPUAUDIT_CRASH_AGENTS", 300);
  const int n_kills = EnvInt("DPUAUDIT_CRASH_KILLS", 6);
  ASSERT_GT(n_agents, 0);
  ASSERT_GT(n_kills, 0);
  const uint64_t seed =
      std::getenv("DPUAUDIT_CRASH_SEED") != nullptr
          ? std::strtoull(std::getenv("DPUAUDIT_CRASH_SEED"), nullptr, 10)
          : std::random_device{}();
  std::cout << "[ crash    ] seed " << seed << " (DPUAUDIT_CRASH_SEED=" << seed
            << " replays the kill timing), " << n_agents << " agents, "
            << n_kills << " kills\n";
  RecordProperty("seed", std::to_string(seed));

  const int port = itest::FreeLoopbackPort();
  ASSERT_NE(port, 0);
  VerifierOptions opts;
  opts.listen = "127.0.0.1:" + std::to_string(port);
  opts.extra = BaseFlags();
  const std::string db_path = dir_ + "/verifier.db";
  ASSERT_NO_FATAL_FAILURE(StartVerifier(opts));
  ASSERT_NO_FATAL_FAILURE(ImportRefvals());

  // Three in four agents report the zero-trust device (admit), one in four
  // the privileged-host device (deny), so both decisions are exercised.
  auto admit_device = itest::CollectDevice("bf3-zero-trust");
  auto deny_device = itest::CollectDevice("bf3-privileged-host");
  ASSERT_TRUE(admit_device && deny_device);
  std::vector<std::unique_ptr<SimAgent>> agents;
  for (int i = 0; i < n_agents; ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "crash-%04d", i);
    auto a =
        SimAgent::New(id, i % 4 == 3 ? deny_device.get() : admit_device.get());
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    agents.push_back(std::move(*a));
  }

  // Enroll everyone (bootstrap token: approved at once), a few threads.
  {
    std::mutex mu;
    std::vector<std::string> errors;
    std::vector<std::jthread> enrollers;
    for (int t = 0; t < kClientThreads; ++t) {
      enrollers.emplace_back([&, t] {
        auto c = Client();
        for (size_t i = static_cast<size_t>(t); i < agents.size();
             i += kClientThreads) {
          auto r = c->PostWithBearer("/v1/nodes", "application/json",
                                     agents[i]->EnrollBody(), kBootstrapToken);
          if (!r.ok() || r->status != 201 ||
              Json(r->body)["state"] != "approved") {
            std::lock_guard<std::mutex> lock(mu);
            errors.push_back(agents[i]->node_id() + ": " +
                             (r.ok() ? Brief(*r) : r.status().ToString()));
          }
        }
      });
    }
    enrollers.clear();  // joins
    ASSERT_TRUE(errors.empty())
        << errors.size() << " enrollments failed, first: " << errors[0];
  }

  // The load: each client thread cycles over its share of the agents.
  LoadStats stats;
  std::vector<AgentProgress> progress(agents.size());
  std::atomic<bool> kills_done{false};
  std::atomic<bool> timed_out{false};
  const auto deadline = Clock::now() + kLoadDeadline;
  const std::string url = verifier_.url();
  std::vector<std::jthread> clients;
  for (int t = 0; t < kClientThreads; ++t) {
    clients.emplace_back([&, t](std::stop_token stop) {
      apps::HttpClientOptions o;
      o.timeout = std::chrono::milliseconds(20000);
      auto c = apps::HttpClient::New(url, o);
      if (!c.ok()) return;
      while (!stop.stop_requested()) {
        if (Clock::now() > deadline) {
          timed_out = true;
          return;
        }
        bool any_left = false, worked = false;
        for (size_t i = static_cast<size_t>(t); i < agents.size();
             i += kClientThreads) {
          AgentProgress& p = progress[i];
          bool wanted =
              p.acked < kTargetRounds || (!kills_done && p.acked < kMaxRounds);
          if (p.failed || !wanted) continue;
          any_left = true;
          if (Clock::now() < p.next_at) continue;
          p.next_at = Clock::now() + kAgentPacing;
          AttestOnce(**c, *agents[i], p, stats);
          worked = true;
          if (stop.stop_requested()) return;
        }
        if (!any_left) return;
        if (!worked) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }

  // The crashes: SIGKILL 50-400 ms into the load, check the file the dead
  // process left, restart on the same file and port.
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> delay_ms(50, 400);
  int kills = 0;
  for (int k = 0; k < n_kills; ++k) {
    int d = delay_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(d));
    verifier_.Kill();
    ++kills;
    ASSERT_NO_FATAL_FAILURE(ExpectSoundDatabase(
        db_path, "after kill " + std::to_string(kills) + " (" +
                     std::to_string(d) + " ms after start)"));
    ASSERT_NO_FATAL_FAILURE(StartVerifier(opts));
    ASSERT_EQ(verifier_.url(), url);
  }
  kills_done = true;
  for (auto& t : clients) t.join();  // every agent finishes its rounds
  ASSERT_FALSE(timed_out) << "the load did not finish within "
                          << kLoadDeadline.count() << " s; log "
                          << verifier_.log();
  {
    std::lock_guard<std::mutex> lock(stats.mu);
    EXPECT_TRUE(stats.unexpected.empty())
        << stats.unexpected.size()
        << " unexpected answers, first: " << stats.unexpected[0];
  }
  ASSERT_GE(stats.acks.size(), static_cast<size_t>(n_agents) * kTargetRounds);

  // (b) Every acknowledged report, resubmitted byte for byte, is a replay.
  std::atomic<int> not_replays{0};
  {
    std::vector<std::string> errors;
    std::mutex mu;
    std::vector<std::jthread> resubmitters;
    for (int t = 0; t < kClientThreads; ++t) {
      resubmitters.emplace_back([&, t] {
        auto c = Client();
        for (size_t i = static_cast<size_t>(t); i < stats.acks.size();
             i += kClientThreads) {
          const Ack& a = stats.acks[i];
          StatusOr<apps::HttpResponse> r = UnavailableError("not sent");
          // Rate limited (429) only if this machine is very slow; wait it out.
          for (int attempt = 0; attempt < 5; ++attempt) {
            r = c->Post("/v1/reports", "application/jose", a.report_jws);
            if (!r.ok() || r->status != 429) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(1100));
          }
          bool replay = r.ok() && r->status == 409 &&
                        Json(r->body)["error"].value("message", "") ==
                            "nonce already used.";
          if (!replay) {
            ++not_replays;
            std::lock_guard<std::mutex> lock(mu);
            errors.push_back(a.node_id + ": " +
                             (r.ok() ? Brief(*r) : r.status().ToString()));
          }
        }
      });
    }
    resubmitters.clear();
    EXPECT_TRUE(errors.empty())
        << errors.size() << " resubmitted reports were not refused "
        << "as replays, first: " << errors[0];
  }

  verifier_.Stop();
  ExpectSoundDatabase(db_path, "after the final stop");
  StoreReader db(db_path);
  ASSERT_TRUE(db.ok()) << db.error();
  // (a) every acknowledged result is stored as it was acknowledged.
  ExpectAcknowledgedStored(db, stats.acks);
  // (b) in the file: each acknowledged nonce is spent, and no nonce is
  // redeemed by two accepted reports.
  for (const Ack& a : stats.acks) {
    auto used = db.Rows(
        "SELECT used_at IS NOT NULL FROM nonces WHERE nonce = ?1", {a.nonce});
    ASSERT_EQ(used.size(), 1u) << a.node_id;
    EXPECT_EQ(used[0][0], "1") << a.node_id << ": acknowledged nonce not spent";
  }
  auto accepted = db.Rows("SELECT count(*) FROM reports WHERE accepted = 1");
  ASSERT_EQ(accepted.size(), 1u);
  ExpectNoHalfWrites(db, "after the final stop", /*spent_needs_result=*/true);

  std::cout << "[ crash    ] kills/restarts: " << kills << "/" << kills
            << "; acknowledged: " << stats.reports_acked
            << " reports (results), " << stats.challenges_acked
            << " challenges; interrupted: " << stats.transport_errors
            << " requests without an answer, " << stats.server_errors
            << " answered 5xx; accepted reports stored: " << accepted[0][0]
            << "; replays refused: "
            << stats.acks.size() - static_cast<size_t>(not_replays.load())
            << "/" << stats.acks.size() << "\n";
  RecordProperty("kills", kills);
  RecordProperty("acknowledged", stats.reports_acked.load());
  RecordProperty("interrupted",
                 stats.transport_errors.load() + stats.server_errors.load());
}

// RLIMIT_FSIZE stands in for a full disk: a write past the limit fails with
// EFBIG (SIGXFSZ ignored), like a write that finds no free block. The limit
// is set at the end of the WAL (no room at all: every write fails), then
// 1.5, 2.5 and 3.5 WAL frames further (room for a small transaction, never
// for a report).
TEST_F(CrashSafetyTest, FullDiskFailsWith5xxAndWritesNothingHalf) {
  VerifierOptions o;
  o.db = dir_ + "/verifier.db";
  o.extra = BaseFlags();
  FullDiskState s;
  ASSERT_NO_FATAL_FAILURE(PrepareBeforeFull(o, &s));
  for (uint64_t half_frames : {0, 3, 5, 7}) {
    WalEnd wal = ReadWalEnd(o.db);
    ASSERT_GT(wal.page_size, 0u) << "no WAL left by the killed verifier";
    // The -shm file (32 KiB) must fit under the same limit.
    ASSERT_GE(wal.end(), 32768u);
    const std::string phase =
        "room" + std::to_string(half_frames) + "halfframes";
    VerifierOptions full = o;
    full.file_size_limit = wal.end() + half_frames * wal.frame_size() / 2;
    ASSERT_NO_FATAL_FAILURE(StartVerifier(full));
    ASSERT_NO_FATAL_FAILURE(
        WriteRequestsWhileFull(phase, half_frames == 0, &s));
    verifier_.Kill();
    ASSERT_NO_FATAL_FAILURE(ExpectNothingFromRefusedRequests(
        o.db, "after " + phase + " (EFBIG)", &s));
  }
  PrintAnswers(s);
  ASSERT_NO_FATAL_FAILURE(ExpectRecovered(o, &s));
}

// A really full file system: a tmpfs filled to its last byte, so writes fail
// with ENOSPC. Needs root (mount); skipped otherwise.
TEST_F(CrashSafetyTest, FullTmpfsFailsWith5xxAndWritesNothingHalf) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root; not root";
  const std::string mnt = dir_ + "/tmpfs";
  ASSERT_TRUE(fs::create_directory(mnt));
  if (mount("tmpfs", mnt.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
            "size=16m,mode=0700") != 0) {
    GTEST_SKIP()
        << "mount -t tmpfs -o size=16m tmpfs " << mnt
        << " failed: " << std::strerror(errno)
        << " (no CAP_SYS_ADMIN in this container?); the RLIMIT_FSIZE variant "
           "covers full-disk writes with EFBIG";
  }
  mounted_ = mnt;
  VerifierOptions o;
  o.db = mnt + "/verifier.db";  // key, ready file and logs stay outside
  o.extra = BaseFlags();
  FullDiskState s;
  ASSERT_NO_FATAL_FAILURE(PrepareBeforeFull(o, &s));

  // Fill the file system to its last byte.
  const std::string filler = mnt + "/filler";
  int fd = open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  std::string block(1 << 20, 'x');
  uint64_t filled = 0;
  int last_errno = 0;
  for (size_t chunk : {size_t{1} << 20, size_t{4096}, size_t{1}}) {
    while (true) {
      ssize_t n = write(fd, block.data(), chunk);
      if (n <= 0) {
        last_errno = errno;
        break;
      }
      filled += static_cast<uint64_t>(n);
    }
  }
  close(fd);
  ASSERT_EQ(last_errno, ENOSPC) << std::strerror(last_errno);
  std::cout << "[ crash    ] filled the tmpfs with " << filled << " bytes\n";

  ASSERT_NO_FATAL_FAILURE(StartVerifier(o));
  ASSERT_NO_FATAL_FAILURE(
      WriteRequestsWhileFull("enospc", /*no_room=*/true, &s));
  verifier_.Kill();
  ASSERT_NO_FATAL_FAILURE(
      ExpectNothingFromRefusedRequests(o.db, "after ENOSPC", &s));
  PrintAnswers(s);
  ASSERT_TRUE(fs::remove(filler));
  ASSERT_NO_FATAL_FAILURE(ExpectRecovered(o, &s));
}

}  // namespace
}  // namespace dpuaudit
