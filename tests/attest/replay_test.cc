// attest/replay.h: an untrusted event log against "verified" quote PCRs
// (built with QuotedPcrsTestPeer, no TPM needed).
#include "attest/replay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attest/quoted_pcrs_peer.h"
#include "common/files.h"

namespace dpuaudit::attest {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using Selection = std::map<uint16_t, std::set<uint32_t>>;

std::set<uint32_t> Range(uint32_t first, uint32_t last) {
  std::set<uint32_t> s;
  for (uint32_t i = first; i <= last; ++i) s.insert(i);
  return s;
}

Bytes Filled(size_t n, uint8_t v) { return Bytes(n, v); }

Bytes Extend(uint16_t alg, Bytes pcr, const Bytes& digest) {
  pcr.insert(pcr.end(), digest.begin(), digest.end());
  return HashWith(alg, pcr).value();
}

// An event with a digest per bank in `algs`, derived from `seed`.
TcgEvent Event(size_t index, uint32_t pcr, uint32_t type, uint8_t seed,
               const std::vector<uint16_t>& algs = {kTpmAlgSha256},
               Bytes data = {}) {
  TcgEvent e;
  e.index = index;
  e.offset = 0x40 * index;
  e.pcr = pcr;
  e.type = type;
  for (uint16_t alg : algs)
    e.digests.push_back({alg, Filled(*HashAlgDigestSize(alg), seed)});
  e.data = std::move(data);
  return e;
}

// An event whose digests are the hash of its data in every bank (as the
// PFP defines it for variable and string events).
TcgEvent BoundEvent(size_t index, uint32_t pcr, uint32_t type,
                    const std::vector<uint16_t>& algs, Bytes data) {
  TcgEvent e = Event(index, pcr, type, 0, algs, std::move(data));
  for (EventDigest& d : e.digests) d.digest = HashWith(d.alg, e.data).value();
  return e;
}

// UEFI_VARIABLE_DATA of SecureBoot (EFI_GLOBAL_VARIABLE) = `value`.
Bytes SecureBootVariable(uint8_t value) {
  Bytes b = {
      0x61, 0xdf, 0xe4, 0x8b, 0xca, 0x93, 0xd2, 0x11,  // VariableName GUID
      0xaa, 0x0d, 0x00, 0xe0, 0x98, 0x03, 0x2b, 0x8c};
  const uint8_t lengths[16] = {
      10, 0, 0, 0, 0, 0, 0, 0,   // UnicodeNameLength 10
      1,  0, 0, 0, 0, 0, 0, 0};  // VariableDataLength 1
  b.insert(b.end(), std::begin(lengths), std::end(lengths));
  for (char c : std::string_view("SecureBoot")) {  // UnicodeName, UTF-16LE
    b.push_back(static_cast<uint8_t>(c));
    b.push_back(0);
  }
  b.push_back(value);  // VariableData
  return b;
}

// A sha256 log: S-CRTM version (PCR 0), SecureBoot=1 (PCR 7), separators
// (0, 4, 7), a boot application (PCR 4), a grub command line (PCR 8) and a
// runtime-style PCR 12 event; optionally a StartupLocality event.
EventLog Log(std::optional<uint8_t> startup_locality = std::nullopt,
             std::vector<uint16_t> algs = {kTpmAlgSha256}) {
  EventLog log;
  log.format = EventLogFormat::kCryptoAgile;
  for (uint16_t alg : algs) {
    log.algorithms.push_back(
        {alg, static_cast<uint16_t>(*HashAlgDigestSize(alg))});
  }
  size_t i = 0;
  log.events.push_back(Event(i++, 0, kEvNoAction, 0, algs,
                             ToBytes("Spec ID Event03")));  // (content unused)
  if (startup_locality.has_value()) {
    Bytes d = ToBytes(std::string_view("StartupLocality\0", 16));
    d.push_back(*startup_locality);
    log.events.push_back(Event(i++, 0, kEvNoAction, 0, algs, d));
  }
  log.events.push_back(Event(i++, 0, kEvSCrtmVersion, 1, algs));
  log.events.push_back(BoundEvent(i++, 7, kEvEfiVariableDriverConfig, algs,
                                  SecureBootVariable(1)));
  log.events.push_back(Event(i++, 7, kEvSeparator, 3, algs, Bytes(4, 0)));
  log.events.push_back(Event(i++, 0, kEvSeparator, 3, algs, Bytes(4, 0)));
  log.events.push_back(Event(i++, 4, kEvSeparator, 3, algs, Bytes(4, 0)));
  log.events.push_back(Event(i++, 4, kEvEfiBootServicesApplication, 4, algs));
  log.events.push_back(BoundEvent(i++, 8, kEvIpl, algs,
                                  ToBytes("kernel_cmdline: /vmlinuz ro")));
  log.events.push_back(Event(i++, 12, kEvIpl, 6, algs));
  return log;
}

// The quote a TPM would give for `log` (replayed with `quirks`), over
// `selection`; unextended PCRs are zero.
QuotedPcrs QuoteFor(const EventLog& log, const Selection& selection,
                    const std::vector<ReplayQuirk>& quirks = {}) {
  ReplayResult r = ReplayEventLog(log, quirks);
  PcrBanks banks;
  for (const auto& [alg, pcrs] : selection) {
    for (uint32_t pcr : pcrs) {
      auto bank = r.pcrs.find(alg);
      if (bank != r.pcrs.end() && bank->second.contains(pcr)) {
        banks[alg][pcr] = bank->second.at(pcr);
      } else {
        banks[alg][pcr] = Bytes(*HashAlgDigestSize(alg), 0);
      }
    }
  }
  return QuotedPcrsTestPeer::Make(std::move(banks), selection);
}

std::vector<size_t> Indexes(const std::vector<TcgEvent>& events) {
  std::vector<size_t> out;
  for (const TcgEvent& e : events) out.push_back(e.index);
  return out;
}

TEST(ReplayAgainstQuoteTest, StrictMatch) {
  EventLog log = Log(/*startup_locality=*/0);
  const Selection sel = {{kTpmAlgSha256, Range(0, 15)}};
  StatusOr<VerifiedBootLog> v = ReplayAgainstQuote(log, QuoteFor(log, sel));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_THAT(v->quirks_applied(), IsEmpty());
  EXPECT_EQ(v->format(), EventLogFormat::kCryptoAgile);
  // 0-9 compared (extended or zero), 12 extended by the log; 10, 11, 13-15
  // are runtime PCRs the log does not describe.
  std::set<uint32_t> matched = Range(0, 9);
  matched.insert(12);
  EXPECT_EQ(v->matched().at(kTpmAlgSha256), matched);
  // Every extending event; EV_NO_ACTION (Spec ID, StartupLocality) dropped.
  EXPECT_THAT(Indexes(v->events()), ElementsAre(2, 3, 4, 5, 6, 7, 8, 9));
}

TEST(ReplayAgainstQuoteTest, MismatchNamesBankPcrAndBothValues) {
  EventLog log = Log(0);
  const Selection sel = {{kTpmAlgSha256, Range(0, 7)}};
  QuotedPcrs good = QuoteFor(log, sel);
  PcrBanks banks = good.banks();
  const Bytes replayed = banks[kTpmAlgSha256][4];
  banks[kTpmAlgSha256][4] = Filled(32, 0x9a);
  StatusOr<VerifiedBootLog> v =
      ReplayAgainstQuote(log, QuotedPcrsTestPeer::Make(banks, sel));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(v.status().message(), "sha256 PCR 4: log replays to " +
                                      HexEncode(replayed) + ", quote has " +
                                      HexEncode(Filled(32, 0x9a)) + ".");
}

TEST(ReplayAgainstQuoteTest, FirstMismatchInBankThenPcrOrder) {
  EventLog log = Log(0, {kTpmAlgSha1, kTpmAlgSha256});
  const Selection sel = {{kTpmAlgSha1, Range(0, 7)},
                         {kTpmAlgSha256, Range(0, 7)}};
  PcrBanks banks = QuoteFor(log, sel).banks();
  const Bytes sha1_pcr7 = banks[kTpmAlgSha1][7];
  banks[kTpmAlgSha256][0] = Filled(32, 1);
  banks[kTpmAlgSha1][7] = Filled(20, 2);
  StatusOr<VerifiedBootLog> v =
      ReplayAgainstQuote(log, QuotedPcrsTestPeer::Make(banks, sel));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(v.status().message(), "sha1 PCR 7: log replays to " +
                                      HexEncode(sha1_pcr7) + ", quote has " +
                                      HexEncode(Filled(20, 2)) + ".");
}

TEST(ReplayAgainstQuoteTest, UnloggedLocality3QuirkAppliedOnlyWhenStrictFails) {
  EventLog log = Log(std::nullopt);  // no StartupLocality event
  const Selection sel = {{kTpmAlgSha256, Range(0, 7)}};
  const std::vector<ReplayQuirk> quirk = {
      ReplayQuirk::kUnloggedStartupLocality3};
  // The TPM started at locality 3: PCR 0 began at 00..03.
  QuotedPcrs quote = QuoteFor(log, sel, quirk);
  StatusOr<VerifiedBootLog> v = ReplayAgainstQuote(log, quote);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_THAT(v->quirks_applied(),
              ElementsAre(ReplayQuirk::kUnloggedStartupLocality3));
  EXPECT_EQ(v->matched().at(kTpmAlgSha256), Range(0, 7));
  // Same log, a locality-0 quote: strict replay matches, no quirk.
  StatusOr<VerifiedBootLog> strict =
      ReplayAgainstQuote(log, QuoteFor(log, sel));
  ASSERT_TRUE(strict.ok()) << strict.status().ToString();
  EXPECT_THAT(strict->quirks_applied(), IsEmpty());
}

TEST(ReplayAgainstQuoteTest, QuirkDoesNotOverrideALoggedLocality) {
  // The log says locality 0; a quote whose PCR 0 started at 3 must fail,
  // with the strict mismatch.
  EventLog logged = Log(0);
  EventLog unlogged = Log(std::nullopt);
  const Selection sel = {{kTpmAlgSha256, Range(0, 7)}};
  QuotedPcrs quote =
      QuoteFor(unlogged, sel, {ReplayQuirk::kUnloggedStartupLocality3});
  StatusOr<VerifiedBootLog> v = ReplayAgainstQuote(logged, quote);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(v.status().message(),
            "sha256 PCR 0: log replays to " +
                HexEncode(ReplayEventLog(logged).pcrs.at(kTpmAlgSha256).at(0)) +
                ", quote has " +
                HexEncode(quote.banks().at(kTpmAlgSha256).at(0)) + ".");
}

TEST(ReplayAgainstQuoteTest, BankMissingFromTheLogIsAnError) {
  EventLog sha1_log = Log(0, {kTpmAlgSha1});
  sha1_log.format = EventLogFormat::kSha1;
  const Selection sel = {{kTpmAlgSha256, Range(0, 7)}};
  PcrBanks banks;
  for (uint32_t pcr : Range(0, 7)) banks[kTpmAlgSha256][pcr] = Bytes(32, 0);
  StatusOr<VerifiedBootLog> v =
      ReplayAgainstQuote(sha1_log, QuotedPcrsTestPeer::Make(banks, sel));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      v.status().message(),
      "the quote selects sha256 PCRs but the sha1 event log has no sha256 "
      "bank to replay.");
}

TEST(ReplayAgainstQuoteTest, EventsOfPcrsNotInTheQuoteAreDropped) {
  EventLog log = Log(0);
  const Selection sel = {{kTpmAlgSha256, Range(0, 7)}};  // not 8, not 12
  StatusOr<VerifiedBootLog> v = ReplayAgainstQuote(log, QuoteFor(log, sel));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->matched().at(kTpmAlgSha256), Range(0, 7));
  for (const TcgEvent& e : v->events()) {
    EXPECT_LE(e.pcr, 7u) << "event " << e.index;
  }
  EXPECT_THAT(Indexes(v->events()), ElementsAre(2, 3, 4, 5, 6, 7));
}

TEST(ReplayAgainstQuoteTest, UnloggedNonZeroBootPcrIsAMismatch) {
  EventLog log = Log(0);
  const Selection sel = {{kTpmAlgSha256, Range(0, 16)}};
  PcrBanks banks = QuoteFor(log, sel).banks();
  // Runtime PCRs 10 and 16 may hold anything: not compared.
  banks[kTpmAlgSha256][10] = Filled(32, 0x10);
  banks[kTpmAlgSha256][16] = Filled(32, 0x16);
  ASSERT_TRUE(
      ReplayAgainstQuote(log, QuotedPcrsTestPeer::Make(banks, sel)).ok());
  // PCR 5 is not in the log, so it must still be zero.
  banks[kTpmAlgSha256][5] = Filled(32, 0x55);
  StatusOr<VerifiedBootLog> v =
      ReplayAgainstQuote(log, QuotedPcrsTestPeer::Make(banks, sel));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(v.status().message(), "sha256 PCR 5: log replays to " +
                                      HexEncode(Bytes(32, 0)) + ", quote has " +
                                      HexEncode(Filled(32, 0x55)) + ".");
}

TEST(ReplayAgainstQuoteTest, RuntimePcrTheLogExtendsIsCompared) {
  EventLog log = Log(0);
  const Selection sel = {{kTpmAlgSha256, {0, 12}}};
  PcrBanks banks = QuoteFor(log, sel).banks();
  banks[kTpmAlgSha256][12] = Filled(32, 0x12);
  StatusOr<VerifiedBootLog> v =
      ReplayAgainstQuote(log, QuotedPcrsTestPeer::Make(banks, sel));
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(),
              ::testing::StartsWith("sha256 PCR 12: log replays to "));
}

TEST(ReplayAgainstQuoteTest, QuoteWithoutAValueForASelectedPcr) {
  EventLog log = Log(0);
  const Selection sel = {{kTpmAlgSha256, Range(0, 7)}};
  PcrBanks banks = QuoteFor(log, sel).banks();
  banks[kTpmAlgSha256].erase(3);
  StatusOr<VerifiedBootLog> v =
      ReplayAgainstQuote(log, QuotedPcrsTestPeer::Make(banks, sel));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(v.status().message(), "the quote has no value for sha256 PCR 3.");
}

TEST(DeriveBootStateTest, UsesOnlyVerifiedEvents) {
  EventLog log = Log(0);
  // PCR 7 (SecureBoot) is quoted, PCR 8 (the command line) is not.
  StatusOr<VerifiedBootLog> v =
      ReplayAgainstQuote(log, QuoteFor(log, {{kTpmAlgSha256, Range(0, 7)}}));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  BootState s = DeriveBootState(*v);
  EXPECT_EQ(s.secure_boot, std::optional<bool>(true));
  EXPECT_THAT(s.kernel_cmdlines, IsEmpty());
  // With PCR 8 quoted, the command line is verified and shows up.
  StatusOr<VerifiedBootLog> v8 =
      ReplayAgainstQuote(log, QuoteFor(log, {{kTpmAlgSha256, Range(0, 8)}}));
  ASSERT_TRUE(v8.ok()) << v8.status().ToString();
  EXPECT_THAT(DeriveBootState(*v8).kernel_cmdlines, ElementsAre("/vmlinuz ro"));
  // Without PCR 7 in the quote, SecureBoot is unknown, not "off".
  StatusOr<VerifiedBootLog> v0 =
      ReplayAgainstQuote(log, QuoteFor(log, {{kTpmAlgSha256, {0, 4, 8}}}));
  ASSERT_TRUE(v0.ok()) << v0.status().ToString();
  EXPECT_FALSE(DeriveBootState(*v0).secure_boot.has_value());
}

// Replay proves digests, not data: a log whose SecureBoot byte was edited
// after hashing (0 -> 1, digests kept) still replays to the quote, and the
// boot state derived from it says "unknown", never "enabled".
TEST(DeriveBootStateTest, EditedEventDataReplaysButItsFactIsUnproven) {
  EventLog log = Log(0, {kTpmAlgSha256, kTpmAlgSha1});
  size_t sb = 0;
  for (TcgEvent& e : log.events) {
    if (e.type != kEvEfiVariableDriverConfig) continue;
    sb = e.index;
    e.data.back() = 0;  // the honest boot: Secure Boot off
    for (EventDigest& d : e.digests) d.digest = HashWith(d.alg, e.data).value();
  }
  ASSERT_NE(sb, 0u);
  const QuotedPcrs quoted =
      QuoteFor(log, {{kTpmAlgSha256, Range(0, 9)}, {kTpmAlgSha1, Range(0, 9)}});
  log.events[sb].data.back() = 1;  // edited on the Arm OS
  StatusOr<VerifiedBootLog> v = ReplayAgainstQuote(log, quoted);
  ASSERT_TRUE(v.ok()) << v.status().ToString();  // digests unchanged
  BootState s = DeriveBootState(*v);
  EXPECT_FALSE(s.secure_boot.has_value());
  EXPECT_THAT(s.unproven.at("secure_boot"),
              ::testing::HasSubstr("event " + std::to_string(sb) +
                                   " at offset " ));
  EXPECT_THAT(s.unproven.at("secure_boot"),
              ::testing::HasSubstr("(EV_EFI_VARIABLE_DRIVER_CONFIG): sha256 "
                                   "digest "));
  EXPECT_THAT(s.kernel_cmdlines, ElementsAre("/vmlinuz ro"));  // still bound
}

TEST(ReplayAgainstQuoteTest, ProjectBf3FixtureAgainstItsExpectedPcrs) {
  const std::string dir = DPUAUDIT_SOURCE_DIR "/tests/fixtures/eventlogs";
  StatusOr<Bytes> raw = ReadFileLimited(dir + "/bf3-ftpm-boot.bin", 1 << 20);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  StatusOr<EventLog> log = ParseEventLog(*raw);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::ifstream in(dir + "/bf3-ftpm-boot.expected-pcrs.json");
  nlohmann::json expected = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(expected.is_discarded());
  // A quote of sha256 PCRs 0-9 with the script's values.
  PcrBanks banks;
  Selection sel;
  for (uint32_t pcr : Range(0, 9)) {
    banks[kTpmAlgSha256][pcr] =
        HexDecode(
            expected["pcrs"]["sha256"][std::to_string(pcr)].get<std::string>())
            .value();
    sel[kTpmAlgSha256].insert(pcr);
  }
  StatusOr<VerifiedBootLog> v =
      ReplayAgainstQuote(*log, QuotedPcrsTestPeer::Make(banks, sel));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_THAT(v->quirks_applied(), IsEmpty());
  EXPECT_EQ(v->events().size(), 29u);  // 31 minus Spec ID and StartupLocality
  BootState s = DeriveBootState(*v);
  EXPECT_EQ(s.secure_boot, std::optional<bool>(true));
  EXPECT_EQ(s.boot_applications.size(), 2u);
  EXPECT_EQ(s.authorities.size(), 1u);
  EXPECT_EQ(s.kernel_cmdlines.size(), 1u);
}

}  // namespace
}  // namespace dpuaudit::attest
