// TCG PC Client event logs (untrusted input): parsing, replay and the boot
// state the events describe.
//
// Formats (TCG PC Client Platform Firmware Profile, §10):
//  - "sha1": TPM 1.2 style TCG_PCR_EVENT records (pcr u32, type u32,
//    SHA-1 digest[20], eventSize u32, event[eventSize]), all little-endian.
//  - "crypto-agile": a first TCG_PCR_EVENT (EV_NO_ACTION, PCR 0, zero
//    digest) whose data is the "Spec ID Event03" structure listing the
//    algorithms and digest sizes; then TCG_PCR_EVENT2 records (pcr, type,
//    TPML_DIGEST_VALUES {count, {alg, digest}[count]}, eventSize, event).
//    Every event carries Spec ID algorithms only, each at most once, in any
//    order (tpm2-tools' own test logs carry a subset; a bank that some
//    extending event lacks is not replayed, so a quote over it fails).
//
// Guarantees:
//  - ParseEventLog reads through one bounds-checked ByteReader. Every
//    length is checked against the remaining bytes and EventLogLimits before
//    anything is allocated; errors are INVALID_ARGUMENT (RESOURCE_EXHAUSTED
//    for limits) and name the event index and byte offset:
//    `event 17 at offset 0x1a4: digest count 9 exceeds the 2 algorithms of
//    the Spec ID event.` An empty input is an error.
//  - The Spec ID event is events[0] of a crypto-agile log (it is part of
//    the log, with its own offset); it is never extended.
//  - An EV_NO_ACTION event may name any PCR index (Windows and some
//    firmware log them at 0xFFFFFFFF): it is never extended. Every other
//    event's PCR index is in [0, 23].
//  - ReplayEventLog follows the spec (docs/eventlog.md): EV_NO_ACTION
//    events are not extended; a "StartupLocality" EV_NO_ACTION event in
//    PCR 0 sets PCR 0's initial value to 00..00LL (LL = locality) in every
//    bank; an H-CRTM sequence (an EV_EFI_HCRTM_EVENT in PCR 0, which is
//    extended like any event; EV_NO_ACTION "StartupLocality" with locality
//    4; or EV_S_CRTM_CONTENTS data beginning "HCRTM") starts PCR 0 at
//    00..04. Each bank starts all zero (PCRs 17-22 are reset to all zero
//    too: their locality-based reset to ff.. does not apply to a boot log).
//    Only PCRs that at least one event extends are in the result.
//  - CheckDataBinding says whether an event's digests prove its data, by
//    the rule the PC Client PFP (or the bootloader) defines for its type;
//    ExtractBootState derives facts only from proven bytes.
//  - Nothing here is trusted: to use events for a decision, replay them
//    against a verified quote (attest/replay.h).
// Does not: prove the event type field (no digest covers it), or the data of
// events whose digest covers something else (boot applications: the PE
// image; firmware blobs: the blob), verify anything with a TPM.
#ifndef DPUAUDIT_ATTEST_EVENTLOG_H_
#define DPUAUDIT_ATTEST_EVENTLOG_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "attest/tpm_types.h"
#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::attest {

// Event types (PC Client PFP, Table 9) used by the code below.
inline constexpr uint32_t kEvPrebootCert = 0x00000000;
inline constexpr uint32_t kEvPostCode = 0x00000001;
inline constexpr uint32_t kEvNoAction = 0x00000003;
inline constexpr uint32_t kEvSeparator = 0x00000004;
inline constexpr uint32_t kEvAction = 0x00000005;
inline constexpr uint32_t kEvEventTag = 0x00000006;
inline constexpr uint32_t kEvSCrtmContents = 0x00000007;
inline constexpr uint32_t kEvSCrtmVersion = 0x00000008;
inline constexpr uint32_t kEvCpuMicrocode = 0x00000009;
inline constexpr uint32_t kEvPlatformConfigFlags = 0x0000000A;
inline constexpr uint32_t kEvTableOfDevices = 0x0000000B;
inline constexpr uint32_t kEvCompactHash = 0x0000000C;
inline constexpr uint32_t kEvIpl = 0x0000000D;
inline constexpr uint32_t kEvIplPartitionData = 0x0000000E;
inline constexpr uint32_t kEvNonhostCode = 0x0000000F;
inline constexpr uint32_t kEvNonhostConfig = 0x00000010;
inline constexpr uint32_t kEvNonhostInfo = 0x00000011;
inline constexpr uint32_t kEvOmitBootDeviceEvents = 0x00000012;
inline constexpr uint32_t kEvEfiEventBase = 0x80000000;
inline constexpr uint32_t kEvEfiVariableDriverConfig = 0x80000001;
inline constexpr uint32_t kEvEfiVariableBoot = 0x80000002;
inline constexpr uint32_t kEvEfiBootServicesApplication = 0x80000003;
inline constexpr uint32_t kEvEfiBootServicesDriver = 0x80000004;
inline constexpr uint32_t kEvEfiRuntimeServicesDriver = 0x80000005;
inline constexpr uint32_t kEvEfiGptEvent = 0x80000006;
inline constexpr uint32_t kEvEfiAction = 0x80000007;
inline constexpr uint32_t kEvEfiPlatformFirmwareBlob = 0x80000008;
inline constexpr uint32_t kEvEfiHandoffTables = 0x80000009;
inline constexpr uint32_t kEvEfiPlatformFirmwareBlob2 = 0x8000000A;
inline constexpr uint32_t kEvEfiHandoffTables2 = 0x8000000B;
inline constexpr uint32_t kEvEfiVariableBoot2 = 0x8000000C;
inline constexpr uint32_t kEvEfiHcrtmEvent = 0x80000010;
inline constexpr uint32_t kEvEfiVariableAuthority = 0x800000E0;
inline constexpr uint32_t kEvEfiSpdmFirmwareBlob = 0x800000E1;
inline constexpr uint32_t kEvEfiSpdmFirmwareConfig = 0x800000E2;

// "EV_NO_ACTION", "EV_EFI_VARIABLE_AUTHORITY", ...; "0x%08x" if unknown.
std::string EventTypeName(uint32_t type);

enum class EventLogFormat { kSha1, kCryptoAgile };
std::string_view EventLogFormatName(EventLogFormat f);  // "sha1" | "crypto-agile"

struct EventDigest {
  uint16_t alg = 0;  // TPM_ALG_ID
  Bytes digest;
  bool operator==(const EventDigest&) const = default;
};

struct TcgEvent {
  size_t index = 0;   // position in the log, 0-based (Spec ID event = 0)
  size_t offset = 0;  // byte offset of the record in the log
  uint32_t pcr = 0;
  uint32_t type = 0;
  std::vector<EventDigest> digests;  // one per bank (sha1 format: one)
  Bytes data;
  // The digest of bank `alg`, or nullptr.
  const Bytes* DigestFor(uint16_t alg) const;
  bool operator==(const TcgEvent&) const = default;
};

struct SpecIdAlgorithm {
  uint16_t alg = 0;
  uint16_t digest_size = 0;
  bool operator==(const SpecIdAlgorithm&) const = default;
};

struct EventLog {
  EventLogFormat format = EventLogFormat::kSha1;
  std::vector<SpecIdAlgorithm> algorithms;  // crypto-agile: from Spec ID;
                                            // sha1: {sha1, 20}
  std::vector<TcgEvent> events;
};

struct EventLogLimits {
  size_t max_bytes = 16u << 20;
  size_t max_events = 1u << 16;
  size_t max_event_data = 1u << 20;  // one event's data
};

StatusOr<EventLog> ParseEventLog(ByteView raw, const EventLogLimits& limits = {});

struct ReplayResult {
  PcrBanks pcrs;  // every PCR at least one event extends, per bank
  std::optional<uint8_t> startup_locality;  // from the StartupLocality event
  bool hcrtm = false;
  bool operator==(const ReplayResult&) const = default;
};

// Named firmware workarounds, applied by attest/replay.h only
// after a strict replay failed to match the quote, and reported by name.
// Every quirk is one row of ReplayQuirks(); code asks the row, never the
// enum value.
enum class ReplayQuirk {
  kUnloggedStartupLocality3,
};
struct ReplayQuirkInfo {
  ReplayQuirk quirk;
  std::string_view name;         // "unlogged-startup-locality-3"
  std::string_view description;  // one line, for docs and reasons
  // PCR 0's initial last byte when the log records neither an H-CRTM nor
  // a StartupLocality event (strict replay assumes 0).
  std::optional<uint8_t> unlogged_pcr0_locality;
};
// Every quirk, in the order a failed strict replay tries them.
const std::vector<ReplayQuirkInfo>& ReplayQuirks();
std::string_view ReplayQuirkName(ReplayQuirk q);  // the row's name

// The last byte of PCR 0 before its first extend: 4 after an H-CRTM, the
// logged StartupLocality, else the first of `quirks` that names an
// unlogged locality, else 0.
uint8_t Pcr0InitialLocality(const ReplayResult& r,
                            const std::vector<ReplayQuirk>& quirks);

ReplayResult ReplayEventLog(const EventLog& log,
                            const std::vector<ReplayQuirk>& quirks = {});

// ---- Digest binding (docs/eventlog.md) ----------------------------------
// Replay proves an event's digests, not its data. For the event types whose
// digest the PC Client PFP (or, for EV_IPL, the bootloader) defines over the
// event data, CheckDataBinding tries that type's rules in order; a rule
// holds when EVERY bank the log carries that this code can hash (sha1,
// sha256, sha384, sha512) holds the hash of the rule's message.
struct DataBinding {
  enum class Kind {
    kNotDefined,  // the digest covers something else (a PE image, a blob)
    kBound,       // a rule holds: `proven` is proven by the digests
    kMismatch,    // the type's digest is defined over its data, no rule holds
  };
  Kind kind = Kind::kNotDefined;
  // kBound: the rule that held, e.g. "H(event data)", "H(VariableData)
  // (variable-data-only)"; kNotDefined: what the digest covers instead.
  std::string rule;
  // kBound: the bytes of the event's data the digests prove (a view into
  // TcgEvent::data: it lives as long as the event). All of the data for
  // most rules; for "H(VariableData)" only the variable's value; for grub's
  // strings the text after the "kernel_cmdline: " / "grub_cmd: " prefix.
  ByteView proven;
  // kMismatch: the event, the first failing bank and both values:
  // "event 6 at offset 0x1c5 (EV_EFI_VARIABLE_DRIVER_CONFIG): sha256 digest
  // 3f.. is not H(event data) = 9a.."; kNotDefined: why nothing is proven.
  std::string reason;
};
DataBinding CheckDataBinding(const TcgEvent& e);

// The log as JSON for `dpuaudit eventlog --json`:
// {"format": "crypto-agile"|"sha1",
//  "events": [{"index", "offset", "pcr", "type" (name), "type_value",
//              "digests": {"sha256": "<hex>", ...}, "data_hex",
//              "data_size", "description" (decoded text, when there is
//              one: UEFI variable name, device path, string)}],
//  "pcrs": {"sha256": {"0": "<hex>", ...}, "sha1": {...}}}
// pcrs: every PCR that at least one event extends, lowercase hex, decimal
// string keys.
nlohmann::json EventLogJson(const EventLog& log, const ReplayResult& replay);

// A one-line description of an event's data where its type is understood
// (UEFI variable name and value, device path, firmware blob, string); ""
// when there is nothing to say. Never fails: undecodable data gives "".
// The text is valid UTF-8 (UTF-16 is converted, other bytes are escaped).
std::string EventDescription(const TcgEvent& e);

// ---- Boot state (UEFI) -------------------------------------------------
// What the events say about the boot. Derived from events only; to trust
// it, derive it from a VerifiedBootLog (attest/replay.h), never from a raw
// EventLog.
struct UefiCertificate {
  std::string subject;  // RFC 2253
  std::string issuer;
  std::string sha256;   // of the DER
  bool operator==(const UefiCertificate&) const = default;
};

struct BootApplication {
  size_t event_index = 0;
  // The device path's file path, "\EFI\BOOT\BOOTAA64.EFI". UNPROVEN: the
  // digest is the PE image's Authenticode hash, not a hash of the path.
  std::string path;
  std::string sha256;       // the event's sha256 digest (Authenticode hash)
  bool operator==(const BootApplication&) const = default;
};

struct BootState {
  std::optional<bool> secure_boot;  // SecureBoot variable (PCR 7)
  std::vector<UefiCertificate> pk, kek, db;  // from EFI_SIGNATURE_LISTs
  size_t db_hashes = 0;   // EFI_CERT_SHA256 entries in db
  size_t dbx_entries = 0;
  std::string dbx_sha256;  // of the dbx variable data
  std::vector<UefiCertificate> authorities;  // EV_EFI_VARIABLE_AUTHORITY
  std::vector<BootApplication> boot_applications;  // PCR 4
  std::vector<std::string> kernel_cmdlines;  // grub "kernel_cmdline: ..."
                                             // (PCR 8), systemd-stub (PCR 12)
  std::vector<std::string> warnings;  // events that could not be decoded
  // Facts left unset or incomplete because an event that carries them is
  // not bound to its digests (CheckDataBinding), by fact: "secure_boot",
  // "pk", "kek", "db", "dbx", "authorities", "kernel_cmdlines". The value is
  // the first such event's DataBinding::reason. secure_boot, pk, kek, db
  // and dbx are then unset/empty (fail closed); an unbound authority or
  // command line is left out of its list.
  std::map<std::string, std::string> unproven;
  bool operator==(const BootState&) const = default;
};

// Decodes the UEFI events of `events` (which the caller has verified).
BootState ExtractBootState(const std::vector<TcgEvent>& events);
nlohmann::json BootStateJson(const BootState& s);

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_ATTEST_EVENTLOG_H_
