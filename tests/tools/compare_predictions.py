"""Compares two prediction files (little-endian int32 classes, as tflite_predict.py and `ramjet eval --predictions`
write them) and prints one JSON line: {"count": N, "agree": K, "agreement": K / N, "first_disagreements": [...]}.

  compare_predictions.py A.bin B.bin [--min-agreement 0.99]

Exits 1 when the files differ in length, or agree on fewer than --min-agreement of the samples.
Needs numpy only.
"""
import argparse
import json
import os
import sys

import numpy as np


def read_predictions(path):
    if not os.path.isfile(path):
        sys.exit(f"compare_predictions: {path}: no such file")
    size = os.path.getsize(path)
    if size % 4:
        sys.exit(f"compare_predictions: {path}: {size} bytes is not a whole number of int32 values")
    return np.fromfile(path, dtype="<i4")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--min-agreement", type=float, default=0.0)
    a = p.parse_args()
    first, second = read_predictions(a.a), read_predictions(a.b)
    if len(first) != len(second):
        sys.exit(f"compare_predictions: {a.a} has {len(first)} predictions, {a.b} has {len(second)}")
    same = first == second
    agreement = float(same.mean()) if len(same) else 1.0
    differing = np.flatnonzero(~same)[:10]
    print(json.dumps({"count": len(same), "agree": int(same.sum()), "agreement": agreement,
                      "first_disagreements": [{"index": int(i), "a": int(first[i]), "b": int(second[i])}
                                              for i in differing]}))
    if agreement < a.min_agreement:
        print(f"compare_predictions: agreement {agreement:.4f} is below {a.min_agreement}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
