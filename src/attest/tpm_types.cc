#include "attest/tpm_types.h"

#include <charconv>
#include <optional>

#include "common/digest.h"

namespace dpuaudit::attest {
namespace {

// The digest of a TPM hash algorithm that OpenSSL computes here.
std::optional<DigestAlg> DigestAlgFor(uint16_t alg) {
  switch (alg) {
    case kTpmAlgSha1: return DigestAlg::kSha1;
    case kTpmAlgSha256: return DigestAlg::kSha256;
    case kTpmAlgSha384: return DigestAlg::kSha384;
    case kTpmAlgSha512: return DigestAlg::kSha512;
    default: return std::nullopt;
  }
}

StatusOr<uint32_t> ParsePcrIndex(std::string_view token) {
  uint32_t v = 0;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, v);
  if (token.empty() || ec != std::errc() || ptr != end) {
    return InvalidArgumentError("PCR index '" + std::string(token) +
                                "' is not a decimal number.");
  }
  return v;
}

}  // namespace

std::optional<size_t> HashAlgDigestSize(uint16_t alg) {
  switch (alg) {
    case kTpmAlgSha1: return 20;
    case kTpmAlgSha256: return 32;
    case kTpmAlgSha384: return 48;
    case kTpmAlgSha512: return 64;
    case kTpmAlgSm3_256: return 32;
    default: return std::nullopt;
  }
}

std::string HashAlgName(uint16_t alg) {
  switch (alg) {
    case kTpmAlgSha1: return "sha1";
    case kTpmAlgSha256: return "sha256";
    case kTpmAlgSha384: return "sha384";
    case kTpmAlgSha512: return "sha512";
    case kTpmAlgSm3_256: return "sm3_256";
    default:
      return Hex16(alg);
  }
}

std::optional<uint16_t> ParseHashAlgName(std::string_view name) {
  if (name == "sha1") return kTpmAlgSha1;
  if (name == "sha256") return kTpmAlgSha256;
  if (name == "sha384") return kTpmAlgSha384;
  if (name == "sha512") return kTpmAlgSha512;
  if (name == "sm3_256") return kTpmAlgSm3_256;
  return std::nullopt;
}

StatusOr<Bytes> HashWith(uint16_t alg, ByteView data) {
  const std::optional<DigestAlg> d = DigestAlgFor(alg);
  if (!d.has_value()) {
    return InvalidArgumentError("hash algorithm " + HashAlgName(alg) +
                                " is not supported for hashing.");
  }
  return Digest(*d, data, "hashing with " + HashAlgName(alg) + " failed");
}

// Banks that select no PCR are dropped (a TPML_PCR_SELECTION may list a
// bank with an all-zero bitmap; it selects nothing), so two selections of
// the same PCRs compare equal.
StatusOr<PcrSelection> PcrSelection::Create(
    std::map<uint16_t, std::set<uint32_t>> sel) {
  PcrSelection out;
  for (auto& [alg, pcrs] : sel) {
    if (!HashAlgDigestSize(alg).has_value()) {
      return InvalidArgumentError("hash algorithm " + HashAlgName(alg) +
                                  " is not supported.");
    }
    for (uint32_t pcr : pcrs) {
      if (pcr > kMaxPcrIndex) {
        return InvalidArgumentError("PCR index " + std::to_string(pcr) +
                                    " out of range [0, " +
                                    std::to_string(kMaxPcrIndex) + "].");
      }
    }
    if (!pcrs.empty()) out.sel_.emplace(alg, std::move(pcrs));
  }
  if (out.sel_.empty()) {
    return InvalidArgumentError("the selection is empty.");
  }
  return out;
}

PcrSelection PcrSelection::DefaultSha256() {
  PcrSelection out;
  for (uint32_t i = 0; i < 16; ++i) out.sel_[kTpmAlgSha256].insert(i);
  return out;
}

bool PcrSelection::Covers(const PcrSelection& other) const {
  for (const auto& [alg, pcrs] : other.sel_) {
    auto it = sel_.find(alg);
    if (it == sel_.end()) return false;
    for (uint32_t pcr : pcrs) {
      if (it->second.count(pcr) == 0) return false;
    }
  }
  return true;
}

std::string PcrSelection::ToString() const {
  std::string out;
  for (const auto& [alg, pcrs] : sel_) {
    if (!out.empty()) out += "+";
    out += HashAlgName(alg) + ":";
    bool first = true;
    for (uint32_t pcr : pcrs) {
      if (!first) out += ",";
      out += std::to_string(pcr);
      first = false;
    }
  }
  return out;
}

// Grammar: bank ("+" bank)*; bank = alg ":" item ("," item)*;
// item = index | index "-" index (a range, our extension) | "all" (0-23).
StatusOr<PcrSelection> PcrSelection::Parse(std::string_view text) {
  std::map<uint16_t, std::set<uint32_t>> sel;
  if (text.empty()) return InvalidArgumentError("the selection is empty.");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t plus = text.find('+', pos);
    if (plus == std::string_view::npos) plus = text.size();
    std::string_view bank = text.substr(pos, plus - pos);
    size_t colon = bank.find(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError("PCR bank '" + std::string(bank) +
                                  "' lacks ':' (expected e.g. sha256:0,1,2).");
    }
    std::string_view alg_name = bank.substr(0, colon);
    std::optional<uint16_t> alg = ParseHashAlgName(alg_name);
    if (!alg.has_value()) {
      return InvalidArgumentError("hash algorithm '" + std::string(alg_name) +
                                  "' is not supported.");
    }
    if (sel.count(*alg) != 0) {
      return InvalidArgumentError("hash algorithm '" + std::string(alg_name) +
                                  "' is listed twice.");
    }
    std::set<uint32_t>& pcrs = sel[*alg];
    std::string_view list = bank.substr(colon + 1);
    size_t ipos = 0;
    while (ipos <= list.size()) {
      size_t comma = list.find(',', ipos);
      if (comma == std::string_view::npos) comma = list.size();
      std::string_view item = list.substr(ipos, comma - ipos);
      if (item == "all") {
        for (uint32_t i = 0; i <= kMaxPcrIndex; ++i) pcrs.insert(i);
      } else if (size_t dash = item.find('-'); dash != std::string_view::npos) {
        DPA_ASSIGN_OR_RETURN(uint32_t lo, ParsePcrIndex(item.substr(0, dash)));
        DPA_ASSIGN_OR_RETURN(uint32_t hi, ParsePcrIndex(item.substr(dash + 1)));
        if (lo > hi) {
          return InvalidArgumentError("PCR range '" + std::string(item) +
                                      "' is reversed.");
        }
        if (hi > kMaxPcrIndex) {
          return InvalidArgumentError("PCR index " + std::to_string(hi) +
                                      " out of range [0, " +
                                      std::to_string(kMaxPcrIndex) + "].");
        }
        for (uint32_t i = lo; i <= hi; ++i) pcrs.insert(i);
      } else {
        DPA_ASSIGN_OR_RETURN(uint32_t v, ParsePcrIndex(item));
        pcrs.insert(v);
      }
      ipos = comma + 1;
    }
    if (pcrs.empty()) {
      return InvalidArgumentError("PCR bank '" + std::string(bank) +
                                  "' selects no PCR.");
    }
    pos = plus + 1;
  }
  return Create(std::move(sel));
}

}  // namespace dpuaudit::attest
