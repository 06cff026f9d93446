// The CLI's relying-party commands: `dpuaudit admit`, `dpuaudit result
// show/summary` and the trust store (`dpuaudit trust add/list/remove`).
//
// Every EAR is checked with report::DecideAdmission / VerifyPinnedEar
// against PINNED verifier keys only (--jwks FILE, --verifier-key PEM, or a
// trust file, docs/trust-file.md). A key is never taken from the server the
// EAR came from; `trust add --verifier URL` fetches a JWKS only together
// with the thumbprint the operator confirms (--fingerprint).
//
// Exit codes: 0 admit / ok, 1 deny (every verification failure included),
// 2 usage or runtime error (no pinned key, verifier unreachable, HTTP error).
#ifndef DPUAUDIT_APPS_CLI_ADMIT_H_
#define DPUAUDIT_APPS_CLI_ADMIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "report/admission.h"

namespace dpuaudit::apps {

// Where pinned keys come from: the first of jwks_file, verifier_key_file,
// trust_file that is set; else the default trust file.
struct PinnedKeySource {
  std::string jwks_file;
  std::string verifier_key_file;  // PEM public key
  std::string trust_file;
};

// --trust-file if set, else $DPUAUDIT_TRUST_FILE, else
// $XDG_CONFIG_HOME/dpuaudit/trust.json, else ~/.config/dpuaudit/trust.json.
std::string TrustFilePath(const std::string& explicit_path);

// The trust file at `path`; an absent file is an empty set. Refused
// (PERMISSION_DENIED) when group or others may write it.
StatusOr<report::TrustedKeys> ReadTrustFile(const std::string& path);

// The pinned keys, with `*described` saying where they came from.
// FAILED_PRECONDITION with instructions when nothing is pinned.
StatusOr<report::TrustedKeys> LoadPinnedKeys(const PinnedKeySource& source,
                                             std::string* described);

struct AdmitOptions {
  std::string verifier;  // base URL (fetch the EAR)
  std::string ear_file;  // or: read the EAR from this file
  std::string node;
  std::optional<std::string> verifier_id;
  std::string token_file;  // reader (or admin) token
  std::string cacert;
  bool insecure_http = false;
  bool json = false;
  bool quiet = false;
  int64_t max_skew_seconds = report::kDefaultMaxSkewSeconds;
  PinnedKeySource keys;
};
int Admit(const AdmitOptions& o);

int ResultShow(const std::string& file, const PinnedKeySource& keys, bool json);
int ResultSummary(const std::vector<std::string>& files, const PinnedKeySource& keys,
                  bool json);

struct TrustAddOptions {
  std::string jwks_file;
  std::string verifier_key_file;
  std::string verifier;     // fetch /.well-known/jwks.json from here …
  std::string fingerprint;  // … and pin only the key with this thumbprint
  std::string trust_file;
  std::string cacert;
  bool insecure_http = false;
  bool json = false;  // docs/schemas/trust-change.schema.json
};
// Exit 1 when nothing could be pinned (no key with --fingerprint).
int TrustAdd(const TrustAddOptions& o);
// `json`: docs/schemas/trust-list.schema.json.
int TrustList(const std::string& trust_file, bool json);
// Exit 1 when `kid` is not pinned. `json`: trust-change.schema.json.
int TrustRemove(const std::string& trust_file, const std::string& kid, bool json);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_ADMIT_H_
