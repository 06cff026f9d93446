// Reference values, the appraisal: the refval.* findings (states, ranking,
// PSIDs, coherence of one unit, missing facts), the matched Arm release, the
// upgrade path and tpm.reference_values.
#include "verifier/refvals/appraisal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "verifier/refvals/test_releases.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using refvals_testing::kNow;
using refvals_testing::kAtf;
using refvals_testing::kUefi;
using refvals_testing::kBsp;
using refvals_testing::kOs;
using refvals_testing::kNic;
using refvals_testing::Hex;
using refvals_testing::MakeRelease;

// --- AppraiseReferenceValues
// ---------------------------------------------------------

FirmwareFacts GoodFacts() {
  FirmwareFacts f;
  f.model = "BlueField-3";
  f.psid = "MT_0000000884";
  f.atf = kAtf;
  f.uefi = kUefi;
  f.bsp = kBsp;
  f.os_release = kOs;
  f.nic_fw = kNic;
  f.nic_source = "flint -d /dev/mst/mt41692_pciconf0 q full";
  f.boot_stream = std::vector<FirmwareFacts::Image>{{"bl2", Hex('1'), 0},
                                                    {"bl31", Hex('3'), 0x1a0}};
  f.boot_stream_source = "boot partition /dev/mmcblk0boot1";
  f.os_artefacts = std::vector<FirmwareFacts::Artefact>{
      {"kernel", "/boot/vmlinuz-5.15.0-1035-bluefield", Hex('5')},
      {"shim", "/boot/efi/EFI/ubuntu/shimaa64.efi", Hex('7')}};
  return f;
}

std::vector<RefValue> AllGoodValues() {
  return {{"atf", kAtf, "", ""},          {"uefi", kUefi, "", ""},
          {"bsp", kBsp, "", ""},          {"os", kOs, "", ""},
          {"nic-fw", kNic, "", ""},       {"bfb:bl2", "", Hex('1'), ""},
          {"bfb:bl31", "", Hex('3'), ""}, {"os:kernel", "", Hex('5'), ""},
          {"os:shim", "", Hex('7'), ""}};
}

// By value: callers pass temporaries.
Finding ById(const std::vector<Finding>& v, std::string_view id) {
  for (const Finding& f : v) {
    if (f.id == id) return f;
  }
  ADD_FAILURE() << "no finding " << id;
  return Finding{};
}

TEST(AppraiseReferenceValuesTest, RuleIdsAndObservedValues) {
  EXPECT_EQ(RefRuleIds(), (std::vector<std::string_view>{
                              "refval.arm_firmware", "refval.os_release",
                              "refval.nic_firmware", "refval.boot_stream",
                              "refval.os_boot", "refval.upgrade_path"}));
  EXPECT_EQ(std::size(kRefObservedValues), 7u);
  EXPECT_EQ(kRefObservedValues[6], "mixed");
}

TEST(AppraiseReferenceValuesTest, AllActivePassesInRuleOrder) {
  RefIndex index({MakeRelease("bf-bundle-2.9.1-40", RefState::kActive,
                              AllGoodValues(), {"MT_0000000884"})});
  std::vector<Finding> got = AppraiseReferenceValues(GoodFacts(), index, kNow);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, RefRuleIds()[i]);
    EXPECT_EQ(got[i].verdict, Verdict::kPass) << got[i].id << got[i].reason;
    EXPECT_EQ(got[i].observed, "active");
    EXPECT_EQ(got[i].expected, "active");
    EXPECT_EQ(got[i].evidence_id, "");
    EXPECT_THAT(got[i].reason, HasSubstr("matches release bf-bundle-2.9.1-40"));
  }
  EXPECT_EQ(got[0].source, "bfver");
  EXPECT_EQ(got[1].source, "bfver");
  EXPECT_EQ(got[2].source, "flint -d /dev/mst/mt41692_pciconf0 q full");
  EXPECT_EQ(got[3].source, "boot partition /dev/mmcblk0boot1");
  EXPECT_EQ(got[4].source, "os boot artefacts");
  EXPECT_EQ(got[0].reason,
            "atf v2.2(release):4.9.1-21-gfc25b08d9 matches release "
            "bf-bundle-2.9.1-40 (active by alice at 1970-01-01T00:16:50Z: go); "
            "uefi 4.9.1-36-g0c3239837a matches release bf-bundle-2.9.1-40 "
            "(active by alice at 1970-01-01T00:16:50Z: go); bsp 4.9.1.13442 "
            "matches release bf-bundle-2.9.1-40 (active by alice at "
            "1970-01-01T00:16:50Z: go).");
  EXPECT_EQ(got[3].reason,
            "bfb:bl2 sha384 1111111111111111... at offset 0x0 matches release "
            "bf-bundle-2.9.1-40 (active by alice at 1970-01-01T00:16:50Z: go); "
            "bfb:bl31 sha384 3333333333333333... at offset 0x1a0 matches "
            "release bf-bundle-2.9.1-40 (active by alice at "
            "1970-01-01T00:16:50Z: go).");
}

TEST(AppraiseReferenceValuesTest, RevokedReleaseFailsWithTheApprovalRecord) {
  RefIndex index(
      {MakeRelease("bf-bundle-2.9.1-40", RefState::kRevoked, AllGoodValues())});
  std::vector<Finding> got = AppraiseReferenceValues(GoodFacts(), index, kNow);
  Finding arm = ById(got, "refval.arm_firmware");
  EXPECT_EQ(arm.verdict, Verdict::kFail);
  EXPECT_EQ(arm.observed, "revoked");
  EXPECT_EQ(arm.reason,
            "atf v2.2(release):4.9.1-21-gfc25b08d9 matches release "
            "bf-bundle-2.9.1-40 (revoked by bob at 2026-11-30T10:00:00Z: "
            "CVE-2026-1234); uefi 4.9.1-36-g0c3239837a matches release "
            "bf-bundle-2.9.1-40 (revoked by bob at 2026-11-30T10:00:00Z: "
            "CVE-2026-1234); bsp 4.9.1.13442 matches release "
            "bf-bundle-2.9.1-40 (revoked by bob at 2026-11-30T10:00:00Z: "
            "CVE-2026-1234).");
  for (const Finding& f : got) {
    EXPECT_EQ(f.verdict, Verdict::kFail) << f.id;
    EXPECT_EQ(f.observed, "revoked") << f.id;
  }
}

TEST(AppraiseReferenceValuesTest, EachNonActiveStateFails) {
  for (RefState s : {RefState::kPending, RefState::kObsolete}) {
    RefIndex index({MakeRelease("r", s, AllGoodValues())});
    std::vector<Finding> got =
        AppraiseReferenceValues(GoodFacts(), index, kNow);
    for (const Finding& f : got) {
      EXPECT_EQ(f.verdict, Verdict::kFail) << f.id;
      EXPECT_EQ(f.observed, RefStateName(s)) << f.id;
    }
  }
}

TEST(AppraiseReferenceValuesTest, ExpiredReleaseFails) {
  RefRelease r = MakeRelease("r", RefState::kActive, AllGoodValues());
  r.expires_at = kNow - 1;
  RefIndex index({r});
  Finding nic = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                     "refval.nic_firmware");
  EXPECT_EQ(nic.verdict, Verdict::kFail);
  EXPECT_EQ(nic.observed, "expired");
  EXPECT_EQ(nic.reason,
            "nic-fw 32.43.1008 (PSID MT_0000000884) matches release r "
            "(expired at 2027-01-15T07:59:59Z, was active).");
  // One second earlier the same release still passes.
  Finding before = ById(AppraiseReferenceValues(GoodFacts(), index, kNow - 2),
                        "refval.nic_firmware");
  EXPECT_EQ(before.verdict, Verdict::kPass);
}

TEST(AppraiseReferenceValuesTest, WorstComponentWinsWithinARule) {
  // atf active, uefi only in an obsolete release, bsp only pending; "a"
  // declares the other two compatible (without that it is a mix).
  RefRelease a = MakeRelease("a", RefState::kActive, {{"atf", kAtf, "", ""}});
  a.compatible_with = {"o", "p"};
  RefIndex index(
      {a, MakeRelease("o", RefState::kObsolete, {{"uefi", kUefi, "", ""}}),
       MakeRelease("p", RefState::kPending, {{"bsp", kBsp, "", ""}})});
  Finding arm = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                     "refval.arm_firmware");
  EXPECT_EQ(arm.verdict, Verdict::kFail);
  EXPECT_EQ(arm.observed, "obsolete");
  EXPECT_THAT(arm.reason, HasSubstr("atf v2.2(release):4.9.1-21-gfc25b08d9 "
                                    "matches release a (active"));
  EXPECT_THAT(arm.reason, HasSubstr("uefi 4.9.1-36-g0c3239837a matches "
                                    "release o (obsolete by carol"));
  EXPECT_THAT(arm.reason,
              HasSubstr("bsp 4.9.1.13442 matches release p (pending by alice"));
}

TEST(AppraiseReferenceValuesTest, UnmatchedIsWorstOfAll) {
  RefIndex index({MakeRelease("rev", RefState::kRevoked,
                              {{"atf", kAtf, "", ""}, {"bsp", kBsp, "", ""}})});
  Finding arm = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                     "refval.arm_firmware");
  EXPECT_EQ(arm.verdict, Verdict::kFail);
  EXPECT_EQ(arm.observed, "unmatched");
  EXPECT_THAT(arm.reason, HasSubstr("; uefi 4.9.1-36-g0c3239837a has no "
                                    "reference value for BlueField-3; "));
}

TEST(AppraiseReferenceValuesTest, BestReleaseWinsForOneComponent) {
  RefIndex index(
      {MakeRelease("old", RefState::kRevoked, {{"os", kOs, "", ""}}, {}, 1000),
       MakeRelease("cur", RefState::kActive, {{"os", kOs, "", ""}}, {}, 2000),
       MakeRelease("new", RefState::kPending, {{"os", kOs, "", ""}}, {},
                   3000)});
  Finding os = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                    "refval.os_release");
  EXPECT_EQ(os.verdict, Verdict::kPass);
  EXPECT_EQ(os.observed, "active");
  EXPECT_EQ(os.reason,
            "os bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod matches release cur "
            "(active by alice at 1970-01-01T00:33:30Z: go), the best of 3 "
            "matching releases.");
}

TEST(AppraiseReferenceValuesTest, OtherModelDoesNotMatch) {
  RefRelease r = MakeRelease("bf2", RefState::kActive, AllGoodValues());
  r.model = "BlueField-2";
  RefIndex index({r});
  for (const Finding& f : AppraiseReferenceValues(GoodFacts(), index, kNow)) {
    EXPECT_EQ(f.verdict, Verdict::kFail) << f.id;
    EXPECT_EQ(f.observed, "unmatched") << f.id;
    EXPECT_THAT(f.reason, HasSubstr("has no reference value for BlueField-3"));
  }
}

TEST(AppraiseReferenceValuesTest, NicFirmwareNeedsTheListedPsid) {
  RefIndex index(
      {MakeRelease("r", RefState::kActive, {{"nic-fw", kNic, "", ""}},
                   {"MT_0000000884", "MT_0000001010"})});
  FirmwareFacts facts = GoodFacts();
  EXPECT_EQ(
      ById(AppraiseReferenceValues(facts, index, kNow), "refval.nic_firmware")
          .verdict,
      Verdict::kPass);

  facts.psid = "MT_0000000768";
  Finding wrong =
      ById(AppraiseReferenceValues(facts, index, kNow), "refval.nic_firmware");
  EXPECT_EQ(wrong.verdict, Verdict::kFail);
  EXPECT_EQ(wrong.observed, "unmatched");
  EXPECT_EQ(wrong.reason,
            "nic-fw 32.43.1008 (PSID MT_0000000768) has no reference value for "
            "BlueField-3 PSID MT_0000000768 (release r lists it for "
            "MT_0000000884, MT_0000001010).");

  facts.psid = "";
  Finding unknown =
      ById(AppraiseReferenceValues(facts, index, kNow), "refval.nic_firmware");
  EXPECT_EQ(unknown.verdict, Verdict::kUnknown);
  EXPECT_EQ(unknown.observed, "");
  EXPECT_EQ(unknown.reason,
            "nic-fw 32.43.1008 has a reference value only for specific PSIDs "
            "(release r lists it for MT_0000000884, MT_0000001010) and the "
            "device PSID is unknown.");
}

TEST(AppraiseReferenceValuesTest, NicFirmwareVersionMismatchFails) {
  RefIndex index({MakeRelease("r", RefState::kActive,
                              {{"nic-fw", "32.43.1009", "", ""}})});
  Finding nic = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                     "refval.nic_firmware");
  EXPECT_EQ(nic.verdict, Verdict::kFail);
  EXPECT_EQ(nic.observed, "unmatched");
  EXPECT_EQ(nic.reason,
            "nic-fw 32.43.1008 (PSID MT_0000000884) has no reference value for "
            "BlueField-3.");
}

TEST(AppraiseReferenceValuesTest, BootStreamMatchesEveryImageByDigest) {
  RefIndex upper({MakeRelease(
      "r", RefState::kActive,
      {{"bfb:bl2", "", Hex('c'), ""}, {"bfb:bl31", "", Hex('3'), ""}})});
  FirmwareFacts facts = GoodFacts();
  // Upper-case hex from a source still matches.
  (*facts.boot_stream)[0].sha384 = Hex('C');
  EXPECT_EQ(
      ById(AppraiseReferenceValues(facts, upper, kNow), "refval.boot_stream")
          .verdict,
      Verdict::kPass);

  RefIndex index({MakeRelease("r", RefState::kActive, AllGoodValues())});

  // One image changed: unmatched; an unknown image id never matches.
  facts = GoodFacts();
  (*facts.boot_stream)[1].sha384 = Hex('4');
  facts.boot_stream->push_back({"unknown-77", Hex('9'), 0x2000});
  Finding boot =
      ById(AppraiseReferenceValues(facts, index, kNow), "refval.boot_stream");
  EXPECT_EQ(boot.verdict, Verdict::kFail);
  EXPECT_EQ(boot.observed, "unmatched");
  EXPECT_THAT(boot.reason,
              HasSubstr("bfb:bl31 sha384 4444444444444444... at offset 0x1a0 "
                        "has no reference value for BlueField-3"));
  EXPECT_THAT(boot.reason,
              HasSubstr("bfb:unknown-77 sha384 9999999999999999... at offset "
                        "0x2000 is not a known component, so no reference "
                        "value can match it."));
  EXPECT_THAT(boot.reason, HasSubstr("bfb:bl2 sha384 1111111111111111... at "
                                     "offset 0x0 matches release r"));
}

TEST(AppraiseReferenceValuesTest, BootStreamDigestOfAnotherImageDoesNotMatch) {
  RefIndex index({MakeRelease(
      "r", RefState::kActive,
      {{"bfb:bl2", "", Hex('1'), ""}, {"bfb:bl33", "", Hex('3'), ""}})});
  Finding boot = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                      "refval.boot_stream");
  EXPECT_EQ(boot.verdict, Verdict::kFail);  // bl31's digest is listed as bl33
  EXPECT_EQ(boot.observed, "unmatched");
}

// --- Coherence: one unit, one release (or one declared compatibility set) --

constexpr const char* kGo = "active by alice at 1970-01-01T00:16:50Z: go";
constexpr const char* kRevokedDetail =
    "revoked by bob at 2026-11-30T10:00:00Z: CVE-2026-1234";

RefRelease Compatible(RefRelease r, std::vector<std::string> with) {
  r.compatible_with = std::move(with);
  return r;
}

TEST(AppraiseReferenceValuesTest, BootStreamFromTwoReleasesIsMixed) {
  // Each image is the exact image of an active release, but bl2 is release
  // a's and bl31 release b's: matched image by image this passed.
  RefIndex index(
      {MakeRelease("a", RefState::kActive, {{"bfb:bl2", "", Hex('1'), ""}}),
       MakeRelease("b", RefState::kActive, {{"bfb:bl31", "", Hex('3'), ""}})});
  Finding boot = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                      "refval.boot_stream");
  EXPECT_EQ(boot.verdict, Verdict::kFail);
  EXPECT_EQ(boot.observed, "mixed");
  EXPECT_EQ(boot.expected, "active");
  EXPECT_EQ(boot.reason,
            std::string("bfb:bl2 sha384 1111111111111111... at offset 0x0 "
                        "matches release a (") +
                kGo +
                "); bfb:bl31 sha384 3333333333333333... at offset 0x1a0 "
                "matches release b (" +
                kGo +
                "); the boot stream mixes releases: no release or declared "
                "compatibility set holds all 2 matched images (release a "
                "holds bfb:bl2; release b holds bfb:bl31).");
}

TEST(AppraiseReferenceValuesTest, DeclaredCompatibilitySetAdmitsTheMix) {
  RefRelease a =
      MakeRelease("a", RefState::kActive, {{"bfb:bl2", "", Hex('1'), ""}});
  RefRelease b =
      MakeRelease("b", RefState::kActive, {{"bfb:bl31", "", Hex('3'), ""}});
  // Either side may declare it.
  for (const auto& [x, y, by] :
       {std::tuple(a, Compatible(b, {"a"}), "b"),
        std::tuple(Compatible(a, {"b"}), b, "a")}) {
    RefIndex index({x, y});
    Finding boot = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                        "refval.boot_stream");
    EXPECT_EQ(boot.verdict, Verdict::kPass) << boot.reason;
    EXPECT_EQ(boot.observed, "active");
    EXPECT_THAT(boot.reason,
                HasSubstr(std::string("; the boot stream combines releases "
                                      "that release ") +
                          by + " (" + kGo +
                          ") declares compatible: release a holds bfb:bl2; "
                          "release b holds bfb:bl31."));
  }
  // A label that is no stored release declares nothing.
  RefIndex unknown({a, Compatible(b, {"zzz"})});
  EXPECT_EQ(ById(AppraiseReferenceValues(GoodFacts(), unknown, kNow),
                 "refval.boot_stream")
                .observed,
            "mixed");
}

TEST(AppraiseReferenceValuesTest, CompatibilityIsNotTransitive) {
  FirmwareFacts facts = GoodFacts();
  facts.boot_stream->push_back({"bl33", Hex('8'), 0x4000});
  RefRelease a =
      MakeRelease("a", RefState::kActive, {{"bfb:bl2", "", Hex('1'), ""}});
  RefRelease b =
      MakeRelease("b", RefState::kActive, {{"bfb:bl31", "", Hex('3'), ""}});
  RefRelease c =
      MakeRelease("c", RefState::kActive, {{"bfb:bl33", "", Hex('8'), ""}});
  // a~b and b~c do not make a~c: no one set holds all three.
  RefIndex chain({Compatible(a, {"b"}), Compatible(b, {"c"}), c});
  Finding boot =
      ById(AppraiseReferenceValues(facts, chain, kNow), "refval.boot_stream");
  EXPECT_EQ(boot.observed, "mixed");
  EXPECT_THAT(boot.reason,
              HasSubstr("holds all 3 matched images (release a holds bfb:bl2; "
                        "release b holds bfb:bl31; release c holds "
                        "bfb:bl33)."));
  RefIndex set({a, b, Compatible(c, {"a", "b"})});
  EXPECT_EQ(
      ById(AppraiseReferenceValues(facts, set, kNow), "refval.boot_stream")
          .observed,
      "active");
}

TEST(AppraiseReferenceValuesTest, CompatibilitySetIsOnlyAsGoodAsItsWorst) {
  RefRelease a =
      MakeRelease("a", RefState::kActive, {{"bfb:bl2", "", Hex('1'), ""}});
  RefRelease b =
      MakeRelease("b", RefState::kActive, {{"bfb:bl31", "", Hex('3'), ""}});
  struct Case {
    std::vector<RefRelease> releases;
    std::string observed;
  };
  RefRelease old_a =
      MakeRelease("a", RefState::kObsolete, {{"bfb:bl2", "", Hex('1'), ""}});
  // The declaring release's own state counts even when it holds no image.
  RefRelease pending_x = Compatible(
      MakeRelease("x", RefState::kPending, {{"bfb:bl33", "", Hex('9'), ""}}),
      {"a", "b"});
  RefRelease revoked_x = Compatible(
      MakeRelease("x", RefState::kRevoked, {{"bfb:bl33", "", Hex('9'), ""}}),
      {"a", "b"});
  const Case kCases[] = {
      {{old_a, Compatible(b, {"a"})}, "obsolete"},
      {{a, b, pending_x}, "pending"},
      {{a, b, revoked_x}, "revoked"},
  };
  for (const Case& c : kCases) {
    RefIndex index(c.releases);
    Finding boot = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                        "refval.boot_stream");
    EXPECT_EQ(boot.verdict, Verdict::kFail) << c.observed;
    EXPECT_EQ(boot.observed, c.observed) << boot.reason;
  }
  RefIndex index({a, b, revoked_x});
  EXPECT_THAT(ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                   "refval.boot_stream")
                  .reason,
              HasSubstr(std::string("; the boot stream combines releases that "
                                    "release x (") +
                        kRevokedDetail +
                        ") declares compatible: release a holds bfb:bl2; "
                        "release b holds bfb:bl31."));
}

TEST(AppraiseReferenceValuesTest, ReleaseHoldingEveryImageDecidesTheState) {
  // Image by image the best match is active (a, c), but the only release
  // holding both images is b, which is revoked.
  RefIndex index(
      {MakeRelease("a", RefState::kActive, {{"bfb:bl2", "", Hex('1'), ""}}),
       MakeRelease("b", RefState::kRevoked,
                   {{"bfb:bl2", "", Hex('1'), ""},
                    {"bfb:bl31", "", Hex('3'), ""}}),
       MakeRelease("c", RefState::kActive, {{"bfb:bl31", "", Hex('3'), ""}})});
  Finding boot = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                      "refval.boot_stream");
  EXPECT_EQ(boot.verdict, Verdict::kFail);
  EXPECT_EQ(boot.observed, "revoked");
  EXPECT_THAT(boot.reason, HasSubstr("matches release a ("));
  EXPECT_THAT(boot.reason,
              HasSubstr(std::string("; all 2 matched images come from "
                                    "release b (") +
                        kRevokedDetail + ")."));
}

TEST(AppraiseReferenceValuesTest, MixIsWorseThanAnUnmatchedImage) {
  FirmwareFacts facts = GoodFacts();
  facts.boot_stream->push_back({"bl33", Hex('8'), 0x4000});  // in no release
  RefIndex mixed(
      {MakeRelease("a", RefState::kActive, {{"bfb:bl2", "", Hex('1'), ""}}),
       MakeRelease("b", RefState::kActive, {{"bfb:bl31", "", Hex('3'), ""}})});
  Finding boot =
      ById(AppraiseReferenceValues(facts, mixed, kNow), "refval.boot_stream");
  EXPECT_EQ(boot.observed, "mixed");
  EXPECT_THAT(boot.reason,
              HasSubstr("bfb:bl33 sha384 8888888888888888... at offset 0x4000 "
                        "has no reference value for BlueField-3; the boot "
                        "stream mixes releases: no release or declared "
                        "compatibility set holds all 2 matched images "
                        "(release a holds bfb:bl2; release b holds "
                        "bfb:bl31)."));
  // One release and an unknown image: unmatched, not a mix.
  RefIndex one({MakeRelease("a", RefState::kActive,
                            {{"bfb:bl2", "", Hex('1'), ""},
                             {"bfb:bl31", "", Hex('3'), ""}})});
  Finding partial =
      ById(AppraiseReferenceValues(facts, one, kNow), "refval.boot_stream");
  EXPECT_EQ(partial.observed, "unmatched");
  EXPECT_THAT(partial.reason, Not(HasSubstr("mixes")));
}

TEST(AppraiseReferenceValuesTest, ArmFirmwareAndOsBootFromTwoReleasesAreMixed) {
  RefIndex index({MakeRelease("a", RefState::kActive,
                              {{"atf", kAtf, "", ""},
                               {"bsp", kBsp, "", ""},
                               {"os:kernel", "", Hex('5'), ""}}),
                  MakeRelease("b", RefState::kActive,
                              {{"uefi", kUefi, "", ""},
                               {"os:shim", "", Hex('7'), ""}})});
  std::vector<Finding> got = AppraiseReferenceValues(GoodFacts(), index, kNow);
  Finding arm = ById(got, "refval.arm_firmware");
  EXPECT_EQ(arm.verdict, Verdict::kFail);
  EXPECT_EQ(arm.observed, "mixed");
  EXPECT_THAT(arm.reason,
              HasSubstr("; the Arm firmware mixes releases: no release or "
                        "declared compatibility set holds all 3 matched "
                        "components (release a holds atf, bsp; release b "
                        "holds uefi)."));
  Finding os = ById(got, "refval.os_boot");
  EXPECT_EQ(os.verdict, Verdict::kFail);
  EXPECT_EQ(os.observed, "mixed");
  EXPECT_THAT(os.reason,
              HasSubstr("; the OS boot chain mixes releases: no release or "
                        "declared compatibility set holds all 2 matched "
                        "artefacts (release a holds os:kernel; release b "
                        "holds os:shim)."));
  EXPECT_EQ(MatchedArmRelease(GoodFacts(), index, kNow), "");
}

TEST(AppraiseReferenceValuesTest, CoherenceIsPerRuleNotAcrossRules) {
  // NIC firmware and OS release from another release than the Arm firmware,
  // boot stream and OS boot chain: each rule is one unit of its own.
  std::vector<RefValue> most;
  std::vector<RefValue> rest;
  for (const RefValue& v : AllGoodValues()) {
    (v.component == "nic-fw" || v.component == "os" ? rest : most).push_back(v);
  }
  RefIndex index({MakeRelease("a", RefState::kActive, most),
                  MakeRelease("b", RefState::kActive, rest)});
  for (const Finding& f : AppraiseReferenceValues(GoodFacts(), index, kNow)) {
    EXPECT_EQ(f.observed, "active") << f.id << ": " << f.reason;
  }
}

TEST(MatchedArmReleaseTest, ACompatibilitySetNamesTheDeclaringRelease) {
  RefRelease a = MakeRelease("a", RefState::kActive,
                             {{"atf", kAtf, "", ""}, {"bsp", kBsp, "", ""}});
  RefRelease b = MakeRelease("b", RefState::kActive, {{"uefi", kUefi, "", ""}});
  RefIndex index({a, Compatible(b, {"a"})});
  EXPECT_EQ(MatchedArmRelease(GoodFacts(), index, kNow), "b");
  Finding arm = ById(AppraiseReferenceValues(GoodFacts(), index, kNow),
                     "refval.arm_firmware");
  EXPECT_EQ(arm.observed, "active");
  // A single release holding all three is preferred to a set at equal state.
  RefRelease full = MakeRelease("full", RefState::kActive, AllGoodValues());
  RefIndex both({a, Compatible(b, {"a"}), full});
  EXPECT_EQ(MatchedArmRelease(GoodFacts(), both, kNow), "full");
}

TEST(AppraiseReferenceValuesTest, OsBootMatchesByRoleAndDigest) {
  RefIndex index({MakeRelease("r", RefState::kActive, AllGoodValues())});
  FirmwareFacts facts = GoodFacts();
  facts.os_artefacts->push_back(
      {"grub", "/boot/efi/EFI/ubuntu/grubaa64.efi", Hex('8')});
  Finding os =
      ById(AppraiseReferenceValues(facts, index, kNow), "refval.os_boot");
  EXPECT_EQ(os.verdict, Verdict::kFail);
  EXPECT_EQ(os.observed, "unmatched");
  EXPECT_THAT(os.reason,
              HasSubstr("os:kernel /boot/vmlinuz-5.15.0-1035-bluefield sha384 "
                        "5555555555555555... matches release r"));
  EXPECT_THAT(os.reason,
              HasSubstr("os:grub /boot/efi/EFI/ubuntu/grubaa64.efi sha384 "
                        "8888888888888888... has no reference value for "
                        "BlueField-3."));
}

TEST(AppraiseReferenceValuesTest, MissingFactsGiveUnknownWithTheError) {
  RefIndex index({MakeRelease("r", RefState::kActive, AllGoodValues())});
  FirmwareFacts facts = GoodFacts();
  facts.arm_error = "bfver: exit code 127 (not installed).";
  facts.atf.reset();
  facts.uefi.reset();
  facts.bsp.reset();
  facts.os_release.reset();
  facts.nic_error = "flint: HW access is disabled.";
  facts.nic_fw.reset();
  facts.boot_stream_error = "boot partition /dev/mmcblk0boot1: not readable.";
  facts.boot_stream.reset();
  facts.os_error = "no grub.cfg.";
  facts.os_artefacts.reset();
  std::vector<Finding> got = AppraiseReferenceValues(facts, index, kNow);
  ASSERT_EQ(got.size(), 5u);
  const char* kReasons[] = {
      "bfver: exit code 127 (not installed).",
      "bfver: exit code 127 (not installed).", "flint: HW access is disabled.",
      "boot partition /dev/mmcblk0boot1: not readable.", "no grub.cfg."};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, RefRuleIds()[i]);
    EXPECT_EQ(got[i].verdict, Verdict::kUnknown) << got[i].id;
    EXPECT_EQ(got[i].observed, "") << got[i].id;
    EXPECT_EQ(got[i].expected, "active") << got[i].id;
    EXPECT_EQ(got[i].reason, kReasons[i]) << got[i].id;
  }
}

TEST(AppraiseReferenceValuesTest, PartlyMissingFactsWithoutErrorSayWhat) {
  RefIndex index({MakeRelease("r", RefState::kActive, AllGoodValues())});
  FirmwareFacts facts = GoodFacts();
  facts.uefi.reset();
  facts.bsp.reset();
  facts.os_release.reset();
  facts.nic_fw.reset();
  facts.boot_stream = std::vector<FirmwareFacts::Image>{};
  facts.os_artefacts = std::vector<FirmwareFacts::Artefact>{};
  std::vector<Finding> got = AppraiseReferenceValues(facts, index, kNow);
  const char* kReasons[] = {"bfver reported no UEFI, BSP version.",
                            "bfver reported no OS release.",
                            "flint reported no FW Version.",
                            "the boot stream has no images to match.",
                            "no OS boot artefact was measured."};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].verdict, Verdict::kUnknown) << got[i].id;
    EXPECT_EQ(got[i].reason, kReasons[i]) << got[i].id;
  }
}

TEST(AppraiseReferenceValuesTest, EmptyVersionStringsCountAsMissing) {
  RefIndex index({MakeRelease("r", RefState::kActive, AllGoodValues())});
  FirmwareFacts facts = GoodFacts();
  facts.atf = "";
  facts.os_release = "";
  facts.nic_fw = "";
  std::vector<Finding> got = AppraiseReferenceValues(facts, index, kNow);
  EXPECT_EQ(got[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(got[0].reason, "bfver reported no ATF version.");
  EXPECT_EQ(got[1].verdict, Verdict::kUnknown);
  EXPECT_EQ(got[1].reason, "bfver reported no OS release.");
  EXPECT_EQ(got[2].verdict, Verdict::kUnknown);
  EXPECT_EQ(got[2].reason, "flint reported no FW Version.");
  EXPECT_EQ(MatchedArmRelease(facts, index, kNow), "");
}

TEST(AppraiseReferenceValuesTest, UnknownModelGivesUnknownEverywhere) {
  RefIndex index({MakeRelease("r", RefState::kActive, AllGoodValues())});
  FirmwareFacts facts = GoodFacts();
  facts.model = "";
  for (const Finding& f : AppraiseReferenceValues(facts, index, kNow)) {
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << f.id;
    EXPECT_EQ(f.reason,
              "the device model is unknown, so no reference values apply.");
  }
  facts.model = "BlueField-4";
  for (const Finding& f : AppraiseReferenceValues(facts, index, kNow)) {
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << f.id;
    EXPECT_EQ(f.reason,
              "the device model \"BlueField-4\" is not a known BlueField "
              "model, so no reference values apply.");
  }
  // An alias is fine.
  facts.model = "BF3";
  for (const Finding& f : AppraiseReferenceValues(facts, index, kNow)) {
    EXPECT_EQ(f.verdict, Verdict::kPass) << f.id;
  }
}

TEST(AppraiseReferenceValuesTest, EmptyIndexFailsNeverPasses) {
  for (const Finding& f :
       AppraiseReferenceValues(GoodFacts(), RefIndex(), kNow)) {
    EXPECT_EQ(f.verdict, Verdict::kFail) << f.id;
    EXPECT_EQ(f.observed, "unmatched") << f.id;
  }
}

TEST(AppraiseReferenceValuesTest, ControlBytesInDeviceValuesAreNotEchoed) {
  FirmwareFacts facts = GoodFacts();
  facts.os_release = std::string("evil\n\x1b[31mline");
  Finding os = ById(AppraiseReferenceValues(facts, RefIndex(), kNow),
                    "refval.os_release");
  EXPECT_EQ(os.reason,
            "os evil??[31mline has no reference value for BlueField-3.");
}

// --- MatchedArmRelease and the upgrade path
// --------------------------------------------

TEST(MatchedArmReleaseTest, NeedsAllThreeInOneRelease) {
  RefIndex index(
      {MakeRelease("atf-only", RefState::kActive, {{"atf", kAtf, "", ""}}),
       MakeRelease("uefi-bsp", RefState::kActive,
                   {{"uefi", kUefi, "", ""}, {"bsp", kBsp, "", ""}})});
  EXPECT_EQ(MatchedArmRelease(GoodFacts(), index, kNow), "");

  RefIndex full({MakeRelease("full", RefState::kActive, AllGoodValues())});
  EXPECT_EQ(MatchedArmRelease(GoodFacts(), full, kNow), "full");
  FirmwareFacts no_bsp = GoodFacts();
  no_bsp.bsp.reset();
  EXPECT_EQ(MatchedArmRelease(no_bsp, full, kNow), "");
  FirmwareFacts no_model = GoodFacts();
  no_model.model = "";
  EXPECT_EQ(MatchedArmRelease(no_model, full, kNow), "");
}

TEST(MatchedArmReleaseTest, BestStateWins) {
  RefIndex index(
      {MakeRelease("revoked", RefState::kRevoked, AllGoodValues(), {}, 5000),
       MakeRelease("obsolete", RefState::kObsolete, AllGoodValues(), {}, 1000),
       MakeRelease("pending", RefState::kPending, AllGoodValues(), {}, 3000)});
  EXPECT_EQ(MatchedArmRelease(GoodFacts(), index, kNow), "pending");
}

TEST(AppraiseUpgradePathTest, Cases) {
  RefRelease next =
      MakeRelease("bf-bundle-2.9.1-40", RefState::kActive, AllGoodValues());
  next.upgrade_from = {"bf-bundle-2.9.0-90"};
  RefRelease prev = MakeRelease("bf-bundle-2.9.0-90", RefState::kActive,
                                {{"atf", "v2.2(release):4.9.0-25", "", ""}});
  RefIndex index({next, prev});

  struct Case {
    const char* previous;
    const char* current;
    Verdict verdict;
    const char* observed;
    const char* reason;
  };
  const Case kCases[] = {
      {"", "bf-bundle-2.9.1-40", Verdict::kPass, "first-seen",
       "first release recorded for this node: bf-bundle-2.9.1-40."},
      {"bf-bundle-2.9.1-40", "bf-bundle-2.9.1-40", Verdict::kPass, "unchanged",
       "the node still runs release bf-bundle-2.9.1-40."},
      {"bf-bundle-2.9.0-90", "bf-bundle-2.9.1-40", Verdict::kPass, "allowed",
       "release bf-bundle-2.9.1-40 may be reached from bf-bundle-2.9.0-90 "
       "(its upgrade_from lists it)."},
      {"bf-bundle-2.9.1-40", "bf-bundle-2.9.0-90", Verdict::kFail,
       "not-allowed",
       "the node moved from bf-bundle-2.9.1-40 to bf-bundle-2.9.0-90, but "
       "bf-bundle-2.9.0-90 lists no release in upgrade_from."},
      {"bf-bundle-2.8.0-1", "bf-bundle-2.9.1-40", Verdict::kFail, "not-allowed",
       "the node moved from bf-bundle-2.8.0-1 to bf-bundle-2.9.1-40, but "
       "bf-bundle-2.9.1-40 lists only bf-bundle-2.9.0-90 in upgrade_from."},
      {"bf-bundle-2.9.0-90", "gone", Verdict::kFail, "not-allowed",
       "the node moved from bf-bundle-2.9.0-90 to gone, which is not a known "
       "reference release."},
      {"bf-bundle-2.9.0-90", "", Verdict::kUnknown, "",
       "the running Arm firmware (atf, uefi and bsp together) matches no "
       "reference release, so the upgrade path cannot be checked."},
  };
  for (const Case& c : kCases) {
    Finding f = AppraiseUpgradePath(c.previous, c.current, index);
    EXPECT_EQ(f.id, "refval.upgrade_path");
    EXPECT_EQ(f.expected, "unchanged|first-seen|allowed");
    EXPECT_EQ(f.verdict, c.verdict) << c.previous << " -> " << c.current;
    EXPECT_EQ(f.observed, c.observed) << c.previous << " -> " << c.current;
    EXPECT_EQ(f.reason, c.reason);
    EXPECT_FALSE(f.source.empty());
  }
}


// --- TPM reference values (step 8 of the TPM appraisal) ------------------------

RefValue Tpm(const std::string& component, char digit) {
  RefValue v;
  v.component = component;
  v.sha256 = std::string(64, digit);
  return v;
}

TpmFacts GoodTpmFacts() {
  TpmFacts f;
  f.model = "BlueField-3";
  f.sha256_pcrs = {{0, std::string(64, 'a')}, {7, std::string(64, 'b')},
                   {8, std::string(64, 'f')}};
  f.boot_apps = {{"\\EFI\\ubuntu\\shimaa64.efi", std::string(64, 'c')}};
  return f;
}

TEST(TpmRefvalsTest, PcrsAndBootApplicationsMatchAnActiveRelease) {
  RefIndex index({MakeRelease("golden", RefState::kActive,
                              {Tpm("tpm-pcr:0", 'a'), Tpm("tpm-pcr:7", 'b'),
                               Tpm("tpm-app", 'c')})});
  Finding f = AppraiseTpmReferenceValues(GoodTpmFacts(), index, 2000);
  EXPECT_EQ(f.id, "tpm.reference_values");
  EXPECT_EQ(f.verdict, Verdict::kPass) << f.reason;
  EXPECT_EQ(f.observed, "active");
  EXPECT_THAT(f.reason, HasSubstr("sha256 PCR 0 aaaaaaaaaaaaaaaa... matches release golden"));
  EXPECT_THAT(f.reason, HasSubstr("shimaa64.efi"));
  // PCR 8 is not named by any release, so it is not checked.
  EXPECT_THAT(f.reason, Not(HasSubstr("PCR 8")));
}

TEST(TpmRefvalsTest, AChangedPcrOrUnknownApplicationIsUnmatched) {
  RefIndex index({MakeRelease("golden", RefState::kActive,
                              {Tpm("tpm-pcr:7", 'b'), Tpm("tpm-app", 'c')})});
  TpmFacts pcr = GoodTpmFacts();
  pcr.sha256_pcrs[7] = std::string(64, '9');
  Finding f = AppraiseTpmReferenceValues(pcr, index, 2000);
  EXPECT_EQ(f.verdict, Verdict::kFail);
  EXPECT_EQ(f.observed, "unmatched");
  EXPECT_THAT(f.reason, HasSubstr("sha256 PCR 7 9999999999999999... has no reference value"));
  TpmFacts app = GoodTpmFacts();
  app.boot_apps.push_back({"\\EFI\\evil.efi", std::string(64, 'd')});
  Finding g = AppraiseTpmReferenceValues(app, index, 2000);
  EXPECT_EQ(g.observed, "unmatched");
  EXPECT_THAT(g.reason, HasSubstr("evil.efi"));
}

TEST(TpmRefvalsTest, LifecycleOfTheMatchingReleaseIsTheObservedValue) {
  RefIndex index({MakeRelease("old", RefState::kRevoked, {Tpm("tpm-app", 'c')})});
  Finding f = AppraiseTpmReferenceValues(GoodTpmFacts(), index, 2000);
  EXPECT_EQ(f.observed, "revoked");
  EXPECT_THAT(f.reason, HasSubstr("CVE-2026-1234"));
}

TEST(TpmRefvalsTest, UnknownWithoutValuesOrWithAnUnquotedPcr) {
  RefIndex none({MakeRelease("fw", RefState::kActive, {{"atf", kAtf, "", ""}})});
  Finding f = AppraiseTpmReferenceValues(GoodTpmFacts(), none, 2000);
  EXPECT_EQ(f.verdict, Verdict::kUnknown);
  EXPECT_EQ(f.reason, "no tpm-pcr or tpm-app reference values for BlueField-3");
  RefIndex pcr12({MakeRelease("g", RefState::kActive, {Tpm("tpm-pcr:12", 'e')})});
  Finding g = AppraiseTpmReferenceValues(GoodTpmFacts(), pcr12, 2000);
  EXPECT_EQ(g.verdict, Verdict::kUnknown);
  EXPECT_EQ(g.reason, "reference values name sha256 PCR 12, which the quote does not cover");
  TpmFacts no_model = GoodTpmFacts();
  no_model.model = "";
  EXPECT_EQ(AppraiseTpmReferenceValues(no_model, pcr12, 2000).reason,
            "the device model is unknown");
}


// SPDM measurements of the BlueField-3 roots of trust (issue 14).
RefValue Spdm(const std::string& component, char digit) {
  return {component, "", std::string(96, digit), ""};
}

SpdmFacts IrotFacts() {
  SpdmFacts f;
  f.target = "irot";
  f.model = "BlueField-3";
  f.source = "BMC https://192.0.2.10 ComponentIntegrity/Bluefield_DPU_IRoT (SPDM)";
  f.values = {{1, "01:" + std::string(96, 'a')},
              {2, "01:" + std::string(96, 'b')},
              {3, "87:07000000"}};
  return f;
}

TEST(SpdmRefvalsTest, ListedIndicesAreJudgedByTheirReleaseOthersAreNot) {
  RefIndex index({MakeRelease("irot-fw", RefState::kActive,
                              {Spdm("spdm-irot:1", 'a'), Spdm("spdm-erot:2", 'e')})});
  EXPECT_EQ(SpdmReferencedIndices(index, "BlueField-3", "irot"), std::set<uint8_t>{1});
  EXPECT_EQ(SpdmReferencedIndices(index, "BlueField-3", "erot"), std::set<uint8_t>{2});
  Finding f = AppraiseSpdmReferenceValues(IrotFacts(), index, 2000);
  EXPECT_EQ(f.id, "irot.reference_values");
  EXPECT_EQ(f.verdict, Verdict::kPass) << f.reason;
  EXPECT_EQ(f.observed, "active");
  EXPECT_THAT(f.reason, HasSubstr("SPDM index 1 sha384 aaaaaaaaaaaaaaaa... matches release irot-fw"));
  EXPECT_THAT(f.reason, Not(HasSubstr("index 2")));
}

TEST(SpdmRefvalsTest, AChangedOrMissingOrRawIndexIsUnmatchedAndRevokedIsNamed) {
  RefIndex index({MakeRelease("irot-fw", RefState::kActive, {Spdm("spdm-irot:2", 'c')})});
  Finding f = AppraiseSpdmReferenceValues(IrotFacts(), index, 2000);
  EXPECT_EQ(f.verdict, Verdict::kFail);
  EXPECT_EQ(f.observed, "unmatched");
  EXPECT_THAT(f.reason, HasSubstr("SPDM index 2 sha384 bbbbbbbbbbbbbbbb... has no reference value"));
  RefIndex raw({MakeRelease("svn", RefState::kActive, {Spdm("spdm-irot:3", 'c')})});
  EXPECT_THAT(AppraiseSpdmReferenceValues(IrotFacts(), raw, 2000).reason,
              HasSubstr("SPDM index 3 (not a digest)"));
  // A SHA-512 measurement is named by a sha512 alone.
  SpdmFacts sha512 = IrotFacts();
  sha512.values[2] = "01:" + std::string(128, 'd');
  RefIndex by512({MakeRelease("irot-512", RefState::kActive,
                              {{"spdm-irot:2", "", "", std::string(128, 'd')}})});
  EXPECT_EQ(AppraiseSpdmReferenceValues(sha512, by512, 2000).observed, "active");
  RefIndex absent({MakeRelease("x", RefState::kActive, {Spdm("spdm-irot:9", 'c')})});
  EXPECT_THAT(AppraiseSpdmReferenceValues(IrotFacts(), absent, 2000).reason,
              HasSubstr("SPDM index 9 (not measured)"));
  RefIndex revoked({MakeRelease("old", RefState::kRevoked, {Spdm("spdm-irot:1", 'a')})});
  Finding r = AppraiseSpdmReferenceValues(IrotFacts(), revoked, 2000);
  EXPECT_EQ(r.observed, "revoked");
  EXPECT_THAT(r.reason, HasSubstr("CVE-2026-1234"));
}

TEST(SpdmRefvalsTest, UnknownWithoutValuesForTheTarget) {
  RefIndex none({MakeRelease("fw", RefState::kActive, {Spdm("spdm-erot:1", 'a')})});
  Finding f = AppraiseSpdmReferenceValues(IrotFacts(), none, 2000);
  EXPECT_EQ(f.verdict, Verdict::kUnknown);
  EXPECT_EQ(f.reason, "no spdm-irot reference values for BlueField-3");
}

TEST(SpdmRefvalsTest, ComponentNamesAreStrict) {
  std::string target;
  uint8_t index = 0;
  EXPECT_TRUE(IsSpdmComponent("spdm-irot:1", &target, &index));
  EXPECT_EQ(target, "irot");
  EXPECT_EQ(index, 1);
  EXPECT_TRUE(IsSpdmComponent("spdm-erot:254"));
  for (const char* bad : {"spdm-irot:0", "spdm-irot:255", "spdm-irot:01", "spdm-irot:",
                          "spdm-bmc:1", "spdm-irot:1a", "spdm-irot:1000"}) {
    EXPECT_FALSE(IsSpdmComponent(bad)) << bad;
    EXPECT_FALSE(IsKnownComponent(bad)) << bad;
  }
}

}  // namespace
}  // namespace dpuaudit::verifier
