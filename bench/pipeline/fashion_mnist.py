"""Fashion-MNIST from Debian's dataset-fashion-mnist, and its training set written once as PNG class folders."""
import gzip
import os
import struct
import sys
import time

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


def torch_tensors(split="train"):
    """The split as PyTorch tensors: float32 images in [0, 1], NCHW, and int64 labels (torch imported here, so
    TensorFlow processes can use this module)."""
    import torch

    images, labels = load(split)
    return (torch.from_numpy(images.copy()).float().div_(255).unsqueeze(1),
            torch.from_numpy(labels.astype("int64")))


def timed_passes(run_pass, repeat):
    """One warm-up pass, then `repeat` timed ones; returns (the last pass's result, seconds per timed pass)."""
    result = run_pass()
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = run_pass()
        seconds.append(time.perf_counter() - start)
    return result, seconds


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
