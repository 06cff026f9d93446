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
//  - shim: efivars BootCurrent-<global guid> (4 attribute bytes, then a
//    UINT16 LE) names Boot####-<global guid> (upper-case hex), an
//    EFI_LOAD_OPTION (UEFI 2.x §3.1.3: UINT32 Attributes, UINT16
//    FilePathListLength, NUL-terminated UCS-2 Description, device path list,
//    optional data). Its media file-path node (type 4, subtype 4, UCS-2
//    path such as \EFI\ubuntu\shimaa64.efi) is mapped under the ESP mount
//    (/boot/efi) with '\' -> '/'.
//  - grub: the GRUB that shim loads from the same directory: grubaa64.efi
//    (grubx64.efi on x86-64 hosts), when present.
// Guarantees (parsers): bounds-checked, offsets in every error
// (INVALID_ARGUMENT "Boot0001: device path node at offset 74 runs past the
// file path list (length 200 > 118)"); a load option with no file-path node
// is an error; UCS-2 with unpaired surrogates or NUL inside is an error.
// Guarantees (MeasureOsBoot): never fails as a whole; every artefact carries
// its own status and `named_by` (what pointed at it: "cmdline BOOT_IMAGE",
// "efivar Boot0001", ...). Files are streamed, never loaded whole.
// Does not: parse grub.cfg, verify Authenticode signatures, or prove that
// the file on disk is what was loaded (only a TPM event log can: issue 5).
//
// Details:
//  - Parser offsets count from the start of the efivarfs file (the 4
//    attribute bytes included), so Attributes is at 4 and the Description
//    at 10. Every parser error is INVALID_ARGUMENT.
//  - FilePathList may hold several device-path instances (firmware often
//    puts a vendor "hint" path first, e.g. the go-attestation logs): the
//    file path is taken from the first instance that has file-path nodes,
//    consecutive ones joined with '\'. A node shorter than 4 bytes, a node
//    running past the list, and a list not ending with an End Entire node
//    (0x7f/0xff) are errors. One terminating NUL in a file-path node is
//    dropped; an empty path is an error. OptionalData is not interpreted.
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

namespace dpuaudit::firmware {

struct KernelCmdline {
  std::string raw;         // trimmed of the trailing newline
  std::string boot_image;  // BOOT_IMAGE value, "" if absent
  std::vector<std::pair<std::string, std::string>> params;  // key, value ("" if none)
};
// Splits on spaces, honouring double quotes as the kernel does. A NUL byte,
// an unterminated quote, or more than 4096 bytes is INVALID_ARGUMENT.
StatusOr<KernelCmdline> ParseKernelCmdline(std::string_view text);

// `data` is the whole efivarfs file (4 attribute bytes first).
StatusOr<uint16_t> ParseBootCurrent(ByteView data);

struct EfiLoadOption {
  uint32_t attributes = 0;
  std::string description;  // UTF-8
  std::string file_path;    // UTF-8, as stored: "\EFI\ubuntu\shimaa64.efi"
};
// `data` is the whole efivarfs file (4 attribute bytes first).
StatusOr<EfiLoadOption> ParseEfiLoadOption(ByteView data);

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
  std::optional<EfiLoadOption> boot_option;
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
