"""The standalone lifelong-learning demo: sedna-lc runs the seasons LifelongLearningJob from its
Sedna YAML manifests on this machine, with no Kubernetes and no GM. This driver prepares the
workspace, starts `sedna-lc standalone -f manifests/`, grows the csv dataset the way Sedna's ATCII
example does (by replacing trainData.csv with a longer file: written to a temporary name, then
os.replace'd over the index), and prints each version as it happens from the daemon's /status
endpoint (the LL job's `round` is the version, `decisions` counts deployments, `work` is
"<phase>/<work>"), then a summary table.

usage: demo.py <sedna-lc binary> [--versions N] [--timeout SECONDS] [--check]
Exit code 0 when N versions were deployed and sedna-lc shut down cleanly. --check also checks
what an operator looks at (the test of docs/dashboard.md's promises for LL): the round history
(`sedna-lc status --history seasons-ll`, /api/history) has the versions with their train, eval
and deploy, its deploy count matches the deployments, the STAGE column of `sedna-lc status` is
filled (live and from the database), the dashboard feed has the LL eval and train chart series,
and /metrics counts the deploys; exit 1 naming what is missing.
"""
import argparse
import collections
import csv
import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
WS = os.path.join(HERE, "workspace")
OUT = os.path.join(WS, "output")
INDEX = os.path.join(WS, "data", "trainData.csv")
T0 = time.time()
# GM stages while a train worker is being started or runs (the LL phase is train meanwhile).
TRAIN_BUSY = ("Train/Ready", "Train/Starting", "Train/Running")


def say(msg):
    print("[%6.1fs] %s" % (time.time() - T0, msg), flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.read().decode()
    except OSError as e:
        return "unreachable: %s" % e


def lc_status(lc_bin, env, *args):
    """`sedna-lc status ARGS` (the operator's view); its output and exit code."""
    p = subprocess.run([lc_bin, "status"] + list(args), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    return p.stdout.decode(errors="replace"), p.returncode


def stage_cells(table):
    """The STAGE cell of the seasons-ll row of `sedna-lc status`, by its column offset."""
    lines = table.splitlines()
    head = next((l for l in lines if l.startswith("KIND")), None)
    row = next((l for l in lines if "/seasons-ll" in l), None)
    if head is None or row is None:
        return None
    at, end = head.index("STAGE"), head.index("ROUND")
    return row[at:end].strip()


def check_live(a, port, env, deployed):
    """The observation surfaces of a live daemon after `deployed` deployments; problems found."""
    problems = []
    try:
        hist = json.loads(get(port, "/api/history?job=seasons-ll"))
    except ValueError:
        hist = []
    h = hist[0] if len(hist) == 1 else {}
    rounds = h.get("rounds", [])
    done = [r for r in rounds if r.get("decision") == "deployed"]
    if len(rounds) < a.versions:
        problems.append("/api/history: %d rounds, expected at least %d" % (len(rounds), a.versions))
    if h.get("deploys") != deployed or len(done) != deployed:
        problems.append("/api/history: deploys %s, rounds deployed %d, expected %d (/status)"
                        % (h.get("deploys"), len(done), deployed))
    for r in done:
        missing = [k for k in ("firedMs", "trainReadyMs", "trainDoneMs", "evalReadyMs",
                               "evalDoneMs", "deployedMs") if not r.get(k)]
        if missing or r.get("trainStatus") != "completed" or r.get("evalStatus") != "completed" \
                or r.get("samples", 0) <= 200 or not r.get("newMetrics") \
                or not r.get("trainMetrics"):
            problems.append("/api/history: version %s is incomplete: %s" % (r.get("round"), r))
    try:
        feed = json.loads(get(port, "/api/dashboard"))
        job = next(j for j in feed["jobs"] if j["name"] == "seasons-ll")
    except (ValueError, KeyError, StopIteration):
        feed, job = {}, {}
    frs = job.get("history", {}).get("rounds", [])
    eval_series = {k for r in frs for k in r.get("newMetrics", {})}
    train_series = {k for r in frs for k in r.get("trainMetrics", {})}
    if job.get("short") != "LL" or "precision_score" not in eval_series or \
            not any("/" in k for k in train_series):
        problems.append("/api/dashboard: no LL chart series (eval %s, train %s)"
                        % (sorted(eval_series), sorted(train_series)))
    if not job.get("stage"):
        problems.append("/api/dashboard: the job has no stage")
    metrics = get(port, "/metrics")
    want = 'sedna_lc_job_deploys_total{job="default/seasons-ll",kind="LL"} %d' % deployed
    if want not in metrics:
        problems.append("/metrics: no line %r" % want)
    out, code = lc_status(a.lc, env, "--status-port", str(port), "--history", "seasons-ll")
    if code != 0 or ("deploys: %d" % deployed) not in out or \
            ("(%d round(s)" % len(rounds)) not in out or len(rounds) == 0:
        problems.append("sedna-lc status --history seasons-ll (live):\n" + out)
    out, code = lc_status(a.lc, env, "--status-port", str(port))
    if code != 0 or not stage_cells(out):
        problems.append("sedna-lc status (live): empty STAGE column:\n" + out)
    return problems


def check_database(a, env, deployed):
    """The same from the database once the daemon is gone; problems found."""
    problems = []
    out, code = lc_status(a.lc, env, "--status-port", "0", "--history", "seasons-ll")
    if code != 0 or ("deploys: %d" % deployed) not in out or "(0 round(s)" in out:
        problems.append("sedna-lc status --history seasons-ll (database):\n" + out)
    out, code = lc_status(a.lc, env, "--status-port", "0")
    if code != 0 or not stage_cells(out):
        problems.append("sedna-lc status (database): empty STAGE column:\n" + out)
    return problems


def status(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/status" % port, timeout=2) as r:
            jobs = json.loads(r.read().decode())["jobs"]
            return jobs[0] if jobs else None
    except (OSError, ValueError, KeyError):
        return None


def rel(path):
    return os.path.relpath(path, WS)


def tasks_in(path):
    """Rows per Season of a csv written by the LC (header + samples)."""
    if not os.path.exists(path):
        return 0, {}
    with open(path, newline="") as f:
        rows = list(csv.reader(f))[1:]
    return len(rows), collections.Counter(r[0] for r in rows if r)


def fmt_counts(c):
    return ", ".join("%s %d" % (k, c[k]) for k in sorted(c)) or "none"


def load_index(path):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lc")
    ap.add_argument("--versions", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=200)
    ap.add_argument("--check", action="store_true",
                    help="also check the round history, status, dashboard feed and metrics")
    a = ap.parse_args()

    shutil.rmtree(WS, ignore_errors=True)
    os.makedirs(WS)
    subprocess.run([sys.executable, os.path.join(HERE, "make_dataset.py"), WS], check=True,
                   stdout=subprocess.DEVNULL)
    incoming = sorted((f for f in os.listdir(os.path.join(WS, "incoming"))),
                      key=lambda f: int(f[len("trainData"):-len(".csv")]))
    files = [os.path.join(WS, "incoming", f) for f in incoming]
    rows0, _ = tasks_in(INDEX)
    rows_last, _ = tasks_in(files[-1])
    if a.versions * 300 > rows_last:
        sys.exit("--versions %d: the dataset has rows for %d versions" % (a.versions,
                                                                           rows_last // 300))
    say("workspace %s: data/trainData.csv has %d rows (Season,x1..x6,label); incoming/ holds "
        "%d longer copies, +%d rows each; data/infer_data.csv is the inference stream"
        % (WS, rows0, len(files), rows0))

    status_port, bind_port = free_port(), free_port()
    log = open(os.path.join(WS, "sedna-lc.log"), "w")
    # Workers run with this interpreter (Debian's python3 with scikit-learn) first on PATH.
    env = dict(os.environ, SEDNA_DB_PATH=os.path.join(WS, "lc", "database.db"),
               PATH=os.path.dirname(sys.executable) + ":" + os.environ.get("PATH", ""))
    env.pop("GM_ADDRESS", None)
    lc = subprocess.Popen([a.lc, "standalone", "-f", os.path.join(HERE, "manifests"),
                           "--status-port", str(status_port), "--bind-port", str(bind_port)],
                          stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        say("sedna-lc standalone started (pid %d); log %s" % (lc.pid, rel(log.name)))
        deadline = time.time() + 20
        while status(status_port) is None:
            if lc.poll() is not None or time.time() > deadline:
                print(open(log.name).read())
                sys.exit("sedna-lc did not come up")
            time.sleep(0.1)
        say("job seasons-ll loaded: train when num_of_samples > 200 (train samples waiting; "
            "trainProb 0.8), then eval (precision_score, model_threshold 0.5), then deploy")
        code, ok, rows, problems = run(a, lc, log, status_port, files, rows0, env)
    finally:
        if lc.poll() is None:  # never leave the daemon behind (Ctrl-C, a closed pipe, an error)
            lc.send_signal(signal.SIGTERM)
            try:
                lc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                lc.kill()
                lc.wait()
    if a.check and ok:
        problems += check_database(a, env, sum(r["state"] == "deployed" for r in rows.values()))
    summary(a, rows, code, ok, log, problems)


def run(a, lc, log, status_port, files, rows0, env):
    in_index = rows0          # rows in the current trainData.csv
    next_file = 0
    announced_ingest = 0
    seen_round, seen_phase, seen_decisions = 0, "train", 0
    serving_pid = None
    rows = collections.OrderedDict()  # version -> summary row
    ok = False
    finish_by = None
    end = time.time() + a.timeout
    while time.time() < end:
        if lc.poll() is not None:
            print(open(log.name).read()[-4000:])
            sys.exit("sedna-lc exited unexpectedly (%s)" % lc.returncode)
        st = status(status_port)
        if st is None:
            time.sleep(0.1)
            continue
        phase = st["work"].split("/")[0]

        if st["samplesSeen"] == in_index and announced_ingest != in_index:
            announced_ingest = in_index
            if st["samplesWaiting"] or st["round"] == seen_round:
                say("sedna-lc read %d samples: %d train samples waiting (> 200 fires the trigger)"
                    % (in_index, st["samplesWaiting"]))
            else:
                say("sedna-lc read %d samples: the waiting train samples fired the trigger"
                    % in_index)

        # A deployment: the eval result was copied to output/deploy/index.pkl (LL-5).
        if st["decisions"] != seen_decisions:
            seen_decisions = st["decisions"]
            v = st["decidedRound"]
            idx = load_index(os.path.join(OUT, "eval", str(v), "index.pkl")) or {}
            ev = idx.get("eval", {})
            per_task = ", ".join("%s %.2f%s" % (t, e["precision_score"],
                                                " (unseen)" if e["unseen"] else "")
                                 for t, e in sorted(ev.get("tasks", {}).items()))
            say("version %d: eval precision_score %.3f (%s)%s -> deployed: %s copied to "
                "output/deploy/index.pkl; inference worker restarted"
                % (v, ev.get("precision_score", 0.0), per_task,
                   "; dropped " + ", ".join(ev["dropped"]) if ev.get("dropped") else "",
                   rel(st["deployedUrl"]) if st["deployedUrl"] else "-"))
            if v in rows:
                rows[v].update(precision=ev.get("precision_score"), state="deployed",
                               tasks=",".join(sorted(idx.get("tasks", {}))) or rows[v]["tasks"])
            if seen_decisions >= a.versions and finish_by is None:
                finish_by = time.time() + 15  # let the restarted inference worker serve it
        # A version that ended without a deployment: its train or eval worker failed.
        # (A Failed stage counts only once this version's worker was seen starting: right after
        # the trigger the stage can still be the previous version's.)
        cur = rows.get(seen_round)
        if cur and (st["stage"] in TRAIN_BUSY or phase != "train"):
            cur["started"] = True
        if cur and cur["state"] == "running" and (
                st["round"] != seen_round or (phase == "train" and seen_phase != "train") or
                (cur["started"] and st["stage"] in ("Train/Failed", "Eval/Failed"))):
            cur["state"] = "failed"
            what = {"train": "train worker", "eval": "eval worker", "deploy": "deploy copy"}
            say("version %d: %s failed (see %s and %s)%s"
                % (seen_round, what[seen_phase], rel(log.name),
                   rel(os.path.join(WS, "lc", "workers")),
                   "; its train samples return to the pending set" if seen_phase == "train"
                   else ""))
        # A new version: the train trigger fired and the train file was written (LL-1 sent).
        if st["round"] != seen_round:
            seen_round = st["round"]
            v = seen_round
            n, by_task = tasks_in(os.path.join(OUT, "data", "train", str(v), "data.csv"))
            say("version %d: train trigger fired: %d samples in output/data/train/%d/data.csv "
                "(%s); train worker started" % (v, n, v, fmt_counts(by_task)))
            rows[v] = {"version": v, "train": n, "tasks": "-", "eval": 0, "precision": None,
                       "state": "running", "started": False}
        # The train worker reported: the job moved to eval.
        if phase != seen_phase:
            v = seen_round
            if phase == "eval" and seen_phase == "train":
                idx = load_index(os.path.join(OUT, "train", str(v), "index.pkl"))
                if idx:
                    say("version %d: trained %s -> train/%d/index.pkl; tasks: %s" % (
                        v, "task " + ", ".join(idx["trained_now"]) if idx["trained_now"]
                        else "nothing new", v,
                        ", ".join("%s (%d samples, cv acc %.2f)" % (t, e["samples"], e["accuracy"])
                                  for t, e in sorted(idx["tasks"].items()))))
                    if v in rows:
                        rows[v]["tasks"] = ",".join(sorted(idx["tasks"]))
                n, by_task = tasks_in(os.path.join(OUT, "data", "eval", str(v), "data.csv"))
                say("version %d: evaluating on %d samples in output/data/eval/%d/data.csv (%s)"
                    % (v, n, v, fmt_counts(by_task)))
                if v in rows:
                    rows[v]["eval"] = n
            seen_phase = phase
        # The inference worker restarted with the deployed index and served the stream.
        srv = read_json(os.path.join(WS, "unseen_tasks", "serving.json"))
        if srv and srv["pid"] != serving_pid and srv["inferred"] > 0:
            serving_pid = srv["pid"]
            seen = srv["inferred"] - srv["unseen"]
            msg = "inference: version %d served %d stream samples: %d of known tasks " \
                  "(accuracy %.2f)" % (srv["version"], srv["inferred"], seen,
                                       srv["seenCorrect"] / max(seen, 1))
            if srv["unseen"]:
                msg += ", %d of unseen tasks (%s; accuracy %.2f) saved to " \
                       "unseen_tasks/unseen_sample.csv" % (
                           srv["unseen"], fmt_counts(srv["unseenTasks"]),
                           srv["unseenCorrect"] / srv["unseen"])
            else:
                msg += ", no unseen-task sample"
            say(msg)
            if srv["version"] in rows:
                rows[srv["version"]].update(unseen=srv["unseen"],
                                            infer_acc=srv["seenCorrect"] + srv["unseenCorrect"],
                                            inferred=srv["inferred"])
        if finish_by is not None:
            last = rows.get(st["decidedRound"], {})
            if "inferred" in last or time.time() > finish_by:
                ok = True
                break

        # Grow the dataset the ATCII way, one longer file at a time, while the job waits for
        # its train trigger (phase train, nothing in flight) and has read the current file.
        cur = rows.get(st["round"])
        idle = (st["work"] == "train/none" and st["stage"] not in TRAIN_BUSY and
                (cur is None or cur["state"] != "running"))
        if idle and st["samplesSeen"] == in_index and seen_decisions < a.versions:
            if next_file >= len(files):
                say("no longer dataset file left to swap in")
                break
            src = files[next_file]
            tmp = os.path.join(WS, "data", ".trainData.csv.tmp")
            shutil.copyfile(src, tmp)
            os.replace(tmp, INDEX)
            n, _ = tasks_in(INDEX)
            say("dataset: data/trainData.csv replaced by %s: %d rows (+%d)"
                % (rel(src), n, n - in_index))
            in_index = n
            next_file += 1
        if st["round"] > a.versions + 3 and st["decisions"] < a.versions:
            say("versions keep failing; see the worker logs in %s"
                % rel(os.path.join(WS, "lc", "workers")))
            break
        time.sleep(0.1)

    problems = []
    if a.check and ok:
        problems = check_live(a, status_port, env, seen_decisions)
    lc.send_signal(signal.SIGTERM)
    try:
        code = lc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        lc.kill()
        code = -9
    return code, ok, rows, problems


def summary(a, rows, code, ok, log, problems):
    print()
    print("%-8s %-14s %-13s %-28s %-10s %-9s %s" % (
        "VERSION", "TRAIN SAMPLES", "EVAL SAMPLES", "TASKS", "PRECISION", "DEPLOYED",
        "INFERENCE (unseen-task samples, accuracy)"))
    for r in rows.values():
        infer = "-"
        if "inferred" in r:
            infer = "%d of %d unseen, accuracy %.2f" % (r["unseen"], r["inferred"],
                                                       r["infer_acc"] / max(r["inferred"], 1))
        print("%-8d %-14d %-13d %-28s %-10s %-9s %s" % (
            r["version"], r["train"], r["eval"], r["tasks"],
            "%.3f" % r["precision"] if r["precision"] is not None else "-",
            "yes" if r["state"] == "deployed" else r["state"], infer))
    print()
    print("knowledge base: %s; deployed index: %s; unseen-task samples: %s"
          % (rel(os.path.join(WS, "kb", "kb.pkl")), rel(os.path.join(OUT, "deploy", "index.pkl")),
             rel(os.path.join(WS, "unseen_tasks", "unseen_sample.csv"))))
    print("sedna-lc exited with %d; logs: %s, workers: %s" % (code, log.name,
                                                             os.path.join(WS, "lc", "workers")))
    if not ok:
        print(open(log.name).read()[-4000:])
        sys.exit("demo: fewer than %d versions deployed in %.0f s" % (a.versions, a.timeout))
    if problems:
        print("\n".join("check: " + p for p in problems))
        sys.exit("demo: --check found %d problem(s)" % len(problems))
    if a.check:
        print("check: the round history, status (live and from the database), the dashboard "
              "feed and /metrics show the %d deployed version(s)" % len(rows))
    sys.exit(0 if code == 0 else 1)


if __name__ == "__main__":
    main()
