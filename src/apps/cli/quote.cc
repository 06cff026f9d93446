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

constexpr size_t kMaxReportBytes = 16u << 20;
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

StatusOr<attest::TpmPublic> LoadAk(const std::string& path) {
  DPA_ASSIGN_OR_RETURN(Bytes raw, ReadFileLimited(path, kMaxAkFileBytes));
  std::string text = ToString(raw);
  if (text.find("-----BEGIN") != std::string::npos) {
    auto ak = AkFromPem(text);
    if (!ak.ok()) return ak.status().WithPrefix(path);
    return ak;
  }
  auto tpm2b = attest::TpmPublic::Decode(raw);
  if (tpm2b.ok()) return tpm2b;
  auto tpmt = attest::TpmPublic::DecodeTpmt(raw);
  if (tpmt.ok()) return tpmt;
  return tpm2b.status().WithPrefix(path + " is not a PEM, TPM2B_PUBLIC or "
                                          "TPMT_PUBLIC");
}

Status MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return InternalError("cannot create " + dir + ": " + std::strerror(errno) +
                         ".");
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(dir + " is not a directory.");
  }
  return OkStatus();
}

Status Write(const std::string& dir, const std::string& name, ByteView data) {
  std::string path = dir + "/" + name;
  DPA_RETURN_IF_ERROR(WriteFileAtomic(path, data, 0644));
  std::cout << "wrote " << path << " (" << data.size() << " bytes)\n";
  return OkStatus();
}

Status Export(const std::string& report_file, const std::string& out_dir,
              const std::string& ak_public_file) {
  DPA_ASSIGN_OR_RETURN(Bytes jws, ReadFileLimited(report_file, kMaxReportBytes));
  auto payload = UnverifiedPayload(ToString(jws));
  if (!payload.ok()) return payload.status().WithPrefix(report_file);
  auto claims = report::ParseClaims(*payload);
  if (!claims.ok()) return claims.status().WithPrefix(report_file);
  std::cout << "report signature: NOT CHECKED (export-quote reads the claims "
               "unverified; check the report with `dpuaudit report show "
               "--pubkey`)\n";
  if (!claims->tpm.has_value()) {
    return FailedPreconditionError(report_file +
                                   " has no \"tpm\" member: the agent sent "
                                   "no quote.");
  }
  auto tpm = attest::ParseTpmClaims(*claims->tpm);
  if (!tpm.ok()) return tpm.status().WithPrefix(report_file);

  // Decoded only to know what it covers; tpm2_checkquote checks it.
  auto attest = attest::DecodeAttest(tpm->quote_attest);
  if (!attest.ok()) return attest.status().WithPrefix("tpm.quote_attest_b64");
  auto sig = attest::DecodeSignature(tpm->quote_sig);
  if (!sig.ok()) return sig.status().WithPrefix("tpm.quote_sig_b64");
  if (attest->pcr_select.empty()) {
    return FailedPreconditionError(
        "the quote selects no PCR (is it a TPM_ST_ATTEST_QUOTE?).");
  }
  auto pcrs = attest::SerializePcrsTpm2Tools(attest->pcr_select, tpm->pcrs);
  if (!pcrs.ok()) {
    return pcrs.status().WithPrefix("the report's PCR values do not cover "
                                    "the quote");
  }
  auto nonce = Base64UrlDecode(claims->nonce);
  if (!nonce.ok()) return nonce.status().WithPrefix("nonce");
  Bytes qualifying = attest::QualifyingData(
      *nonce, AsBytes(report::SerializeClaimsWithoutTpm(*claims)));

  std::optional<attest::TpmPublic> ak;
  if (!ak_public_file.empty()) {
    DPA_ASSIGN_OR_RETURN(attest::TpmPublic loaded, LoadAk(ak_public_file));
    if (loaded.name() != tpm->ak_name) {
      return FailedPreconditionError(
          "AK " + ak_public_file + " has name " + loaded.name_hex() +
          ", but the report's tpm.ak_name is " + HexEncode(tpm->ak_name) +
          ".");
    }
    ak = std::move(loaded);
  }

  DPA_RETURN_IF_ERROR(MakeDir(out_dir));
  DPA_RETURN_IF_ERROR(Write(out_dir, "quote.msg", tpm->quote_attest));
  DPA_RETURN_IF_ERROR(Write(out_dir, "quote.sig", tpm->quote_sig));
  DPA_RETURN_IF_ERROR(Write(out_dir, "quote.pcrs", *pcrs));
  std::string hex = HexEncode(qualifying);
  DPA_RETURN_IF_ERROR(Write(out_dir, "qualifying.hex", AsBytes(hex + "\n")));
  if (ak.has_value()) {
    DPA_RETURN_IF_ERROR(Write(out_dir, "ak.pub.pem", AsBytes(ak->ToPem())));
    std::cout << "AK name " << ak->name_hex() << " matches tpm.ak_name\n";
  } else {
    std::cout << "ak.pub.pem not written: give the AK (TPM2B_PUBLIC or PEM) "
                 "to check its name against tpm.ak_name "
              << HexEncode(tpm->ak_name) << "\n";
  }
  std::cout << "check with:\n  tpm2_checkquote -u " << out_dir
            << "/ak.pub.pem -m " << out_dir << "/quote.msg -s " << out_dir
            << "/quote.sig -f " << out_dir << "/quote.pcrs -g "
            << attest::HashAlgName(sig->hash_alg) << " -q " << hex << "\n";
  return OkStatus();
}

int Run(const std::string& report_file, const std::string& out_dir,
        const std::string& ak_public_file) {
  Status s = Export(report_file, out_dir, ak_public_file);
  if (!s.ok()) {
    std::cerr << "dpuaudit: " << s.message() << "\n";
    return kExitError;
  }
  return kExitOk;
}

}  // namespace

int ExportQuote(const std::string& report_file, const std::string& out_dir) {
  return Run(report_file, out_dir, "");
}

int ExportQuote(const std::string& report_file, const std::string& out_dir,
                const std::string& ak_public_file) {
  if (ak_public_file.empty()) {
    std::cerr << "dpuaudit: the AK public file name is empty.\n";
    return kExitError;
  }
  return Run(report_file, out_dir, ak_public_file);
}

}  // namespace dpuaudit::apps
