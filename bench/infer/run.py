"""./dev bench infer: int8 and float32 inference over the 10,000 Fashion-MNIST test images at batch 256 with 2
threads, ramjet against TensorFlow, LiteRT and PyTorch, in one run, for the Keras tutorial CNN and the bench's
MobileNet (depthwise-separable blocks with batch norm and relu6; bench/train/models/mobilenet.json). Every framework
builds the same architecture (bench/train/{keras,torch}_models.py).

Rows, per model: ramjet-fp32 and ramjet-int8 (`ramjet eval` on the model `ramjet run` trained from the model's
manifest: bench/infer/model.json for the CNN), tf-fp32 (Keras, the faster of model.predict and XLA), litert-int8
(TensorFlow's own int8 .tflite on LiteRT), litert-ramjet-int8 (ramjet's exported .tflite on LiteRT) and torch-int8
(FX static quantization, fastest qengine). Each row reports steady-state samples/s (after a warm-up pass; the median
of --repeat), top-1 accuracy and the peak resident memory of its process (wait4; the Keras and PyTorch processes
train their model first, so theirs includes training). The peers train their own copies briefly (3 epochs for the
CNN, 1 for the MobileNet, every framework alike); TensorFlow and PyTorch run in separate processes. A row whose
engine fails carries an "error" and the bench goes on. Check (issue 14): ramjet-int8 ≥ 1.3 × the fastest peer
int8 row, LiteRT on ramjet's own file included.
"""
import argparse
import json
import os
import platform
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from engines import MANIFESTS, TRAIN_EPOCHS, EngineFailed, Ramjet, agreement, last_json, log, median_of_runs  # noqa: E402

ROWS = ("ramjet-fp32", "ramjet-int8", "tf-fp32", "litert-int8", "litert-ramjet-int8", "torch-int8")
PEER_INT8 = ("litert-int8", "litert-ramjet-int8", "torch-int8")


def make_row(model, name, runner):
    log(f"{model} {name} ...")
    try:
        result = runner()
    except EngineFailed as e:
        log(f"{model} {name} failed: {e}")
        return {"model": model, "name": name, "samples_per_s": None, "accuracy": None, "peak_rss_bytes": None,
                "error": str(e)}
    row = {"model": model, "name": name, "samples_per_s": round(result.pop("samples_per_s"), 1),
           "accuracy": round(result.pop("accuracy"), 4), "peak_rss_bytes": result.pop("peak_rss_bytes")}
    row.update(result)
    log(f"{model} {name}: {row['samples_per_s']:.0f} samples/s, accuracy {row['accuracy']:.4f}")
    return row


def ratios(model, rows, export):
    by = {r["name"]: r["samples_per_s"] for r in rows}
    peers = {n: by[n] for n in PEER_INT8 if by.get(n)}
    fastest = max(peers, key=peers.get) if peers else None

    def divide(a, b):
        return round(a / b, 3) if a and b else None

    speed = divide(by.get("ramjet-int8"), peers.get(fastest))
    return [
        {"model": model, "ratio": f"ramjet-int8 / fastest peer int8 ({fastest or 'none ran'})", "value": speed,
         "target": 1.3, "met": speed is not None and speed >= 1.3},
        {"model": model, "ratio": "ramjet-int8 / ramjet-fp32",
         "value": divide(by.get("ramjet-int8"), by.get("ramjet-fp32"))},
        {"model": model, "ratio": "exported file bytes / fp32 weight bytes",
         "value": divide((export or {}).get("file_bytes"), (export or {}).get("fp32_weight_bytes"))},
    ]


def peer_args(a, model):
    epochs = a.train_epochs or TRAIN_EPOCHS[model]
    args = ["--model", model, "--threads", str(a.threads), "--batch", str(a.batch), "--repeat", str(a.repeat),
            "--epochs", str(epochs)]
    return args + (["--steps", str(a.train_steps)] if a.train_steps else [])


def run_model(a, model, work):
    py = sys.executable
    common = ["--threads", str(a.threads), "--batch", str(a.batch), "--repeat", str(a.repeat)]
    ramjet = Ramjet(a.ramjet, model, work, a)
    tf_int8 = os.path.join(work, "tf_int8.tflite")
    predictions = {name: os.path.join(work, f"{name}.bin") for name in ("ramjet-int8", "litert-ramjet-int8")}
    state = {}

    def trained_ramjet():
        if "ramjet" not in state:
            log(f"{model} ramjet run: training and exporting")
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
        result = last_json([py, os.path.join(HERE, "keras_peer.py"), "--tflite-out", tf_int8] + peer_args(a, model),
                           a.timeout)
        return {k: result[k] for k in ("samples_per_s", "accuracy", "runs", "method", "methods", "params",
                                       "peak_rss_bytes", "tensorflow")}

    def litert(path, name=None):
        if not os.path.isfile(path):
            raise EngineFailed(f"{path}: no such file")
        command = [py, os.path.join(HERE, "litert_peer.py"), "--model", path] + common
        if name:
            command += ["--predictions", predictions[name]]
        result = last_json(command, a.timeout)
        return {k: result[k] for k in ("samples_per_s", "accuracy", "runs", "input", "file_bytes", "peak_rss_bytes")}

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
        result = last_json([a.torch_python, os.path.join(HERE, "torch_peer.py")] + peer_args(a, model), a.timeout)
        return {k: result[k] for k in ("samples_per_s", "accuracy", "runs", "qengine", "qengines", "fp32_accuracy",
                                       "params", "peak_rss_bytes", "torch")}

    runners = {"ramjet-fp32": lambda: ramjet_eval("float32", "ramjet-fp32"),
               "ramjet-int8": lambda: ramjet_eval("int8", "ramjet-int8"),
               "tf-fp32": tf_fp32, "litert-int8": litert_tf, "litert-ramjet-int8": litert_ramjet,
               "torch-int8": torch_int8}
    rows = [make_row(model, name, runners[name]) for name in ROWS]
    export = None
    if isinstance(state.get("ramjet"), dict):
        e = state["ramjet"]["export"]
        export = {k: e.get(k) for k in ("path", "file_bytes", "fp32_weight_bytes", "fp32_accuracy", "int8_accuracy")}
        export["train_wall_s"] = state["ramjet"].get("train", {}).get("wall_s")
        export["train_peak_rss_bytes"] = state["ramjet"]["peak_rss_bytes"]
    return rows, export


def print_table(result):
    print(f"{'model':10} {'row':20} {'samples/s':>10} {'accuracy':>9} {'peak MiB':>9}   notes")
    for r in result["rows"]:
        if r.get("error"):
            print(f"{r['model']:10} {r['name']:20} {'failed':>10} {'':>9} {'':>9}   {r['error']}")
            continue
        notes = [f"{key}={r[key]}" for key in ("method", "qengine", "agreement_with_ramjet_int8", "file_bytes")
                 if r.get(key) is not None]
        print(f"{r['model']:10} {r['name']:20} {r['samples_per_s']:10.0f} {r['accuracy']:9.4f} "
              f"{r['peak_rss_bytes'] / 2**20:9.0f}   {' '.join(notes)}")
    for c in result["ratios"]:
        value = f"{c['value']:8.3f}" if c["value"] is not None else "     n/a"
        target = f"  target {c['target']}  {'met' if c['met'] else 'MISSED'}" if "target" in c else ""
        print(f"{c['model']:10} {c['ratio']:55} {value}{target}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ramjet", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--model", default="cnn", help="cnn, mobilenet, or a comma list of them")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--train-epochs", type=int, help="epochs every framework trains first (default 3 for cnn, "
                                                    "1 for mobilenet)")
    p.add_argument("--train-steps", type=int, help="batches of 128 an epoch of that training (default: all 469)")
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--work", help="keep checkpoints, exported files and predictions here (default: a temporary "
                                  "folder, removed at the end)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds any one engine may take")
    a = p.parse_args()
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    a.models = a.model.split(",")
    for m in a.models:
        if m not in MANIFESTS:
            p.error(f"unknown model {m!r}; models: {', '.join(MANIFESTS)}")
    return a


def main():
    a = parse_args()
    if a.work:
        os.makedirs(a.work, exist_ok=True)
        work = os.path.abspath(a.work)
    else:
        work = tempfile.mkdtemp(prefix="ramjet-bench-infer-")
    rows, checks, exports = [], [], {}
    try:
        for model in a.models:
            folder = os.path.join(work, model)
            os.makedirs(folder, exist_ok=True)
            model_rows, exports[model] = run_model(a, model, folder)
            rows += model_rows
            checks += ratios(model, model_rows, exports[model])
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    result = {"benchmark": "infer", "rows": rows, "ratios": checks, "exports": exports,
              "threads": a.threads, "batch": a.batch, "repeat": a.repeat,
              "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}}
    if a.json:
        print(json.dumps(result))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
