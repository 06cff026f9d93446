// The operator interface to nodes (issue 15 §5): `dpuaudit nodes list`,
// `node show ID`, `approve ID`, `reject ID` and `explain ID`, each one call
// of the verifier's admin API (docs/architecture.md#http-api), so they work
// from any machine with a token and never need the verifier's database.
//
// Exit codes: 0 done (explain: the node is admitted); 1 refused (approve:
// the thumbprint or serial is not the stored one, the enrollment expired or
// the node is in the wrong state, HTTP 409/410; explain: the node is not
// admitted); 2 usage or runtime error (bad arguments, verifier unreachable,
// HTTP 401/403/404 and every other error), printed to stderr.
//
// Guarantees: the token is read from its file and sent only as a bearer
// header; human output fits 100 columns, failing and unknown rules first
// (--wide prints whole reasons); --json prints the verifier's JSON
// (docs/schemas/).
// Does not: keep state; colour anything.
#ifndef DPUAUDIT_APPS_CLI_NODES_H_
#define DPUAUDIT_APPS_CLI_NODES_H_

#include <cstdint>
#include <string>

#include "apps/cli/firmware.h"

namespace dpuaudit::apps {

struct NodeCommandOptions {
  std::string node_id;
  std::string thumbprint, serial, by, reason;  // approve / reject
  int64_t limit = 0;                           // nodes list: page size (0: all pages)
  bool json = false;
  bool wide = false;
};

int NodesList(const NodeCommandOptions& o, const AdminTarget& t);
int NodeShow(const NodeCommandOptions& o, const AdminTarget& t);
int NodeApprove(const NodeCommandOptions& o, const AdminTarget& t);
int NodeReject(const NodeCommandOptions& o, const AdminTarget& t);
int Explain(const NodeCommandOptions& o, const AdminTarget& t);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_NODES_H_
