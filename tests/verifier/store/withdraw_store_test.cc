// SqliteStore::WithdrawPendingRelease (issue 16 §6) against a real SQLite
// file: only a pending release goes, with one generation bump, and the
// label can be imported again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::RawDb;

RefRelease Pending(const std::string& label) {
  RefRelease r;
  r.release = label;
  r.model = "BlueField-3";
  r.state = RefState::kPending;
  r.values = {{"tpm-pcr:0", "", "", "", std::string(64, 'a')}};
  r.history = {{RefState::kPending, "alice", 1000, "by mistake"}};
  r.created_at = 1000;
  return r;
}

class WithdrawStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    path_ = db_.path();
    auto s = db_.Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  int64_t Generation() {
    auto g = store_->RefvalsGeneration();
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? *g : -1;
  }
  int64_t Rows() { return db_.Int("SELECT count(*) FROM ref_releases"); }
  ::dpuaudit::testing::TestStoreDb db_;
  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqlStore> store_;
};

TEST_F(WithdrawStoreTest, APendingReleaseIsDeletedWithOneGenerationBump) {
  ASSERT_TRUE(store_->PutRelease(Pending("oops")).ok());
  ASSERT_TRUE(store_->PutRelease(Pending("keep")).ok());
  const int64_t before = Generation();
  auto gone = store_->WithdrawPendingRelease("oops");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(gone->release, "oops");
  EXPECT_EQ(gone->state, RefState::kPending);
  EXPECT_EQ(gone->values.size(), 1u);
  EXPECT_EQ(Generation(), before + 1);
  EXPECT_EQ(Rows(), 1);
  EXPECT_EQ(store_->GetRelease("oops").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetRelease("keep").ok());
  // The label may be imported again, even with other content.
  RefRelease other = Pending("oops");
  other.values[0].sha256 = std::string(64, 'b');
  EXPECT_TRUE(store_->PutRelease(other).ok());
}

TEST_F(WithdrawStoreTest, AnyOtherStateIsRefusedAndNothingChanges) {
  struct Case {
    RefState to;
    const char* name;
  };
  for (const Case& c : {Case{RefState::kActive, "active"}, Case{RefState::kRevoked, "revoked"}}) {
    const std::string label = std::string("r-") + c.name;
    ASSERT_TRUE(store_->PutRelease(Pending(label)).ok());
    ASSERT_TRUE(store_->TransitionRelease(label, {c.to, "bob", 2000, "go"}).ok());
    const int64_t before = Generation();
    auto refused = store_->WithdrawPendingRelease(label);
    EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << c.name;
    EXPECT_EQ(refused.status().message(),
              "release " + label + " is " + c.name +
                  "; only a pending release can be withdrawn (revoke or obsolete it instead).");
    EXPECT_EQ(Generation(), before);
    auto kept = store_->GetRelease(label);
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(kept->state, c.to);
  }
  ASSERT_TRUE(store_->TransitionRelease("r-active", {RefState::kObsolete, "bob", 3000, "old"}).ok());
  EXPECT_EQ(store_->WithdrawPendingRelease("r-active").status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(Rows(), 2);
}

TEST_F(WithdrawStoreTest, AnUnknownLabelIsNotFound) {
  auto r = store_->WithdrawPendingRelease("nope");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "reference release \"nope\" is not known.");
  EXPECT_EQ(Generation(), 0);
}

}  // namespace
}  // namespace dpuaudit::verifier
