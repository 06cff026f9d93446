// Shared helpers for the report tests: keys generated at test time (never
// committed), hand-built JWS for negative cases, and failing doubles.
#ifndef DPUAUDIT_TESTS_REPORT_REPORT_TEST_UTIL_H_
#define DPUAUDIT_TESTS_REPORT_REPORT_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "device/evidence.h"
#include "testing/status_matchers.h"

namespace dpuaudit::report::testing {

// A fresh P-256 key with its signer and verifier.
struct TestKey {
  std::unique_ptr<EcPrivateKey> priv;
  std::unique_ptr<Es256Signer> signer;
  std::unique_ptr<Es256Verifier> verifier;

  static TestKey New() {
    TestKey k;
    auto priv = EcPrivateKey::Generate();
    EXPECT_TRUE(priv.ok()) << priv.status().ToString();
    k.priv = std::make_unique<EcPrivateKey>(std::move(priv).value());
    auto s = Es256Signer::New(*k.priv);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    k.signer = std::move(s).value();
    auto v = Es256Verifier::New(k.priv->public_key());
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    k.verifier = std::move(v).value();
    return k;
  }
  const EcPublicKey& public_key() const { return priv->public_key(); }
};

// A compact JWS over an arbitrary header text, signed by `signer` (so that
// negative cases fail at the check under test, not at the signature).
inline std::string SignRaw(std::string_view header_json,
                           std::string_view payload, const Signer& signer) {
  std::string input = Base64UrlEncode(AsBytes(header_json)) + "." +
                      Base64UrlEncode(AsBytes(payload));
  auto sig = signer.Sign(AsBytes(input));
  EXPECT_TRUE(sig.ok()) << sig.status().ToString();
  return input + "." + Base64UrlEncode(*sig);
}

// Accepts every signature and counts calls: lets a test reach the code
// behind the signature check, or prove it was (not) reached.
class AcceptAllVerifier final : public Verifier {
 public:
  Status Verify(ByteView, ByteView) const override {
    ++calls_;
    return OkStatus();
  }
  int calls() const { return calls_; }

 private:
  mutable std::atomic<int> calls_{0};
};

class FailingVerifier final : public Verifier {
 public:
  explicit FailingVerifier(Status s) : status_(std::move(s)) {}
  Status Verify(ByteView, ByteView) const override { return status_; }

 private:
  Status status_;
};

class FixedSigner final : public Signer {
 public:
  explicit FixedSigner(StatusOr<Bytes> out) : out_(std::move(out)) {}
  StatusOr<Bytes> Sign(ByteView) const override { return out_; }

 private:
  StatusOr<Bytes> out_;
};

// StatusIs / StatusHas live in tests/testing/status_matchers.h.
using ::dpuaudit::testing::StatusHas;
using ::dpuaudit::testing::StatusIs;

// A command evidence item with its sha256 set, as the agent records one.
inline device::Evidence Command(std::string id, std::vector<std::string> argv,
                                std::string out, std::string err, int exit_code) {
  device::Evidence e;
  e.id = std::move(id);
  e.kind = device::EvidenceKind::kCommand;
  e.argv = std::move(argv);
  e.exit_code = exit_code;
  e.raw = ToBytes(out);
  e.stderr_raw = ToBytes(err);
  e.sha256 = Sha256Hex(e.raw);
  return e;
}

}  // namespace dpuaudit::report::testing

#endif  // DPUAUDIT_TESTS_REPORT_REPORT_TEST_UTIL_H_
