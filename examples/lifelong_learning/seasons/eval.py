"""Eval worker: evaluates the trained index of this version, like the ATCII example's eval.py
(lib/sedna's LifelongLearning.evaluate with metrics precision_score, average micro, and
model_threshold).

Env (docs/protocol.md §P4.4): MODEL_URLS (the train worker's index.pkl), TEST_DATASET_URL
(data.csv: header + the eval samples of the last versions, written by the LC), OUTPUT_URL
(<outputDir>/eval/<version>), metrics, metric_param, model_threshold.

Every test sample is predicted by its task's model (interface.predict). A task whose precision
is below model_threshold is dropped from the evaluated index, as lib/sedna drops it from the
knowledge base's deployable tasks. The evaluated index is written to OUTPUT_URL/index.pkl (the
LC copies it to <outputDir>/deploy/index.pkl) and reported with {"precision_score": x}.
"""
import ast
import inspect
import os
import sys

from sklearn import metrics as skm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interface  # noqa: E402
import sedna_report  # noqa: E402


def main():
    model_url = [u for u in os.environ["MODEL_URLS"].split(";") if u][0]
    test_url = os.environ["TEST_DATASET_URL"]
    out_dir = os.environ["OUTPUT_URL"]
    metric_name = os.environ.get("metrics", "precision_score")
    metric_param = ast.literal_eval(os.environ.get("metric_param") or "{}")
    threshold = float(os.environ.get("model_threshold", "0"))
    metric = getattr(skm, metric_name)
    if "zero_division" in inspect.signature(metric).parameters:
        metric_param.setdefault("zero_division", 0)

    index = interface.load_pickle(model_url)
    header, rows = interface.read_csv(test_url)
    layout = interface.Layout(header)
    preds, unseen = interface.predict(index, layout, rows)
    y = layout.y(rows)

    def score(idx):
        if not idx:
            return None
        return float(metric([y[i] for i in idx], [preds[i] for i in idx], **metric_param))

    overall = score(list(range(len(rows))))
    per_task, dropped = {}, []
    for task in sorted(set(layout.task(r) for r in rows)):
        idx = [i for i, r in enumerate(rows) if layout.task(r) == task]
        s = score(idx)
        per_task[task] = {"samples": len(idx), metric_name: s,
                          "unseen": task not in index["tasks"]}
        print("task %-7s %3d samples: %s %.3f%s" % (task, len(idx), metric_name, s,
                                                   " (unseen task)" if unseen[idx[0]] else ""),
              flush=True)
        if task in index["tasks"] and s < threshold:
            dropped.append(task)
    for task in dropped:
        print("task %s: %s below model_threshold %.2f; dropped from the deployed index"
              % (task, metric_name, threshold), flush=True)
        del index["tasks"][task]
    overall = overall if overall is not None else 0.0
    index["eval"] = {"version": interface.version_of(out_dir), "samples": len(rows),
                     metric_name: overall, "tasks": per_task, "dropped": dropped,
                     "test_data": test_url}
    out = os.path.join(out_dir, "index.pkl")
    interface.save_pickle(index, out)
    print("%s %.3f on %d samples (%s) -> %s" % (metric_name, overall, len(rows), model_url, out),
          flush=True)
    sedna_report.report("eval", [{"format": "pkl", "url": out,
                                  "metrics": {metric_name: round(overall, 4)}}],
                        owner_kind="lifelonglearningjob")


if __name__ == "__main__":
    main()
