// Reference values: manifest parsing (accept / reject naming the JSON
// path), canonical round trip, lifecycle, expiry, matching and the
// refval.* findings.
#include "verifier/refvals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

constexpr int64_t kNow = 1'800'000'000;  // 2027-01-15T08:00:00Z

// The bfver strings of the BF3 fixture (docs/bluefield.md#bfver).
constexpr const char* kAtf = "v2.2(release):4.9.1-21-gfc25b08d9";
constexpr const char* kUefi = "4.9.1-36-g0c3239837a";
constexpr const char* kBsp = "4.9.1.13442";
constexpr const char* kOs = "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod";
constexpr const char* kNic = "32.43.1008";

std::string Hex(char c, size_t n = 96) { return std::string(n, c); }

// --- Manifest parsing --------------------------------------------------------

json GoodRelease() {
  return {{"release", "bf-bundle-2.9.1-40"},
          {"model", "BF3"},
          {"psids", {"MT_0000000884"}},
          {"state", "pending"},
          {"approval", {{"by", "alice"}, {"reason", "Q4 rollout"}}},
          {"expires_at", 1900000000},
          {"upgrade_from", {"bf-bundle-2.9.0-90"}},
          {"values",
           {{{"component", "atf"}, {"version", kAtf}},
            {{"component", "bfb:bl31"}, {"sha384", Hex('a')}},
            {{"component", "nic-fw"}, {"version", kNic}}}}};
}

// `releases` is the list of release objects (not a json: with one element,
// `json{x}` is a copy of x for clang but an array for GCC).
json Manifest(std::vector<json> releases) {
  return {{"schema", "dpuaudit-refvals/1"}, {"releases", json(std::move(releases))}};
}

std::string GoodText() { return Manifest({GoodRelease()}).dump(); }

TEST(ParseRefManifestTest, ImportFillsHistoryAndCanonicalisesModel) {
  auto parsed = ParseRefManifest(GoodText(), kNow);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 1u);
  const RefRelease& r = (*parsed)[0];
  EXPECT_EQ(r.release, "bf-bundle-2.9.1-40");
  EXPECT_EQ(r.model, "BlueField-3");
  EXPECT_EQ(r.psids, std::vector<std::string>{"MT_0000000884"});
  EXPECT_EQ(r.state, RefState::kPending);
  EXPECT_EQ(r.expires_at, std::optional<int64_t>(1900000000));
  EXPECT_EQ(r.upgrade_from, std::vector<std::string>{"bf-bundle-2.9.0-90"});
  ASSERT_EQ(r.values.size(), 3u);
  EXPECT_EQ(r.values[0], (RefValue{"atf", kAtf, "", ""}));
  EXPECT_EQ(r.values[1], (RefValue{"bfb:bl31", "", Hex('a'), ""}));
  EXPECT_EQ(r.created_at, kNow);
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_EQ(r.history[0],
            (RefApproval{RefState::kPending, "alice", kNow, "Q4 rollout"}));
  EXPECT_TRUE(ValidateRelease(r).ok());
}

TEST(ParseRefManifestTest, OptionalMembersMayBeOmitted) {
  json rel = GoodRelease();
  rel.erase("psids");
  rel.erase("expires_at");
  rel.erase("upgrade_from");
  rel["approval"].erase("reason");
  rel["state"] = "active";
  auto parsed = ParseRefManifest(Manifest({rel}).dump(), kNow);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const RefRelease& r = (*parsed)[0];
  EXPECT_TRUE(r.psids.empty());
  EXPECT_FALSE(r.expires_at.has_value());
  EXPECT_TRUE(r.upgrade_from.empty());
  EXPECT_EQ(r.history[0], (RefApproval{RefState::kActive, "alice", kNow, ""}));
}

TEST(ParseRefManifestTest, EmptyReleaseListIsAccepted) {
  auto parsed = ParseRefManifest(Manifest({}).dump(), kNow);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->empty());
}

TEST(ParseRefManifestTest, SeveralReleasesKeepTheirOrder) {
  json a = GoodRelease();
  json b = GoodRelease();
  b["release"] = "bf-bundle-2.9.0-90";
  b["model"] = "bf2";
  b.erase("upgrade_from");
  auto parsed = ParseRefManifest(Manifest({a, b}).dump(), kNow);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].release, "bf-bundle-2.9.1-40");
  EXPECT_EQ((*parsed)[1].release, "bf-bundle-2.9.0-90");
  EXPECT_EQ((*parsed)[1].model, "BlueField-2");
}

struct BadManifest {
  const char* name;
  std::function<void(json& release)> mutate;  // applied to releases[0]
  std::string message;
};

void PrintTo(const BadManifest& c, std::ostream* os) { *os << c.name; }

class RefManifestRejectTest : public ::testing::TestWithParam<BadManifest> {};

TEST_P(RefManifestRejectTest, RejectedNamingTheJsonPath) {
  json rel = GoodRelease();
  GetParam().mutate(rel);
  auto parsed = ParseRefManifest(Manifest({rel}).dump(), kNow);
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), GetParam().message);
}

json& Value(json& rel, size_t i) { return rel["values"][i]; }

INSTANTIATE_TEST_SUITE_P(
    Release, RefManifestRejectTest,
    ::testing::Values(
        BadManifest{"release_missing", [](json& r) { r.erase("release"); },
                    "releases[0].release is missing."},
        BadManifest{"release_type", [](json& r) { r["release"] = 7; },
                    "releases[0].release must be a string, got an integer."},
        BadManifest{"release_space",
                    [](json& r) { r["release"] = "bf bundle"; },
                    "releases[0].release \"bf bundle\" is not a release label "
                    "(1-128 characters of A-Z a-z 0-9 . _ + : ~ -)."},
        BadManifest{"release_empty", [](json& r) { r["release"] = ""; },
                    "releases[0].release \"\" is not a release label "
                    "(1-128 characters of A-Z a-z 0-9 . _ + : ~ -)."},
        BadManifest{"release_too_long",
                    [](json& r) { r["release"] = std::string(129, 'a'); },
                    "releases[0].release \"" + std::string(64, 'a') +
                        "...\" is not a release label (1-128 characters of "
                        "A-Z a-z 0-9 . _ + : ~ -)."},
        BadManifest{"unknown_member", [](json& r) { r["owner"] = "x"; },
                    "releases[0] has unknown member \"owner\"."},
        BadManifest{"model_unknown", [](json& r) { r["model"] = "BlueField-4"; },
                    "releases[0].model \"BlueField-4\" is not a known model "
                    "(BlueField-2 or BlueField-3)."},
        BadManifest{"model_missing", [](json& r) { r.erase("model"); },
                    "releases[0].model is missing."},
        BadManifest{"psids_type", [](json& r) { r["psids"] = "MT_1"; },
                    "releases[0].psids must be an array, got a string."},
        BadManifest{"psid_type", [](json& r) { r["psids"] = {1}; },
                    "releases[0].psids[0] must be a string."},
        BadManifest{"psid_space", [](json& r) { r["psids"] = {"MT 1"}; },
                    "releases[0].psids[0] \"MT 1\" is not 1-64 printable "
                    "non-space ASCII characters."},
        BadManifest{"psid_empty", [](json& r) { r["psids"] = {"MT_1", ""}; },
                    "releases[0].psids[1] \"\" is not 1-64 printable "
                    "non-space ASCII characters."},
        BadManifest{"psid_twice",
                    [](json& r) { r["psids"] = {"MT_1", "MT_1"}; },
                    "releases[0].psids[1] \"MT_1\" is listed twice."},
        BadManifest{"state_unknown", [](json& r) { r["state"] = "approved"; },
                    "releases[0].state \"approved\" is not one of pending, "
                    "active, obsolete, revoked."},
        BadManifest{"state_missing", [](json& r) { r.erase("state"); },
                    "releases[0].state is missing."},
        BadManifest{"expires_float", [](json& r) { r["expires_at"] = 1.5; },
                    "releases[0].expires_at must be an integer, got a float."},
        BadManifest{"expires_zero", [](json& r) { r["expires_at"] = 0; },
                    "releases[0].expires_at must be a positive Unix time."},
        BadManifest{"upgrade_self",
                    [](json& r) { r["upgrade_from"] = {"bf-bundle-2.9.1-40"}; },
                    "releases[0].upgrade_from[0] names the release itself."},
        BadManifest{"upgrade_twice",
                    [](json& r) { r["upgrade_from"] = {"a", "b", "a"}; },
                    "releases[0].upgrade_from[2] \"a\" is listed twice."},
        BadManifest{"upgrade_label",
                    [](json& r) { r["upgrade_from"] = {"a/b"}; },
                    "releases[0].upgrade_from[0] \"a/b\" is not a release "
                    "label (1-128 characters of A-Z a-z 0-9 . _ + : ~ -)."},
        BadManifest{"compatible_type",
                    [](json& r) { r["compatible_with"] = "a"; },
                    "releases[0].compatible_with must be an array, got a "
                    "string."},
        BadManifest{"compatible_entry_type",
                    [](json& r) { r["compatible_with"] = {"a", 2}; },
                    "releases[0].compatible_with[1] must be a string."},
        BadManifest{"compatible_self",
                    [](json& r) {
                      r["compatible_with"] = {"a", "bf-bundle-2.9.1-40"};
                    },
                    "releases[0].compatible_with[1] names the release "
                    "itself."},
        BadManifest{"compatible_twice",
                    [](json& r) { r["compatible_with"] = {"a", "b", "a"}; },
                    "releases[0].compatible_with[2] \"a\" is listed twice."},
        BadManifest{"compatible_label",
                    [](json& r) { r["compatible_with"] = {""}; },
                    "releases[0].compatible_with[0] \"\" is not a release "
                    "label (1-128 characters of A-Z a-z 0-9 . _ + : ~ -)."},
        BadManifest{"compatible_too_many",
                    [](json& r) {
                      json list = json::array();
                      for (int i = 0; i < 257; ++i) {
                        list.push_back("r" + std::to_string(i));
                      }
                      r["compatible_with"] = list;
                    },
                    "releases[0].compatible_with has more than 256 entries."},
        BadManifest{"values_missing", [](json& r) { r.erase("values"); },
                    "releases[0].values is missing."},
        BadManifest{"values_empty", [](json& r) { r["values"] = json::array(); },
                    "releases[0].values is empty."},
        BadManifest{"value_not_object", [](json& r) { r["values"][0] = "atf"; },
                    "releases[0].values[0] must be an object, got a string."},
        BadManifest{"value_unknown_member",
                    [](json& r) { Value(r, 0)["sha1"] = Hex('b', 40); },
                    "releases[0].values[0] has unknown member \"sha1\"."},
        BadManifest{"sha256_on_a_firmware_component",
                    [](json& r) { Value(r, 0)["sha256"] = Hex('b', 64); },
                    "releases[0].values[0].sha256 is only for tpm-pcr:<n> and tpm-app "
                    "components."},
        BadManifest{"tpm_pcr_with_sha384",
                    [](json& r) {
                      r["values"].push_back({{"component", "tpm-pcr:7"},
                                             {"sha384", Hex('a')}});
                    },
                    "releases[0].values[3]: component \"tpm-pcr:7\" takes only a sha256."},
        BadManifest{"tpm_pcr_out_of_range",
                    [](json& r) {
                      r["values"].push_back({{"component", "tpm-pcr:24"},
                                             {"sha256", Hex('a', 64)}});
                    },
                    "releases[0].values[3].component \"tpm-pcr:24\" is not a known component."},
        BadManifest{"tpm_app_short_digest",
                    [](json& r) {
                      r["values"].push_back({{"component", "tpm-app"},
                                             {"sha256", Hex('a', 40)}});
                    },
                    "releases[0].values[3].sha256 is not 64 lower-case hex digits."},
        BadManifest{"component_unknown",
                    [](json& r) { Value(r, 0)["component"] = "bmc"; },
                    "releases[0].values[0].component \"bmc\" is not a known "
                    "component."},
        BadManifest{"component_unknown_bfb_id",
                    [](json& r) { Value(r, 1)["component"] = "bfb:unknown-77"; },
                    "releases[0].values[1].component \"bfb:unknown-77\" is not "
                    "a known component."},
        BadManifest{"component_bfb_bogus",
                    [](json& r) { Value(r, 1)["component"] = "bfb:bl34"; },
                    "releases[0].values[1].component \"bfb:bl34\" is not a "
                    "known component."},
        BadManifest{"component_os_role",
                    [](json& r) { Value(r, 1)["component"] = "os:vmlinuz"; },
                    "releases[0].values[1].component \"os:vmlinuz\" is not a "
                    "known component."},
        BadManifest{"sha384_upper",
                    [](json& r) { Value(r, 1)["sha384"] = Hex('A'); },
                    "releases[0].values[1].sha384 is not 96 lower-case hex "
                    "digits."},
        BadManifest{"sha384_short",
                    [](json& r) { Value(r, 1)["sha384"] = Hex('a', 95); },
                    "releases[0].values[1].sha384 is not 96 lower-case hex "
                    "digits."},
        BadManifest{"sha384_not_hex",
                    [](json& r) { Value(r, 1)["sha384"] = Hex('g'); },
                    "releases[0].values[1].sha384 is not 96 lower-case hex "
                    "digits."},
        BadManifest{"sha512_length",
                    [](json& r) { Value(r, 1)["sha512"] = Hex('a'); },
                    "releases[0].values[1].sha512 is not 128 lower-case hex "
                    "digits."},
        BadManifest{"sha512_alone",
                    [](json& r) { Value(r, 0)["sha512"] = Hex('c', 128); },
                    "releases[0].values[0].sha512 needs a sha384 (matching is "
                    "by sha384)."},
        BadManifest{"neither",
                    [](json& r) { Value(r, 0).erase("version"); },
                    "releases[0].values[0] has neither a version nor a "
                    "sha384."},
        BadManifest{"version_empty", [](json& r) { Value(r, 0)["version"] = ""; },
                    "releases[0].values[0].version is empty."},
        BadManifest{"version_control",
                    [](json& r) { Value(r, 0)["version"] = "4.9\n"; },
                    "releases[0].values[0].version \"4.9\\n\" is not 1-256 "
                    "printable ASCII characters without leading or trailing "
                    "spaces."},
        BadManifest{"version_component_digest_only",
                    [](json& r) {
                      Value(r, 0).erase("version");
                      Value(r, 0)["sha384"] = Hex('d');
                    },
                    "releases[0].values[0].version is missing: component "
                    "\"atf\" is matched by version."},
        BadManifest{"digest_component_version_only",
                    [](json& r) {
                      Value(r, 1).erase("sha384");
                      Value(r, 1)["version"] = "1.0";
                    },
                    "releases[0].values[1].sha384 is missing: component "
                    "\"bfb:bl31\" is matched by sha384."},
        BadManifest{"duplicate_value",
                    [](json& r) {
                      r["values"].push_back(
                          {{"component", "bfb:bl31"}, {"sha384", Hex('a')}});
                    },
                    "releases[0].values[3] repeats values[1] (same component, "
                    "version and digest)."},
        BadManifest{"approval_missing", [](json& r) { r.erase("approval"); },
                    "releases[0].approval is missing."},
        BadManifest{"approval_without_by",
                    [](json& r) { r["approval"].erase("by"); },
                    "releases[0].approval.by is missing."},
        BadManifest{"approval_by_empty", [](json& r) { r["approval"]["by"] = ""; },
                    "releases[0].approval.by is empty."},
        BadManifest{"approval_unknown_member",
                    [](json& r) { r["approval"]["at"] = 5; },
                    "releases[0].approval has unknown member \"at\"."},
        BadManifest{"approval_reason_control",
                    [](json& r) { r["approval"]["reason"] = "a\u0007b"; },
                    "releases[0].approval.reason is not at most 1024 bytes of "
                    "UTF-8 text without control characters."},
        BadManifest{"approval_reason_long",
                    [](json& r) {
                      r["approval"]["reason"] = std::string(1025, 'r');
                    },
                    "releases[0].approval.reason is not at most 1024 bytes of "
                    "UTF-8 text without control characters."},
        BadManifest{"created_at_without_history",
                    [](json& r) { r["created_at"] = 5; },
                    "releases[0].created_at is only accepted together with "
                    "history."},
        BadManifest{"history_without_created_at",
                    [](json& r) {
                      r.erase("approval");
                      r["history"] = {{{"state", "pending"},
                                       {"by", "a"},
                                       {"at", 1}}};
                    },
                    "releases[0].created_at is missing (required together "
                    "with history)."},
        BadManifest{"history_and_approval",
                    [](json& r) {
                      r["created_at"] = 1;
                      r["history"] = {{{"state", "pending"},
                                       {"by", "a"},
                                       {"at", 1}}};
                    },
                    "releases[0].approval must not be given together with "
                    "history (an export carries its approvals in history)."},
        BadManifest{"history_empty",
                    [](json& r) {
                      r.erase("approval");
                      r["created_at"] = 1;
                      r["history"] = json::array();
                    },
                    "releases[0].history is empty (the first record is the "
                    "import)."},
        BadManifest{"history_bad_transition",
                    [](json& r) {
                      r.erase("approval");
                      r["created_at"] = 1;
                      r["state"] = "active";
                      r["history"] = {
                          {{"state", "pending"}, {"by", "a"}, {"at", 1}},
                          {{"state", "revoked"}, {"by", "b"}, {"at", 2}},
                          {{"state", "active"}, {"by", "c"}, {"at", 3}}};
                    },
                    "releases[0].history[2] moves revoked -> active, which "
                    "the lifecycle does not allow."},
        BadManifest{"history_state_mismatch",
                    [](json& r) {
                      r.erase("approval");
                      r["created_at"] = 1;
                      r["state"] = "active";
                      r["history"] = {
                          {{"state", "pending"}, {"by", "a"}, {"at", 1}}};
                    },
                    "releases[0].state \"active\" is not the state of the "
                    "last history record (pending)."},
        BadManifest{"history_record_missing_at",
                    [](json& r) {
                      r.erase("approval");
                      r["created_at"] = 1;
                      r["history"] = {{{"state", "pending"}, {"by", "a"}}};
                    },
                    "releases[0].history[0].at is missing."},
        BadManifest{"history_record_negative_at",
                    [](json& r) {
                      r.erase("approval");
                      r["created_at"] = 1;
                      r["history"] = {
                          {{"state", "pending"}, {"by", "a"}, {"at", -1}}};
                    },
                    "releases[0].history[0].at is negative."}));

struct BadText {
  const char* name;
  std::string text;
  std::string message;
};

void PrintTo(const BadText& c, std::ostream* os) { *os << c.name; }

class RefManifestTextRejectTest : public ::testing::TestWithParam<BadText> {};

TEST_P(RefManifestTextRejectTest, Rejected) {
  auto parsed = ParseRefManifest(GetParam().text, kNow);
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), GetParam().message);
}

std::string WithDuplicateState() {
  std::string text = GoodText();
  size_t at = text.find("\"state\":\"pending\"");
  text.insert(at, "\"state\":\"active\",");
  return text;
}

std::string WithTwoReleases() {
  json a = GoodRelease();
  return Manifest({a, a}).dump();
}

INSTANTIATE_TEST_SUITE_P(
    Document, RefManifestTextRejectTest,
    ::testing::Values(
        BadText{"empty", "",
                "reference manifest is not valid JSON (error at byte 1)."},
        BadText{"truncated", R"({"schema": )",
                "reference manifest is not valid JSON (error at byte 12)."},
        BadText{"duplicate_key", WithDuplicateState(),
                "reference manifest has duplicate key \"state\"."},
        BadText{"not_object", "[]",
                "the document must be an object, got an array."},
        BadText{"schema_missing", R"({"releases": []})", "schema is missing."},
        BadText{"schema_wrong",
                R"({"schema": "dpuaudit-refvals/2", "releases": []})",
                "schema \"dpuaudit-refvals/2\" is not \"dpuaudit-refvals/1\"."},
        BadText{"releases_missing", R"({"schema": "dpuaudit-refvals/1"})",
                "releases is missing."},
        BadText{"releases_type",
                R"({"schema": "dpuaudit-refvals/1", "releases": {}})",
                "releases must be an array, got an object."},
        BadText{"unknown_top",
                R"({"schema": "dpuaudit-refvals/1", "releases": [], "x": 1})",
                "the document has unknown member \"x\"."},
        BadText{"too_deep",
                R"({"schema": "dpuaudit-refvals/1", "releases": )" +
                    std::string(20, '[') + std::string(20, ']') + "}",
                "reference manifest nests deeper than 16 levels."},
        BadText{"release_twice", WithTwoReleases(),
                "releases[1].release \"bf-bundle-2.9.1-40\" repeats "
                "releases[0]."}));

TEST(ParseRefManifestTest, OversizedManifestIsRefusedBeforeParsing) {
  std::string text(16 * 1024 * 1024 + 1, ' ');
  auto parsed = ParseRefManifest(text, kNow);
  EXPECT_EQ(parsed.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(parsed.status().message(),
            "reference manifest is larger than 16777216 bytes.");
}

TEST(ParseRefManifestTest, UnicodeReasonIsAccepted) {
  json rel = GoodRelease();
  rel["approval"]["reason"] = "CVE-2026-1234 \xe2\x80\x94 see advisory";
  auto parsed = ParseRefManifest(Manifest({rel}).dump(), kNow);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ((*parsed)[0].history[0].reason,
            "CVE-2026-1234 \xe2\x80\x94 see advisory");
}

// The fuzz seeds must exercise the accepting path, not only errors.
TEST(ParseRefManifestTest, FuzzSeedsParseAsIntended) {
  auto read = [](const char* name) {
    std::ifstream in(std::string(DPUAUDIT_SOURCE_DIR) +
                     "/tests/fuzz/corpus/refvals_manifest/" + name);
    EXPECT_TRUE(in.good()) << name;
    return std::string(std::istreambuf_iterator<char>(in),
                       std::istreambuf_iterator<char>());
  };
  auto import = ParseRefManifest(read("import.json"), kNow);
  ASSERT_TRUE(import.ok()) << import.status().ToString();
  EXPECT_EQ(import->size(), 1u);
  auto exported = ParseRefManifest(read("export-with-history.json"), kNow);
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  ASSERT_EQ(exported->size(), 2u);
  EXPECT_EQ((*exported)[0].history.size(), 4u);
  EXPECT_EQ((*exported)[0].state, RefState::kRevoked);
  auto compatible = ParseRefManifest(read("import-compatible.json"), kNow);
  ASSERT_TRUE(compatible.ok()) << compatible.status().ToString();
  ASSERT_EQ(compatible->size(), 2u);
  EXPECT_EQ((*compatible)[1].compatible_with,
            std::vector<std::string>{"bf-bundle-2.9.1-40"});
  EXPECT_EQ(ParseRefManifest(read("invalid-duplicate-and-unknown.json"), kNow)
                .status()
                .message(),
            "reference manifest has duplicate key \"state\".");
}

// --- Round trip --------------------------------------------------------------

TEST(RefManifestJsonTest, RoundTripsUnchanged) {
  json a = GoodRelease();
  a["compatible_with"] = {"bf-fw-hotfix-1", "bf-bundle-2.9.0-90"};
  json b = GoodRelease();
  b["release"] = "bf-bundle-2.9.0-90";
  b.erase("upgrade_from");
  b.erase("expires_at");
  b.erase("psids");
  b["values"].push_back({{"component", "bfb:bl31"},
                         {"sha384", Hex('e')},
                         {"sha512", Hex('f', 128)},
                         {"version", "x"}});
  auto first = ParseRefManifest(Manifest({a, b}).dump(), kNow);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // Give one release a longer history, as the store would.
  (*first)[0].history.push_back(
      {RefState::kActive, "bob", kNow + 5, "approved"});
  (*first)[0].state = RefState::kActive;

  json exported = RefManifestJson(*first);
  EXPECT_EQ(exported["schema"], "dpuaudit-refvals/1");
  EXPECT_EQ(exported["releases"][0]["history"][1]["by"], "bob");
  EXPECT_EQ(exported["releases"][0]["created_at"], kNow);
  EXPECT_FALSE(exported["releases"][1].contains("expires_at"));
  EXPECT_EQ(exported["releases"][1]["psids"], json::array());
  EXPECT_EQ(exported["releases"][0]["compatible_with"],
            json::array({"bf-fw-hotfix-1", "bf-bundle-2.9.0-90"}));
  EXPECT_EQ(exported["releases"][1]["compatible_with"], json::array());

  // A different `now` must not matter: history and created_at are carried.
  auto second = ParseRefManifest(exported.dump(), kNow + 1000);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, *first);
  EXPECT_EQ(RefManifestJson(*second), exported);
}

TEST(RefManifestJsonTest, EmptyListRoundTrips) {
  json exported = RefManifestJson({});
  EXPECT_EQ(exported.dump(),
            R"({"releases":[],"schema":"dpuaudit-refvals/1"})");
  auto parsed = ParseRefManifest(exported.dump(), kNow);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->empty());
}

// --- Lifecycle ---------------------------------------------------------------

TEST(RefStateTest, NamesRoundTrip) {
  for (RefState s : {RefState::kPending, RefState::kActive, RefState::kObsolete,
                     RefState::kRevoked}) {
    EXPECT_EQ(ParseRefState(RefStateName(s)), s);
  }
  EXPECT_EQ(RefStateName(RefState::kObsolete), "obsolete");
  EXPECT_EQ(ParseRefState("Active"), std::nullopt);
  EXPECT_EQ(ParseRefState("expired"), std::nullopt);
  EXPECT_EQ(ParseRefState(""), std::nullopt);
}

TEST(RefStateTest, EveryTransitionAllowedOrRefused) {
  const RefState kAll[] = {RefState::kPending, RefState::kActive,
                           RefState::kObsolete, RefState::kRevoked};
  const std::set<std::pair<RefState, RefState>> kAllowed = {
      {RefState::kPending, RefState::kActive},
      {RefState::kPending, RefState::kRevoked},
      {RefState::kActive, RefState::kObsolete},
      {RefState::kActive, RefState::kRevoked},
      {RefState::kObsolete, RefState::kRevoked},
      {RefState::kObsolete, RefState::kActive},
  };
  int allowed = 0;
  for (RefState from : kAll) {
    for (RefState to : kAll) {
      bool want = kAllowed.count({from, to}) == 1;
      EXPECT_EQ(RefTransitionAllowed(from, to), want)
          << RefStateName(from) << " -> " << RefStateName(to);
      allowed += RefTransitionAllowed(from, to) ? 1 : 0;
    }
  }
  EXPECT_EQ(allowed, 6);
}

RefRelease MakeRelease(const std::string& label, RefState state,
                       std::vector<RefValue> values,
                       std::vector<std::string> psids = {},
                       int64_t created_at = 1000) {
  RefRelease r;
  r.release = label;
  r.model = "BlueField-3";
  r.psids = std::move(psids);
  r.values = std::move(values);
  r.created_at = created_at;
  // A history that reaches `state` by allowed steps.
  r.history.push_back({RefState::kPending, "alice", created_at, "import"});
  if (state == RefState::kActive || state == RefState::kObsolete) {
    r.history.push_back({RefState::kActive, "alice", created_at + 10, "go"});
  }
  if (state == RefState::kObsolete) {
    r.history.push_back(
        {RefState::kObsolete, "carol", created_at + 20, "superseded"});
  }
  if (state == RefState::kRevoked) {
    r.history.push_back({RefState::kRevoked, "bob", 1796032800,
                         "CVE-2026-1234"});  // 2026-11-30T10:00:00Z
  }
  r.state = state;
  return r;
}

TEST(EffectiveStateTest, ExpiryTurnsAnyLiveStateIntoExpired) {
  RefRelease r = MakeRelease("r1", RefState::kActive, {{"atf", kAtf, "", ""}});
  EXPECT_EQ(EffectiveState(r, kNow), "active");
  r.expires_at = kNow;
  EXPECT_EQ(EffectiveState(r, kNow - 1), "active");
  EXPECT_EQ(EffectiveState(r, kNow), "expired");
  EXPECT_EQ(EffectiveState(r, kNow + 1), "expired");
  RefRelease p = MakeRelease("r2", RefState::kPending, {{"atf", kAtf, "", ""}});
  p.expires_at = kNow;
  EXPECT_EQ(EffectiveState(p, kNow - 1), "pending");
  EXPECT_EQ(EffectiveState(p, kNow), "expired");
  RefRelease o =
      MakeRelease("r3", RefState::kObsolete, {{"atf", kAtf, "", ""}});
  EXPECT_EQ(EffectiveState(o, kNow), "obsolete");
}

TEST(EffectiveStateTest, RevokedStaysRevokedAfterExpiry) {
  RefRelease r = MakeRelease("r1", RefState::kRevoked, {{"atf", kAtf, "", ""}});
  r.expires_at = kNow;
  EXPECT_EQ(EffectiveState(r, kNow - 1), "revoked");
  EXPECT_EQ(EffectiveState(r, kNow + 1), "revoked");
}

// --- Models and components
// -----------------------------------------------------

TEST(CanonicalModelTest, AliasesAndRefusals) {
  for (const char* m :
       {"BF3", "bf3", "BlueField-3", "BlueField3", "bluefield-3"}) {
    EXPECT_EQ(CanonicalModel(m), std::optional<std::string>("BlueField-3"))
        << m;
  }
  for (const char* m : {"BF2", "bf2", "BlueField-2", "BlueField2"}) {
    EXPECT_EQ(CanonicalModel(m), std::optional<std::string>("BlueField-2"))
        << m;
  }
  for (const char* m : {"", "BF1", "BlueField-4", "BlueField 3", " BF3", "BF-3",
                        "ConnectX-7"}) {
    EXPECT_EQ(CanonicalModel(m), std::nullopt) << m;
  }
}

TEST(IsKnownComponentTest, FixedNames) {
  for (const char* c : {"atf", "uefi", "bsp", "os", "nic-fw", "os:kernel",
                        "os:initrd", "os:shim", "os:grub"}) {
    EXPECT_TRUE(IsKnownComponent(c)) << c;
  }
  for (const char* c :
       {"", "ATF", "nic", "os:", "os:vmlinuz", "bfb:", "bfb:unknown-3",
        "bfb:unknown-77", "bfb:BL31", "bfb:bl31 ", "bl31"}) {
    EXPECT_FALSE(IsKnownComponent(c)) << c;
  }
}

TEST(IsKnownComponentTest, EveryBfbImageNameOfTheMkbfbTable) {
  const char* kNames[] = {"psc-bl",
                          "psc-fw",
                          "bl2r-cert",
                          "bl2r",
                          "bl2r-auth-cert",
                          "bl2-cert",
                          "bl2",
                          "sys",
                          "bl2-auth-cert",
                          "ddr-cert",
                          "ddr_ini",
                          "snps_images",
                          "ddr5_snps_images",
                          "ddr_ate_imem",
                          "ddr_ate_dmem",
                          "bl30-key-cert",
                          "bl30-cert",
                          "bl30",
                          "psc-app",
                          "psc-certs",
                          "trusted-key-cert",
                          "bl31-key-cert",
                          "bl31-cert",
                          "bl31",
                          "bl32-key-cert",
                          "bl32-cert",
                          "bl32",
                          "bl33-key-cert",
                          "bl33-cert",
                          "bl33",
                          "capsule",
                          "boot-acpi",
                          "boot-dtb",
                          "boot-desc",
                          "boot-path",
                          "boot-args",
                          "boot-timeout",
                          "uefi-tests",
                          "nicfw",
                          "ramdisk",
                          "info",
                          "image",
                          "initramfs",
                          "upgrade-image"};
  for (const char* n : kNames) {
    EXPECT_TRUE(IsKnownComponent(std::string("bfb:") + n)) << n;
  }
}

// --- Validation of structs
// -------------------------------------------------------

TEST(ValidateReleaseTest, NamesTheField) {
  RefRelease r = MakeRelease("r1", RefState::kActive, {{"atf", kAtf, "", ""}});
  EXPECT_TRUE(ValidateRelease(r).ok());

  RefRelease no_history = r;
  no_history.history.clear();
  EXPECT_EQ(ValidateRelease(no_history).message(),
            "release.history is empty (the first record is the import).");

  RefRelease alias = r;
  alias.model = "BF3";
  EXPECT_EQ(ValidateRelease(alias).message(),
            "release.model \"BF3\" is not a canonical model (BlueField-2 or "
            "BlueField-3).");

  RefRelease bad_digest = r;
  bad_digest.values.push_back({"bfb:bl31", "", Hex('x'), ""});
  EXPECT_EQ(ValidateRelease(bad_digest).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateRelease(bad_digest).message(),
            "release.values[1].sha384 is not 96 lower-case hex digits.");
}

TEST(ValidateRefApprovalTest, ByRequiredAndTextClean) {
  EXPECT_TRUE(ValidateRefApproval({RefState::kActive, "bob", 5, ""}).ok());
  EXPECT_EQ(ValidateRefApproval({RefState::kActive, "", 5, "x"}).message(),
            "approval.by is empty.");
  EXPECT_EQ(ValidateRefApproval({RefState::kActive, "b\nob", 5, ""}).message(),
            "approval.by is not 1-128 bytes of UTF-8 text without control "
            "characters.");
  // Invalid UTF-8 (a lone continuation byte, a cut sequence, an overlong).
  for (const char* bad : {"\x80", "ok\xe2\x80", "\xc0\xaf", "\xed\xa0\x80"}) {
    EXPECT_EQ(ValidateRefApproval({RefState::kActive, "b", 5, bad}).code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ValidateRefApproval({RefState::kActive, "b", -1, ""}).message(),
            "approval.at is negative.");
}

// --- Matching
// ---------------------------------------------------------------------

TEST(RefIndexTest, FindVersionFiltersByModelAndPsid) {
  RefRelease any =
      MakeRelease("any", RefState::kActive, {{"nic-fw", kNic, "", ""}});
  RefRelease only_a = MakeRelease("only-a", RefState::kActive,
                                  {{"nic-fw", kNic, "", ""}}, {"MT_A"});
  RefRelease bf2 =
      MakeRelease("bf2", RefState::kActive, {{"nic-fw", kNic, "", ""}});
  bf2.model = "BlueField-2";
  RefIndex index({any, only_a, bf2});

  auto labels = [](const std::vector<const RefRelease*>& v) {
    std::vector<std::string> out;
    for (const RefRelease* r : v) out.push_back(r->release);
    return out;
  };
  EXPECT_EQ(labels(index.FindVersion("BlueField-3", "MT_A", "nic-fw", kNic)),
            (std::vector<std::string>{"any", "only-a"}));
  EXPECT_EQ(labels(index.FindVersion("BF3", "MT_B", "nic-fw", kNic)),
            (std::vector<std::string>{"any"}));
  EXPECT_EQ(labels(index.FindVersion("BlueField-3", "", "nic-fw", kNic)),
            (std::vector<std::string>{"any"}));
  EXPECT_EQ(labels(index.FindVersion("BlueField-2", "MT_A", "nic-fw", kNic)),
            (std::vector<std::string>{"bf2"}));
  EXPECT_TRUE(
      index.FindVersion("BlueField-3", "MT_A", "nic-fw", "32.43.1009").empty());
  EXPECT_TRUE(index.FindVersion("BlueField-3", "MT_A", "atf", kNic).empty());
}

TEST(RefIndexTest, FindDigestIsCaseInsensitiveOnTheQueryAndPerComponent) {
  RefRelease r = MakeRelease(
      "r", RefState::kActive,
      {{"bfb:bl31", "", Hex('a'), ""}, {"bfb:bl33", "", Hex('b'), ""}});
  RefIndex index({r});
  EXPECT_EQ(index.FindDigest("BlueField-3", "", "bfb:bl31", Hex('A')).size(),
            1u);
  EXPECT_EQ(index.FindDigest("BlueField-3", "", "bfb:bl31", Hex('a')).size(),
            1u);
  EXPECT_TRUE(
      index.FindDigest("BlueField-3", "", "bfb:bl33", Hex('a')).empty());
  EXPECT_TRUE(
      index.FindDigest("BlueField-3", "", "bfb:bl31", Hex('b')).empty());
  // A version is not a digest.
  EXPECT_TRUE(
      index.FindVersion("BlueField-3", "", "bfb:bl31", Hex('a')).empty());
}

TEST(RefIndexTest, ReleaseWithTwoValuesOfOneComponentIsFoundOnce) {
  RefRelease r = MakeRelease(
      "r", RefState::kActive,
      {{"bfb:bl31", "", Hex('a'), ""}, {"bfb:bl31", "1.0", Hex('a'), ""}});
  RefIndex index({r});
  EXPECT_EQ(index.FindDigest("BlueField-3", "", "bfb:bl31", Hex('a')).size(),
            1u);
}

TEST(RefIndexTest, FindByLabel) {
  RefIndex index(
      {MakeRelease("r1", RefState::kActive, {{"atf", kAtf, "", ""}}),
       MakeRelease("r2", RefState::kActive, {{"atf", kAtf, "", ""}})});
  ASSERT_NE(index.Find("r2"), nullptr);
  EXPECT_EQ(index.Find("r2")->release, "r2");
  EXPECT_EQ(index.Find("r3"), nullptr);
  EXPECT_EQ(index.releases().size(), 2u);
}

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

}  // namespace
}  // namespace dpuaudit::verifier
