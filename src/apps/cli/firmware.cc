#include "apps/cli/firmware.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "apps/cli/api_client.h"
#include "apps/cli/cli_util.h"
#include "apps/shared/http_client.h"
#include "apps/shared/token_file.h"
#include "apps/shared/utc_time.h"
#include "bluefield/bfb.h"
#include "bluefield/bfb_info.h"
#include "firmware/boot_chain.h"
#include "common/byte_stream.h"
#include "common/files.h"
#include "verifier/refvals/model.h"

namespace dpuaudit::apps {
namespace {

constexpr int kExitFinding = 1;
constexpr size_t kColumns = 100;  // the width human output fits

// Standard input as a ByteStream: a BFB piped in is parsed as it streams
// (one buffer, bluefield/bfb.h), never held whole; the parser's own limit,
// BfbLimits::max_total_bytes (16 GiB), bounds how much is read.
class StdinByteStream final : public ByteStream {
 public:
  StatusOr<size_t> Read(uint8_t* out, size_t max) override {
    for (;;) {
      ssize_t n = ::read(STDIN_FILENO, out, max);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      return UnavailableError(std::string("read stdin: ") + std::strerror(errno));
    }
  }
  std::string Name() const override { return "stdin"; }
};

// `file` "-" reads stdin (streamed). `versions`, when given, reads the
// component versions in the same pass (bluefield/bfb_info.h).
StatusOr<bluefield::BfbLayout> ParseBfbFile(const std::string& file,
                                            bluefield::BfbVersions* versions = nullptr) {
  std::unique_ptr<ByteStream> in;
  if (file == "-") {
    in = std::make_unique<StdinByteStream>();
  } else {
    DPA_ASSIGN_OR_RETURN(in, OpenFileByteStream(file));
  }
  bluefield::BfbVersionScanner scanner;
  StatusOr<bluefield::BfbLayout> layout =
      bluefield::ParseBfb(*in, {}, versions != nullptr ? &scanner : nullptr);
  if (layout.ok() && versions != nullptr) *versions = scanner.Versions();
  if (!layout.ok()) return layout.status().WithPrefix(file == "-" ? "stdin" : file);
  return layout;
}

std::string UrlEncode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string Day(int64_t t) { return UtcTime(t, "%Y-%m-%dT%H:%MZ"); }

std::string Or(const std::string& s, const std::string& fallback) {
  return s.empty() ? fallback : s;
}

std::string Str(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string DescribeFirmware(const report::ReportClaims& c) {
  std::ostringstream o;
  const nlohmann::json& fw = c.firmware;
  o << "firmware (as reported by the agent):\n";
  const nlohmann::json arm = fw.is_object() && fw.contains("arm") ? fw["arm"] : nlohmann::json();
  if (!Str(arm, "error").empty()) {
    o << "  arm:      unreadable: " << Str(arm, "error") << "\n";
  } else if (arm.is_object()) {
    o << "  ATF       " << Str(arm, "atf") << "  [" << Str(arm, "atf_build") << "]\n"
      << "  UEFI      " << Str(arm, "uefi") << "\n"
      << "  BSP       " << Str(arm, "bsp") << "\n"
      << "  OS        " << Str(arm, "os_release") << "\n";
  }
  const nlohmann::json nic = fw.is_object() && fw.contains("nic") ? fw["nic"] : nlohmann::json();
  if (!Str(nic, "error").empty()) {
    o << "  NIC:      unreadable: " << Str(nic, "error") << "\n";
  } else if (nic.is_object()) {
    o << "  NIC FW    " << Str(nic, "version") << "  PSID " << Str(nic, "psid")
      << "  (mlxfwmanager running " << Or(Str(nic, "running"), "?") << ", staged "
      << Or(Str(nic, "staged"), "?") << ")\n";
  }
  if (c.boot_chain.empty()) {
    o << "boot chain: not in this report\n";
    return FitLines(o.str(), kColumns);
  }
  auto boot = firmware::ParseBootChainJson(c.boot_chain);
  if (!boot.ok()) {
    o << "boot chain: malformed: " << boot.status().message() << "\n";
    return FitLines(o.str(), kColumns);
  }
  const firmware::BootPartitions& parts = boot->partitions;
  o << "boot chain (digests measured by the agent):\n";
  o << "  primary   " << Or(parts.primary, "unknown (" + parts.bootctl_status.message() + ")")
    << "\n";
  for (const firmware::PartitionMeasurement& m : parts.partitions) {
    o << "  " << m.path << (m.path == parts.primary ? " (primary)" : "") << ": ";
    if (!m.status.ok() || !m.layout) {
      o << "unreadable: " << m.status.message() << "\n";
      continue;
    }
    o << m.layout->images.size() << " images, " << m.layout->end_offset << " bytes"
      << (m.layout->all_crc_ok ? ", CRCs ok" : ", CRC MISMATCH") << ", sha256 "
      << m.sha256.substr(0, 16) << "…\n";
    if (m.path != parts.primary) continue;
    for (const bluefield::BfbImage& img : m.layout->images) {
      o << "    " << std::left << std::setw(18) << img.name << std::right << std::setw(7)
        << img.header.image_len << "  " << (img.crc_ok ? "crc ok " : "CRC BAD")
        << "  sha384 " << img.sha384.substr(0, 32) << "…\n";
    }
  }
  const firmware::OsBootInfo& os = boot->os;
  if (os.cmdline_status.ok()) {
    o << Wrap(os.cmdline.raw, kColumns, "  cmdline   ", "            ");
  } else {
    o << "  cmdline   unreadable: " << os.cmdline_status.message() << "\n";
  }
  for (const firmware::OsArtefact& a : os.artefacts) {
    o << "  " << std::left << std::setw(8) << a.role << std::right << "  ";
    if (a.status.ok()) {
      o << a.path << "  sha384 " << a.sha384.substr(0, 32) << "…\n";
    } else {
      o << "not measured: " << a.status.message() << "\n";
    }
  }
  return FitLines(o.str(), kColumns);
}

namespace {

using nlohmann::json;

json StrOrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// One section of the report's "firmware" member (arm, nic), made explicit:
// status ok (the fields named, "" when the agent sent none), unreadable
// (the agent's error), absent, or malformed.
json FirmwareSection(const json& fw, const char* key, std::initializer_list<const char*> fields) {
  if (!fw.is_object() || !fw.contains(key)) return {{"status", "absent"}};
  const json& s = fw[key];
  if (!s.is_object()) {
    return {{"status", "malformed"}, {"error", std::string(key) + " is not an object."}};
  }
  if (s.contains("error")) {
    std::string error = Str(s, "error");
    return {{"status", "unreadable"}, {"error", error.empty() ? s["error"].dump() : error}};
  }
  json o = {{"status", "ok"}};
  for (const char* f : fields) o[f] = Str(s, f);
  return o;
}

json PartitionJson(const firmware::PartitionMeasurement& m, const std::string& primary) {
  json p = {{"path", m.path},
            {"primary", !primary.empty() && m.path == primary},
            {"size", m.size},
            {"sha256", StrOrNull(m.sha256)}};
  if (!m.status.ok() || !m.layout) {
    p["status"] = "unreadable";
    p["error"] = m.status.ok() ? std::string("no layout was measured.") : m.status.message();
    return p;
  }
  const bluefield::BfbLayout& l = *m.layout;
  p["status"] = "ok";
  p["end_offset"] = l.end_offset;
  p["all_crc_ok"] = l.all_crc_ok;
  p["trailing"] = std::string(bluefield::BfbTrailingName(l.trailing));
  json images = json::array();
  for (const bluefield::BfbImage& img : l.images) {
    images.push_back({{"index", img.index},
                      {"offset", img.offset},
                      {"id", img.header.image_id},
                      {"name", img.name},
                      {"length", img.header.image_len},
                      {"crc_ok", img.crc_ok},
                      {"sha384", img.sha384}});
  }
  p["images"] = std::move(images);
  return p;
}

json OsJson(const firmware::OsBootInfo& os) {
  json j;
  j["cmdline"] = os.cmdline_status.ok()
                     ? json{{"status", "ok"}, {"raw", os.cmdline.raw}}
                     : json{{"status", "unreadable"}, {"error", os.cmdline_status.message()}};
  char current[8];
  if (os.boot_current) std::snprintf(current, sizeof current, "%04X", *os.boot_current);
  j["boot_current"] = os.boot_current ? json(current) : json(nullptr);
  j["boot_entry"] = os.boot_option ? json{{"description", os.boot_option->description},
                                          {"file_path", os.boot_option->file_path}}
                                   : json(nullptr);
  if (!os.efi_status.ok()) j["efi_error"] = os.efi_status.message();
  json arts = json::array();
  for (const firmware::OsArtefact& a : os.artefacts) {
    json o = {{"role", a.role}, {"path", a.path}, {"named_by", a.named_by}};
    if (a.status.ok()) {
      o["status"] = "ok";
      o["size"] = a.size;
      o["sha256"] = a.sha256;
      o["sha384"] = a.sha384;
    } else {
      o["status"] = "unreadable";
      o["error"] = a.status.message();
    }
    arts.push_back(std::move(o));
  }
  j["artefacts"] = std::move(arts);
  return j;
}

}  // namespace

nlohmann::json FirmwareSectionsJson(const report::ReportClaims& c) {
  const json& fw = c.firmware;
  json nic = FirmwareSection(fw, "nic", {"version", "psid", "running", "staged"});
  if (nic["status"] == "ok") {
    json sysfs = json::object();
    const json& raw = fw["nic"].value("sysfs", json::object());
    if (raw.is_object()) {
      for (const auto& [dev, v] : raw.items()) {
        if (v.is_string()) sysfs[dev] = v;
      }
    }
    nic["sysfs"] = std::move(sysfs);
  }
  json firmware = {
      {"arm", FirmwareSection(fw, "arm",
                              {"atf", "atf_build", "uefi", "bsp", "os_release", "boot_device"})},
      {"nic", std::move(nic)},
      {"mlnx_release", StrOrNull(Str(fw, "mlnx_release"))}};
  json boot;
  if (c.boot_chain.empty()) {
    boot = {{"status", "absent"}};
  } else if (auto parsed = firmware::ParseBootChainJson(c.boot_chain); !parsed.ok()) {
    boot = {{"status", "malformed"}, {"error", parsed.status().message()}};
  } else {
    const firmware::BootPartitions& parts = parsed->partitions;
    boot = {{"status", "ok"}, {"primary", StrOrNull(parts.primary)}};
    if (parts.primary.empty()) boot["primary_error"] = parts.bootctl_status.message();
    json list = json::array();
    for (const auto& m : parts.partitions) list.push_back(PartitionJson(m, parts.primary));
    boot["partitions"] = std::move(list);
    boot["os"] = OsJson(parsed->os);
  }
  return {{"firmware", std::move(firmware)}, {"boot_chain", std::move(boot)}};
}

int BfbInspect(const std::string& file, bool json) {
  bluefield::BfbVersions versions;
  StatusOr<bluefield::BfbLayout> layout = ParseBfbFile(file, &versions);
  if (!layout.ok()) return Fail(layout.status());
  if (json) {
    // The layout (lossless, bluefield::BfbLayoutFromJson reads it back
    // without "versions") plus the decoded versions.
    nlohmann::json j = bluefield::BfbLayoutToJson(*layout);
    j["versions"] = bluefield::BfbVersionsJson(versions);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << (file == "-" ? "stdin" : file) << "\n" << bluefield::FormatBfbTable(*layout)
              << FitLines(bluefield::FormatBfbVersions(versions), kColumns);
  }
  return layout->all_crc_ok ? kExitOk : kExitFinding;
}

int RefvalsImportBfb(const ImportBfbOptions& o, const AdminTarget& t) {
  bluefield::BfbVersions decoded;
  StatusOr<bluefield::BfbLayout> layout = ParseBfbFile(o.file, &decoded);
  if (!layout.ok()) return Fail(layout.status());
  if (!layout->all_crc_ok) {
    return Fail(InvalidArgumentError(o.file + ": an image CRC does not match; a corrupt "
                                     "release file cannot be a reference."));
  }
  std::optional<std::string> model = verifier::CanonicalModel(o.model);
  if (!model) return Fail(InvalidArgumentError("--model \"" + o.model + "\" is not BF2 or BF3."));
  std::string release = o.release;
  if (release.empty()) {
    release = std::filesystem::path(o.file).filename().string();
    if (release.size() > 4 && release.substr(release.size() - 4) == ".bfb") {
      release.resize(release.size() - 4);
    }
  }
  nlohmann::json values = nlohmann::json::array();
  std::set<std::pair<std::string, std::string>> seen;
  for (const bluefield::BfbImage& img : layout->images) {
    if (!img.known_id) {
      std::cerr << "dpuaudit: skipping image " << img.index << " with unknown id "
                << int(img.header.image_id) << " (no component name for it)\n";
      continue;
    }
    std::string component = "bfb:" + img.name;
    if (!seen.insert({component, img.sha384}).second) continue;
    values.push_back({{"component", component}, {"sha384", img.sha384}, {"sha512", img.sha512}});
  }
  // Versions: --version given wins over what the BFB carries (its bfver
  // strings and info image, bluefield/bfb_info.h), component by component.
  std::map<std::string, std::string> given;
  for (const std::string& v : o.versions) {
    size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
      return Fail(InvalidArgumentError("--version \"" + v + "\" must be COMPONENT=VERSION."));
    }
    values.push_back({{"component", v.substr(0, eq)}, {"version", v.substr(eq + 1)}});
    given[v.substr(0, eq)] = v.substr(eq + 1);
  }
  size_t versions = given.size();
  for (const auto& n : decoded.notes) std::cerr << "dpuaudit: note: " << o.file << ": " << n << "\n";
  for (const bluefield::BfbComponentVersion& c : bluefield::VersionsForModel(decoded, *model)) {
    if (auto g = given.find(c.component); g != given.end()) {
      if (g->second != c.version) {
        std::cerr << "dpuaudit: note: --version " << c.component << "=" << g->second
                  << " replaces \"" << c.version << "\" from the BFB (" << c.source << ")\n";
      }
      continue;
    }
    values.push_back({{"component", c.component}, {"version", c.version}});
    ++versions;
  }
  // A release without versions can never match refval.arm_firmware,
  // refval.os_release or refval.nic_firmware: refused unless asked for.
  if (versions == 0 && !o.allow_digest_only) {
    std::cerr << "dpuaudit: " << o.file << " carries no component versions (no bfver strings in "
              << "its firmware, no versions in its info image: " << decoded.info_status
              << "); a release of digests only never matches what nodes report as their ATF, "
              << "UEFI, BSP, OS or NIC firmware version. Give them with --version "
              << "COMPONENT=VERSION, or pass --allow-digest-only to import the digests alone.\n";
    return kExitError;
  }
  if (versions == 0) {
    std::cerr << "dpuaudit: WARNING: importing release " << release << " WITHOUT VERSIONS "
              << "(--allow-digest-only): refval.arm_firmware, refval.os_release and "
              << "refval.nic_firmware will stay unmatched for nodes running it.\n";
  }
  // The approval record always names someone: the login running the import
  // when --by is not given, and says what was imported.
  std::string by = o.by;
  if (by.empty()) {
    if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) {
      by = pw->pw_name;
    } else {
      by = "uid " + std::to_string(::geteuid());
    }
  }
  std::string reason = o.reason.empty()
                           ? "import of " + std::filesystem::path(o.file).filename().string()
                           : o.reason;
  nlohmann::json rel = {{"release", release},
                        {"model", *model},
                        {"state", o.state},
                        {"approval", {{"by", by}, {"reason", reason}}},
                        {"values", values}};
  if (!o.psids.empty()) rel["psids"] = o.psids;
  if (!o.upgrade_from.empty()) rel["upgrade_from"] = o.upgrade_from;
  nlohmann::json manifest = {{"schema", std::string(verifier::kRefManifestSchema)},
                             {"releases", nlohmann::json::array({rel})}};
  // Validate locally first, so a bad manifest is never sent.
  auto parsed = verifier::ParseRefManifest(manifest.dump(), 0);
  if (!parsed.ok()) return Fail(parsed.status());
  // --out: the manifest, nothing sent ("-": on stdout, the dry run). With
  // --json the manifest written is printed too: --json only formats, it
  // never changes what is done.
  if (!o.out.empty()) {
    const std::string text = manifest.dump(2) + "\n";
    if (o.out == "-") {
      std::cout << text;
      return kExitOk;
    }
    Status s = WriteFileAtomic(o.out, AsBytes(text), 0644);
    if (!s.ok()) return Fail(s);
    if (o.json) {
      std::cout << text;
    } else {
      std::cout << "wrote " << values.size() << " reference values of release " << release
                << " to " << o.out << "\n";
    }
    return kExitOk;
  }
  auto r = CallVerifier(t, "POST", "/v1/refvals", manifest.dump());
  if (!r.ok()) return FailApi(r.status());
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "imported release " << release << " (" << *model << ", " << o.state << ", "
            << values.size() << " values)\n";
  return kExitOk;
}

int RefvalsImport(const std::string& file, bool json, const AdminTarget& t) {
  StatusOr<Bytes> body = ReadBytes(file, 4u << 20);  // "-": stdin
  if (!body.ok()) return Fail(body.status().WithPrefix(file));
  auto parsed = verifier::ParseRefManifest(ToString(*body), 0);
  if (!parsed.ok()) return Fail(parsed.status().WithPrefix(file));
  auto r = CallVerifier(t, "POST", "/v1/refvals", ToString(*body));
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "imported " << (*r)["imported"].dump() << "\n";
  return kExitOk;
}

int RefvalsList(const std::string& model, bool json, bool values, const AdminTarget& t) {
  std::string path = "/v1/refvals" + (model.empty() ? "" : "?model=" + UrlEncode(model));
  auto r = CallVerifier(t, "GET", path);
  if (!r.ok()) return FailApi(r.status());
  if (json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  auto releases = verifier::ParseRefManifest(r->dump(), 0);
  if (!releases.ok()) return Fail(releases.status().WithPrefix("verifier reply"));
  if (releases->empty()) {
    std::cout << "no reference values\n";
    return kExitOk;
  }
  for (const verifier::RefRelease& rel : *releases) {
    std::cout << rel.release << "  " << rel.model << "  " << verifier::RefStateName(rel.state)
              << "  " << rel.values.size() << " values";
    if (!rel.psids.empty()) {
      std::cout << "  psids:";
      for (const auto& p : rel.psids) std::cout << " " << p;
    }
    if (rel.expires_at) std::cout << "  expires " << Day(*rel.expires_at);
    if (!rel.upgrade_from.empty()) {
      std::cout << "  upgrade from:";
      for (const auto& u : rel.upgrade_from) std::cout << " " << u;
    }
    if (!rel.compatible_with.empty()) {
      std::cout << "  compatible with:";
      for (const auto& c : rel.compatible_with) std::cout << " " << c;
    }
    std::cout << "\n";
    for (const verifier::RefApproval& a : rel.history) {
      std::cout << "    " << Day(a.at) << "  " << verifier::RefStateName(a.state) << "  by "
                << a.by << (a.reason.empty() ? "" : ": " + a.reason) << "\n";
    }
    for (const verifier::RefValue& v : values ? rel.values : std::vector<verifier::RefValue>{}) {
      std::cout << "    " << v.component;
      if (!v.version.empty()) std::cout << "  " << v.version;
      if (!v.sha384.empty()) std::cout << "  sha384:" << v.sha384.substr(0, 16) << "…";
      std::cout << "\n";
    }
  }
  return kExitOk;
}

int RefvalsExport(const std::string& model, const std::string& out, bool json,
                  const AdminTarget& t) {
  std::string path = "/v1/refvals" + (model.empty() ? "" : "?model=" + UrlEncode(model));
  auto r = CallVerifier(t, "GET", path);
  if (!r.ok()) return FailApi(r.status());
  std::string text = r->dump(2) + "\n";
  if (out.empty() || out == "-") {
    std::cout << text;
    return kExitOk;
  }
  Status s = WriteFileAtomic(out, AsBytes(text), 0644);
  if (!s.ok()) return Fail(s);
  if (json) {
    nlohmann::json labels = nlohmann::json::array();
    if ((*r)["releases"].is_array()) {
      for (const auto& rel : (*r)["releases"]) labels.push_back(Str(rel, "release"));
    }
    std::cout << nlohmann::json{{"file", out}, {"releases", labels}}.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "exported " << (*r)["releases"].size() << " releases to " << out << "\n";
  return kExitOk;
}

int RefvalsTransition(const std::string& action, const std::string& release,
                      const std::string& by, const std::string& reason,
                      bool obsolete_previous, bool json, const AdminTarget& t) {
  nlohmann::json body = {{"by", by}, {"reason", reason}};
  if (obsolete_previous) body["obsolete_previous"] = true;
  auto r = CallVerifier(t, "POST", "/v1/refvals/" + UrlEncode(release) + "/" + action, body.dump());
  if (!r.ok()) return FailApi(r.status());
  const nlohmann::json& answer = *r;
  if (!answer.is_object() || !answer.contains("changed") || !answer["changed"].is_array()) {
    return Fail(InvalidArgumentError("verifier answered without a \"changed\" list."));
  }
  if (json) {
    std::cout << answer.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& c : answer["changed"]) {
    std::cout << JsonStr(c, "release", "?") << " -> " << JsonStr(c, "state", "?") << "\n";
  }
  return kExitOk;
}

}  // namespace dpuaudit::apps
