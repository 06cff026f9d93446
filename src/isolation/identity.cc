#include "isolation/identity.h"

#include "device/canonical_commands.h"
#include "isolation/flint.h"
#include "isolation/text_lines.h"
#include "isolation/tool_run.h"

namespace dpuaudit::isolation {
namespace {

constexpr size_t kMaxSerialBytes = 256;

}  // namespace

DeviceIdentity CollectIdentity(const device::DeviceSource& source,
                               const ProbeContext& ctx) {
  DeviceIdentity id;
  StatusOr<Bytes> sn = source.ReadFile(kBootctlSerialPath, kMaxSerialBytes);
  if (sn.ok()) {
    id.serial = std::string(internal::Trim(ToString(*sn)));
    if (id.serial.empty()) {
      id.notes.push_back(std::string("serial: ") + kBootctlSerialPath +
                         " is empty");
    }
  } else {
    id.notes.push_back("serial: " + sn.status().ToString());
  }
  if (!ctx.mst) {
    std::string why = "no MST device (" + ctx.discovery_status.message() + ")";
    id.notes.push_back("model: " + why);
    id.notes.push_back("flint fields: " + why);
    return id;
  }
  id.model = std::string(GenerationModel(ctx.mst->generation));
  if (id.model.empty()) {
    id.notes.push_back("model: unknown generation of " + ctx.mst->path);
  }
  const device::Argv argv = device::FlintQueryArgv(ctx.mst->path);
  StatusOr<std::string> out = internal::RunTool(source, argv);
  if (!out.ok()) {
    id.notes.push_back("flint fields: " + out.status().message());
    return id;
  }
  StatusOr<FlintQuery> q = ParseFlintQuery(*out);
  if (!q.ok()) {
    id.notes.push_back("flint fields: " + q.status().message());
    return id;
  }
  // Base MAC is "<mac>   <count>"; the others are single tokens.
  struct Want {
    const char* key;
    std::string* out;
  };
  for (const Want& w : {Want{"PSID", &id.psid}, Want{"Base MAC", &id.base_mac},
                        Want{"Part Number", &id.part_number},
                        Want{"FW Version", &id.fw_version}}) {
    *w.out = FirstToken(q->Value(w.key));
    if (w.out->empty()) {
      id.notes.push_back(std::string(w.key) + ": absent from `" +
                         internal::CommandLine(argv) + "`");
    }
  }
  return id;
}

}  // namespace dpuaudit::isolation
