// The verifier's local operator commands, on its database or key files
// (no server needed): approve | reject | revoke | nodes | tokens (issue 12),
// jwks, prune and tpm reset. Each returns the process exit code: 0 done,
// 1 refused (wrong key or serial, wrong state, expired), 2 usage or runtime
// error (an unknown node, a --db that does not exist: never created),
// printed to stderr with its reason.
#ifndef DPUAUDIT_APPS_VERIFIER_OPERATOR_COMMANDS_H_
#define DPUAUDIT_APPS_VERIFIER_OPERATOR_COMMANDS_H_

#include <cstdint>
#include <string>

namespace dpuaudit::apps {

struct LocalFlags {
  std::string db, node, thumbprint, serial, by, reason, out;
  std::string pending_ttl = "24h";
  std::string ttl = "24h";
  bool json = false;
};

int LocalApprove(const LocalFlags& f);
int LocalReject(const LocalFlags& f);
int LocalRevoke(const LocalFlags& f);
int LocalNodeShow(const LocalFlags& f);
int LocalNodeList(const LocalFlags& f);
int LocalTokenIssue(const LocalFlags& f);
int LocalTokenList(const LocalFlags& f);

// `jwks --key FILE`: the JWKS of a signing key, to pin on relying parties.
int PrintJwks(const std::string& key_file);
// `keys list` (issue 15, keys part; keys_command.cc): the EAR signing keys
// recorded in the database, current first, with their JWKS status.
int SigningKeysList(const std::string& db, bool json);

struct PruneFlags {
  std::string db;
  int64_t retain_reports = 100;
  int64_t retain_days = 90;
  bool json = false;
};
// `prune`: purge expired nonces and apply retention once (as serve does).
int Prune(const PruneFlags& f);

struct TpmResetFlags {
  std::string db, node, reason;
  bool force = false;
  bool json = false;
};
// `tpm reset NODE`: delete a node's TPM binding (an active one with --force).
int TpmReset(const TpmResetFlags& f);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_OPERATOR_COMMANDS_H_
