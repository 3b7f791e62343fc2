// libcurl and libcrypto, loaded with dlopen on the first S3 request instead of at exec. The two
// pull in ~40 shared libraries (GnuTLS, Kerberos, LDAP, p11-kit, …) whose load-time relocations
// and constructors cost ~5 MB of RSS; an LC with no S3 object never maps them (design-notes §D2
// idle-RSS target). Loading is thread-safe and happens once; a failure is remembered and
// reported by every call.
#pragma once

#define CURL_DISABLE_TYPECHECK  // curl_easy_setopt as a plain variadic function
#include <curl/curl.h>
#include <openssl/evp.h>

#include <string>

namespace sedna::s3 {

struct CurlApi {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  CURLcode (*easy_perform)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

struct CryptoApi {
  const EVP_MD* (*sha256)();
  EVP_MD_CTX* (*md_ctx_new)();
  void (*md_ctx_free)(EVP_MD_CTX*);
  int (*digest_init_ex)(EVP_MD_CTX*, const EVP_MD*, ENGINE*);
  int (*digest_update)(EVP_MD_CTX*, const void*, size_t);
  int (*digest_final_ex)(EVP_MD_CTX*, unsigned char*, unsigned int*);
  unsigned char* (*hmac)(const EVP_MD*, const void*, int, const unsigned char*, size_t,
                         unsigned char*, unsigned int*);
};

// libcurl (curl_global_init done), or nullptr with *error set, e.g.
// "S3 needs libcurl.so.4: libcurl.so.4: cannot open shared object file: No such file or directory".
const CurlApi* LoadCurl(std::string* error);
// libcrypto, or nullptr with *error set.
const CryptoApi* LoadCrypto(std::string* error);
// LoadCrypto for code that has no error path (the signer): a library that cannot be loaded
// aborts with the reason. Client requests call LoadCrypto first and report the error instead.
const CryptoApi& Crypto();

}  // namespace sedna::s3
