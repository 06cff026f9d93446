// Direct SQLite access for store tests: to set up hostile files, look
// behind the Store API and damage rows. Test-only; every call EXPECTs
// success.
#ifndef DPUAUDIT_TESTS_VERIFIER_RAW_DB_H_
#define DPUAUDIT_TESTS_VERIFIER_RAW_DB_H_

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace dpuaudit::testing {

class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db_); }
  void Exec(const char* sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql, nullptr, nullptr, &err), SQLITE_OK)
        << (err ? err : "");
    sqlite3_free(err);
  }
  int64_t Int(const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql, -1, &s, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  }
  std::string Text(const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql, -1, &s, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    const void* p = sqlite3_column_blob(s, 0);
    std::string v(static_cast<const char*>(p),
                  static_cast<size_t>(sqlite3_column_bytes(s, 0)));
    sqlite3_finalize(s);
    return v;
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_VERIFIER_RAW_DB_H_
