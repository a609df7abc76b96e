"""Running the engines of ./dev bench infer: each in its own process, its JSON result read from the last line of its
stdout and its own peak resident memory from wait4; ramjet's training run and `ramjet eval`.
"""
import json
import os
import statistics
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
# The manifest ramjet trains for each model: the CNN's own inference recipe, and the training bench's MobileNet.
MANIFESTS = {"cnn": os.path.join(HERE, "model.json"),
             "mobilenet": os.path.join(BENCH, "train", "models", "mobilenet.json")}
# Epochs every framework trains before inference: the CNN's recipe has 3; one is enough for the MobileNet's
# batch-norm statistics to settle, and it takes minutes already on 2 threads.
TRAIN_EPOCHS = {"cnn": 3, "mobilenet": 1}


class EngineFailed(Exception):
    """One row's engine failed; the message is what the row's "error" says."""


def log(message):
    print(message, file=sys.stderr, flush=True)


def measured(command, timeout, env=None):
    """Runs `command`; returns (its exit code, stdout, stderr, its own peak resident bytes). wait4 gives this
    child's rusage, where RUSAGE_CHILDREN would be the largest of every child so far. Killed past `timeout` s."""
    name = os.path.basename(command[1] if command[0].endswith(("python", "python3")) else command[0])
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    except OSError as e:
        raise EngineFailed(f"{name}: {e}") from e
    chunks = {}

    def drain(stream, key):  # both pipes read to the end while waiting: a child blocked on a full pipe never exits
        chunks[key] = stream.read().decode(errors="replace")

    readers = [threading.Thread(target=drain, args=(process.stdout, "out")),
               threading.Thread(target=drain, args=(process.stderr, "err"))]
    timer = threading.Timer(timeout, process.kill)
    for t in readers + [timer]:
        t.start()
    _, status, usage = os.wait4(process.pid, 0)
    timed_out = not timer.is_alive()
    timer.cancel()
    for r in readers:
        r.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    if timed_out:
        raise EngineFailed(f"{name} ran past {timeout} s")
    return process.returncode, chunks["out"], chunks["err"], usage.ru_maxrss * 1024


def failure(name, code, err):
    tail = [line for line in err.strip().splitlines() if line.strip()][-3:]
    return EngineFailed(f"{name} exited {code}: {' | '.join(tail) or '(no message)'}")


def last_json(command, timeout, env=None):
    """The JSON object on the last line of a command's stdout, with "peak_rss_bytes" added; EngineFailed with its
    stderr's tail otherwise."""
    name = os.path.basename(command[1] if command[0].endswith(("python", "python3")) else command[0])
    code, out, err, rss = measured(command, timeout, env)
    if code != 0:
        raise failure(name, code, err)
    lines = out.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as e:
        raise EngineFailed(f"{name} printed no JSON result (last line: {lines[-1] if lines else ''!r})") from e
    result["peak_rss_bytes"] = rss
    return result


class Ramjet:
    """`ramjet run` trains the model's manifest and exports its int8 .tflite; `ramjet eval` times inference. Both
    get the same overrides, so eval finds the checkpoints the run wrote under the work folder."""

    def __init__(self, binary, model, work, a):
        self.binary, self.manifest, self.threads, self.batch, self.timeout = (
            binary, MANIFESTS[model], a.threads, a.batch, a.timeout)
        self.report_path = os.path.join(work, "ramjet-report.json")
        self.export_path = os.path.join(work, "ramjet_int8.tflite")
        self.overrides = ["--set", f"/train/checkpoint/dir={os.path.join(work, 'checkpoints')}",
                          "--set", f"/export/path={self.export_path}",
                          "--set", f"/train/threads={a.threads}",
                          "--set", '/data/train/budget={"cpu": %d}' % a.threads,
                          "--set", f"/train/epochs={a.train_epochs or TRAIN_EPOCHS[model]}"]
        if a.train_steps:
            self.overrides += ["--set", f"/data/train/take={a.train_steps * 128}"]
        self.env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))

    def train_and_export(self):
        command = [self.binary, "run", self.manifest, "--quiet", "--report", self.report_path] + self.overrides
        code, _, err, rss = measured(command, self.timeout, self.env)
        if code != 0:
            raise failure("ramjet run", code, err)
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
        report["peak_rss_bytes"] = rss
        return report

    def evaluate(self, precision, predictions=None):
        command = [self.binary, "eval", self.manifest] + self.overrides + [
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
    """Calls run() `repeat` times (each a fresh process with its own warm-up); the median, every run, and the
    largest peak RSS of them."""
    results = [run(i) for i in range(repeat)]
    return {"samples_per_s": statistics.median(r["samples_per_s"] for r in results),
            "runs": [round(r["samples_per_s"], 1) for r in results], "accuracy": results[0]["accuracy"],
            "peak_rss_bytes": max(r["peak_rss_bytes"] for r in results)}


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
