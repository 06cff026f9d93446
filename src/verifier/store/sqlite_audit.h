// Appending to the hash-chained audit log inside a write transaction
// (issue 16 §1, verifier/audit_chain.h): every SqliteStore write that the
// log records calls AppendAudit before it commits, so the change and its
// entry are one atomic unit. Not an API for other code.
#ifndef DPUAUDIT_VERIFIER_STORE_SQLITE_AUDIT_H_
#define DPUAUDIT_VERIFIER_STORE_SQLITE_AUDIT_H_

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "verifier/store/sqlite.h"

namespace dpuaudit::verifier::sqlite {

// Appends {seq: last+1, time, kind, node, data} chained to the last entry.
// Must run inside a write transaction on `c` (the caller's).
Status AppendAudit(sql::Connection& c, std::string_view kind, std::string_view node_id,
                   nlohmann::json data, int64_t time);

// Truncates free text carried into an entry (reasons, errors) to 256 bytes
// on a UTF-8 boundary.
std::string AuditText(std::string_view s);

}  // namespace dpuaudit::verifier::sqlite

#endif  // DPUAUDIT_VERIFIER_STORE_SQLITE_AUDIT_H_
