// Fuzz target: what the verifier does with the evidence of a report whose
// signature verified (verifier/service.cc, step 7), without the signature,
// the nonce and the database: report::ParseClaims, then
// device::NewEvidenceDeviceSource over claims.evidence and everything that
// reads it — isolation::RunProbes (every tool-output and sysfs/efivarfs
// parser through the probes), the mlxbf-bootctl re-derivation of the primary
// boot partition, firmware::CollectFirmware, and the agent-measured
// boot_chain (firmware::ParseBootChainJson, BootChainFindings). The whole
// input is also checked as a device path (device::ValidateDevicePath).
// Invariants: RunProbes gives one finding per catalogue probe, in catalogue
// order, each unknown or failing finding with a reason, and is
// deterministic; evidence that WriteRecording accepts is read back by
// NewRecordedDeviceSource to the same findings, where device/evidence.h
// says the replay is exact (no failed read, plain sorted listing names,
// every captured path shown by the listing of its directory); a boot_chain
// that parses is a fixed point of BootChainJson -> ParseBootChainJson; a
// valid device path is absolute without NUL, "." or ".." components.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "firmware/boot_chain.h"
#include "firmware/boot_partitions.h"
#include "firmware/inventory.h"
#include "device/canonical_commands.h"
#include "device/device_source.h"
#include "device/evidence.h"
#include "device/run_tool.h"
#include "isolation/probes.h"
#include "report/claims.h"

namespace {

using namespace dpuaudit;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckDevicePath(std::string_view text) {
  std::string path(text);
  if (!device::ValidateDevicePath(path).ok()) return;
  Check(!path.empty() && path[0] == '/' &&
        path.find('\0') == std::string::npos);
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string_view part(path.data() + start, slash - start);
    Check(part != "." && part != "..");
    start = slash + 1;
  }
}

void CheckFindings(const std::vector<Finding>& findings) {
  const auto& catalogue = isolation::ProbeCatalogue();
  Check(findings.size() == catalogue.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    Check(findings[i].id == catalogue[i].id);
    if (findings[i].verdict != Verdict::kPass)
      Check(!findings[i].reason.empty());
  }
}

std::string TempBase() {
  static const std::string base = [] {
    std::string root =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = root + "/dpuaudit-fuzz-evidence-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    // Removed at exit; a crash leaves it for the post-mortem.
    static struct Cleanup {
      std::string dir;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    } cleanup{tmpl};
    return tmpl;
  }();
  return base;
}

std::vector<std::string> ListingNames(const device::Evidence& e) {
  std::vector<std::string> names;
  std::string_view raw(reinterpret_cast<const char*>(e.raw.data()),
                       e.raw.size());
  if (raw.empty()) return names;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t nl = raw.find('\n', start);
    if (nl == std::string_view::npos) nl = raw.size();
    names.emplace_back(raw.substr(start, nl - start));
    start = nl + 1;
  }
  return names;
}

// True when the recording of `evidence` is documented to replay exactly
// (device/evidence.h): every file and listing read successfully, listings
// hold sorted, unique, plain names, and every captured path below a listed
// directory appears in that listing.
bool ReplaysExactly(const std::vector<device::Evidence>& evidence) {
  std::map<std::string, std::set<std::string>> listings;
  for (const device::Evidence& e : evidence) {
    if (e.kind == device::EvidenceKind::kCommand) continue;
    if (e.exit_code != 0) return false;
    if (e.kind != device::EvidenceKind::kDir) continue;
    std::vector<std::string> names = ListingNames(e);
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string& n = names[i];
      if (n.empty() || n == "." || n == ".." ||
          n.find('/') != std::string::npos ||
          n.find('\0') != std::string::npos || (i > 0 && names[i - 1] >= n)) {
        return false;
      }
    }
    listings[e.path] = std::set<std::string>(names.begin(), names.end());
  }
  for (const device::Evidence& e : evidence) {
    if (e.kind == device::EvidenceKind::kCommand) continue;
    for (const auto& [dir, names] : listings) {
      std::string prefix = dir == "/" ? "/" : dir + "/";
      if (e.path.size() <= prefix.size() ||
          e.path.compare(0, prefix.size(), prefix) != 0) {
        continue;
      }
      std::string child = e.path.substr(
          prefix.size(), e.path.find('/', prefix.size()) - prefix.size());
      if (names.count(child) == 0) return false;
    }
  }
  return true;
}

// Recording round trip, where it is documented to hold.
void CheckRecording(const std::vector<device::Evidence>& evidence,
                    const std::vector<Finding>& findings) {
  if (!ReplaysExactly(evidence)) return;
  std::string dir = TempBase() + "/recording";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!device::WriteRecording(evidence, dir).ok()) return;
  auto recorded = device::NewRecordedDeviceSource(dir);
  if (!recorded.ok()) return;
  std::vector<Finding> replayed = isolation::RunProbes(**recorded);
  Check(replayed.size() == findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    Check(replayed[i].id == findings[i].id &&
          replayed[i].verdict == findings[i].verdict &&
          replayed[i].observed == findings[i].observed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteView in(data, data == nullptr ? 0 : size);
  CheckDevicePath(
      std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));

  report::ClaimsLimits limits;
  limits.max_payload_bytes = 1u << 20;
  auto claims = report::ParseClaims(in, limits);
  if (!claims.ok()) {
    Check(!claims.status().message().empty());
    return 0;
  }
  auto source = device::NewEvidenceDeviceSource(claims->evidence);
  if (!source.ok()) {
    Check(!source.status().message().empty());
    return 0;
  }
  std::vector<Finding> findings = isolation::RunProbes(**source);
  CheckFindings(findings);
  Check(isolation::RunProbes(**source) == findings);

  std::string primary;
  if (auto out = device::RunTool(**source, device::MlxbfBootctlArgv());
      out.ok()) {
    if (auto info = firmware::ParseMlxbfBootctl(*out); info.ok())
      primary = info->primary;
  }
  firmware::FirmwareInfo fw = firmware::CollectFirmware(**source);
  (void)firmware::CheckNicFwConsistency(fw);
  (void)firmware::FirmwareJson(fw).dump();

  if (!claims->boot_chain.empty()) {
    auto boot = firmware::ParseBootChainJson(claims->boot_chain);
    if (boot.ok()) {
      nlohmann::json j = firmware::BootChainJson(*boot);
      auto again = firmware::ParseBootChainJson(j);
      Check(again.ok() && firmware::BootChainJson(*again) == j);
      for (const Finding& f : firmware::BootChainFindings(*boot, primary)) {
        if (f.verdict != Verdict::kPass) Check(!f.reason.empty());
      }
    }
  }
  CheckRecording(claims->evidence, findings);
  return 0;
}
