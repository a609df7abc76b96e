"""./dev bench deblur: the deblurring U-Net of examples/deblur (two 2×-downsampling stages, transposed-convolution
upsampling, skip concatenations, a residual output; MSE loss) trained on the same arrays by ramjet (float32,
mixed_bfloat16; its `npy` source), Keras (float32, mixed_bfloat16; with and without jit_compile) and PyTorch (eager
and torch.compile; float32 and bf16 autocast): bench/deblur/pairs.py writes Fashion-MNIST pairs (5×5 Gaussian blur
σ 1 and noise σ 0.05) once as .npy files. Same epochs, batch, Adam learning rate and 2 threads for every row.

Each row: samples/s over the last epoch (after its first step) and the test PSNR after the last epoch, each
process's peak resident memory (wait4). Checks: ramjet ≥ 1.5 × the best peer row of its precision; ramjet's PSNR
within 0.5 dB of Keras's (same precision).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pairs  # noqa: E402


def _seq_bench():
    """bench/seq/run.py, for its child-process helpers (peak RSS by wait4, best variant of a peer)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("seq_bench", os.path.join(os.path.dirname(HERE), "seq", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_seq = _seq_bench()
best_of, log, peer_row, run_measured = _seq.best_of, _seq.log, _seq.peer_row, _seq.run_measured

EXAMPLE = os.path.join(ROOT, "examples", "deblur", "pipeline.json")


def bench_manifest(folder, paths, a):
    """The example's model and training words, reading the bench's arrays through the npy source."""
    with open(EXAMPLE) as f:
        doc = json.load(f)

    def source(split):
        return {"type": "npy", "files": {"image": paths[(split, "noisy")], "clean": paths[(split, "clean")]}}

    doc["data"] = {"train": {"source": source("train"), "cache": "memory", "shuffle": a.train_take, "batch": a.batch},
                   "eval": {"source": source("test"), "batch": 250}}
    doc["train"]["epochs"] = a.epochs
    doc["train"]["optimizer"]["learning_rate"] = a.lr
    doc["train"].pop("checkpoint", None)
    doc.pop("export", None)  # training alone: an export's calibration and int8 scoring would add to time and RSS
    path = os.path.join(folder, "bench.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def ramjet_row(a, manifest, folder, precision):
    report = os.path.join(folder, f"report-{precision}.json")
    command = [a.ramjet, "run", manifest, "--quiet", "--report", report, "--set", f"/train/precision={precision}",
               "--set", f"/train/threads={a.threads}", "--set", "/data/train/budget={\"cpu\": %d}" % a.threads]
    _, rss = run_measured(command, env=dict(os.environ, OMP_NUM_THREADS=str(a.threads)))
    with open(report) as f:
        r = json.load(f)
    last = r["train"]["history"][-1]
    return {"samples_per_s": last["samples_per_s"], "psnr": last["val_psnr"], "peak_rss_bytes": rss,
            "variant": precision}


def speed_and_quality(a):
    folder = a.work or tempfile.mkdtemp(prefix="ramjet-bench-deblur-")
    os.makedirs(folder, exist_ok=True)
    paths = pairs.write(folder, a.train_take, a.test_take)
    data = os.path.join(folder, "data.json")
    with open(data, "w") as f:
        json.dump({f"{split}_{kind}": path for (split, kind), path in paths.items()}, f)
    manifest = bench_manifest(folder, paths, a)
    ir = os.path.join(folder, "graph.json")
    with open(ir, "w") as f:
        f.write(subprocess.run([a.ramjet, "graph", manifest, "--json"], check=True, capture_output=True,
                               text=True).stdout)
    common = ["--ir", ir, "--data", data, "--threads", str(a.threads), "--epochs", str(a.epochs),
              "--batch", str(a.batch), "--lr", str(a.lr)]
    keras_peer = [sys.executable, os.path.join(HERE, "keras_peer.py")] + common
    torch_peer = [a.torch_python, os.path.join(HERE, "torch_peer.py")] + common

    def variants(command, precision, flag, names):
        return [(name, lambda name=name: peer_row(command + ["--precision", precision] +
                                                  ([flag] if name == names[1] else []), a.threads)) for name in names]

    runners = {
        "ramjet-fp32": lambda: ramjet_row(a, manifest, folder, "float32"),
        "ramjet-bf16": lambda: ramjet_row(a, manifest, folder, "mixed_bfloat16"),
        "tf-fp32": lambda: best_of(variants(keras_peer, "float32", "--jit", ("no-jit", "jit")), "samples_per_s"),
        "tf-bf16": lambda: best_of(variants(keras_peer, "mixed_bfloat16", "--jit", ("no-jit", "jit")), "samples_per_s"),
        "torch-fp32": lambda: best_of(variants(torch_peer, "float32", "--compile", ("eager", "compile")), "samples_per_s"),
        "torch-bf16": lambda: best_of(variants(torch_peer, "bfloat16", "--compile", ("eager", "compile")), "samples_per_s"),
    }
    if a.rows:
        wanted = a.rows.split(",")
        unknown = [w for w in wanted if w not in runners]
        if unknown:
            sys.exit(f"unknown row(s) {', '.join(unknown)}; rows: {', '.join(runners)}")
        runners = {name: runners[name] for name in wanted}
    results = {name: [] for name in runners}
    for r in range(a.repeat):  # rounds, every row once a round: the shared machine's speed drifts over minutes
        for name, runner in runners.items():
            log(f"{name} run {r + 1}/{a.repeat}")
            try:
                results[name].append(runner())
            except (subprocess.CalledProcessError, RuntimeError) as e:
                log(f"{name} failed: {getattr(e, 'stderr', None) or e}")
    rows = []
    for name in runners:
        if not results[name]:
            rows.append({"name": name, "samples_per_s": None, "psnr": None, "error": "failed (see stderr)"})
            continue
        median = sorted(results[name], key=lambda x: x["samples_per_s"])[len(results[name]) // 2]
        row = {"name": name, "samples_per_s": round(statistics.median(x["samples_per_s"] for x in results[name]), 1),
               "runs": [round(x["samples_per_s"], 1) for x in results[name]], "psnr": round(median["psnr"], 3),
               "peak_rss_bytes": max(x["peak_rss_bytes"] for x in results[name]), "variant": median["variant"]}
        if "variants" in median:
            row["variants"] = median["variants"]
        rows.append(row)
    by = {r["name"]: r for r in rows}
    checks = []
    for precision in ("fp32", "bf16"):
        ours = by.get(f"ramjet-{precision}")
        peers = [p for p in (by.get(f"tf-{precision}"), by.get(f"torch-{precision}")) if p and p["samples_per_s"]]
        if ours and ours["samples_per_s"] and peers:
            best = max(peers, key=lambda p: p["samples_per_s"])
            value = ours["samples_per_s"] / best["samples_per_s"]
            checks.append({"check": f"ramjet-{precision} / best peer ({best['name']} {best['variant']})",
                           "target": 1.5, "value": round(value, 3), "met": value >= 1.5})
        keras = by.get(f"tf-{precision}")
        if ours and ours.get("psnr") is not None and keras and keras.get("psnr") is not None:
            gap = ours["psnr"] - keras["psnr"]
            checks.append({"check": f"ramjet-{precision} test PSNR − Keras's (dB)", "target": -0.5,
                           "value": round(gap, 3), "met": gap >= -0.5})
    test_noisy, test_clean = pairs.load(paths, "test")
    return {"benchmark": "deblur", "epochs": a.epochs, "batch": a.batch, "threads": a.threads,
            "train_pairs": a.train_take, "test_pairs": a.test_take,
            "input_psnr": round(pairs.psnr(test_noisy, test_clean), 3), "rows": rows, "checks": checks}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ramjet", required=True)
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--json", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--train-take", type=int, default=8192, help="training pairs (from Fashion-MNIST's train split)")
    p.add_argument("--test-take", type=int, default=2000, help="test pairs (from its test split)")
    p.add_argument("--rows", help="comma-separated row names to run (default: all)")
    p.add_argument("--work", help="keep the arrays, manifest and reports here (default: a temporary folder)")
    a = p.parse_args()
    result = speed_and_quality(a)
    if a.json:
        print(json.dumps(result))
        return
    print(f"{result['train_pairs']} training pairs, {result['epochs']} epochs, batch {result['batch']}, "
          f"{result['threads']} threads; the degraded test inputs' PSNR {result['input_psnr']:.2f} dB")
    _seq.print_table(result["rows"], result["checks"], "samples",
                     extra=lambda r: f"  PSNR {r['psnr']:6.2f} dB" if r.get("psnr") is not None else "")


if __name__ == "__main__":
    main()
