// The only code that talks to a TPM (docs/architecture.md#rooms: agent only).
// tpm2-tss ESAPI over a TCTI string: "device:/dev/tpmrm0" in production,
// "swtpm:host=127.0.0.1,port=2321" in tests (Tss2_TctiLdr_Initialize).
//
// Keys:
//  - EK: the TCG default EK template (EK Credential Profile 2.0 §B.3.3,
//    template L-1 RSA 2048, or L-2 ECC NIST P-256), created with
//    CreatePrimary in the endorsement hierarchy, so its public key matches
//    the EK certificate in NV (0x01c00002 RSA, 0x01c0000a ECC). Its
//    authPolicy is PolicySecret(TPM_RH_ENDORSEMENT) and it is used under a
//    policy session with that policy.
//  - AK: a restricted ECC P-256 ECDSA-SHA256 signing key (fixedTPM,
//    fixedParent, sensitiveDataOrigin, userWithAuth, restricted, sign),
//    created with CreatePrimary in the endorsement hierarchy from a fixed
//    template whose unique field carries "dpuaudit-ak": the same TPM always
//    re-creates the same AK (until its endorsement seed changes), so the
//    agent stores no key blob.
// Every transient handle is flushed when done (swtpm has 3 slots,
// docs/architecture.md#performance). Every TSS return code becomes a Status in
// one place (TssStatus, with Tss2_RC_Decode text): UNAVAILABLE when the TCTI
// cannot be opened, INTERNAL otherwise, NOT_FOUND for an absent NV index.
//
// Also (implementation notes, src/attest/tpm/tpm.cc):
//  - Open() sets TSS2_LOG=all+NONE with setenv() unless TSS2_LOG is already
//    set: tpm2-tss would otherwise print its own errors to stderr (e.g. for
//    an absent EK certificate index, which is a normal NOT_FOUND). Export
//    TSS2_LOG (e.g. "all+ERROR") to see them. setenv is not thread-safe:
//    call Open() before starting threads that read the environment.
//  - The AK stays loaded (one transient slot) from its first use until the
//    Tpm is destroyed, so repeated quotes do not re-create it; EKs and
//    sessions are flushed as soon as the call that needed them returns.
//    A Tpm is not thread-safe.
//  - TPM status codes: a TCTI (transport) failure after Open is
//    UNAVAILABLE, TPM_RC_HANDLE is NOT_FOUND, other TPM errors INTERNAL
//    with Tss2_RC_Decode's text, e.g. ActivateCredential of a blob made for
//    another AK name: "TPM2_ActivateCredential failed: tpm:parameter(1):
//    integrity check failed (0x...)". Status has no ABORTED code: a Quote
//    whose PCRs kept changing is UNAVAILABLE (retry later).
//  - swtpm (tests) serves one connection at a time: while a Tpm is open on
//    it, another client (a second Tpm, a tpm2_* tool) blocks.
//  - ReadEkCertificate reads the index with its own (empty) authValue
//    (TPMA_NV_AUTHREAD) and trims bytes after the DER SEQUENCE (TPMs that
//    pad the index).
#ifndef DPUAUDIT_ATTEST_TPM_TPM_H_
#define DPUAUDIT_ATTEST_TPM_TPM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "attest/tpm_types.h"
#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::attest::tpm {

enum class EkType { kRsa2048, kEccP256 };

// NV indexes of the EK certificates (TCG EK Credential Profile 2.0, §2.2.1.4,
// low range).
inline constexpr uint32_t kEkCertNvIndexRsa2048 = 0x01c00002;
inline constexpr uint32_t kEkCertNvIndexEccP256 = 0x01c0000a;
uint32_t EkCertificateNvIndex(EkType type);

struct TpmInfo {
  std::string manufacturer;      // TPM_PT_MANUFACTURER as 4 chars, "IBM "
  std::string vendor;            // TPM_PT_VENDOR_STRING_1..4
  uint64_t firmware_version = 0; // TPM_PT_FIRMWARE_VERSION_1 << 32 | _2
};

struct QuoteResult {
  Bytes attest;     // marshalled TPMS_ATTEST (TPM2B_ATTEST contents)
  Bytes signature;  // marshalled TPMT_SIGNATURE
  PcrBanks pcrs;    // PCR values read around the quote (see Quote)
};

class Tpm {
 public:
  // UNAVAILABLE "cannot open TPM at <tcti>: <reason>".
  static StatusOr<std::unique_ptr<Tpm>> Open(const std::string& tcti);
  ~Tpm();
  Tpm(const Tpm&) = delete;
  Tpm& operator=(const Tpm&) = delete;

  StatusOr<TpmInfo> Info();
  // DER EK certificate from NV; NOT_FOUND when the index is not defined.
  StatusOr<Bytes> ReadEkCertificate(EkType type);
  // Marshalled TPM2B_PUBLIC of the EK / AK (creates them as above).
  StatusOr<Bytes> EkPublic(EkType type);
  StatusOr<Bytes> AkPublic();
  // TPM2_ActivateCredential with the AK and the EK of `type`; returns the
  // credential (the secret the verifier chose).
  StatusOr<Bytes> ActivateCredential(EkType type, ByteView credential_blob,
                                     ByteView encrypted_secret);
  // PCR_Read, quote with the AK over `selection` (ECDSA SHA-256), PCR_Read
  // again; if the pcrUpdateCounter moved between the reads, retries (up to
  // 3 times, then ABORTED — UNAVAILABLE, see above), so the returned values
  // are the quoted ones.
  StatusOr<QuoteResult> Quote(ByteView qualifying_data, const PcrSelection& selection);
  StatusOr<PcrBanks> PcrRead(const PcrSelection& selection);
  // TPM2_PCR_Extend of one bank (tests and the demo's simulated firmware).
  Status PcrExtend(uint32_t pcr, uint16_t alg, ByteView digest);

 private:
  struct Impl;
  explicit Tpm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dpuaudit::attest::tpm

#endif  // DPUAUDIT_ATTEST_TPM_TPM_H_
