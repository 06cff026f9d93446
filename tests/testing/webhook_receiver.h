// A real webhook receiver for the tests (issue 15): an HTTPS server (the
// verifier's own libmicrohttpd server class) on loopback that checks each
// delivery's X-Dpuaudit-Signature the way docs/webhooks.md tells a
// receiver to, records it, and can be told to fail the next N deliveries
// (after recording them: a lost acknowledgement, so the verifier sends a
// duplicate) or to go down and come back on the same port.
#ifndef DPUAUDIT_TESTS_TESTING_WEBHOOK_RECEIVER_H_
#define DPUAUDIT_TESTS_TESTING_WEBHOOK_RECEIVER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/verifier/http_server.h"
#include "common/bytes.h"
#include "common/crypto.h"

namespace dpuaudit::testing {

class WebhookReceiver {
 public:
  struct Delivery {
    std::string event_id;  // header
    std::string type;      // header
    std::string body;
    bool signature_ok = false;
    int answered = 0;  // the status we answered
  };

  WebhookReceiver(std::string secret, std::string cert_pem, std::string key_pem)
      : secret_(std::move(secret)), cert_(std::move(cert_pem)), key_(std::move(key_pem)) {}
  ~WebhookReceiver() { Stop(); }

  // Listens on 127.0.0.1:port (0: any; the port is kept for a restart).
  bool Start(uint16_t port = 0) {
    std::lock_guard<std::mutex> lock(server_mu_);
    server_ = std::make_unique<apps::HttpServer>(
        apps::HttpLimits{}, [](const std::string& c, const std::string& m) {
          return nlohmann::json{{"error", c}, {"message", m}}.dump();
        });
    server_->Route("POST", "/hook", [this](const apps::ServerRequest& req,
                                           apps::ServerResponse& res) { Handle(req, res); });
    auto p = server_->Start("127.0.0.1", port != 0 ? port : port_, cert_, key_);
    if (!p.ok()) {
      server_.reset();
      return false;
    }
    port_ = *p;
    return true;
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(server_mu_);
    if (server_) server_->Stop();
    server_.reset();
  }
  uint16_t port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/hook"; }

  void FailNext(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = n;
  }
  std::vector<Delivery> deliveries() {
    std::lock_guard<std::mutex> lock(mu_);
    return deliveries_;
  }
  // Events accepted (answered 2xx, signature good), de-duplicated by id,
  // in the order first accepted.
  std::vector<nlohmann::json> accepted_events() {
    std::lock_guard<std::mutex> lock(mu_);
    return accepted_;
  }
  // Waits up to `timeout` for `pred` (checked on every delivery and every
  // 50 ms).
  bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (pred()) return true;
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    return pred();
  }

  // What a receiver must do (docs/webhooks.md#verifying): recompute
  // HMAC-SHA256(secret, t + "." + body) and compare in constant time; refuse
  // a timestamp more than 5 minutes away from our clock.
  static bool VerifySignature(const std::string& secret, const std::string& header,
                              const std::string& body, int64_t now) {
    auto t_at = header.find("t=");
    auto v_at = header.find(",v1=");
    if (t_at != 0 || v_at == std::string::npos) return false;
    const std::string t = header.substr(2, v_at - 2);
    const std::string v1 = header.substr(v_at + 4);
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return false;
    if (std::llabs(now - std::stoll(t)) > 300) return false;
    auto mac = HmacSha256(AsBytes(secret), AsBytes(t + "." + body));
    if (!mac.ok()) return false;
    return ConstantTimeEquals(AsBytes(HexEncode(ByteView(mac->data(), mac->size()))),
                              AsBytes(v1));
  }

 private:
  void Handle(const apps::ServerRequest& req, apps::ServerResponse& res) {
    Delivery d;
    d.event_id = req.Header("x-dpuaudit-event-id");
    d.type = req.Header("x-dpuaudit-event-type");
    d.body = req.body;
    d.signature_ok = VerifySignature(secret_, req.Header("x-dpuaudit-signature"), req.body,
                                     std::time(nullptr));
    std::lock_guard<std::mutex> lock(mu_);
    if (!d.signature_ok) {
      d.answered = 401;
    } else if (fail_next_ > 0) {
      --fail_next_;
      d.answered = 503;
    } else {
      d.answered = 204;
      if (seen_.insert(d.event_id).second) {
        nlohmann::json j = nlohmann::json::parse(d.body, nullptr, false);
        accepted_.push_back(j.is_discarded() ? nlohmann::json() : j);
      }
    }
    res.status = d.answered;
    res.body = d.answered == 204 ? "" : "{}";
    deliveries_.push_back(std::move(d));
    cv_.notify_all();
  }

  std::string secret_, cert_, key_;
  std::mutex server_mu_;
  std::unique_ptr<apps::HttpServer> server_;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  int fail_next_ = 0;
  std::vector<Delivery> deliveries_;
  std::set<std::string> seen_;
  std::vector<nlohmann::json> accepted_;
};

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_TESTING_WEBHOOK_RECEIVER_H_
