"""The digits dataset of scikit-learn as image files (PGM, 8x8 grey) plus Sedna-style index
lines `<relative image path> <label>`, and the loader the workers use."""
import os

import numpy as np


def write_pgm(path, pixels):
    """pixels: 8x8 array of 0..16 → 8-bit PGM (P5)."""
    data = (np.asarray(pixels, dtype=np.float64) * (255.0 / 16.0)).round().astype(np.uint8)
    with open(path, "wb") as f:
        f.write(b"P5\n8 8\n255\n")
        f.write(data.tobytes())


def read_pgm(path):
    with open(path, "rb") as f:
        raw = f.read()
    # header: P5\n8 8\n255\n
    parts = raw.split(b"\n", 3)
    w, h = (int(x) for x in parts[1].split())
    pixels = np.frombuffer(parts[3][: w * h], dtype=np.uint8).astype(np.float64)
    return pixels * (16.0 / 255.0)


def load_index(index_path, base_dir):
    """Reads `path label` lines; paths are relative to base_dir. Returns X, y."""
    xs, ys = [], []
    with open(index_path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rel, label = line.split()[:2]
            xs.append(read_pgm(os.path.join(base_dir, rel)))
            ys.append(int(label))
    if not xs:
        return np.zeros((0, 64)), np.zeros((0,), dtype=int)
    return np.vstack(xs), np.asarray(ys)
