"""Inference worker: serves the deployed index on a stream of samples, like the ATCII example's
inference.py (lib/sedna's LifelongLearning.inference with unseen-task detection by task
attribute, UTD_NAME TaskAttr).

Env (docs/protocol.md §P4.4): MODEL_URLS (<outputDir>/deploy/index.pkl, the evaluated index the
LC deployed), infer_dataset_url (a CSV with the dataset's header, followed like `tail -f`),
UT_SAVED_URL (where unseen-task samples are saved).

Every sample is predicted by its task's model; a sample whose task the index does not know is an
unseen-task sample and is written to UT_SAVED_URL/unseen_sample.csv (tab-separated, the header
plus a `pred` column, like ATCII; in a real deployment these are labelled and put back into the
dataset). All predictions go to <infer_dataset_url>_out.csv. Both files are rewritten when the
worker starts. The model is never reloaded: the GM (or standalone sedna-lc) restarts this worker
after every deploy. UT_SAVED_URL/serving.json summarises what this worker has served so far.
"""
import csv
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interface  # noqa: E402


def write_json(obj, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def main():
    model_path = [u for u in os.environ["MODEL_URLS"].split(";") if u][0]
    stream = os.environ.get("infer_dataset_url", "")
    ut_dir = os.environ.get("UT_SAVED_URL", "/tmp")
    os.makedirs(ut_dir, exist_ok=True)
    index = interface.load_pickle(model_path)
    version = index.get("eval", {}).get("version", index.get("version", 0))
    print("serving %s (version %d, tasks %s)" % (model_path, version,
                                                 ", ".join(sorted(index["tasks"]))), flush=True)
    summary = {"model": model_path, "version": version, "tasks": sorted(index["tasks"]),
               "inferred": 0, "unseen": 0, "unseenTasks": {}, "seenCorrect": 0,
               "unseenCorrect": 0, "pid": os.getpid()}
    unseen_path = os.path.join(ut_dir, "unseen_sample.csv")
    status_path = os.path.join(ut_dir, "serving.json")
    write_json(summary, status_path)

    while not (stream and os.path.exists(stream)):
        time.sleep(1)
    f = open(stream, newline="")
    layout = interface.Layout(next(csv.reader([f.readline()])))
    with open(unseen_path, "w") as ut, open(stream + "_out.csv", "w") as out:
        head = "\t".join(layout.header + ["pred"]) + "\n"
        ut.write(head)
        out.write(head)
        pending = ""
        while True:
            chunk = f.read()
            if not chunk:
                time.sleep(1)
                continue
            pending += chunk
            lines = pending.split("\n")
            pending = lines.pop()  # an unterminated last line waits for its newline
            rows = [r for r in csv.reader(l.rstrip("\r") for l in lines) if r]
            preds, unseen = interface.predict(index, layout, rows)
            y = layout.y(rows)
            for r, p, u, label in zip(rows, preds, unseen, y):
                line = "\t".join(r + [str(p)]) + "\n"
                out.write(line)
                if u:
                    ut.write(line)
                    summary["unseen"] += 1
                    t = layout.task(r)
                    summary["unseenTasks"][t] = summary["unseenTasks"].get(t, 0) + 1
                    summary["unseenCorrect"] += int(p == label)
                else:
                    summary["seenCorrect"] += int(p == label)
            ut.flush()
            out.flush()
            summary["inferred"] += len(rows)
            write_json(summary, status_path)
            print("inferred %d samples, %d of unseen tasks %s" % (
                len(rows), sum(unseen), sorted(set(layout.task(r) for r, u in zip(rows, unseen)
                                                   if u))), flush=True)


if __name__ == "__main__":
    main()
