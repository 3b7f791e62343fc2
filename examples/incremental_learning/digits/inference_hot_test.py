"""The hot-update inference worker (inference.py with MODEL_HOT_UPDATE=true) against a stand-in
LC: a local HTTP server records what the worker POSTs. Run: python3 inference_hot_test.py

Checks, with the config written the way the v0.7.0 LC writes it (docs/protocol.md §H4.1):
the worker reloads when model_update_time changes (and only then), maps /model-hot-update/<file>
to the config's directory, reports each reload as lib/sedna does (kind deploy, no results), reports
failed for a model that does not load, and takes a config there at its start as a new version.
"""
import http.server
import json
import os
import pickle
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
from sklearn.linear_model import SGDClassifier

HERE = os.path.dirname(os.path.abspath(__file__))


class Recorder(http.server.BaseHTTPRequestHandler):
    posts = queue.Queue()

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Recorder.posts.put((self.path, json.loads(body.decode("utf-8"))))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok":true}')

    def log_message(self, *args):
        pass


def write_model(path, label):
    """A classifier that predicts `label` for every input."""
    X = np.zeros((20, 64))
    X[:10, 0] = 1.0
    y = np.array([label] * 10 + [(label + 1) % 10] * 10)
    m = SGDClassifier(loss="log_loss", random_state=0, max_iter=5, tol=None)
    m.fit(X, y)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(m, f)
    os.replace(path + ".tmp", path)


def write_config(path, model_file, version):
    text = json.dumps({"model_config": {"model_path": "/model-hot-update/" + model_file,
                                        "model_update_time": version}}, indent=1)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


class HotUpdateWorkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="digits-hot-")
        self.hot = os.path.join(self.tmp, "model-hot-update", "default", "incrementallearningjob",
                                "digits-il")
        os.makedirs(self.hot)
        self.config = os.path.join(self.hot, "model_config.json")
        self.deploy = os.path.join(self.tmp, "deploy.pkl")
        write_model(self.deploy, 0)
        while not Recorder.posts.empty():
            Recorder.posts.get()
        self.proc = None
        self.log = os.path.join(self.tmp, "worker.log")

    def tearDown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self):
        env = dict(os.environ, MODEL_URL=self.deploy, MODEL_HOT_UPDATE="true",
                   MODEL_POLL_PERIOD_SECONDS="1", MODEL_HOT_UPDATE_CONFIG=self.config,
                   LC_SERVER="http://127.0.0.1:%d" % self.server.server_address[1],
                   JOB_NAME="digits-il", NAMESPACE="default", WORKER_NAME="inferworker-abcde",
                   HE_SAVED_URL=os.path.join(self.tmp, "he"), PYTHONUNBUFFERED="1")
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "inference.py")],
                                         env=env, stdout=out, stderr=subprocess.STDOUT)

    def read_log(self):
        with open(self.log) as f:
            return f.read()

    def wait_log(self, text, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if text in self.read_log():
                return
            self.assertIsNone(self.proc.poll(), self.read_log())
            time.sleep(0.05)
        self.fail("no %r in the worker log:\n%s" % (text, self.read_log()))

    def next_post(self, timeout=20):
        try:
            return Recorder.posts.get(timeout=timeout)
        except queue.Empty:
            self.fail("the worker reported nothing; log:\n" + self.read_log())

    def test_reloads_on_each_new_version_and_reports_as_lib_sedna(self):
        self.start()
        self.wait_log("serving " + self.deploy)
        for round_, version in enumerate(["2025-03-06 19:16:47.1 +0800 CST m=+1.0",
                                          "2025-03-06 19:17:47.2 +0800 CST m=+61.0"], 1):
            write_model(os.path.join(self.hot, "model.pkl"), round_)
            write_config(self.config, "model.pkl", version)
            path, body = self.next_post()
            self.assertEqual(path, "/sedna/workers/inferworker-abcde/info")
            self.assertEqual(body, {"name": "inferworker-abcde", "namespace": "default",
                                    "ownerName": "digits-il",
                                    "ownerKind": "incrementallearningjob", "kind": "deploy",
                                    "status": "completed"})
            self.wait_log("model updated to %s (version %s)"
                          % (os.path.join(self.hot, "model.pkl"), version))
        # The same version again (the file rewritten, time unchanged) is no reload.
        write_config(self.config, "model.pkl", "2025-03-06 19:17:47.2 +0800 CST m=+61.0")
        time.sleep(2.5)  # > 2 poll periods: a reload would have been reported by now
        self.assertTrue(Recorder.posts.empty(), "reported an unchanged version")

    def test_model_that_does_not_load_reports_failed(self):
        self.start()
        self.wait_log("serving " + self.deploy)
        with open(os.path.join(self.hot, "broken.pkl"), "w") as f:
            f.write("not a pickle")
        write_config(self.config, "broken.pkl", "v1")
        _, body = self.next_post()
        self.assertEqual(body["kind"], "deploy")
        self.assertEqual(body["status"], "failed")
        self.assertNotIn("results", body)
        self.assertIsNone(self.proc.poll(), "the worker must keep serving the previous model")

    def test_existing_config_is_loaded_and_reported_once_like_lib_sedna(self):
        write_model(os.path.join(self.hot, "model.pkl"), 3)
        write_config(self.config, "model.pkl", "v7")
        self.start()
        _, body = self.next_post()
        self.assertEqual((body["kind"], body["status"]), ("deploy", "completed"))
        self.wait_log("model updated to %s (version v7)" % os.path.join(self.hot, "model.pkl"))
        time.sleep(2.5)  # > 2 poll periods
        self.assertTrue(Recorder.posts.empty(), "reported the same version twice")


if __name__ == "__main__":
    unittest.main()
