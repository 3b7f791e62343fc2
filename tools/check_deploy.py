#!/usr/bin/env python3
"""Offline validation of deploy/ (no cluster, no kubeconform: Debian ships neither a schema
validator nor a usable kubectl for this):

  1. schema: every document is checked field by field against the Kubernetes API models of
     Debian's python3-kubernetes (generated from the API's OpenAPI spec): unknown fields, wrong
     types and missing required fields are errors;
  2. Sedna's LC contract: hostNetwork with ClusterFirstWithHostNet, the node's / at /rootfs with
     ROOTFS_MOUNT_DIR=/rootfs, GM_ADDRESS, BIND_PORT, NODENAME from spec.nodeName; upstream's name,
     namespace and selector (immutable: needed to update a running install in place);
  3. the database: SEDNA_DB_PATH on a hostPath under the host's /var/lib/sedna, not the Go LC's
     /var/lib/sedna/database.db;
  4. probes: liveness /healthz, readiness /readyz, on the status server's address and port as the
     container's args set them (default 127.0.0.1:9101); with hostNetwork a probe without host
     goes to the node's IP, where a 127.0.0.1 listener does not answer;
  5. the image tag is the project version (packaging/version.sh); the root filesystem read-only
     with an emptyDir at /tmp (as tests/integration/container_test.cc runs the image);
  6. with --upstream-chart: the chart's DaemonSet, rendered with its values.yaml, patched with
     deploy/lc-patch.yaml (strategic merge: containers, env, volumes by name, mounts by path),
     passes 1-5 and equals deploy/lc-daemonset.yaml in the LC container and volumes.

--self-test also breaks the DaemonSet in ways each check must catch, and fails if one is missed.
Not validated: admission (Pod Security, quotas), the API server's defaulting, a real kubelet
running the probes, node-side behaviour (image present, hostPath permissions).

Usage: check_deploy.py [--upstream-chart DIR] [--self-test]
"""
import argparse
import copy
import os
import re
import subprocess
import sys

import yaml

try:
    from kubernetes import client as k8s
except ImportError:  # python3-kubernetes
    k8s = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPLOY = os.path.join(ROOT, "deploy")
KINDS = {("apps/v1", "DaemonSet"): "V1DaemonSet"}
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "ports": "containerPort"}
GO_LC_DB = "/var/lib/sedna/database.db"


def version():
    return subprocess.check_output([os.path.join(ROOT, "packaging", "version.sh")], text=True).strip()


# ------------------------------------------------------------------ 1. schema

def check_schema(obj, typ, path, errs):
    if obj is None:
        return
    if typ == "object":
        return
    if typ.startswith("list["):
        if not isinstance(obj, list):
            errs.append(f"{path}: expected a list, got {type(obj).__name__}")
            return
        for i, v in enumerate(obj):
            check_schema(v, typ[5:-1], f"{path}[{i}]", errs)
        return
    if typ.startswith("dict("):
        if not isinstance(obj, dict):
            errs.append(f"{path}: expected a map, got {type(obj).__name__}")
            return
        inner = typ[5:-1].split(", ", 1)[1]
        for k, v in obj.items():
            check_schema(v, inner, f"{path}.{k}", errs)
        return
    prim = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": str}
    if typ in prim:
        if not isinstance(obj, prim[typ]) or (typ == "int" and isinstance(obj, bool)):
            errs.append(f"{path}: expected {typ}, got {type(obj).__name__} {obj!r}")
        return
    cls = getattr(k8s.models, typ)
    if not isinstance(obj, dict):
        errs.append(f"{path}: expected a {typ} object, got {type(obj).__name__}")
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for k, v in obj.items():
        if k not in by_json:
            errs.append(f"{path}.{k}: unknown field of {typ}")
            continue
        check_schema(v, cls.openapi_types[by_json[k]], f"{path}.{k}", errs)


def check_required(doc, typ, errs):
    """The models' constructors reject missing required fields (client-side validation)."""
    api = k8s.ApiClient()
    try:
        api._ApiClient__deserialize(doc, typ)
    except (ValueError, TypeError) as e:
        errs.append(f"{typ}: {e}")


def schema(doc, name):
    errs = []
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key not in KINDS:
        return [f"{name}: unexpected kind {key}"]
    check_schema(doc, KINDS[key], name, errs)
    if not errs:
        check_required(doc, KINDS[key], errs)
    return errs


# ------------------------------------------------------------------ 2-5. the LC contract

def lc_container(ds):
    cs = [c for c in ds["spec"]["template"]["spec"].get("containers", []) if c.get("name") == "lc"]
    return cs[0] if cs else None


def flag(args, name, default):
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


def contract(ds, name):
    errs = []
    e = errs.append
    meta = ds.get("metadata", {})
    if (meta.get("name"), meta.get("namespace")) != ("lc", "sedna"):
        e(f"{name}: metadata must be upstream's lc/sedna to replace its DaemonSet")
    if ds["spec"].get("selector") != {"matchLabels": {"sedna": "lc"}}:
        e(f"{name}: spec.selector must be upstream's {{matchLabels: {{sedna: lc}}}} (immutable)")
    pod = ds["spec"]["template"]["spec"]
    if pod.get("hostNetwork") is not True:
        e(f"{name}: hostNetwork must be true (workers reach the LC at the node's address)")
    if pod.get("dnsPolicy") != "ClusterFirstWithHostNet":
        e(f"{name}: dnsPolicy must be ClusterFirstWithHostNet (gm.sedna resolves with hostNetwork)")
    c = lc_container(ds)
    if c is None:
        return errs + [f"{name}: no container named lc"]
    env = {v["name"]: v for v in c.get("env", [])}
    for k in ("GM_ADDRESS", "BIND_PORT", "NODENAME", "ROOTFS_MOUNT_DIR", "SEDNA_DB_PATH"):
        if k not in env:
            e(f"{name}: env {k} missing")
    if "NODENAME" in env and env["NODENAME"].get("valueFrom", {}).get("fieldRef", {}).get(
            "fieldPath") != "spec.nodeName":
        e(f"{name}: env NODENAME must come from fieldRef spec.nodeName")
    if "BIND_PORT" in env and not re.fullmatch(r"\d{1,5}", str(env["BIND_PORT"].get("value", ""))):
        e(f"{name}: env BIND_PORT must be a port number string")
    if env.get("ROOTFS_MOUNT_DIR", {}).get("value") != "/rootfs":
        e(f"{name}: env ROOTFS_MOUNT_DIR must be /rootfs")
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}

    def host_path(container_path):
        """The host path behind a container path, through the hostPath mounts."""
        best = None
        for mp, m in mounts.items():
            if container_path == mp or container_path.startswith(mp.rstrip("/") + "/"):
                if best is None or len(mp) > len(best):
                    best = mp
        if best is None:
            return None
        hp = vols.get(mounts[best]["name"], {}).get("hostPath", {}).get("path")
        if hp is None:
            return None
        rest = container_path[len(best):].lstrip("/")
        return os.path.normpath(os.path.join(hp, rest)) if rest else hp

    if host_path("/rootfs") != "/":
        e(f"{name}: /rootfs must be the node's / (a hostPath volume of path /)")
    db = env.get("SEDNA_DB_PATH", {}).get("value", "")
    hdb = host_path(os.path.dirname(db)) if db.startswith("/") else None
    if db and not hdb:
        e(f"{name}: SEDNA_DB_PATH {db} is not on a hostPath: a re-created pod loses its jobs")
    elif hdb:
        hdb = os.path.join(hdb, os.path.basename(db))
        if not hdb.startswith("/var/lib/sedna/"):
            e(f"{name}: the database's host path {hdb} must be under /var/lib/sedna/")
        if hdb == GO_LC_DB:
            e(f"{name}: the database's host path {hdb} is the Go LC's database")
    args = c.get("args", []) or []
    addr = flag(args, "--status-address", "127.0.0.1")
    port = flag(args, "--status-port", "9101")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"),
                        ("startupProbe", "/healthz")):
        p = c.get(probe)
        if p is None:
            if probe != "startupProbe":
                e(f"{name}: {probe} missing")
            continue
        g = p.get("httpGet")
        if not g:
            e(f"{name}: {probe} must be an httpGet on {path}")
            continue
        if g.get("path") != path:
            e(f"{name}: {probe} path {g.get('path')} (expected {path})")
        if str(g.get("port")) != str(port):
            e(f"{name}: {probe} port {g.get('port')} but the status server listens on {port}")
        host = g.get("host", "")
        if addr in ("0.0.0.0", "::"):
            continue
        if not host and pod.get("hostNetwork") and addr.startswith("127."):
            e(f"{name}: {probe} has no host: the kubelet would dial the node's IP, but the status "
              f"server listens on {addr} only (set host: {addr}, or --status-address)")
        elif host and host != addr:
            e(f"{name}: {probe} host {host} but the status server listens on {addr}")
    if c.get("securityContext", {}).get("readOnlyRootFilesystem") is not True:
        e(f"{name}: securityContext.readOnlyRootFilesystem must be true (the LC writes only "
          f"through its mounts; tests/integration/container_test.cc runs it so)")
    elif "emptyDir" not in vols.get(mounts.get("/tmp", {}).get("name"), {}):
        e(f"{name}: with a read-only root, /tmp must be an emptyDir (SQLite's temporary files)")
    image = c.get("image", "")
    if not image.endswith(":" + version()):
        e(f"{name}: image {image} is not tagged with the project version {version()}")
    return errs


# ------------------------------------------------------------------ 6. the patch

def strategic_merge(base, patch, key=None):
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = strategic_merge(base[k], v, k) if k in base else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_KEYS:
        mk = MERGE_KEYS[key]
        out = [copy.deepcopy(x) for x in base]
        for item in patch:
            idx = [i for i, x in enumerate(out) if x.get(mk) == item.get(mk)]
            if idx:
                out[idx[0]] = strategic_merge(out[idx[0]], item)
            else:
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(patch)


def render_chart(chart):
    with open(os.path.join(chart, "values.yaml")) as f:
        values = yaml.safe_load(f)

    def value(m):
        v = values
        for part in m.group(1).split("."):
            v = v[part]
        return str(v)

    with open(os.path.join(chart, "templates", "daemonset.yaml")) as f:
        text = re.sub(r"\{\{\s*\.Values\.([\w.]+)\s*\}\}", value, f.read())
    return yaml.safe_load(text)


def by_name(items, key):
    return {i[key]: i for i in items or []}


def same_lc(a, b):
    ca, cb = lc_container(a), lc_container(b)
    diffs = []
    for k in sorted(set(ca) | set(cb)):
        va, vb = ca.get(k), cb.get(k)
        if k in MERGE_KEYS:
            va, vb = by_name(va, MERGE_KEYS[k]), by_name(vb, MERGE_KEYS[k])
        if va != vb:
            diffs.append(f"container lc .{k}")
    pa, pb = a["spec"]["template"]["spec"], b["spec"]["template"]["spec"]
    for k in ("volumes", "hostNetwork", "dnsPolicy"):
        va, vb = pa.get(k), pb.get(k)
        if k == "volumes":
            va, vb = by_name(va, "name"), by_name(vb, "name")
        if va != vb:
            diffs.append(f"pod .{k}")
    return diffs


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def validate(ds, name):
    return schema(ds, name) + contract(ds, name)


# ------------------------------------------------------------------ self-test

def self_test(ds):
    """Each mutation must be reported; returns the mutations that were not."""
    def m(fn):
        d = copy.deepcopy(ds)
        fn(d, lc_container(d), d["spec"]["template"]["spec"])
        return d

    cases = {
        "typo livenesProbe": m(lambda d, c, p: c.update(livenesProbe=c.pop("livenessProbe"))),
        "string replicas": m(lambda d, c, p: d["spec"].update(minReadySeconds="one")),
        "container without name": m(lambda d, c, p: c.pop("name")),
        "probe without host": m(lambda d, c, p: c["livenessProbe"]["httpGet"].pop("host")),
        "probe on another port": m(lambda d, c, p: c["readinessProbe"]["httpGet"].update(port=9100)),
        "NODENAME from metadata.name": m(lambda d, c, p: [v for v in c["env"] if v["name"] ==
                                         "NODENAME"][0]["valueFrom"]["fieldRef"].update(
                                             fieldPath="metadata.name")),
        "no hostNetwork": m(lambda d, c, p: p.pop("hostNetwork")),
        "db in the container": m(lambda d, c, p: [v for v in c["env"] if v["name"] ==
                                 "SEDNA_DB_PATH"][0].update(value="/data/database.db")),
        "db over the Go LC's": m(lambda d, c, p: [v for v in p["volumes"] if v["name"] ==
                                 "lc-state"][0]["hostPath"].update(path="/var/lib/sedna")),
        "rootfs not /": m(lambda d, c, p: [v for v in p["volumes"] if v["name"] ==
                          "localcontroller"][0]["hostPath"].update(path="/srv")),
        "writable root filesystem": m(lambda d, c, p: c.pop("securityContext")),
        "read-only root without /tmp": m(lambda d, c, p: c.update(volumeMounts=[
            v for v in c["volumeMounts"] if v["mountPath"] != "/tmp"])),
        "old image tag": m(lambda d, c, p: c.update(image="sedna-lc:0.0.0")),
        "other selector": m(lambda d, c, p: d["spec"].update(selector={"matchLabels": {"a": "b"}})),
    }
    missed = []
    for what, d in cases.items():
        errs = validate(d, what)
        print(f"  self-test {what}: {'caught: ' + errs[0] if errs else 'MISSED'}")
        if not errs:
            missed.append(what)
    return missed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream-chart", help="Sedna's LC chart dir (build/helm/sedna/charts/lc)")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if k8s is None:
        print("skipped: python3-kubernetes is not installed (apt-get install python3-kubernetes)")
        return 77
    failures = []
    docs = load(os.path.join(DEPLOY, "lc-daemonset.yaml"))
    if len(docs) != 1:
        print("deploy/lc-daemonset.yaml: expected one document")
        return 1
    ds = docs[0]
    errs = validate(ds, "lc-daemonset.yaml")
    print(f"{'ok  ' if not errs else 'FAIL'} deploy/lc-daemonset.yaml: schema "
          f"(python3-kubernetes {k8s.__name__ and __import__('kubernetes').__version__}) and contract")
    failures += errs
    patch = load(os.path.join(DEPLOY, "lc-patch.yaml"))[0]
    if a.upstream_chart:
        up = render_chart(a.upstream_chart)
        up_errs = schema(up, "upstream lc chart")
        if up_errs:
            failures += up_errs
        patched = strategic_merge(up, patch)
        errs = validate(patched, "upstream chart + lc-patch.yaml")
        diffs = same_lc(patched, ds)
        errs += [f"upstream chart + lc-patch.yaml differs from lc-daemonset.yaml in {d}"
                 for d in diffs]
        print(f"{'ok  ' if not errs else 'FAIL'} upstream chart + deploy/lc-patch.yaml: schema, "
              "contract, equal to lc-daemonset.yaml")
        failures += errs
    else:
        print("note: --upstream-chart not given; lc-patch.yaml not applied")
    if a.self_test:
        missed = self_test(ds)
        failures += [f"self-test: {m} not caught" for m in missed]
    for f in failures:
        print("  " + f)
    print(f"check_deploy: {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
