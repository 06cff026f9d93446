// DICE certificate chains of an SPDM slot (docs/spdm.md#certificates-dice):
// validated to trust anchors matched by key, with the TCG DICE evidence
// extensions of each certificate read.
//
// Guarantees: ValidateChain accepts a PEM chain leaf-first or root-first
// (and says which); each certificate must be issued by the next (names and
// signatures); the chain must end at a trust anchor matched by
// SubjectPublicKeyInfo (a chain root whose key is an anchor's key is
// trusted, whatever its serial or dates of issue, because two real NVIDIA
// roots share one key), or be issued by one; OpenSSL's path validation then
// checks validity at `now`, basic constraints, key usage and path length.
// Unhandled critical extensions are refused unless they are the DICE OIDs
// this file reads. Every certificate's DICE evidence is parsed under one of
// three readings, named in `reading`:
//   "tcb_info"   DiceTcbInfo (TCG DICE Attestation Architecture): [0]
//                vendor, [1] model, [2] version, [3] svn, [4] layer,
//                [5] index, [6] fwids, [7] flags, ... (GPU IRoT chains put it
//                under 2.23.133.5.4.1.1)
//   "fwid_draft" SEQUENCE { INTEGER version, SubjectPublicKeyInfo, FWID... }
//                under 2.23.133.5.4.1, the OID the TCG registry reserves for
//                DiceTcbInfo (seen in the ERoT chains; BlueField-3 follows
//                the same draft there)
//   "fwid_list"  FWID or SEQUENCE OF FWID
//   multi tcb    2.23.133.5.4.5 (SEQUENCE OF DiceTcbInfo): one entry each.
// An extension that matches none is INVALID_ARGUMENT naming the OID and
// certificate. Errors name the certificate by its position and subject.
// Does not: check revocation (no CRL or OCSP for these chains), judge any
// FWID (the appraisal compares them with baselines), or accept a chain
// longer than kMaxChainCertificates or a PEM text over kMaxChainPemBytes.
#ifndef DPUAUDIT_SPDM_DICE_H_
#define DPUAUDIT_SPDM_DICE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/openssl.h"
#include "common/status.h"
#include "spdm/measurements.h"

namespace dpuaudit::spdm {

inline constexpr size_t kMaxChainCertificates = 10;
inline constexpr size_t kMaxChainPemBytes = 64 * 1024;

struct DiceFwid {
  std::string hash_alg;  // "sha256" | "sha384" | "sha512" | dotted OID
  Bytes digest;
};

struct DiceTcb {
  std::string oid;      // the extension it came from
  std::string reading;  // "tcb_info" | "fwid_draft" | "fwid_list"
  std::optional<std::string> vendor, model, version;
  std::optional<int64_t> svn, layer, index;
  std::vector<DiceFwid> fwids;
};

struct ChainCertificate {
  std::string subject;      // one line, RFC 2253
  std::string issuer;
  std::string serial_hex;   // lower case
  std::string spki_sha256;  // hex of SHA-256 over the DER SubjectPublicKeyInfo
  int64_t not_before = 0;   // unix seconds
  int64_t not_after = 0;
  std::vector<DiceTcb> dice;
};

// Trust anchors: certificates whose keys end a chain.
class TrustAnchors {
 public:
  // Every certificate in the PEM texts (each may hold several). A text
  // without a certificate, or one that does not parse, is INVALID_ARGUMENT
  // naming `names[i]`.
  static StatusOr<TrustAnchors> FromPem(const std::vector<std::string>& pems,
                                        const std::vector<std::string>& names);
  size_t size() const { return certs_.size(); }
  // SHA-256 of each anchor's SubjectPublicKeyInfo, hex.
  std::vector<std::string> SpkiHashes() const;

 private:
  friend class ChainValidator;
  std::vector<X509Ptr> certs_;
  std::vector<std::string> spki_;
};

// A chain that validated. Only ValidateChain makes one.
class ValidatedChain {
 public:
  // Leaf first, whatever the order of the input.
  const std::vector<ChainCertificate>& certificates() const { return certs_; }
  bool was_root_first() const { return root_first_; }
  // The anchor key it ended at (SHA-256 of its SPKI, hex).
  const std::string& anchor_spki_sha256() const { return anchor_spki_; }
  // The leaf's key, to verify SPDM signatures with.
  const SpdmPublicKey& leaf_key() const { return leaf_key_; }

 private:
  friend class ChainValidator;
  std::vector<ChainCertificate> certs_;
  bool root_first_ = false;
  std::string anchor_spki_;
  SpdmPublicKey leaf_key_;
};

// Parses the PEM chain (see Guarantees) and validates it at `now` (unix
// seconds). UNAUTHENTICATED for a chain that does not end at an anchor or
// whose path validation fails (with OpenSSL's reason and the certificate),
// INVALID_ARGUMENT for text that is not a chain.
StatusOr<ValidatedChain> ValidateChain(std::string_view pem_chain,
                                       const TrustAnchors& anchors,
                                       int64_t now);

// The first certificate of a PEM text and its key, NOT validated: for
// evidence whose chain is incomplete (`dpuaudit spdm verify` without
// anchors). Callers must say that the chain was not validated.
struct UnvalidatedLeaf {
  ChainCertificate certificate;
  SpdmPublicKey key;
};
StatusOr<UnvalidatedLeaf> ReadLeafUnvalidated(std::string_view pem);

// The DICE evidence extensions of one DER certificate, without validating
// anything (for display and fuzzing).
StatusOr<std::vector<DiceTcb>> ParseDiceExtensions(X509* cert);
// One extension's value (the OCTET STRING's contents) under `oid`.
StatusOr<std::vector<DiceTcb>> ParseDiceExtensionValue(std::string_view oid,
                                                       ByteView der);

}  // namespace dpuaudit::spdm

#endif  // DPUAUDIT_SPDM_DICE_H_
