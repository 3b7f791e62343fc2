"""The standalone demo: sedna-lc runs the digits incremental-learning job from its Sedna YAML
manifests on this machine, with no Kubernetes and no GM. This driver prepares the workspace,
starts `sedna-lc standalone -f manifests/`, streams the dataset into the index in batches, and
prints each round as it happens from the daemon's /status endpoint, then a summary table.

usage: demo.py <sedna-lc binary> [--rounds N] [--batch N] [--interval SECONDS] [--hot-update]
Exit code 0 when N rounds completed and sedna-lc shut down cleanly.

--hot-update runs manifests-hot-update/ (deploySpec.model.hotUpdateEnabled, as upstream's v0.7
example): the inference worker is never restarted; on each deploy the LC writes the model and
model_config.json and the worker reloads it and reports `deploy completed`. The demo then also
checks that exactly one inference worker ran, that it reloaded once per deployed round, and that
model_config.json names the newest model.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
WS = os.path.join(HERE, "workspace")
T0 = time.time()


def say(msg):
    print("[%6.1fs] %s" % (time.time() - T0, msg), flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def status(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/status" % port, timeout=2) as r:
            jobs = json.loads(r.read().decode())["jobs"]
            return jobs[0] if jobs else None
    except OSError:
        return None


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lc")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=120)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--timeout", type=float, default=170)
    ap.add_argument("--hot-update", action="store_true",
                    help="run manifests-hot-update/ (model hot update) and check the reloads")
    a = ap.parse_args()
    manifests = os.path.join(HERE, "manifests-hot-update" if a.hot_update else "manifests")

    shutil.rmtree(WS, ignore_errors=True)
    os.makedirs(WS)
    subprocess.run([sys.executable, os.path.join(HERE, "make_dataset.py"), WS], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(WS, "stream.txt")) as f:
        stream = [l for l in f.read().splitlines() if l]
    say("workspace %s: %d digit images to stream, a weak initial model (60 samples)"
        % (WS, len(stream)))

    status_port, bind_port = free_port(), free_port()
    log = open(os.path.join(WS, "sedna-lc.log"), "w")
    # Workers run with this interpreter (Debian's python3 with scikit-learn) first on PATH.
    env = dict(os.environ, SEDNA_DB_PATH=os.path.join(WS, "lc", "database.db"),
               PATH=os.path.dirname(sys.executable) + ":" + os.environ.get("PATH", ""))
    env.pop("GM_ADDRESS", None)
    lc = subprocess.Popen([a.lc, "standalone", "-f", manifests,
                           "--status-port", str(status_port), "--bind-port", str(bind_port)],
                          stdout=log, stderr=subprocess.STDOUT, env=env)
    say("sedna-lc standalone started (pid %d); log %s" % (lc.pid, log.name))
    say("dashboard: http://127.0.0.1:%d/ (jobs, rounds, metric charts, workers; live)"
        % status_port)
    deadline = time.time() + 20
    while status(status_port) is None:
        if lc.poll() is not None or time.time() > deadline:
            print(open(log.name).read())
            sys.exit("sedna-lc did not come up")
        time.sleep(0.1)
    say("job digits-il loaded: train when num_of_samples > 300 (trainProb 0.8), deploy when "
        "mean precision_delta > 0.01%s" % ("; model hot update" if a.hot_update else ""))

    try:
        run(a, lc, log, status_port, stream)
    finally:
        if lc.poll() is None:  # never leave the daemon behind (Ctrl-C, a closed pipe, an error)
            lc.send_signal(signal.SIGTERM)
            try:
                lc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                lc.kill()


def run(a, lc, log, status_port, stream):
    index = os.path.join(WS, "data", "train_data.txt")
    sent, last_append = 0, 0.0
    seen_round, seen_stage, seen_decisions, seen_eval = 1, None, 0, None
    rows = []
    seen_reloads = 0
    ok = False
    end = time.time() + a.timeout
    while time.time() < end:
        st = status(status_port)
        if lc.poll() is not None:
            print(open(log.name).read())
            sys.exit("sedna-lc exited unexpectedly (%s)" % lc.returncode)
        if st is None:
            time.sleep(0.1)
            continue
        if st["stage"] == "Train/Waiting" and st["round"] == seen_round and sent < len(stream) \
                and time.time() - last_append >= a.interval and st["work"] == "none":
            batch = stream[sent:sent + a.batch]
            with open(index, "a") as f:
                f.write("\n".join(batch) + "\n")
            sent += len(batch)
            last_append = time.time()
            say("dataset: +%d samples appended (index has %d; %d train samples waiting)"
                % (len(batch), sent, st["samplesWaiting"]))
        if st["round"] - 1 > a.rounds + 2 and st["decisions"] == 0:
            say("rounds keep failing; see the worker logs in %s" % os.path.join(WS, "lc", "workers"))
            break
        if st["round"] != seen_round:
            r = st["round"] - 1
            path = os.path.join(WS, "output", "data", "train", str(r), "data.txt")
            n = sum(1 for _ in open(path)) if os.path.exists(path) else 0
            say("round %d: train trigger fired: %d samples in output/data/train/%d/data.txt; "
                "training" % (r, n, r))
            rows.append({"round": r, "train": n})
            seen_round = st["round"]
        if st["stage"] != seen_stage:
            if st["stage"] == "Eval/Running" or st["stage"] == "Eval/Waiting":
                if seen_stage and seen_stage.startswith("Train"):
                    say("round %d: training done; evaluating [trained, deployed]" % (seen_round - 1))
            seen_stage = st["stage"]
        if st["decisions"] != seen_decisions:
            seen_decisions = st["decisions"]
            ev = st["lastEval"]
            new_p = mean(ev[0]["metrics"].get("precision", [])) if len(ev) > 0 else 0
            old_p = mean(ev[1]["metrics"].get("precision", [])) if len(ev) > 1 else 0
            deployed = st["lastDecision"].startswith("deploying")
            r = st["decidedRound"]
            say("round %d: eval: mean precision new %.3f vs deployed %.3f -> %s"
                % (r, new_p, old_p, "DEPLOY" if deployed else "keep the deployed model"))
            for row in rows:
                if row["round"] == r:
                    row.update(new=new_p, old=old_p, decision="deployed" if deployed else "kept")
            if len([x for x in rows if "decision" in x]) >= a.rounds:
                ok = True
                time.sleep(0.5)
                st = status(status_port) or st
                if st["deployedUrl"]:
                    say("deployed model: %s (copied at %s)" % (st["deployedUrl"], st["deployedAt"]))
                break
        if a.hot_update:
            seen_reloads = report_reloads(seen_reloads)
        time.sleep(0.1)

    hot_ok = True
    if a.hot_update and ok:
        hot_ok = check_hot_update(rows, seen_reloads)
    lc.send_signal(signal.SIGTERM)
    try:
        code = lc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        lc.kill()
        code = -9
    print()
    print("%-6s %-14s %-15s %-16s %s" % ("ROUND", "TRAIN SAMPLES", "NEW PRECISION",
                                           "DEPLOYED PREC.", "DECISION"))
    for row in rows:
        if "decision" in row:
            print("%-6d %-14d %-15.3f %-16.3f %s" % (row["round"], row["train"], row["new"],
                                                      row["old"], row["decision"]))
    print()
    hard = os.path.join(WS, "hard_examples", "hard_examples.txt")
    if os.path.exists(hard):
        print("inference worker logged %d hard examples in %s"
              % (sum(1 for _ in open(hard)), hard))
    print("sedna-lc exited with %d; logs: %s, workers: %s" % (code, log.name,
                                                             os.path.join(WS, "lc", "workers")))
    if not ok:
        print(open(log.name).read()[-4000:])
        sys.exit("demo: fewer than %d rounds completed in %.0f s" % (a.rounds, a.timeout))
    if not hot_ok:
        print(open(log.name).read()[-4000:])
        sys.exit("demo: model hot update did not reach the inference worker in every round")
    sys.exit(0 if code == 0 else 1)


HOT_CONFIG = os.path.join(WS, "lc", "model-hot-update", "default", "incrementallearningjob",
                          "digits-il", "model_config.json")


def inference_logs():
    d = os.path.join(WS, "lc", "workers", "digits-il")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.startswith("inferworker-"))


def reloads():
    """The inference worker's "model updated to <path> (version <v>)" lines, in order."""
    out = []
    for path in inference_logs():
        with open(path) as f:
            out += [l.strip() for l in f if l.startswith("model updated to ")]
    return out


def report_reloads(seen):
    got = reloads()
    for line in got[seen:]:
        say("inference worker: " + line)
    return len(got)


def check_hot_update(rows, seen):
    """Waits (bounded) for the last deploy's reload; True when every deployed round reloaded."""
    deployed = len([r for r in rows if r.get("decision") == "deployed"])
    end = time.time() + 30
    while len(reloads()) < deployed and time.time() < end:
        time.sleep(0.2)
    report_reloads(seen)
    got, logs = reloads(), inference_logs()
    config = json.load(open(HOT_CONFIG)) if os.path.exists(HOT_CONFIG) else None
    say("model hot update: %d deployed round(s), %d reload(s) by %d inference worker(s); %s"
        % (deployed, len(got), len(logs),
           "model_config.json names %s" % config["model_config"]["model_path"] if config
           else "no model_config.json"))
    return len(logs) == 1 and len(got) == deployed and (deployed == 0 or config is not None)


if __name__ == "__main__":
    main()
