"""The dashboard in a real browser ([D:I17.5]): headless Chromium (Debian's `chromium`) keeps
the page of a standalone run of the digits example open while the rounds happen, driven over the
DevTools protocol on a pipe, and checks what a person would see: the job row, N rounds in its
history, one chart per eval metric with N points of the new and of the deployed model, a
decision mark per round matching the LC's decisions, the deployed model's rollback command and
the workers' logs. The page must update itself (no reload). It saves a screenshot as
<out>/dashboard.png, then stops the LC and checks `sedna-lc status --history` from the database
and the page again after a restart.

usage: dashboard_browser_test.py <sedna-lc> <out dir> [--rounds N]
Exit 0: passed; 77: skipped (no chromium); anything else: failed.
"""
import argparse
import base64
import fcntl
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
DIGITS = os.path.join(HERE, "..", "..", "examples", "incremental_learning", "digits")
JOB = "default/digits-il"
T0 = time.time()


def say(msg):
    print("[%6.1fs] %s" % (time.time() - T0, msg), flush=True)


def fail(msg):
    say("FAIL: " + msg)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=2) as r:
            return json.loads(r.read().decode())
    except OSError:
        return None


def wait_for(what, deadline_s, probe):
    """Polls `probe` (an LC endpoint or the page's DOM) until it returns a truthy value."""
    end = time.time() + deadline_s
    while time.time() < end:
        v = probe()
        if v:
            return v
        time.sleep(0.2)
    fail("timed out after %.0f s waiting for %s" % (deadline_s, what))


class Browser:
    """Chromium with --remote-debugging-pipe: requests on fd 3, answers and events on fd 4, each
    message NUL-terminated JSON."""

    def __init__(self, profile, width=1280, height=2400):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        self.to_r, self.to_w = os.pipe()
        self.from_r, self.from_w = os.pipe()
        # The child's ends, above 4 so that moving them to 3 and 4 overwrites neither.
        to_r = fcntl.fcntl(self.to_r, fcntl.F_DUPFD, 10)
        from_w = fcntl.fcntl(self.from_w, fcntl.F_DUPFD, 10)
        os.close(self.to_r)
        os.close(self.from_w)

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--mute-audio",
             "--remote-debugging-pipe", "--user-data-dir=" + profile,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            pass_fds=(3, 4, to_r, from_w), preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0
        targets = self.call("Target.getTargets")["targetInfos"]
        page = [t for t in targets if t["type"] == "page"][0]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": page["targetId"], "flatten": True})["sessionId"]

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        end = time.time() + timeout
        while time.time() < end:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self.next_id:
                    if "error" in m:
                        fail("%s: %s" % (method, m["error"]))
                    return m["result"]
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                fail("chromium closed the DevTools pipe")
            self.buf += chunk
        fail("%s: no answer in %d s" % (method, timeout))

    def page(self, method, params=None):
        return self.call(method, params, session=self.session)

    def eval(self, expression):
        """The expression's value; None while the page is (re)loading and it throws."""
        r = self.page("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            return None
        return r["result"].get("value")

    def seen(self):
        return self.eval(SEEN) or {"rounds": [], "charts": [], "versions": [], "logs": [],
                                   "workers": [], "jobRow": None, "error": "", "loadId": None}

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except SystemExit:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# What a person sees, read from the DOM (the contract in src/app/cluster/observation/dashboard_page.h).
SEEN = """(() => {
  const job = document.querySelector('tr.job[data-job="%(job)s"]');
  const det = document.querySelector('section.job-detail[data-job="%(job)s"]');
  const charts = det ? [...det.querySelectorAll('svg.chart[data-kind="eval"]')].map(c => ({
    metric: c.dataset.metric,
    newPts: c.querySelectorAll('circle.pt.new').length,
    deployedPts: c.querySelectorAll('circle.pt.deployed').length,
    marks: [...c.querySelectorAll('g.mark')].map(m => [+m.dataset.round, m.dataset.decision]),
    text: c.textContent})) : [];
  return {
    polls: +document.body.dataset.polls,
    loadId: window.__testLoadId || null,
    jobRow: job ? [...job.cells].map(td => td.textContent.trim()) : null,
    rounds: det ? [...det.querySelectorAll('tr.round')].map(r => +r.dataset.round) : [],
    roundText: det ? [...det.querySelectorAll('tr.round')].map(r => r.textContent) : [],
    charts: charts,
    versions: det ? [...det.querySelectorAll('tr.version code')].map(c => c.textContent) : [],
    workers: [...document.querySelectorAll('tr.worker')].map(w => w.dataset.worker),
    logs: [...document.querySelectorAll('tr.worker pre')].map(p => p.textContent),
    error: document.getElementById('err').hidden ? '' : document.getElementById('err').textContent,
  };
})()""" % {"job": JOB}


def start_lc(lc, ws, status_port, bind_port, log_name):
    env = dict(os.environ, SEDNA_DB_PATH=os.path.join(ws, "lc", "database.db"),
               PATH="/usr/bin:" + os.environ.get("PATH", ""))
    env.pop("GM_ADDRESS", None)
    log = open(os.path.join(ws, log_name), "w")
    p = subprocess.Popen([lc, "standalone", "-f", os.path.join(ws, "..", "manifests"),
                          "--status-port", str(status_port), "--bind-port", str(bind_port)],
                         stdout=log, stderr=subprocess.STDOUT, env=env)
    wait_for("the status server", 20, lambda: p.poll() is None and get(status_port, "/status"))
    return p


def stop_lc(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        return -9


def check_page(seen, rounds, decisions):
    """The page as a person reads it: everything the LC knows, drawn."""
    if seen["error"]:
        fail("the page shows an error: " + seen["error"])
    if not seen["jobRow"]:
        fail("no job row for %s" % JOB)
    row = seen["jobRow"]
    if row[0] != "IL" or row[1] != JOB:
        fail("job row %r" % row)
    if "num_of_samples > 300" not in row[4]:
        fail("the job row does not show the train trigger: %r" % row)
    if sorted(seen["rounds"]) != list(range(1, rounds + 1)):
        fail("round rows %r, want 1..%d" % (seen["rounds"], rounds))
    if not seen["charts"]:
        fail("no metric chart")
    want_marks = sorted(decisions.items())
    for c in seen["charts"]:
        if c["newPts"] != rounds or c["deployedPts"] != rounds:
            fail("chart %s: %d new and %d deployed points, want %d each"
                 % (c["metric"], c["newPts"], c["deployedPts"], rounds))
        if sorted((r, d) for r, d in c["marks"]) != want_marks:
            fail("chart %s: decision marks %r, want %r" % (c["metric"], c["marks"], want_marks))
    if "precision" not in [c["metric"] for c in seen["charts"]]:
        fail("no precision chart: %r" % [c["metric"] for c in seen["charts"]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lc")
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        print("SKIP: chromium is not installed (tools/setup.sh --tests installs it)")
        sys.exit(77)

    out = os.path.abspath(a.out)
    shutil.rmtree(out, ignore_errors=True)
    root = os.path.join(out, "digits")
    shutil.copytree(DIGITS, root, ignore=shutil.ignore_patterns("workspace", "__pycache__"))
    ws = os.path.join(root, "workspace")
    os.makedirs(ws)
    subprocess.run(["/usr/bin/python3", os.path.join(root, "make_dataset.py"), ws], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(ws, "stream.txt")) as f:
        stream = [l for l in f.read().splitlines() if l]
    status_port, bind_port = free_port(), free_port()
    lc = start_lc(a.lc, ws, status_port, bind_port, "sedna-lc.log")
    url = "http://127.0.0.1:%d/" % status_port
    say("sedna-lc standalone up; dashboard %s" % url)
    browser = None
    try:
        browser = Browser(os.path.join(out, "chromium-profile"))
        browser.page("Page.enable")
        browser.page("Page.navigate", {"url": url})
        wait_for("the page's first poll", 20,
                 lambda: (browser.eval("document.readyState") == "complete" and
                          (browser.eval("+document.body.dataset.polls") or 0) > 0))
        browser.eval("window.__testLoadId = 'first-load'")  # gone if the page reloads
        seen = browser.seen()
        if not seen["jobRow"] or seen["rounds"]:
            fail("before any sample: want the job row and no rounds, saw %r" % seen)

        # Feed the index a round's worth at a time (480 lines: 384 train samples > 300) and
        # watch each round appear on the open page as it is decided.
        index = os.path.join(ws, "data", "train_data.txt")
        sent = 0
        for r in range(1, a.rounds + 1):
            with open(index, "a") as f:
                f.write("\n".join(stream[sent:sent + 480]) + "\n")
            sent += 480

            def decided():
                s = browser.seen()
                return s if r in s["rounds"] and any(
                    m[0] == r for c in s["charts"] for m in c["marks"]) else None

            wait_for("round %d decided on the page" % r, 90, decided)
            say("round %d shown on the page" % r)

        hist = get(status_port, "/api/history?job=" + JOB)
        if not hist or len(hist[0]["rounds"]) != a.rounds:
            fail("/api/history: %r" % hist)
        decisions = {x["round"]: x["decision"] for x in hist[0]["rounds"]}
        if any(d not in ("deployed", "kept") for d in decisions.values()):
            fail("decisions %r" % decisions)
        # The kept versions are listed from disk on the pool: the page shows them a poll later.
        seen = wait_for("the rollback commands", 10,
                        lambda: (lambda s: s if s["versions"] and s["logs"] and any(
                            "train" in w for w in s["workers"]) else None)(browser.seen()))
        check_page(seen, a.rounds, decisions)
        if seen["loadId"] != "first-load":
            fail("the page was reloaded; it must update itself")
        if not all(v.startswith("sedna-lc rollback-model ") and " --version " in v
                   for v in seen["versions"]):
            fail("rollback commands %r" % seen["versions"])
        if not any(l.strip() for l in seen["logs"]):
            fail("every worker log tail is empty")
        metrics = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % status_port).read()
        for want in (b'sedna_lc_job_round{job="default/digits-il",kind="IL"} %d' % (a.rounds + 1),
                     b'sedna_lc_job_eval_metric{job="default/digits-il",kind="IL",'
                     b'metric="precision",model="new"}',
                     b'sedna_lc_job_deploys_total{job="default/digits-il",kind="IL"} %d'
                     % sum(1 for d in decisions.values() if d == "deployed")):
            if want not in metrics:
                fail("/metrics lacks %r" % want)
        shot = browser.page("Page.captureScreenshot", {"format": "png",
                                                       "captureBeyondViewport": True})
        with open(os.path.join(out, "dashboard.png"), "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        say("page: job row %r; %d rounds; charts %s; decisions %r; screenshot %s"
            % (seen["jobRow"][:4], len(seen["rounds"]),
               ", ".join("%s (%d+%d points)" % (c["metric"], c["newPts"], c["deployedPts"])
                         for c in seen["charts"]), decisions, os.path.join(out, "dashboard.png")))

        # After a restart: the CLI from the database, then the page from the restarted LC.
        if stop_lc(lc) != 0:
            fail("sedna-lc did not exit cleanly")
        cli = subprocess.run([a.lc, "status", "--history", "digits-il", "--status-port", "0",
                              "--db", os.path.join(ws, "lc", "database.db")],
                             capture_output=True, text=True, timeout=20)
        lines = [l for l in cli.stdout.splitlines() if l[:1].isdigit()]
        if cli.returncode != 0 or len(lines) != a.rounds:
            fail("status --history: rc %d\n%s%s" % (cli.returncode, cli.stdout, cli.stderr))
        lc = start_lc(a.lc, ws, status_port, bind_port, "sedna-lc-restarted.log")
        browser.page("Page.reload")
        seen = wait_for("the rounds after a restart", 20,
                        lambda: (lambda s: s if len(s["rounds"]) == a.rounds and s["charts"]
                                 else None)(browser.seen()))
        check_page(seen, a.rounds, decisions)
        say("after a restart: status --history shows %d rounds; so does the page" % a.rounds)
    finally:
        if browser:
            browser.close()
        if lc.poll() is None:
            stop_lc(lc)
    say("PASS")


if __name__ == "__main__":
    main()
