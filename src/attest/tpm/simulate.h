// Playing a boot into a TPM: extends the events of a TCG event log, as the
// firmware that wrote the log would have, so that a (software) TPM's PCRs
// replay to the log. Used by the TPM tests and by the demo to give swtpm a
// "firmware" boot. Not used by the agent on a real machine.
//
// Guarantees: every event except EV_NO_ACTION is extended into its PCR,
// once per digest it carries (every bank the log carries), in log order,
// with TPM2_PCR_Extend. Before anything is extended, the log is checked for
// what plain extends cannot reproduce: a PCR 0 start value other than zero
// (a "StartupLocality" EV_NO_ACTION event with a locality other than 0, or
// an H-CRTM sequence: EV_EFI_HCRTM_EVENT, or EV_S_CRTM_CONTENTS data
// beginning "HCRTM", in PCR 0; swtpm reproduces those only through its
// control channel, `swtpm_ioctl -h`, before TPM2_Startup) gives
// FAILED_PRECONDITION naming the event, and nothing is extended. Errors of
// an extend are prefixed with the event index and offset; events before it
// stay extended.
// Does not: reset PCRs (start from a freshly started TPM), check digests
// against event data, touch banks the log does not carry.
#ifndef DPUAUDIT_ATTEST_TPM_SIMULATE_H_
#define DPUAUDIT_ATTEST_TPM_SIMULATE_H_

#include "attest/eventlog.h"
#include "attest/tpm/tpm.h"
#include "common/status.h"

namespace dpuaudit::attest::tpm {

Status ExtendEventLog(Tpm& tpm, const attest::EventLog& log);

}  // namespace dpuaudit::attest::tpm

#endif  // DPUAUDIT_ATTEST_TPM_SIMULATE_H_
