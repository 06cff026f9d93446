#include "firmware/os_boot.h"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "common/crypto.h"
#include "common/digest.h"
#include "common/strict_json.h"
#include "common/text_lines.h"
#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "uefi/guid.h"

namespace dpuaudit::firmware {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxCmdlineBytes = 4096;
// efivarfs files: BootCurrent is 6 bytes; a load option is small, but allow
// a generous optional-data tail before refusing.
constexpr size_t kMaxBootCurrentReadBytes = 64;
constexpr size_t kMaxLoadOptionReadBytes = 64 * 1024;
constexpr size_t kStreamChunkBytes = 64 * 1024;
constexpr size_t kMaxJsonArtefacts = 8;

constexpr std::string_view kRoles[] = {"kernel", "initrd", "shim", "grub"};

// ---- text helpers ----

bool IsKernelSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
         c == '\r';
}

// Offset of the first byte that breaks UTF-8 (overlongs, surrogates and
// code points above U+10FFFF included), or npos.
size_t InvalidUtf8At(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      n = 1;
      cp = b & 0x1fu;
    } else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      cp = b & 0x0fu;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      cp = b & 0x07u;
    } else {
      return i;
    }
    if (s.size() - i <= n) return i;
    for (size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (c & 0x3fu);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
      return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

// ---- measuring ----

struct Measurement {
  uint64_t size = 0;
  std::string sha256, sha384;
};

// Streams `path` once through SHA-256 and SHA-384.
StatusOr<Measurement> MeasureFile(const device::DeviceSource& source,
                                  const std::string& path, uint64_t max_bytes) {
  DPA_ASSIGN_OR_RETURN(std::unique_ptr<ByteStream> stream,
                       source.OpenStream(path));
  if (DigestMd(DigestAlg::kSha256) == nullptr ||
      DigestMd(DigestAlg::kSha384) == nullptr) {
    return SslStatus("fetching SHA-256/SHA-384");
  }
  DPA_ASSIGN_OR_RETURN(
      MultiDigest digest,
      MultiDigest::New({DigestAlg::kSha256, DigestAlg::kSha384},
                       "initialising SHA-256/SHA-384"));
  DPA_RETURN_IF_ERROR(digest.Start("initialising SHA-256/SHA-384"));
  const std::string hashing = "hashing " + path;
  Measurement m;
  std::vector<uint8_t> buf(kStreamChunkBytes);
  while (true) {
    DPA_ASSIGN_OR_RETURN(size_t n, stream->Read(buf.data(), buf.size()));
    if (n == 0) break;
    m.size += n;
    if (m.size > max_bytes) {
      return ResourceExhaustedError(path + " is larger than " +
                                    std::to_string(max_bytes) + " bytes.");
    }
    DPA_RETURN_IF_ERROR(digest.Update(ByteView(buf.data(), n), hashing));
  }
  DPA_ASSIGN_OR_RETURN(Bytes sha256, digest.Finish(0, "SHA-256 final"));
  DPA_ASSIGN_OR_RETURN(Bytes sha384, digest.Finish(1, "SHA-384 final"));
  m.sha256 = HexEncode(sha256);
  m.sha384 = HexEncode(sha384);
  return m;
}

// Measures the first candidate that exists; only NOT_FOUND moves on.
void MeasureFirst(const device::DeviceSource& source,
                  const std::vector<std::string>& candidates,
                  const OsBootOptions& options, OsArtefact& a) {
  std::string tried;
  for (const std::string& path : candidates) {
    StatusOr<Measurement> m =
        MeasureFile(source, path, options.max_artefact_bytes);
    if (m.ok()) {
      a.path = path;
      a.size = m->size;
      a.sha256 = m->sha256;
      a.sha384 = m->sha384;
      a.status = OkStatus();
      return;
    }
    if (m.status().code() != StatusCode::kNotFound) {
      a.path = path;
      a.status = m.status();  // names the path already
      return;
    }
    tried += (tried.empty() ? "" : ", ") + path;
  }
  a.status = NotFoundError(a.role + " not found (tried " + tried + ").");
}

OsArtefact NewArtefact(std::string role, std::string named_by) {
  OsArtefact a;
  a.role = std::move(role);
  a.named_by = std::move(named_by);
  return a;
}

std::string_view Dirname(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  return path.substr(0, slash);
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string StripTrailingSlash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

void MeasureKernelAndInitrd(const device::DeviceSource& source,
                            const OsBootOptions& options, OsBootInfo& info) {
  OsArtefact kernel = NewArtefact("kernel", "cmdline BOOT_IMAGE");
  OsArtefact initrd = NewArtefact("initrd", "cmdline BOOT_IMAGE");
  auto fail_both = [&](const Status& s) {
    kernel.status = s;
    initrd.status = s;
    info.artefacts.push_back(std::move(kernel));
    info.artefacts.push_back(std::move(initrd));
  };
  if (!info.cmdline_status.ok()) {
    return fail_both(info.cmdline_status.WithPrefix("no kernel command line"));
  }
  std::string image = info.cmdline.boot_image;
  if (image.empty()) {
    return fail_both(
        NotFoundError("the kernel command line has no BOOT_IMAGE parameter."));
  }
  // GRUB may name the device first: BOOT_IMAGE=(hd0,gpt2)/vmlinuz-...
  if (image[0] == '(') {
    size_t close = image.find(')');
    if (close != std::string::npos) image = image.substr(close + 1);
  }
  if (image.empty() || image[0] != '/') {
    return fail_both(InvalidArgumentError(
        "BOOT_IMAGE '" + text::Excerpt(info.cmdline.boot_image) +
        "' is not an absolute path."));
  }
  const std::string boot_dir = StripTrailingSlash(options.boot_dir);
  std::vector<std::string> kernel_paths = {image};
  if (!boot_dir.empty() && boot_dir != "/" && boot_dir + image != image) {
    kernel_paths.push_back(boot_dir + image);
  }
  MeasureFirst(source, kernel_paths, options, kernel);

  constexpr std::string_view kVmlinuz = "vmlinuz-";
  const std::string_view name = Basename(image);
  if (!text::StartsWith(name, kVmlinuz) || name.size() == kVmlinuz.size()) {
    initrd.status = FailedPreconditionError(
        "kernel file name '" + text::Excerpt(name) +
        "' is not vmlinuz-<release>, so the initrd name is unknown.");
  } else {
    const std::string initrd_name =
        "initrd.img-" + std::string(name.substr(kVmlinuz.size()));
    std::vector<std::string> initrd_paths = {boot_dir + "/" + initrd_name};
    const std::string kernel_dir(
        Dirname(kernel.path.empty() ? std::string_view(image) : kernel.path));
    const std::string beside = kernel_dir + "/" + initrd_name;
    if (beside != initrd_paths[0]) initrd_paths.push_back(beside);
    MeasureFirst(source, initrd_paths, options, initrd);
  }
  info.artefacts.push_back(std::move(kernel));
  info.artefacts.push_back(std::move(initrd));
}

void ReadBootEntry(const device::DeviceSource& source, OsBootInfo& info) {
  const std::string dir = device::kEfivarsDir;
  const std::string guid = uefi::kEfiGlobalVariable.ToString();
  StatusOr<Bytes> bc =
      source.ReadFile(dir + "/BootCurrent-" + guid, kMaxBootCurrentReadBytes);
  if (!bc.ok()) {
    info.efi_status = bc.status().WithPrefix("BootCurrent");
    return;
  }
  StatusOr<uint16_t> n = uefi::ParseBootCurrent(*bc);
  if (!n.ok()) {
    info.efi_status = n.status().WithPrefix("BootCurrent");
    return;
  }
  info.boot_current = *n;
  const std::string var = uefi::BootOptionName(*n);
  StatusOr<Bytes> opt =
      source.ReadFile(dir + "/" + var + "-" + guid, kMaxLoadOptionReadBytes);
  if (!opt.ok()) {
    info.efi_status = opt.status().WithPrefix(var);
    return;
  }
  StatusOr<uefi::EfiLoadOption> lo = uefi::ParseEfiLoadOption(*opt);
  if (!lo.ok()) {
    info.efi_status = lo.status().WithPrefix(var);
    return;
  }
  info.boot_option = std::move(lo).value();
  info.efi_status = OkStatus();
}

void MeasureLoaders(const device::DeviceSource& source,
                    const OsBootOptions& options, OsBootInfo& info) {
  const std::string named_by =
      "efivar " + (info.boot_current ? uefi::BootOptionName(*info.boot_current)
                                     : std::string("BootCurrent"));
  OsArtefact shim = NewArtefact("shim", named_by);
  OsArtefact grub = NewArtefact("grub", named_by);
  if (!info.boot_option) {
    shim.status = info.efi_status;
    grub.status = info.efi_status;
  } else {
    std::string rel = info.boot_option->file_path;
    for (char& c : rel) {
      if (c == '\\') c = '/';
    }
    if (rel.empty() || rel[0] != '/') rel.insert(0, "/");
    const std::string shim_path = StripTrailingSlash(options.esp_mount) + rel;
    MeasureFirst(source, {shim_path}, options, shim);
    if (options.grub_file.empty()) {
      grub.status = FailedPreconditionError("no GRUB file name configured.");
    } else {
      MeasureFirst(source,
                   {std::string(Dirname(shim_path)) + "/" + options.grub_file},
                   options, grub);
    }
  }
  info.artefacts.push_back(std::move(shim));
  info.artefacts.push_back(std::move(grub));
}

// ---- JSON ----

Status JsonError(const std::string& path, std::string_view why) {
  return InvalidArgumentError(path + " " + std::string(why) + ".");
}

std::string ErrorText(const Status& s) { return s.ToString(); }

// "NOT_FOUND: message" -> *out.
Status ParseErrorText(const Json& j, const std::string& path, Status* out) {
  if (!j.is_string()) return JsonError(path, "must be a string");
  const std::string s = j.get<std::string>();
  size_t sep = s.find(": ");
  if (sep != std::string::npos && sep + 2 < s.size()) {
    const std::string_view name(s.data(), sep);
    for (int c = static_cast<int>(StatusCode::kInvalidArgument);
         c <= static_cast<int>(StatusCode::kRateLimited); ++c) {
      if (StatusCodeName(static_cast<StatusCode>(c)) == name) {
        *out = Status(static_cast<StatusCode>(c), s.substr(sep + 2));
        return OkStatus();
      }
    }
  }
  return JsonError(path, "must read \"<STATUS_CODE>: <message>\"");
}

StatusOr<std::string> GetString(const Json& obj, std::string_view key,
                                const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end())
    return JsonError(path + "." + std::string(key), "is missing");
  if (!it->is_string()) {
    return JsonError(path + "." + std::string(key), "must be a string");
  }
  return it->get<std::string>();
}

StatusOr<OsArtefact> ParseArtefactJson(const Json& j, const std::string& path) {
  DPA_RETURN_IF_ERROR(strict_json::RequireOnlyMembers(
      j, path,
      {"role", "path", "named_by", "size", "sha256", "sha384", "error"}));
  OsArtefact a;
  DPA_ASSIGN_OR_RETURN(a.role, GetString(j, "role", path));
  bool known = false;
  for (std::string_view r : kRoles) known = known || a.role == r;
  if (!known) {
    return JsonError(path + ".role", "\"" + text::Excerpt(a.role) +
                                         "\" is not kernel, initrd, shim or "
                                         "grub");
  }
  DPA_ASSIGN_OR_RETURN(a.path, GetString(j, "path", path));
  DPA_ASSIGN_OR_RETURN(a.named_by, GetString(j, "named_by", path));
  if (!a.path.empty()) {
    Status valid = device::ValidateDevicePath(a.path);
    if (!valid.ok()) return JsonError(path + ".path", "is not a valid path");
  }
  auto err = j.find("error");
  if (err != j.end()) {
    for (const char* k : {"size", "sha256", "sha384"}) {
      if (j.contains(k)) {
        return JsonError(path + "." + k, "must be absent when error is set");
      }
    }
    DPA_RETURN_IF_ERROR(ParseErrorText(*err, path + ".error", &a.status));
    return a;
  }
  if (a.path.empty()) {
    return JsonError(path + ".path", "must name the measured file");
  }
  auto size = j.find("size");
  if (size == j.end()) return JsonError(path + ".size", "is missing");
  if (!size->is_number_unsigned() &&
      !(size->is_number_integer() && size->get<int64_t>() >= 0)) {
    return JsonError(path + ".size", "must be a non-negative integer");
  }
  a.size = size->get<uint64_t>();
  DPA_ASSIGN_OR_RETURN(a.sha256, GetString(j, "sha256", path));
  if (!IsLowerHexOfLength(a.sha256, 64)) {
    return JsonError(path + ".sha256", "must be 64 lower-case hex digits");
  }
  DPA_ASSIGN_OR_RETURN(a.sha384, GetString(j, "sha384", path));
  if (!IsLowerHexOfLength(a.sha384, 96)) {
    return JsonError(path + ".sha384", "must be 96 lower-case hex digits");
  }
  return a;
}

}  // namespace

StatusOr<KernelCmdline> ParseKernelCmdline(std::string_view text) {
  if (text.size() > kMaxCmdlineBytes) {
    return InvalidArgumentError("kernel command line is " +
                                std::to_string(text.size()) +
                                " bytes; the limit is 4096.");
  }
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return InvalidArgumentError(
        "kernel command line has a NUL byte at offset " + std::to_string(nul) +
        ".");
  }
  if (size_t bad = InvalidUtf8At(text); bad != std::string_view::npos) {
    return InvalidArgumentError(
        "kernel command line is not valid UTF-8 at offset " +
        std::to_string(bad) + ".");
  }
  KernelCmdline c;
  std::string_view raw = text;
  if (!raw.empty() && raw.back() == '\n') raw.remove_suffix(1);
  c.raw = std::string(raw);
  size_t i = 0;
  const size_t n = raw.size();
  bool have_boot_image = false;
  while (true) {
    while (i < n && IsKernelSpace(raw[i])) ++i;
    if (i == n) break;
    const size_t start = i;
    bool in_quote = false;
    while (i < n && (in_quote || !IsKernelSpace(raw[i]))) {
      if (raw[i] == '"') in_quote = !in_quote;
      ++i;
    }
    if (in_quote) {
      return InvalidArgumentError(
          "kernel command line has an unterminated quote in the parameter at "
          "offset " +
          std::to_string(start) + ".");
    }
    // As lib/cmdline.c next_arg(): a leading quote, a quote opening the
    // value, and a closing quote at the end of the argument are dropped; an
    // '=' in the first position does not split.
    std::string_view a = raw.substr(start, i - start);
    bool quoted = false;
    if (a[0] == '"') {
      a.remove_prefix(1);
      quoted = true;
    }
    const bool trailing_quote = !a.empty() && a.back() == '"';
    bool dropped_trailing = false;
    std::string_view key = a, value;
    size_t eq = a.empty() ? std::string_view::npos : a.find('=', 1);
    if (eq != std::string_view::npos) {
      key = a.substr(0, eq);
      value = a.substr(eq + 1);
      if (!value.empty() && value[0] == '"') {
        value.remove_prefix(1);
        if (trailing_quote && !value.empty()) value.remove_suffix(1);
        dropped_trailing = true;
      }
      if (quoted && trailing_quote && !dropped_trailing && !value.empty()) {
        value.remove_suffix(1);
      }
    } else if (quoted && trailing_quote && !key.empty()) {
      key.remove_suffix(1);
    }
    if (key == "BOOT_IMAGE" && !have_boot_image) {
      c.boot_image = std::string(value);
      have_boot_image = true;
    }
    c.params.emplace_back(std::string(key), std::string(value));
  }
  return c;
}

OsBootInfo MeasureOsBoot(const device::DeviceSource& source,
                         const OsBootOptions& options) {
  OsBootInfo info;
  info.cmdline_evidence_id =
      device::EvidenceIdForFile(device::kProcCmdlinePath);
  StatusOr<Bytes> raw =
      source.ReadFile(device::kProcCmdlinePath, kMaxCmdlineBytes);
  if (!raw.ok()) {
    info.cmdline_status = raw.status();
  } else {
    StatusOr<KernelCmdline> c = ParseKernelCmdline(ToString(*raw));
    if (c.ok()) {
      info.cmdline = std::move(c).value();
    } else {
      info.cmdline_status = c.status().WithPrefix(device::kProcCmdlinePath);
    }
  }
  ReadBootEntry(source, info);
  MeasureKernelAndInitrd(source, options, info);
  MeasureLoaders(source, options, info);
  return info;
}

Json OsBootJson(const OsBootInfo& info) {
  Json j = Json::object();
  j["cmdline"] = info.cmdline_status.ok() ? Json(info.cmdline.raw) : Json();
  if (!info.cmdline_status.ok()) {
    j["cmdline_error"] = ErrorText(info.cmdline_status);
  }
  if (info.boot_current) {
    j["boot_current"] = HexDigits(*info.boot_current, 4, HexCase::kUpper);
  } else {
    j["boot_current"] = nullptr;
  }
  if (info.boot_option) {
    j["boot_entry"] = {{"description", info.boot_option->description},
                       {"file_path", info.boot_option->file_path}};
  } else {
    j["boot_entry"] = nullptr;
  }
  if (!info.efi_status.ok()) j["efi_error"] = ErrorText(info.efi_status);
  Json arts = Json::array();
  for (const OsArtefact& a : info.artefacts) {
    Json o = {{"role", a.role}, {"path", a.path}, {"named_by", a.named_by}};
    if (a.status.ok()) {
      o["size"] = a.size;
      o["sha256"] = a.sha256;
      o["sha384"] = a.sha384;
    } else {
      o["error"] = ErrorText(a.status);
    }
    arts.push_back(std::move(o));
  }
  j["artefacts"] = std::move(arts);
  return j;
}

StatusOr<OsBootInfo> ParseOsBootJson(const Json& j) {
  const std::string root = "os";
  DPA_RETURN_IF_ERROR(strict_json::RequireOnlyMembers(j, root,
                                   {"cmdline", "cmdline_error", "boot_current",
                                    "boot_entry", "efi_error", "artefacts"}));
  for (const char* k : {"cmdline", "boot_current", "boot_entry", "artefacts"}) {
    if (!j.contains(k)) return JsonError(root + "." + k, "is missing");
  }
  OsBootInfo info;
  info.cmdline_evidence_id =
      device::EvidenceIdForFile(device::kProcCmdlinePath);

  const Json& cmdline = j["cmdline"];
  if (cmdline.is_string()) {
    if (j.contains("cmdline_error")) {
      return JsonError(root + ".cmdline_error",
                       "must be absent when cmdline is set");
    }
    StatusOr<KernelCmdline> c = ParseKernelCmdline(cmdline.get<std::string>());
    if (!c.ok()) return c.status().WithPrefix(root + ".cmdline");
    if (c->raw != cmdline.get<std::string>()) {
      return JsonError(root + ".cmdline", "must not end with a newline");
    }
    info.cmdline = std::move(c).value();
  } else if (cmdline.is_null()) {
    auto err = j.find("cmdline_error");
    if (err == j.end()) {
      return JsonError(root + ".cmdline_error",
                       "is required when cmdline is null");
    }
    DPA_RETURN_IF_ERROR(
        ParseErrorText(*err, root + ".cmdline_error", &info.cmdline_status));
  } else {
    return JsonError(root + ".cmdline", "must be a string or null");
  }

  const Json& bc = j["boot_current"];
  if (bc.is_string()) {
    const std::string s = bc.get<std::string>();
    bool ok = s.size() == 4;
    uint16_t v = 0;
    for (char ch : s) {
      int d = (ch >= '0' && ch <= '9')   ? ch - '0'
              : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                         : -1;
      if (d < 0) ok = false;
      v = static_cast<uint16_t>((v << 4) | (d < 0 ? 0 : d));
    }
    if (!ok) {
      return JsonError(root + ".boot_current",
                       "must be 4 upper-case hex digits");
    }
    info.boot_current = v;
  } else if (!bc.is_null()) {
    return JsonError(root + ".boot_current", "must be a string or null");
  }

  const Json& entry = j["boot_entry"];
  if (entry.is_object()) {
    const std::string path = root + ".boot_entry";
    DPA_RETURN_IF_ERROR(
        strict_json::RequireOnlyMembers(entry, path, {"description", "file_path"}));
    if (j.contains("efi_error")) {
      return JsonError(root + ".efi_error",
                       "must be absent when boot_entry is set");
    }
    if (!info.boot_current) {
      return JsonError(root + ".boot_current",
                       "must be set when boot_entry is");
    }
    uefi::EfiLoadOption lo;
    DPA_ASSIGN_OR_RETURN(lo.description, GetString(entry, "description", path));
    DPA_ASSIGN_OR_RETURN(lo.file_path, GetString(entry, "file_path", path));
    if (lo.file_path.empty()) {
      return JsonError(path + ".file_path", "must not be empty");
    }
    info.boot_option = std::move(lo);
  } else if (entry.is_null()) {
    auto err = j.find("efi_error");
    if (err == j.end()) {
      return JsonError(root + ".efi_error",
                       "is required when boot_entry is null");
    }
    DPA_RETURN_IF_ERROR(
        ParseErrorText(*err, root + ".efi_error", &info.efi_status));
  } else {
    return JsonError(root + ".boot_entry", "must be an object or null");
  }

  const Json& arts = j["artefacts"];
  if (!arts.is_array())
    return JsonError(root + ".artefacts", "must be an array");
  if (arts.size() > kMaxJsonArtefacts) {
    return JsonError(root + ".artefacts", "has more than 8 entries");
  }
  std::set<std::string> roles;
  for (size_t i = 0; i < arts.size(); ++i) {
    const std::string path = root + ".artefacts[" + std::to_string(i) + "]";
    DPA_ASSIGN_OR_RETURN(OsArtefact a, ParseArtefactJson(arts[i], path));
    if (!roles.insert(a.role).second) {
      return JsonError(path + ".role", "repeats \"" + a.role + "\"");
    }
    info.artefacts.push_back(std::move(a));
  }
  return info;
}

}  // namespace dpuaudit::firmware
