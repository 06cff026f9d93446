#include "isolation/probes.h"

#include <string>
#include <iterator>
#include <utility>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "device/memoizing_source.h"
#include "bluefield/mlxconfig.h"
#include "bluefield/mlxprivhost.h"
#include "isolation/probe_entries.h"
#include "isolation/tool_run.h"

namespace dpuaudit::isolation {
namespace {

using device::Argv;

// docs/bluefield.md#privileged-pitfall.
constexpr char kPrivilegedTrap[] =
    "mlxprivhost also prints PRIVILEGED and exits 0 when its NV-config read "
    "fails, so this may be a failed query rather than a "
    "privileged host; cross-check HOST_PRIV_LEVEL or the BMC";

constexpr auto Start = internal::StartCommandFinding;
constexpr auto Unknown = internal::UnknownFinding;

Finding NoMstDevice(std::string_view id, std::string_view expected,
                    std::string_view tool, const ProbeContext& ctx) {
  return internal::NoMstDeviceFinding(id, expected, tool,
                                      ctx.discovery_status);
}

// Runs `mlxprivhost -d <mst> q` and parses it; on failure fills `*f`.
std::optional<bluefield::MlxprivhostQuery> QueryPrivhost(
    const device::DeviceSource& source, const Argv& argv, Finding* f) {
  StatusOr<bluefield::MlxprivhostQuery> q =
      internal::RunAndParse(source, argv, bluefield::ParseMlxprivhostQuery);
  if (!q.ok()) {
    *f = Unknown(std::move(*f), q.status().message());
    return std::nullopt;
  }
  return std::move(q).value();
}

std::string HostLabel(const bluefield::HostPrivilege& h, size_t i) {
  return "host " +
         std::to_string(h.host_index ? *h.host_index : static_cast<int>(i));
}

// One mlxprivhost restriction flag (docs/bluefield.md#mlxprivhost): each
// host.*_disabled probe is a row of this table, judged by ProbeFlag.
struct HostFlag {
  std::string_view id;
  std::string_view description;  // the catalogue's one line
  std::string_view row;          // the mlxprivhost output row
  std::optional<bool> bluefield::HostPrivilege::*field;
  std::string_view meaning;      // what TRUE guarantees
  std::string_view note;         // when the value takes effect
};

constexpr HostFlag kHostFlags[] = {
    {"host.rshim_disabled",
     "Host RShim access disabled (mlxprivhost disable_rshim).", "disable_rshim",
     &bluefield::HostPrivilege::disable_rshim,
     "the host has no RShim function to the Arm",
     "configured NV value; it takes effect only after a power cycle"},
    {"host.tracer_disabled",
     "Host may not own the firmware tracer (mlxprivhost disable_tracer).",
     "disable_tracer", &bluefield::HostPrivilege::disable_tracer,
     "the host may not own the firmware tracer",
     "takes effect after a firmware reset"},
    {"host.counter_read_disabled",
     "Host may not read port counters (mlxprivhost disable_counter_rd).",
     "disable_counter_rd", &bluefield::HostPrivilege::disable_counter_rd,
     "the host may not read physical port counters",
     "takes effect after a firmware reset"},
    {"host.port_owner_disabled",
     "Host may not be port owner (mlxprivhost disable_port_owner).",
     "disable_port_owner", &bluefield::HostPrivilege::disable_port_owner,
     "the host may not become port owner", "takes effect after a firmware reset"},
};

Finding ProbeFlag(const device::DeviceSource& source, const ProbeContext& ctx,
                  const HostFlag& flag) {
  const std::string_view id = flag.id;
  const std::string_view row = flag.row;
  const std::string_view meaning = flag.meaning;
  const std::string_view note = flag.note;
  if (!ctx.mst) return NoMstDevice(id, "TRUE", "mlxprivhost", ctx);
  const Argv argv = device::MlxprivhostQueryArgv(ctx.mst->path);
  Finding f = Start(id, "TRUE", argv);
  std::optional<bluefield::MlxprivhostQuery> q = QueryPrivhost(source, argv, &f);
  if (!q) return f;
  std::string observed;
  std::string false_hosts;
  for (size_t i = 0; i < q->hosts.size(); ++i) {
    const std::optional<bool>& v = q->hosts[i].*flag.field;
    if (!v) {
      return Unknown(
          std::move(f),
          "no '" + std::string(row) + "' line in output of `" + f.source + "`");
    }
    if (!observed.empty()) observed += ",";
    observed += *v ? "TRUE" : "FALSE";
    if (!*v) {
      if (!false_hosts.empty()) false_hosts += ", ";
      false_hosts += HostLabel(q->hosts[i], i);
    }
  }
  f.observed = observed;
  if (false_hosts.empty()) {
    f.verdict = Verdict::kPass;
    f.reason = std::string(row) + " is TRUE: " + std::string(meaning);
    if (!note.empty()) f.reason += " (" + std::string(note) + ")";
  } else {
    f.verdict = Verdict::kFail;
    f.reason = std::string(row) + " is FALSE for " + false_hosts +
               ": the restriction is not configured";
    if (q->hosts.size() == 1 &&
        q->hosts[0].level == bluefield::PrivilegeLevel::kPrivileged) {
      f.reason += std::string("; ") + kPrivilegedTrap;
    }
  }
  return f;
}

// docs/bluefield.md#nv-configuration: the HOST_PRIV_LEVEL row of
// `mlxconfig -e q` reads the same TLV as mlxprivhost (PRIVILEGED=0x0,
// LIMITED=0x1; LIMITED is mlxprivhost's RESTRICTED). `note` states the
// agreement, the disagreement (`disagrees`; an unrecognised Current value
// counts as one), or why the row could not be used ("not cross-checked: ...").
struct CrossCheck {
  bool disagrees = false;
  std::string note;
};

CrossCheck CrossCheckPrivLevel(const device::DeviceSource& source,
                               const ProbeContext& ctx,
                               const bluefield::MlxprivhostQuery& q) {
  const Argv argv = device::MlxconfigQueryArgv(ctx.mst->path);
  const std::string cmd = internal::CommandLine(argv);
  CrossCheck c;
  if (q.hosts.size() != 1) {
    c.note = "not cross-checked: mlxprivhost reports " +
             std::to_string(q.hosts.size()) +
             " hosts and HOST_PRIV_LEVEL carries no host index";
    return c;
  }
  StatusOr<bluefield::MlxconfigQuery> mq =
      internal::RunAndParse(source, argv, bluefield::ParseMlxconfigQuery);
  if (!mq.ok()) {
    c.note = "not cross-checked: " + mq.status().message();
    return c;
  }
  const bluefield::MlxconfigParam* row = mq->Find("HOST_PRIV_LEVEL");
  if (row == nullptr || !row->current_value) {
    c.note = std::string("not cross-checked: ") +
             (row == nullptr ? "no HOST_PRIV_LEVEL row"
                             : "no Current column") +
             " in output of `" + cmd + "`";
    return c;
  }
  const std::string& current = *row->current_value;
  std::string_view privhost = bluefield::PrivilegeLevelName(q.hosts[0].level);
  std::optional<bluefield::PrivilegeLevel> level;
  if (current == "PRIVILEGED(0)") level = bluefield::PrivilegeLevel::kPrivileged;
  if (current == "LIMITED(1)") level = bluefield::PrivilegeLevel::kRestricted;
  if (!level || *level != q.hosts[0].level) {
    c.disagrees = true;
    c.note = "mlxprivhost says " + std::string(privhost) +
             " but mlxconfig HOST_PRIV_LEVEL Current is " + current;
    return c;
  }
  c.note = "corroborated by mlxconfig HOST_PRIV_LEVEL Current " + current;
  return c;
}

}  // namespace

ProbeContext ProbeContext::Discover(const device::DeviceSource& source) {
  ProbeContext ctx;
  StatusOr<MstDeviceInfo> mst = DiscoverMstDevice(source);
  if (mst.ok()) {
    ctx.mst = std::move(mst).value();
  } else {
    ctx.discovery_status = mst.status();
  }
  return ctx;
}

ProbeContext ProbeContext::Collect(const device::DeviceSource& source) {
  ProbeContext ctx = Discover(source);
  if (ctx.mst) {
    ctx.flint = std::make_shared<const firmware::FlintRead>(
        firmware::ReadFlint(source, ctx.mst->path));
    ctx.firmware = std::make_shared<const firmware::FirmwareInfo>(
        firmware::CollectFirmware(source, *ctx.flint));
  } else {
    ctx.firmware = std::make_shared<const firmware::FirmwareInfo>(
        firmware::CollectFirmware(source));
  }
  return ctx;
}

Finding ProbeHostPrivilegeLevel(const device::DeviceSource& source,
                                const ProbeContext& ctx) {
  constexpr std::string_view kId = "host.privilege_level";
  if (!ctx.mst) return NoMstDevice(kId, "RESTRICTED", "mlxprivhost", ctx);
  const Argv argv = device::MlxprivhostQueryArgv(ctx.mst->path);
  Finding f = Start(kId, "RESTRICTED", argv);
  std::optional<bluefield::MlxprivhostQuery> q = QueryPrivhost(source, argv, &f);
  if (!q) return f;
  std::string observed;
  std::string privileged_hosts;
  for (size_t i = 0; i < q->hosts.size(); ++i) {
    if (!observed.empty()) observed += ",";
    observed += std::string(bluefield::PrivilegeLevelName(q->hosts[i].level));
    if (q->hosts[i].level == bluefield::PrivilegeLevel::kPrivileged) {
      if (!privileged_hosts.empty()) privileged_hosts += ", ";
      privileged_hosts += HostLabel(q->hosts[i], i);
    }
  }
  const CrossCheck check = CrossCheckPrivLevel(source, ctx, *q);
  if (check.disagrees) {
    return Unknown(std::move(f), check.note +
                                     "; the two reads of the same NV TLV "
                                     "disagree, so neither is trusted");
  }
  f.observed = observed;
  if (privileged_hosts.empty()) {
    f.verdict = Verdict::kPass;
    f.reason =
        "the external host is RESTRICTED (zero-trust): it cannot change "
        "global or per-port NV parameters";
  } else {
    f.verdict = Verdict::kFail;
    f.reason = "level is PRIVILEGED for " + privileged_hosts +
               ": the host is trusted, not zero-trust; " + kPrivilegedTrap;
  }
  f.reason += "; " + check.note;
  return f;
}

template <size_t I>
Finding ProbeHostFlagAt(const device::DeviceSource& source,
                        const ProbeContext& ctx) {
  return ProbeFlag(source, ctx, kHostFlags[I]);
}

template <size_t... I>
std::vector<ProbeInfo> HostFlagEntries(std::index_sequence<I...>) {
  return {ProbeInfo{kHostFlags[I].id,
                    kHostFlags[I].description,
                    {"TRUE"},
                    {"TRUE", "FALSE"},
                    &ProbeHostFlagAt<I>}...};
}

Finding ProbeDpuOperationMode(const device::DeviceSource& source,
                              const ProbeContext& ctx) {
  constexpr std::string_view kId = "dpu.operation_mode";
  if (!ctx.mst) return NoMstDevice(kId, "dpu", "mlxconfig", ctx);
  const Argv argv = device::MlxconfigQueryArgv(ctx.mst->path);
  Finding f = Start(kId, "dpu", argv);
  StatusOr<bluefield::MlxconfigQuery> q =
      internal::RunAndParse(source, argv, bluefield::ParseMlxconfigQuery);
  if (!q.ok()) return Unknown(std::move(f), q.status().message());
  bluefield::Generation gen = bluefield::GenerationFromDeviceType(q->device_type);
  if (gen == bluefield::Generation::kUnknown) gen = ctx.mst->generation;
  bluefield::ModeClassification mode = bluefield::ClassifyOperationMode(*q, gen);
  // Staged changes (Next Boot != Current) are reported, not judged.
  std::string pending;
  for (const bluefield::MlxconfigParam& p : q->params) {
    if (p.name.rfind("INTERNAL_CPU_", 0) != 0 || !p.current_value) continue;
    if (*p.current_value != p.next_boot_value) {
      pending += (pending.empty() ? "" : ", ") + p.name + " " +
                 *p.current_value + " -> " + p.next_boot_value;
    }
  }
  std::string gen_text = std::string(bluefield::GenerationName(gen));
  switch (mode.mode) {
    case bluefield::OperationMode::kUnknown:
      return Unknown(std::move(f), "operation mode undetermined (" + gen_text +
                                       "): " + mode.detail);
    case bluefield::OperationMode::kDpu:
      f.verdict = Verdict::kPass;
      f.reason = "DPU mode (" + gen_text + ", Current column): " + mode.detail;
      break;
    case bluefield::OperationMode::kNic:
      f.verdict = Verdict::kFail;
      f.reason = "NIC mode (" + gen_text +
                 ", Current column): host-trusted, the Arm is inactive; " +
                 mode.detail;
      break;
    case bluefield::OperationMode::kSeparatedHost:
      f.verdict = Verdict::kFail;
      f.reason = "separated-host mode (" + gen_text +
                 ", Current column): the host function is symmetric with "
                 "the Arm and not isolated; " +
                 mode.detail;
      break;
  }
  f.observed = std::string(bluefield::OperationModeName(mode.mode));
  if (!pending.empty()) {
    f.reason += "; pending at next boot: " + pending;
  }
  return f;
}

const std::vector<ProbeInfo>& ProbeCatalogue() {
  static const auto* const kCatalogue = [] {
    auto* all = new std::vector<ProbeInfo>{
        {"host.privilege_level",
         "External host privilege level from mlxprivhost (zero-trust mode).",
         {"RESTRICTED"},
         {"RESTRICTED", "PRIVILEGED"},
         &ProbeHostPrivilegeLevel},
        {"dpu.operation_mode",
         "BlueField operation mode from the mlxconfig Current column.",
         {"dpu"},
         {"dpu", "nic", "separated_host"},
         &ProbeDpuOperationMode},
    };
    const std::vector<ProbeInfo> flags =
        HostFlagEntries(std::make_index_sequence<std::size(kHostFlags)>());
    all->insert(all->begin() + 1, flags.begin(), flags.end());
    for (auto&& part : {internal::DpuProbeEntries(), internal::BootProbeEntries(),
                        internal::NicProbeEntries(), internal::FwProbeEntries()}) {
      all->insert(all->end(), part.begin(), part.end());
    }
    return all;
  }();
  return *kCatalogue;
}

std::string_view VersionComponent(std::string_view id) {
  return internal::VersionComponentOf(id);
}

const ProbeInfo* FindProbe(std::string_view id) {
  for (const ProbeInfo& p : ProbeCatalogue()) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

namespace {

// Every catalogue probe over `memo`, in order.
std::vector<Finding> RunCatalogue(const device::MemoizingDeviceSource& memo,
                                  const ProbeContext& ctx) {
  std::vector<Finding> findings;
  for (const ProbeInfo& p : ProbeCatalogue()) {
    findings.push_back(p.function(memo, ctx));
    // The one place every probe's finding passes: tool output and file
    // contents become safe text here, for the agent and the verifier alike.
    MakeSafe(findings.back());
  }
  return findings;
}

}  // namespace

std::vector<Finding> RunProbes(const device::DeviceSource& source) {
  device::MemoizingDeviceSource memo(source);
  return RunCatalogue(memo, ProbeContext::Collect(memo));
}

std::vector<Finding> RunProbes(const device::DeviceSource& source,
                               const ProbeContext& ctx) {
  device::MemoizingDeviceSource memo(source);
  return RunCatalogue(memo, ctx);
}

}  // namespace dpuaudit::isolation
