// Parser for `mlxprivhost -d <mst> q` (and `q --full`), the host restriction
// ("zero-trust mode") query of MFT / mstflint (docs/bluefield.md#mlxprivhost).
//
// Accepted layouts (docs/bluefield.md#query-output):
//   Host configurations              <- MFT >= 4.17 title, or
//   Current device configurations:   <- MFT 4.16 title
//   -------------------
//   host index                    : 0            <- only with --full
//   level                         : RESTRICTED
//
//   Port functions status:
//   -----------------------
//   disable_rshim                 : TRUE
//   disable_tracer                : TRUE
//   disable_port_owner            : TRUE
//   disable_counter_rd            : TRUE
// With several hosts (--full) each row holds one value per host.
//
// Guarantees: rows are keyed on their name, never on position; every field
// is read from its own line and never inferred from `level`; `level` must be
// present; values must be RESTRICTED/PRIVILEGED and TRUE/FALSE (anything else
// is INVALID_ARGUMENT naming the line); a row repeated, or with a different
// number of values than `level`, is an error.
// Does NOT check: that the query really succeeded. mlxprivhost prints
// PRIVILEGED with every flag FALSE and exits 0 when its NV-config read fails
// (docs/bluefield.md#privileged-pitfall), so a parsed PRIVILEGED is not proof
// of a successful read.
#ifndef DPUAUDIT_BLUEFIELD_MLXPRIVHOST_H_
#define DPUAUDIT_BLUEFIELD_MLXPRIVHOST_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dpuaudit::bluefield {

enum class PrivilegeLevel { kRestricted, kPrivileged };
std::string_view PrivilegeLevelName(PrivilegeLevel level);  // "RESTRICTED"...

enum class MlxprivhostTitle {
  kHostConfigurations,           // "Host configurations" (MFT >= 4.17)
  kCurrentDeviceConfigurations,  // "Current device configurations:" (4.16)
};

// One external host's configuration. A disable_* field is empty when its
// line is absent from the output.
struct HostPrivilege {
  std::optional<int> host_index;  // only with `q --full`
  PrivilegeLevel level = PrivilegeLevel::kPrivileged;
  std::optional<bool> disable_rshim;
  std::optional<bool> disable_tracer;
  std::optional<bool> disable_port_owner;
  std::optional<bool> disable_counter_rd;
};

struct MlxprivhostQuery {
  MlxprivhostTitle title = MlxprivhostTitle::kHostConfigurations;
  bool full = false;                 // a `host index` row was present
  std::vector<HostPrivilege> hosts;  // at least one
  // "name : value" rows this parser does not know, in order (kept, unused).
  std::vector<std::pair<std::string, std::string>> other_rows;
};

StatusOr<MlxprivhostQuery> ParseMlxprivhostQuery(std::string_view text);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_MLXPRIVHOST_H_
