// SPDM signed measurements: the GET_MEASUREMENTS request and MEASUREMENTS
// response a BMC relays from a root of trust (Redfish ComponentIntegrity
// SPDMGetSignedMeasurements, docs/spdm.md), parsed and verified.
//
// Wire format (DMTF DSP0274 1.1, GET_MEASUREMENTS / MEASUREMENTS; all
// integers little-endian):
//   request  = SPDMVersion 0x11 | 0xE0 | Param1 (bit 0: signature requested)
//              | Param2 (operation: 0 count, 1..0xFE one index, 0xFF all)
//              | Nonce[32] | SlotIDParam           (nonce and slot only when
//                                                   a signature is requested)
//   response = SPDMVersion | 0x60 | Param1 | Param2 (slot in bits 3:0)
//              | NumberOfBlocks | MeasurementRecordLength (3 bytes)
//              | MeasurementRecord | Nonce[32] | OpaqueLength (2)
//              | OpaqueData | Signature (size fixed by the algorithm)
//   block    = Index | MeasurementSpecification | MeasurementSize (2)
//              | Measurement; with specification bit 0 (DMTF) the
//              Measurement is ValueType | ValueSize (2) | Value.
// SPDM 1.1 signs the transcript itself: the signature is ECDSA over
// Hash(request || response without the signature) with the leaf key of
// the slot's certificate chain, encoded r || s, big-endian, each half the
// curve size.
//
// Guarantees: VerifySignedMeasurements checks the signature over the raw
// bytes BEFORE any field they carry is parsed (only the fixed signature
// size is used to split them); the key must be on the curve the algorithm
// names (P-256 or P-384); the requester nonce inside the signed bytes must
// equal `expected_nonce` (ours), so an old or foreign transcript is
// refused; parsing is exact: every length is checked against what remains,
// the blocks fill MeasurementRecordLength exactly, NumberOfBlocks matches,
// indices are unique, nothing trails. Errors are INVALID_ARGUMENT naming
// the field and its byte offset, UNAUTHENTICATED for a signature that does
// not verify, FAILED_PRECONDITION for a nonce that is not ours.
// Does not: chain the leaf key to a trust anchor (spdm/dice.h does), judge
// any measurement (the verifier's appraisal does), support SPDM 1.2 and
// later (they sign a prefixed hash with a context string; refused by
// version, never verified the 1.1 way), or parse non-DMTF measurement
// specifications beyond keeping their bytes.
#ifndef DPUAUDIT_SPDM_MEASUREMENTS_H_
#define DPUAUDIT_SPDM_MEASUREMENTS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/openssl.h"
#include "common/status.h"

namespace dpuaudit::spdm {

inline constexpr uint8_t kVersion11 = 0x11;
inline constexpr uint8_t kGetMeasurements = 0xE0;
inline constexpr uint8_t kMeasurements = 0x60;
inline constexpr size_t kNonceSize = 32;
// Far above any real transcript (a BlueField-3 ERoT returns 64 blocks of
// 48-byte digests, about 4 KiB): a cap on what is hashed and parsed.
inline constexpr size_t kMaxTranscriptBytes = 64 * 1024;

// The signing algorithm, by the names Redfish uses (SigningAlgorithm).
enum class SigningAlgorithm { kEcdsaP256, kEcdsaP384 };
// "TPM_ALG_ECDSA_ECC_NIST_P256" | "TPM_ALG_ECDSA_ECC_NIST_P384"; anything
// else is INVALID_ARGUMENT naming it.
StatusOr<SigningAlgorithm> ParseSigningAlgorithm(std::string_view name);
std::string_view SigningAlgorithmName(SigningAlgorithm a);
size_t SignatureSize(SigningAlgorithm a);  // 64 | 96

// The transcript hash (Redfish HashingAlgorithm).
enum class HashingAlgorithm { kSha256, kSha384, kSha512 };
// "TPM_ALG_SHA_256" | "TPM_ALG_SHA_384" | "TPM_ALG_SHA_512".
StatusOr<HashingAlgorithm> ParseHashingAlgorithm(std::string_view name);
std::string_view HashingAlgorithmName(HashingAlgorithm h);
size_t DigestSize(HashingAlgorithm h);  // 32 | 48 | 64

struct GetMeasurementsRequest {
  uint8_t version = 0;
  bool signature_requested = false;
  uint8_t operation = 0;  // Param2: 0 count, 0xFF all, else one index
  Bytes nonce;            // 32 bytes when a signature is requested
  uint8_t slot_id = 0;
};

// DMTF measurement value types (DSP0274 Table "DMTFSpecMeasurementValueType"),
// bits 6:0; bit 7 set means the value is a raw bit stream, else a digest.
enum class DmtfValueKind : uint8_t {
  kImmutableRom = 0,
  kMutableFirmware = 1,
  kHardwareConfiguration = 2,
  kFirmwareConfiguration = 3,
  kMeasurementManifest = 4,
  kDeviceMode = 5,
  kMutableFirmwareVersion = 6,
  kMutableFirmwareSecurityVersion = 7,
};
// "immutable_rom" ... "firmware_security_version"; "type_<n>" for others.
std::string DmtfValueKindName(uint8_t value_type);

struct DmtfMeasurement {
  uint8_t value_type = 0;  // as on the wire, bit 7 included
  Bytes value;
  bool raw_bit_stream() const { return (value_type & 0x80) != 0; }
  uint8_t kind() const { return value_type & 0x7F; }
};

struct MeasurementBlock {
  uint8_t index = 0;
  uint8_t specification = 0;  // bit 0: DMTF
  Bytes measurement;          // the whole Measurement field
  std::optional<DmtfMeasurement> dmtf;  // when specification is DMTF
};

struct MeasurementsResponse {
  uint8_t version = 0;
  uint8_t param1 = 0;
  uint8_t slot_id = 0;  // Param2 bits 3:0
  std::vector<MeasurementBlock> blocks;
  Bytes nonce;  // the responder's
  Bytes opaque_data;
  Bytes signature;
};

struct Transcript {
  GetMeasurementsRequest request;
  MeasurementsResponse response;
  size_t signed_size = 0;  // bytes covered by the signature
};

// Parses request || response with a signature of `signature_size` bytes at
// the end. Does not verify anything: for display of unverified evidence
// (`dpuaudit spdm verify` prints why it failed) and fuzzing.
StatusOr<Transcript> ParseTranscript(ByteView transcript,
                                     size_t signature_size);

// A P-256 or P-384 public key that signs SPDM responses (a chain's leaf).
class SpdmPublicKey {
 public:
  // The public key of a PEM or DER certificate's subject.
  static StatusOr<SpdmPublicKey> FromCertificate(X509* cert);
  static StatusOr<SpdmPublicKey> FromCertificatePem(std::string_view pem);
  EVP_PKEY* get() const { return key_.get(); }
  // "P-256" | "P-384" | "" for anything else.
  const std::string& curve() const { return curve_; }

 private:
  EvpPkeyPtr key_;
  std::string curve_;
};

// A transcript whose signature verified under the given key and whose
// requester nonce is ours. Only VerifySignedMeasurements makes one.
class VerifiedMeasurements {
 public:
  const Transcript& transcript() const { return transcript_; }
  const std::vector<MeasurementBlock>& blocks() const {
    return transcript_.response.blocks;
  }
  SigningAlgorithm signing() const { return signing_; }
  HashingAlgorithm hashing() const { return hashing_; }
  // Hex of Hash(signed bytes), for the audit trail.
  const std::string& signed_digest_hex() const { return digest_hex_; }

 private:
  friend StatusOr<VerifiedMeasurements> VerifySignedMeasurements(
      ByteView, const SpdmPublicKey&, SigningAlgorithm, HashingAlgorithm,
      ByteView);
  Transcript transcript_;
  SigningAlgorithm signing_ = SigningAlgorithm::kEcdsaP384;
  HashingAlgorithm hashing_ = HashingAlgorithm::kSha384;
  std::string digest_hex_;
};

// Verifies, then parses (see Guarantees). `expected_nonce` is the 32-byte
// nonce we sent.
StatusOr<VerifiedMeasurements> VerifySignedMeasurements(
    ByteView transcript, const SpdmPublicKey& key, SigningAlgorithm signing,
    HashingAlgorithm hashing, ByteView expected_nonce);

}  // namespace dpuaudit::spdm

#endif  // DPUAUDIT_SPDM_MEASUREMENTS_H_
