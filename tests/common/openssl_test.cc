#include "common/openssl.h"

#include <gtest/gtest.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <type_traits>

namespace dpuaudit {
namespace {

// The free function behind OsslFree is called exactly once, and never for
// null.
int g_freed = 0;
void CountingFree(int* p) {
  ++g_freed;
  delete p;
}

TEST(OsslPtrTest, FreesOnceAndSkipsNull) {
  g_freed = 0;
  {
    OsslPtr<int, CountingFree> p(new int(7));
    OsslPtr<int, CountingFree> none;
    OsslPtr<int, CountingFree> moved = std::move(p);
    EXPECT_EQ(*moved, 7);
  }
  EXPECT_EQ(g_freed, 1);
}

TEST(OsslPtrTest, StatelessDeleterCostsNothing) {
  static_assert(sizeof(EvpPkeyPtr) == sizeof(EVP_PKEY*));
  static_assert(sizeof(X509StackPtr) == sizeof(void*));
  static_assert(std::is_empty_v<OsslFree<EVP_PKEY_free>>);
}

TEST(OsslPtrTest, OwnsRealHandles) {
  MdCtxPtr md(EVP_MD_CTX_new());
  ASSERT_NE(md, nullptr);
  BnPtr bn(BN_new());
  ASSERT_NE(bn, nullptr);
  ASSERT_EQ(BN_set_word(bn.get(), 42), 1);
  BnSecretPtr secret(BN_dup(bn.get()));
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ(BN_cmp(bn.get(), secret.get()), 0);
  X509StackPtr stack(sk_X509_new_null());
  ASSERT_NE(stack, nullptr);
  X509Ptr cert(X509_new());
  ASSERT_NE(cert, nullptr);
  ASSERT_GT(sk_X509_push(stack.get(), cert.release()), 0);  // stack owns it
  EXPECT_EQ(sk_X509_num(stack.get()), 1);
  BioPtr bio(BIO_new(BIO_s_mem()));
  ASSERT_NE(bio, nullptr);
  EXPECT_EQ(BIO_write(bio.get(), "abc", 3), 3);
  OsslBytesPtr<char> hex(BN_bn2hex(bn.get()));
  ASSERT_NE(hex, nullptr);
  EXPECT_STREQ(hex.get(), "2A");
}

}  // namespace
}  // namespace dpuaudit
