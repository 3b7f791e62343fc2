"""What the workers share, like the ATCII example's interface.py: the CSV layout (DATACONF) and
a small multi-task learner.

The learner is lib/sedna's multi-task learning reduced to its core: a task is the value of the
task attribute (`Season`, as lib/sedna's TaskDefinitionByDataAttr defines tasks, and
TaskMiningByDataAttr assigns a sample to the task whose attribute value it has), and every task
has its own classifier. The index (index.pkl) maps each task to its model; a sample whose task
has no model is an unseen-task sample.
"""
import csv
import os
import pickle

import numpy as np
from sklearn.ensemble import GradientBoostingClassifier

DATACONF = {
    "ATTRIBUTES": ["Season"],  # task attribute (ATCII: Season, Cooling startegy_building level)
    "LABEL": "label",          # ATCII: Thermal preference
}


def read_csv(path):
    """Returns (header, rows): the header line's fields and every non-empty row (lists of str)."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise ValueError("%s: empty file (a csv dataset starts with its header)" % path)
        rows = [r for r in reader if r]
    return header, rows


class Layout:
    """Column positions of the task attribute, the label and the features of one CSV header."""

    def __init__(self, header):
        self.header = list(header)
        self.task_col = header.index(DATACONF["ATTRIBUTES"][0])
        self.label_col = header.index(DATACONF["LABEL"])
        self.feature_cols = [i for i in range(len(header))
                             if i not in (self.task_col, self.label_col)]
        self.features = [header[i] for i in self.feature_cols]

    def task(self, row):
        return row[self.task_col]

    def x(self, rows):
        return np.array([[float(r[i]) for i in self.feature_cols] for r in rows],
                        dtype=np.float64).reshape(len(rows), len(self.feature_cols))

    def y(self, rows):
        return np.array([int(r[self.label_col]) for r in rows], dtype=np.int64)

    def by_task(self, rows):
        """task -> its rows, tasks in order of first appearance."""
        groups = {}
        for r in rows:
            groups.setdefault(self.task(r), []).append(r)
        return groups


def make_estimator(n_estimators):
    # The ATCII example trains XGBoost per task; scikit-learn's gradient boosting is the analogue.
    return GradientBoostingClassifier(n_estimators=n_estimators, max_depth=2, random_state=0)


def predict(index, layout, rows):
    """Predicts every row with its task's model. Returns (predictions, unseen flags). A sample of
    an unseen task is predicted by a majority vote of all task models (no better guess exists)."""
    preds, unseen = [], []
    if not rows:
        return preds, unseen
    X = layout.x(rows)
    tasks = index["tasks"]
    for i, r in enumerate(rows):
        t = tasks.get(layout.task(r))
        if t is not None:
            preds.append(int(t["model"].predict(X[i:i + 1])[0]))
            unseen.append(False)
            continue
        votes = [int(m["model"].predict(X[i:i + 1])[0]) for m in tasks.values()]
        preds.append(max(sorted(set(votes)), key=votes.count) if votes else 0)
        unseen.append(True)
    return preds, unseen


def load_pickle(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def save_pickle(obj, path):
    """Writes atomically: a reader (or the LC copying it) never sees a partial file."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        pickle.dump(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def version_of(output_url):
    """The LC names output directories <outputDir>/{train,eval}/<version>."""
    base = os.path.basename(output_url.rstrip("/"))
    return int(base) if base.isdigit() else 0
