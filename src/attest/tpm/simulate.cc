#include "attest/tpm/simulate.h"

#include <cstdio>
#include <string>
#include <string_view>

namespace dpuaudit::attest::tpm {
namespace {

// "StartupLocality\0" (16 bytes) followed by the locality byte (PC Client
// PFP §10.4.5.3, TCG_EfiStartupLocalityEvent).
constexpr std::string_view kStartupLocality("StartupLocality\0", 16);
constexpr std::string_view kHcrtm = "HCRTM";

std::string Where(const TcgEvent& e) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "event %zu at offset 0x%zx", e.index,
                e.offset);
  return buf;
}

bool StartsWith(const Bytes& data, std::string_view prefix) {
  return data.size() >= prefix.size() &&
         std::string_view(reinterpret_cast<const char*>(data.data()),
                          prefix.size()) == prefix;
}

}  // namespace

Status ExtendEventLog(Tpm& tpm, const attest::EventLog& log) {
  for (const TcgEvent& e : log.events) {
    if (e.type == kEvNoAction && e.pcr == 0 &&
        StartsWith(e.data, kStartupLocality) &&
        e.data.size() > kStartupLocality.size() &&
        e.data[kStartupLocality.size()] != 0) {
      return FailedPreconditionError(
          Where(e) + ": StartupLocality " +
          std::to_string(e.data[kStartupLocality.size()]) +
          " needs PCR 0 to start non-zero, which PCR extends cannot "
          "reproduce.");
    }
    if (e.pcr == 0 && (e.type == kEvEfiHcrtmEvent ||
                       (e.type == kEvSCrtmContents && StartsWith(e.data, kHcrtm)))) {
      return FailedPreconditionError(
          Where(e) +
          ": an H-CRTM sequence starts PCR 0 at 00..04, which PCR "
          "extends cannot reproduce.");
    }
  }
  for (const TcgEvent& e : log.events) {
    if (e.type == kEvNoAction) continue;
    for (const EventDigest& d : e.digests) {
      Status s = tpm.PcrExtend(e.pcr, d.alg, d.digest);
      if (!s.ok()) return s.WithPrefix(Where(e));
    }
  }
  return OkStatus();
}

}  // namespace dpuaudit::attest::tpm
