#include "apps/cli/eventlog.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/cli/cli_util.h"
#include "apps/shared/table.h"
#include "attest/eventlog.h"
#include "common/files.h"

namespace dpuaudit::apps {
namespace {

constexpr size_t kDigestPrefixChars = 16;
constexpr size_t kMaxCell = 72;

std::string Hex(size_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%zx", v);
  return buf;
}

// "sha256:1e2f3a4b5c6d7e8f" (or sha1 when the event has no sha256 digest).
std::string DigestCell(const attest::TcgEvent& e) {
  for (uint16_t alg : {attest::kTpmAlgSha256, attest::kTpmAlgSha1}) {
    if (const Bytes* d = e.DigestFor(alg)) {
      return attest::HashAlgName(alg) + ":" +
             HexEncode(*d).substr(0, kDigestPrefixChars);
    }
  }
  if (!e.digests.empty()) {
    return attest::HashAlgName(e.digests.front().alg) + ":" +
           HexEncode(e.digests.front().digest).substr(0, kDigestPrefixChars);
  }
  return "-";
}

std::string Text(const attest::EventLog& log, const attest::ReplayResult& r) {
  std::string algs;
  for (const attest::SpecIdAlgorithm& a : log.algorithms) {
    algs += (algs.empty() ? "" : ", ") + attest::HashAlgName(a.alg);
  }
  std::string out =
      "format: " + std::string(attest::EventLogFormatName(log.format)) + " (" +
      algs + "), " + std::to_string(log.events.size()) + " events\n";
  if (r.startup_locality.has_value()) {
    out += "startup locality: " + std::to_string(*r.startup_locality) + "\n";
  }
  if (r.hcrtm) out += "H-CRTM: yes\n";
  out += "\n";
  Table t({"#", "OFFSET", "PCR", "TYPE", "DIGEST", "DESCRIPTION"}, kMaxCell);
  for (const attest::TcgEvent& e : log.events) {
    t.AddRow({std::to_string(e.index), Hex(e.offset), std::to_string(e.pcr),
              attest::EventTypeName(e.type), DigestCell(e),
              attest::EventDescription(e)});
  }
  out += t.Render();
  out += "\nreplayed PCRs (every PCR the log extends):\n";
  if (r.pcrs.empty()) out += "  (no bank could be replayed)\n";
  for (const auto& [alg, bank] : r.pcrs) {
    out += attest::HashAlgName(alg) + ":\n";
    for (const auto& [pcr, value] : bank) {
      char idx[8];
      std::snprintf(idx, sizeof idx, "%2u", pcr);
      out += "  " + std::string(idx) + ": " + HexEncode(value) + "\n";
    }
  }
  return out;
}

}  // namespace

int EventlogCommand(const std::string& file, bool json) {
  const attest::EventLogLimits limits;
  StatusOr<Bytes> raw = ReadBytes(file, limits.max_bytes);  // "-": stdin
  if (!raw.ok()) return Fail(raw.status());
  StatusOr<attest::EventLog> log = attest::ParseEventLog(*raw, limits);
  if (!log.ok()) return Fail(log.status().WithPrefix(file));
  const attest::ReplayResult replay = attest::ReplayEventLog(*log);
  if (json) {
    std::cout << attest::EventLogJson(*log, replay)
                     .dump(2, ' ', false,
                           nlohmann::json::error_handler_t::replace)
              << "\n"
              << std::flush;
  } else {
    std::cout << Text(*log, replay) << std::flush;
  }
  return kExitOk;
}

}  // namespace dpuaudit::apps
