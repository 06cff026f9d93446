// PgStore's own guarantees (verifier/store/pg_store.h), against a real
// PostgreSQL server (the "pg." copies in ctest, or DPUAUDIT_TEST_PG_URL):
// two PgStore instances on one database stand for two verifier replicas.
// Skipped, saying so, on the SQLite run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "verifier/audit_chain.h"
#include "verifier/node_status.h"
#include "verifier/store/pg.h"
#include "verifier/store/pg_migrations.h"
#include "verifier/store/pg_store.h"
#include "verifier/store/test_nodes.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using ::dpuaudit::testing::StoreTestNode;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kNow = 10'000;

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_POSTGRES_ONLY();
    DPA_REQUIRE_TEST_STORE(db_);
    a_ = OpenReplica();
    b_ = OpenReplica();
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
  }
  std::unique_ptr<SqlStore> OpenReplica(const PgOptions& options = {}) {
    auto s = db_.Open(options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  void Enroll(SqlStore& s, const std::string& id) {
    ASSERT_TRUE(s.CreateNode(StoreTestNode(id)).ok());
    ASSERT_TRUE(s.ApproveNode(id, kNow - 10).ok());
  }
  // The password in db_'s URL (between "user:" and "@").
  std::string Password() const {
    const std::string& url = db_.db();
    size_t scheme = url.find("://") + 3;
    size_t colon = url.find(':', scheme);
    size_t at = url.find('@', scheme);
    return url.substr(colon + 1, at - colon - 1);
  }

  ::dpuaudit::testing::TestStoreDb db_;
  std::unique_ptr<SqlStore> a_, b_;
};

// --- Nonces across replicas ---------------------------------------------------

TEST_F(PgStoreTest, NonceIssuedAtOneReplicaIsRedeemableOnceAtAnother) {
  Enroll(*a_, "n1");
  ASSERT_TRUE(a_->InsertNonce("nonce-1", "n1", kNow, kNow + 60).ok());
  auto issued = b_->NonceIssuedAt("nonce-1", "n1");
  ASSERT_TRUE(issued.ok()) << issued.status().ToString();
  EXPECT_EQ(*issued, kNow);
  Status first = b_->ConsumeNonce("nonce-1", "n1", kNow + 1);
  ASSERT_TRUE(first.ok()) << first.ToString();
  Status again_b = b_->ConsumeNonce("nonce-1", "n1", kNow + 2);
  Status again_a = a_->ConsumeNonce("nonce-1", "n1", kNow + 2);
  EXPECT_FALSE(again_b.ok());
  EXPECT_EQ(again_a.code(), again_b.code()) << again_a.ToString();
  EXPECT_EQ(again_a.message(), again_b.message());
}

TEST_F(PgStoreTest, ConcurrentRedeemFromTwoReplicasSucceedsOncePerNonce) {
  Enroll(*a_, "n1");
  constexpr int kNonces = 40;
  constexpr int kThreadsPerReplica = 3;
  for (int i = 0; i < kNonces; ++i) {
    ASSERT_TRUE(a_->InsertNonce("x-" + std::to_string(i), "n1", kNow, kNow + 60).ok());
  }
  std::vector<std::atomic<int>> wins(kNonces);
  std::atomic<int> other{0};
  std::vector<std::thread> threads;
  for (SqlStore* s : {a_.get(), b_.get()}) {
    for (int t = 0; t < kThreadsPerReplica; ++t) {
      threads.emplace_back([&, s, t] {
        for (int k = 0; k < kNonces; ++k) {
          int i = (k + t * 7) % kNonces;  // threads meet on different nonces
          Status st = s->ConsumeNonce("x-" + std::to_string(i), "n1", kNow + 1);
          if (st.ok()) {
            ++wins[static_cast<size_t>(i)];
          } else if (st.code() != StatusCode::kFailedPrecondition &&
                     st.code() != StatusCode::kAlreadyExists &&
                     st.code() != StatusCode::kPermissionDenied) {
            ++other;
            ADD_FAILURE() << st.ToString();
          }
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kNonces; ++i) EXPECT_EQ(wins[static_cast<size_t>(i)], 1) << "nonce " << i;
  EXPECT_EQ(other, 0);
}

// --- The audit chain ----------------------------------------------------------

TEST_F(PgStoreTest, ConcurrentAppendsFromTwoReplicasKeepOneChain) {
  constexpr int kPerThread = 15;
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  int t = 0;
  for (SqlStore* s : {a_.get(), b_.get(), a_.get(), b_.get()}) {
    threads.emplace_back([&, s, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (!s->CreateNode(StoreTestNode("n" + std::to_string(t) + "-" + std::to_string(i)))
                 .ok()) {
          ++failed;
        }
      }
    });
    ++t;
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed, 0);
  auto rows = b_->ListAuditLog(1, 100000);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 4u * kPerThread);
  std::vector<ChainedEntry> chain;
  for (auto& r : *rows) chain.push_back({r.seq, r.entry, r.prev_hash, r.entry_hash});
  Status verified = VerifyAuditChain(chain, kAuditGenesisHash);
  EXPECT_TRUE(verified.ok()) << verified.ToString();
  // No fork: every prev_hash is used once, seqs are 1..N.
  std::set<std::string> prevs;
  for (size_t i = 0; i < rows->size(); ++i) {
    EXPECT_EQ((*rows)[i].seq, static_cast<int64_t>(i) + 1);
    EXPECT_TRUE(prevs.insert((*rows)[i].prev_hash).second);
  }
  auto head_a = a_->GetAuditLogHead();
  ASSERT_TRUE(head_a.ok());
  EXPECT_EQ(head_a->size, static_cast<int64_t>(rows->size()));
  EXPECT_EQ(head_a->head_hash, rows->back().entry_hash);
}

// --- The webhook outbox -------------------------------------------------------

DecisionEvent Event(const std::string& node, int n, int64_t at) {
  DecisionEvent e;
  char id[33];
  std::snprintf(id, sizeof id, "%032x", n);
  e.event_id = id;
  e.node_id = node;
  e.type = "node.denied";
  e.at = at;
  e.payload_json = R"({"type":"node.denied"})";
  return e;
}

// `nodes` nodes with one event each, for endpoints a and b.
void QueueDeliveries(SqlStore& s, int nodes) {
  for (int i = 0; i < nodes; ++i) {
    std::string id = "w" + std::to_string(i);
    ASSERT_TRUE(s.CreateNode(StoreTestNode(id)).ok());
    NodeTransition t;
    t.status = InitialStatus(id, kNow);
    t.status.status = std::string(kStatusFailed);
    t.event = Event(id, i + 1, kNow);
    t.endpoints = {"a", "b"};
    Status applied = s.ApplyNodeTransition(t);
    ASSERT_TRUE(applied.ok()) << applied.ToString();
  }
}

TEST_F(PgStoreTest, ConcurrentDispatchersOnTwoReplicasNeverClaimOneDeliveryTwice) {
  constexpr int kNodes = 30;  // 60 deliveries
  ASSERT_NO_FATAL_FAILURE(QueueDeliveries(*a_, kNodes));
  std::mutex mu;
  std::map<int64_t, int> claimed;  // outbox id -> times claimed
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (SqlStore* s : {a_.get(), b_.get(), a_.get(), b_.get()}) {
    threads.emplace_back([&, s] {
      for (int round = 0; round < 40; ++round) {
        auto due = s->ClaimDueOutbox(kNow + 1, 3, 300);
        if (!due.ok()) {
          ++errors;
          ADD_FAILURE() << due.status().ToString();
          return;
        }
        std::lock_guard<std::mutex> lock(mu);
        for (const OutboxDelivery& d : *due) ++claimed[d.entry.id];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(claimed.size(), 2u * kNodes);  // every one claimed...
  for (const auto& [id, n] : claimed) EXPECT_EQ(n, 1) << "outbox entry " << id;  // ...once
  // While the claims run, nothing is due at either replica.
  EXPECT_TRUE(a_->ClaimDueOutbox(kNow + 299, 100, 300)->empty());
  // DueOutbox (a read) still lists them; the claim is not a delivery.
  EXPECT_EQ(b_->DueOutbox(kNow + 1, 100)->size(), 2u * kNodes);
}

TEST_F(PgStoreTest, ClaimEndsWithTheRecordedAttemptOrTheLease) {
  ASSERT_NO_FATAL_FAILURE(QueueDeliveries(*a_, 2));
  auto first = a_->ClaimDueOutbox(kNow, 10, 100);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 4u);
  EXPECT_TRUE(b_->ClaimDueOutbox(kNow + 50, 10, 100)->empty());
  // A failed attempt ends the claim: due again at its next attempt time.
  ASSERT_TRUE(a_->MarkOutboxFailed((*first)[0].entry.id, kNow + 1, kNow + 5, "HTTP 503").ok());
  ASSERT_TRUE(a_->MarkOutboxDelivered((*first)[1].entry.id, kNow + 1).ok());
  auto retry = b_->ClaimDueOutbox(kNow + 5, 10, 100);
  ASSERT_TRUE(retry.ok());
  ASSERT_EQ(retry->size(), 1u);
  EXPECT_EQ((*retry)[0].entry.id, (*first)[0].entry.id);
  EXPECT_EQ((*retry)[0].entry.attempts, 1);
  // The claimer of the other two "died": their lease runs out at kNow + 100.
  EXPECT_TRUE(b_->ClaimDueOutbox(kNow + 99, 10, 100)->empty());
  auto orphans = b_->ClaimDueOutbox(kNow + 100, 10, 100);
  ASSERT_TRUE(orphans.ok());
  EXPECT_EQ(orphans->size(), 2u);
  EXPECT_EQ(a_->ClaimDueOutbox(kNow, 10, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PgStoreTest, ClaimKeepsOneNodesDeliveriesInOrder) {
  Enroll(*a_, "n1");
  for (int i = 1; i <= 2; ++i) {
    NodeTransition t;
    t.status = InitialStatus("n1", kNow + i);
    t.status.status = std::string(i == 1 ? kStatusAdmitted : kStatusFailed);
    t.event = Event("n1", i, kNow + i);
    t.endpoints = {"a"};
    ASSERT_TRUE(a_->ApplyNodeTransition(t).ok());
  }
  auto first = a_->ClaimDueOutbox(kNow + 10, 10, 100);
  ASSERT_EQ(first->size(), 1u);  // the second waits for the first...
  EXPECT_EQ((*first)[0].event.event_id, Event("n1", 1, 0).event_id);
  // ...also while the first is only claimed (not delivered) by a replica.
  EXPECT_TRUE(b_->ClaimDueOutbox(kNow + 10, 10, 100)->empty());
  ASSERT_TRUE(a_->MarkOutboxDelivered((*first)[0].entry.id, kNow + 11).ok());
  auto second = b_->ClaimDueOutbox(kNow + 11, 10, 100);
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].event.event_id, Event("n1", 2, 0).event_id);
}

// A claim passes over rows another transaction holds locked (SKIP LOCKED)
// instead of waiting for them.
TEST_F(PgStoreTest, ClaimSkipsRowsAnotherSessionHoldsInsteadOfWaiting) {
  ASSERT_NO_FATAL_FAILURE(QueueDeliveries(*a_, 2));
  int64_t first_id = db_.Int("SELECT min(id) FROM webhook_outbox");
  PGconn* other = PQconnectdb(db_.db().c_str());
  ASSERT_EQ(PQstatus(other), CONNECTION_OK) << PQerrorMessage(other);
  for (std::string sql : {std::string("BEGIN"),
                          "SELECT id FROM webhook_outbox WHERE id = " +
                              std::to_string(first_id) + " FOR UPDATE"}) {
    PGresult* r = PQexec(other, sql.c_str());
    EXPECT_TRUE(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
        << sql << ": " << PQerrorMessage(other);
    PQclear(r);
  }
  // The claim runs on its own thread: a claim that waited for the lock
  // fails the test after 5 s instead of hanging it.
  std::promise<StatusOr<std::vector<OutboxDelivery>>> promise;
  std::future<StatusOr<std::vector<OutboxDelivery>>> claimed = promise.get_future();
  std::thread claimer([&] { promise.set_value(b_->ClaimDueOutbox(kNow, 10, 100)); });
  bool in_time = claimed.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  PQclear(PQexec(other, "ROLLBACK"));
  PQfinish(other);
  claimer.join();
  ASSERT_TRUE(in_time) << "the claim waited for the row another session holds";
  auto due = claimed.get();
  ASSERT_TRUE(due.ok()) << due.status().ToString();
  ASSERT_EQ(due->size(), 3u);
  for (const OutboxDelivery& d : *due) EXPECT_NE(d.entry.id, first_id);
  auto rest = a_->ClaimDueOutbox(kNow, 10, 100);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].entry.id, first_id);
}

// --- The pool -------------------------------------------------------------------

// A raw session holding the store's write lock, so every write waits.
class WriteLockHolder {
 public:
  explicit WriteLockHolder(const std::string& url) : conn_(PQconnectdb(url.c_str())) {
    EXPECT_EQ(PQstatus(conn_), CONNECTION_OK) << PQerrorMessage(conn_);
    Exec("BEGIN");
    Exec(("SELECT pg_advisory_xact_lock(" + std::to_string(pg::kWriteLockKey) + ")").c_str());
  }
  ~WriteLockHolder() { PQfinish(conn_); }
  void Release() { Exec("COMMIT"); }

 private:
  void Exec(const char* sql) {
    PGresult* r = PQexec(conn_, sql);
    EXPECT_TRUE(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
        << sql << ": " << PQerrorMessage(conn_);
    PQclear(r);
  }
  PGconn* conn_;
};

TEST_F(PgStoreTest, AllPoolConnectionsBusyIsUnavailableAfterTheTimeoutNotAHang) {
  PgOptions options;
  options.pool_size = 2;
  options.acquire_timeout_ms = 400;
  std::unique_ptr<SqlStore> small = OpenReplica(options);
  ASSERT_NE(small, nullptr);
  WriteLockHolder holder(db_.db());
  // Two writers take both connections and wait for the write lock.
  std::vector<std::thread> writers;
  std::atomic<int> written{0};
  for (int i = 0; i < 2; ++i) {
    writers.emplace_back([&, i] {
      if (small->CreateNode(StoreTestNode("busy" + std::to_string(i))).ok()) ++written;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  auto third = small->GetNode("busy0");
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(third.status().code(), StatusCode::kUnavailable) << third.status().ToString();
  EXPECT_GE(waited, std::chrono::milliseconds(350));
  EXPECT_LT(waited, std::chrono::seconds(5));
  holder.Release();
  for (auto& w : writers) w.join();
  EXPECT_EQ(written, 2);
  // The pool recovers once connections come back.
  EXPECT_TRUE(small->GetNode("busy0").ok());
}

// --- Migrations -------------------------------------------------------------------

TEST_F(PgStoreTest, MigrationWithAChangedSha256IsRefused) {
  auto c = pg::Connection::Open(db_.db(), 5);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<pg::Migration> altered = pg::Migrations();
  std::string changed = std::string(altered[0].sql) + "\n-- edited after release\n";
  altered[0].sql = changed;
  Status s = RunMigrations(**c, altered);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("schema migration 1 (0001_initial) was applied with sha256"));
  EXPECT_THAT(s.message(), HasSubstr(Sha256Hex(AsBytes(changed))));
  // The recorded migrations are this build's: Open works again.
  EXPECT_NE(OpenReplica(), nullptr);
}

TEST_F(PgStoreTest, DatabaseWithANewerMigrationIsRefused) {
  db_.Exec(
      "INSERT INTO schema_migrations (version, name, sha256, applied_at) VALUES "
      "(" + std::to_string(pg::Migrations().size() + 1) + ", '9999_future', 'ab', 0)");
  auto s = db_.Open();
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << s.status().ToString();
  EXPECT_THAT(s.status().message(), HasSubstr("9999_future"));
  EXPECT_THAT(s.status().message(), HasSubstr("newer than this build knows"));
}

TEST_F(PgStoreTest, MigrationsAreRecordedWithTheirSha256) {
  const auto& ms = pg::Migrations();
  ASSERT_GE(ms.size(), 2u);
  EXPECT_EQ(db_.Int("SELECT count(*) FROM schema_migrations"), static_cast<int64_t>(ms.size()));
  for (const auto& m : ms) {
    EXPECT_EQ(db_.Text("SELECT sha256 FROM schema_migrations WHERE version = " +
                       std::to_string(m.version)),
              Sha256Hex(AsBytes(m.sql)))
        << m.name;
  }
}

TEST_F(PgStoreTest, WithoutCreateSchemaAnOutdatedDatabaseIsRefusedUnchanged) {
  db_.Exec("DELETE FROM schema_migrations WHERE version = " +
           std::to_string(pg::Migrations().size()));
  PgOptions options;
  options.create_schema = false;
  auto s = db_.Open(options);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << s.status().ToString();
  EXPECT_THAT(s.status().message(), HasSubstr("serve --db"));
  EXPECT_EQ(db_.Int("SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(pg::Migrations().size()) - 1);
}

// --- Passwords ----------------------------------------------------------------------

TEST_F(PgStoreTest, PasswordNeverAppearsInAnErrorMessage) {
  const std::string password = Password();
  ASSERT_GE(password.size(), 8u);
  const std::string url = db_.db();
  size_t scheme = url.find("://") + 3;
  size_t colon = url.find(':', scheme);
  size_t at = url.find('@', scheme);
  size_t port_end = url.find('/', at);
  std::string hostport = url.substr(at + 1, port_end - at - 1);
  std::string host = hostport.substr(0, hostport.find(':'));
  std::string port = hostport.substr(hostport.find(':') + 1);
  const std::string wrong = "WrongSecret-" + password.substr(0, 4) + "x";
  std::string bad_password = url.substr(0, colon + 1) + wrong + url.substr(at);
  std::string no_db = url.substr(0, port_end) + "/no_such_database_here";
  std::string keywords = "host=" + host + " port=" + port +
                         " user=dpuaudit dbname=dpuaudit password='" + wrong + "'";
  for (const std::string& conninfo : {bad_password, no_db, keywords}) {
    auto s = PgStore::Open(conninfo);
    ASSERT_FALSE(s.ok()) << pg::RedactConnInfo(conninfo);
    EXPECT_THAT(s.status().message(), Not(HasSubstr(password)));
    EXPECT_THAT(s.status().message(), Not(HasSubstr(wrong)));
    EXPECT_THAT(s.status().message(), HasSubstr("REDACTED"));
  }
  EXPECT_EQ(PgStore::Open(bad_password).status().code(), StatusCode::kPermissionDenied);
}

TEST(PgRedactTest, RedactConnInfoRemovesEveryPasswordForm) {
  EXPECT_EQ(pg::RedactConnInfo("postgresql://u:s3cret@h:5432/db"),
            "postgresql://u:REDACTED@h:5432/db");
  EXPECT_EQ(pg::RedactConnInfo("postgres://u@h/db?password=s3cret&sslmode=require"),
            "postgres://u@h/db?password=REDACTED&sslmode=require");
  EXPECT_EQ(pg::RedactConnInfo("host=h password=s3cret dbname=d"),
            "host=h password=REDACTED dbname=d");
  EXPECT_EQ(pg::RedactConnInfo("host=h password = 'a b\\' c' dbname=d"),
            "host=h password=REDACTED dbname=d");
  EXPECT_EQ(pg::RedactConnInfo("postgresql://u@h/db"), "postgresql://u@h/db");
}

}  // namespace
}  // namespace dpuaudit::verifier
