// The verifier's local operator commands, on its database or key files
// (no server needed): approve | reject | revoke | nodes | tokens (issue 12),
// jwks, keys list, prune and tpm reset. Each returns the process exit
// code: 0 done, 1 refused (wrong key or serial, wrong state, expired;
// apps/shared/exit_code.h RefusalExitCode), 2 usage or runtime error (an
// unknown node, a --db that does not exist: never created), printed to
// stderr with its reason.
//
// --json: the same shape as the `dpuaudit` admin API command of the same
// name wherever the data is the same (docs/schemas/: approve, reject,
// node-revoke, nodes-list, node-show, tokens-issue, tokens-list), and
// keys-list, prune, tpm-reset, jwks.
//
// Audit: the commands that change state (approve, reject, revoke, tokens
// issue, tpm reset, prune) append one security audit event each, as the
// server does for the same action (docs/audit-events-schema.md), with
// source "local" and the --by value (or the login name) as actor, also
// when the action is refused: to --audit-log FILE ($DPUAUDIT_AUDIT_LOG;
// the server's 0600 JSON-lines file, one write per line), else on stderr.
// An --audit-log that cannot be opened stops the command before it changes
// anything (exit 2); a line that cannot be written after the change exits
// 2 saying so.
#ifndef DPUAUDIT_APPS_VERIFIER_OPERATOR_COMMANDS_H_
#define DPUAUDIT_APPS_VERIFIER_OPERATOR_COMMANDS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace dpuaudit::verifier {
class SqlStore;
}  // namespace dpuaudit::verifier

namespace dpuaudit::apps {

struct LocalFlags {
  std::string db, node, thumbprint, serial, by, reason, out;
  std::string pending_ttl = "24h";
  std::string ttl = "24h";
  std::string audit_log;  // "" = stderr
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
  std::string db, by, audit_log;
  int64_t retain_reports = 100;
  int64_t retain_days = 90;
  bool json = false;
};
// `prune`: purge expired nonces and apply retention once (as serve does).
int Prune(const PruneFlags& f);

struct TpmResetFlags {
  std::string db, node, reason, by, audit_log;
  bool force = false;
  bool json = false;
};
// `tpm reset NODE`: delete a node's TPM binding (an active one with --force).
int TpmReset(const TpmResetFlags& f);

// `audit verify` / `audit checkpoint` (issue 16, audit_commands.cc).
struct AuditFlags {
  std::string db;
  std::string trust;  // JWKS, PEM or trust file; "" = keys in the store
  std::string key;    // checkpoint: the signing key
  std::string verifier_id;
  bool json = false;
};
int AuditVerify(const AuditFlags& f);
int AuditCheckpoint(const AuditFlags& f);

// The database of a local command. SQLite: NOT_FOUND when `db` is not an
// existing file (SQLite would create an empty one for a mistyped path).
// PostgreSQL (pg::IsConnInfo): the database must exist with this build's
// schema (FAILED_PRECONDITION otherwise: serve migrates, these commands
// never do); messages carry the connection string without its password.
StatusOr<std::unique_ptr<verifier::SqlStore>> OpenExistingDb(const std::string& db);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_OPERATOR_COMMANDS_H_
