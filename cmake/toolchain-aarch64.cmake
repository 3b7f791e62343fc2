# Cross-compiles sedna-lc for arm64 (aarch64) on a Debian amd64 host: Debian's
# crossbuild-essential-arm64 and the :arm64 dev packages in multiarch paths (/usr/lib/aarch64-linux-gnu).
# libyaml-cpp-dev is not Multi-Arch: same (its :arm64 package would remove the amd64 one), so
# tools/arm64.sh unpacks it under SEDNA_ARM64_DEPS (default build/deps-arm64) instead.
# Tests run through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR); the arm64 loader and libc come
# from libc6:arm64 (/lib/ld-linux-aarch64.so.1), which the :arm64 library packages pull in.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(DEFINED ENV{SEDNA_ARM64_DEPS})
  set(SEDNA_ARM64_DEPS $ENV{SEDNA_ARM64_DEPS})
else()
  get_filename_component(SEDNA_ARM64_DEPS ${CMAKE_CURRENT_LIST_DIR}/../build/deps-arm64 ABSOLUTE)
endif()
list(APPEND CMAKE_PREFIX_PATH ${SEDNA_ARM64_DEPS}/usr)

# Only the target's libraries and headers; programs (python3, readelf) are the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# pkg-config (FindCURL, FindOpenSSL fall back to it) must read the arm64 .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
