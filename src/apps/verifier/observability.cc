#include "apps/verifier/observability.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

namespace dpuaudit::apps {
namespace {

thread_local const nlohmann::ordered_json* g_fields = nullptr;
std::atomic<LogFormat> g_format{LogFormat::kText};

constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v";

std::string Rfc3339Utc(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                t.time_since_epoch())
                .count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg,
              spdlog::memory_buf_t& dest) override {
    auto level = spdlog::level::to_string_view(msg.level);
    std::string line = JsonLogLine(
        Rfc3339Utc(msg.time), std::string(level.data(), level.size()),
        std::string(msg.payload.data(), msg.payload.size()), g_fields);
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// Printable ASCII only, at most `max` bytes (attacker-chosen paths).
std::string Printable(std::string_view s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace

StatusOr<LogFormat> ParseLogFormat(const std::string& s) {
  if (s == "text") return LogFormat::kText;
  if (s == "json") return LogFormat::kJson;
  return InvalidArgumentError("--log-format \"" + s +
                              "\" must be text or json.");
}

void ConfigureLogFormat(LogFormat format) {
  g_format = format;
  if (format == LogFormat::kJson) {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  } else {
    spdlog::set_pattern(kTextPattern);
  }
}

LogFormat CurrentLogFormat() { return g_format.load(); }

LogFields::LogFields(nlohmann::ordered_json fields)
    : previous_(g_fields), fields_(std::move(fields)) {
  g_fields = &fields_;
}

LogFields::~LogFields() { g_fields = previous_; }

const nlohmann::ordered_json* LogFields::Current() { return g_fields; }

std::string JsonLogLine(const std::string& ts, const std::string& level,
                        const std::string& msg,
                        const nlohmann::ordered_json* fields) {
  nlohmann::ordered_json j;
  j["ts"] = ts;
  j["level"] = level;
  j["msg"] = msg;
  if (fields != nullptr && fields->is_object()) {
    for (const auto& [k, v] : fields->items()) {
      if (k == "ts" || k == "level" || k == "msg")
        continue;  // never overwritten
      j[k] = v;
    }
  }
  return j.dump(-1, ' ', false,
                nlohmann::ordered_json::error_handler_t::replace);
}

std::string ClientAddress(const std::string& remote) {
  auto colon = remote.rfind(':');
  return colon == std::string::npos ? remote : remote.substr(0, colon);
}

HttpLogger MakeAccessLogger(verifier::Metrics* metrics) {
  return [metrics](const ServerRequest& req, const ServerResponse& res) {
    const double seconds =
        req.received == std::chrono::steady_clock::time_point{}
            ? 0
            : std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            req.received)
                  .count();
    const std::string method = verifier::MethodLabel(req.method);
    if (metrics != nullptr) {
      metrics->http_duration.Observe({method, req.route}, seconds);
      metrics->http_requests.Inc(
          {method, req.route, verifier::StatusClass(res.status)});
    }
    const double latency_ms =
        static_cast<double>(static_cast<int64_t>(seconds * 1e6)) / 1e3;
    const std::string path = Printable(req.path, 160);
    if (CurrentLogFormat() == LogFormat::kJson) {
      nlohmann::ordered_json f = {{"request_id", req.request_id},
                                  {"method", Printable(req.method, 16)},
                                  {"route", req.route},
                                  {"path", path},
                                  {"status", res.status},
                                  {"latency_ms", latency_ms},
                                  {"client", ClientAddress(req.remote)},
                                  {"bytes_in", req.body.size()}};
      if (!res.node_id.empty()) f["node_id"] = res.node_id;
      if (!res.decision.empty()) f["decision"] = res.decision;
      LogFields scope(std::move(f));
      spdlog::info("http request");
      return;
    }
    // Never headers or query strings (bearer tokens); the path is raw and
    // attacker-chosen, so only its printable form.
    std::string extra;
    if (!res.node_id.empty()) extra += " node_id=" + res.node_id;
    if (!res.decision.empty()) extra += " decision=" + res.decision;
    spdlog::info(
        "{} {} {} -> {} ({} bytes in) route={} request_id={} "
        "latency_ms={:.3f}{}",
        req.remote, Printable(req.method, 16), path, res.status,
        req.body.size(), req.route, req.request_id, latency_ms, extra);
  };
}

void LogAuditSink::Emit(const verifier::AuditEvent& e) {
  if (CurrentLogFormat() == LogFormat::kJson) {
    nlohmann::ordered_json f = {{"audit", true}};
    const nlohmann::json event = verifier::AuditEventJson(e);
    for (const auto& [k, v] : event.items()) f[k] = v;
    LogFields scope(std::move(f));
    spdlog::info("audit {}", e.event);
    return;
  }
  spdlog::info("audit {}", verifier::AuditEventLine(e));
}

}  // namespace dpuaudit::apps
