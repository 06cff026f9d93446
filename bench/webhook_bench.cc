// Decision events and webhooks (issue 15): the outbox's throughput on a real
// SQLite file (status change + event + outbox row in one transaction, then
// the dispatcher's due read and delivered mark: three fsync'd writes per
// event at synchronous=FULL), one signed delivery to an HTTPS receiver on
// loopback (new TLS connection each time), and the latency a receiver sees
// from the status change being stored to the event arriving, through the
// dispatcher thread. The crypto bound of a delivery is its HMAC-SHA256.
// Run: build/bench/webhook_bench
#include <benchmark/benchmark.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "apps/verifier/http_server.h"
#include "common/bytes.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "verifier/node_status.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/webhooks.h"

#include <spdlog/spdlog.h>

namespace dpuaudit {
namespace {

namespace v = verifier;
namespace fs = std::filesystem;

const std::string kSecret(40, 's');

std::string TempDir() {
  char tmpl[] = "/tmp/dpuaudit-webhook-bench-XXXXXX";
  return mkdtemp(tmpl);
}

std::unique_ptr<v::SqliteStore> StoreWithNode(const std::string& dir) {
  auto store = v::SqliteStore::Open(dir + "/verifier.db");
  if (!store.ok()) std::abort();
  v::NodeRecord n;
  n.node_id = "n1";
  n.public_key_pem = "-----BEGIN PUBLIC KEY-----\nkey\n-----END PUBLIC KEY-----\n";
  n.key_thumbprint = "thumb";
  n.enrolled_at = 1;
  if (!(*store)->CreateNode(n).ok() || !(*store)->ApproveNode("n1", 1).ok()) std::abort();
  return std::move(store).value();
}

// A realistic payload: the size of a node.denied event with its EAR.
std::string Payload(const std::string& id) {
  return R"({"schema":"dpuaudit-event/1","event_id":")" + id +
         R"(","type":"node.denied","node_id":"n1","detail":"a report was denied","result":{"ear":")" +
         std::string(1400, 'e') + R"("}})";
}

v::NodeTransition Transition(int64_t i, const std::string& endpoint) {
  v::NodeTransition t;
  t.status = v::InitialStatus("n1", 1);
  t.status.status = (i % 2) ? "failed" : "admitted";
  t.status.updated_at = 1;
  v::DecisionEvent e;
  auto id = RandomBytes(16);
  e.event_id = HexEncode(*id);
  e.node_id = "n1";
  e.type = "node.denied";
  e.at = 1;
  e.payload_json = Payload(e.event_id);
  t.event = e;
  t.endpoints = {endpoint};
  return t;
}

// One log line per delivery would be most of what is measured.
const bool kQuiet = [] {
  spdlog::set_level(spdlog::level::warn);
  return true;
}();

void BM_HmacSha256OfAnEvent(benchmark::State& state) {
  const std::string body = Payload(std::string(32, '0'));
  for (auto _ : state) {
    auto sig = v::WebhookSignature(kSecret, 1764633600, body);
    benchmark::DoNotOptimize(sig);
  }
}
BENCHMARK(BM_HmacSha256OfAnEvent)->Unit(benchmark::kMicrosecond);

void BM_OutboxEventCycle(benchmark::State& state) {
  const std::string dir = TempDir();
  auto store = StoreWithNode(dir);
  int64_t i = 0;
  for (auto _ : state) {
    if (!store->ApplyNodeTransition(Transition(++i, "netctl")).ok()) std::abort();
    auto due = store->DueOutbox(1, 1);
    if (!due.ok() || due->empty()) std::abort();
    if (!store->MarkOutboxDelivered((*due)[0].entry.id, 2).ok()) std::abort();
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  store.reset();
  fs::remove_all(dir);
}
BENCHMARK(BM_OutboxEventCycle)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(300);

// A receiver on loopback HTTPS (the verifier's own server class) that
// counts deliveries and wakes waiters.
struct Receiver {
  std::string dir = TempDir();
  std::unique_ptr<apps::HttpServer> server;
  std::mutex mu;
  std::condition_variable cv;
  std::string last_id;
  uint16_t port = 0;
  Receiver() {
    std::string cmd = "bash " DPUAUDIT_SOURCE_DIR "/certs/make-test-certs.sh " + dir +
                      "/certs > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) std::abort();
    server = std::make_unique<apps::HttpServer>(
        apps::HttpLimits{}, [](const std::string&, const std::string&) { return "{}"; });
    server->Route("POST", "/hook", [this](const apps::ServerRequest& req,
                                          apps::ServerResponse& res) {
      {
        std::lock_guard<std::mutex> lock(mu);
        last_id = req.Header("x-dpuaudit-event-id");
      }
      cv.notify_all();
      res.status = 204;
    });
    auto cert = ReadFileLimited(dir + "/certs/server.pem", 1 << 20);
    auto key = ReadFileLimited(dir + "/certs/server.key", 1 << 20);
    auto p = server->Start("127.0.0.1", 0, ToString(*cert), ToString(*key));
    if (!p.ok()) std::abort();
    port = *p;
  }
  ~Receiver() {
    server->Stop();
    fs::remove_all(dir);
  }
  v::WebhookConfig Config() const {
    v::WebhookConfig c;
    v::WebhookEndpoint e;
    e.name = "netctl";
    e.url = "https://127.0.0.1:" + std::to_string(port) + "/hook";
    e.ca_file = dir + "/certs/ca.pem";
    e.secret = kSecret;
    c.endpoints.push_back(e);
    return c;
  }
};

void BM_DeliverOneEventOverHttps(benchmark::State& state) {
  Receiver r;
  v::WebhookConfig c = r.Config();
  v::DecisionEvent e = *Transition(1, "netctl").event;
  for (auto _ : state) {
    v::WebhookAttempt a = v::DeliverWebhook(c.endpoints[0], e, SystemClock::Get().NowUnixSeconds(),
                                            false);
    if (!a.delivered) std::abort();
  }
}
BENCHMARK(BM_DeliverOneEventOverHttps)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(200);

// From the status change committed (and the dispatcher notified, as the
// service does) to the receiver holding the event.
void BM_EventStoredToReceived(benchmark::State& state) {
  Receiver r;
  const std::string dir = TempDir();
  auto store = StoreWithNode(dir);
  v::WebhookDispatcher d(*store, SystemClock::Get(), r.Config());
  d.Start();
  int64_t i = 0;
  for (auto _ : state) {
    v::NodeTransition t = Transition(++i, "netctl");
    t.event->at = SystemClock::Get().NowUnixSeconds();
    if (!store->ApplyNodeTransition(t).ok()) std::abort();
    d.Notify();
    std::unique_lock<std::mutex> lock(r.mu);
    if (!r.cv.wait_for(lock, std::chrono::seconds(10),
                       [&] { return r.last_id == t.event->event_id; })) {
      std::abort();
    }
  }
  (void)d.FlushAndStop(std::chrono::seconds(2));
  fs::remove_all(dir);
}
BENCHMARK(BM_EventStoredToReceived)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(200);

}  // namespace
}  // namespace dpuaudit

BENCHMARK_MAIN();
