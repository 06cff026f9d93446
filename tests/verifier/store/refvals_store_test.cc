// SqliteStore reference-value methods against real SQLite files in a fresh
// temporary directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <string>
#include <vector>

#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::RawDb;


std::string Hex(char c, size_t n = 96) { return std::string(n, c); }

RefRelease Release(const std::string& label,
                   const std::string& model = "BlueField-3",
                   int64_t created_at = 1000) {
  RefRelease r;
  r.release = label;
  r.model = model;
  r.psids = {"MT_0000000884"};
  r.state = RefState::kPending;
  r.values = {{"atf", "v2.2(release):4.9.1-21-gfc25b08d9", "", ""},
              {"bfb:bl31", "", Hex('a'), ""},
              {"nic-fw", "32.43.1008", "", ""}};
  r.upgrade_from = {"bf-bundle-2.9.0-90"};
  r.compatible_with = {"bf-fw-hotfix-1", "bf-fw-hotfix-2"};
  r.expires_at = 1900000000;
  r.history = {{RefState::kPending, "alice", created_at, "Q4 rollout"}};
  r.created_at = created_at;
  return r;
}

NodeRecord Node(const std::string& id) {
  NodeRecord n;
  n.node_id = id;
  n.public_key_pem = "pem";
  n.key_thumbprint = "thumb-" + id;
  n.enrolled_at = 1000;
  return n;
}

class RefvalsStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    path_ = db_.path();
    Reopen();
  }

  void Reopen() {
    store_.reset();
    auto store = db_.Open();
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  int64_t Generation() {
    auto g = store_->RefvalsGeneration();
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? *g : -1;
  }

  int64_t Rows() {
    return db_.Int("SELECT count(*) FROM ref_releases");
  }

  ::dpuaudit::testing::TestStoreDb db_;

  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqlStore> store_;
};

// --- Schema ------------------------------------------------------------------

TEST_F(RefvalsStoreTest, FreshFileHasTheTablesAndGenerationZero) {
  DPA_SQLITE_ONLY("sqlite_schema and PRAGMA user_version");
  EXPECT_EQ(Generation(), 0);
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
                    "AND name IN ('ref_releases', 'ref_generation', "
                    "'node_releases')"),
            3);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), SqliteStore::kSchemaVersion);
}

// A schema-1 file written before reference values existed: Open adds the
// tables and keeps the data.
TEST_F(RefvalsStoreTest, OlderSchemaOneFileGainsTheTables) {
  DPA_SQLITE_ONLY("a schema-1 SQLite file");
  ASSERT_TRUE(store_->CreateNode(Node("n1")).ok());
  store_.reset();
  {
    auto& raw = db_;
    raw.Exec(
        "DROP TABLE node_releases; DROP TABLE ref_generation; "
        "DROP TABLE ref_releases;");
    EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE name LIKE "
                      "'ref_%'"),
              0);
  }
  Reopen();
  EXPECT_TRUE(store_->GetNode("n1").ok());
  EXPECT_EQ(Generation(), 0);
  EXPECT_TRUE(store_->PutRelease(Release("r1")).ok());
  EXPECT_EQ(Generation(), 1);
}

// --- PutRelease / GetRelease -------------------------------------------------

TEST_F(RefvalsStoreTest, PutThenGetReturnsTheSameRelease) {
  RefRelease r = Release("bf-bundle-2.9.1-40");
  ASSERT_TRUE(store_->PutRelease(r).ok());
  auto got = store_->GetRelease("bf-bundle-2.9.1-40");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, r);
  EXPECT_EQ(Generation(), 1);
}

TEST_F(RefvalsStoreTest, GetUnknownRelease) {
  auto got = store_->GetRelease("nope");
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(), "reference release \"nope\" is not known.");
}

TEST_F(RefvalsStoreTest, PutIsIdempotentForEqualContent) {
  RefRelease r = Release("r1");
  ASSERT_TRUE(store_->PutRelease(r).ok());
  ASSERT_TRUE(store_->PutRelease(r).ok());
  // Same content in another order, with a different state and history: still
  // the same release, and nothing changes.
  RefRelease again = r;
  std::reverse(again.values.begin(), again.values.end());
  std::reverse(again.compatible_with.begin(), again.compatible_with.end());
  again.state = RefState::kActive;
  again.history.push_back({RefState::kActive, "mallory", 5000, "sneaky"});
  again.created_at = 4000;
  ASSERT_TRUE(store_->PutRelease(again).ok());
  EXPECT_EQ(*store_->GetRelease("r1"), r);
  EXPECT_EQ(Generation(), 1);
  EXPECT_EQ(Rows(), 1);
}

TEST_F(RefvalsStoreTest, ConflictingPutIsRefusedAndChangesNothing) {
  RefRelease r = Release("r1");
  ASSERT_TRUE(store_->PutRelease(r).ok());
  struct Change {
    const char* what;
    void (*apply)(RefRelease&);
  };
  const Change kChanges[] = {
      {"model", [](RefRelease& x) { x.model = "BlueField-2"; }},
      {"psids", [](RefRelease& x) { x.psids.push_back("MT_1"); }},
      {"value", [](RefRelease& x) { x.values[1].sha384 = Hex('b'); }},
      {"upgrade_from", [](RefRelease& x) { x.upgrade_from.clear(); }},
      {"compatible_with",
       [](RefRelease& x) { x.compatible_with.pop_back(); }},
      {"expires_at", [](RefRelease& x) { x.expires_at.reset(); }},
  };
  for (const Change& c : kChanges) {
    RefRelease other = r;
    c.apply(other);
    Status s = store_->PutRelease(other);
    EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << c.what;
    EXPECT_EQ(s.message(),
              "reference release \"r1\" already exists with different "
              "content.")
        << c.what;
  }
  EXPECT_EQ(*store_->GetRelease("r1"), r);
  EXPECT_EQ(Generation(), 1);
}

TEST_F(RefvalsStoreTest, InvalidReleaseIsRefusedBeforeTheDatabase) {
  RefRelease r = Release("r1");
  r.values[1].sha384 = Hex('A');
  Status s = store_->PutRelease(r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "release.values[1].sha384 is not 96 lower-case hex digits.");
  RefRelease no_history = Release("r2");
  no_history.history.clear();
  EXPECT_EQ(store_->PutRelease(no_history).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Rows(), 0);
  EXPECT_EQ(Generation(), 0);
}

// --- PutReleases -------------------------------------------------------------

TEST_F(RefvalsStoreTest, PutReleasesStoresAllWithOneGenerationBump) {
  ASSERT_TRUE(
      store_->PutReleases({Release("a"), Release("b"), Release("c")}).ok());
  EXPECT_EQ(Rows(), 3);
  EXPECT_EQ(Generation(), 1);
  // Repeating the batch changes nothing.
  ASSERT_TRUE(
      store_->PutReleases({Release("a"), Release("b"), Release("c")}).ok());
  EXPECT_EQ(Generation(), 1);
}

TEST_F(RefvalsStoreTest, PutReleasesIsAllOrNothingOnConflict) {
  ASSERT_TRUE(store_->PutRelease(Release("b")).ok());
  RefRelease b_changed = Release("b");
  b_changed.psids.clear();
  Status s = store_->PutReleases({Release("a"), b_changed, Release("c")});
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(),
            "releases[1]: reference release \"b\" already exists with "
            "different content.");
  EXPECT_EQ(store_->GetRelease("a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetRelease("c").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Rows(), 1);
  EXPECT_EQ(Generation(), 1);
}

TEST_F(RefvalsStoreTest, PutReleasesConflictInsideTheBatch) {
  RefRelease a2 = Release("a");
  a2.model = "BlueField-2";
  Status s = store_->PutReleases({Release("a"), a2});
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Rows(), 0);
  // Equal duplicates in one batch are fine.
  EXPECT_TRUE(store_->PutReleases({Release("a"), Release("a")}).ok());
  EXPECT_EQ(Rows(), 1);
}

TEST_F(RefvalsStoreTest, PutReleasesValidatesEveryReleaseFirst) {
  RefRelease bad = Release("c");
  bad.model = "BF3";
  Status s = store_->PutReleases({Release("a"), Release("b"), bad});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "releases[2]: release.model \"BF3\" is not a canonical model "
            "(BlueField-2 or BlueField-3).");
  EXPECT_EQ(Rows(), 0);
  EXPECT_EQ(Generation(), 0);
}

// --- ListReleases ------------------------------------------------------------

TEST_F(RefvalsStoreTest, ListIsOrderedByModelCreatedAtAndLabel) {
  ASSERT_TRUE(store_
                  ->PutReleases({Release("z", "BlueField-3", 100),
                                 Release("b", "BlueField-3", 200),
                                 Release("a", "BlueField-3", 200),
                                 Release("y", "BlueField-2", 900)})
                  .ok());
  auto labels = [](const std::vector<RefRelease>& v) {
    std::vector<std::string> out;
    for (const RefRelease& r : v) out.push_back(r.release);
    return out;
  };
  auto all = store_->ListReleases("");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(labels(*all), (std::vector<std::string>{"y", "z", "a", "b"}));
  auto bf3 = store_->ListReleases("BF3");
  ASSERT_TRUE(bf3.ok()) << bf3.status().ToString();
  EXPECT_EQ(labels(*bf3), (std::vector<std::string>{"z", "a", "b"}));
  auto bf2 = store_->ListReleases("BlueField-2");
  ASSERT_TRUE(bf2.ok());
  EXPECT_EQ(labels(*bf2), (std::vector<std::string>{"y"}));
  auto bad = store_->ListReleases("ConnectX-7");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "model \"ConnectX-7\" is not a known BlueField model.");
}

TEST_F(RefvalsStoreTest, ListOfEmptyStoreIsEmpty) {
  auto all = store_->ListReleases("");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

// --- TransitionRelease -------------------------------------------------------

TEST_F(RefvalsStoreTest, TransitionsAppendHistoryAndBumpGeneration) {
  ASSERT_TRUE(store_->PutRelease(Release("r1")).ok());
  const RefApproval kSteps[] = {
      {RefState::kActive, "bob", 2000, "rollout approved"},
      {RefState::kObsolete, "carol", 3000, "superseded by r2"},
      {RefState::kActive, "carol", 3100, "r2 withdrawn"},
      {RefState::kRevoked, "dave", 4000, "CVE-2026-1234"},
  };
  int64_t generation = Generation();
  size_t history = 1;
  for (const RefApproval& step : kSteps) {
    auto moved = store_->TransitionRelease("r1", step);
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    ++history;
    EXPECT_EQ(moved->state, step.state);
    ASSERT_EQ(moved->history.size(), history);
    EXPECT_EQ(moved->history.back(), step);
    EXPECT_EQ(moved->history.front().by, "alice");  // the import stays first
    EXPECT_EQ(*store_->GetRelease("r1"), *moved);
    EXPECT_EQ(Generation(), ++generation);
  }
}

TEST_F(RefvalsStoreTest, RefusedTransitionLeavesStateIntact) {
  ASSERT_TRUE(store_->PutRelease(Release("r1")).ok());
  RefRelease before = *store_->GetRelease("r1");
  int64_t generation = Generation();

  // pending -> obsolete is not an edge.
  auto s = store_->TransitionRelease("r1", {RefState::kObsolete, "bob", 2, ""});
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(),
            "release \"r1\" is pending; cannot move it to obsolete.");
  // Moving to the current state is refused too.
  s = store_->TransitionRelease("r1", {RefState::kPending, "bob", 2, ""});
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(),
            "release \"r1\" is pending; cannot move it to pending.");
  EXPECT_EQ(*store_->GetRelease("r1"), before);
  EXPECT_EQ(Generation(), generation);

  // revoked is terminal.
  ASSERT_TRUE(
      store_->TransitionRelease("r1", {RefState::kRevoked, "bob", 3, "bad"})
          .ok());
  RefRelease revoked = *store_->GetRelease("r1");
  generation = Generation();
  for (RefState to : {RefState::kPending, RefState::kActive,
                      RefState::kObsolete, RefState::kRevoked}) {
    s = store_->TransitionRelease("r1", {to, "eve", 4, ""});
    EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(s.status().message(),
              "release \"r1\" is revoked; cannot move it to " +
                  std::string(RefStateName(to)) + ".");
  }
  EXPECT_EQ(*store_->GetRelease("r1"), revoked);
  EXPECT_EQ(Generation(), generation);
}

TEST_F(RefvalsStoreTest, TransitionErrors) {
  auto s =
      store_->TransitionRelease("ghost", {RefState::kActive, "bob", 2, ""});
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "reference release \"ghost\" is not known.");

  ASSERT_TRUE(store_->PutRelease(Release("r1")).ok());
  s = store_->TransitionRelease("r1", {RefState::kActive, "", 2, "x"});
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), "approval.by is empty.");
  EXPECT_EQ(store_->GetRelease("r1")->state, RefState::kPending);
}

// --- Node releases -----------------------------------------------------------

TEST_F(RefvalsStoreTest, NodeReleaseRecordAndLast) {
  ASSERT_TRUE(store_->CreateNode(Node("n1")).ok());
  auto none = store_->LastNodeRelease("n1", "arm");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(),
            "no \"arm\" release recorded for node \"n1\".");

  ASSERT_TRUE(store_->RecordNodeRelease("n1", "arm", "r1", 100).ok());
  EXPECT_EQ(*store_->LastNodeRelease("n1", "arm"), "r1");
  ASSERT_TRUE(store_->RecordNodeRelease("n1", "arm", "r2", 200).ok());
  EXPECT_EQ(*store_->LastNodeRelease("n1", "arm"), "r2");
  // An older observation arriving late does not move the node back.
  ASSERT_TRUE(store_->RecordNodeRelease("n1", "arm", "r0", 150).ok());
  EXPECT_EQ(*store_->LastNodeRelease("n1", "arm"), "r2");
  // Kinds are independent.
  EXPECT_EQ(store_->LastNodeRelease("n1", "nic").status().code(),
            StatusCode::kNotFound);
  ASSERT_TRUE(store_->RecordNodeRelease("n1", "nic", "fw-1", 100).ok());
  EXPECT_EQ(*store_->LastNodeRelease("n1", "nic"), "fw-1");
  EXPECT_EQ(*store_->LastNodeRelease("n1", "arm"), "r2");
  // Node releases are not reference values.
  EXPECT_EQ(Generation(), 0);
}

TEST_F(RefvalsStoreTest, NodeReleaseErrors) {
  Status s = store_->RecordNodeRelease("ghost", "arm", "r1", 1);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "node \"ghost\" is not enrolled.");
  ASSERT_TRUE(store_->CreateNode(Node("n1")).ok());
  EXPECT_EQ(store_->RecordNodeRelease("", "arm", "r1", 1).message(),
            "node_id is empty.");
  EXPECT_EQ(store_->RecordNodeRelease("n1", "", "r1", 1).message(),
            "release kind is empty.");
  EXPECT_EQ(store_->RecordNodeRelease("n1", "arm", "", 1).message(),
            "release is empty.");
  EXPECT_EQ(store_->RecordNodeRelease("n1", "arm", "a b", 1).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->RecordNodeRelease("n1", "arm", "r1", -1).message(),
            "release record time is negative.");
  EXPECT_EQ(db_.Int("SELECT count(*) FROM node_releases"), 0);
}

// --- Durability and integrity
// --------------------------------------------------

TEST_F(RefvalsStoreTest, ReopeningTheFileKeepsEverything) {
  ASSERT_TRUE(store_->CreateNode(Node("n1")).ok());
  ASSERT_TRUE(store_->PutReleases({Release("a"), Release("b")}).ok());
  ASSERT_TRUE(
      store_->TransitionRelease("a", {RefState::kActive, "bob", 2000, "go"})
          .ok());
  ASSERT_TRUE(store_->RecordNodeRelease("n1", "arm", "a", 2100).ok());
  std::vector<RefRelease> before = *store_->ListReleases("");
  int64_t generation = Generation();

  Reopen();

  EXPECT_EQ(*store_->ListReleases(""), before);
  EXPECT_EQ(Generation(), generation);
  EXPECT_EQ(*store_->LastNodeRelease("n1", "arm"), "a");
  EXPECT_EQ(store_->GetRelease("a")->state, RefState::kActive);
}

TEST_F(RefvalsStoreTest, SecondConnectionSeesChanges) {
  auto other = db_.Open();
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_TRUE(store_->PutRelease(Release("a")).ok());
  EXPECT_EQ(*(*other)->RefvalsGeneration(), 1);
  ASSERT_TRUE(
      (*other)->TransitionRelease("a", {RefState::kActive, "bob", 5, ""}).ok());
  EXPECT_EQ(store_->GetRelease("a")->state, RefState::kActive);
  EXPECT_EQ(Generation(), 2);
}

TEST_F(RefvalsStoreTest, CorruptRowIsDataLoss) {
  ASSERT_TRUE(store_->PutRelease(Release("a")).ok());
  db_.Exec("UPDATE ref_releases SET body = '{\"schema\": 1}'");
  auto got = store_->GetRelease("a");
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(),
              HasSubstr("sqlite: reference release \"a\" is corrupt: "));
  EXPECT_EQ(store_->ListReleases("").status().code(), StatusCode::kDataLoss);
}

TEST_F(RefvalsStoreTest, RowDisagreeingWithItsColumnsIsDataLoss) {
  ASSERT_TRUE(store_->PutRelease(Release("a")).ok());
  db_.Exec("UPDATE ref_releases SET state = 'active'");
  auto got = store_->GetRelease("a");
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(got.status().message(),
            "sqlite: reference release \"a\" disagrees with its indexed "
            "columns.");
}

}  // namespace
}  // namespace dpuaudit::verifier
