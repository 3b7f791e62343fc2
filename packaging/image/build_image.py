#!/usr/bin/env python3
"""The sedna-lc container image, without a container engine.

The image holds exactly: the sedna-lc binary (stripped), every shared library it loads and the
ones it dlopen()s on first S3 use (libcurl, libcrypto: src/adapters/s3/lazy_libs.cc) with their
whole DT_NEEDED closure and the dynamic loader, Debian's tzdata (/usr/share/zoneinfo), the CA
bundle (/etc/ssl/certs/ca-certificates.crt), and two empty directories: /tmp (1777, SQLite's
temporary files) and /var/lib/sedna (the default database directory, root-owned 0755: a non-root
runAsUser needs a writable volume there or --db elsewhere). Paths and symlinks are those of the
Debian system the binary was built on (merged /usr), so the loader finds the libraries in its
default directories without an ld.so.cache.

Commands (BINARY: a sedna-lc built on this Debian system; a cross-built one takes its libraries
from the foreign architecture's multiarch directories, e.g. /usr/lib/aarch64-linux-gnu, and is
stripped with <triplet>-strip or $STRIP; that path is not tested here):
  build_image.py files  --binary B          the content, one "<type> <image path> [<source>]" a line
  build_image.py rootfs --binary B --out D  copies the content into directory D (the Dockerfile)
  build_image.py oci    --binary B --out D  writes an OCI image layout (one gzip layer) into D
  build_image.py config                     the image config (entrypoint, env, labels) as JSON

The OCI layout is reproducible: sorted entries, owner 0:0, every mtime SOURCE_DATE_EPOCH (default:
the last commit's time), gzip without name or time.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Loaded with dlopen() by src/adapters/s3/lazy_libs.cc (the first name of each kNames list);
# tests/packaging/image_test.py checks that this list matches that file.
DLOPENED = ["libcurl.so.4", "libcrypto.so.3"]
BINARY_PATH = "/usr/local/bin/sedna-lc"  # where upstream's image puts it
DATA_TREES = ["/usr/share/zoneinfo"]
DATA_FILES = ["/etc/ssl/certs/ca-certificates.crt"]
# Files no package lists because a maintainer script generates them: path -> that package.
GENERATED_BY = {"/etc/ssl/certs/ca-certificates.crt": "ca-certificates"}
EMPTY_DIRS = {"/tmp": 0o1777, "/var/lib/sedna": 0o755}

ELF_MACHINES = {  # readelf -h "Machine:" -> (Debian multiarch triplet, OCI architecture)
    "Advanced Micro Devices X86-64": ("x86_64-linux-gnu", "amd64"),
    "AArch64": ("aarch64-linux-gnu", "arm64"),
}


def version():
    return subprocess.check_output([os.path.join(ROOT, "packaging", "version.sh")], text=True).strip()


def image_config():
    """The runtime part of the image config; the Dockerfile must say the same (check_dockerfile.py)."""
    return {
        "Entrypoint": [BINARY_PATH],
        "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"],
        "WorkingDir": "/",
        "Labels": {
            "org.opencontainers.image.title": "sedna-lc",
            "org.opencontainers.image.description": "Local Controller for KubeEdge Sedna",
            "org.opencontainers.image.version": version(),
        },
    }


def readelf(args, path):
    return subprocess.check_output(["readelf", "-W"] + args + [path], text=True,
                                   env=dict(os.environ, LC_ALL="C"))


def elf_machine(path):
    for line in readelf(["-h"], path).splitlines():
        if line.strip().startswith("Machine:"):
            m = line.split(":", 1)[1].strip()
            if m not in ELF_MACHINES:
                sys.exit(f"build_image: {path}: unsupported ELF machine {m!r}")
            return ELF_MACHINES[m]
    sys.exit(f"build_image: {path}: not an ELF file")


def needed(path):
    out = []
    for line in readelf(["-d"], path).splitlines():
        if "(NEEDED)" in line:
            out.append(line.split("[", 1)[1].rstrip("]"))
    return out


def interpreter(path):
    for line in readelf(["-l"], path).splitlines():
        if "Requesting program interpreter:" in line:
            return line.split(":", 1)[1].strip().rstrip("]").strip()
    return None


class Content:
    """The image's entries: path -> ("dir", mode) | ("file", source, mode) | ("link", target)."""

    def __init__(self):
        self.entries = {}

    def add_dir(self, path, mode=0o755):
        if path == "/":
            return
        parent = os.path.dirname(path)
        if parent != "/" and parent not in self.entries:
            self.add_dir(parent)
        if path not in self.entries:
            self.entries[path] = ("dir", mode)

    def add_host_path(self, path):
        """Adds a host file under the same path, with every symlink on the way (/lib -> usr/lib,
        libfoo.so.1 -> libfoo.so.1.2.3) recorded as a symlink and followed."""
        parts = [p for p in path.split("/") if p]
        cur = ""
        for i, comp in enumerate(parts):
            nxt = cur + "/" + comp
            rest = "/".join(parts[i + 1:])
            if os.path.islink(nxt):
                target = os.readlink(nxt)
                self.entries[nxt] = ("link", target)
                base = target if target.startswith("/") else os.path.join(cur or "/", target)
                base = os.path.normpath(base)
                return self.add_host_path(base + ("/" + rest if rest else ""))
            if i < len(parts) - 1:
                self.add_dir(nxt)
            cur = nxt
        st = os.stat(cur)
        if not stat.S_ISREG(st.st_mode):
            sys.exit(f"build_image: {cur}: not a regular file")
        if cur != "/" and os.path.dirname(cur) != "/":
            self.add_dir(os.path.dirname(cur))
        self.entries[cur] = ("file", cur, stat.S_IMODE(st.st_mode))

    def add_tree(self, top):
        self.add_host_path_dir(top)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for d in dirnames:
                p = os.path.join(dirpath, d)
                if os.path.islink(p):
                    self.entries[p] = ("link", os.readlink(p))
                else:
                    self.add_dir(p, stat.S_IMODE(os.stat(p).st_mode))
            for f in sorted(filenames):
                p = os.path.join(dirpath, f)
                if os.path.islink(p):
                    self.entries[p] = ("link", os.readlink(p))
                elif os.path.isfile(p):
                    self.entries[p] = ("file", p, stat.S_IMODE(os.stat(p).st_mode))

    def add_host_path_dir(self, top):
        cur = ""
        for comp in [p for p in top.split("/") if p]:
            cur += "/" + comp
            if os.path.islink(cur):
                sys.exit(f"build_image: {cur}: a symlink inside a data tree is not supported")
            self.add_dir(cur, stat.S_IMODE(os.stat(cur).st_mode))


def find_lib(soname, triplet, sysroot):
    for d in (f"/usr/lib/{triplet}", f"/lib/{triplet}", "/usr/lib", "/lib"):
        p = sysroot.rstrip("/") + d + "/" + soname
        if os.path.exists(p):
            return d + "/" + soname
    sys.exit(f"build_image: {soname} not found for {triplet} (is its Debian package installed?)")


def collect(binary):
    """The image content for `binary`. The binary itself is the entry BINARY_PATH (stripped)."""
    triplet, _ = elf_machine(binary)
    c = Content()
    c.add_dir(os.path.dirname(BINARY_PATH))
    c.entries[BINARY_PATH] = ("file", binary, 0o755)
    for merged in ("/lib", "/lib64"):  # Debian's merged /usr: /lib -> usr/lib
        if os.path.islink(merged):
            c.entries[merged] = ("link", os.readlink(merged))
    interp = interpreter(binary)
    if interp:
        c.add_host_path(interp)
    todo = needed(binary) + DLOPENED
    seen = set()
    while todo:
        so = todo.pop(0)
        if so in seen:
            continue
        seen.add(so)
        path = find_lib(so, triplet, "/")
        c.add_host_path(path)
        todo += needed(os.path.realpath(path))
    for t in DATA_TREES:
        c.add_tree(t)
    for f in DATA_FILES:
        c.add_host_path(f)
    for d, mode in EMPTY_DIRS.items():
        c.add_dir(os.path.dirname(d))
        c.entries[d] = ("dir", mode)
    return c


def stripped_copy(binary, tmpdir):
    out = os.path.join(tmpdir, "sedna-lc")
    triplet, _ = elf_machine(binary)
    native = subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True).stdout.strip()
    strip = os.environ.get("STRIP", "strip" if triplet == native else f"{triplet}-strip")
    subprocess.check_call([strip, "--strip-all", "-o", out, binary])
    return out


def write_rootfs(c, out):
    for path in sorted(c.entries):
        e = c.entries[path]
        dst = out.rstrip("/") + path
        if e[0] == "dir":
            os.makedirs(dst, exist_ok=True)
            os.chmod(dst, e[1])
        elif e[0] == "link":
            if os.path.lexists(dst):
                os.unlink(dst)
            os.symlink(e[1], dst)
        else:
            shutil.copyfile(e[1], dst)
            os.chmod(dst, e[2])


def layer_tar(c, mtime):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(c.entries):
            e = c.entries[path]
            ti = tarfile.TarInfo(path.lstrip("/"))
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            ti.mtime = mtime
            if e[0] == "dir":
                ti.type, ti.mode = tarfile.DIRTYPE, e[1]
                tar.addfile(ti)
            elif e[0] == "link":
                ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, e[1], 0o777
                tar.addfile(ti)
            else:
                with open(e[1], "rb") as f:
                    data = f.read()
                ti.size, ti.mode = len(data), e[2]
                tar.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def put_blob(out, data):
    digest = hashlib.sha256(data).hexdigest()
    d = os.path.join(out, "blobs", "sha256")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest


def source_date_epoch():
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    try:
        return int(subprocess.check_output(["git", "-C", ROOT, "log", "-1", "--format=%ct"],
                                           text=True, stderr=subprocess.DEVNULL).strip())
    except (subprocess.CalledProcessError, FileNotFoundError, ValueError):
        return 0


def write_oci(c, binary, out, tag):
    _, arch = elf_machine(binary)
    mtime = source_date_epoch()
    created = __import__("datetime").datetime.utcfromtimestamp(mtime).strftime("%Y-%m-%dT%H:%M:%SZ")
    tar = layer_tar(c, mtime)
    gz = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=gz, compresslevel=9, mtime=0) as g:
        g.write(tar)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    layer = put_blob(out, gz.getvalue())
    config = {
        "created": created,
        "architecture": arch,
        "os": "linux",
        "config": image_config(),
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(tar).hexdigest()]},
        "history": [{"created": created, "created_by": "packaging/image/build_image.py oci"}],
    }
    cfg = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": put_blob(out, cfg), "size": len(cfg)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": layer, "size": len(gz.getvalue())}],
    }
    man = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": put_blob(out, man), "size": len(man),
                       "platform": {"architecture": arch, "os": "linux"},
                       "annotations": {"org.opencontainers.image.ref.name": tag}}],
    }
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, sort_keys=True, separators=(",", ":"))
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    return len(tar), len(gz.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command", choices=["files", "rootfs", "oci", "config"])
    ap.add_argument("--binary", help="the sedna-lc binary")
    ap.add_argument("--out", help="output directory (rootfs, oci)")
    ap.add_argument("--tag", help="OCI ref name (default: the project version)")
    a = ap.parse_args()
    if a.command == "config":
        json.dump(image_config(), sys.stdout, indent=2, sort_keys=True)
        print()
        return
    if not a.binary:
        ap.error("--binary is required")
    if a.command in ("rootfs", "oci") and not a.out:
        ap.error("--out is required")
    c = collect(os.path.abspath(a.binary))
    if a.command == "files":
        for path in sorted(c.entries):
            e = c.entries[path]
            print(e[0], path, *([e[1]] if e[0] != "dir" else []))
        return
    with tempfile.TemporaryDirectory() as tmp:
        c.entries[BINARY_PATH] = ("file", stripped_copy(a.binary, tmp), 0o755)
        if a.command == "rootfs":
            write_rootfs(c, a.out)
            return
        raw, gz = write_oci(c, a.binary, a.out, a.tag or version())
        print(f"{a.out}: {len(c.entries)} entries, layer {raw} bytes, {gz} bytes gzip "
              f"({gz / 1e6:.1f} MB compressed)")


if __name__ == "__main__":
    main()
