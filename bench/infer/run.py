"""./dev bench infer: int8 and float32 inference of the Keras tutorial CNN over the 10,000 Fashion-MNIST test
images at batch 256 with 2 threads, ramjet against TensorFlow, LiteRT and PyTorch, in one run.

Rows: ramjet-fp32 and ramjet-int8 (`ramjet eval` on the model `ramjet run` trained from bench/infer/model.json),
tf-fp32 (Keras, the faster of model.predict and XLA), litert-int8 (TensorFlow's own int8 .tflite on LiteRT),
litert-ramjet-int8 (ramjet's exported .tflite on LiteRT) and torch-int8 (FX static quantization, fastest qengine).
Each row reports steady-state samples/s (after a warm-up pass; the median of --repeat) and top-1 accuracy. The
peers train their own copies briefly; TensorFlow and PyTorch run in separate processes. A row whose engine fails
carries an "error" and the bench goes on.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "model.json")
ROWS = ("ramjet-fp32", "ramjet-int8", "tf-fp32", "litert-int8", "litert-ramjet-int8", "torch-int8")


class EngineFailed(Exception):
    """One row's engine failed; the message is what the row's "error" says."""


def log(message):
    print(message, file=sys.stderr, flush=True)


def last_json(command, timeout, env=None):
    """The JSON object on the last line of a command's stdout; EngineFailed with its stderr's tail otherwise."""
    name = os.path.basename(command[1] if command[0].endswith(("python", "python3")) else command[0])
    try:
        out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise EngineFailed(f"{name} ran past {timeout} s") from e
    except OSError as e:
        raise EngineFailed(f"{name}: {e}") from e
    if out.returncode != 0:
        tail = [line for line in out.stderr.strip().splitlines() if line.strip()][-3:]
        raise EngineFailed(f"{name} exited {out.returncode}: {' | '.join(tail) or '(no message)'}")
    lines = out.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as e:
        raise EngineFailed(f"{name} printed no JSON result (last line: {lines[-1] if lines else ''!r})") from e


class Ramjet:
    """`ramjet run` trains bench/infer/model.json and exports its int8 .tflite; `ramjet eval` times inference.
    Both get the same overrides, so eval finds the checkpoints the run wrote under the work folder."""

    def __init__(self, binary, work, threads, batch, timeout):
        self.binary, self.threads, self.batch, self.timeout = binary, threads, batch, timeout
        self.report_path = os.path.join(work, "ramjet-report.json")
        self.export_path = os.path.join(work, "ramjet_int8.tflite")
        self.overrides = ["--set", f"/train/checkpoint/dir={os.path.join(work, 'checkpoints')}",
                          "--set", f"/export/path={self.export_path}",
                          "--set", f"/train/threads={threads}",
                          "--set", '/data/train/budget={"cpu": %d}' % threads]
        self.env = dict(os.environ, OMP_NUM_THREADS=str(threads))

    def train_and_export(self):
        command = [self.binary, "run", MODEL, "--quiet", "--report", self.report_path] + self.overrides
        try:
            out = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=self.timeout)
        except (subprocess.TimeoutExpired, OSError) as e:
            raise EngineFailed(f"ramjet run: {e}") from e
        if out.returncode != 0:
            tail = [line for line in out.stderr.strip().splitlines() if line.strip()][-3:]
            raise EngineFailed(f"ramjet run exited {out.returncode}: {' | '.join(tail) or '(no message)'}")
        try:
            with open(self.report_path) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            raise EngineFailed(f"{self.report_path}: cannot read the report: {e}") from e
        export = report.get("export") if isinstance(report, dict) else None
        missing = [k for k in ("path", "file_bytes", "fp32_weight_bytes")
                   if not isinstance(export, dict) or k not in export]
        if missing:
            raise EngineFailed(f"{self.report_path}: the report's 'export' lacks {', '.join(missing)}")
        return report

    def evaluate(self, precision, predictions=None):
        command = [self.binary, "eval", MODEL] + self.overrides + [
            "--precision", precision, "--batch", str(self.batch), "--threads", str(self.threads), "--json"]
        if predictions:
            command += ["--predictions", predictions + ".d"]
        result = last_json(command, self.timeout, env=self.env)
        if predictions:  # ramjet writes a folder; its classes.npy becomes the int32 file LiteRT's is compared with
            import numpy
            numpy.load(os.path.join(predictions + ".d", "classes.npy")).astype("<i4").tofile(predictions)
        for key in ("samples_per_s", "accuracy"):
            if not isinstance(result.get(key), (int, float)):
                raise EngineFailed(f"ramjet eval --precision {precision}: no numeric '{key}' in {result}")
        return result


def median_of_runs(run, repeat):
    """Calls run() `repeat` times (each a fresh process with its own warm-up); the median and every run."""
    results = [run(i) for i in range(repeat)]
    return {"samples_per_s": statistics.median(r["samples_per_s"] for r in results),
            "runs": [round(r["samples_per_s"], 1) for r in results], "accuracy": results[0]["accuracy"]}


def agreement(path_a, path_b):
    """The fraction of samples on which two int32 prediction files agree (None when either is missing)."""
    if not (path_a and path_b and os.path.isfile(path_a) and os.path.isfile(path_b)):
        return None
    with open(path_a, "rb") as f:
        a = f.read()
    with open(path_b, "rb") as f:
        b = f.read()
    if len(a) != len(b) or len(a) % 4 or not a:
        return None
    same = sum(a[i:i + 4] == b[i:i + 4] for i in range(0, len(a), 4))
    return round(same / (len(a) // 4), 4)


def make_row(name, runner):
    log(f"{name} ...")
    try:
        result = runner()
    except EngineFailed as e:
        log(f"{name} failed: {e}")
        return {"name": name, "samples_per_s": None, "accuracy": None, "error": str(e)}
    row = {"name": name, "samples_per_s": round(result.pop("samples_per_s"), 1),
           "accuracy": round(result.pop("accuracy"), 4)}
    row.update(result)
    log(f"{name}: {row['samples_per_s']:.0f} samples/s, accuracy {row['accuracy']:.4f}")
    return row


def ratios(rows, export):
    by = {r["name"]: r["samples_per_s"] for r in rows}
    peers = [by[n] for n in ("litert-int8", "torch-int8") if by.get(n)]

    def divide(a, b):
        return round(a / b, 3) if a and b else None

    return [
        {"ratio": "ramjet-int8 / fastest of litert-int8, torch-int8",
         "value": divide(by.get("ramjet-int8"), max(peers) if peers else None)},
        {"ratio": "ramjet-int8 / ramjet-fp32", "value": divide(by.get("ramjet-int8"), by.get("ramjet-fp32"))},
        {"ratio": "exported file bytes / fp32 weight bytes",
         "value": divide((export or {}).get("file_bytes"), (export or {}).get("fp32_weight_bytes"))},
    ]


def run_bench(a, work):
    py = sys.executable
    common = ["--threads", str(a.threads), "--batch", str(a.batch), "--repeat", str(a.repeat)]
    ramjet = Ramjet(a.ramjet, work, a.threads, a.batch, a.timeout)
    tf_int8 = os.path.join(work, "tf_int8.tflite")
    predictions = {name: os.path.join(work, f"{name}.bin") for name in ("ramjet-int8", "litert-ramjet-int8")}
    state = {}

    def trained_ramjet():
        if "ramjet" not in state:
            log("ramjet run: training and exporting")
            try:
                state["ramjet"] = ramjet.train_and_export()
            except EngineFailed as e:
                state["ramjet"] = e
        if isinstance(state["ramjet"], EngineFailed):
            raise EngineFailed(f"training/export failed: {state['ramjet']}")
        return state["ramjet"]

    def ramjet_eval(precision, name):
        # A failed export can still leave the trained checkpoints that eval needs, so eval is tried regardless.
        try:
            trained_ramjet()
            train_error = None
        except EngineFailed as e:
            train_error = e
        try:
            return median_of_runs(lambda i: ramjet.evaluate(precision, predictions.get(name) if i == 0 else None),
                                  a.repeat)
        except EngineFailed as e:
            raise EngineFailed(f"{train_error}; then {e}" if train_error else str(e)) from e

    def tf_fp32():
        result = last_json([py, os.path.join(HERE, "keras_peer.py"), "--tflite-out", tf_int8] + common, a.timeout)
        return {k: result[k] for k in ("samples_per_s", "accuracy", "runs", "method", "methods", "tensorflow")}

    def litert(model, name=None):
        if not os.path.isfile(model):
            raise EngineFailed(f"{model}: no such file")
        command = [py, os.path.join(HERE, "litert_peer.py"), "--model", model] + common
        if name:
            command += ["--predictions", predictions[name]]
        result = last_json(command, a.timeout)
        return {k: result[k] for k in ("samples_per_s", "accuracy", "runs", "input", "file_bytes")}

    def litert_tf():
        if not os.path.isfile(tf_int8):
            raise EngineFailed("TensorFlow's int8 .tflite was not written (see the tf-fp32 row)")
        return litert(tf_int8)

    def litert_ramjet():
        path = trained_ramjet()["export"]["path"]
        result = litert(path, "litert-ramjet-int8")
        result["agreement_with_ramjet_int8"] = agreement(predictions["ramjet-int8"], predictions["litert-ramjet-int8"])
        return result

    def torch_int8():
        result = last_json([a.torch_python, os.path.join(HERE, "torch_peer.py")] + common, a.timeout)
        return {k: result[k] for k in ("samples_per_s", "accuracy", "runs", "qengine", "qengines", "fp32_accuracy",
                                       "torch")}

    runners = {"ramjet-fp32": lambda: ramjet_eval("float32", "ramjet-fp32"),
               "ramjet-int8": lambda: ramjet_eval("int8", "ramjet-int8"),
               "tf-fp32": tf_fp32, "litert-int8": litert_tf, "litert-ramjet-int8": litert_ramjet,
               "torch-int8": torch_int8}
    rows = [make_row(name, runners[name]) for name in ROWS]
    export = None
    if isinstance(state.get("ramjet"), dict):
        e = state["ramjet"]["export"]
        export = {k: e.get(k) for k in ("path", "file_bytes", "fp32_weight_bytes", "fp32_accuracy", "int8_accuracy")}
        export["train_wall_s"] = state["ramjet"].get("train", {}).get("wall_s")
    return rows, export


def print_table(result):
    print(f"{'row':20} {'samples/s':>10} {'accuracy':>9}   notes")
    for r in result["rows"]:
        if r.get("error"):
            print(f"{r['name']:20} {'failed':>10} {'':>9}   {r['error']}")
            continue
        notes = []
        for key in ("method", "qengine", "agreement_with_ramjet_int8", "file_bytes"):
            if r.get(key) is not None:
                notes.append(f"{key}={r[key]}")
        print(f"{r['name']:20} {r['samples_per_s']:10.0f} {r['accuracy']:9.4f}   {' '.join(notes)}")
    for c in result["ratios"]:
        value = f"{c['value']:8.3f}" if c["value"] is not None else "     n/a"
        print(f"{c['ratio']:50} {value}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ramjet", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--work", help="keep checkpoints, exported files and predictions here (default: a temporary "
                                  "folder, removed at the end)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds any one engine may take")
    a = p.parse_args()
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    if a.work:
        os.makedirs(a.work, exist_ok=True)
        work = os.path.abspath(a.work)
    else:
        work = tempfile.mkdtemp(prefix="ramjet-bench-infer-")
    try:
        rows, export = run_bench(a, work)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    result = {"benchmark": "infer", "rows": rows, "ratios": ratios(rows, export), "export": export,
              "threads": a.threads, "batch": a.batch, "repeat": a.repeat,
              "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}}
    if a.json:
        print(json.dumps(result))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
