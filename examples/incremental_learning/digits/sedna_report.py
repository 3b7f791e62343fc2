"""Reports a worker's result to the Local Controller exactly as Sedna's lib/sedna does
(docs/protocol.md §P5.3-§P5.4), with the standard library only.

POST {LC_SERVER}/sedna/workers/{WORKER_NAME}/info, body json.dumps of
{"name", "namespace", "ownerName", "ownerKind", "kind", "status", "results"}, "results" left out
when there are none (lib/sedna's report_task_info: a hot-update reload reports kind "deploy"
without results, docs/protocol.md §H4.1); up to 3 attempts, 2 s apart, like lib/sedna's
retry decorator.
"""
import json
import os
import time
import urllib.error
import urllib.request


def report(kind, results=None, status="completed", owner_kind="incrementallearningjob"):
    lc_server = os.environ.get("LC_SERVER", "http://127.0.0.1:9100").rstrip("/")
    job_name = os.environ.get("JOB_NAME", "sedna")
    worker_name = os.environ.get("WORKER_NAME") or "%s-%d" % (job_name, os.getpid())
    message = {
        "name": worker_name,
        "namespace": os.environ.get("NAMESPACE", "default"),
        "ownerName": job_name,
        "ownerKind": owner_kind,
        "kind": kind,
        "status": status,
    }
    if results:
        message["results"] = results
    url = "%s/sedna/workers/%s/info" % (lc_server, worker_name)
    body = json.dumps(message).encode("utf-8")
    last = None
    for attempt in range(3):
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                if resp.status == 200:
                    return json.loads(resp.read().decode("utf-8"))
                last = "HTTP %d" % resp.status
        except (urllib.error.URLError, OSError) as e:
            last = str(e)
        if attempt < 2:
            time.sleep(2)
    raise RuntimeError("reporting to %s failed after 3 attempts: %s" % (url, last))
