#include "verifier/webhooks.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <regex>

#include <spdlog/spdlog.h>

#include "common/bounded_buffer.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/files.h"
#include "common/strict_json.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "dpuaudit-webhooks/1";
constexpr size_t kMaxResponseBytes = 64 * 1024;
constexpr size_t kMaxSecretBytes = 4096;
constexpr int64_t kBatch = 32;

Status Invalid(const std::string& m) {
  return InvalidArgumentError("webhook config: " + m);
}

StatusOr<int64_t> OptionalInt(strict_json::ObjectReader& r, std::string_view key,
                              int64_t dflt, int64_t lo, int64_t hi) {
  if (!r.Has(key)) return dflt;
  DPA_ASSIGN_OR_RETURN(int64_t v, r.Int64(key));
  if (v < lo || v > hi) {
    return Invalid(r.PathOf(key) + " must be " + std::to_string(lo) + ".." +
                   std::to_string(hi) + ".");
  }
  return v;
}

StatusOr<WebhookEndpoint> ParseEndpoint(const json& j, const std::string& path,
                                        bool allow_http) {
  DPA_ASSIGN_OR_RETURN(auto r, strict_json::ObjectReader::New(j, path));
  WebhookEndpoint e;
  DPA_ASSIGN_OR_RETURN(e.name, r.String("name"));
  static const std::regex kName("[a-z0-9._-]{1,64}");
  if (!std::regex_match(e.name, kName)) {
    return Invalid(r.PathOf("name") + " " + strict_json::Quote(e.name) +
                   " must match [a-z0-9._-]{1,64}.");
  }
  DPA_ASSIGN_OR_RETURN(e.url, r.String("url"));
  const bool https = e.url.rfind("https://", 0) == 0;
  const bool http = e.url.rfind("http://", 0) == 0;
  if (!(https || (http && allow_http)) || e.url.size() > 2048 ||
      e.url.find_first_of(" \r\n\t") != std::string::npos) {
    return Invalid(r.PathOf("url") + " " + strict_json::Quote(e.url) +
                   (http ? " is plain http (set \"allow_http\": true only for tests)."
                         : " must be an https:// URL."));
  }
  DPA_ASSIGN_OR_RETURN(e.secret_file, r.String("secret_file"));
  if (e.secret_file.empty()) return Invalid(r.PathOf("secret_file") + " is empty.");
  bool present = false;
  DPA_ASSIGN_OR_RETURN(e.ca_file, r.OptionalString("ca_file", &present));
  DPA_ASSIGN_OR_RETURN(e.timeout_ms, OptionalInt(r, "timeout_ms", 5000, 100, 60000));
  if (r.Has("events")) {
    DPA_ASSIGN_OR_RETURN(const json* events, r.Array("events"));
    if (events->empty() || events->size() > 16) {
      return Invalid(r.PathOf("events") + " must list 1 to 16 event types.");
    }
    for (const json& t : *events) {
      if (!t.is_string() || t.get<std::string>().rfind("node.", 0) != 0 ||
          t.get<std::string>().size() > 64) {
        return Invalid(r.PathOf("events") + " must list event types like \"node.denied\".");
      }
      if (!e.events.insert(t.get<std::string>()).second) {
        return Invalid(r.PathOf("events") + " lists " + t.dump() + " twice.");
      }
    }
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return e;
}

// RAII for a libcurl easy handle and a header list.
struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

StatusOr<WebhookConfig> ParseWebhookConfig(std::string_view text) {
  if (text.size() > kMaxWebhookConfigBytes) {
    return ResourceExhaustedError("webhook config is larger than " +
                                  std::to_string(kMaxWebhookConfigBytes) + " bytes.");
  }
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(AsBytes(text), "webhook config"));
  DPA_ASSIGN_OR_RETURN(auto r, strict_json::ObjectReader::New(j, ""));
  DPA_ASSIGN_OR_RETURN(std::string schema, r.String("schema"));
  if (schema != kSchema) {
    return Invalid("schema " + strict_json::Quote(schema) + " must be \"" +
                   std::string(kSchema) + "\".");
  }
  WebhookConfig c;
  if (r.Has("allow_http")) {
    DPA_ASSIGN_OR_RETURN(c.allow_http, r.Bool("allow_http"));
  }
  if (r.Has("retry")) {
    DPA_ASSIGN_OR_RETURN(const json* retry, r.Object("retry"));
    DPA_ASSIGN_OR_RETURN(auto rr, strict_json::ObjectReader::New(*retry, "retry"));
    DPA_ASSIGN_OR_RETURN(c.initial_retry_seconds,
                         OptionalInt(rr, "initial_seconds", 1, 1, 86400));
    DPA_ASSIGN_OR_RETURN(c.max_retry_seconds,
                         OptionalInt(rr, "max_seconds", 300, 1, 86400));
    DPA_RETURN_IF_ERROR(rr.Finish());
    if (c.max_retry_seconds < c.initial_retry_seconds) {
      return Invalid("retry.max_seconds is below retry.initial_seconds.");
    }
  }
  DPA_ASSIGN_OR_RETURN(const json* endpoints, r.Array("endpoints"));
  if (endpoints->empty() || endpoints->size() > kMaxWebhookEndpoints) {
    return Invalid("endpoints must list 1 to " + std::to_string(kMaxWebhookEndpoints) +
                   " endpoints.");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < endpoints->size(); ++i) {
    DPA_ASSIGN_OR_RETURN(
        WebhookEndpoint e,
        ParseEndpoint((*endpoints)[i], "endpoints[" + std::to_string(i) + "]", c.allow_http));
    if (!names.insert(e.name).second) {
      return Invalid("endpoints[" + std::to_string(i) + "].name \"" + e.name +
                     "\" is used twice.");
    }
    c.endpoints.push_back(std::move(e));
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return c;
}

StatusOr<WebhookConfig> LoadWebhookConfigFile(const std::string& path) {
  DPA_ASSIGN_OR_RETURN(Bytes bytes, ReadFileLimited(path, kMaxWebhookConfigBytes + 1));
  auto parsed = ParseWebhookConfig(ToString(bytes));
  if (!parsed.ok()) return parsed.status().WithPrefix(path);
  WebhookConfig c = std::move(parsed).value();
  for (WebhookEndpoint& e : c.endpoints) {
    DPA_ASSIGN_OR_RETURN(Bytes secret, ReadPrivateFile(e.secret_file, kMaxSecretBytes,
                                                       "webhook secret file"));
    std::string s = ToString(secret);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    if (s.size() < kMinWebhookSecretBytes) {
      return InvalidArgumentError("webhook secret file " + e.secret_file + " holds fewer than " +
                                  std::to_string(kMinWebhookSecretBytes) + " bytes.");
    }
    e.secret = std::move(s);
  }
  return c;
}

std::vector<std::string> EndpointsFor(const WebhookConfig& config, std::string_view type) {
  std::vector<std::string> out;
  for (const WebhookEndpoint& e : config.endpoints) {
    if (e.events.empty() || e.events.count(std::string(type)) != 0) out.push_back(e.name);
  }
  return out;
}

StatusOr<std::string> WebhookSignature(std::string_view secret, int64_t timestamp,
                                       std::string_view body) {
  std::string signed_text = std::to_string(timestamp) + "." + std::string(body);
  DPA_ASSIGN_OR_RETURN(Sha256Digest mac, HmacSha256(AsBytes(secret), AsBytes(signed_text)));
  return "t=" + std::to_string(timestamp) + ",v1=" + HexEncode(ByteView(mac.data(), mac.size()));
}

int64_t WebhookBackoffSeconds(const WebhookConfig& config, int64_t attempts) {
  int64_t wait = config.initial_retry_seconds;
  for (int64_t i = 1; i < attempts && wait < config.max_retry_seconds; ++i) wait *= 2;
  return std::min(wait, config.max_retry_seconds);
}

WebhookAttempt DeliverWebhook(const WebhookEndpoint& endpoint, const DecisionEvent& event,
                              int64_t now, bool allow_http) {
  WebhookAttempt out;
  auto sig = WebhookSignature(endpoint.secret, now, event.payload_json);
  if (!sig.ok()) {
    out.error = sig.status().message();
    return out;
  }
  static std::once_flag curl_once;
  std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, CurlDeleter> c(curl_easy_init());
  if (!c) {
    out.error = "libcurl could not start a transfer";
    return out;
  }
  curl_slist* raw = nullptr;
  for (const std::string& h :
       {std::string("Content-Type: application/json"), "X-Dpuaudit-Event-Id: " + event.event_id,
        "X-Dpuaudit-Event-Type: " + event.type,
        "X-Dpuaudit-Event-Seq: " + std::to_string(event.seq), "X-Dpuaudit-Signature: " + *sig,
        std::string("Expect:")}) {
    curl_slist* next = curl_slist_append(raw, h.c_str());
    if (next == nullptr) {
      curl_slist_free_all(raw);
      out.error = "out of memory building headers";
      return out;
    }
    raw = next;
  }
  std::unique_ptr<curl_slist, SlistDeleter> headers(raw);
  std::string body;
  BoundedBuffer sink{&body, kMaxResponseBytes};
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* h = c.get();
  curl_easy_setopt(h, CURLOPT_URL, endpoint.url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, allow_http ? "https,http" : "https");
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(endpoint.timeout_ms));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(endpoint.timeout_ms));
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!endpoint.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, endpoint.ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_USERAGENT, "dpuaudit-verifier");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, event.payload_json.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                   static_cast<curl_off_t>(event.payload_json.size()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, BoundedBuffer::Write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && sink.overflow)) {
    out.error = std::string(errbuf[0] != 0 ? errbuf : curl_easy_strerror(rc));
    return out;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out.http_status);
  if (out.http_status >= 200 && out.http_status < 300) {
    out.delivered = true;
    return out;
  }
  out.error = "HTTP " + std::to_string(out.http_status);
  return out;
}

WebhookDispatcher::WebhookDispatcher(Store& store, const Clock& clock, WebhookConfig config)
    : store_(store), clock_(clock), config_(std::move(config)) {}

// Stops the thread only: the store may already be gone (FlushAndStop is the
// caller's, while it is alive).
WebhookDispatcher::~WebhookDispatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WebhookDispatcher::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void WebhookDispatcher::Notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

const WebhookEndpoint* WebhookDispatcher::Endpoint(std::string_view name) const {
  for (const WebhookEndpoint& e : config_.endpoints) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

int64_t WebhookDispatcher::RunOnce() {
  const int64_t now = clock_.NowUnixSeconds();
  // The batch is claimed for as long as sending all of it may take (each
  // attempt bounded by its endpoint's timeout), plus a minute: on a shared
  // store another replica's dispatcher skips it meanwhile.
  int64_t max_timeout_ms = 0;
  for (const WebhookEndpoint& e : config_.endpoints) {
    max_timeout_ms = std::max(max_timeout_ms, e.timeout_ms);
  }
  const int64_t lease = kBatch * (max_timeout_ms / 1000 + 1) + 60;
  auto due = store_.ClaimDueOutbox(now, kBatch, lease);
  if (!due.ok()) {
    spdlog::warn("webhooks: cannot read the outbox: {}", due.status().ToString());
    return 0;
  }
  int64_t attempted = 0;
  for (const OutboxDelivery& d : *due) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
    }
    ++attempted;
    const WebhookEndpoint* endpoint = Endpoint(d.entry.endpoint);
    const int64_t at = clock_.NowUnixSeconds();
    WebhookAttempt a;
    if (endpoint == nullptr) {
      a.error = "endpoint \"" + d.entry.endpoint + "\" is not in the webhook configuration";
    } else {
      a = DeliverWebhook(*endpoint, d.event, at, config_.allow_http);
    }
    if (a.delivered) {
      if (Status s = store_.MarkOutboxDelivered(d.entry.id, clock_.NowUnixSeconds()); !s.ok()) {
        spdlog::warn("webhooks: delivered {} to {} but could not record it: {}", d.event.event_id,
                     d.entry.endpoint, s.ToString());
      } else {
        spdlog::info("webhooks: delivered {} {} (node {}) to {} after {} failed attempt(s)",
                     d.event.type, d.event.event_id, d.event.node_id, d.entry.endpoint,
                     d.entry.attempts);
      }
      continue;
    }
    const int64_t attempts = d.entry.attempts + 1;
    int64_t wait = WebhookBackoffSeconds(config_, attempts);
    // Up to 10% jitter, so endpoints that come back are not hit in step.
    if (auto r = RandomBytes(2); r.ok() && wait >= 10) {
      wait += ((*r)[0] | ((*r)[1] << 8)) % (wait / 10 + 1);
    }
    spdlog::warn("webhooks: delivery of {} to {} failed (attempt {}): {}; next in {} s",
                 d.event.event_id, d.entry.endpoint, attempts, a.error, wait);
    if (Status s = store_.MarkOutboxFailed(d.entry.id, at, at + wait, a.error); !s.ok()) {
      spdlog::warn("webhooks: cannot record the failed attempt: {}", s.ToString());
    }
  }
  return attempted;
}

void WebhookDispatcher::Loop() {
  while (true) {
    int64_t attempted = RunOnce();
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;
    if (attempted >= kBatch) continue;  // more may be due
    cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return wake_ || stop_; });
    wake_ = false;
    if (stop_) return;
  }
}

int64_t WebhookDispatcher::FlushAndStop(std::chrono::milliseconds deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  const auto until = std::chrono::steady_clock::now() + deadline;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;  // RunOnce below may attempt
  }
  while (std::chrono::steady_clock::now() < until) {
    if (RunOnce() == 0) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  auto pending = store_.PendingOutbox(1000);
  return pending.ok() ? static_cast<int64_t>(pending->size()) : -1;
}

}  // namespace dpuaudit::verifier
