// A boot stream that mixes two releases (issue 12, item 14), against the
// real dpuaudit-verifier, dpuaudit-agent and dpuaudit binaries on loopback.
//
// The manifest is built from what the real agent measured on the recorded
// bf3-zero-trust device (the primary partition's images in its boot_chain
// claim): release A holds the first half of the images (and the device's
// versions and OS artefacts, from the fixture release bf-bundle-2.9.1-40),
// release B the second half. Both are active, so matched image by image
// every image passes; the whole stream must still be denied as "mixed",
// naming both releases and which images each holds, with the EAR
// executables claim 96 (contraindicated). The same releases with B
// declaring A compatible are admitted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

#include "apps/shared/http_client.h"
#include "firmware/boot_chain.h"
#include "common/bytes.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "report/ear.h"
#include "report/jws.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using itest::Exec;
using itest::kBin;
using itest::Proc;

constexpr char kDevice[] = "bf3-zero-trust";
constexpr char kNode[] = "dpu-mix-1";
constexpr char kReleaseA[] = "bf-bundle-2.9.1-40";
constexpr char kReleaseB[] = "bf-fw-2.9.1-hotfix-3";

struct Image {
  std::string name, sha384;
  bool operator<(const Image& o) const {
    return std::tie(name, sha384) < std::tie(o.name, o.sha384);
  }
};

class RefvalsMixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-mix-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    bootstrap_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(WriteFileAtomic(bootstrap_, AsBytes(std::string("mix-bootstrap-token-0123456789\n")),
                                0600)
                    .ok());
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) {
      fs::remove_all(dir_);
    } else {
      std::cerr << "kept " << dir_ << "\n";
    }
  }

  // A fresh verifier (zero-trust policy, admin API) in its own folder and
  // database, with `node` enrolled by the real agent.
  void StartVerifier(const std::string& name) {
    verifier_.Stop();
    vdir_ = dir_ + "/" + name;
    fs::create_directories(vdir_);
    std::vector<std::string> args = {"--policy", itest::kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", bootstrap_};
    for (auto& f : itest::AdminFlags(vdir_, &admin_token_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(vdir_, args, &err)) << err;
    Proc e = Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(), "--node-id",
                   kNode, "--key", dir_ + "/node.key", "--bootstrap-token-file", bootstrap_});
    ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  }

  void Import(const nlohmann::json& manifest) {
    std::string file = vdir_ + "/manifest.json";
    ASSERT_TRUE(WriteFileAtomic(file, AsBytes(manifest.dump(2)), 0600).ok());
    Proc p = Exec({kBin + "/dpuaudit", "refvals", "import", file, "--verifier", verifier_.url(),
                   "--admin-token-file", admin_token_});
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  }

  // One `dpuaudit-agent attest` of the recorded device: its report (the
  // claims payload) and the EAR, verified with the verifier's JWKS.
  struct Attested {
    nlohmann::json claims;
    report::AttestationResult ear;
    std::string out;
  };
  Attested Attest() {
    Attested a;
    std::string report = vdir_ + "/report.jws", ear = vdir_ + "/ear.jwt";
    Proc p = Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", verifier_.url(),
                   "--node-id", kNode, "--key", dir_ + "/node.key", "--device-root",
                   itest::Fixture(kDevice), "--report-out", report, "--ear-out", ear});
    EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
    a.out = p.out;
    std::string jws = itest::ReadAll(report);
    size_t dot1 = jws.find('.'), dot2 = jws.find('.', dot1 + 1);
    EXPECT_NE(dot2, std::string::npos) << jws;
    if (dot2 == std::string::npos) return a;
    auto payload = Base64UrlDecode(jws.substr(dot1 + 1, dot2 - dot1 - 1));
    EXPECT_TRUE(payload.ok());
    if (payload.ok()) a.claims = nlohmann::json::parse(ToString(*payload), nullptr, false);

    apps::HttpClientOptions o;
    auto client = apps::HttpClient::New(verifier_.url(), o);
    EXPECT_TRUE(client.ok());
    if (!client.ok()) return a;
    auto jwks = (*client)->Get("/.well-known/jwks.json");
    EXPECT_TRUE(jwks.ok() && jwks->status == 200);
    if (!jwks.ok()) return a;
    auto keys = report::ParseJwks(nlohmann::json::parse(jwks->body, nullptr, false));
    EXPECT_TRUE(keys.ok() && keys->size() == 1u) << keys.status().ToString();
    if (!keys.ok() || keys->empty()) return a;
    auto v = Es256Verifier::New((*keys)[0].key);
    EXPECT_TRUE(v.ok());
    auto r = report::VerifyEar(itest::ReadAll(ear), **v, SystemClock::Get());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) a.ear = std::move(*r);
    return a;
  }

  static const report::DecisionReason* Rule(const report::AttestationResult& ear,
                                            const std::string& id) {
    for (const auto& r : ear.dpuaudit.reasons) {
      if (r.rule_id == id) return &r;
    }
    ADD_FAILURE() << "no reason for " << id;
    return nullptr;
  }

  std::string dir_, vdir_, bootstrap_, admin_token_;
  itest::VerifierProcess verifier_;
};

// The images of the primary partition, as the agent's boot_chain claim has
// them (one per distinct name and digest, in stream order).
std::vector<Image> PrimaryImages(const nlohmann::json& claims) {
  std::vector<Image> out;
  auto boot = firmware::ParseBootChainJson(claims.at("boot_chain"));
  EXPECT_TRUE(boot.ok()) << boot.status().ToString();
  if (!boot.ok()) return out;
  const firmware::PartitionMeasurement* primary = boot->partitions.Primary();
  EXPECT_NE(primary, nullptr) << "no primary partition measured";
  if (primary == nullptr) return out;
  std::set<Image> seen;
  for (const auto& img : primary->layout->images) {
    Image i{img.name, img.sha384};
    if (seen.insert(i).second) out.push_back(i);
  }
  return out;
}

// The fixture release's version and OS-artefact values (everything but the
// boot-stream images), so only refval.boot_stream depends on the split.
std::vector<nlohmann::json> NonImageValues() {
  auto fixture = nlohmann::json::parse(itest::ReadAll(itest::kFixtureRefvals));
  for (const auto& r : fixture["releases"]) {
    if (r["release"] != kReleaseA) continue;
    std::vector<nlohmann::json> out;
    for (const auto& v : r["values"]) {
      if (v["component"].get<std::string>().rfind("bfb:", 0) != 0) out.push_back(v);
    }
    return out;
  }
  ADD_FAILURE() << "the fixture has no release " << kReleaseA;
  return {};
}

nlohmann::json Release(const std::string& label, std::vector<nlohmann::json> values,
                       const std::vector<std::string>& compatible_with = {}) {
  nlohmann::json r = {{"release", label},
                      {"model", "BlueField-3"},
                      {"state", "active"},
                      {"approval", {{"by", "itest"}, {"reason", "refvals_mix_test"}}},
                      {"values", std::move(values)}};
  if (!compatible_with.empty()) r["compatible_with"] = compatible_with;
  return r;
}

nlohmann::json Manifest(const std::vector<Image>& images, size_t half, bool compatible) {
  std::vector<nlohmann::json> a = NonImageValues(), b;
  for (size_t i = 0; i < images.size(); ++i) {
    (i < half ? a : b)
        .push_back({{"component", "bfb:" + images[i].name}, {"sha384", images[i].sha384}});
  }
  return {{"schema", "dpuaudit-refvals/1"},
          {"releases",
           {Release(kReleaseA, a),
            Release(kReleaseB, b,
                    compatible ? std::vector<std::string>{kReleaseA}
                               : std::vector<std::string>{})}}};
}

TEST_F(RefvalsMixTest, BootStreamFromTwoReleasesIsDeniedUntilDeclaredCompatible) {
  // 1. What the agent measures: one attestation without reference values.
  ASSERT_NO_FATAL_FAILURE(StartVerifier("mixed"));
  Attested first = Attest();
  ASSERT_TRUE(first.claims.is_object());
  std::vector<Image> images = PrimaryImages(first.claims);
  ASSERT_GE(images.size(), 4u) << "too few images to split";
  size_t half = images.size() / 2;
  std::cout << "primary boot stream: " << images.size() << " distinct images; release A holds "
            << half << ", release B " << images.size() - half << "\n";

  // 2. A and B, both active, each holding part of the stream.
  ASSERT_NO_FATAL_FAILURE(Import(Manifest(images, half, /*compatible=*/false)));
  Attested mixed = Attest();
  EXPECT_EQ(mixed.ear.dpuaudit.decision, report::Decision::kDeny) << mixed.out;
  const report::DecisionReason* boot = Rule(mixed.ear, "refval.boot_stream");
  ASSERT_NE(boot, nullptr);
  EXPECT_EQ(boot->verdict, Verdict::kFail);
  EXPECT_EQ(boot->observed, "mixed");
  EXPECT_THAT(boot->reason,
              HasSubstr("the boot stream mixes releases: no release or declared compatibility "
                        "set holds all " +
                        std::to_string(images.size()) + " matched images ("));
  EXPECT_THAT(boot->reason,
              HasSubstr("release " + std::string(kReleaseA) + " holds bfb:" + images[0].name));
  EXPECT_THAT(boot->reason,
              HasSubstr("release " + std::string(kReleaseB) + " holds bfb:" + images[half].name));
  // Image by image each one matched an active release.
  EXPECT_THAT(boot->reason, Not(HasSubstr("has no reference value")));
  // Every other reference-value rule passes: the mix alone denies.
  for (const char* id : {"refval.arm_firmware", "refval.os_release", "refval.nic_firmware",
                         "refval.os_boot", "refval.upgrade_path"}) {
    const report::DecisionReason* r = Rule(mixed.ear, id);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->verdict, Verdict::kPass) << id << ": " << r->reason;
  }
  ASSERT_TRUE(mixed.ear.submods.count("arm-agent"));
  const report::Submod& agent = mixed.ear.submods.at("arm-agent");
  EXPECT_EQ(agent.trust_vector.executables, 96);
  EXPECT_EQ(agent.status, report::ArStatus::kContraindicated);

  // 3. The same releases, B declaring A compatible (a fresh verifier: an
  // import never changes a stored release's content).
  ASSERT_NO_FATAL_FAILURE(StartVerifier("compatible"));
  ASSERT_NO_FATAL_FAILURE(Import(Manifest(images, half, /*compatible=*/true)));
  Attested ok = Attest();
  EXPECT_EQ(ok.ear.dpuaudit.decision, report::Decision::kAdmit) << ok.out;
  const report::DecisionReason* boot_ok = Rule(ok.ear, "refval.boot_stream");
  ASSERT_NE(boot_ok, nullptr);
  EXPECT_EQ(boot_ok->verdict, Verdict::kPass) << boot_ok->reason;
  EXPECT_EQ(boot_ok->observed, "active");
  ASSERT_TRUE(ok.ear.submods.count("arm-agent"));
  EXPECT_EQ(ok.ear.submods.at("arm-agent").trust_vector.executables, 2);

  Proc list = Exec({kBin + "/dpuaudit", "refvals", "list", "--verifier", verifier_.url(),
                    "--admin-token-file", admin_token_});
  ASSERT_EQ(list.exit_code, 0) << list.out << list.err;
  EXPECT_THAT(list.out, HasSubstr(std::string(kReleaseB) + "  BlueField-3  active  " +
                                  std::to_string(images.size() - half) +
                                  " values  compatible with: " + kReleaseA + "\n"));

  // The declaration survives the export.
  std::string exported = vdir_ + "/export.json";
  Proc ex = Exec({kBin + "/dpuaudit", "refvals", "export", "--out", exported, "--verifier",
                  verifier_.url(), "--admin-token-file", admin_token_});
  ASSERT_EQ(ex.exit_code, 0) << ex.out << ex.err;
  auto j = nlohmann::json::parse(itest::ReadAll(exported), nullptr, false);
  ASSERT_TRUE(j.is_object()) << itest::ReadAll(exported);
  std::map<std::string, nlohmann::json> by_label;
  for (const auto& r : j["releases"]) by_label[r["release"]] = r["compatible_with"];
  EXPECT_EQ(by_label[kReleaseB], nlohmann::json::array({kReleaseA}));
  EXPECT_EQ(by_label[kReleaseA], nlohmann::json::array());
}

}  // namespace
}  // namespace dpuaudit
