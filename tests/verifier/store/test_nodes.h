// A node record for store tests (not a real key: the store does not parse
// keys).
#ifndef DPUAUDIT_TESTS_VERIFIER_STORE_TEST_NODES_H_
#define DPUAUDIT_TESTS_VERIFIER_STORE_TEST_NODES_H_

#include <string>

#include "verifier/store/store.h"

namespace dpuaudit::testing {

inline verifier::NodeRecord StoreTestNode(const std::string& id) {
  verifier::NodeRecord n;
  n.node_id = id;
  n.public_key_pem = "-----BEGIN PUBLIC KEY-----\nkey\n-----END PUBLIC KEY-----\n";
  n.key_thumbprint = "thumb-" + id;
  n.enrolled_at = 900;
  return n;
}

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_VERIFIER_STORE_TEST_NODES_H_
