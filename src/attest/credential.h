// Binding an AK to an EK without a TPM on the verifier side: TPM2
// MakeCredential in software (TPM 2.0 Part 1 §24, "Credential Protection";
// Part 1 §11.4.9 KDFa/KDFe; Part 1 §B.10.3 / §C.6.4 secret sharing), and the
// EK certificate checks done at enrollment.
//
// MakeCredential(ek, credential, ak_name):
//   seed            random, nameAlg-sized; RSA EK: RSA-OAEP(nameAlg, label
//                   "IDENTITY\0") to the EK; ECC EK: ECDH with an ephemeral
//                   key on the EK's curve, seed = KDFe(nameAlg, Z,
//                   "IDENTITY\0", ephemeral x, EK x, bits)
//   symKey          KDFa(nameAlg, seed, "STORAGE", ak_name, "", EK AES bits)
//   encIdentity     AES-CFB(symKey, IV = 0, TPM2B_DIGEST(credential))
//   HMACkey         KDFa(nameAlg, seed, "INTEGRITY", "", "", digest bits)
//   outerHMAC       HMAC(HMACkey, encIdentity || ak_name)
//   credentialBlob  TPM2B_ID_OBJECT{ TPM2B_DIGEST(outerHMAC) || encIdentity }
//   secret          TPM2B_ENCRYPTED_SECRET (RSA ciphertext, or the
//                   marshalled TPMS_ECC_POINT of the ephemeral key)
// The two outputs are exactly what TPM2_ActivateCredential takes
// (`tpm2_makecredential` writes them to one file as described in
// WriteTpm2ToolsCredential).
//
// Guarantees: the EK must be a storage (restricted decrypt) key with an
// AES-128/256 CFB symmetric definition, as the TCG EK templates define;
// otherwise FAILED_PRECONDITION. `credential` is 1..nameAlg size bytes.
#ifndef DPUAUDIT_ATTEST_CREDENTIAL_H_
#define DPUAUDIT_ATTEST_CREDENTIAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "attest/tpm_structs.h"
#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::attest {

struct MadeCredential {
  Bytes credential_blob;   // marshalled TPM2B_ID_OBJECT
  Bytes encrypted_secret;  // marshalled TPM2B_ENCRYPTED_SECRET
};

StatusOr<MadeCredential> MakeCredential(const TpmPublic& ek, ByteView credential,
                                        ByteView ak_name);
// The same with a caller-chosen seed (RSA) / ephemeral private scalar (ECC)
// for known-answer tests. Not for production use.
StatusOr<MadeCredential> MakeCredentialDeterministic(const TpmPublic& ek,
                                                     ByteView credential,
                                                     ByteView ak_name,
                                                     ByteView seed_or_scalar);

// TPM 2.0 Part 1 §11.4.10.2 KDFa (counter mode, HMAC-nameAlg).
StatusOr<Bytes> KdfA(uint16_t hash_alg, ByteView key, std::string_view label,
                     ByteView context_u, ByteView context_v, uint32_t bits);

// The file `tpm2_makecredential -o` writes and `tpm2_activatecredential -i`
// reads: magic BADCC0DE (BE u32), version 1 (BE u32), TPM2B_ID_OBJECT,
// TPM2B_ENCRYPTED_SECRET. Parse is the inverse (INVALID_ARGUMENT on a bad
// magic/version/trailing bytes).
Bytes WriteTpm2ToolsCredential(const MadeCredential& c);
StatusOr<MadeCredential> ParseTpm2ToolsCredential(ByteView file);

// ---- EK certificates ----------------------------------------------------
struct EkCertificateInfo {
  std::string subject;
  std::string issuer;
  std::string sha256;  // of the DER
  // From the subjectAltName directoryName (TCG EK Credential Profile
  // §3.2.9): tcg-at-tpmManufacturer / Model / Version, "" when absent.
  std::string tpm_manufacturer;  // e.g. "id:49424D00" (IBM: swtpm)
  std::string tpm_model;
  std::string tpm_version;
  std::vector<std::string> chain_subjects;  // leaf first, up to the root
};

// Accepts PEM or DER.
// Checks, in order: the certificate parses; it has the TCG EK profile
// (INVALID_ARGUMENT naming the extension): a leaf (basicConstraints CA
// FALSE or absent, no keyCertSign/cRLSign, not self-issued, not a v1
// self-signed certificate), an extendedKeyUsage, when present, with
// tcg-kp-EKCertificate (2.23.133.8.1), a subjectAltName directoryName,
// when present, naming tcg-at-tpmManufacturer (2.23.133.2.1), and at least
// one of the two; so a trusted CA's own certificate, presented as the EK
// certificate of a "TPM" whose EK is the CA's key, is refused; its public
// key is the EK
// (`ek.SameKey`; FAILED_PRECONDITION "EK certificate key does not match the
// EK."); it chains to a CA in `ca_dir` (every *.pem / *.crt / *.der file
// there is a trust anchor or intermediate; OpenSSL X509_verify_cert at
// `now`, with the TCG EK OID extended key usages tolerated, since EK
// certificates often carry critical extensions OpenSSL does not know:
// subjectAltName directoryName, and the TCG policy OIDs).
// UNAUTHENTICATED names OpenSSL's reason ("certificate has expired",
// "unable to get local issuer certificate").
StatusOr<EkCertificateInfo> VerifyEkCertificate(ByteView cert, const TpmPublic& ek,
                                                const std::string& ca_dir,
                                                int64_t now);

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_ATTEST_CREDENTIAL_H_
