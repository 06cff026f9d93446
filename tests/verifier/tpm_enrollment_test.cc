// CheckTpmEnrollment's order of checks (issue 12): every cheap check, the
// EK certificate included, before the one expensive check (the RSA
// compositeness test), which runs only for keys nothing else vouches for
// and, for requests without a token, inside a WorkBudget.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>

#include "attest/tpm_test_util.h"
#include "common/bytes.h"
#include "verifier/tpm_appraisal.h"
#include "verifier/work_budget.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace t = ::dpuaudit::attest::testing;

constexpr int64_t kNow = 1'800'000'000;

struct Keys {
  Bytes prime_ek;  // RSA EK template, 4096-bit prime "modulus"
  Bytes prime_ak;  // RSA AK template, 4096-bit prime "modulus"
  Bytes ecc_ek;
  Bytes ecc_ak;
};

const Keys& TestKeys() {
  static const Keys keys = [] {
    Keys k;
    t::TestKey rsa = t::TestKey::Rsa(2048);
    k.prime_ek = t::MarshalTpm2bPublic(
        t::WithPrimeModulus4096(t::MakeTpmtPublic(rsa, t::EkTemplate())));
    k.prime_ak = t::MarshalTpm2bPublic(
        t::WithPrimeModulus4096(t::MakeTpmtPublic(rsa, t::AkTemplate(rsa))));
    t::TestKey ek = t::TestKey::EccP256();
    k.ecc_ek = t::PublicBlob(ek, t::EkTemplate());
    t::TestKey ak = t::TestKey::EccP256();
    k.ecc_ak = t::PublicBlob(ak, t::AkTemplate(ak));
    return k;
  }();
  return keys;
}

nlohmann::json Tpm(const Bytes& ek, const Bytes& ak, const std::string& cert = "") {
  nlohmann::json j = {{"ek_public_b64", Base64Encode(ek)},
                      {"ak_public_b64", Base64Encode(ak)}};
  if (!cert.empty()) j["ek_cert_b64"] = Base64Encode(AsBytes(cert));
  return j;
}

struct FakeTime {
  std::atomic<int64_t> us{1'000'000};
  WorkBudgetOptions Options(uint32_t ms_per_s) {
    return WorkBudgetOptions{ms_per_s, 1, [this] { return us.load(); }};
  }
};

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now() - start)
      .count();
}

// The request of issue 12 (no token, a 4096-bit prime EK) under a policy
// that wants EK certificates: refused by a cheap check, whatever the budget
// holds, and without touching it.
TEST(TpmEnrollmentTest, CheapRefusalsComeBeforeTheCompositenessTest) {
  const Keys& k = TestKeys();
  TpmPolicy certified_only;
  FakeTime time;
  WorkBudget budget("checks", time.Options(100));
  budget.Charge(1'000'000);  // spent: any expensive step would be refused
  struct Case {
    std::string name;
    nlohmann::json tpm;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"no certificate", Tpm(k.prime_ek, k.ecc_ak), StatusCode::kPermissionDenied,
       "the TPM has no EK certificate, and the policy does not allow"},
      {"junk certificate", Tpm(k.prime_ek, k.ecc_ak, "junk"),
       StatusCode::kInvalidArgument, "tpm.ek_cert_b64: EK certificate does not parse"},
      {"the AK is a decryption key", Tpm(k.prime_ek, k.prime_ek),
       StatusCode::kInvalidArgument, "tpm.ak_public_b64: "},
  };
  const int64_t before = budget.available_us();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto start = std::chrono::steady_clock::now();
    auto r = CheckTpmEnrollment(c.tpm, certified_only, "/nonexistent", kNow, &budget);
    const int64_t us = MicrosSince(start);
    std::cout << c.name << ": refused in " << us << " us\n";
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_THAT(r.status().message(), StartsWith(c.message));
  }
  EXPECT_EQ(budget.available_us(), before);  // nothing was charged
}

TEST(TpmEnrollmentTest, CompositenessTestRunsLastAndInsideTheBudget) {
  const Keys& k = TestKeys();
  TpmPolicy uncertified_ok;
  uncertified_ok.allow_uncertified_ek = true;
  struct Case {
    std::string name;
    nlohmann::json tpm;
    std::string field;
  };
  for (const Case& c : {Case{"prime EK", Tpm(k.prime_ek, k.ecc_ak), "tpm.ek_public_b64"},
                        Case{"prime AK", Tpm(k.ecc_ek, k.prime_ak), "tpm.ak_public_b64"}}) {
    SCOPED_TRACE(c.name);
    const std::string prime = c.field +
                              ": the RSA unique field fails the public key "
                              "check (the modulus is prime).";
    // With a token (no budget): tested and refused.
    EXPECT_EQ(CheckTpmEnrollment(c.tpm, uncertified_ok, "", kNow).status(),
              InvalidArgumentError(prime));
    // Without: charged to the budget, then refused by it.
    FakeTime time;
    WorkBudget budget("checks", time.Options(50));
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(CheckTpmEnrollment(c.tpm, uncertified_ok, "", kNow, &budget).status(),
              InvalidArgumentError(prime));
    const int64_t wall_us = MicrosSince(start);
    const int64_t charged = 50'000 - budget.available_us();
    std::cout << c.name << ": compositeness test " << wall_us << " us wall, "
              << charged << " us CPU charged\n";
    EXPECT_GT(charged, 0);
    while (budget.available_us() > 0) budget.Charge(10'000);
    auto limited = CheckTpmEnrollment(c.tpm, uncertified_ok, "", kNow, &budget);
    EXPECT_EQ(limited.status().code(), StatusCode::kRateLimited);
    EXPECT_THAT(limited.status().message(),
                HasSubstr("checks: limited to 50 ms of CPU per second in all; retry in"));
  }
  // ECC keys have no deferred test: no budget needed, none charged.
  FakeTime time;
  WorkBudget budget("checks", time.Options(50));
  budget.Charge(1'000'000);
  auto ecc = CheckTpmEnrollment(Tpm(k.ecc_ek, k.ecc_ak), uncertified_ok, "", kNow, &budget);
  ASSERT_TRUE(ecc.ok()) << ecc.status().ToString();
  EXPECT_TRUE(ecc->ek.key_fully_checked());
  EXPECT_TRUE(ecc->ak.key_fully_checked());
}

}  // namespace
}  // namespace dpuaudit::verifier
