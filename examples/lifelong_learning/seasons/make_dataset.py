"""Writes the dataset of the seasons example under <workspace>/data, as the ATCII example ships
trainData.csv and a longer trainData2.csv to swap in.

The data is synthetic (scikit-learn's make_classification, fixed seeds): every season is its own
3-class problem over the same six features, with its own decision rule, so a model learned on one
season is of little use on another; that is what makes Season a task attribute. The rows arrive
in an order that introduces seasons over time:

  version 1 (rows    1-300): summer and winter only
  version 2 (rows  301-600): spring appears (half the rows), with summer and winter
  version 3 (rows  601-900): autumn appears (half the rows), with the three others
  version 4+ (900+):         all four seasons evenly

Files (CSV, header `Season,x1,...,x6,label`):
  data/trainData.csv          the dataset index: header + the first STEP rows
  incoming/trainData<k>.csv   k = 2, 3, ...: header + the first k*STEP rows (each a longer copy
                              of the previous one), swapped in by the demo with os.replace
  data/infer_data.csv         the inference stream: 50 held-out rows of every season
"""
import os
import sys

import numpy as np
from sklearn.datasets import make_classification

SEASONS = ["summer", "winter", "spring", "autumn"]
PER_SEASON = 700
INFER_PER_SEASON = 50
STEP = 100          # rows added by each swap
VERSION_ROWS = 300  # rows per version: 3 swaps of 100 rows, 240 train samples > threshold 200
HEADER = ["Season", "x1", "x2", "x3", "x4", "x5", "x6", "label"]


def season_rows(k):
    X, y = make_classification(n_samples=PER_SEASON, n_features=6, n_informative=4, n_redundant=1,
                               n_classes=3, n_clusters_per_class=1, class_sep=1.2, flip_y=0.02,
                               random_state=100 + k)
    return [[SEASONS[k]] + ["%.4f" % v for v in X[i]] + [str(int(y[i]))] for i in range(len(y))]


def schedule(pools, rng):
    """The training rows in arrival order (see the module docstring)."""
    def take(season, n):
        rows, pools[season] = pools[season][:n], pools[season][n:]
        return rows

    def version(mix):
        rows = [r for season, n in mix for r in take(season, n)]
        rng.shuffle(rows)
        return rows

    out = version([("summer", 150), ("winter", 150)])
    out += version([("spring", 150), ("summer", 75), ("winter", 75)])
    out += version([("autumn", 150), ("summer", 50), ("winter", 50), ("spring", 50)])
    while all(len(pools[s]) >= VERSION_ROWS // 4 for s in SEASONS):
        out += version([(s, VERSION_ROWS // 4) for s in SEASONS])
    return out


def write_csv(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(",".join(HEADER) + "\n")
        for r in rows:
            f.write(",".join(r) + "\n")
    os.replace(tmp, path)


def main(root):
    rng = np.random.RandomState(7)
    pools, infer = {}, []
    for k, season in enumerate(SEASONS):
        rows = season_rows(k)
        infer += rows[:INFER_PER_SEASON]
        pools[season] = rows[INFER_PER_SEASON:]
    train = schedule(pools, rng)
    rng.shuffle(infer)
    for d in ("data", "incoming"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    write_csv(os.path.join(root, "data", "trainData.csv"), train[:STEP])
    files = 1
    for n in range(2 * STEP, len(train) + 1, STEP):
        files += 1
        write_csv(os.path.join(root, "incoming", "trainData%d.csv" % files), train[:n])
    write_csv(os.path.join(root, "data", "infer_data.csv"), infer)
    print("wrote %d training rows (data/trainData.csv: %d rows; incoming/trainData2..%d.csv: "
          "+%d rows each, %d versions of %d rows) and %d inference rows"
          % (len(train), STEP, files, STEP, len(train) // VERSION_ROWS, VERSION_ROWS, len(infer)))


if __name__ == "__main__":
    main(sys.argv[1])
