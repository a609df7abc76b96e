"""./dev bench dist: data-parallel training on 2 threads in total, the same model and global batch (128, Adam 1e-3,
Fashion-MNIST in memory), in one run: ramjet on 1 rank × 2 threads and on 2 ranks × 1 thread (gloo), PyTorch
DistributedDataParallel (gloo, 2 processes × 1 thread) and TensorFlow MultiWorkerMirroredStrategy (2 workers × 1
thread), on the tutorial CNN and on an 11.6 M-parameter MLP where communication matters. Steady-state samples/s of
the whole job; for ramjet's multi-rank rows also the fraction of the all-reduce time that backward hid. The mpi row
runs the same manifest under `mpirun -np 2 --bind-to none` (Open MPI), which makes its strategy "mpi".
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import models  # noqa: E402

BASE = os.path.join(ROOT, "examples", "fashion_mnist", "train.json")
STEPS = {"cnn": 200, "large": 80}  # steps per measurement: about 10 to 30 s a row on this machine


def log(message):
    print(message, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manifest(model, folder):
    with open(BASE) as f:
        doc = json.load(f)
    doc["model"]["layers"] = models.LAYERS[model]
    doc["train"]["precision"] = "float32"
    doc["train"]["optimizer"] = {"type": "adam", "learning_rate": 0.001}
    doc["train"].pop("checkpoint", None)
    doc["data"].pop("eval", None)
    doc.pop("export", None)
    # Two epochs of STEPS steps each: the second is the steady state (the first pays for opening and caching).
    doc["data"]["train"]["take"] = STEPS[model] * 128
    doc["train"]["epochs"] = 2
    path = os.path.join(folder, f"{model}.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def ramjet_row(ramjet, path, report, ranks, mpirun=None):
    command = [ramjet, "run", path, "--quiet", "--report", report]
    if ranks == 1:
        command += ["--set", "/train/threads=2", "--set", '/data/train/budget={"cpu": 2}']
        env = dict(os.environ, OMP_NUM_THREADS="2")
    elif mpirun:
        command = [mpirun, "--allow-run-as-root", "--bind-to", "none", "-np", str(ranks)] + command + [
            "--set", "/train/threads=1", "--set", '/data/train/budget={"cpu": 1}']
        env = dict(os.environ, OMP_NUM_THREADS="1")
    else:
        command += ["--nproc", str(ranks), "--set", "/train/threads=1", "--set", '/data/train/budget={"cpu": 1}']
        env = dict(os.environ)
    subprocess.run(command, check=True, env=env, capture_output=True, text=True)
    with open(report) as f:
        r = json.load(f)
    row = {"samples_per_s": r["train"]["history"][-1]["samples_per_s"]}
    strategy = r["train"]["strategy"]
    if isinstance(strategy, dict) and "hidden_fraction" in strategy:
        row["overlap"] = strategy["hidden_fraction"]
        row["all_reduce_s_per_step"] = strategy["all_reduce_s_per_step"]
        row["unhidden_all_reduce_s_per_step"] = strategy["unhidden_all_reduce_s_per_step"]
        row["buckets"] = strategy["buckets"]
    return row


def two_processes(command_for_rank, env_for_rank):
    """Starts ranks 0 and 1, waits for both, returns rank 0's last JSON line."""
    procs = [subprocess.Popen(command_for_rank(k), env=env_for_rank(k), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for k in (0, 1)]
    outputs = [p.communicate(timeout=900) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise subprocess.CalledProcessError(p.returncode, p.args, out, err)
    return json.loads(outputs[0][0].strip().splitlines()[-1])


def torch_row(python, model):
    port = str(free_port())
    script = os.path.join(HERE, "torch_ddp_peer.py")
    return two_processes(
        lambda k: [python, script, "--model", model, "--steps", str(STEPS[model])],
        lambda k: dict(os.environ, RANK=str(k), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                       OMP_NUM_THREADS="1"))


def tf_row(model):
    ports = [free_port(), free_port()]
    workers = [f"127.0.0.1:{p}" for p in ports]
    script = os.path.join(HERE, "tf_mwms_peer.py")
    return two_processes(
        lambda k: [sys.executable, script, "--model", model, "--steps", str(STEPS[model])],
        lambda k: dict(os.environ, OMP_NUM_THREADS="1",
                       TF_CONFIG=json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": k}})))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ramjet", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--models", default="cnn,large")
    p.add_argument("--rows", help="comma-separated row names to run (default: all)")
    a = p.parse_args()
    folder = tempfile.mkdtemp(prefix="ramjet-bench-dist-")
    report = os.path.join(folder, "report.json")
    names = ["ramjet-1x2", "ramjet-gloo-2x1", "ramjet-mpi-2x1", "torch-ddp-2x1", "tf-mwms-2x1"]
    if a.rows:
        wanted = a.rows.split(",")
        unknown = [w for w in wanted if w not in names]
        if unknown:
            sys.exit(f"unknown row(s) {', '.join(unknown)}; rows: {', '.join(names)}")
        names = wanted
    rows, by = [], {}
    mpirun = shutil.which("mpirun")
    for model in a.models.split(","):
        path = manifest(model, folder)
        runners = {
            "ramjet-1x2": lambda: ramjet_row(a.ramjet, path, report, 1),
            "ramjet-gloo-2x1": lambda: ramjet_row(a.ramjet, path, report, 2),
            "ramjet-mpi-2x1": (lambda: ramjet_row(a.ramjet, path, report, 2, mpirun)) if mpirun else None,
            "torch-ddp-2x1": lambda: torch_row(a.torch_python, model),
            "tf-mwms-2x1": lambda: tf_row(model),
        }
        # Rounds: every row once, then again; the shared machine drifts over minutes, interleaving spreads it.
        results = {name: [] for name in names}
        errors = {}
        for r in range(a.repeat):
            for name in names:
                if runners[name] is None:
                    errors[name] = "missing: mpirun not found (Debian: openmpi-bin)"
                    continue
                log(f"{model} {name} run {r + 1}/{a.repeat}")
                try:
                    results[name].append(runners[name]())
                except subprocess.CalledProcessError as e:
                    errors[name] = f"failed: {(e.stderr or '').strip().splitlines()[-1:] or e}"
                    log(f"{name} failed: {e.stderr or e}")
        for name in names:
            row = {"name": name, "model": model}
            if not results[name]:
                row.update(samples_per_s=None, error=errors.get(name, "failed"))
            else:
                runs = [round(x["samples_per_s"], 1) for x in results[name]]
                row.update(samples_per_s=round(statistics.median(runs), 1), runs=runs)
                if "overlap" in results[name][-1]:
                    row["overlap"] = round(statistics.median(x["overlap"] for x in results[name]), 3)
                    for key in ("all_reduce_s_per_step", "unhidden_all_reduce_s_per_step", "buckets"):
                        row[key] = results[name][-1][key]
            rows.append(row)
            by[(model, name)] = row["samples_per_s"] or 0
    checks = []
    for model in a.models.split(","):
        for ours in ("ramjet-gloo-2x1", "ramjet-mpi-2x1"):
            for peer in ("torch-ddp-2x1", "tf-mwms-2x1"):
                if by.get((model, ours)) and (model, peer) in by:
                    value = by[(model, ours)] / max(by[(model, peer)], 1e-9)
                    checks.append({"ratio": f"{model}: {ours} / {peer}", "target": 1.5, "value": round(value, 3),
                                   "met": value >= 1.5})
            overlap = next((r.get("overlap") for r in rows if r["model"] == model and r["name"] == ours), None)
            if model == "large" and overlap is not None:
                checks.append({"ratio": f"large: {ours}: all-reduce time hidden behind backward", "target": 0.5,
                               "value": overlap, "met": overlap >= 0.5})
    result = {"benchmark": "dist", "rows": rows, "checks": checks}
    if a.json:
        print(json.dumps(result))
        return
    for r in rows:
        value = f"{r['samples_per_s']:10.0f} samples/s" if r["samples_per_s"] else f"  {r['error']}"
        extra = f"  {r['overlap']:.0%} of all-reduce hidden" if "overlap" in r else ""
        print(f"{r['model']:6} {r['name']:16} {value}{extra}")
    for c in checks:
        print(f"{c['ratio']:50} {c['value']:6.3f}  target {c['target']}  {'met' if c['met'] else 'MISSED'}")


if __name__ == "__main__":
    main()
