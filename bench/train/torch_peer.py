"""PyTorch training a bench model (bench/train/torch_models.py: cnn, resnet, mobilenet) on Fashion-MNIST in
memory: Adam 1e-3, batch 128 (--batch), 2 threads, channels-last tensors (PyTorch's faster CPU convolution layout,
and the layout of cuDNN's Tensor Core convolutions), float32 or bf16 autocast; --compile runs the model through
torch.compile (inductor). Prints one JSON line: steady-state samples/s over the first epoch's steps after --warmup
(torch.compile's compilation falls in the warm-up), the model's parameter count, and per-epoch test accuracy with
elapsed time. --steps limits every epoch to its first N batches (the same N every framework gets).

--device cuda (./dev bench train --device cuda): the data and the model live on the GPU; float32 in true float32
arithmetic (TF32 off, as ramjet's cuda backend computes it), or --precision float16: float16 autocast with a
GradScaler (PyTorch's AMP recipe); cuDNN's autotuner on (benchmark mode), PyTorch at its fastest. The clock is read
after torch.cuda.synchronize() at the two steps the timing spans (the warm-up's end and the last step), not every
step, so the queue of kernels PyTorch keeps ahead of the device is not drained in between. No GPU: a clear error on
stderr and exit status 1.
"""
import argparse
import json
import os
import sys
import time

# Inductor compiles in a pool of processes by default; on the CPU bench's 2 cores one compile thread is fairer to
# whatever shares the machine, and it changes nothing after the compile. A GPU run keeps the pool (its compile falls
# in the warm-up either way, and the machine's cores are the GPU run's). Set before torch is imported.
if not any("cuda" in arg for arg in sys.argv[1:]):
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pipeline"))
sys.path.insert(0, HERE)
import fashion_mnist  # noqa: E402
import torch  # noqa: E402
import torch_models  # noqa: E402
from torch import nn  # noqa: E402

AUTOCAST_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def train_epoch(step_model, optimizer, scaler, x, y, a, autocast, times):
    """One epoch of at most a.steps batches of a.batch (all when None); appends each step's end time to `times`.
    On the GPU the end of step a.warmup and of the last step wait for the device first (the two times the steady
    rate is computed from); the times between are when the step was queued."""
    loss_fn = nn.CrossEntropyLoss()
    step_model.train()
    order = torch.randperm(len(y), device=x.device)
    starts = range(0, len(y), a.batch)[:a.steps]
    for k, i in enumerate(starts):
        index = order[i:i + a.batch]
        with autocast:
            loss = loss_fn(step_model(torch_models.channels_last(x[index])).float(), y[index])
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if x.is_cuda and k in (a.warmup, len(starts) - 1):
            torch.cuda.synchronize()
        times.append(time.perf_counter())


def test_accuracy(step_model, xt, yt, autocast):
    step_model.eval()
    with torch.no_grad(), autocast:
        correct = sum((step_model(torch_models.channels_last(xt[i:i + 256])).argmax(1) == yt[i:i + 256]).sum().item()
                      for i in range(0, len(yt), 256))
    return correct / len(yt)


def grad_scaler(device, enabled):
    """torch.amp.GradScaler("cuda") where this PyTorch has it (2.3 on), torch.cuda.amp.GradScaler before; disabled,
    it passes the loss and the step through unchanged (float32, bfloat16)."""
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device, enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def use_device(device):
    """The GPU's settings for the run, or exit 1 naming why there is no GPU."""
    if device != "cuda":
        return None
    if not torch.cuda.is_available():
        sys.exit(f"torch_peer: no CUDA device: torch.cuda.is_available() is False (torch {torch.__version__}, "
                 f"built for CUDA {torch.version.cuda})")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch.cuda.get_device_name()


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=torch_models.MODELS, default="cnn")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--precision", choices=["float32", "bfloat16", "float16"], default="float32",
                   help="float32, or autocast to bfloat16 (CPU) or float16 with a GradScaler (cuda)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (inductor)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, help="batches an epoch (default: the whole training set, 469 at batch 128)")
    p.add_argument("--warmup", type=int, default=50, help="first-epoch steps left out of the timing")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    if a.precision == "float16" and a.device != "cuda":
        p.error("--precision float16 is the GPU's (--device cuda); the CPU runs bfloat16")
    return a


def main():
    a = parse_args()
    gpu = use_device(a.device)
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    x, y = (t.to(a.device) for t in fashion_mnist.torch_tensors("train"))
    xt, yt = (t.to(a.device) for t in fashion_mnist.torch_tensors("test"))
    model = torch_models.build(a.model).to(a.device, memory_format=torch.channels_last)
    step_model = torch.compile(model) if a.compile else model
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    autocast = torch.autocast(a.device, dtype=AUTOCAST_DTYPES.get(a.precision, torch.bfloat16),
                              enabled=a.precision != "float32")
    scaler = grad_scaler(a.device, a.precision == "float16")
    history, first_epoch = [], None
    start = time.perf_counter()
    for epoch in range(a.epochs):
        times = []
        train_epoch(step_model, optimizer, scaler, x, y, a, autocast, times)
        first_epoch = first_epoch or times
        history.append({"epoch": epoch + 1, "test_accuracy": test_accuracy(step_model, xt, yt, autocast),
                        "elapsed_s": time.perf_counter() - start})
    times = first_epoch[a.warmup:]
    if len(times) < 2:
        sys.exit(f"torch_peer: {len(first_epoch)} steps leave fewer than 2 after the {a.warmup}-step warm-up")
    steady = (len(times) - 1) * a.batch / (times[-1] - times[0])
    print(json.dumps({"samples_per_s": steady, "model": a.model, "params": torch_models.count_params(model),
                      "steps": len(first_epoch), "variant": "compile" if a.compile else "eager",
                      "device": a.device, "gpu": gpu, "batch": a.batch, "precision": a.precision,
                      "history": history, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
