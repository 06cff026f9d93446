#include "attest/tpm/tpm.h"

#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace dpuaudit::attest::tpm {
namespace {

// ---- Errors -------------------------------------------------------------

// The TPM's own response code without the handle/session/parameter number
// (TPM 2.0 Part 2, §6.6.3: format-one codes carry it in bits 6 and 8-11).
// nullopt for a code that did not come from the TPM (TSS layers).
std::optional<TPM2_RC> TpmBaseRc(TSS2_RC rc) {
  if ((rc & TSS2_RC_LAYER_MASK) != TSS2_TPM_RC_LAYER) return std::nullopt;
  if (rc & TPM2_RC_FMT1) return rc & (TPM2_RC_FMT1 | 0x3fU);
  return rc & 0xfffU;
}

// The one place a TSS2_RC becomes a Status: UNAVAILABLE when the TCTI
// (transport) failed, NOT_FOUND for TPM_RC_HANDLE (an undefined NV index
// or an absent persistent object), INTERNAL otherwise. The message names
// the TPM command and carries Tss2_RC_Decode's text and the code.
Status TssStatus(TSS2_RC rc, std::string_view what) {
  std::string msg = std::string(what) + " failed: " + Tss2_RC_Decode(rc) +
                    " (" + HexNumber(rc) + ").";
  if ((rc & TSS2_RC_LAYER_MASK) == TSS2_TCTI_RC_LAYER) {
    return UnavailableError(std::move(msg));
  }
  if (TpmBaseRc(rc) == TPM2_RC_HANDLE) return NotFoundError(std::move(msg));
  return InternalError(std::move(msg));
}

// ---- RAII ---------------------------------------------------------------

struct TctiDeleter {
  void operator()(TSS2_TCTI_CONTEXT* t) const { Tss2_TctiLdr_Finalize(&t); }
};
using TctiPtr = std::unique_ptr<TSS2_TCTI_CONTEXT, TctiDeleter>;

struct EsysDeleter {
  void operator()(ESYS_CONTEXT* c) const { Esys_Finalize(&c); }
};
using EsysPtr = std::unique_ptr<ESYS_CONTEXT, EsysDeleter>;

// An ESAPI-allocated output (TPM2B_PUBLIC*, TPML_DIGEST*, ...).
struct EsysFree {
  void operator()(void* p) const { Esys_Free(p); }
};
template <typename T>
using EsysOut = std::unique_ptr<T, EsysFree>;

// One ESYS_TR. kFlush: a transient object or session, flushed from the
// TPM when released. kClose: an NV index or persistent object, whose ESAPI
// metadata only is dropped.
class ScopedTr {
 public:
  enum class Kind { kFlush, kClose };
  ScopedTr() = default;
  ScopedTr(ESYS_CONTEXT* ctx, ESYS_TR tr, Kind kind)
      : ctx_(ctx), tr_(tr), kind_(kind) {}
  ~ScopedTr() { Reset(); }
  ScopedTr(ScopedTr&& o) noexcept
      : ctx_(o.ctx_), tr_(std::exchange(o.tr_, ESYS_TR_NONE)), kind_(o.kind_) {}
  ScopedTr& operator=(ScopedTr&& o) noexcept {
    if (this != &o) {
      Reset();
      ctx_ = o.ctx_;
      tr_ = std::exchange(o.tr_, ESYS_TR_NONE);
      kind_ = o.kind_;
    }
    return *this;
  }
  ScopedTr(const ScopedTr&) = delete;
  ScopedTr& operator=(const ScopedTr&) = delete;

  ESYS_TR get() const { return tr_; }
  bool valid() const { return tr_ != ESYS_TR_NONE; }
  void Reset() {
    if (tr_ == ESYS_TR_NONE || ctx_ == nullptr) return;
    if (kind_ == Kind::kFlush) {
      // ESAPI drops its metadata only when the flush succeeds; after a
      // failed one (TPM gone) close the TR so the context holds nothing stale.
      if (Esys_FlushContext(ctx_, tr_) != TSS2_RC_SUCCESS)
        Esys_TR_Close(ctx_, &tr_);
    } else {
      Esys_TR_Close(ctx_, &tr_);
    }
    tr_ = ESYS_TR_NONE;
  }

 private:
  ESYS_CONTEXT* ctx_ = nullptr;
  ESYS_TR tr_ = ESYS_TR_NONE;
  Kind kind_ = Kind::kFlush;
};

// ---- Templates ----------------------------------------------------------

// PolicySecret(TPM_RH_ENDORSEMENT) with SHA-256: the authPolicy of the TCG
// default EK templates (EK Credential Profile 2.0, §B.3.2).
constexpr std::array<uint8_t, 32> kEkPolicySha256 = {
    0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xb3, 0xf8, 0x1a, 0x90, 0xcc,
    0x8d, 0x46, 0xa5, 0xd7, 0x24, 0xfd, 0x52, 0xd7, 0x6e, 0x06, 0x52,
    0x0b, 0x64, 0xf2, 0xa1, 0xda, 0x1b, 0x33, 0x14, 0x69, 0xaa};

constexpr TPMA_OBJECT kEkAttributes =
    TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
    TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_ADMINWITHPOLICY |
    TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT;  // 0x000300b2

constexpr TPMA_OBJECT kAkAttributes =
    TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
    TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH |
    TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT;  // 0x00050072

constexpr std::string_view kAkUnique = "dpuaudit-ak";

// EK Credential Profile 2.0, §B.3.3:
//  L-1  RSA 2048: nameAlg SHA-256, attributes 0x000300b2, authPolicy above,
//       symmetric AES-128-CFB, scheme NULL, keyBits 2048, exponent 0,
//       unique.rsa = 256 zero bytes.
//  L-2  ECC NIST P-256: same attributes/policy/symmetric, scheme NULL,
//       curve NIST_P256, kdf NULL, unique.ecc.x = unique.ecc.y = 32 zero
//       bytes.
// Both EK templates: a restricted decryption key's AES-128-CFB symmetric
// definition and no signing scheme.
template <typename Parms>
void SetEkParms(Parms& parms) {
  parms.symmetric.algorithm = TPM2_ALG_AES;
  parms.symmetric.keyBits.aes = 128;
  parms.symmetric.mode.aes = TPM2_ALG_CFB;
  parms.scheme.scheme = TPM2_ALG_NULL;
}

TPM2B_PUBLIC EkTemplate(EkType type) {
  TPM2B_PUBLIC t{};
  TPMT_PUBLIC& p = t.publicArea;
  p.nameAlg = TPM2_ALG_SHA256;
  p.objectAttributes = kEkAttributes;
  p.authPolicy.size = static_cast<UINT16>(kEkPolicySha256.size());
  std::memcpy(p.authPolicy.buffer, kEkPolicySha256.data(),
              kEkPolicySha256.size());
  if (type == EkType::kRsa2048) {
    p.type = TPM2_ALG_RSA;
    TPMS_RSA_PARMS& r = p.parameters.rsaDetail;
    SetEkParms(r);
    r.keyBits = 2048;
    r.exponent = 0;
    p.unique.rsa.size = 256;  // buffer already zero
  } else {
    p.type = TPM2_ALG_ECC;
    TPMS_ECC_PARMS& e = p.parameters.eccDetail;
    SetEkParms(e);
    e.curveID = TPM2_ECC_NIST_P256;
    e.kdf.scheme = TPM2_ALG_NULL;
    p.unique.ecc.x.size = 32;
    p.unique.ecc.y.size = 32;
  }
  return t;
}

// The AK: ECC NIST P-256, nameAlg SHA-256, attributes 0x00050072 (no
// authPolicy, empty authValue), restricted signing with ECDSA-SHA256,
// symmetric and kdf NULL, unique.ecc.x = "dpuaudit-ak", unique.ecc.y empty.
TPM2B_PUBLIC AkTemplate() {
  TPM2B_PUBLIC t{};
  TPMT_PUBLIC& p = t.publicArea;
  p.type = TPM2_ALG_ECC;
  p.nameAlg = TPM2_ALG_SHA256;
  p.objectAttributes = kAkAttributes;
  TPMS_ECC_PARMS& e = p.parameters.eccDetail;
  e.symmetric.algorithm = TPM2_ALG_NULL;
  e.scheme.scheme = TPM2_ALG_ECDSA;
  e.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
  e.curveID = TPM2_ECC_NIST_P256;
  e.kdf.scheme = TPM2_ALG_NULL;
  p.unique.ecc.x.size = static_cast<UINT16>(kAkUnique.size());
  std::memcpy(p.unique.ecc.x.buffer, kAkUnique.data(), kAkUnique.size());
  return t;
}

std::string_view EkLabel(EkType type) {
  return type == EkType::kRsa2048 ? "RSA 2048" : "ECC P-256";
}

// ---- Small helpers --------------------------------------------------------

using Selection = std::map<uint16_t, std::set<uint32_t>>;

// At most TPM2_NUM_PCR_BANKS banks; PCR indexes < 24 (PcrSelection
// guarantees both for its inputs).
Status ToTpml(const Selection& sel, TPML_PCR_SELECTION* out) {
  *out = TPML_PCR_SELECTION{};
  for (const auto& [alg, pcrs] : sel) {
    if (pcrs.empty()) continue;
    if (out->count >= TPM2_NUM_PCR_BANKS) {
      return InvalidArgumentError("PCR selection has more than " +
                                  std::to_string(TPM2_NUM_PCR_BANKS) +
                                  " banks.");
    }
    TPMS_PCR_SELECTION& s = out->pcrSelections[out->count++];
    s.hash = alg;
    s.sizeofSelect = 3;
    for (uint32_t pcr : pcrs) {
      if (pcr > kMaxPcrIndex) {
        return InvalidArgumentError("PCR index " + std::to_string(pcr) +
                                    " out of range [0, 23].");
      }
      s.pcrSelect[pcr / 8] =
          static_cast<BYTE>(s.pcrSelect[pcr / 8] | (1u << (pcr % 8)));
    }
  }
  return OkStatus();
}

// Trims trailing bytes after a DER SEQUENCE: some TPMs pad the EK
// certificate's NV index. Returns `b` unchanged when it does not start with
// a definite-length SEQUENCE that fits.
Bytes TrimDer(Bytes b) {
  if (b.size() < 2 || b[0] != 0x30) return b;
  size_t len = 0, hdr = 2;
  if (b[1] < 0x80) {
    len = b[1];
  } else {
    size_t n = b[1] & 0x7fu;
    if (n == 0 || n > 4 || b.size() < 2 + n) return b;
    for (size_t i = 0; i < n; ++i) len = (len << 8) | b[2 + i];
    hdr = 2 + n;
  }
  if (hdr + len < b.size()) b.resize(hdr + len);
  return b;
}

constexpr uint32_t kEkCertIndex[] = {kEkCertNvIndexRsa2048,
                                     kEkCertNvIndexEccP256};

}  // namespace

uint32_t EkCertificateNvIndex(EkType type) {
  return kEkCertIndex[type == EkType::kRsa2048 ? 0 : 1];
}

// ---- Impl -----------------------------------------------------------------

struct Tpm::Impl {
  TctiPtr tcti;
  EsysPtr esys;  // declared after tcti: finalized first
  ScopedTr ak;   // the AK, created on first use and kept loaded

  ESYS_CONTEXT* ctx() const { return esys.get(); }

  StatusOr<ScopedTr> CreatePrimary(const TPM2B_PUBLIC& in_public,
                                   std::string_view what,
                                   EsysOut<TPM2B_PUBLIC>* out_public) {
    TPM2B_SENSITIVE_CREATE sensitive{};
    TPM2B_DATA outside{};
    TPML_PCR_SELECTION creation_pcr{};
    ESYS_TR handle = ESYS_TR_NONE;
    TPM2B_PUBLIC* pub = nullptr;
    TSS2_RC rc = Esys_CreatePrimary(
        ctx(), ESYS_TR_RH_ENDORSEMENT, ESYS_TR_PASSWORD, ESYS_TR_NONE,
        ESYS_TR_NONE, &sensitive, &in_public, &outside, &creation_pcr, &handle,
        &pub, nullptr, nullptr, nullptr);
    EsysOut<TPM2B_PUBLIC> pub_owner(pub);
    if (rc != TSS2_RC_SUCCESS) {
      return TssStatus(rc, "TPM2_CreatePrimary (" + std::string(what) + ")");
    }
    ScopedTr tr(ctx(), handle, ScopedTr::Kind::kFlush);
    if (out_public) *out_public = std::move(pub_owner);
    return tr;
  }

  StatusOr<ScopedTr> CreateEk(EkType type, EsysOut<TPM2B_PUBLIC>* out_public) {
    return CreatePrimary(EkTemplate(type), "EK " + std::string(EkLabel(type)),
                         out_public);
  }

  // Creates the AK unless it is loaded; returns its handle and, if asked,
  // its public area.
  StatusOr<ESYS_TR> Ak(EsysOut<TPM2B_PUBLIC>* out_public) {
    if (!ak.valid()) {
      DPA_ASSIGN_OR_RETURN(ak, CreatePrimary(AkTemplate(), "AK", out_public));
      return ak.get();
    }
    if (out_public != nullptr) {
      TPM2B_PUBLIC* pub = nullptr;
      TSS2_RC rc = Esys_ReadPublic(ctx(), ak.get(), ESYS_TR_NONE, ESYS_TR_NONE,
                                   ESYS_TR_NONE, &pub, nullptr, nullptr);
      out_public->reset(pub);
      if (rc != TSS2_RC_SUCCESS) {
        ak.Reset();  // gone from the TPM: re-create it next time
        return TssStatus(rc, "TPM2_ReadPublic(AK)");
      }
    }
    return ak.get();
  }

  // PCR_Read of `sel`, in as many calls as the TPM needs (it returns at
  // most 8 digests per call). *counter is the pcrUpdateCounter of the first
  // call; *consistent is false when a later call saw another one (the
  // callers retry).
  StatusOr<PcrBanks> ReadOnce(const Selection& sel, uint32_t* counter,
                              bool* consistent) {
    Selection remaining = sel;
    PcrBanks out;
    std::optional<uint32_t> first_counter;
    *consistent = true;
    while (true) {
      TPML_PCR_SELECTION in;
      DPA_RETURN_IF_ERROR(ToTpml(remaining, &in));
      if (in.count == 0) break;
      UINT32 update_counter = 0;
      TPML_PCR_SELECTION* sel_out = nullptr;
      TPML_DIGEST* values = nullptr;
      TSS2_RC rc =
          Esys_PCR_Read(ctx(), ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &in,
                        &update_counter, &sel_out, &values);
      EsysOut<TPML_PCR_SELECTION> sel_owner(sel_out);
      EsysOut<TPML_DIGEST> values_owner(values);
      if (rc != TSS2_RC_SUCCESS) return TssStatus(rc, "TPM2_PCR_Read");
      if (first_counter && *first_counter != update_counter)
        *consistent = false;
      if (!first_counter) first_counter = update_counter;
      size_t next = 0;
      size_t progress = 0;
      for (UINT32 i = 0; i < sel_out->count; ++i) {
        const TPMS_PCR_SELECTION& s = sel_out->pcrSelections[i];
        auto want = remaining.find(s.hash);
        for (uint32_t pcr = 0; pcr < 8u * s.sizeofSelect && pcr < TPM2_MAX_PCRS;
             ++pcr) {
          if (!(s.pcrSelect[pcr / 8] & (1u << (pcr % 8)))) continue;
          if (next >= values->count) {
            return InternalError(
                "TPM2_PCR_Read returned fewer digests than it selected.");
          }
          const TPM2B_DIGEST& d = values->digests[next++];
          if (want == remaining.end() || !want->second.count(pcr)) {
            return InternalError(
                "TPM2_PCR_Read returned " + HashAlgName(s.hash) + " PCR " +
                std::to_string(pcr) + ", which was not requested.");
          }
          out[s.hash][pcr] = Bytes(d.buffer, d.buffer + d.size);
          want->second.erase(pcr);
          ++progress;
        }
      }
      if (progress == 0) {
        // The TPM silently drops PCRs of a bank that is not allocated.
        const auto& [alg, pcrs] =
            *std::find_if(remaining.begin(), remaining.end(),
                          [](const auto& kv) { return !kv.second.empty(); });
        return FailedPreconditionError(
            "TPM returned no value for " + HashAlgName(alg) + " PCR " +
            std::to_string(*pcrs.begin()) + " (is the " + HashAlgName(alg) +
            " bank allocated?).");
      }
    }
    *counter = first_counter.value_or(0);
    return out;
  }
};

Tpm::Tpm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Tpm::~Tpm() {
  if (impl_) impl_->ak.Reset();  // flush before the ESYS context goes
}

StatusOr<std::unique_ptr<Tpm>> Tpm::Open(const std::string& tcti) {
  // tpm2-tss logs errors (e.g. for an absent NV index, which is normal) to
  // stderr unless TSS2_LOG says otherwise; the library stays silent unless
  // the operator asks for it.
  setenv("TSS2_LOG", "all+NONE", /*overwrite=*/0);
  auto fail = [&](TSS2_RC rc, std::string_view what) {
    return UnavailableError("cannot open TPM at " + tcti + ": " +
                            std::string(what) + ": " + Tss2_RC_Decode(rc) +
                            ".");
  };
  auto impl = std::make_unique<Impl>();
  TSS2_TCTI_CONTEXT* t = nullptr;
  TSS2_RC rc = Tss2_TctiLdr_Initialize(tcti.c_str(), &t);
  if (rc != TSS2_RC_SUCCESS) return fail(rc, "Tss2_TctiLdr_Initialize");
  impl->tcti.reset(t);
  ESYS_CONTEXT* e = nullptr;
  rc = Esys_Initialize(&e, impl->tcti.get(), nullptr);
  if (rc != TSS2_RC_SUCCESS) return fail(rc, "Esys_Initialize");
  impl->esys.reset(e);
  // One round trip, so that a TCTI that loads but reaches no TPM fails here.
  TPMI_YES_NO more = TPM2_NO;
  TPMS_CAPABILITY_DATA* cap = nullptr;
  rc = Esys_GetCapability(impl->ctx(), ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                          TPM2_CAP_TPM_PROPERTIES, TPM2_PT_MANUFACTURER, 1,
                          &more, &cap);
  EsysOut<TPMS_CAPABILITY_DATA> cap_owner(cap);
  if (rc != TSS2_RC_SUCCESS) return fail(rc, "TPM2_GetCapability");
  return std::unique_ptr<Tpm>(new Tpm(std::move(impl)));
}

StatusOr<TpmInfo> Tpm::Info() {
  TPMI_YES_NO more = TPM2_NO;
  TPMS_CAPABILITY_DATA* cap = nullptr;
  TSS2_RC rc = Esys_GetCapability(
      impl_->ctx(), ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
      TPM2_CAP_TPM_PROPERTIES, TPM2_PT_MANUFACTURER,
      TPM2_PT_FIRMWARE_VERSION_2 - TPM2_PT_MANUFACTURER + 1, &more, &cap);
  EsysOut<TPMS_CAPABILITY_DATA> cap_owner(cap);
  if (rc != TSS2_RC_SUCCESS)
    return TssStatus(rc, "TPM2_GetCapability(TPM_PROPERTIES)");
  std::map<TPM2_PT, uint32_t> props;
  const TPML_TAGGED_TPM_PROPERTY& list = cap->data.tpmProperties;
  for (UINT32 i = 0; i < list.count && i < TPM2_MAX_TPM_PROPERTIES; ++i) {
    props[list.tpmProperty[i].property] = list.tpmProperty[i].value;
  }
  auto chars = [](uint32_t v, bool nul_to_space) {
    std::string s;
    for (int shift = 24; shift >= 0; shift -= 8) {
      char c = static_cast<char>((v >> shift) & 0xff);
      if (c == '\0') {
        if (nul_to_space) s += ' ';
      } else {
        s += c;
      }
    }
    return s;
  };
  if (!props.count(TPM2_PT_MANUFACTURER)) {
    return InternalError("TPM2_GetCapability returned no TPM_PT_MANUFACTURER.");
  }
  TpmInfo info;
  info.manufacturer = chars(props[TPM2_PT_MANUFACTURER], true);
  for (TPM2_PT pt = TPM2_PT_VENDOR_STRING_1; pt <= TPM2_PT_VENDOR_STRING_4;
       ++pt) {
    if (props.count(pt)) info.vendor += chars(props[pt], false);
  }
  while (!info.vendor.empty() && info.vendor.back() == ' ')
    info.vendor.pop_back();
  info.firmware_version = (uint64_t{props[TPM2_PT_FIRMWARE_VERSION_1]} << 32) |
                          props[TPM2_PT_FIRMWARE_VERSION_2];
  return info;
}

StatusOr<Bytes> Tpm::ReadEkCertificate(EkType type) {
  const uint32_t index = EkCertificateNvIndex(type);
  const std::string index_hex = Hex32(index);
  ESYS_TR nv = ESYS_TR_NONE;
  TSS2_RC rc = Esys_TR_FromTPMPublic(impl_->ctx(), index, ESYS_TR_NONE,
                                     ESYS_TR_NONE, ESYS_TR_NONE, &nv);
  if (rc != TSS2_RC_SUCCESS) {
    Status s =
        TssStatus(rc, std::string("TPM2_NV_ReadPublic(") + index_hex + ")");
    if (s.code() == StatusCode::kNotFound) {
      return NotFoundError("no " + std::string(EkLabel(type)) +
                           " EK certificate: NV index " + index_hex +
                           " is not defined.");
    }
    return s;
  }
  ScopedTr nv_tr(impl_->ctx(), nv, ScopedTr::Kind::kClose);
  TPM2B_NV_PUBLIC* nv_pub = nullptr;
  rc = Esys_NV_ReadPublic(impl_->ctx(), nv, ESYS_TR_NONE, ESYS_TR_NONE,
                          ESYS_TR_NONE, &nv_pub, nullptr);
  EsysOut<TPM2B_NV_PUBLIC> nv_pub_owner(nv_pub);
  if (rc != TSS2_RC_SUCCESS) {
    return TssStatus(rc, std::string("TPM2_NV_ReadPublic(") + index_hex + ")");
  }
  const uint16_t size = nv_pub->nvPublic.dataSize;

  // Chunk size: TPM_PT_NV_BUFFER_MAX, within ESAPI's TPM2B_MAX_NV_BUFFER.
  uint16_t chunk = 512;
  {
    TPMI_YES_NO more = TPM2_NO;
    TPMS_CAPABILITY_DATA* cap = nullptr;
    rc = Esys_GetCapability(impl_->ctx(), ESYS_TR_NONE, ESYS_TR_NONE,
                            ESYS_TR_NONE, TPM2_CAP_TPM_PROPERTIES,
                            TPM2_PT_NV_BUFFER_MAX, 1, &more, &cap);
    EsysOut<TPMS_CAPABILITY_DATA> cap_owner(cap);
    if (rc == TSS2_RC_SUCCESS && cap->data.tpmProperties.count == 1 &&
        cap->data.tpmProperties.tpmProperty[0].property ==
            TPM2_PT_NV_BUFFER_MAX) {
      uint32_t v = cap->data.tpmProperties.tpmProperty[0].value;
      if (v > 0)
        chunk = static_cast<uint16_t>(
            std::min<uint32_t>(v, TPM2_MAX_NV_BUFFER_SIZE));
    }
  }
  // Authorised by the index itself (TPMA_NV_AUTHREAD, empty authValue, as
  // the TCG EK certificate indexes are defined): no owner password needed.
  Bytes cert;
  cert.reserve(size);
  for (uint16_t offset = 0; offset < size;) {
    uint16_t n =
        std::min<uint16_t>(chunk, static_cast<uint16_t>(size - offset));
    TPM2B_MAX_NV_BUFFER* data = nullptr;
    rc = Esys_NV_Read(impl_->ctx(), nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE,
                      ESYS_TR_NONE, n, offset, &data);
    EsysOut<TPM2B_MAX_NV_BUFFER> data_owner(data);
    if (rc != TSS2_RC_SUCCESS) {
      return TssStatus(rc, std::string("TPM2_NV_Read(") + index_hex + ")");
    }
    if (data->size != n) {
      return InternalError(std::string("TPM2_NV_Read(") + index_hex +
                           ") returned " + std::to_string(data->size) +
                           " bytes instead of " + std::to_string(n) + ".");
    }
    cert.insert(cert.end(), data->buffer, data->buffer + data->size);
    offset = static_cast<uint16_t>(offset + n);
  }
  if (cert.empty()) {
    return NotFoundError(std::string("EK certificate NV index ") + index_hex +
                         " is empty.");
  }
  return TrimDer(std::move(cert));
}

namespace {
StatusOr<Bytes> MarshalPublic(const TPM2B_PUBLIC& pub) {
  Bytes out(sizeof(TPM2B_PUBLIC));
  size_t off = 0;
  TSS2_RC rc = Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, out.data(), out.size(), &off);
  if (rc != TSS2_RC_SUCCESS)
    return TssStatus(rc, "Tss2_MU_TPM2B_PUBLIC_Marshal");
  out.resize(off);
  return out;
}
}  // namespace

StatusOr<Bytes> Tpm::EkPublic(EkType type) {
  EsysOut<TPM2B_PUBLIC> pub;
  DPA_ASSIGN_OR_RETURN(ScopedTr ek, impl_->CreateEk(type, &pub));
  return MarshalPublic(*pub);
}

StatusOr<Bytes> Tpm::AkPublic() {
  EsysOut<TPM2B_PUBLIC> pub;
  DPA_RETURN_IF_ERROR(impl_->Ak(&pub).status());
  return MarshalPublic(*pub);
}

StatusOr<Bytes> Tpm::ActivateCredential(EkType type, ByteView credential_blob,
                                        ByteView encrypted_secret) {
  TPM2B_ID_OBJECT blob{};
  size_t off = 0;
  TSS2_RC rc = Tss2_MU_TPM2B_ID_OBJECT_Unmarshal(
      credential_blob.data(), credential_blob.size(), &off, &blob);
  if (rc != TSS2_RC_SUCCESS || off != credential_blob.size()) {
    return InvalidArgumentError(
        "credential blob is not one marshalled TPM2B_ID_OBJECT (" +
        std::to_string(credential_blob.size()) + " bytes).");
  }
  TPM2B_ENCRYPTED_SECRET secret{};
  off = 0;
  rc = Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal(
      encrypted_secret.data(), encrypted_secret.size(), &off, &secret);
  if (rc != TSS2_RC_SUCCESS || off != encrypted_secret.size()) {
    return InvalidArgumentError(
        "encrypted secret is not one marshalled TPM2B_ENCRYPTED_SECRET (" +
        std::to_string(encrypted_secret.size()) + " bytes).");
  }
  DPA_ASSIGN_OR_RETURN(ESYS_TR ak, impl_->Ak(nullptr));
  DPA_ASSIGN_OR_RETURN(ScopedTr ek, impl_->CreateEk(type, nullptr));

  // The EK's authPolicy is PolicySecret(TPM_RH_ENDORSEMENT): satisfy it in
  // a policy session (unsalted, unbound, SHA-256).
  TPMT_SYM_DEF sym{};
  sym.algorithm = TPM2_ALG_NULL;
  ESYS_TR session_handle = ESYS_TR_NONE;
  rc = Esys_StartAuthSession(impl_->ctx(), ESYS_TR_NONE, ESYS_TR_NONE,
                             ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, nullptr,
                             TPM2_SE_POLICY, &sym, TPM2_ALG_SHA256,
                             &session_handle);
  if (rc != TSS2_RC_SUCCESS)
    return TssStatus(rc, "TPM2_StartAuthSession(policy)");
  ScopedTr session(impl_->ctx(), session_handle, ScopedTr::Kind::kFlush);
  rc = Esys_PolicySecret(impl_->ctx(), ESYS_TR_RH_ENDORSEMENT, session.get(),
                         ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, nullptr,
                         nullptr, nullptr, 0, nullptr, nullptr);
  if (rc != TSS2_RC_SUCCESS) {
    return TssStatus(rc, "TPM2_PolicySecret(TPM_RH_ENDORSEMENT)");
  }
  TPM2B_DIGEST* cert_info = nullptr;
  // activateHandle (AK): ADMIN role, satisfied by its (empty) authValue
  // since adminWithPolicy is clear; keyHandle (EK): USER role, policy only.
  rc = Esys_ActivateCredential(impl_->ctx(), ak, ek.get(), ESYS_TR_PASSWORD,
                               session.get(), ESYS_TR_NONE, &blob, &secret,
                               &cert_info);
  EsysOut<TPM2B_DIGEST> cert_owner(cert_info);
  if (rc != TSS2_RC_SUCCESS) return TssStatus(rc, "TPM2_ActivateCredential");
  return Bytes(cert_info->buffer, cert_info->buffer + cert_info->size);
}

StatusOr<PcrBanks> Tpm::PcrRead(const PcrSelection& selection) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    uint32_t counter = 0;
    bool consistent = true;
    DPA_ASSIGN_OR_RETURN(
        PcrBanks banks,
        impl_->ReadOnce(selection.banks(), &counter, &consistent));
    if (consistent) return banks;
  }
  return UnavailableError(
      "PCRs kept changing while they were read (3 attempts).");
}

StatusOr<QuoteResult> Tpm::Quote(ByteView qualifying_data,
                                 const PcrSelection& selection) {
  TPM2B_DATA qd{};
  if (qualifying_data.size() > sizeof(qd.buffer)) {
    return InvalidArgumentError("qualifying data is " +
                                std::to_string(qualifying_data.size()) +
                                " bytes; a TPM2B_DATA holds at most " +
                                std::to_string(sizeof(qd.buffer)) + ".");
  }
  qd.size = static_cast<UINT16>(qualifying_data.size());
  if (!qualifying_data.empty()) {
    std::memcpy(qd.buffer, qualifying_data.data(), qualifying_data.size());
  }
  TPML_PCR_SELECTION tpml;
  DPA_RETURN_IF_ERROR(ToTpml(selection.banks(), &tpml));
  TPMT_SIG_SCHEME scheme{};
  scheme.scheme = TPM2_ALG_ECDSA;
  scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;

  for (int attempt = 0; attempt < 3; ++attempt) {
    uint32_t before = 0, after = 0;
    bool consistent_before = true, consistent_after = true;
    DPA_ASSIGN_OR_RETURN(
        PcrBanks pcrs_before,
        impl_->ReadOnce(selection.banks(), &before, &consistent_before));
    DPA_ASSIGN_OR_RETURN(ESYS_TR ak, impl_->Ak(nullptr));
    TPM2B_ATTEST* quoted = nullptr;
    TPMT_SIGNATURE* signature = nullptr;
    TSS2_RC rc =
        Esys_Quote(impl_->ctx(), ak, ESYS_TR_PASSWORD, ESYS_TR_NONE,
                   ESYS_TR_NONE, &qd, &scheme, &tpml, &quoted, &signature);
    EsysOut<TPM2B_ATTEST> quoted_owner(quoted);
    EsysOut<TPMT_SIGNATURE> signature_owner(signature);
    if (rc != TSS2_RC_SUCCESS) {
      // A cached AK the TPM no longer has (a TPM reset, another client
      // flushing it): forget it so that the next call re-creates it.
      std::optional<TPM2_RC> base = TpmBaseRc(rc);
      if (base &&
          ((*base >= TPM2_RC_REFERENCE_H0 && *base <= TPM2_RC_REFERENCE_H6) ||
           *base == TPM2_RC_HANDLE)) {
        impl_->ak.Reset();
      }
      return TssStatus(rc, "TPM2_Quote");
    }
    DPA_ASSIGN_OR_RETURN(
        PcrBanks pcrs_after,
        impl_->ReadOnce(selection.banks(), &after, &consistent_after));
    if (!consistent_before || !consistent_after || before != after ||
        pcrs_before != pcrs_after) {
      continue;
    }
    QuoteResult result;
    result.attest.assign(quoted->attestationData,
                         quoted->attestationData + quoted->size);
    Bytes sig(sizeof(TPMT_SIGNATURE));
    size_t off = 0;
    rc =
        Tss2_MU_TPMT_SIGNATURE_Marshal(signature, sig.data(), sig.size(), &off);
    if (rc != TSS2_RC_SUCCESS)
      return TssStatus(rc, "Tss2_MU_TPMT_SIGNATURE_Marshal");
    sig.resize(off);
    result.signature = std::move(sig);
    result.pcrs = std::move(pcrs_after);
    return result;
  }
  return UnavailableError(
      "PCRs changed during each of 3 quote attempts (pcrUpdateCounter moved).");
}

Status Tpm::PcrExtend(uint32_t pcr, uint16_t alg, ByteView digest) {
  if (pcr > kMaxPcrIndex) {
    return InvalidArgumentError("PCR index " + std::to_string(pcr) +
                                " out of range [0, 23].");
  }
  std::optional<size_t> size = HashAlgDigestSize(alg);
  if (!size) {
    return InvalidArgumentError("hash algorithm " + HashAlgName(alg) +
                                " is not supported.");
  }
  if (digest.size() != *size) {
    return InvalidArgumentError(
        HashAlgName(alg) + " digest for PCR " + std::to_string(pcr) + " is " +
        std::to_string(digest.size()) + " bytes, expected " +
        std::to_string(*size) + ".");
  }
  TPML_DIGEST_VALUES values{};
  values.count = 1;
  values.digests[0].hashAlg = alg;
  std::memcpy(&values.digests[0].digest, digest.data(), digest.size());
  TSS2_RC rc =
      Esys_PCR_Extend(impl_->ctx(), ESYS_TR_PCR0 + pcr, ESYS_TR_PASSWORD,
                      ESYS_TR_NONE, ESYS_TR_NONE, &values);
  if (rc != TSS2_RC_SUCCESS) {
    return TssStatus(rc, "TPM2_PCR_Extend(" + HashAlgName(alg) + " PCR " +
                             std::to_string(pcr) + ")");
  }
  return OkStatus();
}

}  // namespace dpuaudit::attest::tpm
