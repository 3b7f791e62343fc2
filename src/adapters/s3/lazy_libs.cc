#include "adapters/s3/lazy_libs.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace sedna::s3 {

namespace {

template <class Api>
struct Loaded {
  Api api{};
  std::string error;  // empty when loaded
};

// Resolves `name` into `slot`; records the first failure.
template <class Fn>
void Resolve(void* lib, const char* name, Fn& slot, std::string& error) {
  void* p = lib ? ::dlsym(lib, name) : nullptr;
  if (p == nullptr && error.empty()) error = std::string("missing symbol ") + name;
  slot = reinterpret_cast<Fn>(p);
}

void* Open(const char* const* names, std::string& error) {
  for (const char* const* n = names; *n != nullptr; ++n) {
    if (void* lib = ::dlopen(*n, RTLD_NOW | RTLD_LOCAL)) return lib;
  }
  const char* why = ::dlerror();
  error = std::string("S3 needs ") + names[0] + ": " + (why ? why : "cannot be loaded");
  return nullptr;
}

const Loaded<CurlApi>& Curl() {
  static const Loaded<CurlApi> loaded = [] {
    Loaded<CurlApi> l;
    static const char* const kNames[] = {"libcurl.so.4", "libcurl.so", nullptr};
    void* lib = Open(kNames, l.error);
    if (!lib) return l;
    CurlApi& a = l.api;
    Resolve(lib, "curl_global_init", a.global_init, l.error);
    Resolve(lib, "curl_easy_init", a.easy_init, l.error);
    Resolve(lib, "curl_easy_cleanup", a.easy_cleanup, l.error);
    Resolve(lib, "curl_easy_reset", a.easy_reset, l.error);
    Resolve(lib, "curl_easy_setopt", a.easy_setopt, l.error);
    Resolve(lib, "curl_easy_getinfo", a.easy_getinfo, l.error);
    Resolve(lib, "curl_easy_perform", a.easy_perform, l.error);
    Resolve(lib, "curl_easy_strerror", a.easy_strerror, l.error);
    Resolve(lib, "curl_slist_append", a.slist_append, l.error);
    Resolve(lib, "curl_slist_free_all", a.slist_free_all, l.error);
    if (l.error.empty() && a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      l.error = "S3: curl_global_init failed";
    }
    if (!l.error.empty() && l.error.rfind("S3", 0) != 0) l.error = "S3: libcurl: " + l.error;
    return l;
  }();
  return loaded;
}

const Loaded<CryptoApi>& CryptoLib() {
  static const Loaded<CryptoApi> loaded = [] {
    Loaded<CryptoApi> l;
    static const char* const kNames[] = {"libcrypto.so.3", "libcrypto.so", nullptr};
    void* lib = Open(kNames, l.error);
    if (!lib) return l;
    CryptoApi& a = l.api;
    Resolve(lib, "EVP_sha256", a.sha256, l.error);
    Resolve(lib, "EVP_MD_CTX_new", a.md_ctx_new, l.error);
    Resolve(lib, "EVP_MD_CTX_free", a.md_ctx_free, l.error);
    Resolve(lib, "EVP_DigestInit_ex", a.digest_init_ex, l.error);
    Resolve(lib, "EVP_DigestUpdate", a.digest_update, l.error);
    Resolve(lib, "EVP_DigestFinal_ex", a.digest_final_ex, l.error);
    Resolve(lib, "HMAC", a.hmac, l.error);
    if (!l.error.empty() && l.error.rfind("S3", 0) != 0) l.error = "S3: libcrypto: " + l.error;
    return l;
  }();
  return loaded;
}

}  // namespace

const CurlApi* LoadCurl(std::string* error) {
  const auto& l = Curl();
  if (!l.error.empty()) {
    if (error) *error = l.error;
    return nullptr;
  }
  return &l.api;
}

const CryptoApi* LoadCrypto(std::string* error) {
  const auto& l = CryptoLib();
  if (!l.error.empty()) {
    if (error) *error = l.error;
    return nullptr;
  }
  return &l.api;
}

const CryptoApi& Crypto() {
  std::string error;
  const CryptoApi* c = LoadCrypto(&error);
  if (c == nullptr) {
    std::fprintf(stderr, "sedna-lc: %s\n", error.c_str());
    std::abort();
  }
  return *c;
}

}  // namespace sedna::s3
