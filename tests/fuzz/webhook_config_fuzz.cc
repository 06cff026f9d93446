// Fuzz target: the webhook configuration (verifier/webhooks.h
// ParseWebhookConfig). Every refusal carries a message; what parses names
// only https endpoints (or http with allow_http), unique names, bounded
// timeouts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>

#include "verifier/webhooks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace v = dpuaudit::verifier;
  std::string_view text(reinterpret_cast<const char*>(data), data == nullptr ? 0 : size);
  auto config = v::ParseWebhookConfig(text);
  if (!config.ok()) {
    if (config.status().message().empty()) std::abort();
    return 0;
  }
  std::set<std::string> names;
  for (const v::WebhookEndpoint& e : config->endpoints) {
    if (!names.insert(e.name).second) std::abort();
    if (e.url.rfind("https://", 0) != 0 &&
        !(config->allow_http && e.url.rfind("http://", 0) == 0)) {
      std::abort();
    }
    if (e.timeout_ms < 100 || e.timeout_ms > 60000 || !e.secret.empty()) std::abort();
    (void)v::EndpointsFor(*config, "node.denied");
  }
  if (config->max_retry_seconds < config->initial_retry_seconds) std::abort();
  for (int64_t a = 1; a < 70; ++a) {
    int64_t w = v::WebhookBackoffSeconds(*config, a);
    if (w < 1 || w > config->max_retry_seconds) std::abort();
  }
  return 0;
}
