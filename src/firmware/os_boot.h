// OS boot artefacts named by the running boot configuration (issue 4):
// the kernel command line, the UEFI boot entry that booted (BootCurrent ->
// Boot####), and the files it implies, each measured (SHA-256, SHA-384) by
// streaming through the DeviceSource.
//
// How artefacts are found, in this order:
//  - cmdline: /proc/cmdline (file evidence). BOOT_IMAGE=<path> names the
//    kernel, relative to the boot file system: tried as <path>, then as
//    /boot<path>.
//  - initrd: /boot/initrd.img-<release> where the kernel file name is
//    vmlinuz-<release> (Ubuntu's naming on BlueField); also tried
//    "<kernel dir>/initrd.img-<release>".
//  - shim: efivars BootCurrent-<global guid> names Boot####-<global guid>,
//    an EFI_LOAD_OPTION (both parsed by uefi/load_option.h). Its file path
//    (such as \EFI\ubuntu\shimaa64.efi) is mapped under the ESP mount
//    (/boot/efi) with '\' -> '/'.
//  - grub: the GRUB that shim loads from the same directory: grubaa64.efi
//    (grubx64.efi on x86-64 hosts), when present.
// Guarantees (parsers): bounds-checked, offsets in every error; an efivar
// error is prefixed with the variable's name (INVALID_ARGUMENT "Boot0001:
// device path node at offset 74 runs past the file path list (length 200 >
// 118)").
// Guarantees (MeasureOsBoot): never fails as a whole; every artefact carries
// its own status and `named_by` (what pointed at it: "cmdline BOOT_IMAGE",
// "efivar Boot0001", ...). Files are streamed, never loaded whole.
// Does not: parse grub.cfg, verify Authenticode signatures, or prove that
// the file on disk is what was loaded (only a TPM event log can: issue 5).
//
// Details:
//  - ParseKernelCmdline also rejects text that is not UTF-8 (so the value
//    survives JSON); the first BOOT_IMAGE wins. MeasureOsBoot drops a
//    leading GRUB device "(hd0,gpt2)" from BOOT_IMAGE.
//  - Artefacts always come as exactly kernel, initrd, shim, grub. Only
//    NOT_FOUND makes the search move to the next candidate path; `path` is
//    set once a file was opened. When the boot entry is unknown, shim and
//    grub carry efi_status. A file larger than max_artefact_bytes is
//    RESOURCE_EXHAUSTED.
//  - JSON: "*_error" and artefact "error" are Status::ToString() ("NOT_FOUND:
//    ..."), parsed back to the same code. A measured artefact has size,
//    sha256, sha384 and no error; a failed one has error and none of those.
//    ParseOsBootJson also rejects a repeated role, a non-absolute path, a
//    cmdline that ParseKernelCmdline rejects, and a boot_entry without
//    boot_current; it does not restore boot_option->attributes (not in the
//    JSON) and sets cmdline_evidence_id to the /proc/cmdline file id.
#ifndef DPUAUDIT_FIRMWARE_OS_BOOT_H_
#define DPUAUDIT_FIRMWARE_OS_BOOT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/status.h"
#include "device/device_source.h"
#include "uefi/load_option.h"

namespace dpuaudit::firmware {

struct KernelCmdline {
  std::string raw;         // trimmed of the trailing newline
  std::string boot_image;  // BOOT_IMAGE value, "" if absent
  std::vector<std::pair<std::string, std::string>> params;  // key, value ("" if none)
};
// Splits on spaces, honouring double quotes as the kernel does. A NUL byte,
// an unterminated quote, or more than 4096 bytes is INVALID_ARGUMENT.
StatusOr<KernelCmdline> ParseKernelCmdline(std::string_view text);

struct OsArtefact {
  std::string role;      // "kernel" | "initrd" | "shim" | "grub"
  std::string path;      // absolute path measured ("" if none was found)
  std::string named_by;  // "cmdline BOOT_IMAGE", "efivar Boot0001", ...
  Status status;         // OK iff measured
  uint64_t size = 0;
  std::string sha256, sha384;  // lower-case hex
};

struct OsBootOptions {
  std::string boot_dir = "/boot";
  std::string esp_mount = "/boot/efi";
  std::string grub_file = "grubaa64.efi";
  uint64_t max_artefact_bytes = uint64_t{1} << 30;  // 1 GiB per file
};

struct OsBootInfo {
  Status cmdline_status;
  KernelCmdline cmdline;
  std::string cmdline_evidence_id;  // of /proc/cmdline
  Status efi_status;                // why boot_option is empty, if it is
  std::optional<uint16_t> boot_current;
  std::optional<uefi::EfiLoadOption> boot_option;
  std::vector<OsArtefact> artefacts;  // kernel, initrd, shim, grub (in order)
};

OsBootInfo MeasureOsBoot(const device::DeviceSource& source,
                         const OsBootOptions& options = {});

// The report's boot_chain["os"] value:
// {"cmdline": "..."|null, "cmdline_error": "...", "boot_current": "0001"|null,
//  "boot_entry": {"description", "file_path"}|null, "efi_error": "...",
//  "artefacts": [{"role", "path", "named_by", "size", "sha256", "sha384",
//                 "error"}]} — "*_error" members only when not OK.
nlohmann::json OsBootJson(const OsBootInfo& info);
// Strict inverse (verifier): unknown members, wrong types, bad hex, unknown
// roles, more than 8 artefacts are INVALID_ARGUMENT naming the JSON path.
StatusOr<OsBootInfo> ParseOsBootJson(const nlohmann::json& j);

}  // namespace dpuaudit::firmware

#endif  // DPUAUDIT_FIRMWARE_OS_BOOT_H_
