// POST /v1/refvals/{release}/withdraw (issue 16 §6): the admin API call that
// removes a release imported by mistake while it is still pending.
//
// Guarantees: the admin bearer is checked first (a refusal there emits no
// event here; the HTTP layer audits the 401); the body must be exactly
// {"by": "...", "reason": "..."}, both non-empty strings (INVALID_ARGUMENT
// otherwise); the store deletes the release in one transaction only while
// it is pending (FAILED_PRECONDITION naming its state otherwise, NOT_FOUND
// for an unknown label). Every call past the admin check appends one
// "refvals_withdraw" audit event with its outcome.
// Does not: re-appraise admitted nodes: a pending release never makes a
// node pass (only "active" does), so withdrawing one cannot turn an admit.
#ifndef DPUAUDIT_APPS_VERIFIER_REFVALS_WITHDRAW_H_
#define DPUAUDIT_APPS_VERIFIER_REFVALS_WITHDRAW_H_

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "verifier/service.h"

namespace dpuaudit::apps {

// The answer: {"withdrawn_release": LABEL, "model", "previous_state":
// "pending", "values": N, "by", "reason"}
// (docs/schemas/refvals-withdraw.schema.json).
StatusOr<nlohmann::json> WithdrawRelease(verifier::VerifierService& svc,
                                         const std::string& release, std::string_view body,
                                         const std::optional<std::string>& bearer);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_REFVALS_WITHDRAW_H_
