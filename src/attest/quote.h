// Verifying a TPM quote (ISSUE 5, docs/architecture.md#report-format): the
// only way to obtain PCR values that replay may use (trust lives in types).
//
// Appraisal steps, in this fixed order; the first failure stops the chain
// and is reported by its step id (the finding / policy rule id):
//   1 tpm.ak_bound         AK known and bound to this node (verifier: store)
//   2 tpm.signature        signature by the AK over the TPMS_ATTEST bytes
//   3 tpm.attest_type      magic TPM_GENERATED_VALUE, type TPM_ST_ATTEST_QUOTE
//   4 tpm.qualifying_data  extraData == expected qualifying data
//   5 tpm.pcr_selection    the quoted selection covers the policy's
//   6 tpm.pcr_digest       pcrDigest == H(claimed PCR values)
//   7 tpm.replay           event log replay == quoted PCRs (attest/replay.h)
//   8 tpm.reference_values events / PCRs against reference values (verifier)
// VerifyQuote runs steps 2-6; the signature is checked over the received
// bytes before they are decoded.
#ifndef DPUAUDIT_ATTEST_QUOTE_H_
#define DPUAUDIT_ATTEST_QUOTE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "attest/tpm_structs.h"
#include "attest/tpm_types.h"
#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::attest {

enum class TpmStep {
  kAkBound = 1,
  kSignature,
  kAttestType,
  kQualifyingData,
  kPcrSelection,
  kPcrDigest,
  kReplay,
  kReferenceValues,
};
inline constexpr int kTpmStepCount = 8;
std::string_view TpmStepId(TpmStep s);  // "tpm.ak_bound", ...
// "AK known and bound to this node", ... (for reasons and the README)
std::string_view TpmStepTitle(TpmStep s);

// PCR values whose digest a verified quote signed. Only VerifyQuote (or
// the test peer) constructs one.
class QuotedPcrs {
 public:
  const PcrBanks& banks() const { return banks_; }
  const std::map<uint16_t, std::set<uint32_t>>& selection() const { return selection_; }

 private:
  friend class QuoteVerifier;
  friend struct QuotedPcrsTestPeer;  // tests only
  QuotedPcrs(PcrBanks banks, std::map<uint16_t, std::set<uint32_t>> sel)
      : banks_(std::move(banks)), selection_(std::move(sel)) {}
  PcrBanks banks_;
  std::map<uint16_t, std::set<uint32_t>> selection_;
};

struct VerifiedQuote {
  TpmsAttestQuote attest;  // decoded after the signature verified
  QuotedPcrs pcrs;
};

struct QuoteInput {
  ByteView attest;     // marshalled TPMS_ATTEST (no TPM2B size prefix)
  ByteView signature;  // marshalled TPMT_SIGNATURE
  // The agent's PCR values (claims "tpm.pcrs"): only those in the quoted
  // selection are kept, after their digest matched.
  const PcrBanks* claimed_pcrs = nullptr;
};

class QuoteVerifier {
 public:
  // Steps 2-6. On failure, *failed (if given) is the step that failed and
  // the Status says why: UNAUTHENTICATED (2), INVALID_ARGUMENT (3 when the
  // bytes do not decode), FAILED_PRECONDITION (3-6), e.g.
  // "quote covers sha256:0-7 but policy requires sha256:0-15 (missing 8-15)."
  static StatusOr<VerifiedQuote> Verify(const TpmPublic& ak, const QuoteInput& in,
                                        ByteView expected_qualifying_data,
                                        const PcrSelection& required,
                                        TpmStep* failed);
};

// SHA-256(nonce ‖ SHA-256(claims_without_tpm)) —
// docs/architecture.md#report-format. `nonce` is the raw 32 nonce bytes
// (base64url-decoded).
Bytes QualifyingData(ByteView nonce, ByteView claims_without_tpm);

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_ATTEST_QUOTE_H_
