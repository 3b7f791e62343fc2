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
