// Reference values, the model: manifest parsing (accept / reject naming the
// JSON path), canonical round trip, lifecycle, expiry, models, components
// and the validation of releases and approvals.
#include "verifier/refvals/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "verifier/refvals/test_releases.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
using refvals_testing::kNow;
using refvals_testing::kAtf;
using refvals_testing::kNic;
using refvals_testing::Hex;
using refvals_testing::MakeRelease;

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
}  // namespace
}  // namespace dpuaudit::verifier
