// The report's `device` block (model, serial, PSID, ...) checked against the
// identity the verifier re-derives from the report's own evidence (flint,
// the bootctl serial in sysfs, PCI VPD: isolation::CollectIdentity) and
// against the serial an operator pinned at enrollment (issue 12, item 7).
//
// The agent builds its device block with the same CollectIdentity over the
// same captured evidence, so an honest report matches field for field; any
// difference means the block names another DPU (or the evidence was
// swapped) and denies, naming both values.
//
// Guarantees: pure; every mismatch is one DecisionReason (rule
// "device.identity", verdict fail) whose expected/observed carry both
// values; a pinned serial that the evidence does not show is a failure too
// (verdict unknown: fail closed).
// Does not: make the evidence trustworthy — it comes from the same Arm OS;
// this stops a report that names another DPU than its evidence, and a node
// whose evidence shows another DPU than the one enrolled. Hardware-rooted
// identity is the BMC/SPDM path.
#ifndef DPUAUDIT_VERIFIER_IDENTITY_CHECK_H_
#define DPUAUDIT_VERIFIER_IDENTITY_CHECK_H_

#include <string_view>
#include <vector>

#include "report/claims.h"
#include "report/ear.h"

namespace dpuaudit::verifier {

inline constexpr std::string_view kDeviceIdentityRule = "device.identity";

// `derived`: the identity re-derived from the report's evidence;
// `pinned_serial`: the node's serial pinned at enrollment ("" = none).
// Empty result: the identity is consistent.
std::vector<report::DecisionReason> CheckReportedIdentity(
    const report::DeviceInfo& claimed, const report::DeviceInfo& derived,
    std::string_view pinned_serial);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_IDENTITY_CHECK_H_
