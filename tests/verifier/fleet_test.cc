// The fleet drift report (issue 16 §7): the pure builder on fixed inputs
// (majority and divergence per model and attribute, split attributes,
// unknown values, revoked nodes left out of the comparison, stale, failed
// and held nodes, releases joined with their lifecycle, decisions over
// time), the posture read from stored reasons, the window bounds, and the
// facts derived from a real signed report of a recorded device — verified
// under the node's pinned key before anything is parsed.
#include "verifier/fleet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/crypto.h"
#include "device/device_source.h"
#include "device/evidence.h"
#include "isolation/device_facts.h"
#include "report/claims.h"
#include "testing/temp_dir.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::verifier {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

const std::string kSrc = DPUAUDIT_SOURCE_DIR;
constexpr int64_t kNow = 1'800'000'000;
constexpr char kNonce[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";

FleetNodeFacts Facts(const std::string& atf,
                     const std::string& nic = "32.43.2402") {
  FleetNodeFacts f;
  f.model = "BlueField-3";
  f.psid = "MT_0000000884";
  f.atf = atf;
  f.uefi = "4.9.1-36-g0c3239837a";
  f.bsp = "4.9.1.13442";
  f.os_release = "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod";
  f.nic_fw = nic;
  f.boot_partition = "/dev/mmcblk0boot0";
  f.boot_stream_sha256 = std::string(64, 'b');
  f.issued_at = kNow - 60;
  return f;
}

FleetNode Node(const std::string& id, std::optional<FleetNodeFacts> facts,
               const std::string& status = "admitted",
               std::map<std::string, std::string> posture = {
                   {"dpu.operation_mode", "dpu"},
                   {"host.privilege_level", "RESTRICTED"}}) {
  FleetNode n;
  n.node.node_id = id;
  n.node.state = NodeState::kApproved;
  NodeStatusRecord s;
  s.node_id = id;
  s.status = status;
  s.since = kNow - 100;
  s.last_decision = status == "admitted" ? "admit" : "deny";
  s.last_appraisal_at = kNow - 100;
  n.status = s;
  n.has_result = true;
  n.result_id = 1;
  n.decision = s.last_decision;
  n.result_at = kNow - 100;
  n.report_sha256 = std::string(64, 'c');
  n.posture = std::move(posture);
  n.facts = std::move(facts);
  if (!n.facts)
    n.facts_error =
        "the stored report does not verify under the node's pinned key";
  return n;
}

const json* Attribute(const json& doc, const std::string& model,
                      const std::string& name) {
  for (const json& m : doc["models"]) {
    if (m["model"] != model) continue;
    for (const json& a : m["attributes"]) {
      if (a["attribute"] == name) return &a;
    }
  }
  return nullptr;
}

TEST(FleetBuildTest, TheNodeThatDivergesIsNamedWithTheMajorityValue) {
  FleetInput in;
  in.now = kNow;
  const std::string good = "v2.2(release):4.9.1-21-gfc25b08d9";
  const std::string old = "v2.2(release):4.9.0-25-g0123456789";
  in.nodes.push_back(Node("n3", Facts(good)));
  in.nodes.push_back(Node("n1", Facts(good)));
  in.nodes.push_back(Node("n2", Facts(old, "32.43.1008")));
  in.nodes.push_back(Node(
      "n4", Facts(good), "failed",
      {{"dpu.operation_mode", "nic"}, {"host.privilege_level", "PRIVILEGED"}}));
  json doc = BuildFleetReport(in);
  EXPECT_EQ(doc["format"], "dpuaudit-fleet/1");
  EXPECT_EQ(doc["generated_at"], kNow);
  // Nodes in id order whatever the input order.
  ASSERT_EQ(doc["nodes"].size(), 4u);
  EXPECT_EQ(doc["nodes"][0]["node_id"], "n1");
  EXPECT_EQ(doc["nodes"][3]["node_id"], "n4");
  EXPECT_EQ(doc["nodes"][1]["facts"]["firmware"]["atf"], old);

  const json* atf = Attribute(doc, "BlueField-3", "firmware.atf");
  ASSERT_NE(atf, nullptr) << doc.dump(2);
  EXPECT_EQ((*atf)["majority"], good);
  EXPECT_EQ((*atf)["majority_count"], 3);
  EXPECT_EQ((*atf)["observed"], 4);
  EXPECT_EQ((*atf)["split"], false);
  ASSERT_EQ((*atf)["divergent"].size(), 1u);
  EXPECT_EQ((*atf)["divergent"][0], (json{{"node_id", "n2"}, {"value", old}}));
  EXPECT_EQ((*atf)["values"][0], (json{{"value", good}, {"count", 3}}));

  const json* mode =
      Attribute(doc, "BlueField-3", "posture.dpu.operation_mode");
  ASSERT_NE(mode, nullptr);
  EXPECT_EQ((*mode)["majority"], "dpu");
  ASSERT_EQ((*mode)["divergent"].size(), 1u);
  EXPECT_EQ((*mode)["divergent"][0]["node_id"], "n4");
  EXPECT_EQ((*mode)["divergent"][0]["value"], "nic");

  // The flat list: by node id, each with its model, attribute and majority.
  const json& d = doc["divergences"];
  ASSERT_EQ(d.size(), 4u) << d.dump(2);
  EXPECT_EQ(d[0], (json{{"node_id", "n2"},
                        {"model", "BlueField-3"},
                        {"attribute", "firmware.atf"},
                        {"value", old},
                        {"majority", good}}));
  EXPECT_EQ(d[1]["attribute"], "firmware.nic_fw");
  EXPECT_EQ(d[2]["node_id"], "n4");
  EXPECT_EQ(d[3]["attribute"], "posture.host.privilege_level");
  EXPECT_EQ(doc["summary"]["divergent_nodes"], 2);
  EXPECT_EQ(doc["summary"]["models"], 1);
  // Attributes every node agrees on list no one.
  const json* bsp = Attribute(doc, "BlueField-3", "firmware.bsp");
  ASSERT_NE(bsp, nullptr);
  EXPECT_TRUE((*bsp)["divergent"].empty());
  EXPECT_EQ((*bsp)["majority_count"], 4);
  // The failed node is listed as such.
  ASSERT_EQ(doc["failed"].size(), 1u);
  EXPECT_EQ(doc["failed"][0]["node_id"], "n4");
  EXPECT_EQ(doc["status_counts"]["failed"], 1);
  EXPECT_EQ(doc["status_counts"]["admitted"], 3);
}

TEST(FleetBuildTest, NoStrictMajorityIsASplitNotADivergence) {
  FleetInput in;
  in.now = kNow;
  in.nodes.push_back(Node("a", Facts("atf-1")));
  in.nodes.push_back(Node("b", Facts("atf-2")));
  FleetNodeFacts unknown = Facts("");  // bfver unreadable
  in.nodes.push_back(Node("c", unknown));
  json doc = BuildFleetReport(in);
  const json* atf = Attribute(doc, "BlueField-3", "firmware.atf");
  ASSERT_NE(atf, nullptr);
  EXPECT_TRUE((*atf)["majority"].is_null());
  EXPECT_EQ((*atf)["split"], true);
  EXPECT_TRUE((*atf)["divergent"].empty());
  EXPECT_EQ((*atf)["observed"], 2);
  EXPECT_EQ((*atf)["unknown"], json::array({"c"}));
  for (const json& x : doc["divergences"])
    EXPECT_NE(x["attribute"], "firmware.atf");
}

TEST(FleetBuildTest, RevokedNodesAndNodesWithoutEvidenceAreNotCompared) {
  FleetInput in;
  in.now = kNow;
  for (const char* id : {"a", "b", "c"})
    in.nodes.push_back(Node(id, Facts("atf-1")));
  FleetNode revoked = Node("r", Facts("atf-9"), "revoked");
  revoked.node.state = NodeState::kRevoked;
  in.nodes.push_back(revoked);
  in.nodes.push_back(Node("x", std::nullopt, "failed"));
  FleetNode pending;
  pending.node.node_id = "p";
  pending.node.state = NodeState::kPending;
  in.nodes.push_back(pending);
  json doc = BuildFleetReport(in);
  EXPECT_TRUE(doc["divergences"].empty()) << doc["divergences"].dump();
  ASSERT_EQ(doc["models"].size(), 1u);
  EXPECT_EQ(doc["models"][0]["nodes"], 3);
  ASSERT_EQ(doc["no_evidence"].size(), 1u);
  EXPECT_EQ(doc["no_evidence"][0]["node_id"], "x");
  EXPECT_THAT(doc["no_evidence"][0]["reason"].get<std::string>(),
              HasSubstr("does not verify"));
  // A node with no status row: unattested; its decision null.
  const json& p = doc["nodes"][3];
  EXPECT_EQ(p["node_id"], "p");
  EXPECT_EQ(p["status"], "unattested");
  EXPECT_TRUE(p["decision"].is_null());
  EXPECT_TRUE(p["facts"].is_null());
  EXPECT_FALSE(p.contains("facts_error"));
  EXPECT_EQ(doc["status_counts"]["unattested"], 1);
  EXPECT_EQ(doc["status_counts"]["revoked"], 1);
}

TEST(FleetBuildTest, StaleFailedAndHeldNodesAreListed) {
  FleetInput in;
  in.now = kNow;
  in.nodes.push_back(Node("ok", Facts("a")));
  in.nodes.push_back(Node("gone", Facts("a"), "stale"));
  FleetNode held = Node("sticky", Facts("a"), "held");
  held.status->held_rules = "boot.secure_boot,host.privilege_level";
  in.nodes.push_back(held);
  json doc = BuildFleetReport(in);
  ASSERT_EQ(doc["stale"].size(), 1u);
  EXPECT_EQ(doc["stale"][0]["node_id"], "gone");
  EXPECT_EQ(doc["stale"][0]["since"], kNow - 100);
  ASSERT_EQ(doc["failed"].size(), 1u);
  EXPECT_EQ(doc["failed"][0]["status"], "held");
  EXPECT_EQ(doc["failed"][0]["held_rules"],
            json::array({"boot.secure_boot", "host.privilege_level"}));
  EXPECT_EQ(doc["summary"]["stale_nodes"], 1);
  EXPECT_EQ(doc["summary"]["failed_nodes"], 1);
}

RefRelease Release(const std::string& label, RefState state,
                   std::optional<int64_t> expires_at = std::nullopt) {
  RefRelease r;
  r.release = label;
  r.model = "BlueField-3";
  r.state = state;
  r.expires_at = expires_at;
  return r;
}

TEST(FleetBuildTest, NodesOnNonActiveReleasesWorstFirst) {
  FleetInput in;
  in.now = kNow;
  for (const char* id : {"a", "b", "c", "d", "e"})
    in.nodes.push_back(Node(id, Facts("x")));
  in.releases = {Release("rel-active", RefState::kActive),
                 Release("rel-old", RefState::kObsolete),
                 Release("rel-bad", RefState::kRevoked),
                 Release("rel-expired", RefState::kActive, kNow - 1)};
  in.node_releases = {{"a", "arm", "rel-active", 10},
                      {"b", "arm", "rel-old", 11},
                      {"c", "arm", "rel-bad", 12},
                      {"d", "arm", "rel-expired", 13},
                      {"e", "arm", "rel-gone", 14}};
  json doc = BuildFleetReport(in);
  const json& off = doc["releases"]["off_release"];
  ASSERT_EQ(off.size(), 4u) << off.dump(2);
  EXPECT_EQ(off[0]["node_id"], "c");
  EXPECT_EQ(off[0]["effective_state"], "revoked");
  EXPECT_EQ(off[1]["node_id"], "d");
  EXPECT_EQ(off[1]["state"], "active");
  EXPECT_EQ(off[1]["effective_state"], "expired");
  EXPECT_EQ(off[2]["node_id"], "e");
  EXPECT_EQ(off[2]["state"], "unknown");
  EXPECT_EQ(off[3]["node_id"], "b");
  EXPECT_EQ(off[3]["effective_state"], "obsolete");
  EXPECT_EQ(off[3]["at"], 11);
  EXPECT_EQ(doc["summary"]["off_release_nodes"], 4);
  EXPECT_EQ(doc["releases"]["distribution"].size(), 5u);
  // The release is compared too: five releases, no majority.
  const json* rel = Attribute(doc, "BlueField-3", "release.arm");
  ASSERT_NE(rel, nullptr);
  EXPECT_EQ((*rel)["split"], true);
  // Each node carries its own.
  EXPECT_EQ(doc["nodes"][1]["releases"][0]["release"], "rel-old");
}

TEST(FleetBuildTest, DecisionsFillEveryBucketOfTheWindow) {
  FleetInput in;
  in.now = 10 * 3600 + 100;
  in.window = {3600, 4 * 3600};
  in.decisions = {{7 * 3600, 2, 1}, {10 * 3600, 0, 3}};
  json doc = BuildFleetReport(in);
  const json& d = doc["decisions"];
  EXPECT_EQ(d["since"], 6 * 3600);
  EXPECT_EQ(d["until"], 11 * 3600);
  ASSERT_EQ(d["buckets"].size(), 5u);
  EXPECT_EQ(d["buckets"][0],
            (json{{"start", 6 * 3600}, {"admit", 0}, {"deny", 0}}));
  EXPECT_EQ(d["buckets"][1],
            (json{{"start", 7 * 3600}, {"admit", 2}, {"deny", 1}}));
  EXPECT_EQ(d["buckets"][4],
            (json{{"start", 10 * 3600}, {"admit", 0}, {"deny", 3}}));
  EXPECT_EQ(d["admit"], 2);
  EXPECT_EQ(d["deny"], 4);
}

TEST(FleetBuildTest, SameInputSameDocument) {
  FleetInput in;
  in.now = kNow;
  in.nodes.push_back(Node("b", Facts("1")));
  in.nodes.push_back(Node("a", Facts("2")));
  FleetInput reversed = in;
  std::swap(reversed.nodes[0], reversed.nodes[1]);
  EXPECT_EQ(BuildFleetReport(in).dump(), BuildFleetReport(reversed).dump());
}

TEST(FleetPostureTest, OnlyTheHostAndModeRulesAreKept) {
  auto p = FleetPosture(R"([
    {"rule_id":"host.privilege_level","verdict":"pass","observed":"RESTRICTED"},
    {"rule_id":"dpu.operation_mode","verdict":"fail","observed":"nic"},
    {"rule_id":"fw.nic_version","verdict":"pass","observed":"32.43.2402"},
    {"rule_id":"boot.secure_boot","verdict":"pass","observed":"enabled"}])");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, (std::map<std::string, std::string>{
                    {"dpu.operation_mode", "nic"},
                    {"host.privilege_level", "RESTRICTED"}}));
  EXPECT_TRUE(IsFleetPostureRule("host.rshim_disabled"));
  EXPECT_FALSE(IsFleetPostureRule("hostile.rule"));
  EXPECT_EQ(FleetPosture("{}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FleetPosture("not json").status().code(),
            StatusCode::kInvalidArgument);
  auto bad = FleetPosture(R"([{"rule_id":"host.x","observed":7}])");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("reasons[0]"));
}

TEST(FleetWindowTest, BoundsAreChecked) {
  auto w = ParseFleetWindow(std::nullopt, std::nullopt);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->bucket_seconds, 3600);
  EXPECT_EQ(w->window_seconds, 7 * 86400);
  auto day = ParseFleetWindow(std::string("86400"), std::string("2592000"));
  ASSERT_TRUE(day.ok());
  EXPECT_EQ(day->bucket_seconds, 86400);
  struct Case {
    std::optional<std::string> bucket, window;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {std::string("59"), std::nullopt, "bucket must be 60"},
           {std::string("-5"), std::nullopt, "whole number"},
           {std::string("1h"), std::nullopt, "whole number"},
           {std::string(""), std::nullopt, "whole number"},
           {std::nullopt, std::string("60"),
            "window must be at least the bucket"},
           {std::string("60"), std::string("604800"), "at most 2000 buckets"},
           {std::string("86400"), std::string("99999999"), "window must be"}}) {
    auto r = ParseFleetWindow(c.bucket, c.window);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
  EXPECT_EQ(FleetWindowStart({3600, 7200}, 10 * 3600 + 5), 8 * 3600);
}

// --- Facts from a real signed report -----------------------------------------

struct SignedReport {
  NodeRecord node;
  ReportRecord record;
};

// A report of recorded `device` as the agent builds it, signed by a fresh
// node key; the node record pins that key.
SignedReport Sign(const std::string& device, const std::string& node_id) {
  auto recorded = device::NewRecordedDeviceSource(
      kSrc + "/tests/fixtures/devices/" + device);
  EXPECT_TRUE(recorded.ok()) << recorded.status().ToString();
  device::CapturingDeviceSource capture(**recorded);
  isolation::DeviceFacts facts = isolation::CollectDeviceFacts(capture);
  report::ReportClaims c;
  c.node_id = node_id;
  c.nonce = kNonce;
  c.issued_at = kNow;
  const isolation::DeviceIdentity& id = facts.device;
  c.device = report::DeviceInfo{id.model, id.serial,   id.part_number,
                                id.psid,  id.base_mac, id.fw_version};
  c.findings = facts.findings;
  c.firmware = facts.firmware_json();
  c.boot_chain = facts.boot_chain_json();
  c.evidence = capture.evidence();
  auto key = EcPrivateKey::Generate();
  EXPECT_TRUE(key.ok());
  auto signer = Es256Signer::New(*key);
  EXPECT_TRUE(signer.ok());
  auto jws = report::SignReport(c, **signer, node_id);
  EXPECT_TRUE(jws.ok()) << jws.status().ToString();
  SignedReport out;
  out.node.node_id = node_id;
  out.node.public_key_pem = key->public_key().ToPem();
  out.node.key_thumbprint = key->public_key().Thumbprint();
  out.node.state = NodeState::kApproved;
  out.record.node_id = node_id;
  out.record.jws = jws.ok() ? *jws : "";
  out.record.sha256 = Sha256Hex(AsBytes(out.record.jws));
  out.record.accepted = true;
  return out;
}

TEST(FleetFactsTest, DerivedFromTheVerifiedEvidenceOfARecordedDevice) {
  SignedReport zt = Sign("bf3-zero-trust", "zt");
  auto f = DeriveFleetNodeFacts(zt.node, zt.record, 4 << 20);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->model, "BlueField-3");
  EXPECT_EQ(f->atf, "v2.2(release):4.9.1-21-gfc25b08d9");
  EXPECT_EQ(f->uefi, "4.9.1-36-g0c3239837a");
  EXPECT_EQ(f->bsp, "4.9.1.13442");
  EXPECT_EQ(f->nic_fw, "32.43.2402");
  EXPECT_EQ(f->boot_partition,
            "/dev/mmcblk0boot1");  // mlxbf-bootctl: primary boot1
  EXPECT_EQ(f->boot_stream_sha256.size(), 64u);
  EXPECT_EQ(f->issued_at, kNow);

  SignedReport old = Sign("bf3-fw-outdated", "old");
  auto g = DeriveFleetNodeFacts(old.node, old.record, 4 << 20);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->nic_fw, "32.43.1008");
  EXPECT_NE(g->bsp, f->bsp);
  EXPECT_NE(g->boot_stream_sha256, f->boot_stream_sha256);
}

TEST(FleetFactsTest, NothingIsParsedUnlessThePinnedKeyVerifiesIt) {
  SignedReport a = Sign("bf3-zero-trust", "a");
  SignedReport b = Sign("bf3-zero-trust", "b");
  // a's report under b's key (another node's key pinned): refused.
  NodeRecord wrong_key = a.node;
  wrong_key.public_key_pem = b.node.public_key_pem;
  wrong_key.key_thumbprint = b.node.key_thumbprint;
  auto r = DeriveFleetNodeFacts(wrong_key, a.record, 4 << 20);
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(r.status().message(),
              HasSubstr("does not verify under the node's pinned key"));
  // One byte of the signed payload changed.
  ReportRecord tampered = a.record;
  tampered.jws[tampered.jws.find('.') + 10] ^= 1;
  EXPECT_EQ(DeriveFleetNodeFacts(a.node, tampered, 4 << 20).status().code(),
            StatusCode::kUnauthenticated);
  // A stored key that is not the thumbprint's.
  NodeRecord mismatched = a.node;
  mismatched.key_thumbprint = b.node.key_thumbprint;
  EXPECT_EQ(DeriveFleetNodeFacts(mismatched, a.record, 4 << 20).status().code(),
            StatusCode::kDataLoss);
  // b's correctly signed report claimed for node a: the kid and claims name b.
  NodeRecord a_with_b_key = b.node;
  a_with_b_key.node_id = "a";
  EXPECT_EQ(
      DeriveFleetNodeFacts(a_with_b_key, b.record, 4 << 20).status().code(),
      StatusCode::kUnauthenticated);
  // Pruned body; a report over the size limit.
  ReportRecord pruned = a.record;
  pruned.jws.clear();
  auto p = DeriveFleetNodeFacts(a.node, pruned, 4 << 20);
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(p.status().message(), HasSubstr("pruned"));
  EXPECT_EQ(DeriveFleetNodeFacts(a.node, a.record, 100).status().code(),
            StatusCode::kUnauthenticated);
  // Another alg pinned.
  NodeRecord es384 = a.node;
  es384.alg = "ES384";
  EXPECT_EQ(DeriveFleetNodeFacts(es384, a.record, 4 << 20).status().code(),
            StatusCode::kUnauthenticated);
}

// CollectFleetReport over a real store: one node with a good report, one
// whose stored report does not verify, one re-keyed since its result.
TEST(FleetCollectTest, ReadsTheStoreAndNamesWhatCannotBeExamined) {
  testing::TempDir dir;
  auto store = SqliteStore::Open(dir.File("verifier.db"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  SignedReport good = Sign("bf3-zero-trust", "good");
  SignedReport forged = Sign("bf3-nic-mode", "forged");
  SignedReport other = Sign("bf3-zero-trust", "other");
  // forged's row pins another key than the one that signed its report.
  forged.node.public_key_pem = other.node.public_key_pem;
  forged.node.key_thumbprint = other.node.key_thumbprint;
  int64_t at = kNow - 500;
  for (SignedReport* s : {&good, &forged}) {
    ASSERT_TRUE((*store)->CreateNode(s->node).ok());
    s->record.received_at = at;
    ResultRecord r;
    r.node_id = s->node.node_id;
    r.decision = "admit";
    r.ear_jwt = "ear";
    r.reasons_json = R"([{"rule_id":"dpu.operation_mode","observed":"dpu"}])";
    r.report_jws_sha256 = s->record.sha256;
    r.created_at = at;
    r.expires_at = at + 300;
    ASSERT_TRUE((*store)->InsertResult(r, s->record).ok());
    at += 10;
  }
  FleetFactsCache cache;
  auto doc = CollectFleetReport(**store, FleetWindow{}, kNow, 4 << 20, &cache);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const json& nodes = (*doc)["nodes"];
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]["node_id"], "forged");
  EXPECT_TRUE(nodes[0]["facts"].is_null());
  EXPECT_THAT(nodes[0]["facts_error"].get<std::string>(),
              HasSubstr("does not verify"));
  EXPECT_EQ(nodes[1]["facts"]["firmware"]["nic_fw"], "32.43.2402");
  EXPECT_EQ(nodes[1]["posture"]["dpu.operation_mode"], "dpu");
  EXPECT_EQ((*doc)["decisions"]["admit"], 2);
  // The cache answers the second build with the same document.
  EXPECT_TRUE(cache.Find(good.record.sha256 + "/" + good.node.key_thumbprint)
                  .has_value());
  auto again =
      CollectFleetReport(**store, FleetWindow{}, kNow, 4 << 20, &cache);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->dump(), doc->dump());
  EXPECT_EQ(
      CollectFleetReport(**store, FleetWindow{59, 3600}, kNow, 4 << 20, nullptr)
          .status()
          .code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dpuaudit::verifier
