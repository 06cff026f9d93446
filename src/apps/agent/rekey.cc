// `rekey` (issue 15, keys part): replace this node's key at the verifier
// with a request signed by the current key that proves possession of the
// new one (report/rekey.h, docs/rekey-schema.md). After the verifier
// accepted it, the new key file is renamed over --key (one rename(2) in the
// same folder: --key then holds the new key and the old one is gone), so
// `attest` and `run` keep working with the same flags. --json prints one
// object once both are done (docs/schemas/agent-rekey.schema.json); a
// refusal by the verifier exits 1 for HTTP 409/410, else 2.
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/agent/agent_util.h"
#include "apps/agent/commands.h"
#include "common/clock.h"
#include "report/node_id.h"
#include "report/rekey.h"

namespace dpuaudit::apps {

int Rekey(const AgentFlags& f) {
  if (Status s = report::ValidateNodeId(f.node_id, "--node-id"); !s.ok()) return Fail(s);
  if (f.new_key.empty() || f.new_key == f.key) {
    return Fail(InvalidArgumentError("rekey needs --new-key FILE, other than --key."));
  }
  auto signer = LoadSigner(f);
  if (!signer.ok()) return Fail(signer.status());
  bool created = false;
  auto fresh = EcPrivateKey::LoadOrCreateFile(f.new_key, &created);
  if (!fresh.ok()) return Fail(fresh.status());
  if (created) spdlog::info("created new agent key {} (P-256, mode 0600)", f.new_key);
  const std::string thumbprint = fresh->public_key().Thumbprint();
  auto body = report::SignRekeyRequest(f.node_id, SystemClock::Get().NowUnixSeconds(),
                                       **signer, *fresh);
  if (!body.ok()) return Fail(body.status());
  auto client = Client(f);
  if (!client.ok()) return Fail(client.status());
  auto j = PostJson(**client, "/v1/nodes/" + f.node_id + "/rekey", "application/jose", *body);
  if (!j.ok()) return FailVerifier(j.status().WithPrefix("rekey refused"));
  if (JsonStr(*j, "key_thumbprint", "") != thumbprint) {
    return Fail(InvalidArgumentError("the verifier answered key_thumbprint " +
                                     JsonStr(*j, "key_thumbprint", "?") + ", not " +
                                     thumbprint + "; key files left as they are."));
  }
  if (!f.json) {
    std::cout << "re-keyed " << f.node_id << ": key thumbprint "
              << JsonStr(*j, "previous_key_thumbprint", "?") << " -> " << thumbprint << "\n";
  }
  if (std::rename(f.new_key.c_str(), f.key.c_str()) != 0) {
    std::cerr << "dpuaudit-agent: the verifier now pins the new key, but moving " << f.new_key
              << " to " << f.key << " failed: " << std::strerror(errno)
              << ". Do it yourself now: mv '" << f.new_key << "' '" << f.key << "'\n";
    return kExitError;
  }
  if (f.json) {
    nlohmann::json out = {
        {"node_id", f.node_id},
        {"state", JsonStr(*j, "state", "")},
        {"previous_key_thumbprint", JsonStr(*j, "previous_key_thumbprint", "")},
        {"key_thumbprint", thumbprint},
        {"key_file", f.key},
        {"new_key_created", created},
        {"rekeyed_at", j->value("rekeyed_at", nlohmann::json(nullptr))}};
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << f.key << " now holds the new key (the old key is gone); the node must "
            << "attest again before it is admitted\n";
  return kExitOk;
}

}  // namespace dpuaudit::apps
