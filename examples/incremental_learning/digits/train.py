"""Train worker: fine-tunes the base model on this round's train samples.

Env (Sedna's contract, docs/protocol.md §P4.4): TRAIN_DATASET_URL (data.txt of the round),
ORIGINAL_DATASET_URL (the dataset index; sample paths are relative to its directory),
BASE_MODEL_URL (model to start from), MODEL_URL (output directory). Reports one model, as
lib/sedna's scikit-learn/base backend does.
"""
import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_data  # noqa: E402
import sedna_report  # noqa: E402


def main():
    train_url = os.environ["TRAIN_DATASET_URL"]
    base_dir = os.path.dirname(os.environ["ORIGINAL_DATASET_URL"])
    base_model = os.environ["BASE_MODEL_URL"]
    out_dir = os.environ["MODEL_URL"]
    epochs = int(os.environ.get("epochs", "5"))

    X, y = digits_data.load_index(train_url, base_dir)
    if os.path.isdir(base_model):
        base_model = os.path.join(base_model, "model.pkl")
    with open(base_model, "rb") as f:
        model = pickle.load(f)
    classes = np.arange(10)
    for _ in range(epochs):
        model.partial_fit(X, y, classes=classes)
    acc = float(model.score(X, y)) if len(y) else 0.0
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "model.pkl")
    with open(out + ".tmp", "wb") as f:
        pickle.dump(model, f)
    os.replace(out + ".tmp", out)
    print("trained on %d samples, train accuracy %.3f -> %s" % (len(y), acc, out), flush=True)
    sedna_report.report("train", [{"format": "pkl", "url": out,
                                   "metrics": {"accuracy": round(acc, 4)}}])


if __name__ == "__main__":
    main()
