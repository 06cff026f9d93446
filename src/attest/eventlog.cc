// TCG event log parsing, replay and the log's JSON form (eventlog.h). Event
// descriptions, digest binding and the boot state are in boot_state.cc.
//
// One pass through one ByteReader: every length field is compared with the
// bytes left (and with EventLogLimits) before anything is copied, so the
// memory used is bounded by the input size.
#include "attest/eventlog.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace dpuaudit::attest {
namespace {

// TCG_PCR_EVENT (PC Client PFP v1.05, §10.2.1): every record of a "sha1"
// log, and the first record (the Spec ID event) of a crypto-agile log.
//   0        4        8                        28       32
//  +--------+--------+------------------------+--------+---------------+
//  | pcr    | type   | SHA-1 digest (20)      | size   | event[size]   |
//  +--------+--------+------------------------+--------+---------------+
//
// TCG_PCR_EVENT2 (§10.2.2): the other records of a crypto-agile log.
//  +-----+------+-------+-------------------------------------+------+-------+
//  | pcr | type | count | {alg u16, digest[size(alg)]}[count] | size | event |
//  +-----+------+-------+-------------------------------------+------+-------+
constexpr size_t kSha1DigestBytes = 20;

// TCG_EfiSpecIDEventStruct (§10.4.5.1), the data of the first event:
//   0                    16              20      21      22       23
//  +--------------------+---------------+-------+-------+--------+-----------+
//  | "Spec ID Event03\0" | platformClass | minor | major | errata | uintnSize |
//  +--------------------+---------------+-------+-------+--------+-----------+
//   24                       28
//  +------------------------+--------------------------------------+
//  | numberOfAlgorithms u32 | {algorithmId u16, digestSize u16}[n] |
//  +------------------------+--------------------------------------+
//  | vendorInfoSize u8 | vendorInfo[vendorInfoSize] |
//  +-------------------+----------------------------+
constexpr std::string_view kSpecIdSignature("Spec ID Event03\0", 16);
constexpr size_t kSpecIdHeaderBytes = 24;  // signature .. uintnSize
// No TPM has more banks than this; it also keeps per-event digest lookups
// cheap on hostile input.
constexpr uint32_t kMaxSpecIdAlgorithms = 16;
constexpr size_t kMaxDigestBytes = 64;  // TPMU_HA: the largest digest

// TCG_EfiStartupLocalityEvent (§10.4.5.3): the data of an EV_NO_ACTION
// event in PCR 0: "StartupLocality\0" then the locality, u8.
constexpr std::string_view kStartupLocalitySignature("StartupLocality\0", 16);
constexpr uint8_t kHcrtmLocality = 4;
// EV_S_CRTM_CONTENTS data of an H-CRTM sequence (§10.4.5.4).
constexpr std::string_view kHcrtmPrefix = "HCRTM";

bool StartsWith(ByteView data, std::string_view prefix) {
  return data.size() >= prefix.size() &&
         std::equal(
             prefix.begin(), prefix.end(), data.begin(),
             [](char c, uint8_t b) { return static_cast<uint8_t>(c) == b; });
}

bool CanReplay(uint16_t alg) {
  return alg == kTpmAlgSha1 || alg == kTpmAlgSha256 || alg == kTpmAlgSha384 ||
         alg == kTpmAlgSha512;
}

class Parser {
 public:
  Parser(ByteView raw, const EventLogLimits& limits)
      : raw_(raw), r_(raw), limits_(limits) {}

  StatusOr<EventLog> Run() {
    if (raw_.empty()) return InvalidArgumentError("the event log is empty.");
    if (raw_.size() > limits_.max_bytes) {
      return ResourceExhaustedError(
          "the event log is " + std::to_string(raw_.size()) +
          " bytes, more than the " + std::to_string(limits_.max_bytes) +
          " allowed.");
    }
    EventLog log;
    DPA_RETURN_IF_ERROR(StartEvent(0));
    DPA_ASSIGN_OR_RETURN(TcgEvent first, ReadSha1Event());
    if (first.type == kEvNoAction && StartsWith(first.data, kSpecIdSignature)) {
      log.format = EventLogFormat::kCryptoAgile;
      DPA_ASSIGN_OR_RETURN(log.algorithms, ParseSpecId(first));
      log.events.push_back(std::move(first));
      while (!r_.empty()) {
        DPA_RETURN_IF_ERROR(StartEvent(log.events.size()));
        DPA_ASSIGN_OR_RETURN(TcgEvent e, ReadAgileEvent(log.algorithms));
        log.events.push_back(std::move(e));
      }
    } else {
      log.format = EventLogFormat::kSha1;
      log.algorithms = {{kTpmAlgSha1, kSha1DigestBytes}};
      log.events.push_back(std::move(first));
      while (!r_.empty()) {
        DPA_RETURN_IF_ERROR(StartEvent(log.events.size()));
        DPA_ASSIGN_OR_RETURN(TcgEvent e, ReadSha1Event());
        log.events.push_back(std::move(e));
      }
    }
    return log;
  }

 private:
  // "event 17 at offset 0x1a4"
  std::string Where() const {
    return "event " + std::to_string(index_) + " at offset " + HexNumber(start_);
  }
  Status Error(const std::string& what) const {
    return InvalidArgumentError(Where() + ": " + what);
  }

  Status StartEvent(size_t index) {
    index_ = index;
    start_ = r_.offset();
    if (index >= limits_.max_events) {
      return ResourceExhaustedError(Where() + ": the log has more than the " +
                                    std::to_string(limits_.max_events) +
                                    " events allowed.");
    }
    return OkStatus();
  }

  Status Need(size_t n, std::string_view what) const {
    if (n > r_.remaining()) {
      return Error(std::string(what) + " needs " + std::to_string(n) +
                   " bytes at offset " + HexNumber(r_.offset()) + ", " +
                   std::to_string(r_.remaining()) + " left.");
    }
    return OkStatus();
  }
  StatusOr<uint16_t> U16(std::string_view what) {
    DPA_RETURN_IF_ERROR(Need(2, what));
    StatusOr<uint16_t> v = r_.U16Le(what);
    if (!v.ok()) return Error(v.status().message());
    return *v;
  }
  StatusOr<uint32_t> U32(std::string_view what) {
    DPA_RETURN_IF_ERROR(Need(4, what));
    StatusOr<uint32_t> v = r_.U32Le(what);
    if (!v.ok()) return Error(v.status().message());
    return *v;
  }
  StatusOr<ByteView> Take(size_t n, std::string_view what) {
    DPA_RETURN_IF_ERROR(Need(n, what));
    StatusOr<ByteView> v = r_.Take(n, what);
    if (!v.ok()) return Error(v.status().message());
    return *v;
  }

  // PC Client PFP §10.2: an EV_NO_ACTION event is never extended, so its
  // pcrIndex names no PCR; Windows and some firmware log 0xFFFFFFFF there
  // (go-attestation parses any value and replays per PCR).
  Status CheckPcr(uint32_t pcr, uint32_t type) const {
    if (type == kEvNoAction) return OkStatus();
    if (pcr > kMaxPcrIndex) {
      return Error("PCR index " + std::to_string(pcr) + " out of range [0, " +
                   std::to_string(kMaxPcrIndex) + "].");
    }
    return OkStatus();
  }

  // eventSize and event[eventSize], shared by both record formats.
  StatusOr<Bytes> ReadEventData() {
    DPA_ASSIGN_OR_RETURN(uint32_t size, U32("eventSize"));
    if (size > r_.remaining()) {
      return Error("eventSize " + std::to_string(size) + " exceeds the " +
                   std::to_string(r_.remaining()) + " bytes left in the log.");
    }
    if (size > limits_.max_event_data) {
      return ResourceExhaustedError(
          Where() + ": eventSize " + std::to_string(size) +
          " exceeds the limit of " + std::to_string(limits_.max_event_data) +
          " bytes.");
    }
    DPA_ASSIGN_OR_RETURN(ByteView data, Take(size, "event data"));
    return Bytes(data.begin(), data.end());
  }

  // Both event formats start with pcrIndex and eventType.
  Status ReadEventHeader(TcgEvent& e) {
    e.index = index_;
    e.offset = start_;
    DPA_ASSIGN_OR_RETURN(e.pcr, U32("pcrIndex"));
    DPA_ASSIGN_OR_RETURN(e.type, U32("eventType"));
    return CheckPcr(e.pcr, e.type);
  }

  StatusOr<TcgEvent> ReadSha1Event() {
    TcgEvent e;
    DPA_RETURN_IF_ERROR(ReadEventHeader(e));
    DPA_ASSIGN_OR_RETURN(ByteView digest,
                         Take(kSha1DigestBytes, "SHA-1 digest"));
    DPA_ASSIGN_OR_RETURN(e.data, ReadEventData());
    e.digests.push_back({kTpmAlgSha1, Bytes(digest.begin(), digest.end())});
    return e;
  }

  StatusOr<TcgEvent> ReadAgileEvent(const std::vector<SpecIdAlgorithm>& algs) {
    TcgEvent e;
    DPA_RETURN_IF_ERROR(ReadEventHeader(e));
    DPA_ASSIGN_OR_RETURN(uint32_t count, U32("digest count"));
    if (count > algs.size()) {
      return Error("digest count " + std::to_string(count) + " exceeds the " +
                   std::to_string(algs.size()) +
                   " algorithms of the Spec ID event.");
    }
    e.digests.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      DPA_ASSIGN_OR_RETURN(uint16_t alg, U16("digest algorithm"));
      auto it = std::find_if(
          algs.begin(), algs.end(),
          [alg](const SpecIdAlgorithm& a) { return a.alg == alg; });
      if (it == algs.end()) {
        return Error("digest algorithm " + HashAlgName(alg) +
                     " is not in the Spec ID event.");
      }
      if (e.DigestFor(alg) != nullptr) {
        return Error("digest algorithm " + HashAlgName(alg) +
                     " appears twice.");
      }
      DPA_ASSIGN_OR_RETURN(ByteView digest,
                           Take(it->digest_size, HashAlgName(alg) + " digest"));
      e.digests.push_back({alg, Bytes(digest.begin(), digest.end())});
    }
    DPA_ASSIGN_OR_RETURN(e.data, ReadEventData());
    return e;
  }

  // The Spec ID event's own checks and its algorithm list.
  StatusOr<std::vector<SpecIdAlgorithm>> ParseSpecId(
      const TcgEvent& first) const {
    if (first.pcr != 0) {
      return Error("the Spec ID event is in PCR " + std::to_string(first.pcr) +
                   ", expected 0.");
    }
    const Bytes& digest = first.digests.front().digest;
    if (std::any_of(digest.begin(), digest.end(),
                    [](uint8_t b) { return b != 0; })) {
      return Error("the Spec ID event's digest is not all zero.");
    }
    ByteReader r(first.data);
    auto left = [&r] { return std::to_string(r.remaining()); };
    if (r.remaining() < kSpecIdHeaderBytes + 4) {
      return Error("the Spec ID event is " + std::to_string(first.data.size()) +
                   " bytes, shorter than its " +
                   std::to_string(kSpecIdHeaderBytes + 4) + "-byte header.");
    }
    if (!r.Skip(kSpecIdHeaderBytes, "Spec ID header").ok()) {
      return Error("the Spec ID header is truncated.");
    }
    StatusOr<uint32_t> n = r.U32Le("numberOfAlgorithms");
    if (!n.ok()) return Error("the Spec ID header is truncated.");
    if (*n == 0) return Error("the Spec ID event lists no algorithms.");
    if (uint64_t{*n} * 4 > r.remaining()) {
      return Error("Spec ID numberOfAlgorithms " + std::to_string(*n) +
                   " needs " + std::to_string(uint64_t{*n} * 4) + " bytes, " +
                   left() + " left in the event.");
    }
    if (*n > kMaxSpecIdAlgorithms) {
      return Error("Spec ID numberOfAlgorithms " + std::to_string(*n) +
                   " exceeds the " + std::to_string(kMaxSpecIdAlgorithms) +
                   " supported.");
    }
    std::vector<SpecIdAlgorithm> algs;
    algs.reserve(*n);
    for (uint32_t i = 0; i < *n; ++i) {
      SpecIdAlgorithm a;
      a.alg = r.U16Le("algorithmId").value();
      a.digest_size = r.U16Le("digestSize").value();
      const std::string name = HashAlgName(a.alg);
      std::optional<size_t> known = HashAlgDigestSize(a.alg);
      if (known && *known != a.digest_size) {
        return Error("the Spec ID event gives " + name + " a digest size of " +
                     std::to_string(a.digest_size) + ", expected " +
                     std::to_string(*known) + ".");
      }
      if (a.digest_size == 0 || a.digest_size > kMaxDigestBytes) {
        return Error("the Spec ID event gives " + name + " a digest size of " +
                     std::to_string(a.digest_size) + ", outside [1, " +
                     std::to_string(kMaxDigestBytes) + "].");
      }
      for (const SpecIdAlgorithm& prev : algs) {
        if (prev.alg == a.alg) {
          return Error("the Spec ID event lists " + name + " twice.");
        }
      }
      algs.push_back(a);
    }
    if (r.empty()) {
      return Error("Spec ID vendorInfoSize needs 1 byte, 0 left in the event.");
    }
    const uint8_t vendor_size = r.U8("vendorInfoSize").value();
    if (vendor_size > r.remaining()) {
      return Error("Spec ID vendorInfoSize " + std::to_string(vendor_size) +
                   " exceeds the " + left() + " bytes left in the event.");
    }
    if (vendor_size < r.remaining()) {
      return Error("the Spec ID event has " +
                   std::to_string(r.remaining() - vendor_size) +
                   " bytes after vendorInfo.");
    }
    return algs;
  }

  ByteView raw_;
  ByteReader r_;
  const EventLogLimits& limits_;
  size_t index_ = 0;
  size_t start_ = 0;
};

}  // namespace

const Bytes* TcgEvent::DigestFor(uint16_t alg) const {
  for (const EventDigest& d : digests) {
    if (d.alg == alg) return &d.digest;
  }
  return nullptr;
}

std::string EventTypeName(uint32_t type) {
  switch (type) {
    case kEvPrebootCert:
      return "EV_PREBOOT_CERT";
    case kEvPostCode:
      return "EV_POST_CODE";
    case kEvNoAction:
      return "EV_NO_ACTION";
    case kEvSeparator:
      return "EV_SEPARATOR";
    case kEvAction:
      return "EV_ACTION";
    case kEvEventTag:
      return "EV_EVENT_TAG";
    case kEvSCrtmContents:
      return "EV_S_CRTM_CONTENTS";
    case kEvSCrtmVersion:
      return "EV_S_CRTM_VERSION";
    case kEvCpuMicrocode:
      return "EV_CPU_MICROCODE";
    case kEvPlatformConfigFlags:
      return "EV_PLATFORM_CONFIG_FLAGS";
    case kEvTableOfDevices:
      return "EV_TABLE_OF_DEVICES";
    case kEvCompactHash:
      return "EV_COMPACT_HASH";
    case kEvIpl:
      return "EV_IPL";
    case kEvIplPartitionData:
      return "EV_IPL_PARTITION_DATA";
    case kEvNonhostCode:
      return "EV_NONHOST_CODE";
    case kEvNonhostConfig:
      return "EV_NONHOST_CONFIG";
    case kEvNonhostInfo:
      return "EV_NONHOST_INFO";
    case kEvOmitBootDeviceEvents:
      return "EV_OMIT_BOOT_DEVICE_EVENTS";
    case kEvEfiEventBase:
      return "EV_EFI_EVENT_BASE";
    case kEvEfiVariableDriverConfig:
      return "EV_EFI_VARIABLE_DRIVER_CONFIG";
    case kEvEfiVariableBoot:
      return "EV_EFI_VARIABLE_BOOT";
    case kEvEfiBootServicesApplication:
      return "EV_EFI_BOOT_SERVICES_APPLICATION";
    case kEvEfiBootServicesDriver:
      return "EV_EFI_BOOT_SERVICES_DRIVER";
    case kEvEfiRuntimeServicesDriver:
      return "EV_EFI_RUNTIME_SERVICES_DRIVER";
    case kEvEfiGptEvent:
      return "EV_EFI_GPT_EVENT";
    case kEvEfiAction:
      return "EV_EFI_ACTION";
    case kEvEfiPlatformFirmwareBlob:
      return "EV_EFI_PLATFORM_FIRMWARE_BLOB";
    case kEvEfiHandoffTables:
      return "EV_EFI_HANDOFF_TABLES";
    case kEvEfiPlatformFirmwareBlob2:
      return "EV_EFI_PLATFORM_FIRMWARE_BLOB2";
    case kEvEfiHandoffTables2:
      return "EV_EFI_HANDOFF_TABLES2";
    case kEvEfiVariableBoot2:
      return "EV_EFI_VARIABLE_BOOT2";
    case kEvEfiHcrtmEvent:
      return "EV_EFI_HCRTM_EVENT";
    case kEvEfiVariableAuthority:
      return "EV_EFI_VARIABLE_AUTHORITY";
    case kEvEfiSpdmFirmwareBlob:
      return "EV_EFI_SPDM_FIRMWARE_BLOB";
    case kEvEfiSpdmFirmwareConfig:
      return "EV_EFI_SPDM_FIRMWARE_CONFIG";
    default:
      return Hex32(type);
  }
}

std::string_view EventLogFormatName(EventLogFormat f) {
  return f == EventLogFormat::kCryptoAgile ? "crypto-agile" : "sha1";
}

StatusOr<EventLog> ParseEventLog(ByteView raw, const EventLogLimits& limits) {
  return Parser(raw, limits).Run();
}

const std::vector<ReplayQuirkInfo>& ReplayQuirks() {
  static const std::vector<ReplayQuirkInfo> kQuirks = {
      {ReplayQuirk::kUnloggedStartupLocality3, "unlogged-startup-locality-3",
       "firmware started the TPM at locality 3 but logged no StartupLocality "
       "event: PCR 0 starts at 00..03",
       3},
  };
  return kQuirks;
}

std::string_view ReplayQuirkName(ReplayQuirk q) {
  for (const ReplayQuirkInfo& info : ReplayQuirks()) {
    if (info.quirk == q) return info.name;
  }
  return "unknown";
}

uint8_t Pcr0InitialLocality(const ReplayResult& r,
                            const std::vector<ReplayQuirk>& quirks) {
  if (r.hcrtm) return kHcrtmLocality;
  if (r.startup_locality.has_value()) return *r.startup_locality;
  for (ReplayQuirk q : quirks) {
    for (const ReplayQuirkInfo& info : ReplayQuirks()) {
      if (info.quirk == q && info.unlogged_pcr0_locality.has_value()) {
        return *info.unlogged_pcr0_locality;
      }
    }
  }
  return 0;
}

ReplayResult ReplayEventLog(const EventLog& log,
                            const std::vector<ReplayQuirk>& quirks) {
  ReplayResult out;
  for (const TcgEvent& e : log.events) {
    if (e.type == kEvNoAction && e.pcr == 0 &&
        e.data.size() > kStartupLocalitySignature.size() &&
        StartsWith(e.data, kStartupLocalitySignature) &&
        !out.startup_locality.has_value()) {
      out.startup_locality = e.data[kStartupLocalitySignature.size()];
    }
    // PC Client PFP v1.05, Table 9: EV_EFI_HCRTM_EVENT (data "HCRTM")
    // records the H-CRTM's _TPM_Hash_Start/_TPM_Hash_End sequence, after which the
    // TPM's PCR 0 is 00..04 extended by this event's digest (TPM 2.0
    // Library Part 1 §34.3; tpm2-tss ifapi_calculate_pcrs and tpm2-tools
    // tpm2_eventlog do the same). EV_S_CRTM_CONTENTS "HCRTM" is the older
    // form this code already honoured.
    if (e.pcr == 0 &&
        (e.type == kEvEfiHcrtmEvent ||
         (e.type == kEvSCrtmContents && StartsWith(e.data, kHcrtmPrefix)))) {
      out.hcrtm = true;
    }
  }
  if (out.startup_locality == kHcrtmLocality) out.hcrtm = true;
  const uint8_t pcr0_start = Pcr0InitialLocality(out, quirks);

  for (const SpecIdAlgorithm& a : log.algorithms) {
    if (!CanReplay(a.alg)) continue;
    // A bank is replayed only when every extending event carries it: a
    // partial bank would be a value no TPM ever held.
    bool complete = true;
    for (const TcgEvent& e : log.events) {
      if (e.type == kEvNoAction) continue;
      const Bytes* d = e.DigestFor(a.alg);
      if (d == nullptr || d->size() != a.digest_size) complete = false;
    }
    if (!complete) continue;
    PcrBank bank;
    bool ok = true;
    for (const TcgEvent& e : log.events) {
      if (e.type == kEvNoAction) continue;
      auto [it, inserted] = bank.try_emplace(e.pcr, Bytes(a.digest_size, 0));
      if (inserted && e.pcr == 0) it->second.back() = pcr0_start;
      Bytes buf = it->second;
      const Bytes* d = e.DigestFor(a.alg);
      buf.insert(buf.end(), d->begin(), d->end());
      StatusOr<Bytes> h = HashWith(a.alg, buf);
      if (!h.ok()) {
        ok = false;
        break;
      }
      it->second = std::move(h).value();
    }
    if (ok) out.pcrs[a.alg] = std::move(bank);
  }
  return out;
}

nlohmann::json EventLogJson(const EventLog& log, const ReplayResult& replay) {
  nlohmann::json j = nlohmann::json::object();
  j["format"] = std::string(EventLogFormatName(log.format));
  nlohmann::json events = nlohmann::json::array();
  for (const TcgEvent& e : log.events) {
    nlohmann::json ev = nlohmann::json::object();
    ev["index"] = e.index;
    ev["offset"] = e.offset;
    ev["pcr"] = e.pcr;
    ev["type"] = EventTypeName(e.type);
    ev["type_value"] = e.type;
    nlohmann::json digests = nlohmann::json::object();
    for (const EventDigest& d : e.digests) {
      digests[HashAlgName(d.alg)] = HexEncode(d.digest);
    }
    ev["digests"] = std::move(digests);
    ev["data_hex"] = HexEncode(e.data);
    ev["data_size"] = e.data.size();
    std::string description = EventDescription(e);
    if (!description.empty()) ev["description"] = std::move(description);
    events.push_back(std::move(ev));
  }
  j["events"] = std::move(events);
  nlohmann::json pcrs = nlohmann::json::object();
  for (const auto& [alg, bank] : replay.pcrs) {
    nlohmann::json b = nlohmann::json::object();
    for (const auto& [pcr, value] : bank)
      b[std::to_string(pcr)] = HexEncode(value);
    pcrs[HashAlgName(alg)] = std::move(b);
  }
  j["pcrs"] = std::move(pcrs);
  return j;
}

}  // namespace dpuaudit::attest
