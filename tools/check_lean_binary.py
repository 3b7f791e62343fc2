#!/usr/bin/env python3
"""Checks that sedna-lc is linked lean (CMakeLists.txt, SEDNA_LEAN_BINARY; CTest lean_binary).

usage: check_lean_binary.py [--lib-dirs=DIR:DIR...] [--relr] <sedna-lc> [<link order file>]

1. No C++ runtime or C++ library is loaded as a shared object, directly (NEEDED) or through
   another library (ldd): libstdc++.so alone adds about 1 MB to the idle RSS (relocations and
   symbol lookups touch its pages), and any C++ .so (libfmt, libyaml-cpp) would load it again.
2. With an order file (CMake passes it when it links with ld.lld; without lld it only warns at
   configure time and this part is not checked), the binary is linked in its order: of the listed functions the binary
   defines under one name, at least 90% of neighbours in the list sit at rising addresses (about
   50% without the order; not 100% with it, because a section of an object built without
   -ffunction-sections moves as a whole, at the rank of its first listed function).
3. With --relr (CMake passes it when it links with -z pack-relative-relocs), the relative
   relocations are packed: the binary has a DT_RELR table and at most 64 relative entries are
   left in .rela.dyn (about 4,600 unpacked, a 110 KiB table that start-up reads whole).

--lib-dirs (a cross build, whose binary ldd cannot load): the load closure of part 1 is followed
through the NEEDED entries of the libraries found in these directories instead of ldd; a NEEDED
library found in none of them fails the check.
"""
import os
import subprocess
import sys

FORBIDDEN = ("libstdc++", "libgcc_s", "libfmt", "libyaml-cpp", "libspdlog")


def needed_of(path):
    dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True)
    return [l.split("[", 1)[1].rstrip("]") for l in dyn.stdout.splitlines() if "(NEEDED)" in l]


def closure(binary, lib_dirs):
    """The libraries a binary loads, as ldd names them, by following NEEDED through lib_dirs."""
    loaded, todo = [], needed_of(binary)
    while todo:
        name = todo.pop(0)
        if name in loaded:
            continue
        found = [os.path.join(d, name) for d in lib_dirs if os.path.exists(os.path.join(d, name))]
        if not found:
            raise FileNotFoundError(f"{name} (NEEDED by the closure of {binary}) is in none of "
                                    f"{':'.join(lib_dirs)}")
        loaded.append(name)
        todo += needed_of(found[0])
    return loaded


def main():
    args = sys.argv[1:]
    lib_dirs = None
    if args and args[0].startswith("--lib-dirs="):
        lib_dirs = args.pop(0).split("=", 1)[1].split(":")
    relr = bool(args) and args[0] == "--relr"
    if relr:
        args.pop(0)
    binary = args[0]
    order_file = args[1] if len(args) > 1 else None
    needed = needed_of(binary)
    bad = [n for n in needed if n.startswith(FORBIDDEN)]
    if bad:
        print(f"FAIL: {binary} needs {', '.join(bad)} (all NEEDED: {', '.join(needed)})")
        return 1
    # The whole load closure too: a C library that needs libstdc++.so would load it as well.
    how = "ldd" if lib_dirs is None else "NEEDED closure"
    if lib_dirs is None:
        ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True)
        loaded = [l.split()[0] for l in ldd.stdout.splitlines() if l.strip()]
    else:
        try:
            loaded = closure(binary, lib_dirs)
        except FileNotFoundError as e:
            print(f"FAIL: {e}")
            return 1
    bad = [n for n in loaded if n.startswith(("libstdc++", "libgcc_s"))]
    if bad:
        print(f"FAIL: {binary} loads {', '.join(bad)} through its libraries ({how}: {', '.join(loaded)})")
        return 1
    print(f"ok: NEEDED {', '.join(needed)}; {how} {len(loaded)} objects, no libstdc++/libgcc_s")
    if relr:
        dyn = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True)
        rel = subprocess.run(["readelf", "-rW", binary], capture_output=True, text=True, check=True)
        relative = sum("_RELATIVE" in l for l in rel.stdout.splitlines())
        if "(RELR)" not in dyn.stdout or relative > 64:
            print(f"FAIL: relative relocations not packed (DT_RELR "
                  f"{'present' if '(RELR)' in dyn.stdout else 'absent'}, {relative} left unpacked)")
            return 1
        print(f"ok: relative relocations packed (DT_RELR; {relative} left unpacked)")
    if not order_file:
        return 0
    nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                        check=True)
    count, addr = {}, {}
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            count[parts[2]] = count.get(parts[2], 0) + 1
            addr[parts[2]] = int(parts[0], 16)
    listed = [s.strip() for s in open(order_file) if s.strip()]
    # Local clones (foo.constprop.0) can share a name across objects; skip ambiguous names.
    unique = [s for s in listed if count.get(s) == 1]
    if len(unique) < 500:
        print(f"FAIL: only {len(unique)} of {len(listed)} listed functions are in {binary}; "
              "regenerate the list with tools/gen_link_order.sh")
        return 1
    rising = sum(addr[a] < addr[b] for a, b in zip(unique, unique[1:])) / (len(unique) - 1)
    if rising < 0.9:
        print(f"FAIL: only {rising:.0%} of consecutive listed functions are at rising addresses "
              "(about 50% when the list is not applied): not linked in order")
        return 1
    span = max(addr[s] for s in unique) - min(addr[s] for s in unique)
    print(f"ok: {len(unique)} of {len(listed)} listed functions linked in order ({rising:.0%} "
          f"of neighbours rising; they span {span / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
