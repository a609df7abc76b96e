"""Fashion-MNIST from Debian's dataset-fashion-mnist, and its training set written once as PNG class folders."""
import gzip
import os
import struct
import sys

import numpy as np

DATASET = "/usr/share/datasets/fashion-mnist"


def load(split="train"):
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(DATASET, f"{prefix}-images-idx3-ubyte.gz")) as f:
        _, n, h, w = struct.unpack(">IIII", f.read(16))
        images = np.frombuffer(f.read(), dtype=np.uint8).reshape(n, h, w)
    with gzip.open(os.path.join(DATASET, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        struct.unpack(">II", f.read(8))
        labels = np.frombuffer(f.read(), dtype=np.uint8)
    return images, labels


def png_folder(root):
    """Writes the training set as root/<class>/<index>.png once; returns root."""
    done = os.path.join(root, ".complete")
    if os.path.exists(done):
        return root
    from PIL import Image

    images, labels = load("train")
    for c in range(10):
        os.makedirs(os.path.join(root, f"{c:02d}"), exist_ok=True)
    for i, (image, label) in enumerate(zip(images, labels)):
        Image.fromarray(image, mode="L").save(os.path.join(root, f"{label:02d}", f"{i:05d}.png"))
    open(done, "w").close()
    print(f"wrote {len(images)} PNG files under {root}", file=sys.stderr)
    return root
