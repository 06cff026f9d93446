// The PostgreSQL schema migrations, embedded at build time from
// src/verifier/store/pg_migrations/NNNN_name.sql (cmake/embed_migrations.cmake).
//
// Guarantees: versions are the files' numeric prefixes, in increasing order.
// Does not: check that versions are contiguous (RunMigrations does).
#ifndef DPUAUDIT_VERIFIER_STORE_PG_MIGRATIONS_H_
#define DPUAUDIT_VERIFIER_STORE_PG_MIGRATIONS_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace dpuaudit::verifier::pg {

struct Migration {
  int64_t version;
  std::string_view name;  // file stem, e.g. "0001_initial"
  std::string_view sql;
};

const std::vector<Migration>& Migrations();

}  // namespace dpuaudit::verifier::pg

#endif  // DPUAUDIT_VERIFIER_STORE_PG_MIGRATIONS_H_
