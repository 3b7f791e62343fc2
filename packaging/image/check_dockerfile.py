#!/usr/bin/env python3
"""Checks that packaging/image/Dockerfile produces the image build_image.py writes here, without
running Docker (this machine has no engine):

  * the build stage is FROM debian:<this machine's release> and assembles the rootfs with
    `build_image.py rootfs` (so the file list is that script's); the final stage is FROM scratch
    with only that rootfs copied in;
  * `build_image.py rootfs` writes exactly the entries `build_image.py files` lists (the list the
    OCI layout is written from);
  * every Debian package owning a file of that list is installed by the Dockerfile's apt-get line,
    directly or through its Depends/Pre-Depends (resolved with this machine's dpkg database);
  * ENTRYPOINT, ENV, WORKDIR and the labels equal build_image.py's image config (the version
    label comes from the VERSION build argument).

Usage: check_dockerfile.py --binary SEDNA_LC   (exit 0 when everything agrees)
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_image  # noqa: E402

FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def instructions(path):
    """[(INSTRUCTION, argument text)] with continuation lines joined and comments dropped."""
    out, cur = [], ""
    with open(path) as f:
        for line in f:
            s = line.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def stages(ins):
    st = []
    for word, rest in ins:
        if word == "FROM":
            st.append({"from": rest, "ins": []})
        elif st:
            st[-1]["ins"].append((word, rest))
    return st


def depends_closure(roots):
    """Installed packages reachable from `roots` through Depends and Pre-Depends."""
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        r = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", p],
                           capture_output=True, text=True)
        if r.returncode != 0:
            continue
        for dep in r.stdout.split(","):
            for alt in dep.split("|"):  # any installed alternative may be the one apt picks
                name = alt.strip().split(" ")[0].split(":")[0]
                if name:
                    todo.append(name)
    return seen


def owners(paths):
    """path -> Debian package, via dpkg -S (trying the /lib alias of merged-/usr paths)."""
    found = {}
    queries = {}
    for p in paths:
        queries[p] = p
        if p.startswith("/usr/lib/"):
            queries["/lib/" + p[len("/usr/lib/"):]] = p
    r = subprocess.run(["dpkg", "-S"] + sorted(queries), capture_output=True, text=True)
    for line in r.stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        if path in queries and ", " not in pkgs:  # not a shared directory
            found[queries[path]] = pkgs.split(":")[0]
    return found


def tree(root):
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            out.add("/" + os.path.relpath(os.path.join(dirpath, n), root))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--dockerfile", default=os.path.join(HERE, "Dockerfile"))
    a = ap.parse_args()
    st = stages(instructions(a.dockerfile))
    check(len(st) == 2, f"two stages ({len(st)})")
    if len(st) != 2:
        return 1
    build, final = st

    with open("/etc/os-release") as f:
        codename = re.search(r"^VERSION_CODENAME=(\S+)", f.read(), re.M).group(1)
    check(build["from"].split()[0] == f"debian:{codename}",
          f"build stage FROM debian:{codename} ({build['from']})")
    runs = " ".join(r for w, r in build["ins"] if w == "RUN")
    check("packaging/image/build_image.py rootfs" in runs and "--out /rootfs" in runs,
          "build stage assembles /rootfs with build_image.py rootfs")
    check(final["from"] == "scratch", "final stage FROM scratch")
    copies = [r for w, r in final["ins"] if w in ("COPY", "ADD", "RUN")]
    check(copies == ["--from=builder /rootfs/ /"], f"final stage only copies /rootfs ({copies})")

    # The rootfs mode writes the listed entries, nothing more.
    c = build_image.collect(os.path.abspath(a.binary))
    listed = set(c.entries)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rootfs")
        subprocess.check_call([sys.executable, os.path.join(HERE, "build_image.py"), "rootfs",
                               "--binary", a.binary, "--out", out])
        written = tree(out)
    check(written == listed, f"build_image.py rootfs == files (extra {sorted(written - listed)[:5]}, "
          f"missing {sorted(listed - written)[:5]})")

    # Debian packages: what the files come from must be installed by the Dockerfile.
    apt = re.search(r"apt-get install ([^&;]*)", runs)
    wanted = [w for w in shlex.split(apt.group(1)) if not w.startswith("-")] if apt else []
    closure = depends_closure(wanted)
    files = [p for p, e in c.entries.items() if e[0] == "file" and p != build_image.BINARY_PATH]
    own = owners(files)
    own.update({p: pkg for p, pkg in build_image.GENERATED_BY.items() if p in files})
    unowned = sorted(set(files) - set(own))
    check(not unowned, f"every image file belongs to a Debian package ({unowned[:5]})")
    pkgs = sorted(set(own.values()))
    print(f"     packages: {' '.join(pkgs)}")
    missing = sorted(p for p in pkgs if p not in closure)
    check(not missing, f"Dockerfile's apt-get install (with Depends) brings {len(pkgs)} packages "
          f"(missing: {missing})")

    # Runtime config.
    cfg = build_image.image_config()
    ent = [r for w, r in final["ins"] if w == "ENTRYPOINT"]
    check(len(ent) == 1 and json.loads(ent[0]) == cfg["Entrypoint"], f"ENTRYPOINT {ent}")
    env = [r.replace(" ", "=", 1) if "=" not in r.split(" ")[0] else r
           for w, r in final["ins"] if w == "ENV"]
    check(env == cfg["Env"], f"ENV {env} == {cfg['Env']}")
    wd = [r for w, r in final["ins"] if w == "WORKDIR"]
    check(wd == [cfg["WorkingDir"]], f"WORKDIR {wd}")
    labels = {}
    for w, r in final["ins"]:
        if w == "LABEL":
            for kv in shlex.split(r):
                k, _, v = kv.partition("=")
                labels[k] = v
    want = dict(cfg["Labels"], **{"org.opencontainers.image.version": "${VERSION}"})
    check(labels == want, f"LABELs {labels} == {want}")
    check(any(w == "USER" for w, _ in final["ins"]) is False, "no USER: root by default")
    print(f"check_dockerfile: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
