// SqliteStore when storage fails, and the nonce spend that is atomic with
// storing a result (Store::InsertResultSpendingNonce):
//  - a full disk (SQLITE_FULL) is UNAVAILABLE naming the failure — a
//    server-side condition (HTTP 503), never RESOURCE_EXHAUSTED, which the
//    API answers with 413 — and the failed write stores nothing;
//  - a result that cannot be stored leaves its nonce unspent, and a nonce
//    that cannot be spent stores no result;
//  - a TPM enrollment (Store::CreateNodeWithTpmBinding) whose binding
//    cannot be stored stores neither node, binding nor approval.
// "Disk full" is PRAGMA max_page_count, applied through
// sqlite3_auto_extension to every connection opened while a test holds a
// PageCap: the store's own connection then gets SQLITE_FULL as soon as the
// file would need a new page, exactly as on a full disk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <memory>
#include <string>

#include "common/bytes.h"
#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::RawDb;

constexpr int64_t kNow = 1'700'000'000;

std::atomic<int64_t> g_max_pages{0};

int CapPages(sqlite3* db, const char**, const sqlite3_api_routines*) {
  std::string sql =
      "PRAGMA max_page_count = " + std::to_string(g_max_pages.load());
  return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
}

// While alive, every new SQLite connection in the process is capped at the
// page count `path` has now.
class PageCap {
 public:
  explicit PageCap(const std::string& path) {
    g_max_pages = RawDb(path).Int("PRAGMA page_count");
    EXPECT_EQ(sqlite3_auto_extension(reinterpret_cast<void (*)()>(&CapPages)),
              SQLITE_OK);
  }
  ~PageCap() {
    sqlite3_cancel_auto_extension(reinterpret_cast<void (*)()>(&CapPages));
  }
  PageCap(const PageCap&) = delete;
  PageCap& operator=(const PageCap&) = delete;
};

NodeRecord Node(const std::string& id) {
  NodeRecord n;
  n.node_id = id;
  n.public_key_pem =
      "-----BEGIN PUBLIC KEY-----\nkey-" + id + "\n-----END PUBLIC KEY-----\n";
  n.key_thumbprint = "thumb-" + id;
  n.state = NodeState::kApproved;
  n.enrolled_at = kNow;
  n.approved_at = kNow;
  return n;
}

// An accepted report of `jws_bytes` bytes (a report with its evidence is
// tens of KiB) and its result.
ReportRecord Report(const std::string& node_id, const std::string& sha,
                    size_t jws_bytes = 100) {
  ReportRecord r;
  r.node_id = node_id;
  r.jws = std::string(jws_bytes, 'j');
  r.sha256 = sha;
  r.received_at = kNow;
  r.accepted = true;
  return r;
}

ResultRecord Result(const std::string& node_id, const std::string& sha) {
  ResultRecord r;
  r.node_id = node_id;
  r.decision = "admit";
  r.ear_jwt = "ear.jwt.sig";
  r.reasons_json = "[]";
  r.report_jws_sha256 = sha;
  r.created_at = kNow;
  r.expires_at = kNow + 300;
  return r;
}

// A pending TPM binding of `node_id` whose EK certificate is `cert_bytes`
// long: 64 KiB needs new pages, as any row too big for the free space.
TpmBinding Binding(const std::string& node_id, size_t cert_bytes = 100) {
  TpmBinding b;
  b.node_id = node_id;
  b.ek_public_b64 = Base64Encode(AsBytes("ek-public"));
  b.ek_sha256 = std::string(64, 'e');
  b.ek_cert_pem = "-----BEGIN CERTIFICATE-----\n" +
                  std::string(cert_bytes, 'c') +
                  "\n-----END CERTIFICATE-----\n";
  b.ek_cert_issuer = "CN=Example TPM CA";
  b.ak_public_b64 = Base64Encode(AsBytes("ak-public"));
  b.ak_name_hex = "000b" + std::string(64, 'a');
  b.state = TpmBindingState::kPending;
  b.credential_sha256 = std::string(64, 'c');
  b.created_at = kNow;
  b.challenge_expires_at = kNow + 300;
  return b;
}

NodeRecord PendingNode(const std::string& id) {
  NodeRecord n = Node(id);
  n.state = NodeState::kPending;
  n.approved_at.reset();
  return n;
}

class StoreStorageFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    path_ = db_.path();
    Open();
    ASSERT_TRUE(store_->CreateNode(Node("n1")).ok());
    ASSERT_TRUE(store_->CreateNode(Node("n2")).ok());
    ASSERT_TRUE(store_->InsertNonce("nonce-1", "n1", kNow, kNow + 60).ok());
    ASSERT_TRUE(store_->InsertNonce("nonce-2", "n2", kNow, kNow + 60).ok());
  }
  void Open() {
    store_.reset();
    auto s = db_.Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  bool Spent(const char* nonce) {
    return db_.Int(
               (std::string(
                    "SELECT used_at IS NOT NULL FROM nonces WHERE nonce = '") +
                nonce + "'")
                   .c_str()) == 1;
  }

  ::dpuaudit::testing::TestStoreDb db_;

  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqlStore> store_;
};

// --- Disk full ---------------------------------------------------------------

TEST_F(StoreStorageFailureTest, FullDiskIsUnavailableNotResourceExhausted) {
  DPA_SQLITE_ONLY("a full disk is SQLite max_page_count");
  store_.reset();
  PageCap cap(path_);
  ASSERT_NO_FATAL_FAILURE(Open());
  // A report with its evidence needs new pages: refused, nothing stored.
  auto r =
      store_->InsertResult(Result("n1", "aa"), Report("n1", "aa", 64 << 10));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable)
      << r.status().ToString();
  EXPECT_EQ(r.status().message(),
            "sqlite: inserting report: database or disk is full.");
  // Small rows fill the last pages, then fail the same way.
  Status s;
  for (int i = 0; i < 1000 && s.ok(); ++i) {
    s = store_->CreateNode(Node("filler-" + std::to_string(i))).status();
  }
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("database or disk is full."));
  // Reads still work on the same connection.
  EXPECT_TRUE(store_->GetNode("n1").ok());
  store_.reset();
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM results"), 0);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
}

// --- InsertResultSpendingNonce -----------------------------------------------

TEST_F(StoreStorageFailureTest, SpendingInsertStoresBothAndSpendsOnce) {
  auto id = store_->InsertResultSpendingNonce(
      Result("n1", "aa"), Report("n1", "aa"), "nonce-1", kNow + 1);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_TRUE(Spent("nonce-1"));
  auto latest = store_->LatestResult("n1");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->id, *id);
  // The same nonce again: refused as a replay, nothing more stored.
  auto again = store_->InsertResultSpendingNonce(
      Result("n1", "bb"), Report("n1", "bb"), "nonce-1", kNow + 2);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(again.status().message(), "nonce already used.");
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports"), 1);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM results"), 1);
}

// Each refusal of ConsumeNonce, in its order and with its message, stores
// nothing and leaves the nonce as it was.
TEST_F(StoreStorageFailureTest, RefusedNonceStoresNothing) {
  struct Case {
    const char* nonce;
    const char* node;
    int64_t now;
    StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"nonce-x", "n1", kNow + 1, StatusCode::kNotFound, "unknown nonce."},
      {"nonce-2", "n1", kNow + 1, StatusCode::kPermissionDenied,
       "nonce was issued to another node."},
      {"nonce-1", "n1", kNow + 60, StatusCode::kDeadlineExceeded,
       "nonce expired at 1700000060."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    auto r = store_->InsertResultSpendingNonce(
        Result(c.node, "aa"), Report(c.node, "aa"), c.nonce, c.now);
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_EQ(r.status().message(), c.message);
  }
  EXPECT_FALSE(Spent("nonce-1"));
  EXPECT_FALSE(Spent("nonce-2"));
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM results"), 0);
}

// Validation comes first, as for InsertResult: nothing spent.
TEST_F(StoreStorageFailureTest, InvalidResultSpendsNothing) {
  ResultRecord bad = Result("n1", "aa");
  bad.decision = "maybe";
  auto r = store_->InsertResultSpendingNonce(bad, Report("n1", "aa"), "nonce-1",
                                             kNow + 1);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(Spent("nonce-1"));
}

// The result cannot be stored for lack of space: the nonce stays unspent
// (and redeems once space is back).
TEST_F(StoreStorageFailureTest, FullDiskLeavesTheNonceUnspent) {
  DPA_SQLITE_ONLY("a full disk is SQLite max_page_count");
  store_.reset();
  {
    PageCap cap(path_);
    ASSERT_NO_FATAL_FAILURE(Open());
    auto r = store_->InsertResultSpendingNonce(
        Result("n1", "aa"), Report("n1", "aa", 64 << 10), "nonce-1", kNow + 1);
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable)
        << r.status().ToString();
    EXPECT_THAT(r.status().message(), HasSubstr("database or disk is full."));
    store_.reset();
  }
  EXPECT_FALSE(Spent("nonce-1"));
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports"), 0);
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_TRUE(store_
                  ->InsertResultSpendingNonce(Result("n1", "aa"),
                                              Report("n1", "aa", 64 << 10),
                                              "nonce-1", kNow + 1)
                  .ok());
  EXPECT_TRUE(Spent("nonce-1"));
}

// A result for a node that is not enrolled (foreign key) rolls the spend
// back too.
TEST_F(StoreStorageFailureTest, FailedResultRollsBackTheSpend) {
  DPA_SQLITE_ONLY("deletes a node behind SQLite's foreign keys (PRAGMA foreign_keys = OFF)");
  ASSERT_TRUE(store_->CreateNode(Node("n3")).ok());
  ASSERT_TRUE(store_->InsertNonce("nonce-3", "n3", kNow, kNow + 60).ok());
  db_.Exec(
      "PRAGMA foreign_keys = OFF; DELETE FROM nodes WHERE node_id = 'n3'");
  auto r = store_->InsertResultSpendingNonce(
      Result("n3", "aa"), Report("n3", "aa"), "nonce-3", kNow + 1);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "node \"n3\" is not enrolled.");
  EXPECT_FALSE(Spent("nonce-3"));
  EXPECT_EQ(db_.Int("SELECT count(*) FROM reports"), 0);
}

// --- CreateNodeWithTpmBinding ------------------------------------------------

// The disk fills between the node row and its binding: the node is rolled
// back with the binding, so no pending node is left without the TPM it
// enrolled with (an operator could approve it; the old CreateNode then
// PutTpmBinding could leave exactly that).
TEST_F(StoreStorageFailureTest, FullDiskDuringTpmEnrollmentStoresNothing) {
  DPA_SQLITE_ONLY("a full disk is SQLite max_page_count");
  store_.reset();
  {
    PageCap cap(path_);
    ASSERT_NO_FATAL_FAILURE(Open());
    auto r = store_->CreateNodeWithTpmBinding(PendingNode("n3"),
                                              Binding("n3", 64 << 10), kNow,
                                              EnrollAuthority::kBootstrapToken);
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable)
        << r.status().ToString();
    // The node row was written; the binding is what did not fit.
    EXPECT_EQ(r.status().message(),
              "sqlite: storing TPM binding: database or disk is full.");
    EXPECT_EQ(store_->GetNode("n3").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store_->GetTpmBinding("n3").status().code(),
              StatusCode::kNotFound);
    // The node alone does fit: the combined write failed at the binding
    // and rolled the node back with it.
    EXPECT_TRUE(store_->CreateNode(PendingNode("n3")).ok());
    // A pending node re-enrolling with its TPM and the token: neither the
    // binding nor the approval is stored.
    auto again = store_->CreateNodeWithTpmBinding(
        PendingNode("n3"), Binding("n3", 64 << 10), kNow + 1,
        EnrollAuthority::kBootstrapToken);
    EXPECT_EQ(again.status().code(), StatusCode::kUnavailable)
        << again.status().ToString();
    EXPECT_EQ(again.status().message(),
              "sqlite: storing TPM binding: database or disk is full.");
    store_.reset();
  }
  auto& raw = db_;
  EXPECT_EQ(raw.Text("SELECT state FROM nodes WHERE node_id = 'n3'"),
            "pending");
  EXPECT_EQ(raw.Int("SELECT approved_at IS NULL FROM nodes "
                    "WHERE node_id = 'n3'"),
            1);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM tpm_bindings"), 0);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  // With space back, the same enrollment stores all three at once.
  ASSERT_NO_FATAL_FAILURE(Open());
  auto ok = store_->CreateNodeWithTpmBinding(PendingNode("n4"),
                                             Binding("n4", 64 << 10), kNow,
                                             EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->state, NodeState::kApproved);
  EXPECT_EQ(ok->approved_at, kNow);
  auto stored = store_->GetTpmBinding("n4");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(*stored, Binding("n4", 64 << 10));
}

}  // namespace
}  // namespace dpuaudit::verifier
