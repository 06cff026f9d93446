// The UEFI side of the event log (eventlog.h): one-line event descriptions
// and the boot state (Secure Boot variables, authorities, boot
// applications, kernel command lines) the events describe.
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

namespace dpuaudit::attest {
namespace {

using Guid = std::array<uint8_t, 16>;

// EFI_GUIDs as they are stored (UEFI 2.10 Appendix A: the first three
// fields little-endian).
// EFI_GLOBAL_VARIABLE 8be4df61-93ca-11d2-aa0d-00e098032b8c (SecureBoot, PK,
// KEK, Boot####).
constexpr Guid kEfiGlobalVariable = {0x61, 0xdf, 0xe4, 0x8b, 0xca, 0x93,
                                     0xd2, 0x11, 0xaa, 0x0d, 0x00, 0xe0,
                                     0x98, 0x03, 0x2b, 0x8c};
// EFI_IMAGE_SECURITY_DATABASE_GUID d719b2cb-3d3a-4596-a3bc-dad00e67656f (db,
// dbx).
constexpr Guid kEfiImageSecurityDatabase = {0xcb, 0xb2, 0x19, 0xd7, 0x3a, 0x3d,
                                            0x96, 0x45, 0xa3, 0xbc, 0xda, 0xd0,
                                            0x0e, 0x67, 0x65, 0x6f};
// EFI_CERT_X509_GUID a5c059a1-94e4-4aa7-87b5-ab155c2bf072.
constexpr Guid kEfiCertX509 = {0xa1, 0x59, 0xc0, 0xa5, 0xe4, 0x94, 0xa7, 0x4a,
                               0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72};
// EFI_CERT_SHA256_GUID c1c41626-504c-4092-aca9-41f936934328.
constexpr Guid kEfiCertSha256 = {0x26, 0x16, 0xc4, 0xc1, 0x4c, 0x50,
                                 0x92, 0x40, 0xac, 0xa9, 0x41, 0xf9,
                                 0x36, 0x93, 0x43, 0x28};

// UEFI_VARIABLE_DATA (PC Client PFP §10.4.3, EV_EFI_VARIABLE_*):
//  +----------------+-------------------+--------------------+
//  | VariableName   | UnicodeNameLength | VariableDataLength |
//  | GUID (16)      | u64 (characters)  | u64 (bytes)        |
//  +----------------+-------------------+--------------------+
//  | UnicodeName[UnicodeNameLength] (UTF-16LE, no NUL) | VariableData |
struct UefiVariable {
  Guid guid{};
  std::string name;  // UTF-8
  ByteView data;
};

// EFI_SIGNATURE_LIST (UEFI 2.10 §32.4.1):
//  +---------------+-------------------+---------------------+---------------+
//  | SignatureType | SignatureListSize | SignatureHeaderSize | SignatureSize |
//  | GUID (16)     | u32               | u32                 | u32           |
//  +---------------+-------------------+---------------------+---------------+
//  | SignatureHeader[HeaderSize] | EFI_SIGNATURE_DATA[n] (SignatureSize each) |
// EFI_SIGNATURE_DATA: SignatureOwner GUID (16) | SignatureData[Size - 16].
constexpr size_t kSignatureListHeaderBytes = 28;
constexpr size_t kGuidBytes = 16;

// UEFI_IMAGE_LOAD_EVENT (PFP §10.4.4, EV_EFI_BOOT_SERVICES_*):
//  | ImageLocationInMemory u64 | ImageLengthInMemory u64 |
//  | ImageLinkTimeAddress u64 | LengthOfDevicePath u64 | DevicePath[...] |
// EFI_DEVICE_PATH_PROTOCOL node (UEFI 2.10 §10.3.1):
//  | Type u8 | SubType u8 | Length u16 (whole node) | data[Length - 4] |
constexpr uint8_t kDpHardware = 0x01;
constexpr uint8_t kDpAcpi = 0x02;
constexpr uint8_t kDpMessaging = 0x03;
constexpr uint8_t kDpMedia = 0x04;
constexpr uint8_t kDpEnd = 0x7f;
constexpr uint8_t kDpEndEntire = 0xff;
constexpr uint8_t kDpHardwarePci = 0x01;
constexpr uint8_t kDpAcpiAcpi = 0x01;
constexpr uint8_t kDpMediaHardDrive = 0x01;
constexpr uint8_t kDpMediaFilePath = 0x04;
constexpr size_t kDpNodeHeaderBytes = 4;
constexpr uint32_t kAcpiPciRootHid = 0x0a0341d0;  // EISA "PNP0A03"
// A hostile path could hold thousands of nodes; descriptions stop here.
constexpr size_t kMaxDevicePathNodes = 64;

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

Guid ToGuid(ByteView b) {
  Guid g{};
  std::copy_n(b.begin(), std::min(b.size(), g.size()), g.begin());
  return g;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// UTF-16LE to UTF-8, up to the first NUL; a lone surrogate becomes U+FFFD,
// a control character a space. An odd last byte is ignored.
std::string Utf16ToUtf8(ByteView b) {
  constexpr uint32_t kReplacement = 0xfffd;
  std::string out;
  for (size_t i = 0; i + 1 < b.size(); i += 2) {
    uint32_t u = static_cast<uint32_t>(b[i] | (b[i + 1] << 8));
    if (u == 0) break;
    if (u >= 0xd800 && u <= 0xdbff) {
      uint32_t lo = i + 3 < b.size()
                        ? static_cast<uint32_t>(b[i + 2] | (b[i + 3] << 8))
                        : 0;
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        AppendUtf8(0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00), &out);
        i += 2;
      } else {
        AppendUtf8(kReplacement, &out);
      }
    } else if (u >= 0xdc00 && u <= 0xdfff) {
      AppendUtf8(kReplacement, &out);
    } else if (u < 0x20 || u == 0x7f) {
      out.push_back(' ');
    } else {
      AppendUtf8(u, &out);
    }
  }
  return out;
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
  std::string t = Trim(Utf16ToUtf8(b));
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

StatusOr<UefiVariable> DecodeUefiVariable(ByteView data) {
  ByteReader r(data);
  UefiVariable v;
  DPA_ASSIGN_OR_RETURN(ByteView guid, r.Take(kGuidBytes, "VariableName"));
  v.guid = ToGuid(guid);
  DPA_ASSIGN_OR_RETURN(uint64_t name_chars, r.U64Le("UnicodeNameLength"));
  DPA_ASSIGN_OR_RETURN(uint64_t data_bytes, r.U64Le("VariableDataLength"));
  if (name_chars > r.remaining() / 2) {
    return InvalidArgumentError("UEFI variable: UnicodeNameLength " +
                                std::to_string(name_chars) + " exceeds the " +
                                std::to_string(r.remaining()) + " bytes left.");
  }
  ByteView name =
      r.Take(static_cast<size_t>(name_chars) * 2, "UnicodeName").value();
  if (data_bytes > r.remaining()) {
    return InvalidArgumentError("UEFI variable: VariableDataLength " +
                                std::to_string(data_bytes) + " exceeds the " +
                                std::to_string(r.remaining()) + " bytes left.");
  }
  v.name = Utf16ToUtf8(name);
  v.data = r.Take(static_cast<size_t>(data_bytes), "VariableData").value();
  return v;
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
  ByteReader r(data);
  while (!r.empty()) {
    const std::string at = "EFI_SIGNATURE_LIST at offset " + HexNum(r.offset());
    if (r.remaining() < kSignatureListHeaderBytes) {
      return InvalidArgumentError(
          at + ": " + std::to_string(r.remaining()) +
          " bytes left, shorter than its 28-byte header.");
    }
    const Guid type = ToGuid(r.Take(kGuidBytes, "SignatureType").value());
    const uint32_t list_size = r.U32Le("SignatureListSize").value();
    const uint32_t header_size = r.U32Le("SignatureHeaderSize").value();
    const uint32_t sig_size = r.U32Le("SignatureSize").value();
    if (list_size < kSignatureListHeaderBytes ||
        list_size - kSignatureListHeaderBytes > r.remaining()) {
      return InvalidArgumentError(
          at + ": SignatureListSize " + std::to_string(list_size) +
          " does not fit the " +
          std::to_string(r.remaining() + kSignatureListHeaderBytes) +
          " bytes left.");
    }
    ByteView body =
        r.Take(list_size - kSignatureListHeaderBytes, "list").value();
    if (header_size > body.size()) {
      return InvalidArgumentError(at + ": SignatureHeaderSize " +
                                  std::to_string(header_size) +
                                  " exceeds the list.");
    }
    ByteView sigs = body.subspan(header_size);
    if (sig_size < kGuidBytes) {
      return InvalidArgumentError(at + ": SignatureSize " +
                                  std::to_string(sig_size) +
                                  " is smaller than the 16-byte owner GUID.");
    }
    if (sigs.size() % sig_size != 0) {
      return InvalidArgumentError(at + ": " + std::to_string(sigs.size()) +
                                  " bytes of signatures are not a multiple of "
                                  "SignatureSize " +
                                  std::to_string(sig_size) + ".");
    }
    for (size_t off = 0; off < sigs.size(); off += sig_size) {
      ++db.entries;
      ByteView payload = sigs.subspan(off + kGuidBytes, sig_size - kGuidBytes);
      if (type == kEfiCertSha256) {
        ++db.sha256_hashes;
      } else if (type == kEfiCertX509) {
        StatusOr<UefiCertificate> c = DecodeCertificate(payload);
        if (c.ok()) {
          db.certs.push_back(std::move(c).value());
        } else {
          bad_certs->push_back(at + ", signature " +
                               std::to_string(off / sig_size) + ": " +
                               c.status().message());
        }
      }
    }
  }
  return db;
}

// Names of other common nodes (UEFI 2.10 §10.3), without their data.
std::string NodeName(uint8_t type, uint8_t subtype) {
  struct Name {
    uint8_t type, subtype;
    const char* name;
  };
  static constexpr Name kNames[] = {
      {1, 4, "VenHw"},  {3, 5, "USB"},   {3, 10, "VenMsg"}, {3, 11, "MAC"},
      {3, 12, "IPv4"},  {3, 13, "IPv6"}, {3, 18, "Sata"},   {3, 23, "NVMe"},
      {3, 24, "Uri"},   {3, 29, "eMMC"}, {4, 2, "CDROM"},   {4, 3, "VenMedia"},
      {4, 6, "FvFile"}, {4, 7, "Fv"},    {4, 8, "Offset"},
  };
  for (const Name& n : kNames) {
    if (n.type == type && n.subtype == subtype)
      return std::string(n.name) + "()";
  }
  return "Path(" + std::to_string(type) + "," + std::to_string(subtype) + ")";
}

// File path of a device path: the Media/File Path nodes joined with '\'.
// `text` (if given) gets a short rendering of every node.
StatusOr<std::string> WalkDevicePath(ByteView path, std::string* text) {
  ByteReader r(path);
  std::string file;
  size_t nodes = 0;
  auto add_text = [text](const std::string& s) {
    if (text == nullptr) return;
    if (!text->empty()) text->push_back('/');
    *text += s;
  };
  while (!r.empty()) {
    const size_t at = r.offset();
    if (r.remaining() < kDpNodeHeaderBytes) {
      return InvalidArgumentError("device path node at offset " + HexNum(at) +
                                  " is truncated.");
    }
    const uint8_t type = r.U8("Type").value();
    const uint8_t subtype = r.U8("SubType").value();
    const uint16_t length = r.U16Le("Length").value();
    if (length < kDpNodeHeaderBytes ||
        length - kDpNodeHeaderBytes > r.remaining()) {
      return InvalidArgumentError(
          "device path node at offset " + HexNum(at) + ": Length " +
          std::to_string(length) + " does not fit the " +
          std::to_string(r.remaining() + kDpNodeHeaderBytes) + " bytes left.");
    }
    ByteView body = r.Take(length - kDpNodeHeaderBytes, "node").value();
    if (type == kDpEnd && subtype == kDpEndEntire) break;
    if (++nodes > kMaxDevicePathNodes) {
      add_text("...");
      break;
    }
    ByteReader b(body);
    if (type == kDpMedia && subtype == kDpMediaFilePath) {
      std::string piece = Utf16ToUtf8(body);
      if (!file.empty() && file.back() != '\\' && !piece.empty() &&
          piece.front() != '\\') {
        file.push_back('\\');
      }
      file += piece;
      add_text(piece);
    } else if (type == kDpAcpi && subtype == kDpAcpiAcpi && body.size() >= 8) {
      const uint32_t hid = b.U32Le("HID").value();
      const uint32_t uid = b.U32Le("UID").value();
      add_text(hid == kAcpiPciRootHid
                   ? "PciRoot(" + HexNum(uid) + ")"
                   : "Acpi(" + HexNum(hid) + "," + HexNum(uid) + ")");
    } else if (type == kDpHardware && subtype == kDpHardwarePci &&
               body.size() >= 2) {
      const uint8_t function = body[0];
      const uint8_t device = body[1];
      add_text("Pci(" + HexNum(device) + "," + HexNum(function) + ")");
    } else if (type == kDpMedia && subtype == kDpMediaHardDrive &&
               body.size() >= 4) {
      add_text("HD(" + std::to_string(b.U32Le("PartitionNumber").value()) +
               ")");
    } else {
      add_text(NodeName(type, subtype));
    }
  }
  return file;
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
  ImageLoad out;
  DPA_ASSIGN_OR_RETURN(out.file, WalkDevicePath(path, &out.text));
  return out;
}

// EFI_LOAD_OPTION (UEFI 2.10 §3.1.3): Attributes u32 | FilePathListLength
// u16 | Description (UTF-16LE, NUL-terminated) | FilePathList | OptionalData.
std::optional<std::string> LoadOptionDescription(ByteView data) {
  if (data.size() < 6) return std::nullopt;
  return Utf16ToUtf8(data.subspan(6));
}

// "Boot0001" (four upper-case hex digits), not "BootNext" or "BootOrder".
bool IsBootOptionName(const std::string& name) {
  if (name.size() != 8 || name.rfind("Boot", 0) != 0) return false;
  return std::all_of(name.begin() + 4, name.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
  });
}

std::string VariableDescription(const TcgEvent& e) {
  StatusOr<UefiVariable> v = DecodeUefiVariable(e.data);
  if (!v.ok()) return "";
  std::string d = v->name;
  if (v->data.size() == 1) {
    d += " = " + std::to_string(v->data[0]);
  } else if (v->name == "BootOrder" && v->data.size() % 2 == 0) {
    d += ":";
    for (size_t i = 0; i + 1 < v->data.size() && i < 64; i += 2) {
      char buf[8];
      std::snprintf(buf, sizeof buf, " %04x",
                    static_cast<unsigned>(v->data[i] | (v->data[i + 1] << 8)));
      d += buf;
    }
  } else if (IsBootOptionName(v->name) && v->guid == kEfiGlobalVariable) {
    if (std::optional<std::string> desc = LoadOptionDescription(v->data)) {
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
  StatusOr<UefiVariable> v = DecodeUefiVariable(data);
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
  StatusOr<UefiVariable> v = DecodeUefiVariable(b.proven);
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
      StatusOr<UefiVariable> v = DecodeUefiVariable(e.data);
      if (!v.ok()) {
        s.warnings.push_back(Where(e) + ": " + v.status().message());
        continue;
      }
      {
        const bool global = v->guid == kEfiGlobalVariable;
        const bool secdb = v->guid == kEfiImageSecurityDatabase;
        std::string fact;
        if (e.type == kEvEfiVariableAuthority) {
          fact = "authorities";
        } else if (global && v->name == "SecureBoot") {
          fact = "secure_boot";
        } else if (global && (v->name == "PK" || v->name == "KEK")) {
          fact = v->name == "PK" ? "pk" : "kek";
        } else if (secdb && (v->name == "db" || v->name == "dbx")) {
          fact = v->name;
        }
        if (fact.empty()) continue;  // no fact comes from this variable
        const DataBinding binding = CheckDataBinding(e);
        if (std::optional<std::string> why = VariableUnproven(e, binding)) {
          unproven(fact, *why);
          continue;
        }
        // From here on only the proven bytes are read (for shim's extra
        // byte, all but the last one).
        v = DecodeUefiVariable(binding.proven);
        if (!v.ok()) continue;  // VariableUnproven decoded it: unreachable
      }
      if (e.type == kEvEfiVariableAuthority) {
        // EFI_SIGNATURE_DATA (owner GUID, then the DER); shim logs its
        // built-in certificate ("Shim") as bare DER.
        StatusOr<UefiCertificate> c = InvalidArgumentError("no data.");
        if (v->data.size() > kGuidBytes)
          c = DecodeCertificate(v->data.subspan(kGuidBytes));
        if (!c.ok()) c = DecodeCertificate(v->data);
        if (c.ok()) {
          s.authorities.push_back(std::move(c).value());
        } else if (v->name != "SbatLevel" && v->name != "MokListTrusted") {
          s.warnings.push_back(Where(e) + ": " + v->name +
                               " is not an EFI_SIGNATURE_DATA certificate.");
        }
        continue;
      }
      const bool global = v->guid == kEfiGlobalVariable;
      const bool secdb = v->guid == kEfiImageSecurityDatabase;
      if (global && v->name == "SecureBoot") {
        if (v->data.size() > 1) {
          s.warnings.push_back(Where(e) + ": SecureBoot holds " +
                               std::to_string(v->data.size()) +
                               " bytes, expected 1.");
        } else {
          // An absent variable is logged with no data: Secure Boot is off.
          s.secure_boot = !v->data.empty() && v->data[0] != 0;
        }
        continue;
      }
      const bool is_pk = global && v->name == "PK";
      const bool is_kek = global && v->name == "KEK";
      const bool is_db = secdb && v->name == "db";
      const bool is_dbx = secdb && v->name == "dbx";
      if (!is_pk && !is_kek && !is_db && !is_dbx) continue;
      std::vector<std::string> bad;
      StatusOr<SignatureDb> db = DecodeSignatureLists(v->data, &bad);
      for (const std::string& b : bad)
        s.warnings.push_back(Where(e) + ": " + v->name + ": " + b);
      if (!db.ok()) {
        s.warnings.push_back(Where(e) + ": " + v->name + ": " +
                             db.status().message());
        continue;
      }
      if (is_pk) s.pk = std::move(db->certs);
      if (is_kek) s.kek = std::move(db->certs);
      if (is_db) {
        s.db = std::move(db->certs);
        s.db_hashes = db->sha256_hashes;
      }
      if (is_dbx) {
        s.dbx_entries = db->entries;
        s.dbx_sha256 = Sha256Hex(v->data);
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
