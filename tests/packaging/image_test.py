#!/usr/bin/env python3
"""The container image, end to end: builds the OCI layout (packaging/image/build_image.py), checks
it as a registry would (digests, sizes, diff_ids), unpacks its layer (and with umoci, when
installed, compares), checks its content is the binary's load closure plus tzdata and CA
certificates and nothing else, then runs the image's binary in a chroot of the unpacked rootfs
(tests/packaging/lc_in_image.sh, the DaemonSet's mounts): --help, start-up with /healthz, as a
non-root user with and without a writable database volume, S3 through the dlopen()ed libcurl and
libcrypto against a local fake endpoint, and one IL round against the GM emulator (il_demo).

Usage: image_test.py --binary SEDNA_LC --il-demo IL_DEMO --source SOURCE_DIR
Needs root (chroot, mount namespaces); exits 77 (CTest: skipped) otherwise.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAILURES = []
MAX_COMPRESSED = 25_000_000  # [D:I16]: <= 25 MB compressed


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


def blob(layout, digest):
    algo, hexd = digest.split(":", 1)
    with open(os.path.join(layout, "blobs", algo, hexd), "rb") as f:
        data = f.read()
    check(hashlib.sha256(data).hexdigest() == hexd, f"blob {digest[:19]} matches its digest")
    return data


def read_layout(layout):
    """Follows index.json -> manifest -> config, layers as a registry client would."""
    with open(os.path.join(layout, "oci-layout")) as f:
        check(json.load(f).get("imageLayoutVersion") == "1.0.0", "oci-layout version 1.0.0")
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    check(len(index["manifests"]) == 1, "index.json holds one manifest")
    desc = index["manifests"][0]
    man_bytes = blob(layout, desc["digest"])
    check(len(man_bytes) == desc["size"], "manifest size as in index.json")
    man = json.loads(man_bytes)
    cfg_bytes = blob(layout, man["config"]["digest"])
    check(len(cfg_bytes) == man["config"]["size"], "config size as in the manifest")
    cfg = json.loads(cfg_bytes)
    layers = []
    for i, l in enumerate(man["layers"]):
        check(l["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip", "layer media type")
        gz = blob(layout, l["digest"])
        check(len(gz) == l["size"], f"layer {i} size as in the manifest")
        raw = gzip.decompress(gz)
        check("sha256:" + hashlib.sha256(raw).hexdigest() == cfg["rootfs"]["diff_ids"][i],
              f"layer {i} diff_id as in the config")
        layers.append((gz, raw))
    return index, man, cfg, layers


def unpack(raw, rootfs):
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        for m in tar.getmembers():
            if m.name.startswith("/") or ".." in m.name.split("/"):
                check(False, f"layer entry {m.name} stays inside the rootfs")
                return
        tar.extractall(rootfs)


def tree(rootfs):
    out = set()
    for dirpath, dirnames, filenames in os.walk(rootfs):
        for n in dirnames + filenames:
            out.add("/" + os.path.relpath(os.path.join(dirpath, n), rootfs))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, deadline_s=10):
    end = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                return r.status, r.read().decode()
        except OSError:
            # A port that is not listening yet: there is no event to await across processes.
            if time.monotonic() > end:
                return None, ""
            time.sleep(0.05)


S3_INDEX = b"".join(b"images/%d.pgm %d\n" % (i, i % 10) for i in range(20))


class FakeS3(BaseHTTPRequestHandler):
    """Serves S3_INDEX for any key (HEAD, GET, ranged GET) and records each request's
    Authorization header: enough for the LC's index mirror, and proof its requests were signed."""
    requests = []

    def log_message(self, *args):
        pass

    def reply(self, head):
        FakeS3.requests.append((self.command, self.path, self.headers.get("Authorization", "")))
        data, code = S3_INDEX, 200
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes="):
            lo, _, hi = rng[6:].partition("-")
            data, code = S3_INDEX[int(lo):int(hi) + 1 if hi else None], 206
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", '"1"')
        self.send_header("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT")
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def do_HEAD(self):
        self.reply(True)

    def do_GET(self):
        self.reply(False)


S3_MANIFEST = """apiVersion: v1
kind: Secret
metadata: {{name: s3cred}}
stringData: {{ACCESS_KEY_ID: AKIDIMAGETEST, SECRET_ACCESS_KEY: secret, s3-endpoint: "127.0.0.1:{port}", s3-usehttps: "0"}}
---
apiVersion: sedna.io/v1alpha1
kind: Dataset
metadata: {{name: s3-data}}
spec: {{url: s3://bucket/index.txt, format: txt, nodeName: edge, credentialName: s3cred}}
---
apiVersion: sedna.io/v1alpha1
kind: Model
metadata: {{name: m}}
spec: {{url: {work}/model.pkl, format: pkl}}
---
apiVersion: sedna.io/v1alpha1
kind: IncrementalLearningJob
metadata: {{name: s3-job}}
spec:
  initialModel: {{name: m}}
  dataset: {{name: s3-data, trainProb: 0.8}}
  outputDir: {work}/out
  trainSpec:
    template: {{spec: {{containers: [{{name: train, image: none, args: ["train.py"]}}]}}}}
    trigger:
      checkPeriodSeconds: 1
      condition: {{operator: ">", threshold: 1000000, metric: num_of_samples}}
  evalSpec:
    template: {{spec: {{containers: [{{name: eval, image: none, args: ["eval.py"]}}]}}}}
  deploySpec:
    model: {{name: m}}
    trigger:
      condition: {{operator: ">", threshold: 0.01, metric: precision_delta}}
"""


def wait_for(pred, deadline_s):
    end = time.monotonic() + deadline_s
    while not pred():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)  # a file another process writes: polled, with a deadline
    return True


def run_daemon(runner, rootfs, extra, args, log, env=None):
    with open(log, "wb") as f:
        return subprocess.Popen([runner] + extra + [rootfs] + args, stdout=f, stderr=subprocess.STDOUT,
                                env={"PATH": "/usr/bin:/bin", "NODENAME": "image-test", **(env or {})})


def stop(p):
    p.terminate()
    try:
        return p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--il-demo", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("skipped: needs root and unshare(1) for chroot and mount namespaces")
        return 77
    src = os.path.abspath(a.source)
    builder = os.path.join(src, "packaging", "image", "build_image.py")
    runner = os.path.join(src, "tests", "packaging", "lc_in_image.sh")
    work = tempfile.mkdtemp(prefix="sedna-image-test-")
    t0 = time.monotonic()

    # 1. The dlopen()ed libraries the image carries are the ones lazy_libs.cc opens.
    with open(os.path.join(src, "src", "adapters", "s3", "lazy_libs.cc")) as f:
        opened = re.findall(r'kNames\[\]\s*=\s*\{"([^"]+)"', f.read())
    sys.path.insert(0, os.path.dirname(builder))
    import build_image  # noqa: E402
    check(sorted(opened) == sorted(build_image.DLOPENED),
          f"build_image.DLOPENED {build_image.DLOPENED} == lazy_libs.cc's {opened}")

    # 2. Build and read the layout.
    layout = os.path.join(work, "oci")
    subprocess.check_call([sys.executable, builder, "oci", "--binary", a.binary, "--out", layout])
    index, man, cfg, layers = read_layout(layout)
    version = subprocess.check_output([os.path.join(src, "packaging", "version.sh")], text=True).strip()
    check(index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == version,
          f"ref name is the project version {version}")
    check(cfg["config"].get("Entrypoint") == ["/usr/local/bin/sedna-lc"], "entrypoint")
    check(not cfg["config"].get("User"), "runs as root by default (no User)")
    compressed = sum(len(gz) for gz, _ in layers)
    print(f"image: {compressed} bytes compressed, {sum(len(r) for _, r in layers)} uncompressed")
    check(compressed <= MAX_COMPRESSED, f"compressed size {compressed} <= {MAX_COMPRESSED}")

    # 3. Unpack; umoci (an independent OCI implementation) must agree on the content.
    rootfs = os.path.join(work, "rootfs")
    os.makedirs(rootfs)
    for _, raw in layers:
        unpack(raw, rootfs)
    unpacked = tree(rootfs)
    listed = set()
    for line in subprocess.check_output([sys.executable, builder, "files", "--binary", a.binary],
                                        text=True).splitlines():
        listed.add(line.split()[1])
    check(unpacked == listed, "unpacked layer == build_image.py files "
          f"(extra {sorted(unpacked - listed)[:5]}, missing {sorted(listed - unpacked)[:5]})")
    if shutil.which("umoci"):
        bundle = os.path.join(work, "bundle")
        r = subprocess.run(["umoci", "unpack", "--image", f"{layout}:{version}", bundle],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"umoci unpack: {r.stderr.strip()[:300]}")
        if r.returncode == 0:
            check(tree(os.path.join(bundle, "rootfs")) == unpacked, "umoci's rootfs == ours")
            with open(os.path.join(bundle, "config.json")) as f:
                proc = json.load(f)["process"]
            check(proc["args"] == ["/usr/local/bin/sedna-lc"] and proc["user"]["uid"] == 0,
                  "umoci's runtime config: sedna-lc as uid 0")
    else:
        print("note: umoci not installed; layout checked by this script only")

    # 4. Nothing else: every library file is loaded by the binary or by the dlopen()ed libraries
    #    (the loader inside the chroot resolves them: nothing "not found"); data is tzdata + CAs.
    ld = [e for e in unpacked if re.search(r"/ld-linux[^/]*\.so\.\d$", e) and
          os.path.isfile(rootfs + e) and not os.path.islink(rootfs + e)]
    check(len(ld) == 1, f"one dynamic loader in the image ({ld})")
    loaded = set()
    triplet_dir = os.path.dirname(ld[0]) if ld else "/usr/lib"
    for target in ["/usr/local/bin/sedna-lc"] + [f"{triplet_dir}/{so}" for so in build_image.DLOPENED]:
        r = subprocess.run(["chroot", rootfs, ld[0] if ld else "/lib64/ld-linux-x86-64.so.2",
                            "--list", target], capture_output=True, text=True)
        check(r.returncode == 0 and "not found" not in r.stdout,
              f"loader in the chroot resolves every library of {target}: {r.stdout.strip()[-300:]}"
              if "not found" in r.stdout or r.returncode else
              f"loader in the chroot resolves every library of {target}")
        for m in re.finditer(r"=> (\S+) \(", r.stdout):
            loaded.add(os.path.realpath(rootfs + m.group(1))[len(rootfs):])
    loaded.add(ld[0] if ld else "")
    for so in build_image.DLOPENED:
        loaded.add(os.path.realpath(f"{rootfs}{triplet_dir}/{so}")[len(rootfs):])
    files = {e for e in unpacked if os.path.isfile(rootfs + e) and not os.path.islink(rootfs + e)}
    libs = {e for e in files if e.startswith(("/usr/lib/", "/lib/"))}
    check(libs == loaded, f"every library in the image is loaded (unused: {sorted(libs - loaded)}, "
          f"missing: {sorted(loaded - libs)})")
    other = sorted(e for e in files - libs if not e.startswith("/usr/share/zoneinfo/") and
                   e not in ("/usr/local/bin/sedna-lc", "/etc/ssl/certs/ca-certificates.crt"))
    check(not other, f"no other files ({other[:10]})")
    check(os.path.isfile(rootfs + "/usr/share/zoneinfo/Asia/Shanghai"), "tzdata present")

    # 5. The binary in the chroot.
    r = subprocess.run(["chroot", rootfs, "/usr/local/bin/sedna-lc", "--help"],
                       capture_output=True, text=True)
    check("--gm-address" in r.stdout + r.stderr, "sedna-lc --help in the chroot lists its flags")
    # LoadConfig checks the time zone, then the log level: a bad level after a good zone is
    # reported as the level.
    r = subprocess.run(["chroot", rootfs, "/usr/local/bin/sedna-lc", "--timezone", "Asia/Shanghai",
                        "--log-level", "bogus"], capture_output=True, text=True)
    check("--log-level" in r.stderr and "Asia/Shanghai" not in r.stderr,
          f"the image's tzdata validates --timezone Asia/Shanghai ({r.stderr.strip()[:160]})")

    # 6. Start-up as root (database on the host through /rootfs), /healthz, /readyz, /metrics.
    port = free_port()
    db_host = os.path.join(work, "root-db")
    os.makedirs(db_host)
    p = run_daemon(runner, rootfs, [], ["--db", db_host + "/database.db", "--status-port", str(port),
                                        "--bind-port", str(free_port())], work + "/root.log")
    st, body = http_get(port, "/healthz")
    check(st == 200 and body == "ok\n", f"root: /healthz 200 ok ({st} {body!r})")
    st, _ = http_get(port, "/readyz")
    check(st == 200, f"root: /readyz 200 ({st})")
    st, body = http_get(port, "/metrics")
    check(st == 200 and "sedna" in body, f"root: /metrics ({st})")
    rc = stop(p)
    check(rc == 0, f"root: SIGTERM -> exit 0 ({rc}); log {work}/root.log")
    check(os.path.isfile(db_host + "/database.db"), "root: database on the host via /rootfs")

    # 7. A non-root runAsUser: the image's /var/lib/sedna is root's, so start-up must fail with a
    #    message naming the database; with a volume that user owns, it runs. SEDNA_DB_PATH names
    #    it, as docs/deploy.md says to: unset, the database would be on the host (under
    #    /rootfs/var/lib/sedna/sedna-lc), and this test must not touch the host's /var/lib.
    in_image_db = {"SEDNA_DB_PATH": "/var/lib/sedna/database.db"}
    p = run_daemon(runner, rootfs, ["--user", "65534:65534"],
                   ["--status-port", str(free_port()), "--bind-port", str(free_port())],
                   work + "/nonroot-nodir.log", env=in_image_db)
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "still running"
    with open(work + "/nonroot-nodir.log") as f:
        log = f.read()
    check(rc == 2 and "database" in log.lower(),
          f"non-root without a writable /var/lib/sedna: exit 2 naming the database ({rc}: {log[-200:]!r})")
    vol = os.path.join(work, "nonroot-volume")
    os.makedirs(vol)
    os.chown(vol, 65534, 65534)
    port = free_port()
    p = run_daemon(runner, rootfs, ["--user", "65534:65534", "--db-volume", vol],
                   ["--status-port", str(port), "--bind-port", str(free_port())],
                   work + "/nonroot.log", env=in_image_db)
    st, _ = http_get(port, "/healthz")
    check(st == 200, f"non-root (65534) with a volume it owns at /var/lib/sedna: /healthz {st}")
    rc = stop(p)
    check(rc == 0, f"non-root: SIGTERM -> exit 0 ({rc}); log {work}/nonroot.log")
    check(os.stat(vol + "/database.db").st_uid == 65534, "non-root: database owned by 65534")

    # 8. S3 from the image: libcurl and libcrypto are dlopen()ed on first use. A standalone job
    #    whose Dataset is on a (fake) S3 endpoint: the LC in the chroot must send SigV4-signed
    #    requests (HMAC from libcrypto, HTTP from libcurl) and mirror the index on the host.
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeS3)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    s3dir = os.path.join(work, "s3")
    os.makedirs(s3dir + "/manifests")
    with open(s3dir + "/manifests/s3.yaml", "w") as f:
        f.write(S3_MANIFEST.format(port=srv.server_address[1], work=s3dir))
    p = run_daemon(runner, rootfs, [], ["standalone", "-f", "/rootfs" + s3dir + "/manifests",
                                        "--db", s3dir + "/db/database.db", "--status-port", "0",
                                        "--bind-port", "0"], work + "/s3.log")

    def mirrored():
        d = s3dir + "/db/spool/s3-index"
        for n in os.listdir(d) if os.path.isdir(d) else []:
            if n.endswith(".index") and open(os.path.join(d, n), "rb").read() == S3_INDEX:
                return True
        return False

    got = wait_for(mirrored, 20)
    rc = stop(p)
    srv.shutdown()
    signed = [r for r in FakeS3.requests if r[2].startswith("AWS4-HMAC-SHA256 Credential=AKIDIMAGETEST/")]
    check(signed and len(signed) == len(FakeS3.requests),
          f"S3: every request from the image SigV4-signed ({len(signed)}/{len(FakeS3.requests)})")
    check(got, f"S3: the index mirrored on the host through libcurl (log {work}/s3.log)")
    with open(work + "/s3.log") as f:
        check("S3 needs" not in f.read(), "S3: no library missing")
    check(rc == 0, f"S3: SIGTERM -> exit 0 ({rc})")

    # 9. One IL round against the GM emulator, sedna-lc running in the image (il_demo starts its
    #    "binary" with exactly the env it sets, so the rootfs is baked into a wrapper).
    wrapper = os.path.join(work, "sedna-lc-in-image")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec {runner} {rootfs} "$@"\n')
    os.chmod(wrapper, 0o755)
    r = subprocess.run([a.il_demo, wrapper, os.path.join(src, "examples", "incremental_learning",
                                                         "digits"), "1"],
                       capture_output=True, text=True, timeout=180)
    print(r.stdout[-1500:])
    m = re.search(r"workspace (\S+)", r.stdout)
    check(r.returncode == 0 and "connected to the GM emulator" in r.stdout and
          re.search(r"^1 .*(deployed|kept)", r.stdout, re.M) is not None,
          f"il_demo: one IL round with sedna-lc in the image (exit {r.returncode}) {r.stderr[-800:]}")
    if m:
        ws = m.group(1)
        with open(ws + "/sedna-lc.log") as f:
            lclog = f.read()
        check(f"database /rootfs{ws}/lc/database.db" in lclog and os.path.isfile(ws + "/lc/database.db"),
              "il_demo: the LC in the image kept its database on the host (/rootfs)")
        shutil.rmtree(ws, ignore_errors=True)

    print(f"image_test: {time.monotonic() - t0:.1f} s, {len(FAILURES)} failure(s)")
    if not FAILURES:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
