#include "isolation/identity.h"

#include "device/canonical_commands.h"
#include "bluefield/flint.h"
#include "bluefield/lspci.h"
#include "bluefield/mst_status.h"
#include "common/text_lines.h"
#include "firmware/inventory.h"
#include "isolation/tool_run.h"

namespace dpuaudit::isolation {
namespace {

using bluefield::FirstToken;
using bluefield::FlintQuery;

constexpr size_t kMaxSerialBytes = 256;

void FillFromFlint(const firmware::FlintRead& read, DeviceIdentity* id) {
  const device::Argv& argv = read.argv;
  if (!read.ok()) {
    id->notes.push_back("flint fields: " + read.status().message());
    return;
  }
  const FlintQuery* q = &read.query;
  // Base MAC is "<mac>   <count>"; the others are single tokens.
  struct Want {
    const char* key;
    std::string* out;
  };
  for (const Want& w :
       {Want{"PSID", &id->psid}, Want{"Base MAC", &id->base_mac},
        Want{"Part Number", &id->part_number},
        Want{"FW Version", &id->fw_version}}) {
    *w.out = FirstToken(q->Value(w.key));
    if (w.out->empty()) {
      id->notes.push_back(std::string(w.key) + ": absent from `" +
                          internal::CommandLine(argv) + "`");
    }
  }
}

// Fills an empty serial / part number from the PCI VPD of `mst`, whose PCI
// address comes from `mst status -v`.
void FillFromLspci(const device::DeviceSource& source, const std::string& mst,
                   DeviceIdentity* id) {
  constexpr std::string_view kPrefix = "lspci VPD: ";
  StatusOr<std::string> status =
      internal::RunTool(source, device::MstStatusArgv());
  if (!status.ok()) {
    id->notes.push_back(std::string(kPrefix) + "no PCI address: " +
                        status.status().message());
    return;
  }
  StatusOr<bluefield::MstStatus> parsed = bluefield::ParseMstStatus(*status);
  if (!parsed.ok()) {
    id->notes.push_back(std::string(kPrefix) + "no PCI address: " +
                        parsed.status().message());
    return;
  }
  std::string pci;
  for (const bluefield::MstDevice& d : parsed->devices) {
    if (d.mst_path == mst) pci = d.pci;
  }
  if (pci.empty()) {
    id->notes.push_back(std::string(kPrefix) + "no PCI address: " + mst +
                        " is not listed by `mst status -v`");
    return;
  }
  const device::Argv argv = device::LspciVpdArgv(pci);
  const std::string cmd = internal::CommandLine(argv);
  StatusOr<std::string> out = internal::RunTool(source, argv);
  if (!out.ok()) {
    id->notes.push_back(std::string(kPrefix) + out.status().message());
    return;
  }
  StatusOr<bluefield::LspciVpd> vpd = bluefield::ParseLspciVpd(*out);
  if (!vpd.ok()) {
    id->notes.push_back(std::string(kPrefix) + vpd.status().message());
    return;
  }
  if (!vpd->note.empty()) {
    id->notes.push_back(std::string(kPrefix) + vpd->note + " (`" + cmd + "`)");
  }
  struct Fill {
    const char* what;
    std::string* out;
    const std::string& value;
  };
  for (const Fill& f : {Fill{"serial", &id->serial, vpd->serial_number},
                        Fill{"part number", &id->part_number,
                             vpd->part_number}}) {
    if (!f.out->empty() || f.value.empty()) continue;
    *f.out = f.value;
    id->notes.push_back(std::string(f.what) + ": from VPD of `" + cmd + "`");
  }
}

}  // namespace

DeviceIdentity CollectIdentity(const device::DeviceSource& source,
                               const ProbeContext& ctx) {
  DeviceIdentity id;
  StatusOr<Bytes> sn = source.ReadFile(kBootctlSerialPath, kMaxSerialBytes);
  if (sn.ok()) {
    id.serial = std::string(text::Trim(ToString(*sn)));
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
  id.model = std::string(bluefield::GenerationModel(ctx.mst->generation));
  if (id.model.empty()) {
    id.notes.push_back("model: unknown generation of " + ctx.mst->path);
  }
  // The flint read the context shares (ProbeContext::Collect), or one made
  // here for a context built without it.
  if (ctx.flint) {
    FillFromFlint(*ctx.flint, &id);
  } else {
    FillFromFlint(firmware::ReadFlint(source, ctx.mst->path), &id);
  }
  if (id.serial.empty() || id.part_number.empty()) {
    FillFromLspci(source, ctx.mst->path, &id);
  }
  return id;
}

}  // namespace dpuaudit::isolation
