#include "verifier/audit_events.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace dpuaudit::verifier {

AuditEvent MakeAuditEvent(std::string event, std::string actor,
                          std::string node_id, std::string detail,
                          std::string outcome) {
  AuditEvent e;
  e.event = std::move(event);
  e.actor = std::move(actor);
  e.node_id = std::move(node_id);
  e.detail = std::move(detail);
  e.outcome = std::move(outcome);
  return e;
}

nlohmann::json AuditEventJson(const AuditEvent& e) {
  nlohmann::json j = {{"at", e.at},
                      {"event", e.event},
                      {"actor", e.actor.empty() ? "anonymous" : e.actor},
                      {"outcome", e.outcome},
                      {"source", e.source.empty() ? "server" : e.source}};
  auto optional = [&j](const char* k, const std::string& v) {
    if (!v.empty()) j[k] = v;
  };
  optional("node_id", e.node_id);
  optional("detail", e.detail);
  optional("client", e.client);
  optional("route", e.route);
  optional("request_id", e.request_id);
  return j;
}

std::string AuditEventLine(const AuditEvent& e) {
  return AuditEventJson(e).dump(-1, ' ', false,
                                nlohmann::json::error_handler_t::replace);
}

StatusOr<std::unique_ptr<FileAuditSink>> FileAuditSink::Open(
    const std::string& path) {
  if (path.empty()) return InvalidArgumentError("--audit-log: empty path.");
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return UnavailableError("--audit-log " + path +
                            ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError("--audit-log " + path +
                                ": not a regular file.");
  }
  // An existing file keeps its events but not a wider mode: audit lines
  // name nodes, actors and clients.
  if ((st.st_mode & 0777) != 0600 && ::fchmod(fd, 0600) != 0) {
    int err = errno;
    ::close(fd);
    return UnavailableError("--audit-log " + path +
                            ": cannot set mode 0600: " + std::strerror(err));
  }
  return std::unique_ptr<FileAuditSink>(new FileAuditSink(fd, path));
}

FileAuditSink::~FileAuditSink() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileAuditSink::Append(const AuditEvent& e) {
  std::string line = AuditEventLine(e) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return UnavailableError("audit log " + path_ +
                              ": write failed: " + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  return OkStatus();
}

void FileAuditSink::Emit(const AuditEvent& e) {
  Status s = Append(e);
  if (s.ok()) return;
  // Nowhere better to say it: stderr is the main log's stream.
  std::string msg = s.message() + "\n";
  (void)!::write(STDERR_FILENO, msg.data(), msg.size());
}

namespace {
thread_local RequestContext g_context;
}  // namespace

const RequestContext& CurrentRequestContext() { return g_context; }

ScopedRequestContext::ScopedRequestContext(RequestContext ctx)
    : previous_(std::exchange(g_context, std::move(ctx))) {}

ScopedRequestContext::~ScopedRequestContext() {
  g_context = std::move(previous_);
}

}  // namespace dpuaudit::verifier
