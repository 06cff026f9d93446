// `dpuaudit-verifier audit verify|checkpoint` (issue 16, docs/audit.md):
// the hash-chained audit log, walked and signed from the command line.

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/shared/exit_code.h"
#include "apps/shared/utc_time.h"
#include "apps/verifier/operator_commands.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "common/strict_json.h"
#include "report/admission.h"
#include "verifier/audit_chain.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::apps {
namespace {

constexpr int kOk = 0;
constexpr int64_t kPage = 10'000;

int Fail(const Status& s) {
  std::cerr << "dpuaudit-verifier: " << s.message() << "\n";
  return kUsageExit;
}

// The keys checkpoints must verify under: --trust, or every signing key
// the store recorded (which an attacker who can write the store can add
// to: say so).
StatusOr<report::TrustedKeys> CheckpointKeys(verifier::Store& store, const std::string& trust,
                                             std::string* described) {
  const int64_t now = SystemClock::Get().NowUnixSeconds();
  if (!trust.empty()) {
    DPA_ASSIGN_OR_RETURN(Bytes bytes, ReadFileLimited(trust, 1 << 20));
    *described = "pinned keys from " + trust;
    return report::TrustedKeys::FromAnyFile(bytes, trust, now);
  }
  DPA_ASSIGN_OR_RETURN(std::vector<verifier::SigningKeyRecord> keys, store.ListSigningKeys());
  nlohmann::json jwks = {{"keys", nlohmann::json::array()}};
  for (const auto& k : keys) {
    DPA_ASSIGN_OR_RETURN(nlohmann::json jwk,
                         strict_json::ParseStrictJson(AsBytes(k.public_jwk), "signing key"));
    jwk["kid"] = k.kid;
    jwks["keys"].push_back(std::move(jwk));
  }
  *described = "the " + std::to_string(keys.size()) +
               " signing keys recorded in the store (pass --trust to pin them)";
  return report::TrustedKeys::FromJwks(jwks, "store", now);
}

}  // namespace

int AuditVerify(const AuditFlags& f) {
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return Fail(store.status());
  std::string keys_from;
  auto keys = CheckpointKeys(**store, f.trust, &keys_from);
  if (!keys.ok()) return Fail(keys.status());
  auto checkpoints = (*store)->ListCheckpoints(1'000'000);
  if (!checkpoints.ok()) return Fail(checkpoints.status());
  // Walk the chain page by page, keeping each checkpointed size's hash.
  std::map<int64_t, std::string> wanted;  // size -> the hash there
  for (const auto& cp : *checkpoints) wanted[cp.size] = "";
  std::string prev(verifier::kAuditGenesisHash);
  int64_t size = 0;
  Status broken = OkStatus();
  for (int64_t seq = 1;;) {
    auto rows = (*store)->ListAuditLog(seq, kPage);
    if (!rows.ok()) return Fail(rows.status());
    if (rows->empty()) break;
    std::vector<verifier::ChainedEntry> page;
    for (auto& r : *rows) page.push_back({r.seq, r.entry, r.prev_hash, r.entry_hash});
    if (page.front().seq != seq) {
      broken = DataLossError("audit log entry " + std::to_string(seq) +
                             ": missing (the next stored entry is " +
                             std::to_string(page.front().seq) + ").");
      break;
    }
    broken = verifier::VerifyAuditChain(page, prev);
    if (!broken.ok()) break;
    for (const auto& e : page) {
      if (wanted.count(e.seq)) wanted[e.seq] = e.entry_hash;
    }
    prev = page.back().entry_hash;
    size = page.back().seq;
    seq = size + 1;
  }
  if (wanted.count(0)) wanted[0] = std::string(verifier::kAuditGenesisHash);
  // Each checkpoint: signed by a trusted key, and matching the chain.
  nlohmann::json cps = nlohmann::json::array();
  int64_t bad_checkpoints = 0;
  std::string first_bad;
  for (const auto& cp : *checkpoints) {
    std::string kid, problem;
    auto v = verifier::VerifyCheckpoint(cp.jws, *keys, &kid);
    if (!v.ok()) {
      problem = v.status().message();
    } else if (v->size != cp.size || v->head_hash != cp.head_hash) {
      problem = "its signed size/head differ from the stored row";
    } else if (broken.ok() && cp.size > size) {
      problem = "it covers " + std::to_string(cp.size) + " entries; the log has " +
                std::to_string(size) + " (entries were removed from the end)";
    } else if (broken.ok() && wanted[cp.size] != cp.head_hash) {
      problem = "entry " + std::to_string(cp.size) +
                "'s hash is not the signed head (the log was rewritten)";
    }
    if (!problem.empty()) {
      ++bad_checkpoints;
      if (first_bad.empty()) {
        first_bad = "checkpoint of size " + std::to_string(cp.size) + ": " + problem;
      }
    }
    cps.push_back({{"size", cp.size}, {"head_hash", cp.head_hash}, {"time", cp.time},
                   {"kid", kid}, {"verified", problem.empty()}, {"problem", problem}});
  }
  const bool ok = broken.ok() && bad_checkpoints == 0;
  if (f.json) {
    // docs/schemas/audit-verify.schema.json
    nlohmann::json j = {{"verified", ok},
                        {"entries", size},
                        {"head_hash", prev},
                        {"chain", broken.ok() ? "intact" : broken.message()},
                        {"checkpoints", cps},
                        {"checkpoint_keys", keys_from}};
    std::cout << j.dump() << "\n";
  } else {
    if (!broken.ok()) {
      std::cout << "BROKEN  " << broken.message() << "\n";
    }
    if (!first_bad.empty()) std::cout << "BROKEN  " << first_bad << "\n";
    std::cout << "audit log: " << size << " entries verified"
              << (broken.ok() ? ", chain intact" : " before the break") << "; head "
              << prev.substr(0, 16) << "…\n";
    std::cout << "checkpoints: " << (checkpoints->size() - bad_checkpoints) << " of "
              << checkpoints->size() << " verified, under " << keys_from << "\n";
    if (!checkpoints->empty()) {
      const auto& latest = checkpoints->front();
      std::cout << "latest checkpoint: size " << latest.size << ", head "
                << latest.head_hash.substr(0, 16) << "…, at " << UtcTime(latest.time, "%Y-%m-%dT%H:%M:%SZ")
                << "\n";
    }
  }
  return ok ? kOk : kRefusedExit;
}

int AuditCheckpoint(const AuditFlags& f) {
  auto store = OpenExistingDb(f.db);
  if (!store.ok()) return Fail(store.status());
  auto key = EcPrivateKey::LoadFile(f.key);
  if (!key.ok()) return Fail(key.status());
  auto signer = Es256Signer::New(*key);
  if (!signer.ok()) return Fail(signer.status());
  auto head = (*store)->GetAuditLogHead();
  if (!head.ok()) return Fail(head.status());
  verifier::Checkpoint cp{head->size, head->head_hash, SystemClock::Get().NowUnixSeconds(),
                          f.verifier_id};
  auto jws = verifier::SignCheckpoint(cp, **signer, key->public_key().Thumbprint());
  if (!jws.ok()) return Fail(jws.status());
  Status put = (*store)->PutCheckpoint({cp.size, cp.head_hash, cp.time, *jws});
  if (!put.ok()) return Fail(put);
  if (f.json) {
    // docs/schemas/audit-checkpoint.schema.json
    std::cout << nlohmann::json{{"size", cp.size}, {"head_hash", cp.head_hash},
                                {"time", cp.time}, {"jws", *jws}}
                     .dump()
              << "\n";
  } else {
    std::cout << "checkpoint: size " << cp.size << ", head " << cp.head_hash << "\n";
  }
  return kOk;
}

}  // namespace dpuaudit::apps
