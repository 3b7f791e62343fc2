"""Writes scikit-learn's digits as PGM images under <dir>/images, an empty index
<dir>/train_data.txt, a weak initial model and a copy of it as the deployed model, and prints the
index lines in a shuffled order to <dir>/stream.txt (the demo appends them in batches)."""
import os
import pickle
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_data  # noqa: E402


def main(root):
    digits = load_digits()
    img_dir = os.path.join(root, "data", "images")
    os.makedirs(img_dir, exist_ok=True)
    rng = np.random.RandomState(7)
    order = rng.permutation(len(digits.target))
    lines = []
    for i in order:
        rel = "images/%05d.pgm" % i
        digits_data.write_pgm(os.path.join(root, "data", rel), digits.images[i])
        lines.append("%s %d" % (rel, digits.target[i]))
    # A weak initial model: 60 samples, one pass.
    init = order[:60]
    model = SGDClassifier(loss="log_loss", random_state=0)
    X = digits.images[init].reshape(len(init), -1)
    model.partial_fit(X, digits.target[init], classes=np.arange(10))
    os.makedirs(os.path.join(root, "models", "base_model"), exist_ok=True)
    os.makedirs(os.path.join(root, "models", "deploy_model"), exist_ok=True)
    for path in (os.path.join(root, "models", "base_model", "model.pkl"),
                 os.path.join(root, "models", "deploy_model", "model.pkl")):
        with open(path, "wb") as f:
            pickle.dump(model, f)
    open(os.path.join(root, "data", "train_data.txt"), "w").close()
    # The last 200 images are the inference stream; the rest arrive as training data.
    with open(os.path.join(root, "stream.txt"), "w") as f:
        f.write("\n".join(lines[60:-200]) + "\n")
    with open(os.path.join(root, "data", "infer_stream.txt"), "w") as f:
        f.write("\n".join(lines[-200:]) + "\n")
    print("wrote %d images, initial model trained on 60" % len(lines))


if __name__ == "__main__":
    main(sys.argv[1])
