"""Train worker: multi-task training of one version, like the ATCII example's train.py
(lib/sedna's LifelongLearning.train with TaskDefinitionByDataAttr on Season).

Env (Sedna's contract, docs/protocol.md §P4.4): TRAIN_DATASET_URL (data.csv of this version:
the header line + the new train samples, written by the LC), ORIGINAL_DATASET_URL (the dataset
index), OUTPUT_URL (<outputDir>/train/<version>), KB_SERVER (Sedna's knowledge-base server; this
example keeps its knowledge base in the directory KB_DIR instead), n_estimators.

Knowledge: the knowledge base holds every task's samples and model. A version's samples are
merged into their tasks (duplicates dropped, so samples the LC re-sends after a failed train are
not counted twice); the tasks that received samples are retrained on all their samples; the
others keep their model. The index written to OUTPUT_URL/index.pkl lists every task and its
model. Reports one result, as lib/sedna's base backend does for BACKEND_TYPE=SKLEARN, with
metrics {task: {"accuracy": 3-fold cross-validated accuracy}} for the tasks trained now.
"""
import os
import sys
import time

import numpy as np
from sklearn.model_selection import cross_val_score

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interface  # noqa: E402
import sedna_report  # noqa: E402


def cv_accuracy(estimator, X, y):
    folds = min(3, int(np.bincount(y).min())) if len(y) else 0
    if folds < 2 or len(set(y.tolist())) < 2:
        return float(estimator.score(X, y)) if len(y) else 0.0
    return float(cross_val_score(estimator, X, y, cv=folds).mean())


def main():
    train_url = os.environ["TRAIN_DATASET_URL"]
    out_dir = os.environ["OUTPUT_URL"]
    kb_dir = os.environ.get("KB_DIR", "kb")
    n_estimators = int(os.environ.get("n_estimators", "50"))
    version = interface.version_of(out_dir)
    print("version %d: train data %s, KB_SERVER %s (unused: knowledge base in %s)"
          % (version, train_url, os.environ.get("KB_SERVER", "-"), os.path.abspath(kb_dir)),
          flush=True)

    header, rows = interface.read_csv(train_url)
    layout = interface.Layout(header)
    kb_path = os.path.join(kb_dir, "kb.pkl")
    kb = interface.load_pickle(kb_path) if os.path.exists(kb_path) else {"tasks": {}}
    if kb.get("header", header) != header:
        raise SystemExit("%s: header %s differs from the knowledge base's %s"
                         % (train_url, header, kb["header"]))
    kb["header"] = header

    metrics = {}
    for task, new_rows in layout.by_task(rows).items():
        entry = kb["tasks"].setdefault(task, {"rows": [], "model": None})
        known = set(map(tuple, entry["rows"]))
        added = [r for r in new_rows if tuple(r) not in known]
        if not added:
            continue
        entry["rows"] += added
        X, y = layout.x(entry["rows"]), layout.y(entry["rows"])
        t0 = time.time()
        acc = cv_accuracy(interface.make_estimator(n_estimators), X, y)
        entry["model"] = interface.make_estimator(n_estimators).fit(X, y)
        entry["accuracy"] = acc
        entry["version"] = version
        metrics[task] = {"accuracy": round(acc, 4)}
        print("task %-7s +%3d samples (%4d in all): cv accuracy %.3f (%.1f s)"
              % (task, len(added), len(entry["rows"]), acc, time.time() - t0), flush=True)

    index = {
        "version": version,
        "header": header,
        "task_attribute": interface.DATACONF["ATTRIBUTES"][0],
        "label": interface.DATACONF["LABEL"],
        "tasks": {t: {"model": e["model"], "samples": len(e["rows"]),
                      "accuracy": e["accuracy"], "version": e["version"]}
                  for t, e in kb["tasks"].items() if e["model"] is not None},
        "trained_now": sorted(metrics),
    }
    if not index["tasks"]:
        raise SystemExit("no task has samples; nothing to train")
    # The knowledge base first, then the index: a crash in between leaves the samples in the KB,
    # and the LC re-sends them with the next version (they are then found as duplicates).
    interface.save_pickle(kb, kb_path)
    out = os.path.join(out_dir, "index.pkl")
    interface.save_pickle(index, out)
    print("index %s: tasks %s" % (out, ", ".join("%s (%d samples)" % (t, e["samples"])
                                                 for t, e in index["tasks"].items())), flush=True)
    sedna_report.report("train", [{"format": "pkl", "url": out, "metrics": metrics}],
                        owner_kind="lifelonglearningjob")


if __name__ == "__main__":
    main()
