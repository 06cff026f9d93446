// `dpuaudit-verifier keys list --db DB [--json]` (issue 15, keys part): the
// EAR signing keys the verifier has used (verifier/signing_keys.h) and what
// the JWKS publishes of them.
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/shared/table.h"
#include "apps/shared/utc_time.h"
#include "apps/verifier/operator_commands.h"
#include "common/clock.h"
#include "verifier/signing_keys.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::apps {

int SigningKeysList(const std::string& db, bool json) {
  auto store = OpenExistingDb(db);
  if (!store.ok()) {
    std::cerr << "dpuaudit-verifier: " << store.status().message() << "\n";
    return 2;
  }
  auto keys = (*store)->ListSigningKeys();
  if (!keys.ok()) {
    std::cerr << "dpuaudit-verifier: " << keys.status().message() << "\n";
    return 2;
  }
  const int64_t now = SystemClock::Get().NowUnixSeconds();
  if (json) {
    // docs/schemas/keys-list.schema.json
    std::cout << verifier::SigningKeysJson(*keys, now).dump(2) << "\n";
    return 0;
  }
  Table t({"KID", "STATUS", "FIRST USED", "LAST USED (UP TO)"}, 200);
  for (size_t i = 0; i < keys->size(); ++i) {
    const verifier::SigningKeyRecord& k = (*keys)[i];
    std::string status(verifier::SigningKeyStatus(k, i == 0, now));
    if (status == "published") {
      status = "published until " + UtcTime(k.published_until(), "%Y-%m-%dT%H:%M:%SZ");
    } else if (status == "retired") {
      status = "retired since " + UtcTime(k.published_until(), "%Y-%m-%dT%H:%M:%SZ");
    }
    t.AddRow({k.kid, status, UtcTime(k.first_used_at, "%Y-%m-%dT%H:%M:%SZ"),
              UtcTime(k.last_used_at, "%Y-%m-%dT%H:%M:%SZ")});
  }
  if (keys->empty()) {
    std::cout << "no signing key recorded yet (serve records its --key at start-up)\n";
    return 0;
  }
  std::cout << t.Render();
  return 0;
}

}  // namespace dpuaudit::apps
