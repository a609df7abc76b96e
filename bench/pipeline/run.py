"""./dev bench pipeline: ramjet's input pipeline against tf.data and PyTorch's DataLoader, in one run, on one
machine, over one full epoch of Fashion-MNIST's training set at batch 128 with no model.

Rows per workload (augment: IDX in memory; decode: the same images as PNG files in class folders):
ramjet-serial (parallelism 1, no prefetch), ramjet-auto, tf-autotune, torch-w0, torch-w1, torch-w2.
Each row runs in its own process; the median of --repeat runs is reported.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fashion_mnist  # noqa: E402


def log(message):
    print(message, file=sys.stderr, flush=True)


def run_json(command, env=None):
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ramjet_row(ramjet, workload, png_root, serial, report_path, extra=()):
    command = [ramjet, "pipeline", os.path.join(HERE, f"{workload}.json"), "--quiet", "--report", report_path]
    if workload == "decode":
        command += ["--set", f"/data/train/source/root={png_root}"]
    if serial:
        command += ["--set", "/data/train/parallelism=1", "--set", "/data/train/prefetch=0"]
    for item in extra:
        command += ["--set", item]
    subprocess.run(command, check=True)
    with open(report_path) as f:
        report = json.load(f)
    return {"samples_per_s": report["elements_per_s"], "samples": report["elements"],
            "peak_rss_bytes": report["peak_rss_bytes"], "parallelism": report["pipeline"]["parallelism"],
            "prefetch": report["pipeline"]["prefetch"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ramjet", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workloads", default="augment,decode")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/ramjet"))
    p.add_argument("--torch-python", default=sys.executable,
                   help="python with torch and torchvision (Debian's python3-torch when no wheel installs)")
    a = p.parse_args()

    png_root = fashion_mnist.png_folder(os.path.join(a.cache, "fashion-mnist-png", "train"))
    report_path = os.path.join(a.cache, "bench-pipeline-report.json")
    rows = []
    for workload in a.workloads.split(","):
        runners = {
            "ramjet-serial": lambda: ramjet_row(a.ramjet, workload, png_root, True, report_path),
            "ramjet-auto": lambda: ramjet_row(a.ramjet, workload, png_root, False, report_path),
            "tf-autotune": lambda: run_json([sys.executable, os.path.join(HERE, "tf_peer.py"), "--workload", workload,
                                             "--png-root", png_root]),
        }
        for w in (0, 1, 2):
            runners[f"torch-w{w}"] = (lambda w=w: run_json(
                [a.torch_python, os.path.join(HERE, "torch_peer.py"), "--workload", workload, "--workers", str(w),
                 "--png-root", png_root]))
        for name, runner in runners.items():
            results = []
            for r in range(a.repeat):
                log(f"{workload}/{name} run {r + 1}/{a.repeat}")
                results.append(runner())
            median = statistics.median(x["samples_per_s"] for x in results)
            row = {"name": f"{workload}/{name}", "samples_per_s": round(median, 1),
                   "runs": [round(x["samples_per_s"], 1) for x in results]}
            for key in ("parallelism", "prefetch", "peak_rss_bytes"):
                if key in results[-1]:
                    row[key] = results[-1][key]
            rows.append(row)

    # Peak memory of the augment run with a 60,000-element shuffle buffer, against the dataset's size.
    memory = None
    if "augment" in a.workloads:
        m = ramjet_row(a.ramjet, "augment", png_root, False, report_path, ["/data/train/shuffle=60000"])
        dataset_bytes = 60000 * 28 * 28 + 60000
        memory = {"peak_rss_bytes": m["peak_rss_bytes"], "dataset_bytes": dataset_bytes,
                  "ratio": round(m["peak_rss_bytes"] / dataset_bytes, 3), "samples_per_s": round(m["samples_per_s"], 1)}

    by_name = {r["name"]: r["samples_per_s"] for r in rows}
    checks = []
    for workload in a.workloads.split(","):
        auto = by_name[f"{workload}/ramjet-auto"]
        best_torch = max(by_name[f"{workload}/torch-w{w}"] for w in (0, 1, 2))
        for label, ratio, target in (
                ("ramjet-auto / tf-autotune", auto / by_name[f"{workload}/tf-autotune"], 1.5),
                ("ramjet-auto / best torch", auto / best_torch, 5.0),
                ("ramjet-auto / ramjet-serial", auto / by_name[f"{workload}/ramjet-serial"], 1.6)):
            checks.append({"workload": workload, "ratio": label, "value": round(ratio, 2), "target": target,
                           "met": ratio >= target})
    if memory:
        checks.append({"workload": "augment", "ratio": "peak RSS / dataset bytes (shuffle 60000)",
                       "value": memory["ratio"], "target": 2.0, "met": memory["ratio"] <= 2.0})

    result = {"benchmark": "pipeline", "rows": rows, "checks": checks, "memory": memory,
              "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}}
    if a.json:
        print(json.dumps(result))
        return
    print(f"{'row':34} {'samples/s':>12}   runs")
    for r in rows:
        print(f"{r['name']:34} {r['samples_per_s']:12.0f}   {r['runs']}")
    for c in checks:
        print(f"{c['workload']:8} {c['ratio']:42} {c['value']:8.2f}  target {c['target']:>4}  "
              f"{'met' if c['met'] else 'MISSED'}")


if __name__ == "__main__":
    main()
