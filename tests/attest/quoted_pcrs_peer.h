// Test-only access to QuotedPcrs' private constructor (attest/quote.h
// befriends this struct). Production code obtains QuotedPcrs only from
// QuoteVerifier::Verify; tests use this to replay logs against chosen
// "quoted" values without a TPM.
#ifndef DPUAUDIT_TESTS_ATTEST_QUOTED_PCRS_PEER_H_
#define DPUAUDIT_TESTS_ATTEST_QUOTED_PCRS_PEER_H_

#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "attest/quote.h"
#include "attest/tpm_types.h"

namespace dpuaudit::attest {

struct QuotedPcrsTestPeer {
  static QuotedPcrs Make(PcrBanks banks,
                         std::map<uint16_t, std::set<uint32_t>> selection) {
    return QuotedPcrs(std::move(banks), std::move(selection));
  }
};

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_TESTS_ATTEST_QUOTED_PCRS_PEER_H_
