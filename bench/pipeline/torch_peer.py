"""PyTorch's DataLoader doing the benchmark's work with torchvision transforms, batch 128, one timed epoch."""
import argparse
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2

sys.path.insert(0, os.path.dirname(__file__))
import fashion_mnist  # noqa: E402

# The same work as ramjet's and tf.data's: pad 4 + random crop 28, random horizontal flip, scale to [0, 1].
AUGMENT = v2.Compose([v2.RandomCrop(28, padding=4), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True)])


class InMemory(Dataset):
    def __init__(self):
        images, labels = fashion_mnist.load("train")
        self.images = torch.from_numpy(images.copy()).unsqueeze(1)  # N, 1, 28, 28 uint8
        self.labels = torch.from_numpy(labels.astype("int64"))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return AUGMENT(self.images[i]), self.labels[i]


class PngFolder(Dataset):
    def __init__(self, root):
        from torchvision.io import decode_png, read_file

        self.read_file, self.decode_png = read_file, decode_png
        classes = sorted(d for d in os.listdir(root) if not d.startswith("."))
        self.items = [(os.path.join(root, name, f), c)
                      for c, name in enumerate(classes) for f in sorted(os.listdir(os.path.join(root, name)))]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        return AUGMENT(self.decode_png(self.read_file(path))), label


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", choices=["augment", "decode"], required=True)
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--png-root")
    a = p.parse_args()
    data = InMemory() if a.workload == "augment" else PngFolder(a.png_root)
    loader = DataLoader(data, batch_size=128, num_workers=a.workers, persistent_workers=a.workers > 0)
    for i, _ in enumerate(loader):  # warm-up: start the workers
        if i == 20:
            break
    start = time.perf_counter()
    n = 0
    for images, _ in loader:
        n += int(images.shape[0])
    seconds = time.perf_counter() - start
    print(json.dumps({"samples": n, "seconds": seconds, "samples_per_s": n / seconds,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
