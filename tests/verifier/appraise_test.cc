// verifier::Appraise called directly — no store, no clock, no signature —
// on recorded devices with fixed inputs: the decision and the reasons that
// carry it, the AR4SI vectors, and that the same input gives the same
// result.
#include "verifier/appraise.h"

#include <functional>

#include "verifier/derivation_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/files.h"
#include "device/device_source.h"
#include "device/evidence.h"
#include "isolation/device_facts.h"
#include "report/claims.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {
namespace {

const std::string kSrc = DPUAUDIT_SOURCE_DIR;
constexpr int64_t kNow = 1'800'000'000;
// base64url of 32 bytes.
constexpr char kNonce[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";

std::string ReadText(const std::string& path) {
  auto b = ReadFileLimited(path, 16 << 20);
  EXPECT_TRUE(b.ok()) << path << ": " << b.status().ToString();
  return b.ok() ? ToString(*b) : "";
}

// A fixed report of `device` as the agent builds it, as if verified.
report::VerifiedReport Report(const std::string& device) {
  auto recorded =
      device::NewRecordedDeviceSource(kSrc + "/tests/fixtures/devices/" + device);
  EXPECT_TRUE(recorded.ok()) << recorded.status().ToString();
  device::CapturingDeviceSource capture(**recorded);
  isolation::DeviceFacts facts = isolation::CollectDeviceFacts(capture);
  report::VerifiedReport r;
  r.claims.node_id = device;
  r.claims.nonce = kNonce;
  r.claims.issued_at = kNow;
  const isolation::DeviceIdentity& id = facts.device;
  r.claims.device = report::DeviceInfo{id.model, id.serial, id.part_number,
                                       id.psid,  id.base_mac, id.fw_version};
  r.claims.findings = facts.findings;
  r.claims.firmware = facts.firmware_json();
  r.claims.boot_chain = facts.boot_chain_json();
  r.claims.evidence = capture.evidence();
  r.jws_sha256 = std::string(64, 'a');
  r.kid = device;
  return r;
}

class AppraiseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto policy = Policy::Create(ReadText(kSrc + "/policies/zero-trust.json"),
                                 KnownRules());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    policy_ = std::make_unique<Policy>(*std::move(policy));
    std::vector<RefRelease> releases;
    for (const char* f : {"bf3-releases.json", "bf3-os-boot.json"}) {
      auto r = ParseRefManifest(
          ReadText(kSrc + "/tests/fixtures/refvals/" + f), kNow - 3600);
      ASSERT_TRUE(r.ok()) << f << ": " << r.status().ToString();
      releases.insert(releases.end(), r->begin(), r->end());
    }
    refs_ = std::make_unique<RefIndex>(std::move(releases));
  }

  struct Inputs {
    report::VerifiedReport report;
    std::optional<firmware::BootChainInfo> boot;
    NodeRecord node;
  };
  Inputs Make(const std::string& device) {
    Inputs in;
    in.report = Report(device);
    auto boot = firmware::ParseBootChainJson(in.report.claims.boot_chain);
    EXPECT_TRUE(boot.ok()) << boot.status().ToString();
    if (boot.ok()) in.boot = *std::move(boot);
    in.node.node_id = device;
    in.node.state = NodeState::kApproved;
    return in;
  }
  AppraisalInput Input(const Inputs& in) const {
    AppraisalInput a;
    a.report = &in.report;
    a.boot_chain = in.boot ? &*in.boot : nullptr;
    a.node = &in.node;
    a.refs = refs_.get();
    a.policy = policy_.get();
    a.verifier_id = {"dpuaudit", "appraise-test", "test"};
    a.now = kNow;
    return a;
  }

  std::unique_ptr<Policy> policy_;
  std::unique_ptr<RefIndex> refs_;
};

std::vector<std::string> Failing(const report::AttestationResult& ar) {
  std::vector<std::string> out;
  for (const auto& r : ar.dpuaudit.reasons) {
    if (r.verdict != Verdict::kPass) out.push_back(r.rule_id + "=" + r.observed);
  }
  return out;
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

struct Row {
  std::string device;
  report::Decision decision;
  std::vector<std::string> failing;  // each must be among the non-pass reasons
};

TEST_F(AppraiseTest, DecisionsAndReasonsOnRecordedDevices) {
  const std::vector<Row> rows = {
      {"bf3-zero-trust", report::Decision::kAdmit, {}},
      {"bf3-fw-outdated", report::Decision::kAdmit,
       {"refval.arm_firmware=obsolete", "refval.nic_firmware=obsolete"}},
      {"bf3-fw-revoked", report::Decision::kDeny,
       {"refval.arm_firmware=revoked", "refval.boot_stream=revoked"}},
      {"bf3-privileged-host", report::Decision::kDeny,
       {"host.privilege_level=PRIVILEGED", "host.rshim_disabled=FALSE"}},
      {"bf2-separated-host", report::Decision::kDeny,
       {"dpu.operation_mode=separated_host", "refval.arm_firmware=unmatched"}},
      {"bf3-nic-mode", report::Decision::kDeny, {}},
      {"bf3-boot-stream-corrupt", report::Decision::kDeny, {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.device);
    Inputs in = Make(row.device);
    StatusOr<Appraisal> a = Appraise(Input(in));
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    const report::AttestationResult& ar = a->result;
    EXPECT_EQ(ar.dpuaudit.decision, row.decision);
    EXPECT_EQ(ar.dpuaudit.node_id, row.device);
    EXPECT_EQ(ar.iat, kNow);
    EXPECT_EQ(ar.exp, kNow + policy_->decision_ttl_seconds());
    EXPECT_EQ(ar.nonce, kNonce);
    EXPECT_EQ(ar.dpuaudit.report_sha256, std::string(64, 'a'));
    std::vector<std::string> failing = Failing(ar);
    for (const std::string& f : row.failing) {
      EXPECT_TRUE(Has(failing, f)) << f;
    }
    if (row.decision == report::Decision::kAdmit && row.failing.empty()) {
      EXPECT_TRUE(failing.empty());
    }
    if (row.decision == report::Decision::kDeny) EXPECT_FALSE(failing.empty());
    // The agent's findings are the verifier's re-derivation: no
    // agent.consistency reason, and the identity matches.
    for (const auto& r : ar.dpuaudit.reasons) {
      EXPECT_NE(r.rule_id, "agent.consistency") << r.observed;
      EXPECT_NE(r.rule_id, "device.identity") << r.observed;
    }
    const report::Submod& agent = ar.submods.at(std::string(report::kSubmodArmAgent));
    // The agent key alone never affirms who the device is (issue 14 §7).
    EXPECT_EQ(agent.trust_vector.instance_identity, std::nullopt);
    EXPECT_EQ(agent.trust_vector.configuration, report::kAr4siAffirming);
    // No BMC configured: no bmc/irot/erot submod, their findings unknown,
    // and no claim above self-reported outside the TPM path.
    EXPECT_EQ(ar.submods.count(std::string(report::kSubmodBmc)), 0u);
    EXPECT_EQ(ar.submods.count(std::string(report::kSubmodIrot)), 0u);
    for (const auto& r : ar.dpuaudit.reasons) {
      EXPECT_EQ(r.tier, report::ClaimTier::kSelfReported) << r.rule_id;
      EXPECT_FALSE(r.path.empty()) << r.rule_id;
    }
    // No binding, no quote, no all-nodes TPM policy: no tpm submod.
    EXPECT_EQ(ar.submods.count(std::string(report::kSubmodTpm)), 0u);
    // Pure: the same input, the same result.
    StatusOr<Appraisal> again = Appraise(Input(in));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->result, ar);
  }
}

TEST_F(AppraiseTest, ReferenceValuesFollowNowAndTheBaseline) {
  Inputs in = Make("bf3-zero-trust");
  AppraisalInput a = Input(in);
  StatusOr<Appraisal> first = Appraise(a);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->arm_release.empty());
  EXPECT_EQ(first->previous_release, "");
  a.previous_release = first->arm_release;
  StatusOr<Appraisal> second = Appraise(a);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->previous_release, first->arm_release);
  EXPECT_EQ(second->result.dpuaudit.decision, report::Decision::kAdmit);
  // Another "now": iat/exp follow it, nothing reads a clock.
  a.now = kNow + 10;
  StatusOr<Appraisal> later = Appraise(a);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->result.iat, kNow + 10);
}

TEST_F(AppraiseTest, DisagreementsAreReported) {
  Inputs in = Make("bf3-zero-trust");
  // Another DPU's serial in the device block, and a pinned serial.
  in.report.claims.device.serial = "MT0000X99999";
  in.node.device_serial = "MT0000X99999";
  // An agent claiming a pass it did not observe.
  in.report.claims.findings.front().observed = "something else";
  // A boot chain claiming the other partition is primary.
  ASSERT_TRUE(in.boot.has_value());
  const std::string real = in.boot->partitions.primary;
  in.boot->partitions.primary =
      real == "/dev/mmcblk0boot0" ? "/dev/mmcblk0boot1" : "/dev/mmcblk0boot0";
  StatusOr<Appraisal> a = Appraise(Input(in));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const report::AttestationResult& ar = a->result;
  EXPECT_EQ(ar.dpuaudit.decision, report::Decision::kDeny);
  int identity = 0;
  int consistency = 0;
  bool primary = false;
  for (const auto& r : ar.dpuaudit.reasons) {
    identity += r.rule_id == "device.identity";
    if (r.rule_id == "agent.consistency") {
      ++consistency;
      primary = primary || r.source == "mlxbf-bootctl";
    }
  }
  EXPECT_GE(identity, 1);
  EXPECT_EQ(consistency, 2);
  EXPECT_TRUE(primary);
  const report::Submod& agent = ar.submods.at(std::string(report::kSubmodArmAgent));
  EXPECT_EQ(agent.trust_vector.instance_identity, report::kAr4siContraindicated);
  EXPECT_EQ(agent.trust_vector.configuration, report::kAr4siWarning);
}

TEST_F(AppraiseTest, NoBootChainIsUnknownAndBadEvidenceIsAnError) {
  Inputs in = Make("bf3-zero-trust");
  in.boot.reset();
  StatusOr<Appraisal> a = Appraise(Input(in));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  bool found = false;
  for (const auto& r : a->result.dpuaudit.reasons) {
    if (r.rule_id == "boot.stream_integrity") {
      found = true;
      EXPECT_EQ(r.verdict, Verdict::kUnknown);
    }
  }
  EXPECT_TRUE(found);
  // Two evidence entries with one id do not form an evidence source.
  in.report.claims.evidence.push_back(in.report.claims.evidence.front());
  StatusOr<Appraisal> bad = Appraise(Input(in));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dpuaudit::verifier

namespace dpuaudit::verifier {
namespace {

// A policy's "require" denies when a path's evidence did not verify, even
// when every rule passes: here the honest recorded device, without a BMC
// configured and without a TPM.
TEST_F(AppraiseTest, RequiredPathsThatDidNotVerifyDenyNamingWhy) {
  std::string text = ReadText(kSrc + "/policies/zero-trust.json");
  text.insert(text.find('{') + 1, R"("require": ["bmc", "tpm"], )");
  auto policy = Policy::Create(text, KnownRules());
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Inputs in = Make("bf3-zero-trust");
  AppraisalInput a = Input(in);
  StatusOr<Appraisal> plain = Appraise(a);
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(plain->result.dpuaudit.decision, report::Decision::kAdmit);
  a.policy = &*policy;
  StatusOr<Appraisal> r = Appraise(a);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->result.dpuaudit.decision, report::Decision::kDeny);
  std::map<std::string, report::DecisionReason> by_id;
  for (const auto& reason : r->result.dpuaudit.reasons) by_id[reason.rule_id] = reason;
  ASSERT_EQ(by_id.count("require.bmc"), 1u);
  EXPECT_EQ(by_id["require.bmc"].verdict, Verdict::kFail);
  EXPECT_EQ(by_id["require.bmc"].observed, "no BMC is configured for this node");
  ASSERT_EQ(by_id.count("require.tpm"), 1u);
  EXPECT_EQ(by_id["require.tpm"].observed, "no TPM evidence");
  EXPECT_EQ(r->result.submods.at(std::string(report::kSubmodPosture)).status,
            report::ArStatus::kContraindicated);
  // A configured BMC not pulled yet: unknown with that reason, still denied.
  a.bmc_configured = true;
  a.bmc_max_age_seconds = 900;
  StatusOr<Appraisal> unpulled = Appraise(a);
  ASSERT_TRUE(unpulled.ok());
  for (const auto& reason : unpulled->result.dpuaudit.reasons) by_id[reason.rule_id] = reason;
  EXPECT_EQ(by_id["require.bmc"].observed, "the verifier has not pulled this node's BMC yet");
  EXPECT_EQ(unpulled->result.dpuaudit.decision, report::Decision::kDeny);
}

}  // namespace
}  // namespace dpuaudit::verifier

namespace dpuaudit::verifier {
namespace {

// The cached re-derivation gives a result byte-identical to a fresh one, and
// any change of an input (an evidence item's bytes, stderr, exit code,
// flags; the boot chain) is a different key.
TEST_F(AppraiseTest, CachedDerivationIsIdenticalAndInvalidatedByAnyChange) {
  DerivationCache cache;
  for (const char* dev : {"bf3-zero-trust", "bf3-privileged-host"}) {
    Inputs in = Make(dev);
    AppraisalInput fresh = Input(in);
    auto want = Appraise(fresh);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    AppraisalInput cached = Input(in);
    cached.derivation_cache = &cache;
    const uint64_t hits = cache.hits();
    auto first = Appraise(cached);   // a miss: derived, then kept
    auto second = Appraise(cached);  // a hit
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(cache.hits(), hits + 1) << dev;
    EXPECT_EQ(report::SerializeEar(first->result), report::SerializeEar(want->result)) << dev;
    EXPECT_EQ(report::SerializeEar(second->result), report::SerializeEar(want->result)) << dev;
  }
  EXPECT_EQ(cache.size(), 2u);
  // Every input changes the key.
  const report::ReportClaims base = Make("bf3-zero-trust").report.claims;
  const std::string key = DerivationCache::KeyOf(base);
  std::vector<std::pair<std::string, std::function<void(report::ReportClaims&)>>> changes = {
      {"raw", [](report::ReportClaims& c) {
         c.evidence[1].raw.push_back('\n');
         c.evidence[1].sha256 = Sha256Hex(c.evidence[1].raw);
       }},
      {"stderr", [](report::ReportClaims& c) { c.evidence[1].stderr_raw.push_back('x'); }},
      {"exit_code", [](report::ReportClaims& c) { c.evidence[1].exit_code = 1; }},
      {"timed_out", [](report::ReportClaims& c) { c.evidence[1].timed_out = true; }},
      {"truncated", [](report::ReportClaims& c) { c.evidence[1].truncated = true; }},
      {"order", [](report::ReportClaims& c) { std::swap(c.evidence[0], c.evidence[1]); }},
      {"missing", [](report::ReportClaims& c) { c.evidence.pop_back(); }},
      {"boot_chain", [](report::ReportClaims& c) { c.boot_chain["x"] = 1; }},
  };
  for (const auto& [what, change] : changes) {
    report::ReportClaims c = base;
    change(c);
    EXPECT_NE(DerivationCache::KeyOf(c), key) << what;
  }
  // Not in the key: what the derivation does not read.
  report::ReportClaims other = base;
  other.nonce = "other";
  other.issued_at += 60;
  other.findings.clear();
  EXPECT_EQ(DerivationCache::KeyOf(other), key);
}

TEST_F(AppraiseTest, ChangedEvidenceIsReDerivedNotServedFromTheCache) {
  DerivationCache cache;
  Inputs zt = Make("bf3-zero-trust");
  AppraisalInput a = Input(zt);
  a.derivation_cache = &cache;
  auto admitted = Appraise(a);
  ASSERT_TRUE(admitted.ok());
  EXPECT_EQ(admitted->result.dpuaudit.decision, report::Decision::kAdmit);
  // The same node, its mlxprivhost output changed to PRIVILEGED.
  Inputs changed = Make("bf3-zero-trust");
  bool edited = false;
  for (auto& e : changed.report.claims.evidence) {
    if (e.id.rfind("mlxprivhost.query@", 0) != 0) continue;
    std::string out = ToString(e.raw);
    out.replace(out.find("RESTRICTED"), 10, "PRIVILEGED");
    e.raw = ToBytes(out);
    e.sha256 = Sha256Hex(e.raw);
    edited = true;
  }
  ASSERT_TRUE(edited);
  AppraisalInput b = Input(changed);
  b.derivation_cache = &cache;
  auto denied = Appraise(b);
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(cache.hits(), 0u);
  EXPECT_EQ(denied->result.dpuaudit.decision, report::Decision::kDeny);
  AppraisalInput fresh = Input(changed);
  auto want = Appraise(fresh);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(report::SerializeEar(denied->result), report::SerializeEar(want->result));
}

TEST(DerivationCacheTest, BoundedLeastRecentlyUsedFirst) {
  DerivationCache cache(2);
  auto facts = std::make_shared<const isolation::DeviceFacts>();
  cache.Put("a", facts);
  cache.Put("b", facts);
  ASSERT_NE(cache.Get("a"), nullptr);  // a now recent
  cache.Put("c", facts);               // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Get("b"), nullptr);
  EXPECT_NE(cache.Get("a"), nullptr);
  EXPECT_NE(cache.Get("c"), nullptr);
  DerivationCache off(0);
  off.Put("a", facts);
  EXPECT_EQ(off.Get("a"), nullptr);
}

}  // namespace
}  // namespace dpuaudit::verifier
