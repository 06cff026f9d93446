// Owning pointers for OpenSSL handles: one std::unique_ptr alias per type,
// each freed by its own OpenSSL free function.
//
// Guarantees: a null pointer is never passed to the free function (so the
// aliases are safe for every *_free, including ones that do not accept
// null); the deleter is stateless, so a pointer costs one machine word.
// EC_POINT is freed with EC_POINT_clear_free (it may hold a secret
// scalar's product); stacks of X509 free their certificates too.
// Does not: call any OpenSSL function but the free functions; up-reference
// anything (wrap a borrowed handle only after its *_up_ref).
#ifndef DPUAUDIT_COMMON_OPENSSL_H_
#define DPUAUDIT_COMMON_OPENSSL_H_

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>

namespace dpuaudit {

// The deleter: OsslFree<EVP_PKEY_free> frees an EVP_PKEY*.
template <auto Fn>
struct OsslFree {
  template <class T>
  void operator()(T* p) const {
    if (p != nullptr) Fn(p);
  }
};

// std::unique_ptr<T> freed by `Fn`.
template <class T, auto Fn>
using OsslPtr = std::unique_ptr<T, OsslFree<Fn>>;

namespace ossl_internal {
// Stacks are freed by a macro; this is the function behind it.
inline void FreeX509Stack(STACK_OF(X509) * s) { sk_X509_pop_free(s, X509_free); }
}  // namespace ossl_internal

using BioPtr = OsslPtr<BIO, BIO_free>;
using BnPtr = OsslPtr<BIGNUM, BN_free>;
// A BIGNUM that held a secret: zeroed before it is freed.
using BnSecretPtr = OsslPtr<BIGNUM, BN_clear_free>;
using BnCtxPtr = OsslPtr<BN_CTX, BN_CTX_free>;
using CipherCtxPtr = OsslPtr<EVP_CIPHER_CTX, EVP_CIPHER_CTX_free>;
using EcGroupPtr = OsslPtr<EC_GROUP, EC_GROUP_free>;
using EcPointPtr = OsslPtr<EC_POINT, EC_POINT_clear_free>;
using EcdsaSigPtr = OsslPtr<ECDSA_SIG, ECDSA_SIG_free>;
using EvpPkeyPtr = OsslPtr<EVP_PKEY, EVP_PKEY_free>;
using GeneralNamesPtr = OsslPtr<GENERAL_NAMES, GENERAL_NAMES_free>;
using MdCtxPtr = OsslPtr<EVP_MD_CTX, EVP_MD_CTX_free>;
using OsslParamBldPtr = OsslPtr<OSSL_PARAM_BLD, OSSL_PARAM_BLD_free>;
using OsslParamPtr = OsslPtr<OSSL_PARAM, OSSL_PARAM_free>;
using PkeyCtxPtr = OsslPtr<EVP_PKEY_CTX, EVP_PKEY_CTX_free>;
using X509Ptr = OsslPtr<X509, X509_free>;
using X509StackPtr = OsslPtr<STACK_OF(X509), ossl_internal::FreeX509Stack>;
using X509StoreCtxPtr = OsslPtr<X509_STORE_CTX, X509_STORE_CTX_free>;
using X509StorePtr = OsslPtr<X509_STORE, X509_STORE_free>;

// Memory OpenSSL allocated for us (i2d_* output, BN_bn2hex, ...).
inline void OsslFreeBytes(void* p) { OPENSSL_free(p); }
template <class T>
using OsslBytesPtr = std::unique_ptr<T, OsslFree<OsslFreeBytes>>;

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_OPENSSL_H_
