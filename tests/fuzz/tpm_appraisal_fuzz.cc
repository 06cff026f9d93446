// Fuzz target: the verifier's TPM appraisal (verifier/tpm_appraisal.h
// AppraiseTpm: steps 1-8 of attest/quote.h) on the "tpm" member of a report,
// i.e. attest::ParseTpmClaims, then QuoteVerifier (TPMT_SIGNATURE,
// TPMS_ATTEST, qualifying data, PCR selection and digest), the event log
// parse and replay against the quoted PCRs, boot-state derivation from the
// verified events, and the TPM reference values (the embedded manifest
// below, a copy of tests/fixtures/refvals/bf3-ftpm.json).
// The node's AK is an ECC P-256 key made at run time and bound (active) to
// the node. Each parsed input is appraised twice:
//  - as received (ak_name, signature and qualifying data from the input);
//  - re-signed: ak_name set to the run-time AK's name, the TPMS_ATTEST bytes
//    signed by it, and the expected qualifying data taken from the input's
//    own extraData, so the chain gets past the signature into the PCR
//    checks, the replay and the reference values.
// Invariants: every step finding appears exactly once, with
// tpm.ek_certificate and tpm.secure_boot (10 findings); the first failing
// step is the recorded failure and every later step is unknown, "not
// reached: <step> failed"; a non-passing finding has a reason; a re-signed
// quote never fails the signature step; the result is deterministic.
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tpm2_types.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "attest/quote.h"
#include "attest/tpm_structs.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "attest/tpm_claims.h"
#include "verifier/policy.h"
#include "verifier/refvals/index.h"
#include "verifier/refvals/model.h"
#include "verifier/store/store.h"
#include "verifier/tpm_appraisal.h"

namespace {

using namespace dpuaudit;

constexpr int64_t kNow = 1'800'000'000;

// tests/fixtures/refvals/bf3-ftpm.json (golden sha256 PCRs 0-7 and boot
// application digests of the bf3-ftpm-boot event log).
constexpr char kManifest[] = R"({
  "schema": "dpuaudit-refvals/1",
  "releases": [
    {
      "release": "bf3-ftpm-boot-2026.11",
      "model": "BlueField-3",
      "state": "active",
      "approval": {"by": "platform-team", "reason": "golden measured boot of the simulated bf3-ftpm image"},
      "values": [
        {"component": "tpm-pcr:0", "sha256": "34afeb939ffaab7e9d75615f176c43e0f460a9d10f09d6ffca39626e788bb40a"},
        {"component": "tpm-pcr:1", "sha256": "36a9a930f85ffddff990b00633a9bb5f2535853b58e6befa53734241b08c55e4"},
        {"component": "tpm-pcr:2", "sha256": "3d458cfe55cc03ea1f443f1562beec8df51c75e14a9fcf9a7234a13f198e7969"},
        {"component": "tpm-pcr:3", "sha256": "3d458cfe55cc03ea1f443f1562beec8df51c75e14a9fcf9a7234a13f198e7969"},
        {"component": "tpm-pcr:4", "sha256": "1f43b182918d7794e5b4f5cab34c618e9674480374bde6b5cf6204e65809d9df"},
        {"component": "tpm-pcr:5", "sha256": "a5ceb755d043f32431d63e39f5161464620a3437280494b5850dc1b47cc074e0"},
        {"component": "tpm-pcr:6", "sha256": "3d458cfe55cc03ea1f443f1562beec8df51c75e14a9fcf9a7234a13f198e7969"},
        {"component": "tpm-pcr:7", "sha256": "9dae240ba81ae9f44d6337eab2ec523c70f783753f636f8ccec94d60967f68b6"}
      ]
    }
  ]
})";

void Check(bool ok) {
  if (!ok) std::abort();
}

template <typename T>
T Must(StatusOr<T> v) {
  if (!v.ok()) std::abort();
  return std::move(v).value();
}

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};

// The run-time AK: ECC P-256, ECDSA-SHA256, restricted signing (the
// dpuaudit AK template, attest/tpm/tpm.h), and the node's active binding.
struct Ak {
  std::unique_ptr<EVP_PKEY, PkeyFree> key{EVP_EC_gen("P-256")};
  Bytes tpm2b;
  attest::TpmPublic pub;
  verifier::TpmBinding binding;
  verifier::RefIndex refs;
  verifier::TpmPolicy policy;

  Ak()
      : tpm2b(Marshal(key.get())), pub(Must(attest::TpmPublic::Decode(tpm2b))) {
    Check(attest::CheckAkAttributes(pub).ok());
    binding.node_id = "fuzz-node";
    binding.ak_public_b64 = Base64Encode(tpm2b);
    binding.ak_name_hex = pub.name_hex();
    binding.ek_public_b64 = binding.ak_public_b64;  // not looked at here
    binding.ek_sha256 = Sha256Hex(pub.name());
    binding.state = verifier::TpmBindingState::kActive;
    binding.created_at = kNow - 60;
    binding.activated_at = kNow - 30;
    refs =
        verifier::RefIndex(Must(verifier::ParseRefManifest(kManifest, kNow)));
  }

  static Bytes Marshal(EVP_PKEY* key) {
    if (key == nullptr) std::abort();
    TPM2B_PUBLIC pub{};
    TPMT_PUBLIC& t = pub.publicArea;
    t.type = TPM2_ALG_ECC;
    t.nameAlg = TPM2_ALG_SHA256;
    t.objectAttributes = attest::kTpmaFixedTpm | attest::kTpmaFixedParent |
                         attest::kTpmaSensitiveDataOrigin |
                         attest::kTpmaUserWithAuth | attest::kTpmaRestricted |
                         attest::kTpmaSign;
    t.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
    t.parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA;
    t.parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    t.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    t.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    BIGNUM* x = nullptr;
    BIGNUM* y = nullptr;
    if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, &x) != 1 ||
        EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, &y) != 1) {
      std::abort();
    }
    t.unique.ecc.x.size = 32;
    t.unique.ecc.y.size = 32;
    BN_bn2binpad(x, t.unique.ecc.x.buffer, 32);
    BN_bn2binpad(y, t.unique.ecc.y.buffer, 32);
    BN_free(x);
    BN_free(y);
    Bytes out(sizeof pub);
    size_t offset = 0;
    if (Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, out.data(), out.size(), &offset) !=
        TSS2_RC_SUCCESS) {
      std::abort();
    }
    out.resize(offset);
    return out;
  }

  // TPMT_SIGNATURE: ECDSA-SHA256 by the AK over `message`.
  Bytes Sign(ByteView message) const {
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(),
                                                           EVP_MD_CTX_free);
    size_t len = 0;
    if (!ctx ||
        EVP_DigestSignInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr,
                              key.get(), nullptr) != 1 ||
        EVP_DigestSign(ctx.get(), nullptr, &len, message.data(),
                       message.size()) != 1) {
      std::abort();
    }
    Bytes der(len);
    if (EVP_DigestSign(ctx.get(), der.data(), &len, message.data(),
                       message.size()) != 1) {
      std::abort();
    }
    const unsigned char* p = der.data();
    std::unique_ptr<ECDSA_SIG, void (*)(ECDSA_SIG*)> sig(
        d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(len)), ECDSA_SIG_free);
    if (!sig) std::abort();
    TPMT_SIGNATURE t{};
    t.sigAlg = TPM2_ALG_ECDSA;
    t.signature.ecdsa.hash = TPM2_ALG_SHA256;
    t.signature.ecdsa.signatureR.size = 32;
    t.signature.ecdsa.signatureS.size = 32;
    BN_bn2binpad(ECDSA_SIG_get0_r(sig.get()),
                 t.signature.ecdsa.signatureR.buffer, 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(sig.get()),
                 t.signature.ecdsa.signatureS.buffer, 32);
    Bytes out(sizeof t);
    size_t offset = 0;
    if (Tss2_MU_TPMT_SIGNATURE_Marshal(&t, out.data(), out.size(), &offset) !=
        TSS2_RC_SUCCESS) {
      std::abort();
    }
    out.resize(offset);
    return out;
  }
};

const Ak& TheAk() {
  static const Ak* ak = new Ak();
  return *ak;
}

verifier::TpmAppraisal Appraise(const attest::TpmClaims& claims,
                                ByteView qualifying) {
  const Ak& ak = TheAk();
  verifier::TpmAppraisalInput in;
  in.binding = &ak.binding;
  in.claims = &claims;
  in.expected_qualifying_data.assign(qualifying.begin(), qualifying.end());
  in.policy = &ak.policy;
  in.refs = &ak.refs;
  in.model = "BlueField-3";
  in.bluefield = true;
  in.now = kNow;
  return verifier::AppraiseTpm(in);
}

void CheckAppraisal(const verifier::TpmAppraisal& a) {
  static const attest::TpmStep kSteps[] = {
      attest::TpmStep::kAkBound,      attest::TpmStep::kSignature,
      attest::TpmStep::kAttestType,   attest::TpmStep::kQualifyingData,
      attest::TpmStep::kPcrSelection, attest::TpmStep::kPcrDigest,
      attest::TpmStep::kReplay,       attest::TpmStep::kReferenceValues};
  Check(a.findings.size() == 10);
  std::map<std::string, const Finding*> by_id;
  for (const Finding& f : a.findings) {
    Check(by_id.emplace(f.id, &f).second);
    if (f.verdict != Verdict::kPass) Check(!f.reason.empty());
    Check(a.tiers.count(f.id) == 1);
  }
  Check(by_id.count("tpm.ek_certificate") == 1 &&
        by_id.count("tpm.secure_boot") == 1);
  bool failed = false;
  for (attest::TpmStep s : kSteps) {
    auto it = by_id.find(std::string(attest::TpmStepId(s)));
    Check(it != by_id.end());
    const Finding& f = *it->second;
    if (failed) {
      Check(f.verdict == Verdict::kUnknown &&
            f.reason == "not reached: " +
                            std::string(attest::TpmStepId(a.failure->step)) +
                            " failed");
      continue;
    }
    if (a.failure && a.failure->step == s) {
      Check(f.verdict == Verdict::kFail);
      failed = true;
    } else {
      // Before the failure every step passed (reference values may also
      // end in a non-failing verdict, e.g. obsolete).
      Check(f.verdict == Verdict::kPass ||
            s == attest::TpmStep::kReferenceValues);
    }
  }
  Check(failed == a.failure.has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (data == nullptr) return 0;
  auto j = nlohmann::json::parse(data, data + size, nullptr,
                                 /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto claims = attest::ParseTpmClaims(j);
  if (!claims.ok()) return 0;

  // As received: the expected qualifying data is a fixed value.
  Bytes fixed(32, 0x42);
  verifier::TpmAppraisal as_is = Appraise(*claims, fixed);
  CheckAppraisal(as_is);

  // Re-signed by the bound AK.
  attest::TpmClaims resigned = *claims;
  const Ak& ak = TheAk();
  resigned.ak_name = ak.pub.name();
  resigned.quote_sig = ak.Sign(resigned.quote_attest);
  Bytes qualifying = fixed;
  if (auto attest = attest::DecodeAttest(resigned.quote_attest); attest.ok()) {
    qualifying = attest->extra_data;
  }
  verifier::TpmAppraisal a = Appraise(resigned, qualifying);
  CheckAppraisal(a);
  if (a.failure) {
    Check(a.failure->step != attest::TpmStep::kAkBound &&
          a.failure->step != attest::TpmStep::kSignature);
  }
  verifier::TpmAppraisal again = Appraise(resigned, qualifying);
  Check(again.findings == a.findings &&
        again.quirks_applied == a.quirks_applied);
  return 0;
}
