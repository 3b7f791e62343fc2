// Invariant checks for the libFuzzer harnesses: a broken invariant prints what broke and aborts,
// which libFuzzer reports as a crash (and saves the input), as it does a sanitizer finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(cond, what)                                                              \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   std::string_view(what).data());                                          \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

// A name the LC may use in store keys and paths (json/k8s_names.h, checked independently and only
// as far as the alphabet goes): empty, or [a-z0-9.-] only (so no '/'); a namespace has no '.'.
inline bool NameAlphabetOk(std::string_view s, bool is_namespace) {
  for (char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (c == '.' && !is_namespace);
    if (!ok) return false;
  }
  return true;
}
