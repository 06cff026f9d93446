#include "attest/tpm_claims.h"

#include <algorithm>
#include <charconv>

#include "common/strict_json.h"

namespace dpuaudit::attest {
namespace {

using strict_json::ObjectReader;
using strict_json::Quote;
using nlohmann::json;

constexpr std::string_view kBanks = "sha1|sha256|sha384|sha512";



// "0".."23", decimal, no sign, no leading zeros.
std::optional<uint32_t> PcrIndex(std::string_view key) {
  if (key.empty() || key.size() > 2 || (key.size() > 1 && key[0] == '0')) {
    return std::nullopt;
  }
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), v);
  if (ec != std::errc() || ptr != key.data() + key.size() ||
      v > attest::kMaxPcrIndex) {
    return std::nullopt;
  }
  return v;
}

StatusOr<attest::PcrBanks> ParsePcrs(const json& j, const std::string& path) {
  if (!j.is_object()) {
    return InvalidArgumentError(path + " must be an object.");
  }
  attest::PcrBanks banks;
  size_t count = 0;
  for (const auto& [bank_name, bank] : j.items()) {
    std::optional<uint16_t> alg = attest::ParseHashAlgName(bank_name);
    if (!alg.has_value() || *alg == attest::kTpmAlgSm3_256) {
      return InvalidArgumentError(path + " bank " + Quote(bank_name) +
                                  " is not " + std::string(kBanks) + ".");
    }
    std::string bank_path = path + "." + bank_name;
    if (!bank.is_object()) {
      return InvalidArgumentError(bank_path + " must be an object.");
    }
    if (bank.empty()) {
      return InvalidArgumentError(bank_path + " has no PCR.");
    }
    size_t digest_size = *attest::HashAlgDigestSize(*alg);
    attest::PcrBank& out = banks[*alg];
    for (const auto& [key, value] : bank.items()) {
      std::string pcr_path = bank_path + "[" + Quote(key, 8) + "]";
      std::optional<uint32_t> index = PcrIndex(key);
      if (!index.has_value()) {
        return InvalidArgumentError(pcr_path + " is not a PCR index in [0, " +
                                    std::to_string(attest::kMaxPcrIndex) +
                                    "].");
      }
      if (!value.is_string()) {
        return InvalidArgumentError(pcr_path + " must be a string.");
      }
      const std::string& hex = value.get_ref<const std::string&>();
      if (hex.size() != 2 * digest_size || !IsLowerHex(hex)) {
        return InvalidArgumentError(pcr_path + " must be " +
                                    std::to_string(2 * digest_size) +
                                    " lower-case hex digits.");
      }
      out[*index] = *HexDecode(hex);
      ++count;
    }
  }
  if (count == 0) {
    return InvalidArgumentError(path + " holds no PCR value.");
  }
  return banks;
}

}  // namespace

StatusOr<TpmClaims> ParseTpmClaims(const nlohmann::json& tpm,
                                   const TpmClaimsLimits& limits) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(tpm, "tpm"));
  TpmClaims c;

  DPA_ASSIGN_OR_RETURN(std::string attest_b64, r.String("quote_attest_b64"));
  DPA_ASSIGN_OR_RETURN(c.quote_attest,
                       strict_json::DecodeBase64Bounded(attest_b64, limits.max_attest_bytes,
                                 r.PathOf("quote_attest_b64")));
  if (c.quote_attest.empty()) {
    return InvalidArgumentError("tpm.quote_attest_b64 is empty.");
  }
  DPA_ASSIGN_OR_RETURN(std::string sig_b64, r.String("quote_sig_b64"));
  DPA_ASSIGN_OR_RETURN(c.quote_sig, strict_json::DecodeBase64Bounded(sig_b64, limits.max_sig_bytes,
                                              r.PathOf("quote_sig_b64")));
  if (c.quote_sig.empty()) {
    return InvalidArgumentError("tpm.quote_sig_b64 is empty.");
  }

  DPA_ASSIGN_OR_RETURN(std::string ak_name, r.String("ak_name"));
  if (ak_name.size() < 4 || ak_name.size() % 2 != 0 || !IsLowerHex(ak_name)) {
    return InvalidArgumentError("tpm.ak_name " + Quote(ak_name) +
                                " is not lower-case hex of a TPM name.");
  }
  c.ak_name = *HexDecode(ak_name);
  uint16_t name_alg = static_cast<uint16_t>(c.ak_name[0] << 8 | c.ak_name[1]);
  std::optional<size_t> digest = attest::HashAlgDigestSize(name_alg);
  if (!digest.has_value() || name_alg == attest::kTpmAlgSm3_256) {
    return InvalidArgumentError("tpm.ak_name nameAlg " +
                                attest::HashAlgName(name_alg) + " is not " +
                                std::string(kBanks) + ".");
  }
  if (c.ak_name.size() != 2 + *digest) {
    return InvalidArgumentError(
        "tpm.ak_name is " + std::to_string(c.ak_name.size()) +
        " bytes; a " + attest::HashAlgName(name_alg) + " name is " +
        std::to_string(2 + *digest) + ".");
  }

  DPA_ASSIGN_OR_RETURN(const json* pcrs, r.Object("pcrs"));
  DPA_ASSIGN_OR_RETURN(c.pcrs, ParsePcrs(*pcrs, r.PathOf("pcrs")));

  DPA_ASSIGN_OR_RETURN(std::string eventlog_b64, r.String("eventlog_b64"));
  DPA_ASSIGN_OR_RETURN(c.eventlog,
                       strict_json::DecodeBase64Bounded(eventlog_b64, limits.max_eventlog_bytes,
                                 r.PathOf("eventlog_b64")));
  DPA_RETURN_IF_ERROR(r.Finish());
  return c;
}

nlohmann::json TpmClaimsJson(const TpmClaims& c) {
  json pcrs = json::object();
  for (const auto& [alg, bank] : c.pcrs) {
    json b = json::object();
    for (const auto& [index, value] : bank) {
      b[std::to_string(index)] = HexEncode(value);
    }
    pcrs[attest::HashAlgName(alg)] = std::move(b);
  }
  return json{{"quote_attest_b64", Base64Encode(c.quote_attest)},
              {"quote_sig_b64", Base64Encode(c.quote_sig)},
              {"ak_name", HexEncode(c.ak_name)},
              {"pcrs", std::move(pcrs)},
              {"eventlog_b64", Base64Encode(c.eventlog)}};
}

}  // namespace dpuaudit::attest
