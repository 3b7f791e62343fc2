"""Inference worker: serves the deployed model (MODEL_URL) on the images listed in
INFER_DATASET_URL and logs hard examples, as Sedna's incremental-learning inference worker does
with its hard-example-mining algorithm (HEM_NAME / HEM_PARAMETERS, here IBT: an image is hard when
the model's top probability is below threshold_img). Hard examples are appended to
HE_SAVED_URL/hard_examples.txt as `path predicted-label confidence`.

Two ways a new model reaches it, as in Sedna:
* cold (deploySpec.model.hotUpdateEnabled false): the GM (or standalone sedna-lc) restarts this
  worker after every deploy, so it starts on the newest MODEL_URL;
* model hot update (hotUpdateEnabled true, docs/protocol.md §H4.1): the worker keeps
  running. With MODEL_HOT_UPDATE=true it reads MODEL_HOT_UPDATE_CONFIG every
  MODEL_POLL_PERIOD_SECONDS (60 when unset or < 1), a file the LC writes on each deploy:
      {"model_config": {"model_path": "/model-hot-update/<file>", "model_update_time": "<t>"}}
  When model_update_time differs from the one last seen it loads model_path and reports
  kind "deploy", status "completed" (or "failed" when the model does not load) to the LC, as
  lib/sedna's ModelLoadingThread does: POST {LC_SERVER}/sedna/workers/{WORKER_NAME}/info with
  {"name", "namespace", "ownerName", "ownerKind": "incrementallearningjob", "kind": "deploy",
  "status"} and no "results". A config that cannot be read or parsed, or a model file not there
  yet, is retried at the next poll without a report (lib/sedna does the same).

model_path names the inference pod's mount /model-hot-update. It is resolved against the
directory that holds MODEL_HOT_UPDATE_CONFIG: in a pod that is /model-hot-update itself
(MODEL_HOT_UPDATE_CONFIG=/model-hot-update/model_config.json); in standalone mode, where the
worker is a local process, it is the job's local model-hot-update directory
(<data dir>/model-hot-update/<namespace>/incrementallearningjob/<job>/).

As in lib/sedna, the first poll that finds a config counts as a new version, also when the config
was there before the worker started (a restarted worker reloads and reports once). A report the
LC refuses (standalone sedna-lc accepts a reload only while the job is at (Deploy, Running)) is
logged, and the worker serves on.
"""
import json
import os
import pickle
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_data  # noqa: E402

CONTAINER_MOUNT = "/model-hot-update"


def resolve_model_path(model_path, config_path):
    """/model-hot-update/<rest> -> <directory of config_path>/<rest>; other paths unchanged."""
    if model_path == CONTAINER_MOUNT or model_path.startswith(CONTAINER_MOUNT + "/"):
        rest = model_path[len(CONTAINER_MOUNT):].lstrip("/")
        return os.path.join(os.path.dirname(os.path.abspath(config_path)), rest)
    return model_path


def read_hot_update_config(config_path):
    """(version, local model path), or None when the config is absent or not usable yet."""
    try:
        with open(config_path) as f:
            conf = json.load(f)
        msg = conf["model_config"]
        version = str(msg["model_update_time"])
        path = resolve_model_path(str(msg["model_path"]), config_path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("model hot update config %s not usable yet: %s" % (config_path, e), flush=True)
        return None
    return version, path


def load_model(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def hot_update_settings():
    if os.environ.get("MODEL_HOT_UPDATE", "false").lower() != "true":
        return None
    config_path = os.environ.get("MODEL_HOT_UPDATE_CONFIG", "")
    if not config_path:
        print("MODEL_HOT_UPDATE=true but MODEL_HOT_UPDATE_CONFIG is unset: no hot update",
              flush=True)
        return None
    try:
        period = int(os.environ.get("MODEL_POLL_PERIOD_SECONDS", "60"))
    except ValueError:
        period = 60
    if period < 1:
        period = 60
    return config_path, period


class HotUpdater:
    """Polls the model hot update config and reloads the model when its version changes."""

    def __init__(self, config_path, period):
        self.config_path = config_path
        self.period = period
        self.version = None
        self.next_poll = time.time() + period

    def poll(self, now):
        """The newly loaded model when the config changed and it loaded, else None."""
        if now < self.next_poll:
            return None
        self.next_poll = now + self.period
        got = read_hot_update_config(self.config_path)
        if got is None:
            return None
        version, path = got
        if version == self.version or not os.path.exists(path):
            return None
        self.version = version
        try:
            model = load_model(path)
        except Exception as e:  # noqa: BLE001 - any unpickling error
            print("model update %s failed to load %s: %s" % (version, path, e), flush=True)
            report_deploy("failed")
            return None
        print("model updated to %s (version %s)" % (path, version), flush=True)
        report_deploy("completed")
        return model


def report_deploy(status):
    """kind deploy, no results; an error is logged (lib/sedna's report_task_info does the same)."""
    import sedna_report  # noqa: E402 - only hot-update workers report
    try:
        sedna_report.report("deploy", status=status)
    except Exception as e:  # noqa: BLE001 - the worker serves on whatever the LC answers
        print("reporting deploy %s: %s" % (status, e), flush=True)


def main():
    model_path = os.environ["MODEL_URL"]
    params = json.loads(os.environ.get("HEM_PARAMETERS") or "null") or []
    threshold = float({p["key"]: p["value"] for p in params}.get("threshold_img", "0.9"))
    stream = os.environ.get("INFER_DATASET_URL", "")
    out_dir = os.environ.get("HE_SAVED_URL", "hard_examples")
    os.makedirs(out_dir, exist_ok=True)
    hot = hot_update_settings()
    updater = HotUpdater(*hot) if hot else None
    model = load_model(model_path)
    print("serving %s" % model_path, flush=True)
    print("HEM %s, threshold_img %.2f%s" % (
        os.environ.get("HEM_NAME"), threshold,
        ", model hot update from %s every %d s" % hot if hot else ""), flush=True)
    base = os.path.dirname(stream)
    done = 0
    while True:
        if updater:
            model = updater.poll(time.time()) or model
        lines = []
        if stream and os.path.exists(stream):
            with open(stream) as f:
                lines = [l.split()[0] for l in f if l.strip()]
        for rel in lines[done:]:
            x = digits_data.read_pgm(os.path.join(base, rel)).reshape(1, -1)
            proba = model.predict_proba(x)[0]
            label, conf = int(proba.argmax()), float(proba.max())
            if conf < threshold:
                with open(os.path.join(out_dir, "hard_examples.txt"), "a") as f:
                    f.write("%s %d %.3f\n" % (rel, label, conf))
        if len(lines) > done:
            print("inferred %d images" % (len(lines) - done), flush=True)
        done = len(lines)
        time.sleep(min(1.0, updater.period) if updater else 1.0)


if __name__ == "__main__":
    main()
