"""A tiny stand-in for Sedna's train/eval/inference workers, used by standalone_test.

usage: worker.py MODE    (python3 standard library only)

Every mode first writes $MARK_DIR/<MODE>-<WORKER_NAME>-<pid>.json with the pid, the working
directory, its uid, gid and supplementary groups, and the environment it was given, so the test can check the env contract and find the
process; ACCESS_KEY_ID and SECRET_ACCESS_KEY appear there (and in the log line every worker
prints about its S3 env) only as "sha256:<hex>" of their values, never as the values. Reports go to LC_SERVER through sedna_report.py (examples/incremental_learning/digits,
reached through PYTHONPATH from the container env), exactly as lib/sedna posts them.

MODE:
  train     writes $MODEL_URL/model.bin ("trained <MODEL_URL> from <base content>") and reports it;
            an s3:// MODEL_URL is written with a SigV4-signed PUT (path style) to
            $S3_ENDPOINT_URL with $ACCESS_KEY_ID / $SECRET_ACCESS_KEY, as a lib/sedna worker would
  eval      reports [trained, deployed] with precision [$EVAL_NEW] and [$EVAL_OLD]
  infer     records the content of $MODEL_URL in its mark, then serves (sleeps) until killed; with
            MODEL_HOT_UPDATE=true it polls $MODEL_HOT_UPDATE_CONFIG every
            $MODEL_POLL_PERIOD_SECONDS as lib/sedna does and, on each new model_update_time,
            writes a "reload" mark (n, version, the config's bytes, the model's content; the
            model_path /model-hot-update/<f> read from the config's directory) and reports kind
            deploy, status completed, no results
  crash     exits with 3 without reporting
  noreport  exits with 0 without reporting
  sleep     sleeps 100 s (default SIGTERM handling)
  stubborn  ignores SIGTERM, starts a `sleep 100` grandchild (pid in the mark), sleeps 100 s
"""
import datetime
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

S3_KEY_VARS = ("ACCESS_KEY_ID", "SECRET_ACCESS_KEY")


def digest(value):
    return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()


def redacted_env():
    env = dict(os.environ)
    for k in S3_KEY_VARS:
        if k in env:
            env[k] = digest(env[k])
    return env


def s3_put(url, body):
    """PUT body at s3://bucket/key, signed with AWS SigV4 (region us-east-1, path style)."""
    endpoint = os.environ["S3_ENDPOINT_URL"].rstrip("/")
    access_key = os.environ["ACCESS_KEY_ID"]
    secret_key = os.environ["SECRET_ACCESS_KEY"]
    bucket, _, key = url[len("s3://"):].partition("/")
    host = urllib.parse.urlparse(endpoint).netloc
    path = "/" + bucket + "/" + urllib.parse.quote(key, safe="/~")
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, day, region = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d"), "us-east-1"
    payload = hashlib.sha256(body).hexdigest()
    signed = "host;x-amz-content-sha256;x-amz-date"
    canonical = "\n".join(["PUT", path, "", "host:%s\nx-amz-content-sha256:%s\nx-amz-date:%s\n"
                           % (host, payload, amz_date), signed, payload])
    scope = "%s/%s/s3/aws4_request" % (day, region)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    k = ("AWS4" + secret_key).encode("utf-8")
    for part in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode("utf-8"), hashlib.sha256).digest()
    signature = hmac.new(k, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    auth = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        access_key, scope, signed, signature)
    req = urllib.request.Request(endpoint + path, data=body, method="PUT", headers={
        "x-amz-date": amz_date, "x-amz-content-sha256": payload, "Authorization": auth,
        # not urllib's default form type, which a server may parse (and empty) as a form
        "Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=30) as r:
        r.read()


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return "<unreadable: %s>" % e


def mark(mode, extra=None):
    d = os.environ.get("MARK_DIR")
    if not d:
        return
    os.makedirs(d, exist_ok=True)
    rec = {"mode": mode, "pid": os.getpid(), "time": time.time(), "cwd": os.getcwd(),
           "uid": os.getuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()),
           "env": redacted_env()}
    rec.update(extra or {})
    name = "%s-%s-%d%s.json" % (mode, os.environ.get("WORKER_NAME", "none"), os.getpid(),
                                "-%d" % rec["n"] if "n" in rec else "")
    tmp = os.path.join(d, "." + name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(rec, f)
    os.replace(tmp, os.path.join(d, name))


def hot_update_loop():
    import sedna_report
    config = os.environ["MODEL_HOT_UPDATE_CONFIG"]
    period = max(1, int(os.environ.get("MODEL_POLL_PERIOD_SECONDS", "60")))
    version, n = None, 0
    while True:
        time.sleep(period)
        try:
            text = read(config)
            msg = json.loads(text)["model_config"]
            latest = str(msg["model_update_time"])
            path = msg["model_path"]
        except (ValueError, KeyError, TypeError):
            continue
        if path.startswith("/model-hot-update/"):
            path = os.path.join(os.path.dirname(config), path[len("/model-hot-update/"):])
        if latest == version or not os.path.exists(path):
            continue
        version, n = latest, n + 1
        mark("reload", {"n": n, "version": latest, "config": text, "model_content": read(path)})
        try:
            sedna_report.report("deploy", status="completed")
        except RuntimeError as e:
            print("deploy report refused: %s" % e, flush=True)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "train"
    print("worker %s mode %s pid %d" % (os.environ.get("WORKER_NAME"), mode, os.getpid()),
          flush=True)
    s3 = redacted_env()
    print("S3 env: S3_ENDPOINT_URL=%s ACCESS_KEY_ID=%s SECRET_ACCESS_KEY=%s" % tuple(
        s3.get(k, "<unset>") for k in ("S3_ENDPOINT_URL",) + S3_KEY_VARS), flush=True)
    if mode == "train":
        import sedna_report
        out_dir = os.environ["MODEL_URL"]
        base = os.environ.get("BASE_MODEL_URL", "")
        base_path = os.path.join(base, "model.bin") if os.path.isdir(base) else base
        content = "trained %s from [%s]" % (out_dir, read(base_path))
        if out_dir.lower().startswith("s3://"):
            out = out_dir.rstrip("/") + "/model.bin"
            s3_put(out, content.encode("utf-8"))
            print("uploaded %s" % out, flush=True)
        else:
            os.makedirs(out_dir, exist_ok=True)
            out = os.path.join(out_dir, "model.bin")
            with open(out, "w") as f:
                f.write(content)
        mark(mode, {"model": out})
        sedna_report.report("train", [{"format": "bin", "url": out,
                                       "metrics": {"accuracy": 0.9}}])
    elif mode == "eval":
        import sedna_report
        urls = [u for u in os.environ.get("MODEL_URLS", "").split(";") if u]
        mark(mode)
        new = float(os.environ.get("EVAL_NEW", "0.9"))
        old = float(os.environ.get("EVAL_OLD", "0.5"))
        results = []
        for i, u in enumerate(urls):
            results.append({"format": "bin", "url": u,
                            "metrics": {"precision": [new if i == 0 else old],
                                        "recall": [new if i == 0 else old]}})
        sedna_report.report("eval", results)
    elif mode == "infer":
        mark(mode, {"model_content": read(os.environ.get("MODEL_URL", ""))})
        if os.environ.get("MODEL_HOT_UPDATE", "").lower() == "true":
            hot_update_loop()
        while True:
            time.sleep(0.2)
    elif mode == "crash":
        mark(mode)
        print("crashing on purpose", flush=True)
        sys.exit(3)
    elif mode == "noreport":
        mark(mode)
        print("exiting 0 without reporting", flush=True)
        sys.exit(0)
    elif mode == "sleep":
        mark(mode)
        time.sleep(100)
    elif mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen(["sleep", "100"])
        mark(mode, {"child_pid": child.pid})
        time.sleep(100)
    else:
        print("unknown mode %s" % mode, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
