"""A tiny stand-in for Sedna's train/eval/inference workers, used by standalone_test.

usage: worker.py MODE    (python3 standard library only)

Every mode first writes $MARK_DIR/<MODE>-<WORKER_NAME>-<pid>.json with the pid, the working
directory and the environment it was given, so the test can check the env contract and find the
process. Reports go to LC_SERVER through sedna_report.py (examples/incremental_learning/digits,
reached through PYTHONPATH from the container env), exactly as lib/sedna posts them.

MODE:
  train     writes $MODEL_URL/model.bin ("trained <MODEL_URL> from <base content>") and reports it
  eval      reports [trained, deployed] with precision [$EVAL_NEW] and [$EVAL_OLD]
  infer     records the content of $MODEL_URL in its mark, then serves (sleeps) until killed
  crash     exits with 3 without reporting
  noreport  exits with 0 without reporting
  sleep     sleeps 100 s (default SIGTERM handling)
  stubborn  ignores SIGTERM, starts a `sleep 100` grandchild (pid in the mark), sleeps 100 s
"""
import json
import os
import signal
import subprocess
import sys
import time


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
           "env": dict(os.environ)}
    rec.update(extra or {})
    name = "%s-%s-%d.json" % (mode, os.environ.get("WORKER_NAME", "none"), os.getpid())
    tmp = os.path.join(d, "." + name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(rec, f)
    os.replace(tmp, os.path.join(d, name))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "train"
    print("worker %s mode %s pid %d" % (os.environ.get("WORKER_NAME"), mode, os.getpid()),
          flush=True)
    if mode == "train":
        import sedna_report
        out_dir = os.environ["MODEL_URL"]
        base = os.environ.get("BASE_MODEL_URL", "")
        base_path = os.path.join(base, "model.bin") if os.path.isdir(base) else base
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, "model.bin")
        with open(out, "w") as f:
            f.write("trained %s from [%s]" % (out_dir, read(base_path)))
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
