// Audit events: the verifier's security audit stream (who did what to which
// node, when, from where, and whether it was allowed), separate from the
// operational log. Schema: docs/audit-events-schema.md.
//
// Sinks:
//  - FileAuditSink (`serve --audit-log FILE`): one JSON object per line,
//    the file opened O_APPEND and created 0600 (an existing file is set to
//    0600), each event written with one write(2) under a mutex, so lines
//    never interleave and an event is in the kernel before Emit returns.
//  - apps/verifier/observability.h LogAuditSink (no --audit-log): each
//    event is one line of the main log with "audit": true.
//  The local operator commands (`dpuaudit-verifier approve|reject|revoke|
//  tokens issue|tpm reset|prune --audit-log FILE`) append to the same file
//  through FileAuditSink::Append, with source "local".
//
// RequestContext: the HTTP layer sets, per request and thread, the client
// address, route pattern and request id, so that events emitted deep in
// VerifierService carry them without every call taking them.
//
// Guarantees: an event line is valid JSON whatever bytes its fields hold
// (invalid UTF-8 replaced by U+FFFD, control characters escaped); sinks are
// thread-safe.
// Does not: carry secrets (callers never put a token, nonce or report body
// in an event: actors are "token:<token_id>", "bootstrap", "anonymous" or
// the request's "by"); fsync (a crash can lose the kernel's unwritten
// pages); rotate the file (use logrotate with copytruncate, or move it and
// restart).
#ifndef DPUAUDIT_VERIFIER_AUDIT_EVENTS_H_
#define DPUAUDIT_VERIFIER_AUDIT_EVENTS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace dpuaudit::verifier {

struct AuditEvent {
  int64_t at = 0;         // Unix seconds
  std::string event;      // e.g. "enrollment", "auth_failure" (docs/audit-events-schema.md)
  std::string actor;      // "by", "token:<token_id>", "bootstrap", "admin", "anonymous"
  std::string node_id;    // the node concerned, "" when none
  std::string detail;     // what, in words (release, state, error message)
  std::string outcome;    // "ok" | "refused"
  std::string client;     // requester's IP address, "" for a local command
  std::string route;      // the HTTP route pattern, "" for a local command
  std::string request_id; // the access log's request_id, "" for a local command
  std::string source;     // "local" for a local command; "" = "server"
};

// The five fields every emitter sets; at, client, route and request_id are
// filled in by VerifierService::Audit.
AuditEvent MakeAuditEvent(std::string event, std::string actor, std::string node_id,
                          std::string detail, std::string outcome);

// {"at", "event", "actor", "outcome", "source", "node_id", "detail",
//  "client", "route", "request_id"} (empty strings omitted except
// event/outcome/actor; source is "server" unless set).
nlohmann::json AuditEventJson(const AuditEvent& e);
// AuditEventJson dumped on one line, invalid UTF-8 replaced.
std::string AuditEventLine(const AuditEvent& e);

class AuditSink {
 public:
  virtual ~AuditSink() = default;
  virtual void Emit(const AuditEvent& e) = 0;
};

class FileAuditSink : public AuditSink {
 public:
  // Opens (creates 0600) `path` for appending; INVALID_ARGUMENT /
  // UNAVAILABLE naming the path when it cannot.
  static StatusOr<std::unique_ptr<FileAuditSink>> Open(const std::string& path);
  ~FileAuditSink() override;
  FileAuditSink(const FileAuditSink&) = delete;
  FileAuditSink& operator=(const FileAuditSink&) = delete;
  // Emit, telling the caller: UNAVAILABLE naming the file when the line
  // could not be written whole.
  Status Append(const AuditEvent& e);
  // Append; a failure is written to stderr (the server has nowhere better).
  void Emit(const AuditEvent& e) override;

 private:
  FileAuditSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  std::mutex mu_;
  int fd_;
  std::string path_;
};

// Per-thread context of the request being handled (empty outside one).
struct RequestContext {
  std::string client;
  std::string route;
  std::string request_id;
};
const RequestContext& CurrentRequestContext();
class ScopedRequestContext {
 public:
  explicit ScopedRequestContext(RequestContext ctx);
  ~ScopedRequestContext();
  ScopedRequestContext(const ScopedRequestContext&) = delete;
  ScopedRequestContext& operator=(const ScopedRequestContext&) = delete;

 private:
  RequestContext previous_;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_AUDIT_EVENTS_H_
