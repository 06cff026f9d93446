// Appraisal of one SPDM target's verified measurements against the
// device's first-seen baseline (issue 14 §4, docs/spdm.md): pure.
//
// NVIDIA publishes no BlueField-3 reference manifests yet, so every index
// starts as a baseline recorded the first time a device's signed
// measurements verify (trust on first use, said in the reason). Later:
//   same values                           -> pass, observed "baseline"
//   a value changed, an index added or
//   removed                               -> fail, observed "changed"
//                                            (a warning under the shipped
//                                            policy until an administrator
//                                            re-approves the new values)
//   a firmware security version (DMTF kind
//   7, raw little-endian) went down       -> fail, observed "rollback",
//                                            contraindicated whatever the
//                                            policy
// The baseline is never replaced by what a report shows: `proposed` is the
// current set, for an administrator to approve (first seen: stored at once).
// Finding ids: "<target>.measurements" with target "irot" or "erot".
// Does not: verify signatures or chains (spdm/evidence.h did), compare with
// vendor reference values (none are published for BlueField-3; a later
// issue maps CoRIM values onto indices 2-4).
#ifndef DPUAUDIT_VERIFIER_SPDM_APPRAISAL_H_
#define DPUAUDIT_VERIFIER_SPDM_APPRAISAL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/finding.h"
#include "spdm/measurements.h"

namespace dpuaudit::verifier {

// index -> "<value type as 2 hex digits>:<value hex>" (the measurement as
// signed; a non-DMTF block is "spec<n>:<hex>").
struct MeasurementBaseline {
  std::map<uint8_t, std::string> values;
  bool operator==(const MeasurementBaseline&) const = default;
};

MeasurementBaseline BaselineOf(const spdm::VerifiedMeasurements& m);

struct SpdmAppraisal {
  Finding finding;
  bool first_seen = false;
  bool contraindicated = false;      // a security version went down
  MeasurementBaseline proposed;      // the current values
  std::vector<uint8_t> changed;      // indices that differ from the baseline
  std::vector<uint8_t> rolled_back;  // security-version indices that went down
};

// `target` is "irot" or "erot"; `source` names where the evidence came from
// (the BMC URL and the target) for the finding. Indices in `referenced`
// are judged by reference values instead (verifier/refvals/appraisal.h
// AppraiseSpdmReferenceValues): they are left out of the comparison, but
// stay in `proposed`.
SpdmAppraisal AppraiseMeasurements(const std::string& target, const std::string& source,
                                   const spdm::VerifiedMeasurements& m,
                                   const std::optional<MeasurementBaseline>& baseline,
                                   const std::set<uint8_t>& referenced = {});

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_SPDM_APPRAISAL_H_
