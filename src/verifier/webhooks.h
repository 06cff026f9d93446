// Webhooks (issue 15, docs/webhooks.md): the configuration of the
// endpoints decision events are delivered to, their HMAC-SHA256 signature,
// and the dispatcher that drains the store's durable outbox.
//
// Guarantees:
//  - ParseWebhookConfig is strict ("dpuaudit-webhooks/1", no unknown or
//    duplicate members, names [a-z0-9._-]{1,64} and unique, https:// URLs
//    unless "allow_http" (loopback tests), timeouts 100..60000 ms, retry
//    bounds 1..86400 s) and never throws; errors name the field.
//  - LoadWebhookConfigFile reads each secret_file as a private file (0600,
//    common/files.h) of at least kMinWebhookSecretBytes after trimming one
//    trailing newline; secrets are never logged or put in a message.
//  - At least once: an outbox entry is marked delivered only after its
//    endpoint answered 2xx; every other outcome (refused connection,
//    timeout, TLS failure, 3xx/4xx/5xx) is a failed attempt retried with
//    exponential backoff (initial_seconds * 2^attempts, at most
//    max_seconds, plus up to 10% jitter), for as long as it takes. The
//    outbox lives in the store, so a restart resumes where it stopped.
//  - One delivery at a time per dispatcher; each bounded by its
//    endpoint's timeout_ms; redirects are not followed; a response body is
//    read at most 64 KiB.
//  - Per node and endpoint in order (Store::DueOutbox): a node's later
//    event waits until its earlier one was delivered.
//  - Several replicas on one PostgreSQL store: each batch is claimed
//    (Store::ClaimDueOutbox, FOR UPDATE SKIP LOCKED) for the time sending it
//    may take (32 x the largest endpoint timeout + 60 s), so two replicas'
//    dispatchers never send the same delivery at once; a replica that dies
//    mid-batch leaves its claims to run out, then another sends them.
// Does not: order deliveries across nodes (receivers de-duplicate by
// `event_id`; X-Dpuaudit-Event-Seq gives the store order); deliver events of nodes
// to endpoints whose "events" filter excludes their type (no outbox row
// is made for them).
#ifndef DPUAUDIT_VERIFIER_WEBHOOKS_H_
#define DPUAUDIT_VERIFIER_WEBHOOKS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

inline constexpr size_t kMinWebhookSecretBytes = 32;
inline constexpr size_t kMaxWebhookConfigBytes = 64 * 1024;
inline constexpr size_t kMaxWebhookEndpoints = 32;

struct WebhookEndpoint {
  std::string name;
  std::string url;
  std::string secret_file;
  std::string ca_file;  // "" = the system CA bundle
  int64_t timeout_ms = 5000;
  std::set<std::string> events;  // empty: every event type
  std::string secret;            // loaded by LoadWebhookConfigFile
};

struct WebhookConfig {
  std::vector<WebhookEndpoint> endpoints;
  int64_t initial_retry_seconds = 1;
  int64_t max_retry_seconds = 300;
  bool allow_http = false;
};

// Without secrets (secret empty).
StatusOr<WebhookConfig> ParseWebhookConfig(std::string_view json);
StatusOr<WebhookConfig> LoadWebhookConfigFile(const std::string& path);

// The names of the endpoints that take events of `type`.
std::vector<std::string> EndpointsFor(const WebhookConfig& config,
                                      std::string_view type);

// "t=<timestamp>,v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>": the
// X-Dpuaudit-Signature header.
StatusOr<std::string> WebhookSignature(std::string_view secret,
                                       int64_t timestamp, std::string_view body);

// Seconds until the next attempt after `attempts` failed ones (>= 1),
// without jitter.
int64_t WebhookBackoffSeconds(const WebhookConfig& config, int64_t attempts);

// Outcome of one delivery attempt.
struct WebhookAttempt {
  bool delivered = false;
  long http_status = 0;  // 0: no HTTP answer
  std::string error;     // why it failed, for the outbox and the log
};

// POSTs `event` to `endpoint` (headers: Content-Type application/json,
// X-Dpuaudit-Event-Id, X-Dpuaudit-Event-Type, X-Dpuaudit-Event-Seq,
// X-Dpuaudit-Signature).
WebhookAttempt DeliverWebhook(const WebhookEndpoint& endpoint,
                              const DecisionEvent& event, int64_t now,
                              bool allow_http);

// Drains the outbox on its own thread.
class WebhookDispatcher {
 public:
  // `store` and `clock` must outlive the dispatcher's use of them: the
  // destructor only stops the thread and touches neither.
  WebhookDispatcher(Store& store, const Clock& clock, WebhookConfig config);
  ~WebhookDispatcher();
  WebhookDispatcher(const WebhookDispatcher&) = delete;
  WebhookDispatcher& operator=(const WebhookDispatcher&) = delete;

  void Start();
  // Wakes the thread (a new event was stored).
  void Notify();
  // Delivers what is due until nothing is due or `deadline` passes, then
  // stops the thread. Returns the entries still undelivered.
  int64_t FlushAndStop(std::chrono::milliseconds deadline);
  // One pass over the due entries (the thread's body; tests call it).
  // Returns how many were attempted.
  int64_t RunOnce();
  const WebhookConfig& config() const { return config_; }

 private:
  void Loop();
  const WebhookEndpoint* Endpoint(std::string_view name) const;

  Store& store_;
  const Clock& clock_;
  WebhookConfig config_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_WEBHOOKS_H_
