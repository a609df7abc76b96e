"""Before and after for `ramjet eval examples/deblur/pipeline.json --predictions DIR`: the PSNR of the degraded
inputs and of the restored outputs against the clean targets (tf.image.psnr per image, averaged, as ramjet's metric),
and a picture: blurred and noisy inputs, ramjet's restorations and the clean images, one column per example.

  python examples/deblur/compare.py DIR [--out picture.png] [--count 8]

Needs NumPy and Pillow (in the venv ./dev creates)."""
import argparse
import os

import numpy as np
from PIL import Image


def psnr(a, b, max_val=1.0):
    mse = ((a.astype(np.float64) - b) ** 2).reshape(len(a), -1).mean(axis=1)
    return float(np.mean(np.where(mse > 0, 10 * np.log10(max_val ** 2 / np.maximum(mse, 1e-300)), 100.0)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir", help="the folder `ramjet eval --predictions` wrote")
    p.add_argument("--out", help="write the picture here (PNG)")
    p.add_argument("--count", type=int, default=8)
    p.add_argument("--scale", type=int, default=3, help="pixels per image pixel")
    a = p.parse_args()
    inputs, restored, clean = (np.load(os.path.join(a.dir, f"{n}.npy")) for n in ("inputs", "predictions", "targets"))
    print(f"{len(clean)} test images: PSNR of the degraded inputs {psnr(inputs, clean):.2f} dB, "
          f"of ramjet's restorations {psnr(restored, clean):.2f} dB")
    if not a.out:
        return
    rows = []
    for images in (inputs, restored, clean):
        tiles = [np.pad(np.clip(images[i, :, :, 0], 0, 1), 1, constant_values=1.0) for i in range(a.count)]
        rows.append(np.concatenate(tiles, axis=1))
    grid = np.concatenate(rows, axis=0)
    picture = Image.fromarray(np.round(grid * 255).astype(np.uint8), mode="L")
    picture = picture.resize((picture.width * a.scale, picture.height * a.scale), Image.NEAREST)
    picture.save(a.out)
    print(f"wrote {a.out}: rows are the blurred and noisy inputs, the restorations, the clean images")


if __name__ == "__main__":
    main()
