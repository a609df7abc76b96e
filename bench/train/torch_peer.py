"""PyTorch training a bench model (bench/train/torch_models.py: cnn, resnet, mobilenet) on Fashion-MNIST in
memory: Adam 1e-3, batch 128, 2 threads, channels-last tensors (PyTorch's faster CPU convolution layout), float32
or bf16 autocast; --compile runs the model through torch.compile (inductor). Prints one JSON line: steady-state
samples/s over the first epoch's steps after --warmup (torch.compile's compilation falls in the warm-up), the
model's parameter count, and per-epoch test accuracy with elapsed time. --steps limits every epoch to its first N
batches (the same N every framework gets)."""
import argparse
import json
import os
import sys
import time

# Inductor compiles in a pool of processes by default; on 2 cores one compile thread is fairer to whatever shares
# the machine, and it changes nothing after the compile.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pipeline"))
sys.path.insert(0, HERE)
import fashion_mnist  # noqa: E402
import torch  # noqa: E402
import torch_models  # noqa: E402
from torch import nn  # noqa: E402

BATCH = 128


def train_epoch(step_model, optimizer, x, y, steps, autocast, times):
    """One epoch of at most `steps` batches (all when None); appends each step's end time to `times`."""
    loss_fn = nn.CrossEntropyLoss()
    step_model.train()
    order = torch.randperm(len(y))
    for i in range(0, len(y), BATCH)[:steps]:
        index = order[i:i + BATCH]
        with autocast:
            loss = loss_fn(step_model(torch_models.channels_last(x[index])).float(), y[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter())


def test_accuracy(step_model, xt, yt, autocast):
    step_model.eval()
    with torch.no_grad(), autocast:
        correct = sum((step_model(torch_models.channels_last(xt[i:i + 256])).argmax(1) == yt[i:i + 256]).sum().item()
                      for i in range(0, len(yt), 256))
    return correct / len(yt)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=torch_models.MODELS, default="cnn")
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (inductor)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, help="batches an epoch (default: the whole training set, 469)")
    p.add_argument("--warmup", type=int, default=50, help="first-epoch steps left out of the timing")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    x, y = fashion_mnist.torch_tensors("train")
    xt, yt = fashion_mnist.torch_tensors("test")
    model = torch_models.build(a.model).to(memory_format=torch.channels_last)
    step_model = torch.compile(model) if a.compile else model
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bfloat16")
    history, first_epoch = [], None
    start = time.perf_counter()
    for epoch in range(a.epochs):
        times = []
        train_epoch(step_model, optimizer, x, y, a.steps, autocast, times)
        first_epoch = first_epoch or times
        history.append({"epoch": epoch + 1, "test_accuracy": test_accuracy(step_model, xt, yt, autocast),
                        "elapsed_s": time.perf_counter() - start})
    times = first_epoch[a.warmup:]
    if len(times) < 2:
        sys.exit(f"torch_peer: {len(first_epoch)} steps leave fewer than 2 after the {a.warmup}-step warm-up")
    steady = (len(times) - 1) * BATCH / (times[-1] - times[0])
    print(json.dumps({"samples_per_s": steady, "model": a.model, "params": torch_models.count_params(model),
                      "steps": len(first_epoch), "variant": "compile" if a.compile else "eager",
                      "history": history, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
