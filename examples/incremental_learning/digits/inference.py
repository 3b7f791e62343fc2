"""Inference worker: serves the deployed model (MODEL_URL) on the images listed in
INFER_DATASET_URL and logs hard examples, as Sedna's incremental-learning inference worker does
with its hard-example-mining algorithm (HEM_NAME / HEM_PARAMETERS, here IBT: an image is hard when
the model's top probability is below threshold_img). Hard examples are appended to
HE_SAVED_URL/hard_examples.txt as `path predicted-label confidence`. The GM (or standalone
sedna-lc) restarts this worker after every deploy, so it always serves the newest model."""
import json
import os
import pickle
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_data  # noqa: E402


def main():
    model_path = os.environ["MODEL_URL"]
    params = json.loads(os.environ.get("HEM_PARAMETERS") or "null") or []
    threshold = float({p["key"]: p["value"] for p in params}.get("threshold_img", "0.9"))
    stream = os.environ.get("INFER_DATASET_URL", "")
    out_dir = os.environ.get("HE_SAVED_URL", "hard_examples")
    os.makedirs(out_dir, exist_ok=True)
    with open(model_path, "rb") as f:
        model = pickle.load(f)
    print("serving %s (HEM %s, threshold_img %.2f)" % (model_path, os.environ.get("HEM_NAME"),
                                                        threshold), flush=True)
    base = os.path.dirname(stream)
    done = 0
    while True:
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
        time.sleep(1)


if __name__ == "__main__":
    main()
