"""PyTorch's side of ./dev bench infer: the same model (bench/train/torch_models.py: the tutorial CNN or the
MobileNet) trained briefly (Adam 1e-3, batch 128; --steps batches an epoch), then static
post-training int8 quantization in FX graph mode (prepare_fx, calibration on training batches, convert_fx) for
every quantized engine this build has among x86, fbgemm and onednn. Each is timed over the 10,000 test images at
batch 256 under torch.inference_mode() with 2 threads (one warm-up pass, then the median of --repeat passes); the
fastest is reported. Prints one JSON line."""
import argparse
import copy
import json
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pipeline"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "train"))
import fashion_mnist  # noqa: E402
import torch  # noqa: E402
import torch_models  # noqa: E402
from torch import nn  # noqa: E402

ENGINES = ("x86", "fbgemm", "onednn")


def train(model, x, y, epochs, steps=None):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(y))
        for i in range(0, len(y), 128)[:steps]:
            index = order[i:i + 128]
            loss = loss_fn(model(x[index]), y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    model.eval()


def quantize(model, engine, calibration):
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.backends.quantized.engine = engine
    prepared = prepare_fx(copy.deepcopy(model), get_default_qconfig_mapping(engine), example_inputs=(calibration[0],))
    with torch.inference_mode():
        for batch in calibration:
            prepared(batch)
    return convert_fx(prepared)


def classify(model, batches, repeat):
    """Top-1 classes of every batch under inference_mode, one warm-up pass then `repeat` timed ones."""
    with torch.inference_mode():
        return fashion_mnist.timed_passes(lambda: torch.cat([model(b).argmax(1) for b in batches]), repeat)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=("cnn", "mobilenet"), default="cnn")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, help="batches of 128 an epoch (default: the whole training set)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--calibration-batches", type=int, default=10, help="of 128 training images, as ramjet's")
    a = p.parse_args()
    warnings.filterwarnings("ignore")  # torch.ao.quantization's deprecation notices would bury the result
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    x, y = fashion_mnist.torch_tensors("train")
    xt, yt = fashion_mnist.torch_tensors("test")
    model = torch_models.build(a.model)
    start = time.perf_counter()
    train(model, x, y, a.epochs, a.steps)
    train_s = time.perf_counter() - start

    calibration = [x[i * 128:(i + 1) * 128] for i in range(a.calibration_batches)]
    batches = [xt[i:i + a.batch] for i in range(0, len(xt), a.batch)]
    with torch.inference_mode():
        fp32_accuracy = (torch.cat([model(b).argmax(1) for b in batches]) == yt).float().mean().item()
    results, failures = {}, {}
    for engine in ENGINES:
        if engine not in torch.backends.quantized.supported_engines:
            failures[engine] = "not in torch.backends.quantized.supported_engines"
            continue
        try:
            quantized = quantize(model, engine, calibration)
            classes, seconds = classify(quantized, batches, a.repeat)
        except Exception as e:  # one engine failing must not hide the others
            failures[engine] = f"{type(e).__name__}: {e}"
            continue
        results[engine] = {"samples_per_s": len(xt) / statistics.median(seconds),
                           "runs": [round(len(xt) / s, 1) for s in seconds],
                           "accuracy": (classes == yt).float().mean().item()}
        print(f"torch-int8 qengine {engine}: {results[engine]['samples_per_s']:.0f} samples/s", file=sys.stderr)
    if not results:
        sys.exit(f"torch_peer: no quantized engine ran: {failures}")
    best = max(results, key=lambda e: results[e]["samples_per_s"])
    print(f"torch-int8 uses qengine {best}", file=sys.stderr)
    print(json.dumps({**results[best], "qengine": best,
                      "qengines": {e: round(r["samples_per_s"], 1) for e, r in results.items()},
                      "qengine_failures": failures, "fp32_accuracy": fp32_accuracy, "train_s": round(train_s, 1),
                      "model": a.model, "params": torch_models.count_params(model),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
