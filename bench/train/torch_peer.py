"""PyTorch training the same CNN on Fashion-MNIST in memory: Adam 1e-3, batch 128, 2 threads, fp32 or bf16
autocast. Prints steady-state samples/s (steps after the first 50 of the measured epoch) and per-epoch test
accuracy with elapsed time."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pipeline"))
import fashion_mnist  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    x, y = fashion_mnist.torch_tensors("train")
    xt, yt = fashion_mnist.torch_tensors("test")
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bfloat16")
    history, times = [], []
    start = time.perf_counter()
    for epoch in range(a.epochs):
        model.train()
        order = torch.randperm(len(y))
        for i in range(0, len(y), 128):
            index = order[i:i + 128]
            with autocast:
                loss = loss_fn(model(x[index]), y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if epoch == 0:
                times.append(time.perf_counter())
        model.eval()
        with torch.no_grad(), autocast:
            correct = sum((model(xt[i:i + 256]).argmax(1) == yt[i:i + 256]).sum().item() for i in range(0, len(yt), 256))
        history.append({"epoch": epoch + 1, "test_accuracy": correct / len(yt), "elapsed_s": time.perf_counter() - start})
    steady = (len(times[50:]) - 1) * 128 / (times[-1] - times[50])
    print(json.dumps({"samples_per_s": steady, "history": history, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
