"""./dev bench train: the Keras tutorial CNN on Fashion-MNIST (batch 128, Adam 1e-3, data in memory, 2 threads)
trained by ramjet (float32, mixed_bfloat16), TensorFlow/Keras (float32 and mixed_bfloat16, with and without
jit_compile, keeping the faster) and PyTorch (float32, bf16 autocast), in one run. Steady-state samples/s; for
ramjet rows also the fraction of this machine's oneDNN matmul peak the training step reaches.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = os.path.join(ROOT, "examples", "fashion_mnist", "train.json")


def log(message):
    print(message, file=sys.stderr, flush=True)


def last_json(command, env=None):
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def training_flops_per_sample(ramjet):
    """Multiply-adds of the forward pass × 2 flops × 3 (forward, backward data, backward weights)."""
    graph = json.loads(subprocess.run([ramjet, "graph", MANIFEST, "--json"], check=True, capture_output=True,
                                      text=True).stdout)
    shapes = {i["name"]: i["shape"] for i in graph["inputs"]}
    macs = 0
    for node in graph["nodes"]:
        shapes[node["name"]] = node["shape"]
        attrs = node.get("attrs", {})
        if node["op"] == "conv2d":
            in_channels = shapes[node["inputs"][0]][-1]
            out = node["shape"]
            macs += out[0] * out[1] * out[2] * attrs["kernel"][0] * attrs["kernel"][1] * in_channels // attrs["groups"]
        elif node["op"] == "dense":
            macs += shapes[node["inputs"][0]][0] * attrs["units"]
    return 2 * 3 * macs


def ramjet_row(ramjet, precision, report, threads, trace=None):
    command = [ramjet, "run", MANIFEST, "--quiet", "--report", report, "--set", "/train/epochs=2",
               "--set", f"/train/precision={precision}", "--set", f"/train/threads={threads}",
               "--set", "/train/checkpoint/every_steps=0", "--set", "/data/train/budget={\"cpu\": %d}" % threads]
    if trace:
        command += ["--trace", trace]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    subprocess.run(command, check=True, env=env)
    with open(report) as f:
        r = json.load(f)
    history = r["train"]["history"]
    return {"samples_per_s": history[-1]["samples_per_s"], "test_accuracy": r.get("eval", {}).get("accuracy"),
            "input_wait_fraction": r["train"]["input_wait_fraction"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ramjet", required=True)
    p.add_argument("--matmul-peak")
    p.add_argument("--json", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--rows", help="comma-separated row names to run (default: all)")
    a = p.parse_args()
    report = os.path.expanduser("~/.cache/ramjet/bench-train-report.json")
    trace = os.path.expanduser("~/.cache/ramjet/bench-train-trace.json")
    os.makedirs(os.path.dirname(report), exist_ok=True)
    peers = os.path.join(HERE, "keras_peer.py"), os.path.join(HERE, "torch_peer.py")
    t = str(a.threads)
    runners = {
        "ramjet-fp32": lambda: ramjet_row(a.ramjet, "float32", report, a.threads),
        # The same run recording a Chrome trace: what `--trace` costs.
        "ramjet-fp32-trace": lambda: ramjet_row(a.ramjet, "float32", report, a.threads, trace=trace),
        "ramjet-bf16": lambda: ramjet_row(a.ramjet, "mixed_bfloat16", report, a.threads),
        "tf-fp32": lambda: max((last_json([sys.executable, peers[0], "--precision", "float32", "--threads", t] + jit)
                                for jit in ([], ["--jit"])), key=lambda r: r["samples_per_s"]),
        "tf-bf16": lambda: max((last_json([sys.executable, peers[0], "--precision", "mixed_bfloat16", "--threads", t] + jit)
                                for jit in ([], ["--jit"])), key=lambda r: r["samples_per_s"]),
        "torch-fp32": lambda: last_json([a.torch_python, peers[1], "--precision", "float32", "--threads", t]),
        "torch-bf16": lambda: last_json([a.torch_python, peers[1], "--precision", "bfloat16", "--threads", t]),
    }
    if a.rows:
        wanted = a.rows.split(",")
        unknown = [w for w in wanted if w not in runners]
        if unknown:
            sys.exit(f"unknown row(s) {', '.join(unknown)}; rows: {', '.join(runners)}")
        runners = {name: runners[name] for name in wanted}
    rows = []
    # Rounds: every row once, then every row again. The shared machine's speed drifts over minutes; interleaving
    # spreads the drift over all rows instead of favouring whichever ran first.
    results = {name: [] for name in runners}
    for r in range(a.repeat):
        for name, runner in runners.items():
            log(f"{name} run {r + 1}/{a.repeat}")
            try:
                results[name].append(runner())
            except subprocess.CalledProcessError as e:
                log(f"{name} failed: {e.stderr or e}")
    for name in runners:
        if not results[name]:
            rows.append({"name": name, "samples_per_s": None, "error": "failed (see stderr)"})
            continue
        runs = [round(x["samples_per_s"], 1) for x in results[name]]
        rows.append({"name": name, "samples_per_s": round(statistics.median(runs), 1), "runs": runs})
    peak = None
    if a.matmul_peak and os.path.exists(a.matmul_peak):
        peak = last_json([a.matmul_peak], env=dict(os.environ, OMP_NUM_THREADS=t))
        flops = training_flops_per_sample(a.ramjet)
        for row in rows:
            if row["name"].startswith("ramjet") and row["samples_per_s"]:
                key = "bfloat16_gflops" if row["name"].endswith("bf16") else "float32_gflops"
                row["gflops"] = round(row["samples_per_s"] * flops * 1e-9, 1)
                row["fraction_of_matmul_peak"] = round(row["gflops"] / peak[key], 3) if peak[key] else None
    by = {r["name"]: r["samples_per_s"] or 0 for r in rows}
    ratios = [("ramjet-fp32 / best of tf-fp32, torch-fp32", 1.5, "ramjet-fp32", ["tf-fp32", "torch-fp32"]),
              ("ramjet-bf16 / best of tf-bf16, torch-bf16", 1.5, "ramjet-bf16", ["tf-bf16", "torch-bf16"]),
              ("ramjet-fp32-trace / ramjet-fp32 (tracing costs at most 3 %)", 0.97, "ramjet-fp32-trace",
               ["ramjet-fp32"])]
    checks = [{"ratio": text, "target": target, "value": round(by[top] / max(max(by[b] for b in bottom), 1e-9), 3)}
              for text, target, top, bottom in ratios if top in by and all(b in by for b in bottom)]
    for c in checks:
        c["met"] = c["value"] >= c["target"]
    result = {"benchmark": "train", "rows": rows, "checks": checks, "matmul_peak": peak}
    if a.json:
        print(json.dumps(result))
        return
    for r in rows:
        extra = f"  {r['fraction_of_matmul_peak']:.0%} of matmul peak" if r.get("fraction_of_matmul_peak") else ""
        value = f"{r['samples_per_s']:12.0f}" if r["samples_per_s"] else "      failed"
        runs = "  runs " + " · ".join(f"{x:.0f}" for x in r["runs"]) if r.get("runs") else ""
        print(f"{r['name']:17} {value} samples/s{extra}{runs}")
    for c in checks:
        print(f"{c['ratio']:60} {c['value']:6.3f}  target {c['target']}  {'met' if c['met'] else 'MISSED'}")


if __name__ == "__main__":
    main()
