// SqliteStore hardware-path records (issue 14: BMC/IRoT bindings and SPDM
// baselines) against real SQLite files in a fresh temporary directory:
// first seen wins, an administrator's replacement is recorded with who and
// why, corrupt rows are DATA_LOSS, and a file made before the table existed
// gains it.
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

NodeRecord Node(const std::string& id) {
  NodeRecord n;
  n.node_id = id;
  n.public_key_pem =
      "-----BEGIN PUBLIC KEY-----\nkey\n-----END PUBLIC KEY-----\n";
  n.key_thumbprint = "thumb-" + id;
  n.enrolled_at = 900;
  return n;
}

HardwareRecord Record(const std::string& node, const std::string& kind,
                      const std::string& value, const std::string& by = "first-seen",
                      const std::string& reason = "first seen") {
  return HardwareRecord{node, kind, value, 1000, by, reason};
}

class HardwareRecordStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    path_ = db_.path();
    Reopen();
    ASSERT_TRUE(store_->CreateNode(Node("n1")).ok());
  }
  void Reopen() {
    store_.reset();
    auto store = db_.Open();
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  ::dpuaudit::testing::TestStoreDb db_;
  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqlStore> store_;
};

TEST_F(HardwareRecordStoreTest, FirstSeenWinsAndSurvivesReopen) {
  auto first = store_->PutHardwareRecordIfAbsent(
      Record("n1", "irot-baseline", R"({"1":"a"})"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = store_->PutHardwareRecordIfAbsent(
      Record("n1", "irot-baseline", R"({"1":"b"})"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->value_json, R"({"1":"a"})");
  Reopen();
  auto got = store_->GetHardwareRecord("n1", "irot-baseline");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, *first);
  auto history = store_->NodeHistory("n1");
  ASSERT_TRUE(history.ok());
  int events = 0;
  for (const auto& e : *history) events += e.event == "irot-baseline-first-seen";
  EXPECT_EQ(events, 1);
}

TEST_F(HardwareRecordStoreTest, KindsAreIndependent) {
  ASSERT_TRUE(store_->PutHardwareRecordIfAbsent(Record("n1", "irot-baseline", "{}")).ok());
  auto erot = store_->GetHardwareRecord("n1", "erot-baseline");
  EXPECT_EQ(erot.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(erot.status().message(), "node \"n1\" has no erot-baseline.");
}

TEST_F(HardwareRecordStoreTest, ReplacementNeedsAnAdministratorAndAReasonAndIsRecorded) {
  ASSERT_TRUE(store_->PutHardwareRecordIfAbsent(Record("n1", "bmc-binding", R"({"k":1})")).ok());
  auto anonymous = store_->ReplaceHardwareRecord(Record("n1", "bmc-binding", R"({"k":2})"));
  EXPECT_EQ(anonymous.status().code(), StatusCode::kInvalidArgument);
  auto no_reason =
      store_->ReplaceHardwareRecord(Record("n1", "bmc-binding", R"({"k":2})", "alice", ""));
  EXPECT_EQ(no_reason.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetHardwareRecord("n1", "bmc-binding")->value_json, R"({"k":1})");

  auto replaced = store_->ReplaceHardwareRecord(
      Record("n1", "bmc-binding", R"({"k":2})", "alice", "IRoT replaced in RMA 42"));
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_EQ(store_->GetHardwareRecord("n1", "bmc-binding")->value_json, R"({"k":2})");
  auto history = store_->NodeHistory("n1");
  ASSERT_TRUE(history.ok());
  ASSERT_FALSE(history->empty());
  EXPECT_EQ(history->back().event, "bmc-binding-approved");
  EXPECT_EQ(history->back().actor, "alice");
  EXPECT_EQ(history->back().detail, "IRoT replaced in RMA 42");
}

TEST_F(HardwareRecordStoreTest, RefusesUnknownNodesKindsAndOversizedValues) {
  EXPECT_EQ(store_->PutHardwareRecordIfAbsent(Record("ghost", "irot-baseline", "{}"))
                .status()
                .code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store_->PutHardwareRecordIfAbsent(Record("n1", "tpm-baseline", "{}"))
                .status()
                .message(),
            "kind \"tpm-baseline\" is not a hardware record kind.");
  EXPECT_EQ(store_
                ->PutHardwareRecordIfAbsent(Record(
                    "n1", "irot-baseline", std::string(kMaxHardwareRecordBytes + 1, 'x')))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetHardwareRecord("n1", "irot-baseline").status().code(),
            StatusCode::kNotFound);
}

TEST_F(HardwareRecordStoreTest, CorruptRowIsDataLoss) {
  ASSERT_TRUE(store_->PutHardwareRecordIfAbsent(Record("n1", "irot-baseline", "{}")).ok());
  store_.reset();
  {
    auto& db = db_;
    db.Exec("UPDATE hardware_records SET kind = 'bogus'");
  }
  Reopen();
  ASSERT_TRUE(store_->PutHardwareRecordIfAbsent(Record("n1", "irot-baseline", "{}")).ok());
  {
    auto& db = db_;
    db.Exec("UPDATE hardware_records SET set_by = '' WHERE kind = 'irot-baseline'");
  }
  auto got = store_->GetHardwareRecord("n1", "irot-baseline");
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
}

TEST_F(HardwareRecordStoreTest, FileWithoutTheTableGainsIt) {
  DPA_SQLITE_ONLY("tables added to older SQLite files");
  store_.reset();
  {
    auto& db = db_;
    db.Exec("DROP TABLE hardware_records");
  }
  Reopen();
  EXPECT_TRUE(store_->PutHardwareRecordIfAbsent(Record("n1", "erot-baseline", "{}")).ok());
}

}  // namespace
}  // namespace dpuaudit::verifier
