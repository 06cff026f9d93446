// The SQLite store's schema: its DDL, and the one place a file's schema is
// created or brought up to date (EnsureSchema).
//
// Guarantees:
//  - The schema is versioned with PRAGMA user_version (kSchemaVersion) and
//    marked with PRAGMA application_id "DPA1"; a fresh file gets the whole
//    schema inside one BEGIN IMMEDIATE transaction; a file with another
//    schema version, another application_id, or tables but no version is
//    refused (FAILED_PRECONDITION).
//  - Tables and indexes that joined schema 1 later (reference values, TPM
//    bindings, enrollment and identity, storage bounds) are added to a
//    schema-1 file made before they existed, under the write lock; a file
//    with only part of the storage-bound columns is DATA_LOSS.
// Does not: migrate from older schema versions (there are none yet); read
// or write any row outside ref_generation's seed.
#ifndef DPUAUDIT_VERIFIER_STORE_SCHEMA_H_
#define DPUAUDIT_VERIFIER_STORE_SCHEMA_H_

#include "common/status.h"
#include "verifier/store/sqlite.h"

namespace dpuaudit::verifier::sqlite {

inline constexpr int kSchemaVersion = 1;

// Creates the schema in a fresh file, or checks an existing one and adds
// what joined schema 1 later. Takes the connection's mutex for each write.
Status EnsureSchema(Connection& c);

}  // namespace dpuaudit::verifier::sqlite

#endif  // DPUAUDIT_VERIFIER_STORE_SCHEMA_H_
