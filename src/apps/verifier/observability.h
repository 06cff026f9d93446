// The verifier's logs (issue 15 §3): text or JSON lines on stderr, one
// access line per HTTP request, and the main-log audit sink.
//
// JSON format (`serve --log-format json`): every line is one JSON object
// {"ts": RFC 3339 UTC with milliseconds, "level", "msg", ...fields}; the
// fields are those of a LogFields scope active on the logging thread (the
// access line's request_id, method, route, ...; an audit event's members
// with "audit": true).
//
// Guarantees: a line is valid JSON whatever bytes the message or a field
// holds (nlohmann::json escapes control characters; invalid UTF-8 becomes
// U+FFFD); the access line never carries headers, query strings, bodies or
// nonces (so no bearer token, report or nonce), and only the printable form
// of the path and method.
// Does not: buffer (spdlog's stderr sink writes each line).
#ifndef DPUAUDIT_APPS_VERIFIER_OBSERVABILITY_H_
#define DPUAUDIT_APPS_VERIFIER_OBSERVABILITY_H_

#include <nlohmann/json.hpp>
#include <string>

#include "apps/verifier/http_server.h"
#include "common/status.h"
#include "verifier/audit_events.h"
#include "verifier/metrics.h"

namespace dpuaudit::apps {

enum class LogFormat { kText, kJson };
// "text" | "json"; INVALID_ARGUMENT otherwise.
StatusOr<LogFormat> ParseLogFormat(const std::string& s);

// Sets the default spdlog logger's formatter: the text pattern, or JSON.
void ConfigureLogFormat(LogFormat format);
LogFormat CurrentLogFormat();

// Fields for the log lines written on this thread while the scope lives
// (JSON format only; text lines ignore them).
class LogFields {
 public:
  explicit LogFields(nlohmann::ordered_json fields);
  ~LogFields();
  LogFields(const LogFields&) = delete;
  LogFields& operator=(const LogFields&) = delete;
  static const nlohmann::ordered_json* Current();

 private:
  const nlohmann::ordered_json* previous_;
  nlohmann::ordered_json fields_;
};

// The JSON line for one record (what the JSON formatter writes, without the
// newline): exposed for tests.
std::string JsonLogLine(const std::string& ts, const std::string& level,
                        const std::string& msg,
                        const nlohmann::ordered_json* fields);

// "ip:port" -> "ip" ("[v6]:port" -> "v6").
std::string ClientAddress(const std::string& remote);

// The access logger: one line per request (text or JSON per
// CurrentLogFormat()) and, when `metrics` is set, the HTTP request counter
// and latency histogram.
HttpLogger MakeAccessLogger(verifier::Metrics* metrics);

// Audit events into the main log ("audit": true), for serve without
// --audit-log.
class LogAuditSink : public verifier::AuditSink {
 public:
  void Emit(const verifier::AuditEvent& e) override;
};

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_OBSERVABILITY_H_
