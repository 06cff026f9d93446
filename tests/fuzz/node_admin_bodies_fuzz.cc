// Fuzzes the operator interface's request parsers (verifier/node_admin.h):
// the bodies of POST /v1/nodes/{id}/approve and /reject, and the query of
// GET /v1/nodes. The first byte picks the parser (% 3), the rest is the
// input (for the query: "limit\nafter"). Properties: nothing throws or
// crashes; a parsed approval has a 43-character thumbprint and a non-empty
// "by"; a parsed query has a limit within 1..kMaxNodeListLimit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "verifier/node_admin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit::verifier;
  if (size == 0) return 0;
  const std::string in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto b = ParseApproveBody(in);
      if (b.ok() && (b->thumbprint.size() != 43 || b->by.empty())) std::abort();
      if (!b.ok() && b.status().message().empty()) std::abort();
      break;
    }
    case 1: {
      auto b = ParseRejectBody(in);
      if (b.ok() && (b->by.empty() || b->reason.empty())) std::abort();
      break;
    }
    default: {
      const size_t nl = in.find('\n');
      std::optional<std::string> limit = in.substr(0, nl);
      std::optional<std::string> after;
      if (nl != std::string::npos) after = in.substr(nl + 1);
      auto q = ParseNodeListQuery(limit, after);
      if (q.ok() && (q->limit < 1 || q->limit > kMaxNodeListLimit)) std::abort();
      break;
    }
  }
  return 0;
}
