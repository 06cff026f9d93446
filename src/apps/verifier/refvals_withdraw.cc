#include "apps/verifier/refvals_withdraw.h"

#include "verifier/audit_events.h"
#include "verifier/refvals/model.h"

namespace dpuaudit::apps {
namespace {

constexpr size_t kMaxBy = 128;
constexpr size_t kMaxReason = 1024;

struct WithdrawRequest {
  std::string by, reason;
};

StatusOr<WithdrawRequest> ParseWithdrawRequest(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError("the request body must be a JSON object {\"by\", \"reason\"}.");
  }
  WithdrawRequest r;
  for (const auto& [k, v] : j.items()) {
    if (k != "by" && k != "reason") {
      return InvalidArgumentError("request member \"" + k + "\" is not allowed.");
    }
    if (!v.is_string()) return InvalidArgumentError("\"" + k + "\" must be a string.");
    (k == "by" ? r.by : r.reason) = v.get<std::string>();
  }
  if (r.by.empty()) return InvalidArgumentError("\"by\" (who withdraws) is required.");
  if (r.reason.empty()) return InvalidArgumentError("\"reason\" is required.");
  if (r.by.size() > kMaxBy) return InvalidArgumentError("\"by\" is longer than 128 bytes.");
  if (r.reason.size() > kMaxReason) {
    return InvalidArgumentError("\"reason\" is longer than 1024 bytes.");
  }
  for (const std::string* s : {&r.by, &r.reason}) {
    for (unsigned char c : *s) {
      if (c < 0x20 || c == 0x7f) {
        return InvalidArgumentError(std::string(s == &r.by ? "\"by\"" : "\"reason\"") +
                                    " must not contain control characters.");
      }
    }
  }
  return r;
}

}  // namespace

StatusOr<nlohmann::json> WithdrawRelease(verifier::VerifierService& svc,
                                         const std::string& release, std::string_view body,
                                         const std::optional<std::string>& bearer) {
  DPA_RETURN_IF_ERROR(svc.CheckAdminToken(bearer));
  auto run = [&]() -> StatusOr<nlohmann::json> {
    DPA_ASSIGN_OR_RETURN(WithdrawRequest req, ParseWithdrawRequest(body));
    DPA_ASSIGN_OR_RETURN(verifier::RefRelease gone,
                         svc.store().WithdrawPendingRelease(release));
    return nlohmann::json{{"withdrawn_release", gone.release},
                          {"model", gone.model},
                          {"previous_state", std::string(verifier::RefStateName(gone.state))},
                          {"values", gone.values.size()},
                          {"by", req.by},
                          {"reason", req.reason}};
  };
  StatusOr<nlohmann::json> r = run();
  std::string actor = "admin";
  std::string detail = "withdraw " + release;
  if (r.ok()) {
    actor = (*r)["by"].get<std::string>();
    detail += " (pending, " + std::to_string((*r)["values"].get<size_t>()) +
              " values): " + (*r)["reason"].get<std::string>();
  } else {
    if (auto req = ParseWithdrawRequest(body); req.ok()) actor = req->by;
    detail += ": " + r.status().message();
  }
  svc.Audit(verifier::MakeAuditEvent("refvals_withdraw", actor, "", detail,
                                     r.ok() ? "ok" : "refused"));
  return r;
}

}  // namespace dpuaudit::apps
