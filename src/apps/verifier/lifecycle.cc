#include "apps/verifier/lifecycle.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>

#include "apps/shared/token_file.h"
#include "apps/verifier/tls_credentials.h"
#include "common/files.h"

namespace dpuaudit::apps {

Status SdNotify(std::string_view state) {
  const char* env = std::getenv("NOTIFY_SOCKET");
  if (env == nullptr || *env == '\0') return OkStatus();
  std::string path = env;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return InvalidArgumentError("NOTIFY_SOCKET is longer than a unix socket path.");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() +
                                         (path[0] == '@' ? 0 : 1));
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(std::string("sd_notify: socket: ") + strerror(errno));
  ssize_t n = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL | MSG_DONTWAIT,
                     reinterpret_cast<const sockaddr*>(&addr), len);
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(state.size())) {
    return UnavailableError("sd_notify to " + path + ": " + strerror(err));
  }
  return OkStatus();
}

void ShutdownHooks::RunAll() {
  for (auto& [name, hook] : hooks_) {
    try {
      hook();
      spdlog::info("shutdown: {} done", name);
    } catch (const std::exception& e) {
      spdlog::error("shutdown: {} failed: {}", name, e.what());
    } catch (...) {
      spdlog::error("shutdown: {} failed", name);
    }
  }
  hooks_.clear();
}

namespace {

StatusOr<std::string> ReadTls(const std::string& path, const char* what) {
  auto bytes = ReadFileLimited(path, 1 << 20);
  if (!bytes.ok()) {
    return Status(bytes.status().code(),
                  std::string("TLS ") + what + " " + path + ": " + bytes.status().message());
  }
  return ToString(*bytes);
}

StatusOr<std::string> ReadToken(const std::string& path, const char* what) {
  if (path.empty()) return std::string();
  auto t = ReadTokenFile(path, what);
  if (!t.ok()) {
    return Status(t.status().code(), std::string(what) + " token file " + path + ": " +
                                         t.status().message());
  }
  return t;
}

}  // namespace

Status ReloadFiles(const ServeFlags& flags, verifier::VerifierService& svc,
                   HttpServer& server) {
  // 1. Read and validate everything; change nothing yet.
  DPA_ASSIGN_OR_RETURN(verifier::Policy policy,
                       verifier::LoadPolicyFile(flags.policy, verifier::KnownRules()));
  verifier::VerifierService::Tokens tokens;
  DPA_ASSIGN_OR_RETURN(tokens.bootstrap, ReadToken(flags.bootstrap_token_file, "bootstrap"));
  DPA_ASSIGN_OR_RETURN(tokens.admin, ReadToken(flags.admin_token_file, "admin"));
  DPA_ASSIGN_OR_RETURN(tokens.reader, ReadToken(flags.reader_token_file, "reader"));
  if (Status s = verifier::VerifierService::ValidateTokens(tokens); !s.ok()) {
    return Status(s.code(), "token files: " + s.message());
  }
  std::optional<std::pair<std::string, std::string>> tls;
  if (!flags.tls_cert.empty()) {
    DPA_ASSIGN_OR_RETURN(std::string cert, ReadTls(flags.tls_cert, "certificate"));
    DPA_ASSIGN_OR_RETURN(std::string key, ReadTls(flags.tls_key, "key"));
    if (auto c = TlsCredentials::FromPem(cert, key); !c.ok()) {
      return Status(c.status().code(), flags.tls_cert + " / " + flags.tls_key + ": " +
                                           c.status().message());
    }
    tls.emplace(std::move(cert), std::move(key));
  }
  // 2. Install: TLS, tokens, then the policy (which re-appraises).
  if (tls) {
    DPA_RETURN_IF_ERROR(server.SetTlsCredentials(tls->first, tls->second));
    spdlog::info("TLS certificate reloaded: {} sha256:{}", flags.tls_cert,
                 server.TlsLeafSha256());
  }
  DPA_RETURN_IF_ERROR(svc.SetTokens(std::move(tokens)));
  spdlog::info("bearer tokens reloaded");
  const std::string name = policy.name(), sha = policy.sha256();
  DPA_ASSIGN_OR_RETURN(std::vector<std::string> withdrawn, svc.SetPolicy(std::move(policy)));
  spdlog::info("policy reloaded: {} {}", name, sha);
  if (!withdrawn.empty()) {
    spdlog::warn("policy reload withdrew the admission of {} node(s)", withdrawn.size());
  }
  return OkStatus();
}

}  // namespace dpuaudit::apps
