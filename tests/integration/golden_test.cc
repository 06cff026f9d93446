// Behaviour lock for restructurings (issue 13): every finding the agent
// derives, and every reason and EAR claim the verifier appraises, on every
// recorded device under every shipped policy, compared byte for byte with
// tests/golden/appraisals.json. The golden file was generated from the main
// before the restructuring; regenerate it (DPUAUDIT_UPDATE_GOLDEN=1) only for
// an intentional change, and say which in the commit.
//
// What is left out, because it differs between runs by design: the EAR's
// iat/exp, the nonce, the report's issued_at and anything derived from the
// per-run keys (kid, thumbprints, the signed report's digest).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/common/agent_collect.h"
#include "attest/eventlog.h"
#include "common/bytes.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "device/device_source.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "verifier/service.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit {
namespace {

namespace fs = std::filesystem;

constexpr char kToken[] = "golden-bootstrap-token-0123456789";
constexpr char kAdminToken[] = "golden-admin-token-0123456789";
const std::string kSrc = DPUAUDIT_SOURCE_DIR;

std::string ReadText(const std::string& path) {
  auto b = ReadFileLimited(path, 16 << 20);
  EXPECT_TRUE(b.ok()) << path << ": " << b.status().ToString();
  return b.ok() ? ToString(*b) : "";
}

// Drops the members that differ between runs, at any depth.
void Scrub(nlohmann::json& j) {
  static const char* kVolatile[] = {"iat", "exp", "nonce", "eat_nonce", "issued_at",
                                    "expires_at", "jti", "kid", "thumbprint", "created_at",
                                    "appraised_at", "report_sha256",
                                    "key"};  // a reason's key: names a test-time key
  if (j.is_object()) {
    for (const char* k : kVolatile) j.erase(k);
    for (auto& [k, v] : j.items()) Scrub(v);
  } else if (j.is_array()) {
    for (auto& v : j) Scrub(v);
  }
}

nlohmann::json JwtPayload(const std::string& jwt) {
  size_t a = jwt.find('.');
  size_t b = jwt.find('.', a + 1);
  EXPECT_NE(b, std::string::npos);
  auto payload = Base64UrlDecode(jwt.substr(a + 1, b - a - 1));
  EXPECT_TRUE(payload.ok());
  return nlohmann::json::parse(ToString(*payload));
}

std::vector<std::string> Devices() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kSrc + "/tests/fixtures/devices")) {
    if (e.is_directory()) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One device through the agent's collection and the verifier's appraisal,
// in process, on a fresh store holding the fixture reference values.
nlohmann::json AppraiseDevice(const std::string& device, const std::string& policy_file,
                              const std::string& dir) {
  nlohmann::json out;
  FakeClock clock{1'800'000'000};
  auto store = verifier::SqliteStore::Open(dir + "/" + device + ".db");
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  auto policy = verifier::Policy::Create(ReadText(kSrc + "/policies/" + policy_file),
                                         verifier::KnownRules());
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  verifier::ServiceOptions options;
  options.bootstrap_token = kToken;
  options.admin_token = kAdminToken;
  options.max_report_bytes = 4 << 20;
  auto svc = verifier::VerifierService::New(std::move(*store), *policy,
                                            std::move(*EcPrivateKey::Generate()), clock, options);
  EXPECT_TRUE(svc.ok()) << svc.status().ToString();
  for (const char* refvals : {"bf3-releases.json", "bf3-os-boot.json"}) {
    auto imported = (*svc)->ImportRefvals(ReadText(kSrc + "/tests/fixtures/refvals/" + refvals),
                                          std::string(kAdminToken));
    EXPECT_TRUE(imported.ok()) << refvals << ": " << imported.status().ToString();
  }

  auto key = EcPrivateKey::Generate();
  auto signer = Es256Signer::New(*key);
  nlohmann::json enroll = {{"node_id", device},
                           {"public_key", report::PublicJwk(key->public_key(), "k")}};
  auto enrolled = (*svc)->Enroll(enroll.dump(), std::string(kToken));
  EXPECT_TRUE(enrolled.ok()) << enrolled.status().ToString();

  auto recorded = device::NewRecordedDeviceSource(kSrc + "/tests/fixtures/devices/" + device);
  EXPECT_TRUE(recorded.ok()) << recorded.status().ToString();
  apps::Collection collection = apps::CollectFromDevice(**recorded);

  auto challenge = (*svc)->IssueChallenge(
      *report::ChallengeRequestBody(device, clock.NowUnixSeconds(), **signer));
  EXPECT_TRUE(challenge.ok()) << challenge.status().ToString();
  report::ReportClaims claims =
      apps::BuildClaims(collection, device, challenge->nonce, clock.NowUnixSeconds());
  auto jws = report::SignReport(claims, **signer, device);
  EXPECT_TRUE(jws.ok()) << jws.status().ToString();

  nlohmann::json agent = nlohmann::json::parse(report::SerializeClaims(claims));
  agent.erase("evidence");  // the raw recorded input, not a derived fact
  out["agent"] = agent;
  auto outcome = (*svc)->SubmitReport(*jws);
  if (!outcome.ok()) {
    out["verifier_error"] = outcome.status().ToString();
  } else {
    out["ear"] = JwtPayload(outcome->ear_jwt);
  }
  Scrub(out);
  return out;
}

// Every TCG event log fixture (ours and the public ones beside the repo):
// what the verifier derives from it, less the raw event data.
const std::string kPublicLogs = std::string(DPUAUDIT_SHARED_DIR) + "/fixtures/eventlogs";

nlohmann::json EventLogFacts(const std::string& dir) {
  nlohmann::json out = nlohmann::json::object();
  {
    std::vector<fs::path> logs;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".bin") logs.push_back(e.path());
    }
    std::sort(logs.begin(), logs.end());
    for (const fs::path& p : logs) {
      auto raw = ReadFileLimited(p.string(), 16 << 20);
      EXPECT_TRUE(raw.ok());
      nlohmann::json one;
      auto log = attest::ParseEventLog(*raw);
      if (!log.ok()) {
        one["error"] = log.status().ToString();
      } else {
        nlohmann::json j = attest::EventLogJson(*log, attest::ReplayEventLog(*log));
        for (auto& e : j["events"]) e.erase("data_hex");
        one["log"] = j;
        one["boot_state"] = attest::BootStateJson(attest::ExtractBootState(log->events));
      }
      out[p.filename().string()] = one;
    }
  }
  return out;
}

nlohmann::json AllAppraisals() {
  char tmpl[] = "/tmp/dpuaudit-golden-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  nlohmann::json all = nlohmann::json::object();
  // The agent's claims do not depend on the policy: kept once per device.
  for (const char* policy : {"zero-trust.json", "host-trusted-lab.json"}) {
    for (const std::string& device : Devices()) {
      fs::remove(dir + "/" + device + ".db");
      nlohmann::json one = AppraiseDevice(device, policy, dir);
      all["agent"][device] = one["agent"];
      one.erase("agent");
      all[std::string("verifier ") + policy][device] = one;
    }
  }
  fs::remove_all(dir);
  all["eventlogs"] = EventLogFacts(kSrc + "/tests/fixtures/eventlogs");
  if (fs::exists(kPublicLogs)) all["public eventlogs"] = EventLogFacts(kPublicLogs);
  return all;
}

TEST(GoldenTest, FindingsReasonsAndEarClaimsAreUnchangedOnEveryRecordedDevice) {
  const std::string golden_path = kSrc + "/tests/golden/appraisals.json";
  nlohmann::json now = AllAppraisals();
  const std::string now_text = now.dump(1) + "\n";
  const char* update = getenv("DPUAUDIT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    fs::create_directories(kSrc + "/tests/golden");
    std::ofstream(golden_path) << now_text;
    GTEST_SKIP() << "wrote " << golden_path;
  }
  ASSERT_TRUE(fs::exists(golden_path))
      << golden_path << " is missing; generate it with DPUAUDIT_UPDATE_GOLDEN=1";
  nlohmann::json golden = nlohmann::json::parse(ReadText(golden_path));
  if (!now.contains("public eventlogs")) {
    std::cout << "note: " << kPublicLogs << " is absent; the public event logs are not compared\n";
    golden.erase("public eventlogs");
  }
  ASSERT_EQ(golden.size(), now.size());
  // Per device first, so a difference names where it is.
  for (auto& [policy, devices] : golden.items()) {
    for (auto& [device, expected] : devices.items()) {
      ASSERT_TRUE(now.contains(policy) && now[policy].contains(device)) << policy << "/" << device;
      const nlohmann::json& got = now[policy][device];
      if (got != expected) {
        nlohmann::json diff = nlohmann::json::diff(expected, got);
        ADD_FAILURE() << policy << "/" << device << " differs from the golden file:\n"
                      << diff.dump(1).substr(0, 6000);
      }
    }
  }
  EXPECT_EQ(golden.dump(1) + "\n", now_text);
}

}  // namespace
}  // namespace dpuaudit
