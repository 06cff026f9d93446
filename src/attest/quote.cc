#include "attest/quote.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/crypto.h"

namespace dpuaudit::attest {
namespace {

using Selection = std::map<uint16_t, std::set<uint32_t>>;

std::string Hex32(uint32_t v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", width, v);
  return buf;
}

// "0-7,10,12-13"
std::string FormatPcrs(const std::set<uint32_t>& pcrs) {
  std::string out;
  auto it = pcrs.begin();
  while (it != pcrs.end()) {
    uint32_t lo = *it;
    uint32_t hi = lo;
    ++it;
    while (it != pcrs.end() && *it == hi + 1) {
      hi = *it;
      ++it;
    }
    if (!out.empty()) out += ",";
    out += std::to_string(lo);
    if (hi != lo) out += "-" + std::to_string(hi);
  }
  return out;
}

// "sha1:7+sha256:0-15"; "no PCR" for an empty selection.
std::string FormatSelection(const Selection& sel) {
  std::string out;
  for (const auto& [alg, pcrs] : sel) {
    if (pcrs.empty()) continue;
    if (!out.empty()) out += "+";
    out += HashAlgName(alg) + ":" + FormatPcrs(pcrs);
  }
  return out.empty() ? "no PCR" : out;
}

Status Fail(TpmStep step, TpmStep* failed, Status s) {
  if (failed != nullptr) *failed = step;
  return s;
}

}  // namespace

std::string_view TpmStepId(TpmStep s) {
  switch (s) {
    case TpmStep::kAkBound: return "tpm.ak_bound";
    case TpmStep::kSignature: return "tpm.signature";
    case TpmStep::kAttestType: return "tpm.attest_type";
    case TpmStep::kQualifyingData: return "tpm.qualifying_data";
    case TpmStep::kPcrSelection: return "tpm.pcr_selection";
    case TpmStep::kPcrDigest: return "tpm.pcr_digest";
    case TpmStep::kReplay: return "tpm.replay";
    case TpmStep::kReferenceValues: return "tpm.reference_values";
  }
  return "tpm.unknown";
}

std::string_view TpmStepTitle(TpmStep s) {
  switch (s) {
    case TpmStep::kAkBound: return "AK known and bound to this node";
    case TpmStep::kSignature:
      return "signature by the AK over the TPMS_ATTEST bytes";
    case TpmStep::kAttestType:
      return "magic TPM_GENERATED_VALUE, type TPM_ST_ATTEST_QUOTE";
    case TpmStep::kQualifyingData:
      return "extraData equals the expected qualifying data";
    case TpmStep::kPcrSelection:
      return "the quoted selection covers the policy's";
    case TpmStep::kPcrDigest:
      return "pcrDigest equals the digest of the claimed PCR values";
    case TpmStep::kReplay: return "event log replay equals the quoted PCRs";
    case TpmStep::kReferenceValues:
      return "events and PCRs match the reference values";
  }
  return "unknown step";
}

StatusOr<VerifiedQuote> QuoteVerifier::Verify(const TpmPublic& ak,
                                              const QuoteInput& in,
                                              ByteView expected_qualifying_data,
                                              const PcrSelection& required,
                                              TpmStep* failed) {
  // Step 2: the signature over the bytes as received, before any of them
  // is decoded.
  auto sig = DecodeSignature(in.signature);
  if (!sig.ok()) {
    return Fail(TpmStep::kSignature, failed,
                UnauthenticatedError("quote signature: " +
                                     sig.status().message()));
  }
  if (Status s = VerifyTpmSignature(ak, in.attest, *sig); !s.ok()) {
    return Fail(TpmStep::kSignature, failed,
                UnauthenticatedError("quote signature by AK " + ak.name_hex() +
                                     ": " + s.message()));
  }

  // Step 3: what the AK signed is a TPM-generated quote.
  auto decoded = DecodeAttest(in.attest);
  if (!decoded.ok()) {
    return Fail(TpmStep::kAttestType, failed, decoded.status());
  }
  TpmsAttestQuote attest = std::move(decoded).value();
  if (attest.magic != kTpmGeneratedValue) {
    return Fail(TpmStep::kAttestType, failed,
                FailedPreconditionError(
                    "TPMS_ATTEST magic " + Hex32(attest.magic, 8) +
                    " is not TPM_GENERATED_VALUE " +
                    Hex32(kTpmGeneratedValue, 8) + "."));
  }
  if (attest.type != kTpmStAttestQuote) {
    return Fail(TpmStep::kAttestType, failed,
                FailedPreconditionError(
                    "TPMS_ATTEST type " + Hex32(attest.type, 4) +
                    " is not TPM_ST_ATTEST_QUOTE " +
                    Hex32(kTpmStAttestQuote, 4) + "."));
  }

  // Step 4: freshness and binding to the claims.
  if (!std::equal(attest.extra_data.begin(), attest.extra_data.end(),
                  expected_qualifying_data.begin(),
                  expected_qualifying_data.end())) {
    return Fail(TpmStep::kQualifyingData, failed,
                FailedPreconditionError(
                    "extraData " +
                    (attest.extra_data.empty() ? std::string("(empty)")
                                               : HexEncode(attest.extra_data)) +
                    " is not the expected qualifying data " +
                    HexEncode(expected_qualifying_data) + "."));
  }

  // Step 5: the quote covers what the policy needs.
  Selection missing;
  for (const auto& [alg, pcrs] : required.banks()) {
    auto q = attest.pcr_select.find(alg);
    for (uint32_t pcr : pcrs) {
      if (q == attest.pcr_select.end() || q->second.count(pcr) == 0) {
        missing[alg].insert(pcr);
      }
    }
  }
  if (!missing.empty()) {
    std::string missing_text = missing.size() == 1
                                   ? FormatPcrs(missing.begin()->second)
                                   : FormatSelection(missing);
    return Fail(TpmStep::kPcrSelection, failed,
                FailedPreconditionError(
                    "quote covers " + FormatSelection(attest.pcr_select) +
                    " but policy requires " +
                    FormatSelection(required.banks()) + " (missing " +
                    missing_text + ")."));
  }

  // Step 6: the claimed values are the ones the TPM hashed. The TPM uses
  // the hash of the signing scheme for pcrDigest (Part 3, TPM2_Quote).
  static const PcrBanks kNoValues;
  const PcrBanks& claimed =
      in.claimed_pcrs != nullptr ? *in.claimed_pcrs : kNoValues;
  auto digest = ComputePcrDigest(sig->hash_alg, attest.pcr_select, claimed);
  if (!digest.ok()) {
    return Fail(TpmStep::kPcrDigest, failed,
                FailedPreconditionError(
                    "the reported PCR values do not cover the quote: " +
                    digest.status().message()));
  }
  if (*digest != attest.pcr_digest) {
    return Fail(TpmStep::kPcrDigest, failed,
                FailedPreconditionError(
                    "pcrDigest " + HexEncode(attest.pcr_digest) +
                    " does not match the digest of the reported PCR values " +
                    HexEncode(*digest) + "."));
  }

  // Only the quoted PCRs are carried forward: anything else the agent
  // reported is not covered by the signature.
  PcrBanks quoted;
  for (const auto& [alg, pcrs] : attest.pcr_select) {
    for (uint32_t pcr : pcrs) quoted[alg][pcr] = claimed.at(alg).at(pcr);
  }
  Selection sel = attest.pcr_select;
  return VerifiedQuote{std::move(attest),
                       QuotedPcrs(std::move(quoted), std::move(sel))};
}

Bytes QualifyingData(ByteView nonce, ByteView claims_without_tpm) {
  Sha256Digest inner = Sha256(claims_without_tpm);
  Bytes buf(nonce.begin(), nonce.end());
  buf.insert(buf.end(), inner.begin(), inner.end());
  Sha256Digest outer = Sha256(buf);
  return Bytes(outer.begin(), outer.end());
}

}  // namespace dpuaudit::attest
