// VerifierService's reloadable state (issue 15, verifier lifecycle): the
// policy and the bearer tokens, replaced on SIGHUP while serving. See
// service.h "Reload".

#include "verifier/service.h"

namespace dpuaudit::verifier {

void VerifierService::InitReloadable(Policy policy) {
  std::lock_guard<std::mutex> lock(policies_mu_);
  policies_.push_back(std::make_unique<const Policy>(std::move(policy)));
  policy_.store(policies_.back().get());
  tokens_.store(std::make_shared<const Tokens>(
      Tokens{options_.bootstrap_token, options_.admin_token, options_.reader_token}));
}

Status VerifierService::ValidateTokens(const Tokens& t) {
  if (!t.admin.empty() && t.admin == t.bootstrap) {
    return InvalidArgumentError("the admin token must differ from the bootstrap token.");
  }
  if (!t.reader.empty() && (t.reader == t.admin || t.reader == t.bootstrap)) {
    return InvalidArgumentError(
        "the reader token must differ from the admin and bootstrap tokens.");
  }
  return OkStatus();
}

Status VerifierService::SetTokens(Tokens tokens) {
  DPA_RETURN_IF_ERROR(ValidateTokens(tokens));
  tokens_.store(std::make_shared<const Tokens>(std::move(tokens)));
  return OkStatus();
}

StatusOr<std::vector<std::string>> VerifierService::SetPolicy(Policy policy) {
  bool changed = false;
  {
    // Exclusive: every report under appraisal (SubmitReport holds the lock
    // shared) finishes under the old policy before the swap, and every
    // later one sees the new policy; so the sweep below cannot miss an
    // admit that the old policy granted concurrently.
    std::unique_lock<std::shared_mutex> reports(reload_mu_);
    std::lock_guard<std::mutex> lock(policies_mu_);
    changed = policy.sha256() != policy_.load()->sha256();
    policies_.push_back(std::make_unique<const Policy>(std::move(policy)));
    policy_.store(policies_.back().get());
  }
  if (!changed) return std::vector<std::string>{};
  const Policy& now = this->policy();
  // The new document and its audit log entry (issue 16), before any result
  // is judged under it.
  DPA_RETURN_IF_ERROR(EnsurePolicyRecorded(now));
  return ReappraiseAdmitted("a policy reload (policy " + now.name() + " sha256:" +
                            now.sha256().substr(0, 16) + ")");
}

}  // namespace dpuaudit::verifier
