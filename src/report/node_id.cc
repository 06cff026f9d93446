#include "report/node_id.h"

#include <cctype>
#include <string>

#include "common/strict_json.h"
#include "report/claims.h"

namespace dpuaudit::report {

Status ValidateNodeId(std::string_view id, std::string_view what) {
  const std::string field(what);
  if (id.empty() || id.size() > kMaxNodeIdChars) {
    return InvalidArgumentError(field + " must be 1-" + std::to_string(kMaxNodeIdChars) +
                                " characters.");
  }
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' &&
        c != '-') {
      return InvalidArgumentError(field + " " + strict_json::Quote(id) +
                                  " may only use [A-Za-z0-9._-].");
    }
  }
  if (id == "." || id == "..") {
    return InvalidArgumentError(field + " " + strict_json::Quote(id) +
                                " is a URL dot-segment; use another id.");
  }
  return OkStatus();
}

}  // namespace dpuaudit::report
