// The agent's memory of its evidence base (docs/architecture.md#report-format):
// the last report it sent with every evidence item in full that the verifier
// accepted (admit or deny), by the SHA-256 of its JWS, with the item digest
// of each item. A dpuaudit-report/2 report carries by digest the items equal
// to the base's; the verifier resolves them against the same stored report.
//
// Kept in a file next to the agent key (<key>.evidence-base, 0600, written
// atomically), so it survives agent restarts; the verifier keeps the base in
// its store, so it survives verifier restarts and (on PostgreSQL) replica
// switches. Whatever goes wrong — the file is missing, unreadable, for
// another verifier or node, or the verifier no longer holds the base — the
// agent sends full evidence (a 409 evidence_unknown is answered by one
// resend in full), which becomes the new base. The file holds only digests,
// never evidence or secrets.
#ifndef DPUAUDIT_APPS_AGENT_EVIDENCE_BASE_H_
#define DPUAUDIT_APPS_AGENT_EVIDENCE_BASE_H_

#include <optional>
#include <set>
#include <string>

#include "common/status.h"
#include "report/claims.h"

namespace dpuaudit::apps {

inline constexpr std::string_view kEvidenceBaseFormat =
    "dpuaudit-agent-evidence-base/1";

struct EvidenceBase {
  std::string verifier;  // the verifier URL it was accepted by
  std::string node_id;
  std::string report_sha256;       // hex SHA-256 of the accepted JWS
  std::set<std::string> item_digests;  // report::EvidenceItemDigest of each
};

std::string EvidenceBasePath(const std::string& key_path);
// nullopt when absent, unreadable or malformed (then full evidence is sent;
// a malformed file is logged).
std::optional<EvidenceBase> LoadEvidenceBase(const std::string& path);
Status SaveEvidenceBase(const std::string& path, const EvidenceBase& base);
// The base a full report `claims`, sent as `jws`, becomes once accepted.
EvidenceBase EvidenceBaseOf(const report::ReportClaims& claims,
                            const std::string& jws, const std::string& verifier);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_AGENT_EVIDENCE_BASE_H_
