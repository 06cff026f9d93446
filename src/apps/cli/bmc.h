// The CLI's BMC and SPDM commands:
//   dpuaudit bmc show --url URL --credentials FILE (--pin-key PEM | --pin-sha256 HEX |
//                     --ca FILE) [--anchors PEM]... [--no-spdm] [--json]
//   dpuaudit spdm verify --evidence FILE --chain FILE --nonce HEX [--anchors PEM]...
//                        [--json]
// Exit codes: 0 shown / verified; 1 a verification failed (bmc show: an SPDM
// target that was read but did not verify; spdm verify: any failure of the
// evidence); 2 usage, I/O or connection error.
#ifndef DPUAUDIT_APPS_CLI_BMC_H_
#define DPUAUDIT_APPS_CLI_BMC_H_

#include <string>
#include <vector>

namespace dpuaudit::apps {

struct BmcShowOptions {
  std::string url;
  std::string credentials;  // JSON {"username", "password"}, mode 0600
  std::string pin_key;      // PEM certificate or public key of the BMC's TLS key
  std::string pin_sha256;   // or its SPKI SHA-256, hex
  std::string ca;           // or a CA bundle (name and chain verified)
  bool basic_auth = false;  // HTTP basic instead of a Redfish session
  std::vector<std::string> anchors;  // DICE trust anchors (PEM files)
  bool spdm = true;
  bool json = false;
  int timeout_ms = 10000;
};
int BmcShow(const BmcShowOptions& o);

struct SpdmVerifyOptions {
  std::string evidence;  // Redfish evidence JSON, or a base64 transcript; "-" stdin
  std::string chain;     // PEM chain (leaf first or root first) or just the leaf
  std::string nonce;     // 64 hex digits
  std::string signing = "TPM_ALG_ECDSA_ECC_NIST_P384";  // for a bare transcript
  std::string hashing = "TPM_ALG_SHA_384";
  std::vector<std::string> anchors;
  bool json = false;
};
int SpdmVerify(const SpdmVerifyOptions& o);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_BMC_H_
