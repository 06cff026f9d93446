// The boot state derived from a verified event log (declared in
// eventlog.h): one-line event descriptions, digest binding, and the boot
// state (Secure Boot variables, authorities, boot applications, kernel
// command lines) the events describe. The UEFI structures themselves
// (variables, signature lists, device paths, load options) are decoded by
// src/uefi; this file holds the TCG event-log side.
//
// Event data is untrusted and often odd: every decoder here is bounds-checked
// through ByteReader and reports what it could not decode as a warning
// (ExtractBootState) or an empty description, never by failing the caller.
#include <openssl/err.h>
#include <openssl/x509.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attest/eventlog.h"
#include "common/crypto.h"
#include "uefi/device_path.h"
#include "uefi/guid.h"
#include "uefi/load_option.h"
#include "uefi/ucs2.h"
#include "uefi/variable.h"

namespace dpuaudit::attest {
namespace {

// UEFI_IMAGE_LOAD_EVENT (PFP §10.4.4, EV_EFI_BOOT_SERVICES_*):
//  | ImageLocationInMemory u64 | ImageLengthInMemory u64 |
//  | ImageLinkTimeAddress u64 | LengthOfDevicePath u64 | DevicePath[...] |
// (the device path: uefi/device_path.h).

// UEFI_PLATFORM_FIRMWARE_BLOB2 (PFP §10.4.6.2) and
// UEFI_HANDOFF_TABLE_POINTERS2 (§10.4.7.2) start with a u8-sized
// description: | BlobDescriptionSize u8 | BlobDescription[size] | ...

// grub (grub-core/kern/tpm.c, commands/tpm.c) logs in PCR 8 one string per
// command; the kernel command line twice: as "grub_cmd: linux ..." and as
// "kernel_cmdline: ...".
constexpr std::string_view kGrubKernelCmdline = "kernel_cmdline: ";
constexpr std::string_view kGrubCmdLinux = "grub_cmd: linux ";
constexpr std::string_view kGrubCmdLinuxEfi = "grub_cmd: linuxefi ";
constexpr uint32_t kPcrBootApplications = 4;
constexpr uint32_t kPcrSecureBootPolicy = 7;
constexpr uint32_t kPcrGrubCommands = 8;
constexpr uint32_t kPcrSystemdStub = 12;

std::string HexNum(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' ||
                        s.back() == '\r' || s.back() == '\t')) {
    s.pop_back();
  }
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// Printable ASCII (tab, CR, LF become spaces) up to trailing NULs; nullopt
// if any other byte occurs or nothing is left.
std::optional<std::string> AsciiText(ByteView b) {
  size_t n = b.size();
  while (n > 0 && b[n - 1] == 0) --n;
  if (n == 0) return std::nullopt;
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = b[i];
    if (c == '\t' || c == '\n' || c == '\r') {
      out.push_back(' ');
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      return std::nullopt;
    }
  }
  std::string t = Trim(std::move(out));
  if (t.empty()) return std::nullopt;
  return t;
}

// UTF-16LE text such as systemd's: the first unit a printable ASCII
// character. (systemd-boot before v251 logs an odd trailing byte.)
bool LooksUtf16(ByteView b) {
  return b.size() >= 2 && b[1] == 0 && b[0] >= 0x20 && b[0] < 0x7f;
}

std::optional<std::string> Utf16Text(ByteView b) {
  if (!LooksUtf16(b)) return std::nullopt;
  std::string t = Trim(uefi::Ucs2ToUtf8Lossy(b));
  if (t.empty()) return std::nullopt;
  return t;
}

// Text of an event whose data is a string in one encoding or the other.
std::optional<std::string> AnyText(ByteView b) {
  if (std::optional<std::string> u = Utf16Text(b)) return u;
  return AsciiText(b);
}

std::string Where(const TcgEvent& e) {
  return "event " + std::to_string(e.index) + " at offset " + HexNum(e.offset) +
         " (" + EventTypeName(e.type) + ")";
}


std::string NameRfc2253(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || name == nullptr) return "";
  // XN_FLAG_RFC2253 escapes every non-ASCII byte: the result is ASCII.
  if (X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0) return "";
  char* p = nullptr;
  long n = BIO_get_mem_data(bio.get(), &p);
  if (n <= 0 || p == nullptr) return "";
  std::string out(p, static_cast<size_t>(n));
  // Belt and braces: keep the result printable ASCII (valid UTF-8).
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) > 0x7e)
      c = '?';
  }
  return out;
}

// A DER X.509 certificate (possibly followed by padding).
StatusOr<UefiCertificate> DecodeCertificateUncached(ByteView der) {
  const unsigned char* p = der.data();
  X509Ptr x(
      d2i_X509(nullptr, &p, static_cast<long>(der.size())));
  if (x == nullptr) {
    ERR_clear_error();
    return InvalidArgumentError("not a DER X.509 certificate.");
  }
  const size_t used = static_cast<size_t>(p - der.data());
  UefiCertificate c;
  c.subject = NameRfc2253(X509_get_subject_name(x.get()));
  c.issuer = NameRfc2253(X509_get_issuer_name(x.get()));
  c.sha256 = Sha256Hex(der.first(used));
  ERR_clear_error();
  return c;
}

// Every report of a fleet carries the same PK/KEK/db certificates, and
// d2i_X509 is the dominant cost of a boot-state derivation (~0.1 ms per
// certificate in OpenSSL 3): decoded results are kept per exact input bytes.
StatusOr<UefiCertificate> DecodeCertificate(ByteView der) {
  constexpr size_t kMaxCached = 256;
  static std::mutex mu;
  static std::unordered_map<std::string, StatusOr<UefiCertificate>> cache;
  std::string key(reinterpret_cast<const char*>(der.data()), der.size());
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  StatusOr<UefiCertificate> decoded = DecodeCertificateUncached(der);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxCached) cache.clear();
  cache.emplace(std::move(key), decoded);
  return decoded;
}

struct SignatureDb {
  std::vector<UefiCertificate> certs;
  size_t sha256_hashes = 0;
  size_t entries = 0;
};

// A sequence of EFI_SIGNATURE_LISTs. Structure errors stop the walk;
// certificates that do not decode are warnings.
StatusOr<SignatureDb> DecodeSignatureLists(
    ByteView data, std::vector<std::string>* bad_certs) {
  SignatureDb db;
  std::vector<uefi::EfiSignatureList> lists;
  const Status parsed = uefi::ParseSignatureLists(data, &lists);
  for (const uefi::EfiSignatureList& list : lists) {
    const std::string at =
        "EFI_SIGNATURE_LIST at offset " + HexNum(list.offset);
    for (size_t i = 0; i < list.signatures.size(); ++i) {
      ++db.entries;
      ByteView payload = list.signatures[i].data;
      if (list.type == uefi::kEfiCertSha256) {
        ++db.sha256_hashes;
      } else if (list.type == uefi::kEfiCertX509) {
        StatusOr<UefiCertificate> c = DecodeCertificate(payload);
        if (c.ok()) {
          db.certs.push_back(std::move(c).value());
        } else {
          bad_certs->push_back(at + ", signature " + std::to_string(i) + ": " +
                               c.status().message());
        }
      }
    }
  }
  if (!parsed.ok()) return parsed;
  return db;
}

struct ImageLoad {
  std::string file;  // "" when the device path has no file path node
  std::string text;  // the device path, shortened
};

StatusOr<ImageLoad> DecodeImageLoad(ByteView data) {
  ByteReader r(data);
  DPA_RETURN_IF_ERROR(r.Skip(24, "UEFI_IMAGE_LOAD_EVENT"));
  DPA_ASSIGN_OR_RETURN(uint64_t path_len, r.U64Le("LengthOfDevicePath"));
  if (path_len > r.remaining()) {
    return InvalidArgumentError("UEFI_IMAGE_LOAD_EVENT: LengthOfDevicePath " +
                                std::to_string(path_len) + " exceeds the " +
                                std::to_string(r.remaining()) + " bytes left.");
  }
  ByteView path = r.Take(static_cast<size_t>(path_len), "DevicePath").value();
  DPA_ASSIGN_OR_RETURN(uefi::DevicePathText t, uefi::DescribeDevicePath(path));
  ImageLoad out;
  out.file = std::move(t.file);
  out.text = std::move(t.text);
  return out;
}

std::string VariableDescription(const TcgEvent& e) {
  StatusOr<uefi::UefiVariable> v = uefi::DecodeUefiVariable(e.data);
  if (!v.ok()) return "";
  std::string d = v->name;
  std::optional<std::vector<uint16_t>> boot_order;
  if (v->name == "BootOrder") {
    StatusOr<std::vector<uint16_t>> order = uefi::ParseBootOrder(v->data);
    if (order.ok()) boot_order = std::move(order).value();
  }
  if (v->data.size() == 1) {
    d += " = " + std::to_string(v->data[0]);
  } else if (boot_order) {
    d += ":";
    for (size_t i = 0; i < boot_order->size() && i < 32; ++i) {
      char buf[8];
      std::snprintf(buf, sizeof buf, " %04x",
                    static_cast<unsigned>((*boot_order)[i]));
      d += buf;
    }
  } else if (uefi::IsBootOptionName(v->name) &&
             v->guid == uefi::kEfiGlobalVariable) {
    if (std::optional<std::string> desc =
            uefi::LoadOptionDescription(v->data)) {
      d += ": " + *desc;
    }
  } else if (v->data.empty()) {
    d += " (empty)";
  } else {
    d += " (" + std::to_string(v->data.size()) + " bytes)";
  }
  return d;
}

std::string SpecIdDescription(const TcgEvent& e) {
  std::string d = "Spec ID Event03";
  ByteReader r(e.data);
  if (!r.Skip(24, "header").ok()) return d;
  StatusOr<uint32_t> n = r.U32Le("numberOfAlgorithms");
  if (!n.ok()) return d;
  std::string algs;
  for (uint32_t i = 0; i < *n && i < 16; ++i) {
    StatusOr<uint16_t> alg = r.U16Le("algorithmId");
    if (!alg.ok() || !r.Skip(2, "digestSize").ok()) break;
    algs += (algs.empty() ? "" : ", ") + HashAlgName(*alg);
  }
  return algs.empty() ? d : d + ": " + algs;
}

// The text up to the first NUL of an EV_NO_ACTION signature.
std::string NoActionDescription(const TcgEvent& e) {
  constexpr std::string_view kSpecId("Spec ID Event03\0", 16);
  constexpr std::string_view kLocality("StartupLocality\0", 16);
  auto starts = [&e](std::string_view p) {
    return e.data.size() >= p.size() &&
           std::equal(
               p.begin(), p.end(), e.data.begin(),
               [](char c, uint8_t b) { return static_cast<uint8_t>(c) == b; });
  };
  if (starts(kSpecId)) return SpecIdDescription(e);
  if (starts(kLocality) && e.data.size() > kLocality.size()) {
    return "StartupLocality " + std::to_string(e.data[kLocality.size()]);
  }
  ByteView b(e.data);
  auto nul = std::find(b.begin(), b.end(), uint8_t{0});
  return AsciiText(b.first(static_cast<size_t>(nul - b.begin()))).value_or("");
}

// UEFI_PLATFORM_FIRMWARE_BLOB2 / UEFI_HANDOFF_TABLE_POINTERS2 description.
std::string SizedDescription(const TcgEvent& e) {
  if (e.data.empty() || e.data[0] + size_t{1} > e.data.size()) return "";
  return AsciiText(ByteView(e.data).subspan(1, e.data[0])).value_or("");
}

// UEFI_PLATFORM_FIRMWARE_BLOB (PFP §10.4.6.1): BlobBase u64 | BlobLength u64.
std::string BlobDescription(const TcgEvent& e) {
  if (e.data.size() != 16) return AnyText(e.data).value_or("");
  ByteReader r(e.data);
  const uint64_t base = r.U64Le("BlobBase").value();
  const uint64_t length = r.U64Le("BlobLength").value();
  return "blob at " + HexNum(base) + ", " + std::to_string(length) + " bytes";
}

// UEFI_GPT_DATA (PFP §10.4.8): EFI_PARTITION_TABLE_HEADER (HeaderSize at
// offset 12) | NumberOfPartitions u64 | entries.
std::string GptDescription(const TcgEvent& e) {
  ByteReader r(e.data);
  if (!r.Skip(12, "header").ok()) return "";
  StatusOr<uint32_t> header_size = r.U32Le("HeaderSize");
  if (!header_size.ok() || *header_size < 16) return "";
  if (!r.Skip(*header_size - 16, "header").ok()) return "";
  StatusOr<uint64_t> n = r.U64Le("NumberOfPartitions");
  if (!n.ok()) return "";
  return "GPT, " + std::to_string(*n) + " partitions";
}

std::string SeparatorDescription(const TcgEvent& e) {
  if (e.data.size() == 4 && std::all_of(e.data.begin(), e.data.end(),
                                        [](uint8_t b) { return b == 0xff; })) {
    return "separator (error)";
  }
  return "";
}

// ---- digest binding (docs/eventlog.md) ------------------------------------

// grub 2.06+ (grub-core/commands/tpm.c, grub_tpm_verify_string) logs
// "<prefix><text>\0" but hashes only <text>.
constexpr std::string_view kGrubStringPrefixes[] = {
    "kernel_cmdline: ", "grub_cmd: ", "module_cmdline: "};

// One way the digests may be derived from the data: hash `message`; if every
// bank matches, `proven` (a view into the event's data) is proven.
struct Candidate {
  std::string rule;
  Bytes message;
  ByteView proven;
};

Candidate WholeData(ByteView data) {
  return {"H(event data)", Bytes(data.begin(), data.end()), data};
}

// The VariableData of a UEFI_VARIABLE_DATA, when it decodes.
std::optional<ByteView> VariableDataOf(ByteView data) {
  StatusOr<uefi::UefiVariable> v = uefi::DecodeUefiVariable(data);
  if (!v.ok()) return std::nullopt;
  return v->data;
}

// The rules of `e`'s type, most specific (the spec's) first; empty with
// `not_defined` set when the type's digest does not cover its data.
std::vector<Candidate> CandidatesFor(const TcgEvent& e,
                                     std::string* not_defined) {
  const ByteView data(e.data);
  std::vector<Candidate> out;
  switch (e.type) {
    case kEvSeparator:
      out.push_back(WholeData(data));
      // An error separator: data ff ff ff ff, digest of 00 00 00 01
      // (tpm2-tss ifapi_eventlog_system.c).
      if (data.size() == 4 &&
          std::all_of(data.begin(), data.end(),
                      [](uint8_t b) { return b == 0xff; })) {
        out.push_back({"H(00 00 00 01) (error separator)", {0, 0, 0, 1}, data});
      }
      break;
    case kEvAction:
    case kEvEfiAction:
    case kEvSCrtmVersion:
    case kEvPlatformConfigFlags:
    case kEvOmitBootDeviceEvents:
    case kEvEfiGptEvent:
    case kEvEfiVariableBoot2:
      out.push_back(WholeData(data));
      break;
    case kEvEfiVariableDriverConfig:
    case kEvEfiVariableBoot:
      out.push_back(WholeData(data));
      // Some firmware (edk2 for Boot####; Lenovo, see go-attestation's
      // attest-tool secureboot.go) hashes only VariableData: the value is
      // proven, the name and GUID are not.
      if (std::optional<ByteView> v = VariableDataOf(data)) {
        out.push_back({"H(VariableData) (variable-data-only)",
                       Bytes(v->begin(), v->end()), *v});
      }
      break;
    case kEvEfiVariableAuthority:
      out.push_back(WholeData(data));
      // shim before rhboot/shim 8a27a48 logs one byte more than it hashes
      // (go-attestation secureboot.go, issue 157).
      if (!data.empty()) {
        ByteView shorter = data.first(data.size() - 1);
        out.push_back({"H(event data without its last byte) (shim-extra-byte)",
                       Bytes(shorter.begin(), shorter.end()), shorter});
      }
      break;
    case kEvIpl: {
      // PCRs 8 and 12 hold the bootloaders' strings (grub commands and
      // command lines, systemd-boot/-stub command lines), hashed as text.
      // Elsewhere (grub's PCR 9 files, shim's PCR 14 MokList) the data
      // names what was hashed.
      if (e.pcr != kPcrGrubCommands && e.pcr != kPcrSystemdStub) {
        *not_defined =
            "EV_IPL outside PCRs 8 and 12: the digest is of the file or "
            "variable the event data names";
        break;
      }
      out.push_back(WholeData(data));
      size_t n = data.size();
      while (n > 0 && data[n - 1] == 0) --n;
      if (n < data.size()) {
        ByteView text = data.first(n);
        out.push_back({"H(event data without trailing NULs)",
                       Bytes(text.begin(), text.end()), data});
      }
      // systemd-boot before v251 logs a UTF-16 string one byte short of
      // the StrSize() it hashes (the NUL's high byte).
      if (data.size() % 2 == 1) {
        Bytes padded(data.begin(), data.end());
        padded.push_back(0);
        out.push_back({"H(event data + 00) (systemd-boot-odd-length)",
                       std::move(padded), data});
      }
      for (std::string_view prefix : kGrubStringPrefixes) {
        if (data.size() >= prefix.size() &&
            std::equal(prefix.begin(), prefix.end(), data.begin(),
                       [](char c, uint8_t b) {
                         return static_cast<uint8_t>(c) == b;
                       })) {
          ByteView text = data.subspan(prefix.size(), n - prefix.size());
          out.push_back({"H(text after \"" + std::string(prefix) +
                             "\") (grub)",
                         Bytes(text.begin(), text.end()), text});
        }
      }
      break;
    }
    case kEvNoAction:
      *not_defined = "EV_NO_ACTION is never extended: no digest covers it";
      break;
    case kEvPostCode:
    case kEvSCrtmContents:
    case kEvEfiPlatformFirmwareBlob:
    case kEvEfiPlatformFirmwareBlob2:
    case kEvEfiHcrtmEvent:
    case kEvCpuMicrocode:
    case kEvNonhostCode:
    case kEvEfiSpdmFirmwareBlob:
      *not_defined = "the digest is of the measured code, not of the event data";
      break;
    case kEvEfiBootServicesApplication:
    case kEvEfiBootServicesDriver:
    case kEvEfiRuntimeServicesDriver:
      *not_defined =
          "the digest is the PE image's Authenticode hash, not of the event "
          "data (its device path is unproven)";
      break;
    case kEvEfiHandoffTables:
    case kEvEfiHandoffTables2:
      *not_defined = "the digest is of the tables, not of the event data";
      break;
    default:
      *not_defined = "no rule binds the digest of " + EventTypeName(e.type) +
                     " to its data";
      break;
  }
  return out;
}

bool CanHash(uint16_t alg) {
  return alg == kTpmAlgSha1 || alg == kTpmAlgSha256 || alg == kTpmAlgSha384 ||
         alg == kTpmAlgSha512;
}

}  // namespace

DataBinding CheckDataBinding(const TcgEvent& e) {
  DataBinding out;
  std::string not_defined;
  const std::vector<Candidate> candidates = CandidatesFor(e, &not_defined);
  if (candidates.empty()) {
    out.kind = DataBinding::Kind::kNotDefined;
    out.rule = not_defined;
    out.reason = Where(e) + ": " + not_defined + ".";
    return out;
  }
  out.kind = DataBinding::Kind::kMismatch;
  size_t checked_banks = 0;
  for (const EventDigest& d : e.digests) checked_banks += CanHash(d.alg);
  if (checked_banks == 0) {
    out.reason = Where(e) +
                 ": no digest in a bank this verifier can hash (sha1, sha256, "
                 "sha384, sha512).";
    return out;
  }
  std::string first_failure;
  for (const Candidate& c : candidates) {
    bool holds = true;
    for (const EventDigest& d : e.digests) {
      if (!CanHash(d.alg)) continue;
      StatusOr<Bytes> h = HashWith(d.alg, c.message);
      if (h.ok() && *h == d.digest) continue;
      holds = false;
      if (first_failure.empty()) {
        first_failure = HashAlgName(d.alg) + " digest " + HexEncode(d.digest) +
                        " is not " + c.rule +
                        (h.ok() ? " = " + HexEncode(*h) : "");
      }
      break;
    }
    if (holds) {
      out.kind = DataBinding::Kind::kBound;
      out.rule = c.rule;
      out.proven = c.proven;
      return out;
    }
  }
  out.reason = Where(e) + ": " + first_failure;
  if (candidates.size() > 1) {
    out.reason += " (nor";
    for (size_t i = 1; i < candidates.size(); ++i) {
      out.reason += (i > 1 ? "," : "") + std::string(" ") + candidates[i].rule;
    }
    out.reason += ")";
  }
  out.reason += ".";
  return out;
}

namespace {

// The fact-level checks ExtractBootState applies to a binding.
// A UEFI variable event's facts need its whole UEFI_VARIABLE_DATA proven:
// with only VariableData bound, another variable's value could be relabelled
// (go-attestation attest-tool's TODO on H(VariableData) firmware).
std::optional<std::string> VariableUnproven(const TcgEvent& e,
                                            const DataBinding& b) {
  if (b.kind != DataBinding::Kind::kBound) return b.reason;
  StatusOr<uefi::UefiVariable> v = uefi::DecodeUefiVariable(b.proven);
  if (b.proven.data() != e.data.data() || !v.ok()) {
    return Where(e) + ": only VariableData is bound (" + b.rule +
           "); the variable's name and GUID are unproven.";
  }
  return std::nullopt;
}

}  // namespace

std::string EventDescription(const TcgEvent& e) {
  switch (e.type) {
    case kEvNoAction:
      return NoActionDescription(e);
    case kEvSeparator:
      return SeparatorDescription(e);
    case kEvEfiVariableDriverConfig:
    case kEvEfiVariableBoot:
    case kEvEfiVariableBoot2:
    case kEvEfiVariableAuthority:
      return VariableDescription(e);
    case kEvEfiBootServicesApplication:
    case kEvEfiBootServicesDriver:
    case kEvEfiRuntimeServicesDriver: {
      StatusOr<ImageLoad> img = DecodeImageLoad(e.data);
      return img.ok() ? img->text : "";
    }
    case kEvEfiPlatformFirmwareBlob2:
    case kEvEfiHandoffTables2:
      return SizedDescription(e);
    case kEvEfiPlatformFirmwareBlob:
      return BlobDescription(e);
    case kEvPostCode:
      return e.data.size() == 16 ? BlobDescription(e)
                                 : AnyText(e.data).value_or("");
    case kEvEfiGptEvent:
      return GptDescription(e);
    case kEvEfiHandoffTables:
      if (e.data.size() >= 8) {
        ByteReader r(e.data);
        return std::to_string(r.U64Le("NumberOfTables").value()) +
               " configuration tables";
      }
      return "";
    default:
      return AnyText(e.data).value_or("");
  }
}

BootState ExtractBootState(const std::vector<TcgEvent>& events) {
  BootState s;
  std::vector<std::string> grub_linux;  // "grub_cmd: linux ..." fallbacks
  bool grub_kernel_cmdline = false;
  // Facts an unbound event carries: recorded once, cleared at the end.
  auto unproven = [&s](const std::string& fact, const std::string& reason) {
    s.unproven.try_emplace(fact, reason);
  };
  // A command line is used only when its event is bound. Every rule's
  // proven bytes cover the text used below (grub's prefix, which only
  // classifies the string, is not hashed by grub: docs/eventlog.md).
  auto cmdline_bound = [&](const TcgEvent& e) {
    DataBinding b = CheckDataBinding(e);
    if (b.kind == DataBinding::Kind::kBound) return true;
    unproven("kernel_cmdlines", b.reason);
    return false;
  };
  for (const TcgEvent& e : events) {
    if ((e.type == kEvEfiVariableDriverConfig ||
         e.type == kEvEfiVariableAuthority) &&
        e.pcr == kPcrSecureBootPolicy) {
      StatusOr<uefi::UefiVariable> v = uefi::DecodeUefiVariable(e.data);
      if (!v.ok()) {
        s.warnings.push_back(Where(e) + ": " + v.status().message());
        continue;
      }
      using uefi::SecureBootVariable;
      // The name and GUID lie in the proven bytes (VariableUnproven), so
      // the re-decoded variable below has the same kind.
      const SecureBootVariable kind =
          uefi::ClassifySecureBootVariable(v->guid, v->name);
      {
        std::string fact;
        if (e.type == kEvEfiVariableAuthority) {
          fact = "authorities";
        } else if (kind == SecureBootVariable::kSecureBoot) {
          fact = "secure_boot";
        } else if (kind == SecureBootVariable::kPk) {
          fact = "pk";
        } else if (kind == SecureBootVariable::kKek) {
          fact = "kek";
        } else if (kind == SecureBootVariable::kDb) {
          fact = "db";
        } else if (kind == SecureBootVariable::kDbx) {
          fact = "dbx";
        }
        if (fact.empty()) continue;  // no fact comes from this variable
        const DataBinding binding = CheckDataBinding(e);
        if (std::optional<std::string> why = VariableUnproven(e, binding)) {
          unproven(fact, *why);
          continue;
        }
        // From here on only the proven bytes are read (for shim's extra
        // byte, all but the last one).
        v = uefi::DecodeUefiVariable(binding.proven);
        if (!v.ok()) continue;  // VariableUnproven decoded it: unreachable
      }
      if (e.type == kEvEfiVariableAuthority) {
        // EFI_SIGNATURE_DATA (owner GUID, then the DER); shim logs its
        // built-in certificate ("Shim") as bare DER.
        StatusOr<UefiCertificate> c = InvalidArgumentError("no data.");
        if (v->data.size() > uefi::kGuidBytes)
          c = DecodeCertificate(v->data.subspan(uefi::kGuidBytes));
        if (!c.ok()) c = DecodeCertificate(v->data);
        if (c.ok()) {
          s.authorities.push_back(std::move(c).value());
        } else if (v->name != "SbatLevel" && v->name != "MokListTrusted") {
          s.warnings.push_back(Where(e) + ": " + v->name +
                               " is not an EFI_SIGNATURE_DATA certificate.");
        }
        continue;
      }
      if (kind == SecureBootVariable::kSecureBoot) {
        StatusOr<bool> on = uefi::ParseSecureBootValue(v->data);
        if (on.ok()) {
          s.secure_boot = *on;
        } else {
          s.warnings.push_back(Where(e) + ": " + on.status().message());
        }
        continue;
      }
      std::vector<std::string> bad;
      StatusOr<SignatureDb> db = DecodeSignatureLists(v->data, &bad);
      for (const std::string& b : bad)
        s.warnings.push_back(Where(e) + ": " + v->name + ": " + b);
      if (!db.ok()) {
        s.warnings.push_back(Where(e) + ": " + v->name + ": " +
                             db.status().message());
        continue;
      }
      switch (kind) {
        case SecureBootVariable::kPk:
          s.pk = std::move(db->certs);
          break;
        case SecureBootVariable::kKek:
          s.kek = std::move(db->certs);
          break;
        case SecureBootVariable::kDb:
          s.db = std::move(db->certs);
          s.db_hashes = db->sha256_hashes;
          break;
        case SecureBootVariable::kDbx:
          s.dbx_entries = db->entries;
          s.dbx_sha256 = Sha256Hex(v->data);
          break;
        case SecureBootVariable::kSecureBoot:
        case SecureBootVariable::kOther:
          break;  // handled above
      }
    } else if (e.type == kEvEfiBootServicesApplication &&
               e.pcr == kPcrBootApplications) {
      StatusOr<ImageLoad> img = DecodeImageLoad(e.data);
      if (!img.ok()) {
        s.warnings.push_back(Where(e) + ": " + img.status().message());
        continue;
      }
      BootApplication app;
      app.event_index = e.index;
      app.path = img->file;
      const Bytes* d = e.DigestFor(kTpmAlgSha256);
      if (d != nullptr) app.sha256 = HexEncode(*d);
      s.boot_applications.push_back(std::move(app));
    } else if (e.type == kEvIpl && e.pcr == kPcrGrubCommands) {
      if (std::optional<std::string> u = Utf16Text(e.data)) {
        // systemd-boot (before v251)
        if (cmdline_bound(e)) s.kernel_cmdlines.push_back(*u);
        continue;
      }
      std::optional<std::string> t = AsciiText(e.data);
      if (!t) continue;  // grub also logs binary module data here
      if (t->rfind(kGrubKernelCmdline, 0) == 0) {
        if (!cmdline_bound(e)) continue;
        grub_kernel_cmdline = true;
        s.kernel_cmdlines.push_back(Trim(t->substr(kGrubKernelCmdline.size())));
      } else if (t->rfind(kGrubCmdLinux, 0) == 0) {
        if (cmdline_bound(e))
          grub_linux.push_back(Trim(t->substr(kGrubCmdLinux.size())));
      } else if (t->rfind(kGrubCmdLinuxEfi, 0) == 0) {
        if (cmdline_bound(e))
          grub_linux.push_back(Trim(t->substr(kGrubCmdLinuxEfi.size())));
      }
    } else if (e.type == kEvIpl && e.pcr == kPcrSystemdStub) {
      std::optional<std::string> u = Utf16Text(e.data);
      if (u) {
        if (cmdline_bound(e)) s.kernel_cmdlines.push_back(*u);
      } else if (!e.data.empty()) {
        s.warnings.push_back(Where(e) +
                             ": PCR 12 data is not a UTF-16LE command line.");
      }
    }
  }
  // grub logs the command line twice; its "linux" command counts only when
  // no "kernel_cmdline" entry was logged.
  if (!grub_kernel_cmdline) {
    s.kernel_cmdlines.insert(s.kernel_cmdlines.end(), grub_linux.begin(),
                             grub_linux.end());
  }
  // Fail closed: a fact one of whose events is unbound is not known, even
  // if another (bound) event also set it.
  if (s.unproven.contains("secure_boot")) s.secure_boot.reset();
  if (s.unproven.contains("pk")) s.pk.clear();
  if (s.unproven.contains("kek")) s.kek.clear();
  if (s.unproven.contains("db")) {
    s.db.clear();
    s.db_hashes = 0;
  }
  if (s.unproven.contains("dbx")) {
    s.dbx_entries = 0;
    s.dbx_sha256.clear();
  }
  return s;
}

nlohmann::json BootStateJson(const BootState& s) {
  auto certs = [](const std::vector<UefiCertificate>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const UefiCertificate& c : v) {
      a.push_back(
          {{"subject", c.subject}, {"issuer", c.issuer}, {"sha256", c.sha256}});
    }
    return a;
  };
  nlohmann::json j = nlohmann::json::object();
  j["secure_boot"] = s.secure_boot.has_value() ? nlohmann::json(*s.secure_boot)
                                               : nlohmann::json(nullptr);
  j["pk"] = certs(s.pk);
  j["kek"] = certs(s.kek);
  j["db"] = certs(s.db);
  j["db_hashes"] = s.db_hashes;
  j["dbx_entries"] = s.dbx_entries;
  j["dbx_sha256"] = s.dbx_sha256;
  j["authorities"] = certs(s.authorities);
  nlohmann::json apps = nlohmann::json::array();
  for (const BootApplication& a : s.boot_applications) {
    apps.push_back({{"event_index", a.event_index},
                    {"path", a.path},
                    {"sha256", a.sha256}});
  }
  j["boot_applications"] = std::move(apps);
  j["kernel_cmdlines"] = s.kernel_cmdlines;
  j["warnings"] = s.warnings;
  j["unproven"] = s.unproven;
  return j;
}

}  // namespace dpuaudit::attest
