#include "apps/cli/quote.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tpm2_types.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/cli/cli_util.h"
#include "attest/quote.h"
#include "attest/tpm_structs.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/files.h"
#include "report/claims.h"
#include "attest/tpm_claims.h"

namespace dpuaudit::apps {
namespace {

constexpr size_t kMaxAkFileBytes = 64u << 10;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};

// The payload of a compact or flattened JWS, signature NOT checked.
StatusOr<Bytes> UnverifiedPayload(std::string jws) {
  while (!jws.empty() && (jws.back() == '\n' || jws.back() == '\r' ||
                          jws.back() == ' ')) {
    jws.pop_back();
  }
  return UnverifiedJwsPayload(jws);
}

// A PEM P-256 key as the dpuaudit AK: the TPMT_PUBLIC the agent's template
// gives (attest/tpm/tpm.h), so that its name can be computed.
StatusOr<attest::TpmPublic> AkFromPem(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EvpPkeyPtr pkey(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, &NoPemPassphrase, nullptr)
                      : nullptr);
  if (!pkey) return SslStatus("not a PEM public key", StatusCode::kInvalidArgument);
  BIGNUM* x = nullptr;
  BIGNUM* y = nullptr;
  char group[32] = {0};
  size_t group_len = 0;
  if (EVP_PKEY_get_utf8_string_param(pkey.get(), OSSL_PKEY_PARAM_GROUP_NAME,
                                     group, sizeof group, &group_len) != 1 ||
      std::string_view(group, group_len) != "prime256v1") {
    return InvalidArgumentError(
        "a PEM AK must be an EC P-256 key (the dpuaudit AK template); give "
        "the TPM2B_PUBLIC for other keys.");
  }
  if (EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_EC_PUB_X, &x) != 1 ||
      EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_EC_PUB_Y, &y) != 1) {
    BN_free(x);
    return SslStatus("reading the EC point failed");
  }
  std::unique_ptr<BIGNUM, BnFree> xo(x), yo(y);
  TPMT_PUBLIC p{};
  p.type = TPM2_ALG_ECC;
  p.nameAlg = TPM2_ALG_SHA256;
  p.objectAttributes = attest::kTpmaFixedTpm | attest::kTpmaFixedParent |
                       attest::kTpmaSensitiveDataOrigin |
                       attest::kTpmaUserWithAuth | attest::kTpmaRestricted |
                       attest::kTpmaSign;
  p.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
  p.parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA;
  p.parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
  p.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
  p.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
  p.unique.ecc.x.size = 32;
  p.unique.ecc.y.size = 32;
  BN_bn2binpad(x, p.unique.ecc.x.buffer, 32);
  BN_bn2binpad(y, p.unique.ecc.y.buffer, 32);
  Bytes tpmt(sizeof(TPMT_PUBLIC));
  size_t off = 0;
  if (Tss2_MU_TPMT_PUBLIC_Marshal(&p, tpmt.data(), tpmt.size(), &off) !=
      TSS2_RC_SUCCESS) {
    return InternalError("marshalling the AK template failed.");
  }
  tpmt.resize(off);
  return attest::TpmPublic::DecodeTpmt(tpmt);
}

// `raw` is a PEM, a TPM2B_PUBLIC or a TPMT_PUBLIC; `name` in errors.
StatusOr<attest::TpmPublic> DecodeAk(const Bytes& raw, const std::string& name) {
  std::string text = ToString(raw);
  if (text.find("-----BEGIN") != std::string::npos) {
    auto ak = AkFromPem(text);
    if (!ak.ok()) return ak.status().WithPrefix(name);
    return ak;
  }
  auto tpm2b = attest::TpmPublic::Decode(raw);
  if (tpm2b.ok()) return tpm2b;
  auto tpmt = attest::TpmPublic::DecodeTpmt(raw);
  if (tpmt.ok()) return tpmt;
  return tpm2b.status().WithPrefix(name + " is not a PEM, TPM2B_PUBLIC or TPMT_PUBLIC");
}

Status MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return InternalError("cannot create " + dir + ": " + std::strerror(errno) + ".");
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(dir + " is not a directory.");
  }
  return OkStatus();
}

Status Write(QuoteExportResult& r, const std::string& name, ByteView data) {
  std::string path = r.out_dir + "/" + name;
  DPA_RETURN_IF_ERROR(WriteFileAtomic(path, data, 0644));
  r.files.push_back({name, path, data.size(), Sha256Hex(data)});
  return OkStatus();
}

std::vector<std::string> CheckCommand(const QuoteExportResult& r) {
  const std::string& d = r.out_dir;
  return {"tpm2_checkquote", "-u", d + "/ak.pub.pem", "-m", d + "/quote.msg", "-s",
          d + "/quote.sig",  "-f", d + "/quote.pcrs",  "-g", r.hash_alg,        "-q",
          r.qualifying_hex};
}

}  // namespace

StatusOr<QuoteExportResult> ExportQuote(std::string_view jws, const QuoteExport& x) {
  const std::string& name = x.report_name;
  auto payload = UnverifiedPayload(std::string(jws));
  if (!payload.ok()) return payload.status().WithPrefix(name);
  auto claims = report::ParseClaims(*payload);
  if (!claims.ok()) return claims.status().WithPrefix(name);
  if (!claims->tpm.has_value()) {
    return FailedPreconditionError(name + " has no \"tpm\" member: the agent sent no quote.");
  }
  auto tpm = attest::ParseTpmClaims(*claims->tpm);
  if (!tpm.ok()) return tpm.status().WithPrefix(name);

  // Decoded only to know what it covers; tpm2_checkquote checks it.
  auto attest = attest::DecodeAttest(tpm->quote_attest);
  if (!attest.ok()) return attest.status().WithPrefix(name + ": tpm.quote_attest_b64");
  auto sig = attest::DecodeSignature(tpm->quote_sig);
  if (!sig.ok()) return sig.status().WithPrefix(name + ": tpm.quote_sig_b64");
  if (attest->pcr_select.empty()) {
    return FailedPreconditionError(name +
                                   ": the quote selects no PCR (is it a TPM_ST_ATTEST_QUOTE?).");
  }
  auto pcrs = attest::SerializePcrsTpm2Tools(attest->pcr_select, tpm->pcrs);
  if (!pcrs.ok()) {
    return pcrs.status().WithPrefix(name + ": the report's PCR values do not cover the quote");
  }
  auto nonce = Base64UrlDecode(claims->nonce);
  if (!nonce.ok()) return nonce.status().WithPrefix(name + ": nonce");
  Bytes qualifying =
      attest::QualifyingData(*nonce, AsBytes(report::SerializeClaimsWithoutTpm(*claims)));

  std::optional<attest::TpmPublic> ak;
  std::string ak_label = x.ak_file;
  Bytes ak_raw = x.ak_bytes;
  if (!x.ak_file.empty()) {
    DPA_ASSIGN_OR_RETURN(ak_raw, ReadFileLimited(x.ak_file, kMaxAkFileBytes));
  } else if (!x.ak_bytes.empty()) {
    ak_label = "the AK the verifier holds (" + x.ak_source + ")";
  }
  if (!ak_raw.empty()) {
    DPA_ASSIGN_OR_RETURN(attest::TpmPublic loaded, DecodeAk(ak_raw, ak_label));
    if (loaded.name() != tpm->ak_name) {
      return FailedPreconditionError("AK " + ak_label + " has name " + loaded.name_hex() +
                                     ", but the report's tpm.ak_name is " +
                                     HexEncode(tpm->ak_name) + " (" + name + ").");
    }
    ak = std::move(loaded);
  }

  QuoteExportResult r;
  r.report_name = name;
  r.out_dir = x.out_dir;
  r.node_id = claims->node_id;
  r.qualifying_hex = HexEncode(qualifying);
  r.hash_alg = attest::HashAlgName(sig->hash_alg);
  r.ak_name_hex = HexEncode(tpm->ak_name);
  r.ak_checked = ak.has_value();
  r.ak_source = ak ? x.ak_source : "";
  r.pcr_selection = nlohmann::json::object();
  for (const auto& [alg, set] : attest->pcr_select) {
    r.pcr_selection[attest::HashAlgName(alg)] = std::vector<uint32_t>(set.begin(), set.end());
  }
  DPA_RETURN_IF_ERROR(MakeDir(x.out_dir));
  DPA_RETURN_IF_ERROR(Write(r, "quote.msg", tpm->quote_attest));
  DPA_RETURN_IF_ERROR(Write(r, "quote.sig", tpm->quote_sig));
  DPA_RETURN_IF_ERROR(Write(r, "quote.pcrs", *pcrs));
  DPA_RETURN_IF_ERROR(Write(r, "qualifying.hex", AsBytes(r.qualifying_hex + "\n")));
  if (ak.has_value()) {
    DPA_RETURN_IF_ERROR(Write(r, "ak.pub.pem", AsBytes(ak->ToPem())));
    if (x.ak_file.empty()) DPA_RETURN_IF_ERROR(Write(r, "ak.tpm2b_public", x.ak_bytes));
  }
  return r;
}

std::string QuoteExportText(const QuoteExportResult& r) {
  std::string out =
      "report signature: NOT CHECKED (export-quote reads the claims unverified; check the "
      "report with `dpuaudit report show --pubkey`)\n";
  for (const QuoteFile& f : r.files) {
    out += "wrote " + f.path + " (" + std::to_string(f.bytes) + " bytes)\n";
  }
  if (r.ak_checked) {
    out += "AK name " + r.ak_name_hex + " matches tpm.ak_name\n";
  } else {
    out += "ak.pub.pem not written: give the AK (TPM2B_PUBLIC or PEM) to check its name "
           "against tpm.ak_name " + r.ak_name_hex + "\n";
  }
  out += "check with:\n ";
  for (const std::string& a : CheckCommand(r)) out += " " + a;
  return out + "\n";
}

nlohmann::json QuoteExportJson(const QuoteExportResult& r) {
  nlohmann::json files = nlohmann::json::array();
  for (const QuoteFile& f : r.files) {
    files.push_back({{"name", f.name}, {"path", f.path}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  }
  nlohmann::json ak = {{"checked", r.ak_checked}, {"name", r.ak_name_hex}};
  if (r.ak_checked) ak["source"] = r.ak_source;
  return {{"file", r.report_name},
          {"out_dir", r.out_dir},
          {"node_id", r.node_id},
          {"signature",
           {{"checked", false},
            {"verified", false},
            {"reason", "export-quote reads the claims unverified; check the report with "
                       "`dpuaudit report show --pubkey`"}}},
          {"files", std::move(files)},
          {"qualifying_data", r.qualifying_hex},
          {"hash_alg", r.hash_alg},
          {"pcr_selection", r.pcr_selection},
          {"ak", std::move(ak)},
          {"check_command", r.ak_checked ? nlohmann::json(CheckCommand(r)) : nlohmann::json()}};
}

}  // namespace dpuaudit::apps
