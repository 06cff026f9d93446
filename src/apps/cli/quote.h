// `dpuaudit report export-quote`: writes a report's TPM quote as the files
// tpm2-tools 5.x reads, so an auditor can check it with a tool we did not
// write:
//   tpm2_checkquote -u ak.pub.pem -m quote.msg -s quote.sig
//                   -f quote.pcrs -g sha256 -q $(cat qualifying.hex)
//
// Files written to `out_dir` (created if missing; existing files replaced):
//   quote.msg       the TPMS_ATTEST bytes, as `tpm2_quote -m` writes them
//   quote.sig       the TPMT_SIGNATURE, as `tpm2_quote -s` writes them
//   quote.pcrs      the reported PCR values of the quoted selection, in the
//                   `tpm2_quote -o` serialized format (attest/tpm_structs.h)
//   qualifying.hex  hex(SHA-256(nonce ‖ SHA-256(claims without "tpm"))),
//                   the extraData the quote must carry
//                   (docs/architecture.md#report-format)
//   ak.pub.pem      the AK public key (only with `ak_public_file`)
//
// Guarantees: with an AK file, its TPM name must equal the report's
// tpm.ak_name, else nothing about the AK is written and the exit code is 2.
// The AK file is a marshalled TPM2B_PUBLIC (tpm2_readpublic -o, or the
// verifier's record), a TPMT_PUBLIC, or a PEM public key; a PEM carries no
// TPM attributes, so its name is computed under the dpuaudit AK template
// (attest/tpm/tpm.h: ECC P-256, ECDSA-SHA256, restricted signing).
// Does not: verify the report's JWS signature (it says so on stdout, as
// `report show` does without --pubkey), nor the quote itself — that is the
// point of handing it to tpm2_checkquote.
// Exit codes: 0 written, 2 error (reason on stderr).
#ifndef DPUAUDIT_APPS_CLI_QUOTE_H_
#define DPUAUDIT_APPS_CLI_QUOTE_H_

#include <string>

namespace dpuaudit::apps {

// Without the AK: everything but ak.pub.pem (and no AK name check).
int ExportQuote(const std::string& report_file, const std::string& out_dir);
int ExportQuote(const std::string& report_file, const std::string& out_dir,
                const std::string& ak_public_file);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_QUOTE_H_
