// The verifier's process lifecycle (issue 15): systemd readiness
// notification, the ordered shutdown hooks, and the SIGHUP reload of every
// file `serve` read at start that can change while serving (policy, bearer
// token files, TLS certificate and key).
#ifndef DPUAUDIT_APPS_VERIFIER_LIFECYCLE_H_
#define DPUAUDIT_APPS_VERIFIER_LIFECYCLE_H_

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/verifier/http_server.h"
#include "apps/verifier/serve.h"
#include "common/status.h"
#include "verifier/service.h"

namespace dpuaudit::apps {

// sd_notify(3)'s protocol, written here rather than linking libsystemd for
// one call: `state` ("READY=1", "STOPPING=1", ...) as one datagram to the
// AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an abstract name when
// it starts with '@'). Guarantees: no-op returning OK when NOTIFY_SOCKET is
// unset or empty; never blocks (MSG_DONTWAIT); UNAVAILABLE naming the socket
// when the datagram cannot be sent. Does not: unset NOTIFY_SOCKET, send
// file descriptors or credentials.
Status SdNotify(std::string_view state);

// Work run once, in the order added, after the HTTP server has drained
// and before `serve` exits: a hook that throws is logged and the next one
// still runs.
class ShutdownHooks {
 public:
  void Add(std::string name, std::function<void()> hook) {
    hooks_.emplace_back(std::move(name), std::move(hook));
  }
  void RunAll();

 private:
  std::vector<std::pair<std::string, std::function<void()>>> hooks_;
};

// SIGHUP: re-reads the policy file, the token files and the TLS certificate
// and key that `flags` name, validates each as `serve` does at start
// (policy: LoadPolicyFile with the same rule catalogue; tokens:
// ReadTokenFile and VerifierService::ValidateTokens; TLS: TlsCredentials),
// and only when ALL are valid installs them (TLS for the next handshakes,
// tokens at once, the policy with a re-appraisal of current admits).
// Guarantees: on any error nothing changes and the Status names the file
// and why; logs "policy reloaded: <name> <sha256>". Does not: reload the
// signing key, the store, --bmc-config or any limit (a restart does).
Status ReloadFiles(const ServeFlags& flags, verifier::VerifierService& svc,
                   HttpServer& server);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_LIFECYCLE_H_
