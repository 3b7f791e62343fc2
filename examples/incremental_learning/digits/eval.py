"""Eval worker: evaluates every model of MODEL_URLS (";"-separated, [trained, deployed]) on
TEST_DATASET_URL and reports per-class precision and recall lists, one result per model in input
order, like Sedna's incremental-learning eval worker (docs/protocol.md §P5.3)."""
import os
import pickle
import sys

from sklearn.metrics import precision_score, recall_score

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_data  # noqa: E402
import sedna_report  # noqa: E402


def main():
    urls = [u for u in os.environ["MODEL_URLS"].split(";") if u]
    test_url = os.environ["TEST_DATASET_URL"]
    base_dir = os.path.dirname(os.environ["ORIGINAL_DATASET_URL"])
    X, y = digits_data.load_index(test_url, base_dir)
    results = []
    for url in urls:
        path = os.path.join(url, "model.pkl") if os.path.isdir(url) else url
        with open(path, "rb") as f:
            model = pickle.load(f)
        pred = model.predict(X) if len(y) else []
        p = precision_score(y, pred, labels=list(range(10)), average=None, zero_division=0)
        r = recall_score(y, pred, labels=list(range(10)), average=None, zero_division=0)
        results.append({"format": "pkl", "url": url,
                        "metrics": {"precision": [round(float(v), 4) for v in p],
                                    "recall": [round(float(v), 4) for v in r]}})
        print("%s: mean precision %.3f on %d samples" % (url, float(p.mean()), len(y)), flush=True)
    sedna_report.report("eval", results)


if __name__ == "__main__":
    main()
