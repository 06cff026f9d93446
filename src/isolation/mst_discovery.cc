#include "isolation/mst_discovery.h"

#include <optional>
#include <string>
#include <vector>

#include "device/canonical_commands.h"
#include "common/text_lines.h"

namespace dpuaudit::isolation {
namespace {

// Rank of an MST device name: lower is better; nullopt if not a BlueField
// configuration device. Newest generation first, then the pciconf index,
// then the first PF before the `.1` second PF.
struct Rank {
  int generation = 0;  // 0 = BF3, 1 = BF2, 2 = BF1
  long index = 0;      // N of pciconfN
  int pf = 0;          // 0 first PF, 1 `.1`
  bool operator<(const Rank& o) const {
    if (generation != o.generation) return generation < o.generation;
    if (index != o.index) return index < o.index;
    return pf < o.pf;
  }
};

std::optional<Rank> RankName(std::string_view name) {
  Rank r;
  switch (bluefield::GenerationFromMstName(name)) {
    case bluefield::Generation::kBlueField3:
      r.generation = 0;
      break;
    case bluefield::Generation::kBlueField2:
      r.generation = 1;
      break;
    case bluefield::Generation::kBlueField1:
      r.generation = 2;
      break;
    case bluefield::Generation::kUnknown:
      return std::nullopt;
  }
  std::string_view rest = name.substr(8);  // after "mt416xx_"
  if (!text::StartsWith(rest, "pciconf")) return std::nullopt;
  rest.remove_prefix(7);
  if (rest.size() >= 2 && rest.substr(rest.size() - 2) == ".1") {
    r.pf = 1;
    rest.remove_suffix(2);
  }
  if (rest.empty() || rest.size() > 3 ||
      rest.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  for (char c : rest) r.index = r.index * 10 + (c - '0');
  return r;
}

// Best path among candidates, or "".
std::string Best(const std::vector<std::string>& paths) {
  std::string best;
  std::optional<Rank> best_rank;
  for (const std::string& p : paths) {
    size_t slash = p.rfind('/');
    std::string_view name = slash == std::string::npos
                                ? std::string_view(p)
                                : std::string_view(p).substr(slash + 1);
    std::optional<Rank> r = RankName(name);
    if (!r) continue;
    if (!best_rank || *r < *best_rank) {
      best_rank = r;
      best = p;
    }
  }
  return best;
}

// Why `mst status -v` gave nothing, or the best device path.
StatusOr<std::string> FromMstStatus(const device::DeviceSource& source) {
  const device::Argv argv = device::MstStatusArgv();
  DPA_ASSIGN_OR_RETURN(device::CommandResult r,
                       source.Run(argv, device::CommandOptions{}));
  if (r.timed_out) return DeadlineExceededError("`mst status -v` timed out");
  if (r.exit_code == device::kExitNotInstalled) {
    return NotFoundError("`mst` is not installed (exit 127)");
  }
  if (r.exit_code != 0) {
    return UnavailableError("`mst status -v` exited with status " +
                            std::to_string(r.exit_code));
  }
  if (r.truncated) {
    return DataLossError("`mst status -v` output was truncated");
  }
  DPA_ASSIGN_OR_RETURN(bluefield::MstStatus status,
                       bluefield::ParseMstStatus(ToString(r.stdout_bytes)));
  std::vector<std::string> paths;
  for (const bluefield::MstDevice& d : status.devices) paths.push_back(d.mst_path);
  std::string best = Best(paths);
  if (best.empty()) {
    return NotFoundError("`mst status -v` lists no BlueField device (" +
                         std::to_string(status.devices.size()) + " devices)");
  }
  return best;
}

}  // namespace

StatusOr<MstDeviceInfo> DiscoverMstDevice(const device::DeviceSource& source) {
  std::string dir_problem;
  StatusOr<std::vector<std::string>> names = source.ListDir(device::kMstDir);
  if (names.ok()) {
    std::vector<std::string> paths;
    for (const std::string& n : *names) {
      paths.push_back(std::string(device::kMstDir) + "/" + n);
    }
    std::string best = Best(paths);
    if (!best.empty()) {
      return MstDeviceInfo{best, bluefield::GenerationFromMstName(best), device::kMstDir};
    }
    dir_problem = "/dev/mst holds no BlueField device (" +
                  std::to_string(names->size()) + " entries)";
  } else {
    dir_problem = "/dev/mst unreadable (" + names.status().message() + ")";
  }
  StatusOr<std::string> from_mst = FromMstStatus(source);
  if (from_mst.ok()) {
    return MstDeviceInfo{*from_mst, bluefield::GenerationFromMstName(*from_mst),
                         "mst status -v"};
  }
  return NotFoundError("no BlueField MST device: " + dir_problem +
                       "; fallback " + from_mst.status().message() + ".");
}

}  // namespace dpuaudit::isolation
