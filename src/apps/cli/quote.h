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
//   ak.pub.pem      the AK public key (only when an AK is given)
//   ak.tpm2b_public the AK's TPM2B_PUBLIC as the verifier holds it (only
//                   when the AK came from the verifier)
//
// Guarantees: everything is checked before the first file is written; with
// an AK, its TPM name must equal the report's tpm.ak_name, else nothing is
// written.
// The AK file is a marshalled TPM2B_PUBLIC (tpm2_readpublic -o, or the
// verifier's record), a TPMT_PUBLIC, or a PEM public key; a PEM carries no
// TPM attributes, so its name is computed under the dpuaudit AK template
// (attest/tpm/tpm.h: ECC P-256, ECDSA-SHA256, restricted signing).
//
// Does not: verify the report's JWS signature (it says so in its output,
// as `report show` does without --pubkey), nor the quote itself — that is
// the point of handing it to tpm2_checkquote.
#ifndef DPUAUDIT_APPS_CLI_QUOTE_H_
#define DPUAUDIT_APPS_CLI_QUOTE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::apps {

struct QuoteExport {
  std::string report_name;  // in messages and output (the file, or "-")
  std::string out_dir;
  // The AK: a file (TPM2B_PUBLIC, TPMT_PUBLIC or PEM), or the TPM2B_PUBLIC
  // bytes the verifier holds; neither: no ak.pub.pem and no name check.
  std::string ak_file;
  Bytes ak_bytes;
  std::string ak_source;  // "--ak FILE" | "verifier URL, node ID"
};

struct QuoteFile {
  std::string name;  // "quote.msg"
  std::string path;  // out_dir + "/" + name
  size_t bytes = 0;
  std::string sha256;  // hex, of the bytes written
};

struct QuoteExportResult {
  std::string report_name, out_dir, node_id;
  std::vector<QuoteFile> files;  // in the order written
  std::string qualifying_hex;    // also in qualifying.hex
  std::string hash_alg;          // of the quote's signature: "sha256"
  std::string ak_name_hex;       // the report's tpm.ak_name
  bool ak_checked = false;       // an AK was given and its name matched
  std::string ak_source;
  nlohmann::json pcr_selection;  // {"sha256": [0, 1, ...]}: what the quote covers
};

// Writes the files above from a report (compact or flattened JWS text).
// Errors name the report (or the AK file): INVALID_ARGUMENT for what does
// not parse, FAILED_PRECONDITION for a report without a quote or an AK whose
// name is not the report's, INTERNAL for a folder or file not written.
StatusOr<QuoteExportResult> ExportQuote(std::string_view jws, const QuoteExport& x);

// The human lines ("wrote …", the tpm2_checkquote command line).
std::string QuoteExportText(const QuoteExportResult& r);
// {"file", "out_dir", "node_id", "signature", "files": [{"name", "path",
// "bytes", "sha256"}], "qualifying_data", "hash_alg", "pcr_selection", "ak":
// {"checked", "name", "source"}, "check_command": [argv]}
// (docs/schemas/report-export-quote.schema.json).
nlohmann::json QuoteExportJson(const QuoteExportResult& r);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_QUOTE_H_
