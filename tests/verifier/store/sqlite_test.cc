// The generic SQLite layer (verifier/store/sqlite.h) on real files: RAII of
// statements and transactions, rollback on scope exit, error mapping.
#include "verifier/store/sqlite.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"

namespace dpuaudit::verifier::sqlite {
namespace {

using ::dpuaudit::testing::RawDb;
using ::dpuaudit::testing::TempDir;

constexpr const char* kCreate =
    "CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v INTEGER, b BLOB) STRICT";
constexpr const char* kInsert = "INSERT INTO t (k, v, b) VALUES (?1, ?2, ?3)";
constexpr const char* kCount = "SELECT count(*) FROM t";
constexpr const char* kSelect = "SELECT k, v, b FROM t WHERE k = ?1";
constexpr const char* kAll = "SELECT k FROM t ORDER BY k";

class SqliteLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = Connection::Open(path_, 1000);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conn_ = *std::move(c);
    ASSERT_TRUE(conn_->ExecScript(kCreate, "creating t").ok());
  }
  int64_t Count() {
    auto lock = conn_->Lock();
    return conn_->QueryInt(kCount, "counting").value();
  }

  TempDir dir_;
  std::string path_ = dir_.File("layer.db");
  std::unique_ptr<Connection> conn_;
};

TEST_F(SqliteLayerTest, OpenConfiguresWalAndOwnerOnlyFile) {
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
  auto lock = conn_->Lock();
  EXPECT_EQ(conn_->QueryInt("PRAGMA foreign_keys", "fk").value(), 1);
  EXPECT_EQ(conn_->QueryInt("PRAGMA synchronous", "sync").value(), 2);
}

TEST_F(SqliteLayerTest, MemoryDatabaseIsRefusedWithoutWal) {
  auto c = Connection::Open(":memory:", 1000);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(),
            "sqlite: journal_mode is \"memory\", not \"wal\".");
}

TEST_F(SqliteLayerTest, EmptyPathIsInvalid) {
  auto c = Connection::Open("", 1000);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "sqlite: path is empty.");
}

TEST_F(SqliteLayerTest, TransactionRollsBackWhenItGoesAwayUncommitted) {
  {
    auto txn = conn_->Begin();
    ASSERT_TRUE(txn.ok()) << txn.status().ToString();
    ASSERT_TRUE(conn_->Run(kInsert, "inserting", "a", int64_t{1},
                           Blob{"x"}).ok());
    EXPECT_EQ(conn_->QueryInt(kCount, "counting").value(), 1);
  }  // no Commit
  EXPECT_EQ(Count(), 0);
  EXPECT_EQ(RawDb(path_).Int(kCount), 0);
}

TEST_F(SqliteLayerTest, CommittedTransactionIsDurableAndReleasesTheLock) {
  {
    auto txn = conn_->Begin();
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(conn_->Run(kInsert, "inserting", "a", int64_t{1},
                           Blob{"x"}).ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(Count(), 1);  // Count takes the mutex: the transaction let it go
  EXPECT_EQ(RawDb(path_).Int(kCount), 1);
}

TEST_F(SqliteLayerTest, EarlyReturnRollsBack) {
  auto body = [&]() -> Status {
    DPA_ASSIGN_OR_RETURN(Transaction txn, conn_->Begin());
    DPA_RETURN_IF_ERROR(
        conn_->Run(kInsert, "inserting", "a", int64_t{1}, Blob{"x"}));
    // The duplicate key fails; the first row goes with the transaction.
    DPA_RETURN_IF_ERROR(
        conn_->Run(kInsert, "inserting", "a", int64_t{2}, Blob{"y"}));
    return txn.Commit();
  };
  Status s = body();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(),
            "sqlite: inserting: UNIQUE constraint failed: t.k.");
  EXPECT_EQ(Count(), 0);
}

TEST_F(SqliteLayerTest, LastConstraintNamesTheFailedStep) {
  auto lock = conn_->Lock();
  ASSERT_TRUE(conn_->Run(kInsert, "inserting", "a", int64_t{1}, Blob{""}).ok());
  EXPECT_EQ(conn_->LastConstraint(), Constraint::kNone);
  EXPECT_FALSE(conn_->Run(kInsert, "inserting", "a", int64_t{1}, Blob{""}).ok());
  EXPECT_EQ(conn_->LastConstraint(), Constraint::kPrimaryKey);
  ASSERT_TRUE(conn_->Run(kInsert, "inserting", "b", int64_t{1}, Blob{""}).ok());
  EXPECT_EQ(conn_->LastConstraint(), Constraint::kNone);
}

TEST_F(SqliteLayerTest, MovedTransactionRollsBackOnce) {
  {
    auto txn = conn_->Begin();
    ASSERT_TRUE(txn.ok());
    Transaction moved = *std::move(txn);
    ASSERT_TRUE(conn_->Run(kInsert, "inserting", "a", int64_t{1},
                           Blob{"x"}).ok());
  }
  EXPECT_EQ(Count(), 0);
  // The connection is usable again: a new transaction begins and commits.
  auto again = conn_->Begin();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->Commit().ok());
}

TEST_F(SqliteLayerTest, StatementsAreResetForReuseAndBindTypes) {
  auto lock = conn_->Lock();
  ASSERT_TRUE(conn_->Insert(kInsert, "inserting", "a", int64_t{7},
                            Blob{std::string_view("\0z", 2)}).ok());
  ASSERT_TRUE(conn_->Insert(kInsert, "inserting", "b",
                            std::optional<int64_t>(), Blob{""}).ok());
  EXPECT_EQ(conn_->LastInsertRowid(), 2);
  struct Row {
    std::string k;
    std::optional<int64_t> v;
    std::string b;
  };
  auto from_row = [](const Stmt& s) {
    return Row{s.ColText(0), s.ColOptionalInt(1), s.ColBlob(2)};
  };
  // The same cached statement twice: the first use was reset.
  auto a = conn_->QueryOne(kSelect, "reading", from_row, "a");
  auto b = conn_->QueryOne(kSelect, "reading", from_row, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->has_value() && b->has_value());
  EXPECT_EQ((*a)->v, 7);
  EXPECT_EQ((*a)->b, std::string("\0z", 2));
  EXPECT_EQ((*b)->v, std::nullopt);
  auto none = conn_->QueryOne(kSelect, "reading", from_row, "zz");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto all = conn_->QueryAll(kAll, "listing",
                             [](const Stmt& s) { return s.ColText(0); });
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(conn_->RunChanges("DELETE FROM t", "deleting").value(), 2);
}

TEST_F(SqliteLayerTest, ErrorsNameWhatFailed) {
  auto lock = conn_->Lock();
  auto r = conn_->QueryInt("SELECT v FROM t WHERE 0", "reading nothing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(r.status().message(), "sqlite: reading nothing returned no row.");
  Status row = conn_->Run("SELECT 1", "expecting no row");
  EXPECT_EQ(row.message(), "sqlite: expecting no row: unexpected row.");
  auto bad = conn_->Prepare("SELEKT 1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "sqlite: preparing statement: near \"SELEKT\": syntax error.");
}

TEST(SqliteErrorStatusTest, MapsResultCodes) {
  EXPECT_EQ(ErrorStatus(SQLITE_FULL, "writing", nullptr).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ErrorStatus(SQLITE_FULL, "writing", nullptr).message(),
            "sqlite: writing: database or disk is full.");
  EXPECT_EQ(ErrorStatus(SQLITE_BUSY, "w", nullptr).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ErrorStatus(SQLITE_NOMEM, "w", nullptr).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ErrorStatus(SQLITE_IOERR_FSYNC, "w", nullptr).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ErrorStatus(SQLITE_CONSTRAINT_UNIQUE, "w", nullptr).code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(ErrorStatus(SQLITE_CONSTRAINT_FOREIGNKEY, "w", nullptr).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrorStatus(SQLITE_CORRUPT, "w", nullptr).code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(ErrorStatus(SQLITE_NOTADB, "w", nullptr).code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(ErrorStatus(SQLITE_TOOBIG, "w", nullptr).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrorStatus(SQLITE_READONLY, "w", nullptr).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrorStatus(SQLITE_MISUSE, "w", nullptr).code(),
            StatusCode::kInternal);
}

TEST_F(SqliteLayerTest, TransactionsSerializeThreadsOnOneConnection) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto txn = conn_->Begin();
        ASSERT_TRUE(txn.ok()) << txn.status().ToString();
        std::string k = std::to_string(t) + "-" + std::to_string(i);
        ASSERT_TRUE(conn_->Run(kInsert, "inserting", k, int64_t{i},
                               Blob{k}).ok());
        ASSERT_TRUE(txn->Commit().ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(Count(), 100);
}

}  // namespace
}  // namespace dpuaudit::verifier::sqlite
