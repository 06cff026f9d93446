// SqliteStore internals for node status, decision events and the webhook
// outbox (issue 15): the write a transition makes, shared by
// ApplyNodeTransition and the result inserts that carry one.
#ifndef DPUAUDIT_VERIFIER_STORE_SQLITE_STATUS_H_
#define DPUAUDIT_VERIFIER_STORE_SQLITE_STATUS_H_

#include <cstdint>

#include "common/status.h"
#include "verifier/store/sqlite.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier::sqlite {

// Validates and writes `t` in the caller's transaction; result_id > 0
// overrides t.status.last_result_id (the result just inserted).
Status WriteNodeTransition(sql::Connection& c, const NodeTransition& t,
                           int64_t result_id);

}  // namespace dpuaudit::verifier::sqlite

#endif  // DPUAUDIT_VERIFIER_STORE_SQLITE_STATUS_H_
