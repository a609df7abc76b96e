"""./dev bench seq: the character transformer of examples/char_transformer (2 pre-norm blocks, d_model 128, 4 heads,
context 128, vocabulary 114) on the fortunes text, batch 32, Adam 1e-3, 2 threads, trained by ramjet (float32,
mixed_bfloat16), PyTorch (eager and torch.compile; float32 and bf16 autocast) and Keras (float32 and
mixed_bfloat16, with and without jit_compile), in one run. Each peer row keeps its fastest variant and lists all.
Steady-state tokens/s and each process's peak resident memory (its own, from wait4).

--quality instead trains ramjet and PyTorch the same number of steps on the same windows (float32), compares their
validation losses on the manifest's eval split, and samples the trained ramjet model with `ramjet generate`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import seqdata  # noqa: E402


def log(message):
    print(message, file=sys.stderr, flush=True)


def run_measured(command, env=None):
    """Runs `command`; returns (its stdout, its peak resident bytes): wait4 gives this child's own rusage, where
    RUSAGE_CHILDREN would be the largest of every child so far."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    # Read both pipes to the end while waiting: a child blocked on a full pipe never exits.

    chunks = {"out": b"", "err": b""}

    def drain(stream, key):
        chunks[key] = stream.read()

    readers = [threading.Thread(target=drain, args=(process.stdout, "out")),
               threading.Thread(target=drain, args=(process.stderr, "err"))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(process.pid, 0)
    for r in readers:
        r.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    out, err = chunks["out"].decode(), chunks["err"].decode()
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command, out, err)
    return out, usage.ru_maxrss * 1024


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def ramjet_row(ramjet, folder, precision, threads, steps):
    # Two epochs of `steps` batches: the second is the steady state the report's last history entry measures.
    manifest = seqdata.bench_manifest(folder, f"bench-{precision}.json", take=steps * seqdata.BATCH, epochs=2)
    report = os.path.join(folder, f"report-{precision}.json")
    command = [ramjet, "run", manifest, "--quiet", "--report", report, "--set", f"/train/precision={precision}",
               "--set", f"/train/threads={threads}", "--set", "/data/train/budget={\"cpu\": %d}" % threads]
    _, rss = run_measured(command, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    with open(report) as f:
        history = json.load(f)["train"]["history"]
    return {"tokens_per_s": history[-1]["samples_per_s"] * seqdata.source(seqdata.original())["context"],
            "peak_rss_bytes": rss, "variant": precision}


def peer_row(command, threads):
    out, rss = run_measured(command, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    row = last_json(out)
    row["peak_rss_bytes"] = rss
    return row


def best_of(variants, key="tokens_per_s"):
    """The fastest variant (by `key`) as the row, every variant listed under it."""
    runs = []
    for name, runner in variants:
        try:
            r = runner()
            r["variant"] = name
            runs.append(r)
        except subprocess.CalledProcessError as e:
            log(f"  {name} failed: {(e.stderr or '')[-2000:]}")
    if not runs:
        raise RuntimeError("every variant failed")
    best = dict(max(runs, key=lambda r: r[key]))
    best["variants"] = {r["variant"]: {key: round(r[key], 1), "peak_rss_bytes": r["peak_rss_bytes"]} for r in runs}
    return best


def print_table(rows, checks, unit, extra=lambda row: ""):
    """Rows as `name  value unit/s  [extra]  [peak RSS]  (variants)`, then each check against its target."""
    for r in rows:
        value = f"{r[unit + '_per_s']:10.0f}" if r[unit + "_per_s"] else "    failed"
        rss = f"  peak {r['peak_rss_bytes'] / 2**20:6.0f} MiB" if r.get("peak_rss_bytes") else ""
        variants = ("  (" + ", ".join(f"{k} {v[unit + '_per_s']:.0f}" for k, v in r["variants"].items()) + ")"
                    if r.get("variants") else "")
        print(f"{r['name']:12} {value} {unit}/s{extra(r)}{rss}{variants}")
    width = max((len(c["check"]) for c in checks), default=0)
    for c in checks:
        print(f"{c['check']:{width}} {c['value']:7.3f}  target {c['target']}  {'met' if c['met'] else 'MISSED'}")


def speed(a):
    folder = tempfile.mkdtemp(prefix="ramjet-bench-seq-")
    seqdata.ensure_tokenizer(a.ramjet, folder)
    verified = seqdata.verify(a.ramjet, folder, take=a.steps * seqdata.BATCH)
    log(f"peer windows identical to ramjet's: {verified['identical']}")
    ir = os.path.join(folder, "graph.json")
    with open(ir, "w") as f:
        f.write(subprocess.run([a.ramjet, "graph", seqdata.MANIFEST, "--json"], check=True, capture_output=True,
                               text=True).stdout)
    t, steps, take = str(a.threads), str(a.steps), str(a.steps * seqdata.BATCH)
    torch_peer = [a.torch_python, os.path.join(HERE, "torch_peer.py"), "--threads", t, "--steps", steps, "--take", take]
    keras_peer = [sys.executable, os.path.join(HERE, "keras_peer.py"), "--ir", ir, "--threads", t, "--steps", steps,
                  "--take", take]

    def torch_variants(precision):
        return [(f"{mode}", lambda mode=mode: peer_row(torch_peer + ["--precision", precision] +
                                                        (["--compile"] if mode == "compile" else []), a.threads))
                for mode in ("eager", "compile")]

    def keras_variants(precision):
        return [(mode, lambda mode=mode: peer_row(keras_peer + ["--precision", precision] +
                                                  (["--jit"] if mode == "jit" else []), a.threads))
                for mode in ("no-jit", "jit")]

    runners = {
        "ramjet-fp32": lambda: ramjet_row(a.ramjet, folder, "float32", a.threads, a.steps),
        "ramjet-bf16": lambda: ramjet_row(a.ramjet, folder, "mixed_bfloat16", a.threads, a.steps),
        "torch-fp32": lambda: best_of(torch_variants("float32")),
        "torch-bf16": lambda: best_of(torch_variants("bfloat16")),
        "tf-fp32": lambda: best_of(keras_variants("float32")),
        "tf-bf16": lambda: best_of(keras_variants("mixed_bfloat16")),
    }
    if a.rows:
        wanted = a.rows.split(",")
        unknown = [w for w in wanted if w not in runners]
        if unknown:
            sys.exit(f"unknown row(s) {', '.join(unknown)}; rows: {', '.join(runners)}")
        runners = {name: runners[name] for name in wanted}
    # Rounds, every row once a round: the shared machine's speed drifts over minutes.
    results = {name: [] for name in runners}
    for r in range(a.repeat):
        for name, runner in runners.items():
            log(f"{name} run {r + 1}/{a.repeat}")
            try:
                results[name].append(runner())
            except (subprocess.CalledProcessError, RuntimeError) as e:
                log(f"{name} failed: {getattr(e, 'stderr', None) or e}")
    rows = []
    for name in runners:
        if not results[name]:
            rows.append({"name": name, "tokens_per_s": None, "error": "failed (see stderr)"})
            continue
        runs = [round(x["tokens_per_s"], 1) for x in results[name]]
        median = sorted(results[name], key=lambda x: x["tokens_per_s"])[len(runs) // 2]
        row = {"name": name, "tokens_per_s": round(statistics.median(runs), 1), "runs": runs,
               "peak_rss_bytes": max(x["peak_rss_bytes"] for x in results[name]), "variant": median["variant"]}
        if "variants" in median:
            row["variants"] = median["variants"]
        rows.append(row)
    by = {r["name"]: r for r in rows}
    checks = []
    for precision in ("fp32", "bf16"):
        ours, peers = by.get(f"ramjet-{precision}"), [by.get(f"torch-{precision}"), by.get(f"tf-{precision}")]
        peers = [p for p in peers if p and p["tokens_per_s"]]
        if not ours or not ours["tokens_per_s"] or not peers:
            continue
        best = max(peers, key=lambda p: p["tokens_per_s"])
        value = ours["tokens_per_s"] / best["tokens_per_s"]
        checks.append({"check": f"ramjet-{precision} / best peer ({best['name']} {best['variant']})", "target": 1.5,
                       "value": round(value, 3), "met": value >= 1.5})
        # Memory against the best peer by memory: ramjet's peak no more than the leanest peer's.
        leanest = min(peers, key=lambda p: p["peak_rss_bytes"])
        ratio = ours["peak_rss_bytes"] / leanest["peak_rss_bytes"]
        checks.append({"check": f"ramjet-{precision} peak RSS / leanest peer's ({leanest['name']})", "target": 1.0,
                       "value": round(ratio, 3), "met": ratio <= 1.0})
    return {"benchmark": "seq", "steps": a.steps, "batch": seqdata.BATCH, "threads": a.threads,
            "windows_identical": verified["identical"], "rows": rows, "checks": checks}


def quality(a):
    """Same steps, same windows, same optimizer (Adam 1e-3, no schedule): validation losses within 5 %."""
    folder = tempfile.mkdtemp(prefix="ramjet-bench-seq-quality-")
    seqdata.ensure_tokenizer(a.ramjet, folder)
    take = a.quality_take
    checkpoints = os.path.join(folder, "checkpoints")
    manifest = seqdata.bench_manifest(folder, "quality.json", take=take, epochs=a.quality_epochs, evaluate=True,
                                      checkpoint_dir=checkpoints)
    report = os.path.join(folder, "report.json")
    steps = a.quality_epochs * (take // seqdata.BATCH)
    log(f"ramjet: {steps} steps")
    subprocess.run([a.ramjet, "run", manifest, "--quiet", "--report", report, "--set", f"/train/threads={a.threads}"],
                   check=True, env=dict(os.environ, OMP_NUM_THREADS=str(a.threads)))
    with open(report) as f:
        r = json.load(f)
    ours = r["train"]["history"][-1]["val_loss"]
    # PyTorch twice: with its own initial distributions, and with Keras's (which ramjet's layers follow), so that
    # the comparison of the training itself starts from the same distributions.
    peer = [a.torch_python, os.path.join(HERE, "torch_peer.py"), "--threads", str(a.threads), "--take", str(take),
            "--train-steps", str(steps), "--evaluate"]
    log(f"pytorch: {steps} steps")
    theirs = peer_row(peer, a.threads)
    log(f"pytorch with Keras's initialisation: {steps} steps")
    theirs_keras_init = peer_row(peer + ["--keras-init"], a.threads)
    # Without --checkpoint, generate reads the newest checkpoint of the manifest's train.checkpoint.dir.
    sample = subprocess.run([a.ramjet, "generate", manifest, "--prompt", a.prompt,
                             "--tokens", "300", "--temperature", "0.8", "--top-k", "20", "--seed", "7"],
                            check=True, capture_output=True, text=True).stdout
    ratio = ours / theirs_keras_init["val_loss"]
    return {"benchmark": "seq-quality", "steps": steps, "windows": take, "ramjet_val_loss": round(ours, 4),
            "torch_val_loss": round(theirs["val_loss"], 4),
            "torch_keras_init_val_loss": round(theirs_keras_init["val_loss"], 4),
            "ratio_to_torch": round(ours / theirs["val_loss"], 4), "ratio": round(ratio, 4),
            "check": {"check": "ramjet val_loss within 5 % of PyTorch's from the same initial distributions",
                      "met": abs(ratio - 1) <= 0.05},
            "prompt": a.prompt, "sample": sample}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ramjet", required=True)
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--json", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--steps", type=int, default=60, help="timed steps a row (after its warm-up)")
    p.add_argument("--rows", help="comma-separated row names to run (default: all)")
    p.add_argument("--quality", action="store_true", help="validation loss against PyTorch, and a generated sample")
    p.add_argument("--quality-take", type=int, default=18432, help="windows an epoch in --quality (576 steps)")
    p.add_argument("--quality-epochs", type=int, default=2)
    p.add_argument("--prompt", default="The ")
    a = p.parse_args()
    result = quality(a) if a.quality else speed(a)
    if a.json:
        print(json.dumps(result))
        return
    if a.quality:
        print(f"{result['steps']} steps: ramjet val_loss {result['ramjet_val_loss']}; PyTorch "
              f"{result['torch_val_loss']} (its own initialisation), {result['torch_keras_init_val_loss']} (Keras's); "
              f"ratio {result['ratio']} ({'met' if result['check']['met'] else 'MISSED'}: within 5 %)")
        print(f"ramjet generate --prompt {result['prompt']!r}:\n{result['sample']}")
        return
    print_table(result["rows"], result["checks"], "tokens")


if __name__ == "__main__":
    main()
