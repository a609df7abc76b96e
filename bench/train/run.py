"""./dev bench train: training speed on Fashion-MNIST (batch 128, Adam 1e-3, data in memory, 2 threads) of the
bench models — cnn (the Keras tutorial CNN, examples/fashion_mnist/train.json), resnet (a stem convolution and 3
residual blocks with batch norm and projection shortcuts) and mobilenet (depthwise-separable blocks with batch norm
and relu6), bench/train/models/*.json — by ramjet (float32, mixed_bfloat16), Keras (float32 and mixed_bfloat16,
with and without jit_compile) and PyTorch (eager and torch.compile; float32 and bf16 autocast), every variant a
row of its own, in one run. The peers build the same architectures (bench/train/{keras,torch}_models.py).

Each row: steady-state samples/s (ramjet: its second epoch; the peers: their first epoch's steps after --warmup),
the process's own peak resident memory (wait4), and the parameter count. --steps limits every framework's epoch to
the same number of batches. `-load` rows run beside one single-thread busy process the bench starts and kills.
Checks (issue 14), per model, as ratios within the run: ramjet ≥ 2 × the best peer row of its precision; ramjet's
fp32 peak RSS ≤ the leanest peer's; under load ramjet keeps ≥ 60 % of its speed and ≥ 1.5 × Keras's; for the CNN,
≥ 70 % (fp32) and ≥ 60 % (bf16) of the matmul peak measured in the same run, and tracing costs ≤ 3 %.

--device cuda (issue 16), on a machine with an NVIDIA GPU: only the GPU's rows, batch 256, for cnn and resnet (the
default there both): ramjet's cuda backend (ramjet-cuda-fp32, ramjet-cuda-fp16: train.backend "cuda", float32 or
mixed_float16, the data pipeline on every core) and PyTorch on the GPU (torch-cuda-fp32, torch-cuda-amp: float16
autocast with a GradScaler, torch-cuda-amp-compile: the same under torch.compile), and ramjet-cuda-fp16-launched
(ramjet-cuda-fp16 with cuda_graphs off: what replaying the step from CUDA graphs buys, printed as a ratio). The GPU's
name heads the result.
Checks: ramjet-cuda-fp16 ≥ 1.3 × the best torch-cuda row, and on the ResNet ≥ 2 × ramjet-cuda-fp32; a row that
failed (no GPU: "no CUDA device") is a failed row with its error, and the checks it feeds say they were not judged.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checks  # noqa: E402
import rows  # noqa: E402

log = rows.log


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ramjet", required=True)
    p.add_argument("--matmul-peak")
    p.add_argument("--json", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cuda: only the GPU rows (ramjet-cuda-*, torch-cuda-*), batch 256, every core for the host "
                        "side (--threads is the CPU rows')")
    p.add_argument("--model", help="cnn, resnet, mobilenet, or a comma list of them (default cnn; cnn,resnet "
                                   "under --device cuda)")
    p.add_argument("--steps", type=int, help="batches an epoch, every framework (default: the whole epoch, 469, "
                                             "for cnn; 200 for resnet and mobilenet; under --device cuda 234 for "
                                             "cnn, the whole batches of 256)")
    p.add_argument("--warmup", type=int, default=50, help="the peers' first steps left out of the timing")
    p.add_argument("--load-models", default="resnet",
                   help="models that get the -load rows (comma list, default resnet; 'none' for none)")
    p.add_argument("--rows", help="comma-separated row names to run (default: all)")
    p.add_argument("--work", help="keep manifests, reports and checkpoints here (default: a temporary folder)")
    a = p.parse_args()
    cuda = a.device == "cuda"
    a.models = (a.model or (",".join(rows.CUDA_MODELS) if cuda else "cnn")).split(",")
    a.load_models = [] if a.load_models == "none" or cuda else a.load_models.split(",")
    for m in a.models + a.load_models:
        if m not in rows.MANIFESTS:
            p.error(f"unknown model {m!r}; models: {', '.join(rows.MANIFESTS)}")
        if cuda and m not in rows.CUDA_MODELS:
            p.error(f"--device cuda runs the models {', '.join(rows.CUDA_MODELS)}, not {m!r}")
    if a.steps is not None and a.steps <= a.warmup + 1:
        p.error(f"--steps {a.steps} leaves no timed steps after --warmup {a.warmup}")
    if cuda and a.steps and a.steps * rows.CUDA_BATCH > 60000:
        p.error(f"--steps {a.steps}: the training set holds {60000 // rows.CUDA_BATCH} whole batches of "
                f"{rows.CUDA_BATCH}")
    return a


def plan(a):
    """(model, row name) pairs to run, in order, after the --rows filter."""
    pairs = [(m, name) for m in a.models for name in rows.row_names(m, a.load_models, a.device)]
    if a.rows:
        wanted = a.rows.split(",")
        known = {name for _, name in pairs}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            sys.exit(f"unknown row(s) {', '.join(unknown)}; rows: {', '.join(sorted(known))}")
        pairs = [(m, name) for m, name in pairs if name in wanted]
    return pairs


def run_rounds(a, work, pairs):
    """Rounds: every row once, then every row again. The shared machine's speed drifts over minutes; interleaving
    spreads the drift over all rows instead of favouring whichever ran first."""
    results = {pair: [] for pair in pairs}
    errors = {}
    for r in range(a.repeat):
        for model, name in pairs:
            log(f"{model} {name} run {r + 1}/{a.repeat}")
            quiet = {n: statistics.median(x["samples_per_s"] for x in res)
                     for (m, n), res in results.items() if m == model and res}
            try:
                results[(model, name)].append(rows.runner(a, work, model, name, quiet)())
            except (subprocess.CalledProcessError, OSError, ValueError, KeyError) as e:
                detail = (getattr(e, "stderr", None) or str(e)).strip()
                errors[(model, name)] = detail.splitlines()[-1] if detail else type(e).__name__
                log(f"{model} {name} failed: {detail[-3000:]}")
    return results, errors


def summarize(model, name, runs, error):
    """One row: the median run, every run's samples/s, and the largest peak RSS of its runs."""
    if not runs:
        return {"model": model, "name": name, "samples_per_s": None, "peak_rss_bytes": None,
                "error": error or "failed (see stderr)"}
    speeds = [round(x["samples_per_s"], 1) for x in runs]
    median = sorted(runs, key=lambda x: x["samples_per_s"])[len(runs) // 2]
    row = {"model": model, "name": name, "samples_per_s": round(statistics.median(speeds), 1), "runs": speeds,
           "peak_rss_bytes": max(x["peak_rss_bytes"] for x in runs)}
    for key in ("params", "steps_per_epoch", "test_accuracy", "input_wait_fraction", "variant", "load"):
        if median.get(key) is not None:
            row[key] = median[key]
    return row


def matmul_peak(a):
    """oneDNN's matmul peak on --threads threads (the CPU rows' yardstick; none under --device cuda)."""
    if a.device == "cuda" or not (a.matmul_peak and os.path.exists(a.matmul_peak)):
        return None
    out = subprocess.run([a.matmul_peak], check=True, capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS=str(a.threads))).stdout
    return json.loads(out.strip().splitlines()[-1])


def gpu_name(results):
    """The GPU's name: nvidia-smi's, else what a torch-cuda row read from torch.cuda.get_device_name(), else None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], check=True,
                             capture_output=True, text=True, timeout=30).stdout.strip()
        if out:
            return out.splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return next((x["gpu"] for runs in results.values() for x in runs if x.get("gpu")), None)


def bench(a, work):
    results, errors = run_rounds(a, work, plan(a))
    peak = matmul_peak(a)
    cuda = a.device == "cuda"
    all_rows, all_checks, models = [], [], {}
    for model in a.models:
        model_rows = [summarize(m, n, runs, errors.get((m, n))) for (m, n), runs in results.items() if m == model]
        g = checks.graph(a.ramjet, rows.MANIFESTS[model])
        flops, params = checks.training_flops_per_sample(g), checks.param_count(g)
        batch = rows.CUDA_BATCH if cuda else rows.BATCH
        models[model] = {"params": params, "training_flops_per_sample": flops,
                         "steps_per_epoch": rows.epoch_steps(a, model) or -(-60000 // batch)}
        for row in model_rows:
            if row["name"].startswith("ramjet"):
                row["params"] = params
            elif row.get("params") not in (None, params):
                # The peers must build the same network; a different count means the comparison is off.
                log(f"WARNING: {model} {row['name']} has {row['params']} parameters, ramjet's manifest {params}")
                row["params_mismatch"] = True
        if peak:
            checks.add_peak_fractions(model_rows, peak, flops)
        if cuda:
            checks.add_gflops(model_rows, flops)
            for row in model_rows:
                row["device"] = "cuda"
            models[model]["cuda_graph_gain"] = checks.cuda_graph_gain({r["name"]: r for r in model_rows})
        all_rows += model_rows
        all_checks += checks.model_checks(model, model_rows, a.device)
    result = {"benchmark": "train", "models": models, "rows": all_rows, "checks": all_checks, "matmul_peak": peak,
              "threads": a.threads, "batch": rows.BATCH, "warmup": a.warmup, "repeat": a.repeat}
    if cuda:
        result.update(device="cuda", gpu=gpu_name(results), threads=rows.threads(a), batch=rows.CUDA_BATCH)
    return result


def print_check(c, w):
    if c["met"] is None:
        print(f"{c['model']:10} {c['ratio']:{w}} {'—':>6}  target {c['target']}  not judged: {c['unjudged']}")
    else:
        print(f"{c['model']:10} {c['ratio']:{w}} {c['value']:6.3f}  target {c['target']}  "
              f"{'met' if c['met'] else 'MISSED'}")


def print_table(result):
    if result.get("device") == "cuda":
        print(f"device cuda, GPU {result.get('gpu') or 'unknown'}, batch {result['batch']}")
    w = max([20] + [len(r["name"]) for r in result["rows"]])
    print(f"{'model':10} {'row':{w}} {'samples/s':>10} {'peak MiB':>9} {'params':>8}   notes")
    for r in result["rows"]:
        if r["samples_per_s"] is None:
            print(f"{r['model']:10} {r['name']:{w}} {'failed':>10} {'':>9} {'':>8}   {r.get('error', '')}")
            continue
        notes = []
        if r.get("fraction_of_matmul_peak"):
            notes.append(f"{r['fraction_of_matmul_peak']:.0%} of matmul peak")
        if r.get("device") == "cuda" and r.get("gflops"):
            notes.append(f"{r['gflops']:.0f} GFLOP/s")
        if r.get("variant"):
            notes.append(f"variant {r['variant']}")
        if len(r.get("runs", [])) > 1:
            notes.append("runs " + " · ".join(f"{x:.0f}" for x in r["runs"]))
        print(f"{r['model']:10} {r['name']:{w}} {r['samples_per_s']:10.0f} {r['peak_rss_bytes'] / 2**20:9.0f} "
              f"{r.get('params', ''):>8}   {'; '.join(notes)}")
    for model, m in result["models"].items():
        if m.get("cuda_graph_gain"):
            print(f"{model:10} ramjet-cuda-fp16 / {rows.CUDA_LAUNCHED_ROW} (what CUDA graphs buy): "
                  f"{m['cuda_graph_gain']:.3f}")
    w = max([62] + [len(c["ratio"]) for c in result["checks"]])
    for c in result["checks"]:
        print_check(c, w)


def main():
    a = parse_args()
    rows.exit_on_sigterm()
    work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="ramjet-bench-train-")
    os.makedirs(work, exist_ok=True)
    try:
        result = bench(a, work)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    if a.json:
        print(json.dumps(result))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
