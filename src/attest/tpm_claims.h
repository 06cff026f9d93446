// The "tpm" member of report claims (docs/architecture.md#report-format),
// strictly parsed:
// {"quote_attest_b64": "<base64 TPMS_ATTEST>",
//  "quote_sig_b64":    "<base64 TPMT_SIGNATURE>",
//  "ak_name":          "<hex TPM name of the AK>",
//  "pcrs": {"sha256": {"0": "<hex>", ..., "15": "<hex>"}, "sha1": {...}},
//  "eventlog_b64":     "<base64 TCG event log>" }
//
// Guarantees: ParseTpmClaims rejects (INVALID_ARGUMENT naming the path, e.g.
// `tpm.pcrs.sha256["24"] is not a PCR index in [0, 23].`) anything but an
// object with exactly these members: canonical padded base64, a non-empty
// quote and signature, ak_name lower-case hex of 2 + a digest size bytes,
// bank names sha1|sha256|sha384|sha512, PCR keys decimal without leading
// zeros in [0, 23], values lower-case hex of the bank's digest size, at
// least one PCR. Sizes over TpmClaimsLimits are RESOURCE_EXHAUSTED.
// TpmClaimsJson is the inverse (ParseTpmClaims(TpmClaimsJson(c)) == c).
// Does not: decode or verify the quote (attest/quote.h) or the event log.
#ifndef DPUAUDIT_ATTEST_TPM_CLAIMS_H_
#define DPUAUDIT_ATTEST_TPM_CLAIMS_H_

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "attest/tpm_types.h"
#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::attest {

struct TpmClaims {
  Bytes quote_attest;   // marshalled TPMS_ATTEST
  Bytes quote_sig;      // marshalled TPMT_SIGNATURE
  Bytes ak_name;
  attest::PcrBanks pcrs;
  Bytes eventlog;       // may be empty: no log was readable
  bool operator==(const TpmClaims&) const = default;
};

struct TpmClaimsLimits {
  size_t max_attest_bytes = 1024;
  size_t max_sig_bytes = 1024;
  size_t max_eventlog_bytes = 2u << 20;
};

StatusOr<TpmClaims> ParseTpmClaims(const nlohmann::json& tpm,
                                   const TpmClaimsLimits& limits = {});
nlohmann::json TpmClaimsJson(const TpmClaims& c);

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_ATTEST_TPM_CLAIMS_H_
