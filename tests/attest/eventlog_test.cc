// attest/eventlog.h: parsing (both formats), replay, JSON and boot state.
//
// Real logs: ../shared/fixtures/eventlogs (public, used in place; skipped
// with a reason when absent) and the project's own simulated BlueField-3
// fTPM boot (tests/fixtures/eventlogs, see its PROVENANCE.md). Edge cases
// are built below with a comment per field.
#include "attest/eventlog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/files.h"

namespace dpuaudit::attest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string kSharedLogs = DPUAUDIT_SHARED_DIR "/fixtures/eventlogs";
const std::string kProjectLogs =
    DPUAUDIT_SOURCE_DIR "/tests/fixtures/eventlogs";

// ---- synthetic logs -------------------------------------------------------

// Little-endian field writer.
class Builder {
 public:
  Builder& U8(uint8_t v) {
    b_.push_back(v);
    return *this;
  }
  Builder& U16(uint16_t v) {
    for (int i = 0; i < 2; ++i)
      b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Builder& U32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Builder& U64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Builder& Raw(ByteView v) {
    b_.insert(b_.end(), v.begin(), v.end());
    return *this;
  }
  Builder& Str(std::string_view s) { return Raw(AsBytes(s)); }
  Builder& Fill(size_t n, uint8_t v) {
    b_.insert(b_.end(), n, v);
    return *this;
  }
  const Bytes& bytes() const { return b_; }
  size_t size() const { return b_.size(); }

 private:
  Bytes b_;
};

Bytes Filled(size_t n, uint8_t v) { return Bytes(n, v); }

// The Spec ID event (a TCG_PCR_EVENT) listing `algs` as {alg, size}.
// With {sha1, sha256} it is 69 bytes: the next event is at offset 0x45.
void SpecId(Builder& b,
            const std::vector<std::pair<uint16_t, uint16_t>>& algs) {
  const uint32_t size =
      static_cast<uint32_t>(16 + 4 + 4 + 4 + 4 * algs.size() + 1);
  b.U32(0)                     // pcrIndex: 0
      .U32(kEvNoAction)        // eventType: EV_NO_ACTION
      .Fill(20, 0)             // SHA-1 digest: all zero
      .U32(size)               // eventSize
      .Str("Spec ID Event03")  // signature ...
      .U8(0)                   // ... NUL-terminated (16 bytes)
      .U32(0)                  // platformClass: client
      .U8(0)                   // specVersionMinor
      .U8(2)                   // specVersionMajor
      .U8(0)                   // specErrata
      .U8(2)                   // uintnSize: 64-bit UINTN
      .U32(static_cast<uint32_t>(algs.size()));  // numberOfAlgorithms
  for (auto [alg, digest_size] : algs) {
    b.U16(alg)              // algorithmId
        .U16(digest_size);  // digestSize
  }
  b.U8(0);  // vendorInfoSize: no vendor info
}

void SpecIdSha1Sha256(Builder& b) {
  SpecId(b, {{kTpmAlgSha1, 20}, {kTpmAlgSha256, 32}});
}

// A TCG_PCR_EVENT2 record.
void Event2(Builder& b, uint32_t pcr, uint32_t type,
            const std::vector<std::pair<uint16_t, Bytes>>& digests,
            ByteView data) {
  b.U32(pcr)                                        // pcrIndex
      .U32(type)                                    // eventType
      .U32(static_cast<uint32_t>(digests.size()));  // TPML_DIGEST_VALUES.count
  for (const auto& [alg, d] : digests) {
    b.U16(alg)    // hashAlg
        .Raw(d);  // digest
  }
  b.U32(static_cast<uint32_t>(data.size()))  // eventSize
      .Raw(data);                            // event
}

// A TCG_PCR_EVENT (SHA-1 format) record.
void Sha1Event(Builder& b, uint32_t pcr, uint32_t type, const Bytes& sha1,
               ByteView data) {
  b.U32(pcr)                                    // pcrIndex
      .U32(type)                                // eventType
      .Raw(sha1)                                // SHA-1 digest (20)
      .U32(static_cast<uint32_t>(data.size()))  // eventSize
      .Raw(data);                               // event
}

Bytes Extend(uint16_t alg, Bytes pcr, const Bytes& digest) {
  pcr.insert(pcr.end(), digest.begin(), digest.end());
  return HashWith(alg, pcr).value();
}

Bytes StartValue(size_t size, uint8_t locality) {
  Bytes v(size, 0);
  v.back() = locality;
  return v;
}

void ExpectError(ByteView raw, StatusCode code, const std::string& message,
                 const EventLogLimits& limits = {}) {
  StatusOr<EventLog> log = ParseEventLog(raw, limits);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), code) << log.status().ToString();
  EXPECT_EQ(log.status().message(), message);
}

// ---- names -----------------------------------------------------------------

TEST(EventLogNamesTest, EventTypesFormatsAndQuirks) {
  EXPECT_EQ(EventTypeName(kEvNoAction), "EV_NO_ACTION");
  EXPECT_EQ(EventTypeName(kEvEfiVariableAuthority),
            "EV_EFI_VARIABLE_AUTHORITY");
  EXPECT_EQ(EventTypeName(kEvEfiBootServicesApplication),
            "EV_EFI_BOOT_SERVICES_APPLICATION");
  EXPECT_EQ(EventTypeName(kEvIpl), "EV_IPL");
  EXPECT_EQ(EventTypeName(0x00001234), "0x00001234");
  EXPECT_EQ(EventTypeName(0x800000ff), "0x800000ff");
  EXPECT_EQ(EventLogFormatName(EventLogFormat::kSha1), "sha1");
  EXPECT_EQ(EventLogFormatName(EventLogFormat::kCryptoAgile), "crypto-agile");
  EXPECT_EQ(ReplayQuirkName(ReplayQuirk::kUnloggedStartupLocality3),
            "unlogged-startup-locality-3");
}

TEST(ReplayQuirksTest, EveryQuirkIsOneNamedRowWithADescription) {
  std::set<std::string_view> names;
  for (const ReplayQuirkInfo& info : ReplayQuirks()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(ReplayQuirkName(info.quirk), info.name);
    EXPECT_FALSE(info.description.empty()) << info.name;
  }
  EXPECT_EQ(names.size(), 1u);
}

TEST(ReplayQuirksTest, Pcr0StartsAtHcrtmThenLoggedLocalityThenQuirkThenZero) {
  const std::vector<ReplayQuirk> quirk = {
      ReplayQuirk::kUnloggedStartupLocality3};
  ReplayResult r;
  EXPECT_EQ(Pcr0InitialLocality(r, {}), 0);
  EXPECT_EQ(Pcr0InitialLocality(r, quirk), 3);
  r.startup_locality = 0;  // a logged locality wins over the quirk
  EXPECT_EQ(Pcr0InitialLocality(r, quirk), 0);
  r.hcrtm = true;  // an H-CRTM wins over everything
  EXPECT_EQ(Pcr0InitialLocality(r, quirk), 4);
}

// ---- synthetic: structure errors
// -----------------------------------------------

TEST(EventLogParseTest, EmptyLogIsAnError) {
  ExpectError({}, StatusCode::kInvalidArgument, "the event log is empty.");
}

TEST(EventLogParseTest, TruncatedFirstHeader) {
  Builder b;
  b.U32(0)               // pcrIndex
      .U32(kEvNoAction)  // eventType
      .Fill(2, 0);       // 2 of the 20 SHA-1 digest bytes, then the end
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 0 at offset 0x0: SHA-1 digest needs 20 bytes at offset "
              "0x8, 2 left.");
}

TEST(EventLogParseTest, TruncatedSecondHeader) {
  Builder b;
  SpecIdSha1Sha256(b);    // 69 bytes
  b.U32(0)                // pcrIndex
      .U32(kEvSeparator)  // eventType
      .U16(1);            // half of the digest count
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x45: digest count needs 4 bytes at offset "
              "0x4d, 2 left.");
}

TEST(EventLogParseTest, DigestCountLargerThanSpecIdAlgorithms) {
  Builder b;
  SpecIdSha1Sha256(b);
  b.U32(0)                // pcrIndex
      .U32(kEvSeparator)  // eventType
      .U32(9);            // digest count: 9, the Spec ID lists 2
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x45: digest count 9 exceeds the 2 "
              "algorithms of the Spec ID event.");
}

TEST(EventLogParseTest, DigestAlgorithmNotInSpecId) {
  Builder b;
  SpecIdSha1Sha256(b);
  b.U32(0)                // pcrIndex
      .U32(kEvSeparator)  // eventType
      .U32(1)             // digest count
      .U16(0x0099)        // hashAlg: unknown, not in the Spec ID event
      .Fill(32, 0xaa);    // (digest bytes: never read)
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x45: digest algorithm 0x0099 is not in the "
              "Spec ID event.");
}

TEST(EventLogParseTest, KnownAlgorithmNotInSpecId) {
  Builder b;
  SpecId(b, {{kTpmAlgSha256, 32}});  // 65 bytes: sha256 only
  Event2(b, 0, kEvSeparator, {{kTpmAlgSha384, Filled(48, 1)}}, Bytes(4, 0));
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x41: digest algorithm sha384 is not in the "
              "Spec ID event.");
}

TEST(EventLogParseTest, DuplicateDigestAlgorithm) {
  Builder b;
  SpecIdSha1Sha256(b);
  Event2(b, 0, kEvSeparator,
         {{kTpmAlgSha256, Filled(32, 1)}, {kTpmAlgSha256, Filled(32, 2)}},
         Bytes(4, 0));
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x45: digest algorithm sha256 appears twice.");
}

TEST(EventLogParseTest, EventSizePastTheEnd) {
  Builder b;
  SpecIdSha1Sha256(b);
  b.U32(4)                 // pcrIndex
      .U32(kEvIpl)         // eventType
      .U32(1)              // digest count
      .U16(kTpmAlgSha256)  // hashAlg
      .Fill(32, 0x11)      // digest
      .U32(100)            // eventSize: 100 ...
      .Str("abcd");        // ... but 4 bytes follow
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x45: eventSize 100 exceeds the 4 bytes left "
              "in the log.");
}

TEST(EventLogParseTest, EventSize0xffffffffDoesNotWrapAround) {
  Builder agile;
  SpecIdSha1Sha256(agile);
  agile
      .U32(4)            // pcrIndex
      .U32(kEvIpl)       // eventType
      .U32(0)            // digest count: none
      .U32(0xffffffff);  // eventSize: 2^32 - 1, nothing follows
  ExpectError(agile.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x45: eventSize 4294967295 exceeds the 0 "
              "bytes left in the log.");

  Builder sha1;
  sha1.U32(0)                // pcrIndex
      .U32(kEvSCrtmVersion)  // eventType
      .Fill(20, 0x22)        // SHA-1 digest
      .U32(0xffffffff)       // eventSize: 2^32 - 1
      .Str("v1");            // 2 bytes follow
  ExpectError(sha1.bytes(), StatusCode::kInvalidArgument,
              "event 0 at offset 0x0: eventSize 4294967295 exceeds the 2 bytes "
              "left in the log.");
}

TEST(EventLogParseTest, SpecIdNumberOfAlgorithms0xffffffff) {
  Builder b;
  b.U32(0)               // pcrIndex
      .U32(kEvNoAction)  // eventType
      .Fill(20, 0)       // SHA-1 digest
      .U32(33)           // eventSize: header + one algorithm + vendor size
      .Str("Spec ID Event03")  // signature ...
      .U8(0)                   // ... with its NUL
      .U32(0)                  // platformClass
      .U8(0)                   // specVersionMinor
      .U8(2)                   // specVersionMajor
      .U8(0)                   // specErrata
      .U8(2)                   // uintnSize
      .U32(0xffffffff)     // numberOfAlgorithms: 2^32 - 1 (x4 overflows u32)
      .U16(kTpmAlgSha256)  // algorithmId
      .U16(32)             // digestSize
      .U8(0);              // vendorInfoSize
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 0 at offset 0x0: Spec ID numberOfAlgorithms 4294967295 "
              "needs 17179869180 bytes, 5 left in the event.");
}

TEST(EventLogParseTest, SpecIdWithWrongDigestSize) {
  Builder b;
  SpecId(b, {{kTpmAlgSha256, 20}});  // sha256 claimed to be 20 bytes
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 0 at offset 0x0: the Spec ID event gives sha256 a digest "
              "size of 20, expected 32.");
}

TEST(EventLogParseTest, SpecIdListingAnAlgorithmTwice) {
  Builder b;
  SpecId(b, {{kTpmAlgSha256, 32}, {kTpmAlgSha256, 32}});
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 0 at offset 0x0: the Spec ID event lists sha256 twice.");
}

TEST(EventLogParseTest, SpecIdWithNoAlgorithms) {
  Builder b;
  SpecId(b, {});
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 0 at offset 0x0: the Spec ID event lists no algorithms.");
}

TEST(EventLogParseTest, SpecIdVendorInfoPastTheEvent) {
  Builder b;
  b.U32(0)                     // pcrIndex
      .U32(kEvNoAction)        // eventType
      .Fill(20, 0)             // SHA-1 digest
      .U32(33)                 // eventSize: ends right after vendorInfoSize
      .Str("Spec ID Event03")  // signature ...
      .U8(0)                   // ... with its NUL
      .U32(0)                  // platformClass
      .U8(0)                   // specVersionMinor
      .U8(2)                   // specVersionMajor
      .U8(0)                   // specErrata
      .U8(2)                   // uintnSize
      .U32(1)                  // numberOfAlgorithms
      .U16(kTpmAlgSha256)      // algorithmId: sha256
      .U16(32)                 // digestSize
      .U8(3)                   // vendorInfoSize: 3, none left in the event
      .Str("xyz");             // (3 bytes after the event: not vendorInfo)
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 0 at offset 0x0: Spec ID vendorInfoSize 3 exceeds the 0 "
              "bytes left in the event.");
}

TEST(EventLogParseTest, SpecIdEventMustBeInPcr0WithAZeroDigest) {
  Builder in_pcr_3;
  SpecId(in_pcr_3, {{kTpmAlgSha256, 32}});
  Bytes raw = in_pcr_3.bytes();
  raw[0] = 3;  // pcrIndex: 3
  ExpectError(
      raw, StatusCode::kInvalidArgument,
      "event 0 at offset 0x0: the Spec ID event is in PCR 3, expected 0.");
  raw[0] = 0;
  raw[8] = 0x01;  // first SHA-1 digest byte: not zero
  ExpectError(
      raw, StatusCode::kInvalidArgument,
      "event 0 at offset 0x0: the Spec ID event's digest is not all zero.");
}

TEST(EventLogParseTest, PcrIndexOutOfRange) {
  Builder b;
  SpecIdSha1Sha256(b);
  Event2(b, 24, kEvIpl, {{kTpmAlgSha256, Filled(32, 1)}}, AsBytes("x"));
  ExpectError(b.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x45: PCR index 24 out of range [0, 23].");
}

// Windows and some firmware log EV_NO_ACTION events at PCR 0xFFFFFFFF; they
// are never extended, so any index is accepted for them, in both formats.
TEST(EventLogParseTest, NoActionEventAtPcrFfffffffIsSkipped) {
  Builder agile;
  SpecIdSha1Sha256(agile);
  Event2(agile, 0xffffffff, kEvNoAction,
         {{kTpmAlgSha1, Bytes(20, 0)}, {kTpmAlgSha256, Bytes(32, 0)}},
         AsBytes("WBCL informational"));
  Event2(agile, 4, kEvEfiAction,
         {{kTpmAlgSha1, Filled(20, 1)}, {kTpmAlgSha256, Filled(32, 1)}},
         AsBytes("Calling EFI Application from Boot Option"));
  StatusOr<EventLog> log = ParseEventLog(agile.bytes());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->events.size(), 3u);
  EXPECT_EQ(log->events[1].pcr, 0xffffffffu);
  ReplayResult r = ReplayEventLog(*log);
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).size(), 1u);
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(4),
            Extend(kTpmAlgSha256, Bytes(32, 0), Filled(32, 1)));
  EXPECT_FALSE(EventLogJson(*log, r).dump().empty());

  Builder sha1;
  Sha1Event(sha1, 0, kEvSCrtmVersion, Filled(20, 2), AsBytes("v1"));
  Sha1Event(sha1, 0xffffffff, kEvNoAction, Bytes(20, 0), AsBytes("x"));
  StatusOr<EventLog> old_log = ParseEventLog(sha1.bytes());
  ASSERT_TRUE(old_log.ok()) << old_log.status().ToString();
  EXPECT_EQ(ReplayEventLog(*old_log).pcrs.at(kTpmAlgSha1).size(), 1u);

  // An extending event at 0xFFFFFFFF is still refused.
  Builder bad;
  SpecIdSha1Sha256(bad);
  Event2(bad, 0xffffffff, kEvSeparator, {{kTpmAlgSha256, Filled(32, 1)}},
         Bytes(4, 0));
  ExpectError(bad.bytes(), StatusCode::kInvalidArgument,
              "event 1 at offset 0x45: PCR index 4294967295 out of range [0, "
              "23].");
}

TEST(EventLogParseTest, LimitsAreResourceExhausted) {
  Builder b;
  SpecIdSha1Sha256(b);
  // event 1 at 0x45: 4 + 4 + 4 + (2 + 32) + 4 + 64 = 114 bytes.
  Event2(b, 0, kEvPostCode, {{kTpmAlgSha256, Filled(32, 1)}}, Filled(64, 'a'));
  // event 2 at 0xb7.
  Event2(b, 0, kEvSeparator, {{kTpmAlgSha256, Filled(32, 2)}}, Bytes(4, 0));

  EventLogLimits events;
  events.max_events = 2;
  ExpectError(b.bytes(), StatusCode::kResourceExhausted,
              "event 2 at offset 0xb7: the log has more than the 2 events "
              "allowed.",
              events);

  EventLogLimits data;
  data.max_event_data = 40;  // the Spec ID event's 37 bytes fit
  ExpectError(
      b.bytes(), StatusCode::kResourceExhausted,
      "event 1 at offset 0x45: eventSize 64 exceeds the limit of 40 bytes.",
      data);

  EventLogLimits bytes;
  bytes.max_bytes = 100;
  ExpectError(b.bytes(), StatusCode::kResourceExhausted,
              "the event log is " + std::to_string(b.size()) +
                  " bytes, more than the 100 allowed.",
              bytes);

  // At the limits exactly, the log parses.
  EventLogLimits exact;
  exact.max_events = 3;
  exact.max_event_data = 64;  // event 1's data
  exact.max_bytes = b.size();
  EXPECT_TRUE(ParseEventLog(b.bytes(), exact).ok());
}

// ---- synthetic: parsing and replay
// ---------------------------------------------

TEST(EventLogParseTest, CryptoAgileEventsKeepOffsetsAndDigests) {
  Builder b;
  SpecIdSha1Sha256(b);
  // Digests in the other order than the Spec ID: allowed.
  Event2(b, 7, kEvSeparator,
         {{kTpmAlgSha256, Filled(32, 0x22)}, {kTpmAlgSha1, Filled(20, 0x11)}},
         Bytes(4, 0));
  StatusOr<EventLog> log = ParseEventLog(b.bytes());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->format, EventLogFormat::kCryptoAgile);
  EXPECT_THAT(log->algorithms, ElementsAre(SpecIdAlgorithm{kTpmAlgSha1, 20},
                                           SpecIdAlgorithm{kTpmAlgSha256, 32}));
  ASSERT_EQ(log->events.size(), 2u);
  EXPECT_EQ(log->events[0].index, 0u);
  EXPECT_EQ(log->events[0].offset, 0u);
  EXPECT_EQ(log->events[0].type, kEvNoAction);
  EXPECT_EQ(log->events[1].index, 1u);
  EXPECT_EQ(log->events[1].offset, 0x45u);
  EXPECT_EQ(log->events[1].pcr, 7u);
  ASSERT_NE(log->events[1].DigestFor(kTpmAlgSha1), nullptr);
  EXPECT_EQ(*log->events[1].DigestFor(kTpmAlgSha1), Filled(20, 0x11));
  EXPECT_EQ(*log->events[1].DigestFor(kTpmAlgSha256), Filled(32, 0x22));
  EXPECT_EQ(log->events[1].DigestFor(kTpmAlgSha384), nullptr);
}

TEST(EventLogParseTest, Sha1FormatHasNoSpecIdEvent) {
  Builder b;
  Sha1Event(b, 0, kEvSCrtmVersion, Filled(20, 0x01), AsBytes("1.0"));
  Sha1Event(b, 4, kEvSeparator, Filled(20, 0x02), Bytes(4, 0));
  StatusOr<EventLog> log = ParseEventLog(b.bytes());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->format, EventLogFormat::kSha1);
  EXPECT_THAT(log->algorithms, ElementsAre(SpecIdAlgorithm{kTpmAlgSha1, 20}));
  ASSERT_EQ(log->events.size(), 2u);
  EXPECT_EQ(log->events[1].offset, 35u);  // 32-byte header + 3 bytes
  ReplayResult r = ReplayEventLog(*log);
  ASSERT_EQ(r.pcrs.size(), 1u);
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha1).at(0),
            Extend(kTpmAlgSha1, Bytes(20, 0), Filled(20, 1)));
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha1).at(4),
            Extend(kTpmAlgSha1, Bytes(20, 0), Filled(20, 2)));
}

TEST(EventLogReplayTest, NoActionEventsAreNotExtended) {
  Builder b;
  SpecIdSha1Sha256(b);
  // EV_NO_ACTION in PCR 5 with non-zero digests: must not be extended.
  Event2(b, 5, kEvNoAction,
         {{kTpmAlgSha1, Filled(20, 9)}, {kTpmAlgSha256, Filled(32, 9)}},
         AsBytes("SP800-155 Event"));
  Event2(b, 4, kEvEfiAction,
         {{kTpmAlgSha1, Filled(20, 1)}, {kTpmAlgSha256, Filled(32, 1)}},
         AsBytes("Calling EFI Application from Boot Option"));
  StatusOr<EventLog> log = ParseEventLog(b.bytes());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ReplayResult r = ReplayEventLog(*log);
  ASSERT_EQ(r.pcrs.size(), 2u);
  for (const auto& [alg, bank] : r.pcrs) {
    EXPECT_EQ(bank.size(), 1u) << HashAlgName(alg);
    EXPECT_FALSE(bank.contains(5)) << HashAlgName(alg);
    EXPECT_FALSE(bank.contains(0)) << "the Spec ID event is never extended";
  }
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(4),
            Extend(kTpmAlgSha256, Bytes(32, 0), Filled(32, 1)));
  EXPECT_FALSE(r.startup_locality.has_value());
  EXPECT_FALSE(r.hcrtm);
}

// StartupLocality event data: "StartupLocality\0" then the locality.
Bytes StartupLocality(uint8_t locality) {
  Builder d;
  d.Str("StartupLocality")
      .U8(0)          // signature, 16 bytes
      .U8(locality);  // StartupLocality
  return d.bytes();
}

EventLog LocalityLog(std::optional<uint8_t> locality) {
  Builder b;
  SpecIdSha1Sha256(b);
  if (locality.has_value()) {
    Event2(b, 0, kEvNoAction,
           {{kTpmAlgSha1, Bytes(20, 0)}, {kTpmAlgSha256, Bytes(32, 0)}},
           StartupLocality(*locality));
  }
  Event2(b, 0, kEvSCrtmVersion,
         {{kTpmAlgSha1, Filled(20, 0xa1)}, {kTpmAlgSha256, Filled(32, 0xa2)}},
         AsBytes("v"));
  Event2(b, 1, kEvSeparator,
         {{kTpmAlgSha1, Filled(20, 0xb1)}, {kTpmAlgSha256, Filled(32, 0xb2)}},
         Bytes(4, 0));
  return ParseEventLog(b.bytes()).value();
}

TEST(EventLogReplayTest, StartupLocality3StartsPcr0At3) {
  ReplayResult r = ReplayEventLog(LocalityLog(3));
  EXPECT_EQ(r.startup_locality, std::optional<uint8_t>(3));
  EXPECT_FALSE(r.hcrtm);
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(0),
            Extend(kTpmAlgSha256, StartValue(32, 3), Filled(32, 0xa2)));
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha1).at(0),
            Extend(kTpmAlgSha1, StartValue(20, 3), Filled(20, 0xa1)));
  // Other PCRs still start at zero.
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(1),
            Extend(kTpmAlgSha256, Bytes(32, 0), Filled(32, 0xb2)));
}

TEST(EventLogReplayTest, StartupLocality0IsPlainZero) {
  ReplayResult r = ReplayEventLog(LocalityLog(0));
  EXPECT_EQ(r.startup_locality, std::optional<uint8_t>(0));
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(0),
            Extend(kTpmAlgSha256, Bytes(32, 0), Filled(32, 0xa2)));
}

TEST(EventLogReplayTest, HcrtmLocality4StartsPcr0At4) {
  ReplayResult r = ReplayEventLog(LocalityLog(4));
  EXPECT_EQ(r.startup_locality, std::optional<uint8_t>(4));
  EXPECT_TRUE(r.hcrtm);
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(0),
            Extend(kTpmAlgSha256, StartValue(32, 4), Filled(32, 0xa2)));
}

TEST(EventLogReplayTest, HcrtmCrtmContentsStartsPcr0At4) {
  Builder b;
  SpecId(b, {{kTpmAlgSha256, 32}});
  Event2(b, 0, kEvSCrtmContents, {{kTpmAlgSha256, Filled(32, 0xc1)}},
         AsBytes(std::string_view("HCRTM\0", 6)));
  Event2(b, 0, kEvSeparator, {{kTpmAlgSha256, Filled(32, 0xc2)}}, Bytes(4, 0));
  ReplayResult r = ReplayEventLog(ParseEventLog(b.bytes()).value());
  EXPECT_TRUE(r.hcrtm);
  EXPECT_FALSE(r.startup_locality.has_value());
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(0),
            Extend(kTpmAlgSha256,
                   Extend(kTpmAlgSha256, StartValue(32, 4), Filled(32, 0xc1)),
                   Filled(32, 0xc2)));
}

// PC Client PFP Table 9: an H-CRTM records its measurement as
// EV_EFI_HCRTM_EVENT (data "HCRTM") in PCR 0; the TPM then holds
// H(00..04 || digest) (TPM 2.0 Part 1 §34.3), as tpm2-tss and tpm2-tools
// replay it. Expected values computed here, independently of the code.
TEST(EventLogReplayTest, EfiHcrtmEventStartsPcr0At4AndIsExtended) {
  const Bytes measured = ToBytes("BlueField-3 H-CRTM image");
  const Bytes d1 = HashWith(kTpmAlgSha1, measured).value();
  const Bytes d256 = HashWith(kTpmAlgSha256, measured).value();
  Builder b;
  SpecIdSha1Sha256(b);
  Event2(b, 0, kEvEfiHcrtmEvent, {{kTpmAlgSha1, d1}, {kTpmAlgSha256, d256}},
         AsBytes("HCRTM"));
  Event2(b, 0, kEvSeparator,
         {{kTpmAlgSha1, Filled(20, 0xc1)}, {kTpmAlgSha256, Filled(32, 0xc2)}},
         Bytes(4, 0));
  StatusOr<EventLog> log = ParseEventLog(b.bytes());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ReplayResult r = ReplayEventLog(*log);
  EXPECT_TRUE(r.hcrtm);
  EXPECT_FALSE(r.startup_locality.has_value());
  Bytes pcr0_256(32, 0);
  pcr0_256[31] = 4;
  pcr0_256.insert(pcr0_256.end(), d256.begin(), d256.end());
  pcr0_256 = HashWith(kTpmAlgSha256, pcr0_256).value();
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(0),
            Extend(kTpmAlgSha256, pcr0_256, Filled(32, 0xc2)));
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha1).at(0),
            Extend(kTpmAlgSha1, Extend(kTpmAlgSha1, StartValue(20, 4), d1),
                   Filled(20, 0xc1)));
  // An EV_EFI_HCRTM_EVENT outside PCR 0 does not change PCR 0's start.
  Builder other;
  SpecIdSha1Sha256(other);
  Event2(other, 1, kEvEfiHcrtmEvent,
         {{kTpmAlgSha1, d1}, {kTpmAlgSha256, d256}}, AsBytes("HCRTM"));
  EXPECT_FALSE(ReplayEventLog(ParseEventLog(other.bytes()).value()).hcrtm);
}

TEST(EventLogReplayTest, UnloggedLocality3QuirkOnlyWithoutALoggedLocality) {
  const std::vector<ReplayQuirk> quirk = {
      ReplayQuirk::kUnloggedStartupLocality3};
  ReplayResult unlogged = ReplayEventLog(LocalityLog(std::nullopt), quirk);
  EXPECT_EQ(unlogged.pcrs.at(kTpmAlgSha256).at(0),
            Extend(kTpmAlgSha256, StartValue(32, 3), Filled(32, 0xa2)));
  ReplayResult strict = ReplayEventLog(LocalityLog(std::nullopt));
  EXPECT_EQ(strict.pcrs.at(kTpmAlgSha256).at(0),
            Extend(kTpmAlgSha256, Bytes(32, 0), Filled(32, 0xa2)));
  // A logged locality wins over the quirk.
  EXPECT_EQ(ReplayEventLog(LocalityLog(0), quirk),
            ReplayEventLog(LocalityLog(0)));
}

TEST(EventLogReplayTest, BankMissingFromAnEventIsNotReplayed) {
  Builder b;
  SpecIdSha1Sha256(b);
  Event2(b, 4, kEvEfiAction,
         {{kTpmAlgSha1, Filled(20, 1)}, {kTpmAlgSha256, Filled(32, 1)}},
         AsBytes("a"));
  Event2(b, 4, kEvEfiAction, {{kTpmAlgSha1, Filled(20, 2)}},
         AsBytes("b"));  // no sha256
  StatusOr<EventLog> log = ParseEventLog(b.bytes());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ReplayResult r = ReplayEventLog(*log);
  EXPECT_TRUE(r.pcrs.contains(kTpmAlgSha1));
  EXPECT_FALSE(r.pcrs.contains(kTpmAlgSha256));
}

TEST(EventLogReplayTest, UnknownSpecIdAlgorithmParsesButIsNotReplayed) {
  Builder b;
  SpecId(b, {{0x0027, 32}, {kTpmAlgSha256, 32}});  // 0x0027: sha3_256
  Event2(b, 4, kEvEfiAction,
         {{0x0027, Filled(32, 1)}, {kTpmAlgSha256, Filled(32, 2)}},
         AsBytes("a"));
  StatusOr<EventLog> log = ParseEventLog(b.bytes());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ReplayResult r = ReplayEventLog(*log);
  EXPECT_FALSE(r.pcrs.contains(0x0027));
  EXPECT_TRUE(r.pcrs.contains(kTpmAlgSha256));
}

TEST(EventLogJsonTest, ShapeAsDocumented) {
  Builder b;
  SpecIdSha1Sha256(b);
  Event2(b, 12, kEvEfiAction,
         {{kTpmAlgSha1, Filled(20, 0xab)}, {kTpmAlgSha256, Filled(32, 0xcd)}},
         AsBytes("Exit Boot Services Invocation"));
  EventLog log = ParseEventLog(b.bytes()).value();
  nlohmann::json j = EventLogJson(log, ReplayEventLog(log));
  EXPECT_EQ(j["format"], "crypto-agile");
  ASSERT_EQ(j["events"].size(), 2u);
  const nlohmann::json& e = j["events"][1];
  EXPECT_EQ(e["index"], 1);
  EXPECT_EQ(e["offset"], 0x45);
  EXPECT_EQ(e["pcr"], 12);
  EXPECT_EQ(e["type"], "EV_EFI_ACTION");
  EXPECT_EQ(e["type_value"], kEvEfiAction);
  EXPECT_EQ(e["digests"]["sha1"], HexEncode(Filled(20, 0xab)));
  EXPECT_EQ(e["digests"]["sha256"], HexEncode(Filled(32, 0xcd)));
  EXPECT_EQ(e["data_hex"], HexEncode(AsBytes("Exit Boot Services Invocation")));
  EXPECT_EQ(e["data_size"], 29);
  EXPECT_EQ(e["description"], "Exit Boot Services Invocation");
  EXPECT_EQ(j["events"][0]["description"], "Spec ID Event03: sha1, sha256");
  // pcrs: decimal string keys, lowercase hex, only extended PCRs.
  ASSERT_TRUE(j["pcrs"].is_object());
  EXPECT_EQ(j["pcrs"].size(), 2u);
  EXPECT_EQ(j["pcrs"]["sha256"].size(), 1u);
  EXPECT_EQ(j["pcrs"]["sha256"]["12"],
            HexEncode(Extend(kTpmAlgSha256, Bytes(32, 0), Filled(32, 0xcd))));
  EXPECT_EQ(j["pcrs"]["sha1"]["12"],
            HexEncode(Extend(kTpmAlgSha1, Bytes(20, 0), Filled(20, 0xab))));
}

// ---- synthetic: boot state
// -------------------------------------------------------

// UEFI_VARIABLE_DATA for a variable of EFI_GLOBAL_VARIABLE.
Bytes GlobalVariable(std::u16string_view name, ByteView data) {
  Builder b;
  b.U32(0x8be4df61)  // VariableName: EFI_GLOBAL_VARIABLE 8be4df61-
      .U16(0x93ca)   // -93ca-
      .U16(0x11d2)   // -11d2-
      .Raw(Bytes{0xaa, 0x0d, 0x00, 0xe0, 0x98, 0x03, 0x2b, 0x8c})  // -aa0d-...
      .U64(name.size())              // UnicodeNameLength (characters)
      .U64(data.size());             // VariableDataLength
  for (char16_t c : name) b.U16(c);  // UnicodeName, UTF-16LE, no NUL
  b.Raw(data);                       // VariableData
  return b.bytes();
}

// An event whose sha256 digest is the hash of its data (bound, as the PFP
// defines it for variable, separator and string events).
TcgEvent MakeEvent(size_t index, uint32_t pcr, uint32_t type, Bytes data) {
  TcgEvent e;
  e.index = index;
  e.offset = 0x100 + index;
  e.pcr = pcr;
  e.type = type;
  e.digests = {{kTpmAlgSha256, HashWith(kTpmAlgSha256, data).value()}};
  e.data = std::move(data);
  return e;
}

// The same event, then its data edited after the digest was taken (what a
// root user on the Arm OS can do to the log without breaking replay).
TcgEvent EditedEvent(size_t index, uint32_t pcr, uint32_t type, Bytes data,
                     size_t at, uint8_t value) {
  TcgEvent e = MakeEvent(index, pcr, type, std::move(data));
  e.data.at(at) = value;
  return e;
}

Bytes Utf16(std::u16string_view s) {
  Builder b;
  for (char16_t c : s) b.U16(c);
  return b.bytes();
}

TEST(BootStateTest, UndecodableEventsBecomeWarnings) {
  Bytes truncated_var = GlobalVariable(u"SecureBoot", Bytes{1});
  truncated_var.resize(20);  // GUID + 4 bytes of UnicodeNameLength
  Bytes huge_name = GlobalVariable(u"PK", {});
  huge_name[16] = 0xff;  // UnicodeNameLength: 255 characters, 4 bytes follow
  Builder bad_list;
  bad_list
      .Fill(16, 0xa1)   // SignatureType
      .U32(0xffffffff)  // SignatureListSize: past the data
      .U32(0)           // SignatureHeaderSize
      .U32(48);         // SignatureSize
  Builder bad_image;
  bad_image
      .U64(0x1000)     // ImageLocationInMemory
      .U64(0x2000)     // ImageLengthInMemory
      .U64(0)          // ImageLinkTimeAddress
      .U64(1u << 20);  // LengthOfDevicePath: 1 MiB, nothing follows
  std::vector<TcgEvent> events = {
      MakeEvent(1, 7, kEvEfiVariableDriverConfig, truncated_var),
      MakeEvent(2, 7, kEvEfiVariableDriverConfig, huge_name),
      MakeEvent(3, 7, kEvEfiVariableDriverConfig,
                GlobalVariable(u"KEK", bad_list.bytes())),
      MakeEvent(4, 4, kEvEfiBootServicesApplication, bad_image.bytes()),
      MakeEvent(5, 12, kEvIpl, Bytes{0xff, 0xfe, 0x00}),
  };
  BootState s = ExtractBootState(events);
  EXPECT_FALSE(s.secure_boot.has_value());
  EXPECT_THAT(s.boot_applications, IsEmpty());
  ASSERT_EQ(s.warnings.size(), 5u);
  EXPECT_EQ(s.warnings[0],
            "event 1 at offset 0x101 (EV_EFI_VARIABLE_DRIVER_CONFIG): "
            "UnicodeNameLength at offset 0x10: need 8 bytes, 4 left.");
  EXPECT_EQ(s.warnings[1],
            "event 2 at offset 0x102 (EV_EFI_VARIABLE_DRIVER_CONFIG): UEFI "
            "variable: UnicodeNameLength 255 exceeds the 4 bytes left.");
  EXPECT_EQ(s.warnings[2],
            "event 3 at offset 0x103 (EV_EFI_VARIABLE_DRIVER_CONFIG): KEK: "
            "EFI_SIGNATURE_LIST at offset 0x0: SignatureListSize 4294967295 "
            "does not fit the 28 bytes left.");
  EXPECT_EQ(s.warnings[3],
            "event 4 at offset 0x104 (EV_EFI_BOOT_SERVICES_APPLICATION): "
            "UEFI_IMAGE_LOAD_EVENT: LengthOfDevicePath 1048576 exceeds the 0 "
            "bytes left.");
  EXPECT_EQ(s.warnings[4],
            "event 5 at offset 0x105 (EV_IPL): PCR 12 data is not a UTF-16LE "
            "command line.");
}

TEST(BootStateTest, BadCertificateIsAWarningNotAFailure) {
  Builder list;
  list.U32(0xa5c059a1)  // SignatureType: EFI_CERT_X509 a5c059a1-
      .U16(0x94e4)      // -94e4-
      .U16(0x4aa7)      // -4aa7-
      .Raw(Bytes{0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72})  // -87b5-...
      .U32(28 + 16 + 4)  // SignatureListSize: header + one signature
      .U32(0)            // SignatureHeaderSize
      .U32(16 + 4)       // SignatureSize: owner + 4 bytes
      .Fill(16, 0x01)    // SignatureOwner
      .Str("junk");      // SignatureData: not DER
  BootState s = ExtractBootState({MakeEvent(
      1, 7, kEvEfiVariableDriverConfig, GlobalVariable(u"PK", list.bytes()))});
  EXPECT_THAT(s.pk, IsEmpty());
  EXPECT_THAT(
      s.warnings,
      ElementsAre("event 1 at offset 0x101 (EV_EFI_VARIABLE_DRIVER_CONFIG): "
                  "PK: EFI_SIGNATURE_LIST at offset 0x0, signature 0: not "
                  "a DER X.509 certificate."));
}

TEST(BootStateTest, SecureBootCmdlinesAndGrubFallback) {
  BootState off = ExtractBootState({MakeEvent(
      1, 7, kEvEfiVariableDriverConfig, GlobalVariable(u"SecureBoot", {}))});
  EXPECT_EQ(off.secure_boot, std::optional<bool>(false));  // absent variable
  BootState on = ExtractBootState({
      MakeEvent(1, 7, kEvEfiVariableDriverConfig,
                GlobalVariable(u"SecureBoot", Bytes{1})),
      MakeEvent(
          2, 8, kEvIpl,
          ToBytes(std::string_view("grub_cmd: linux /vmlinuz ro quiet\0", 34))),
      MakeEvent(3, 12, kEvIpl, Utf16(u" console=hvc0 ")),
  });
  EXPECT_EQ(on.secure_boot, std::optional<bool>(true));
  // No "kernel_cmdline:" entry: grub's linux command is used.
  EXPECT_THAT(on.kernel_cmdlines,
              ElementsAre("console=hvc0", "/vmlinuz ro quiet"));
  EXPECT_THAT(on.warnings, IsEmpty());
  nlohmann::json j = BootStateJson(on);
  EXPECT_EQ(j["secure_boot"], true);
  EXPECT_EQ(j["kernel_cmdlines"].size(), 2u);
  EXPECT_TRUE(j["pk"].is_array());
  EXPECT_TRUE(j["warnings"].empty());
  EXPECT_TRUE(BootStateJson(BootState{})["secure_boot"].is_null());
}

// ---- synthetic: digest binding (docs/eventlog.md) --------------------------

// UEFI_VARIABLE_DATA for a variable of EFI_IMAGE_SECURITY_DATABASE (db, dbx).
Bytes SecurityDbVariable(std::u16string_view name, ByteView data) {
  Bytes b = GlobalVariable(name, data);
  const Bytes guid = {0xcb, 0xb2, 0x19, 0xd7, 0x3a, 0x3d, 0x96, 0x45,
                      0xa3, 0xbc, 0xda, 0xd0, 0x0e, 0x67, 0x65, 0x6f};
  std::copy(guid.begin(), guid.end(), b.begin());  // VariableName GUID
  return b;
}

// Offset of VariableData in a UEFI_VARIABLE_DATA named `name`.
size_t VariableDataOffset(std::u16string_view name) {
  return 16 + 8 + 8 + 2 * name.size();
}

TEST(DataBindingTest, RulesPerEventType) {
  using Kind = DataBinding::Kind;
  const Bytes sb = GlobalVariable(u"SecureBoot", Bytes{1});
  const std::string grub = "kernel_cmdline: /vmlinuz ro";
  struct Case {
    std::string name;
    TcgEvent event;
    Kind kind;
    std::string rule;
    size_t proven_offset = 0;  // into the event's data
    size_t proven_size = 0;
  };
  auto with_digest = [](TcgEvent e, ByteView message) {
    e.digests = {{kTpmAlgSha256, HashWith(kTpmAlgSha256, message).value()},
                 {kTpmAlgSha1, HashWith(kTpmAlgSha1, message).value()}};
    return e;
  };
  auto event = [](uint32_t pcr, uint32_t type, Bytes data) {
    return MakeEvent(1, pcr, type, std::move(data));
  };
  const Bytes grub_data = ToBytes(grub + std::string(1, '\0'));
  const Bytes odd_utf16 = [] {
    Bytes b = Utf16(u"quiet");
    b.push_back(0);  // half of the NUL, as systemd-boot < v251 logs it
    return b;
  }();
  const Bytes authority = [] {
    Bytes b = SecurityDbVariable(u"db", Filled(40, 7));
    b.push_back(0);  // shim's extra byte
    return b;
  }();
  std::vector<Case> cases = {
      {"separator", event(7, kEvSeparator, Bytes(4, 0)), Kind::kBound,
       "H(event data)", 0, 4},
      {"error separator",
       with_digest(event(0, kEvSeparator, Bytes(4, 0xff)), Bytes{0, 0, 0, 1}),
       Kind::kBound, "H(00 00 00 01) (error separator)", 0, 4},
      {"EFI action", event(4, kEvEfiAction, ToBytes("Calling EFI Application")),
       Kind::kBound, "H(event data)", 0, 23},
      {"S-CRTM version", event(0, kEvSCrtmVersion, Utf16(u"1.0")), Kind::kBound,
       "H(event data)", 0, 6},
      {"SecureBoot variable", event(7, kEvEfiVariableDriverConfig, sb),
       Kind::kBound, "H(event data)", 0, sb.size()},
      {"variable hashed as its VariableData only",
       with_digest(event(7, kEvEfiVariableDriverConfig, sb), Bytes{1}),
       Kind::kBound, "H(VariableData) (variable-data-only)",
       VariableDataOffset(u"SecureBoot"), 1},
      {"Boot0000 hashed as its VariableData only (edk2)",
       with_digest(event(1, kEvEfiVariableBoot,
                         GlobalVariable(u"Boot0000", ToBytes("opt"))),
                   AsBytes("opt")),
       Kind::kBound, "H(VariableData) (variable-data-only)",
       VariableDataOffset(u"Boot0000"), 3},
      {"authority with shim's extra byte",
       with_digest(event(7, kEvEfiVariableAuthority, authority),
                   ByteView(authority).first(authority.size() - 1)),
       Kind::kBound, "H(event data without its last byte) (shim-extra-byte)", 0,
       authority.size() - 1},
      {"grub kernel_cmdline",
       with_digest(event(8, kEvIpl, grub_data),
                   AsBytes(std::string_view("/vmlinuz ro"))),
       Kind::kBound, "H(text after \"kernel_cmdline: \") (grub)", 16, 11},
      {"systemd-boot odd length",
       with_digest(event(8, kEvIpl, odd_utf16),
                   [&] {
                     Bytes b = odd_utf16;
                     b.push_back(0);
                     return b;
                   }()),
       Kind::kBound, "H(event data + 00) (systemd-boot-odd-length)", 0,
       odd_utf16.size()},
      {"flipped SecureBoot",
       EditedEvent(1, 7, kEvEfiVariableDriverConfig, sb,
                   VariableDataOffset(u"SecureBoot"), 0),
       Kind::kMismatch, "", 0, 0},
      {"boot application", event(4, kEvEfiBootServicesApplication, Bytes(40, 0)),
       Kind::kNotDefined,
       "the digest is the PE image's Authenticode hash, not of the event data "
       "(its device path is unproven)",
       0, 0},
      {"post code", event(0, kEvPostCode, ToBytes("BL_2")), Kind::kNotDefined,
       "the digest is of the measured code, not of the event data", 0, 0},
      {"H-CRTM", event(0, kEvEfiHcrtmEvent, ToBytes("HCRTM")),
       Kind::kNotDefined,
       "the digest is of the measured code, not of the event data", 0, 0},
      {"no action", event(0, kEvNoAction, ToBytes("x")), Kind::kNotDefined,
       "EV_NO_ACTION is never extended: no digest covers it", 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DataBinding b = CheckDataBinding(c.event);
    EXPECT_EQ(b.kind, c.kind) << b.reason;
    if (c.kind == Kind::kMismatch) continue;
    EXPECT_EQ(b.rule, c.rule);
    if (c.kind == Kind::kBound) {
      EXPECT_EQ(b.proven.data(), c.event.data.data() + c.proven_offset);
      EXPECT_EQ(b.proven.size(), c.proven_size);
    }
  }
}

TEST(DataBindingTest, MismatchNamesTheEventTheBankAndBothValues) {
  const Bytes sb = GlobalVariable(u"SecureBoot", Bytes{0});
  TcgEvent e = MakeEvent(6, 7, kEvEfiVariableDriverConfig, sb);
  e.digests.push_back({kTpmAlgSha1, HashWith(kTpmAlgSha1, sb).value()});
  e.data.back() = 1;  // SecureBoot 0 -> 1, digests kept
  DataBinding b = CheckDataBinding(e);
  ASSERT_EQ(b.kind, DataBinding::Kind::kMismatch);
  EXPECT_EQ(b.reason,
            "event 6 at offset 0x106 (EV_EFI_VARIABLE_DRIVER_CONFIG): sha256 "
            "digest " +
                HexEncode(HashWith(kTpmAlgSha256, sb).value()) +
                " is not H(event data) = " +
                HexEncode(HashWith(kTpmAlgSha256, e.data).value()) +
                " (nor H(VariableData) (variable-data-only)).");
  // Every bank must hold: a right sha256 with a wrong sha1 is a mismatch,
  // naming sha1.
  TcgEvent half = MakeEvent(7, 7, kEvSeparator, Bytes(4, 0));
  half.digests.push_back({kTpmAlgSha1, Filled(20, 0x5a)});
  DataBinding hb = CheckDataBinding(half);
  ASSERT_EQ(hb.kind, DataBinding::Kind::kMismatch);
  EXPECT_THAT(hb.reason,
              HasSubstr("(EV_SEPARATOR): sha1 digest " +
                        HexEncode(Filled(20, 0x5a)) + " is not H(event data)"));
  // A bank this code cannot hash proves nothing on its own.
  TcgEvent sm3 = MakeEvent(8, 7, kEvSeparator, Bytes(4, 0));
  sm3.digests = {{0x0012, Filled(32, 1)}};  // TPM_ALG_SM3_256
  EXPECT_EQ(CheckDataBinding(sm3).reason,
            "event 8 at offset 0x108 (EV_SEPARATOR): no digest in a bank this "
            "verifier can hash (sha1, sha256, sha384, sha512).");
}

// The attack of issue 12 item 15: the log of a machine booted with Secure
// Boot off, its SecureBoot byte set to 1 with the digests kept. Replay still
// matches (digests unchanged); the fact must not be taken from the data.
TEST(BootStateBindingTest, FlippedSecureBootIsUnknownNotEnabled) {
  const Bytes off = GlobalVariable(u"SecureBoot", Bytes{0});
  BootState s = ExtractBootState({EditedEvent(
      6, 7, kEvEfiVariableDriverConfig, off, VariableDataOffset(u"SecureBoot"),
      1)});
  EXPECT_FALSE(s.secure_boot.has_value());
  ASSERT_TRUE(s.unproven.contains("secure_boot"));
  EXPECT_THAT(s.unproven.at("secure_boot"),
              HasSubstr("event 6 at offset 0x106 "
                        "(EV_EFI_VARIABLE_DRIVER_CONFIG): sha256 digest "));
  EXPECT_THAT(s.warnings, IsEmpty());
  EXPECT_EQ(BootStateJson(s)["unproven"]["secure_boot"],
            s.unproven.at("secure_boot"));
  // The untouched event still says "disabled".
  EXPECT_EQ(ExtractBootState({MakeEvent(6, 7, kEvEfiVariableDriverConfig, off)})
                .secure_boot,
            std::optional<bool>(false));
  // Fail closed: one unbound SecureBoot event makes the fact unknown even
  // when a bound one says "enabled".
  BootState twice = ExtractBootState(
      {MakeEvent(5, 7, kEvEfiVariableDriverConfig,
                 GlobalVariable(u"SecureBoot", Bytes{1})),
       EditedEvent(6, 7, kEvEfiVariableDriverConfig, off,
                   VariableDataOffset(u"SecureBoot"), 1)});
  EXPECT_FALSE(twice.secure_boot.has_value());
}

TEST(BootStateBindingTest, VariableDataOnlyDigestLeavesTheFactUnknown) {
  // The value is proven, the name is not: another 1-byte variable holding
  // 01 could have been relabelled "SecureBoot".
  TcgEvent e = MakeEvent(3, 7, kEvEfiVariableDriverConfig,
                         GlobalVariable(u"SecureBoot", Bytes{1}));
  e.digests = {{kTpmAlgSha256, HashWith(kTpmAlgSha256, Bytes{1}).value()}};
  BootState s = ExtractBootState({e});
  EXPECT_FALSE(s.secure_boot.has_value());
  EXPECT_EQ(s.unproven.at("secure_boot"),
            "event 3 at offset 0x103 (EV_EFI_VARIABLE_DRIVER_CONFIG): only "
            "VariableData is bound (H(VariableData) (variable-data-only)); the "
            "variable's name and GUID are unproven.");
}

TEST(BootStateBindingTest, EditedKeyDatabasesAuthoritiesAndCmdlinesAreLeftOut) {
  // Signature lists of SHA-256 entries (no certificate needed).
  auto sha256_list = [](size_t n) {
    Builder b;
    b.U32(0xc1c41626)  // SignatureType: EFI_CERT_SHA256 c1c41626-
        .U16(0x504c)   // -504c-
        .U16(0x4092)   // -4092-
        .Raw(Bytes{0xac, 0xa9, 0x41, 0xf9, 0x36, 0x93, 0x43, 0x28})
        .U32(static_cast<uint32_t>(28 + n * 48))  // SignatureListSize
        .U32(0)                                   // SignatureHeaderSize
        .U32(48);                                 // SignatureSize
    for (size_t i = 0; i < n; ++i) {
      b.Fill(16, 0x01)                               // SignatureOwner
          .Fill(32, static_cast<uint8_t>(0x10 + i));  // SHA-256
    }
    return b.bytes();
  };
  const Bytes dbx = SecurityDbVariable(u"dbx", sha256_list(3));
  const Bytes db = SecurityDbVariable(u"db", sha256_list(2));
  const std::string cmdline = "kernel_cmdline: /vmlinuz ro lockdown=integrity";
  Bytes cmd(cmdline.begin(), cmdline.end());
  cmd.push_back(0);
  TcgEvent grub = MakeEvent(8, 8, kEvIpl, cmd);
  // grub hashes the text after the prefix, without the NUL.
  grub.digests = {
      {kTpmAlgSha256,
       HashWith(kTpmAlgSha256,
                AsBytes(std::string_view("/vmlinuz ro lockdown=integrity")))
           .value()}};
  TcgEvent edited_grub = grub;
  edited_grub.index = 9;
  edited_grub.offset = 0x109;
  edited_grub.data[cmdline.size() - 9] = 'X';  // "lockdown=" -> "lockdoXn="
  std::vector<TcgEvent> events = {
      MakeEvent(1, 7, kEvEfiVariableDriverConfig, db),
      // dbx with its last hash byte edited: dbx is unknown, not "3 entries".
      EditedEvent(2, 7, kEvEfiVariableDriverConfig, dbx, dbx.size() - 1, 0xee),
      EditedEvent(3, 7, kEvEfiVariableAuthority,
                  SecurityDbVariable(u"db", Filled(40, 7)), 40, 0x00),
      grub,
      edited_grub,
      EditedEvent(10, 12, kEvIpl, Utf16(u"console=hvc0"), 0, 'C'),
  };
  BootState s = ExtractBootState(events);
  EXPECT_EQ(s.db_hashes, 2u);  // bound
  EXPECT_EQ(s.dbx_entries, 0u);
  EXPECT_EQ(s.dbx_sha256, "");
  EXPECT_THAT(s.authorities, IsEmpty());
  EXPECT_THAT(s.kernel_cmdlines, ElementsAre("/vmlinuz ro lockdown=integrity"));
  EXPECT_THAT(s.unproven.at("dbx"),
              HasSubstr("event 2 at offset 0x102 "
                        "(EV_EFI_VARIABLE_DRIVER_CONFIG): sha256 digest"));
  EXPECT_THAT(s.unproven.at("authorities"),
              HasSubstr("event 3 at offset 0x103 (EV_EFI_VARIABLE_AUTHORITY)"));
  EXPECT_THAT(s.unproven.at("kernel_cmdlines"),
              HasSubstr("event 9 at offset 0x109 (EV_IPL): sha256 digest"));
  EXPECT_FALSE(s.unproven.contains("db"));
  EXPECT_FALSE(s.unproven.contains("secure_boot"));
}

// ---- real logs -------------------------------------------------------------

StatusOr<Bytes> ReadLog(const std::string& path) {
  return ReadFileLimited(path, 16u << 20);
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// Compares `r` with `<name>.expected-pcrs.json` on every PCR the log extends;
// returns the number of values compared.
size_t ExpectMatchesExpected(const EventLog& log, const ReplayResult& r,
                             const nlohmann::json& expected) {
  std::set<uint32_t> extended;
  for (const TcgEvent& e : log.events) {
    if (e.type != kEvNoAction) extended.insert(e.pcr);
  }
  size_t compared = 0;
  EXPECT_TRUE(expected.contains("pcrs") && expected["pcrs"].is_object());
  for (const auto& [bank_name, values] : expected["pcrs"].items()) {
    std::optional<uint16_t> alg = ParseHashAlgName(bank_name);
    if (!alg.has_value() || !r.pcrs.contains(*alg)) {
      ADD_FAILURE() << "bank " << bank_name << " not replayed";
      continue;
    }
    for (const auto& [index, hex] : values.items()) {
      const uint32_t pcr = static_cast<uint32_t>(std::stoul(index));
      if (!extended.contains(pcr)) continue;  // e.g. PCR 10 (IMA) of tpm12
      auto it = r.pcrs.at(*alg).find(pcr);
      if (it == r.pcrs.at(*alg).end()) {
        ADD_FAILURE() << bank_name << " PCR " << pcr << " not replayed";
        continue;
      }
      EXPECT_EQ(HexEncode(it->second), hex.get<std::string>())
          << bank_name << " PCR " << pcr;
      ++compared;
    }
  }
  // And nothing replayed that the expectation does not have.
  for (const auto& [alg, bank] : r.pcrs) {
    for (const auto& [pcr, value] : bank) {
      const std::string name = HashAlgName(alg);
      EXPECT_TRUE(expected["pcrs"].contains(name) &&
                  expected["pcrs"][name].contains(std::to_string(pcr)))
          << "replayed " << name << " PCR " << pcr << " is not expected";
    }
  }
  return compared;
}

std::vector<std::string> SharedLogNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(kSharedLogs, ec)) {
    if (entry.path().extension() == ".bin")
      names.push_back(entry.path().stem());
  }
  std::sort(names.begin(), names.end());
  return names;
}

#define SKIP_WITHOUT_SHARED_LOGS()                                   \
  if (!std::filesystem::is_directory(kSharedLogs)) {                 \
    GTEST_SKIP() << "shared event logs not found at " << kSharedLogs \
                 << " (the ../shared checkout is absent)";           \
  }

constexpr std::string_view kVendorDataLog = "t2t-specid-vendordata";

TEST(EventLogFixturesTest, EveryLogReplaysToItsExpectedPcrs) {
  SKIP_WITHOUT_SHARED_LOGS();
  const std::vector<std::string> names = SharedLogNames();
  ASSERT_GE(names.size(), 14u);  // 14 logs at the time of writing
  size_t logs = 0;
  for (const std::string& name : names) {
    if (name == kVendorDataLog) continue;  // rejected: see the next test
    SCOPED_TRACE(name);
    StatusOr<Bytes> raw = ReadLog(kSharedLogs + "/" + name + ".bin");
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    StatusOr<EventLog> log = ParseEventLog(*raw);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    nlohmann::json expected =
        ReadJson(kSharedLogs + "/" + name + ".expected-pcrs.json");
    ASSERT_FALSE(expected.is_discarded());
    EXPECT_GT(ExpectMatchesExpected(*log, ReplayEventLog(*log), expected), 0u);
    ++logs;
  }
  EXPECT_EQ(logs, names.size() - 1);
}

TEST(EventLogFixturesTest, FormatsOfTheRealLogs) {
  SKIP_WITHOUT_SHARED_LOGS();
  for (auto [name, format] :
       {std::pair{"gat-linux-tpm12", EventLogFormat::kSha1},
        std::pair{"t2t-event-uefi-sha1-log", EventLogFormat::kSha1},
        std::pair{"gat-crypto-agile", EventLogFormat::kCryptoAgile},
        std::pair{"tss-pc-client", EventLogFormat::kCryptoAgile}}) {
    StatusOr<EventLog> log =
        ParseEventLog(ReadLog(kSharedLogs + "/" + name + ".bin").value());
    ASSERT_TRUE(log.ok()) << name << ": " << log.status().ToString();
    EXPECT_EQ(log->format, format) << name;
  }
}

// Documented choice: the strict parser rejects this log (its Spec ID event's
// vendorInfoSize runs past the event; tpm2-tools accepts it by reading the
// next bytes as vendor data).
TEST(EventLogFixturesTest, SpecIdVendorDataIsRejectedPrecisely) {
  SKIP_WITHOUT_SHARED_LOGS();
  StatusOr<Bytes> raw = ReadLog(kSharedLogs + "/t2t-specid-vendordata.bin");
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  ExpectError(*raw, StatusCode::kInvalidArgument,
              "event 0 at offset 0x0: Spec ID vendorInfoSize 4 exceeds the 0 "
              "bytes left in the event.");
}

TEST(EventLogFixturesTest, ArchLinuxMismatchedEventStillReplaysItsDigest) {
  SKIP_WITHOUT_SHARED_LOGS();
  StatusOr<EventLog> log =
      ParseEventLog(ReadLog(kSharedLogs + "/t2t-event-arch-linux.bin").value());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_GT(log->events.size(), 24u);
  const TcgEvent& e = log->events[24];
  EXPECT_EQ(e.pcr, 8u);
  EXPECT_EQ(e.type, kEvIpl);
  // The digest is not the hash of the data...
  for (uint16_t alg : {kTpmAlgSha1, kTpmAlgSha256}) {
    ASSERT_NE(e.DigestFor(alg), nullptr);
    EXPECT_NE(HashWith(alg, e.data).value(), *e.DigestFor(alg))
        << HashAlgName(alg);
  }
  // ... and replay uses the digest: PCR 8 is that single extend, as expected.
  nlohmann::json expected =
      ReadJson(kSharedLogs + "/t2t-event-arch-linux.expected-pcrs.json");
  ReplayResult r = ReplayEventLog(*log);
  EXPECT_EQ(HexEncode(r.pcrs.at(kTpmAlgSha256).at(8)),
            expected["pcrs"]["sha256"]["8"].get<std::string>());
  EXPECT_EQ(r.pcrs.at(kTpmAlgSha256).at(8),
            Extend(kTpmAlgSha256, Bytes(32, 0), *e.DigestFor(kTpmAlgSha256)));
}

TEST(EventLogFixturesTest, BootStateOfRealLogsHasNoWarnings) {
  SKIP_WITHOUT_SHARED_LOGS();
  for (const std::string& name : SharedLogNames()) {
    if (name == kVendorDataLog) continue;
    StatusOr<EventLog> log =
        ParseEventLog(ReadLog(kSharedLogs + "/" + name + ".bin").value());
    ASSERT_TRUE(log.ok()) << name;
    BootState s = ExtractBootState(log->events);
    EXPECT_THAT(s.warnings, IsEmpty()) << name;
    nlohmann::json j = EventLogJson(*log, ReplayEventLog(*log));
    EXPECT_FALSE(j.dump().empty()) << name;  // valid UTF-8 throughout
  }
}

// Every event whose digest the PFP defines over its data binds in the real
// logs, under one of the named rules; the rules used are printed. The one
// exception is gat-linux-tpm12, whose (Lenovo-style) firmware hashes only
// VariableData of its PCR 7 variables: its Secure Boot facts are unproven.
TEST(EventLogFixturesTest, RealLogsBindTheirDataToTheirDigests) {
  SKIP_WITHOUT_SHARED_LOGS();
  std::map<std::string, size_t> rules;
  size_t bound = 0;
  for (const std::string& name : SharedLogNames()) {
    if (name == kVendorDataLog) continue;
    SCOPED_TRACE(name);
    StatusOr<EventLog> log =
        ParseEventLog(ReadLog(kSharedLogs + "/" + name + ".bin").value());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (const TcgEvent& e : log->events) {
      DataBinding b = CheckDataBinding(e);
      EXPECT_NE(b.kind, DataBinding::Kind::kMismatch) << b.reason;
      if (b.kind != DataBinding::Kind::kBound) continue;
      ++bound;
      ++rules[EventTypeName(e.type) + ": " + b.rule];
    }
    BootState s = ExtractBootState(log->events);
    if (name == "gat-linux-tpm12") {
      EXPECT_FALSE(s.secure_boot.has_value());
      EXPECT_THAT(s.unproven.at("secure_boot"),
                  HasSubstr("only VariableData is bound"));
    } else {
      EXPECT_THAT(s.unproven, IsEmpty());
    }
  }
  for (const auto& [rule, n] : rules) std::cout << n << "  " << rule << "\n";
  EXPECT_GT(bound, 300u);
  // Named rules the real firmware needs (docs/eventlog.md).
  EXPECT_TRUE(rules.contains(
      "EV_EFI_VARIABLE_BOOT: H(VariableData) (variable-data-only)"));
  EXPECT_TRUE(rules.contains("EV_EFI_VARIABLE_AUTHORITY: H(event data without "
                             "its last byte) (shim-extra-byte)"));
  EXPECT_TRUE(
      rules.contains("EV_IPL: H(event data + 00) (systemd-boot-odd-length)"));
  EXPECT_TRUE(rules.contains(
      "EV_IPL: H(text after \"kernel_cmdline: \") (grub)"));
}

TEST(EventLogFixturesTest, BootStateOfRealLogs) {
  SKIP_WITHOUT_SHARED_LOGS();
  auto state = [](const std::string& name) {
    return ExtractBootState(
        ParseEventLog(ReadLog(kSharedLogs + "/" + name + ".bin").value())
            .value()
            .events);
  };
  BootState mok = state("t2t-event-moklisttrusted");
  EXPECT_EQ(mok.secure_boot, std::optional<bool>(true));
  ASSERT_EQ(mok.authorities.size(), 2u);  // db cert for shim, shim's own cert
  EXPECT_THAT(mok.authorities[0].subject,
              HasSubstr("CN=Microsoft Corporation UEFI CA 2011"));
  EXPECT_THAT(mok.authorities[1].subject,
              HasSubstr("CN=Red Hat Secure Boot CA 5"));
  ASSERT_GE(mok.boot_applications.size(), 2u);
  EXPECT_EQ(mok.boot_applications[0].path, "\\EFI\\redhat\\shimx64.efi");
  EXPECT_EQ(mok.boot_applications[1].path, "\\EFI\\redhat\\grubx64.efi");
  EXPECT_EQ(mok.boot_applications[0].sha256.size(), 64u);
  ASSERT_EQ(mok.pk.size(), 1u);
  EXPECT_EQ(mok.pk[0].sha256.size(), 64u);
  EXPECT_EQ(mok.kek.size(), 2u);
  EXPECT_EQ(mok.db.size(), 2u);

  BootState agile = state("gat-crypto-agile");
  EXPECT_EQ(agile.secure_boot, std::optional<bool>(false));
  EXPECT_EQ(agile.dbx_entries, 77u);
  EXPECT_EQ(agile.pk.at(0).subject, "CN=Intel(R) Desktop Boards");

  // systemd-stub's UTF-16 command line in PCR 12 (logged twice there).
  EXPECT_THAT(state("t2t-event-sd-boot-fedora37").kernel_cmdlines,
              ElementsAre("console=ttyS0 console=tty0 efi=debug",
                          "console=ttyS0 console=tty0 efi=debug"));
  // systemd-boot's UTF-16 command line in PCR 8.
  BootState arch = state("t2t-event-arch-linux");
  ASSERT_EQ(arch.kernel_cmdlines.size(), 1u);
  EXPECT_THAT(arch.kernel_cmdlines[0],
              ::testing::StartsWith("initrd=\\intel-ucode.img "));
  // grub: "kernel_cmdline:" wins over "grub_cmd: linux".
  BootState postcode = state("t2t-event-postcode");
  ASSERT_EQ(postcode.kernel_cmdlines.size(), 1u);
  EXPECT_THAT(postcode.kernel_cmdlines[0],
              ::testing::StartsWith(
                  "/xcat/osimage/ubuntu18.04-x86_64-netboot-vgen/kernel "));
}

// ---- the project's simulated BlueField-3 fTPM boot
// -------------------------------

constexpr std::string_view kBf3Cmdline =
    "/vmlinuz-5.15.0-1035-bluefield "
    "root=UUID=4b3c2d1e-0f9a-4b8c-9d7e-6f5a4b3c2d1e "
    "ro console=hvc0 lockdown=integrity";

TEST(EventLogBf3FixtureTest, ReplayMatchesTheScriptsIndependentReplay) {
  StatusOr<Bytes> raw = ReadLog(kProjectLogs + "/bf3-ftpm-boot.bin");
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  StatusOr<EventLog> log = ParseEventLog(*raw);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->format, EventLogFormat::kCryptoAgile);
  EXPECT_THAT(log->algorithms, ElementsAre(SpecIdAlgorithm{kTpmAlgSha256, 32},
                                           SpecIdAlgorithm{kTpmAlgSha1, 20}));
  EXPECT_EQ(log->events.size(), 31u);
  ReplayResult r = ReplayEventLog(*log);
  EXPECT_EQ(r.startup_locality, std::optional<uint8_t>(0));
  EXPECT_FALSE(r.hcrtm);
  nlohmann::json expected =
      ReadJson(kProjectLogs + "/bf3-ftpm-boot.expected-pcrs.json");
  ASSERT_FALSE(expected.is_discarded());
  // PCRs 0-9 in both banks.
  EXPECT_EQ(ExpectMatchesExpected(*log, r, expected), 20u);
}

TEST(EventLogBf3FixtureTest, BootState) {
  StatusOr<EventLog> log =
      ParseEventLog(ReadLog(kProjectLogs + "/bf3-ftpm-boot.bin").value());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  BootState s = ExtractBootState(log->events);
  EXPECT_THAT(s.warnings, IsEmpty());
  EXPECT_THAT(s.unproven, IsEmpty());  // every fact bound to its digests
  EXPECT_EQ(s.secure_boot, std::optional<bool>(true));
  ASSERT_EQ(s.boot_applications.size(), 2u);
  EXPECT_EQ(s.boot_applications[0].path, "\\EFI\\ubuntu\\shimaa64.efi");
  EXPECT_EQ(s.boot_applications[0].event_index, 22u);
  EXPECT_EQ(s.boot_applications[0].sha256,
            HexEncode(*log->events[22].DigestFor(kTpmAlgSha256)));
  EXPECT_EQ(s.boot_applications[1].path, "\\EFI\\ubuntu\\grubaa64.efi");
  EXPECT_EQ(s.boot_applications[1].event_index, 24u);
  ASSERT_EQ(s.authorities.size(), 1u);
  EXPECT_EQ(s.authorities[0].subject, "CN=BlueField-3 test db,O=dpuaudit test");
  EXPECT_EQ(s.authorities[0].issuer, "CN=BlueField-3 test KEK,O=dpuaudit test");
  ASSERT_EQ(s.db.size(), 1u);
  EXPECT_EQ(s.db[0], s.authorities[0]);  // the same certificate, same hash
  ASSERT_EQ(s.pk.size(), 1u);
  EXPECT_EQ(s.pk[0].subject, "CN=BlueField-3 test PK,O=dpuaudit test");
  EXPECT_EQ(s.pk[0].issuer, s.pk[0].subject);
  ASSERT_EQ(s.kek.size(), 1u);
  EXPECT_EQ(s.kek[0].issuer, "CN=BlueField-3 test PK,O=dpuaudit test");
  EXPECT_EQ(s.db_hashes, 2u);
  EXPECT_EQ(s.dbx_entries, 3u);
  EXPECT_EQ(s.dbx_sha256.size(), 64u);
  EXPECT_THAT(s.kernel_cmdlines, ElementsAre(std::string(kBf3Cmdline)));
}

TEST(EventLogBf3FixtureTest, Descriptions) {
  EventLog log =
      ParseEventLog(ReadLog(kProjectLogs + "/bf3-ftpm-boot.bin").value())
          .value();
  EXPECT_EQ(EventDescription(log.events[0]), "Spec ID Event03: sha256, sha1");
  EXPECT_EQ(EventDescription(log.events[1]), "StartupLocality 0");
  EXPECT_EQ(EventDescription(log.events[2]), "BlueField-3 ROM 4.9.0");
  EXPECT_EQ(EventDescription(log.events[3]), "BL_2");
  EXPECT_EQ(EventDescription(log.events[5]), "UEFI");
  EXPECT_EQ(EventDescription(log.events[6]), "SecureBoot = 1");
  EXPECT_EQ(EventDescription(log.events[12]), "BootOrder: 0000");
  EXPECT_EQ(EventDescription(log.events[13]), "Boot0000: ubuntu0");
  EXPECT_EQ(EventDescription(log.events[15]), "");  // separator
  EXPECT_EQ(
      EventDescription(log.events[22]),
      "PciRoot(0x0)/Pci(0x0,0x0)/eMMC()/HD(1)/\\EFI\\ubuntu\\shimaa64.efi");
  EXPECT_EQ(EventDescription(log.events[27]), "/vmlinuz-5.15.0-1035-bluefield");
}

}  // namespace
}  // namespace dpuaudit::attest
