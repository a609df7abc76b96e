"""PyTorch training the deblurring U-Net of examples/deblur on bench/deblur/pairs.py's arrays: the same layers,
built from ramjet's graph IR (conv2d 'same' → Conv2d with padding, max_pool → MaxPool2d, conv2d_transpose with
kernel = strides → ConvTranspose2d, concat → torch.cat on channels, add), with Keras's initial distributions (Glorot
uniform kernels, zero biases) so that the runs start alike; channels-last memory, Adam, MSE; --compile uses
torch.compile; --precision bfloat16 runs the forward under CPU autocast (bf16). 2 threads.

Prints one JSON object: samples/s over the last epoch after its first step, and the test PSNR after the last epoch.
"""
import json
import os
import sys
import time

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import pairs  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


def glorot_(weight, fan_in, fan_out):
    limit = (6.0 / (fan_in + fan_out)) ** 0.5
    nn.init.uniform_(weight, -limit, limit)


class FromIR(nn.Module):
    """The IR's nodes in order, each reading its inputs by name (NCHW tensors)."""

    def __init__(self, ir):
        super().__init__()
        self.ir = ir
        self.mods = nn.ModuleDict()
        channels = {i["name"]: i["shape"][-1] for i in ir["inputs"]}
        for node in ir["nodes"]:
            op, at, name = node["op"], node.get("attrs", {}), node["name"]
            cin = channels[node["inputs"][0]]
            if op == "conv2d":
                k = at["kernel"]
                pad = at["padding"]  # [top, bottom, left, right]; 'same' with odd kernels is symmetric
                if pad[0] != pad[1] or pad[2] != pad[3]:
                    raise SystemExit(f"{name}: asymmetric padding {pad} is not mapped")
                m = nn.Conv2d(cin, at["filters"], tuple(k), tuple(at["strides"]), (pad[0], pad[2]),
                              bias=at.get("use_bias", True))
                glorot_(m.weight, cin * k[0] * k[1], at["filters"] * k[0] * k[1])
            elif op == "conv2d_transpose":
                k, s = at["kernel"], at["strides"]
                if list(k) != list(s):
                    raise SystemExit(f"{name}: only kernel == strides is mapped")
                m = nn.ConvTranspose2d(cin, at["filters"], tuple(k), tuple(s), bias=at.get("use_bias", True))
                # Keras's Conv2DTranspose kernel [kh, kw, filters, in]: fan_in = kh·kw·filters, fan_out = kh·kw·in.
                glorot_(m.weight, k[0] * k[1] * at["filters"], k[0] * k[1] * cin)
            elif op == "max_pool":
                m = nn.MaxPool2d(tuple(at["pool"]), tuple(at["strides"]))
            elif op in ("concat", "add"):
                m = None
            else:
                raise SystemExit(f"{name}: op {op} is not mapped")
            if m is not None:
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
                self.mods[name] = m
            channels[name] = node["shape"][-1]

    def forward(self, x):
        values = {self.ir["inputs"][0]["name"]: x}
        for node in self.ir["nodes"]:
            op, name, ins = node["op"], node["name"], [values[i] for i in node["inputs"]]
            if op == "concat":
                y = torch.cat(ins, dim=1)
            elif op == "add":
                y = ins[0] + ins[1]
            else:
                y = self.mods[name](ins[0])
            act = node.get("attrs", {}).get("activation")
            values[name] = torch.relu(y) if act == "relu" else y
        return values[self.ir["outputs"][0]]


def main():
    a = pairs.peer_arguments(["float32", "bfloat16"], "--compile", "torch.compile the model")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(a.ir) as f:
        ir = json.load(f)
    with open(a.data) as f:
        data = json.load(f)
    model = FromIR(ir).to(memory_format=torch.channels_last)
    step_model = torch.compile(model) if a.compile else model
    optimizer = torch.optim.Adam(model.parameters(), lr=a.lr, eps=1e-7)  # Keras's epsilon
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bfloat16")
    to_nchw = lambda x: torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)  # noqa
    noisy, clean = to_nchw(np.load(data["train_noisy"])), to_nchw(np.load(data["train_clean"]))
    n = len(noisy) - len(noisy) % a.batch
    start = time.perf_counter()
    for epoch in range(a.epochs):
        order = torch.randperm(len(noisy))[:n]
        times = []
        for b in range(0, n, a.batch):
            idx = order[b:b + a.batch]
            x, y = noisy[idx].contiguous(memory_format=torch.channels_last), clean[idx]
            with autocast:
                out = step_model(x)
            loss = torch.mean((out.float() - y) ** 2)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            times.append(time.perf_counter())
    samples_per_s = (len(times) - 1) * a.batch / (times[-1] - times[0])
    test_noisy, test_clean = np.load(data["test_noisy"]), np.load(data["test_clean"])
    with torch.no_grad(), autocast:
        restored = torch.cat([step_model(to_nchw(test_noisy[i:i + 250])).float() for i in range(0, len(test_noisy), 250)])
    restored = restored.permute(0, 2, 3, 1).numpy()
    print(json.dumps({"samples_per_s": samples_per_s, "psnr": pairs.psnr(restored, test_clean),
                      "precision": a.precision, "variant": "compile" if a.compile else "eager",
                      "wall_s": time.perf_counter() - start, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
