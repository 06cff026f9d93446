// Small TPM value types shared by the event log, quote and credential code:
// hash algorithms (TPM_ALG_ID), PCR banks and validated PCR selections.
//
// Guarantees: a PcrSelection exists only after Create() validated it (known
// hash algorithms, PCR indexes in [0, 23], at least one PCR, at most one
// entry per algorithm). PcrBanks is a plain value: which values it holds,
// and how far they can be trusted, is up to the type that owns it
// (attest/quote.h: QuotedPcrs).
#ifndef DPUAUDIT_ATTEST_TPM_TYPES_H_
#define DPUAUDIT_ATTEST_TPM_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::attest {

// TPM_ALG_ID values (TPM 2.0 Part 2, Table 9).
inline constexpr uint16_t kTpmAlgSha1 = 0x0004;
inline constexpr uint16_t kTpmAlgSha256 = 0x000B;
inline constexpr uint16_t kTpmAlgSha384 = 0x000C;
inline constexpr uint16_t kTpmAlgSha512 = 0x000D;
inline constexpr uint16_t kTpmAlgSm3_256 = 0x0012;

inline constexpr uint32_t kMaxPcrIndex = 23;  // PC Client: PCRs 0..23

// Digest size of a hash algorithm; nullopt for an unknown one.
std::optional<size_t> HashAlgDigestSize(uint16_t alg);
// "sha1" | "sha256" | "sha384" | "sha512" | "sm3_256"; "0x%04x" otherwise.
std::string HashAlgName(uint16_t alg);
std::optional<uint16_t> ParseHashAlgName(std::string_view name);
// Hash of `data` with `alg` (sha1/256/384/512); INVALID_ARGUMENT for others.
StatusOr<Bytes> HashWith(uint16_t alg, ByteView data);

// alg -> PCR index -> value.
using PcrBank = std::map<uint32_t, Bytes>;
using PcrBanks = std::map<uint16_t, PcrBank>;

class PcrSelection {
 public:
  // INVALID_ARGUMENT: "PCR index 24 out of range [0, 23].",
  // "hash algorithm 0x0099 is not supported.", "the selection is empty."
  static StatusOr<PcrSelection> Create(std::map<uint16_t, std::set<uint32_t>> sel);
  // The policy default: sha256 PCRs 0-15.
  static PcrSelection DefaultSha256();

  const std::map<uint16_t, std::set<uint32_t>>& banks() const { return sel_; }
  // True when every (alg, pcr) of `other` is also in this selection.
  bool Covers(const PcrSelection& other) const;
  // "sha256:0,1,2+sha1:7" (the tpm2-tools -l syntax).
  std::string ToString() const;
  // Parses the tpm2-tools syntax above; INVALID_ARGUMENT naming the token.
  static StatusOr<PcrSelection> Parse(std::string_view text);
  bool operator==(const PcrSelection&) const = default;

 private:
  PcrSelection() = default;
  std::map<uint16_t, std::set<uint32_t>> sel_;
};

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_ATTEST_TPM_TYPES_H_
