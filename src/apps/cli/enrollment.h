// The CLI's enrollment and identity commands (issue 12) through the
// verifier's admin API: `dpuaudit tokens issue|list|revoke` and `dpuaudit
// nodes revoke` (the local `dpuaudit-verifier` commands on the database
// share their output, apps/shared/enrollment_print.h). Each command returns
// the process exit code: 0 done, 1 refused by the verifier (wrong state,
// expired; apps/cli/api_client.h), 2 usage or runtime error (an unknown
// node or token included), printed to stderr with its reason.
//
// --json prints the verifier's JSON answer (tokens issue: without the
// token when --out has it), each shape a schema in docs/schemas/:
// tokens-issue, tokens-list, token-revoke, node-revoke, bmc-admin (rebind,
// approve), bmc-status, node-ack, events, webhooks-status.
//
// Does not: print or log a token anywhere but the one place asked for
// (stdout, or --out written 0600); keep any state.
#ifndef DPUAUDIT_APPS_CLI_ENROLLMENT_H_
#define DPUAUDIT_APPS_CLI_ENROLLMENT_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/cli/api_client.h"
#include "apps/cli/firmware.h"
#include "apps/shared/enrollment_print.h"
#include "common/status.h"

namespace dpuaudit::apps {

struct TokenIssueOptions {
  std::string node_id;
  std::string serial;
  std::string ttl = "24h";
  std::string by;  // default: the login name
  std::string out;
  bool json = false;
};
// `dpuaudit tokens issue|list|revoke` and `dpuaudit nodes revoke`.
int TokensIssue(const TokenIssueOptions& o, const AdminTarget& t);
int TokensList(bool json, const AdminTarget& t);
// `dpuaudit bmc rebind` (action "rebind") and `dpuaudit bmc approve`
// (action "approve", target irot|erot): the BMC path's administrator
// actions (docs/bmc-config-schema.md).
// `dpuaudit bmc status --node ID`: GET /v1/nodes/{id}/bmc with the reader
// (or admin) token, the latest pull's verdict and what is stored.
int BmcStatus(const std::string& node_id, bool json, const AdminTarget& t);
int BmcAdminAction(const std::string& action, const std::string& node_id,
                   const std::string& target, const std::string& by, const std::string& reason,
                   bool json, const AdminTarget& t);
int TokensRevoke(const std::string& token_id, const std::string& by, bool json,
                 const AdminTarget& t);
int NodesRevoke(const std::string& node_id, const std::string& by,
                const std::string& reason, bool json, const AdminTarget& t);

// Issue 15 (docs/events.md, docs/webhooks.md).
// POST /v1/nodes/{id}/acknowledge: clears a sticky hold (exit 1: not held).
int NodeAcknowledge(const std::string& node_id, const std::string& by,
                    const std::string& reason, bool json, const AdminTarget& t);
// GET /v1/events (reader or admin token).
int EventsList(const std::string& node_id, int64_t after, int64_t limit, bool json,
               const AdminTarget& t);
// GET /v1/webhooks (admin). Exit 1 while a delivery is failing.
int WebhooksStatus(bool json, const AdminTarget& t);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_ENROLLMENT_H_
