// Node ids, as both sides of the report speak them: the agent's --node-id,
// the verifier's enrollment, challenge and node routes, the CLI's admin
// commands.
//
// Guarantees: ValidateNodeId accepts exactly 1-kMaxNodeIdChars characters
// of [A-Za-z0-9._-] other than "." and ".." (a node id is a URL path
// segment, /v1/nodes/{id}: RFC 3986 §5.2.4 removes those dot-segments, so
// they would name another resource). INVALID_ARGUMENT otherwise, naming the
// field (`what`, e.g. "node_id" or "--node-id") and quoting the id.
// Does not: decide whether the id is enrolled or free.
#ifndef DPUAUDIT_REPORT_NODE_ID_H_
#define DPUAUDIT_REPORT_NODE_ID_H_

#include <string_view>

#include "common/status.h"

namespace dpuaudit::report {

Status ValidateNodeId(std::string_view id, std::string_view what = "node_id");

}  // namespace dpuaudit::report

#endif  // DPUAUDIT_REPORT_NODE_ID_H_
