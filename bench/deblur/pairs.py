"""The deblurring pairs every row of ./dev bench deblur reads: Fashion-MNIST images in [0, 1] (the clean targets),
blurred by a 5×5 Gaussian (σ 1, edges reflected without repeating the edge, as the `blur` transform does) with
Gaussian noise (σ 0.05, clipped to [0, 1]) added: the degradation of examples/deblur/pipeline.json, drawn here once
with NumPy so that ramjet (through its `npy` source), Keras and PyTorch train and test on the same arrays."""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pipeline"))
import fashion_mnist  # noqa: E402

SIZE, SIGMA, NOISE = 5, 1.0, 0.05


def peer_arguments(precisions, variant, variant_help):
    """The command line both peers take: the model's IR, the arrays run.py wrote, the precision, one variant flag
    (--jit for Keras, --compile for PyTorch) and the training settings every row shares."""
    p = argparse.ArgumentParser()
    p.add_argument("--ir", required=True)
    p.add_argument("--data", required=True, help="a JSON file: {'train_noisy': path, ...} (run.py writes it)")
    p.add_argument("--precision", choices=precisions, default=precisions[0])
    p.add_argument(variant, action="store_true", help=variant_help)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def gaussian_blur(images):
    x = np.arange(SIZE) - (SIZE - 1) / 2
    g = np.exp(-x * x / (2 * SIGMA * SIGMA))
    g /= g.sum()
    pad = SIZE // 2
    padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad)), mode="reflect")  # reflect = BORDER_REFLECT_101
    h, w = images.shape[1:]
    rows = sum(g[k] * padded[:, k:k + h, :] for k in range(SIZE))
    return sum(g[k] * rows[:, :, k:k + w] for k in range(SIZE))


def make(split, take, seed):
    images, _ = fashion_mnist.load(split)
    clean = images[:take].astype(np.float32) / 255
    rng = np.random.default_rng(seed)
    noisy = gaussian_blur(clean.astype(np.float64)) + rng.normal(0, NOISE, clean.shape)
    return np.clip(noisy, 0, 1).astype(np.float32)[..., None], clean[..., None]


def write(folder, train_take, test_take, seed=1):
    """Writes {train,test}_{noisy,clean}.npy into folder (once); returns their paths by (split, kind)."""
    paths = {}
    for split, take in (("train", train_take), ("test", test_take)):
        noisy, clean = None, None
        for kind in ("noisy", "clean"):
            paths[(split, kind)] = os.path.join(folder, f"{split}_{kind}_{take}.npy")
        if not all(os.path.isfile(paths[(split, k)]) for k in ("noisy", "clean")):
            noisy, clean = make(split, take, seed + (split == "test"))
            np.save(paths[(split, "noisy")], noisy)
            np.save(paths[(split, "clean")], clean)
    return paths


def load(paths, split):
    return np.load(paths[(split, "noisy")]), np.load(paths[(split, "clean")])


def psnr(restored, clean, max_val=1.0):
    """tf.image.psnr per image, averaged over the images (exact images count 100 dB, as ramjet's metric)."""
    mse = ((restored.astype(np.float64) - clean) ** 2).reshape(len(clean), -1).mean(axis=1)
    with np.errstate(divide="ignore"):
        values = np.where(mse > 0, 10 * np.log10(max_val * max_val / np.maximum(mse, 1e-300)), 100.0)
    return float(np.minimum(values, 100.0).mean())
