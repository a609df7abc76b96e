"""The rows of ./dev bench train: how each one runs (ramjet from the model's manifest, the Keras and PyTorch peers
from bench/train/{keras,torch}_peer.py), each in its own process whose peak resident memory wait4 reports, and the
single-thread busy process the `-load` rows run beside. Under --device cuda the rows are the GPU's instead (CUDA_ROWS):
ramjet's cuda backend in float32 and mixed_float16 and PyTorch on the GPU, batch 256.
"""
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFESTS = {"cnn": os.path.join(ROOT, "examples", "fashion_mnist", "train.json"),
             "resnet": os.path.join(HERE, "models", "resnet.json"),
             "mobilenet": os.path.join(HERE, "models", "mobilenet.json")}
# Batches an epoch when --steps is not given: the CNN's whole epoch (469); 200 for the bigger models, whose full
# epoch takes minutes on 2 threads for every framework.
DEFAULT_STEPS = {"cnn": None, "resnet": 200, "mobilenet": 200}
BATCH = 128
# --device cuda: the GPU rows and models, batch 256, and the batches an epoch: the whole batches of the training set
# for the CNN (60,000 // 256: no partial last batch, which would make cuDNN's autotuner and torch.compile start over
# inside the timing), 200 for the ResNet as on the CPU.
CUDA_ROWS = ("ramjet-cuda-fp32", "ramjet-cuda-fp16", "torch-cuda-fp32", "torch-cuda-amp", "torch-cuda-amp-compile")
# What replaying the step from CUDA graphs buys: ramjet-cuda-fp16 with every kernel launched every step.
CUDA_LAUNCHED_ROW = "ramjet-cuda-fp16-launched"
CUDA_MODELS = ("cnn", "resnet")
CUDA_BATCH = 256
CUDA_DEFAULT_STEPS = {"cnn": 60000 // CUDA_BATCH, "resnet": 200}
PEERS = ("tf-fp32", "tf-fp32-jit", "tf-bf16", "tf-bf16-jit",
         "torch-fp32", "torch-bf16", "torch-compile-fp32", "torch-compile-bf16")


def _seq_bench():
    """bench/seq/run.py, for run_measured (a child's stdout and its own peak RSS by wait4)."""
    spec = importlib.util.spec_from_file_location("seq_bench", os.path.join(os.path.dirname(HERE), "seq", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_measured = _seq_bench().run_measured


def log(message):
    print(message, file=sys.stderr, flush=True)


def row_names(model, load_models, device="cpu"):
    """Every row of one model, in the order they run: the trace row only for the CNN (what `--trace` costs was
    measured there), the `-load` rows last and only for the models named by --load-models; under --device cuda the
    GPU's rows only."""
    if device == "cuda":
        return list(CUDA_ROWS) + [CUDA_LAUNCHED_ROW]
    names = ["ramjet-fp32", "ramjet-bf16"] + (["ramjet-fp32-trace"] if model == "cnn" else []) + list(PEERS)
    return names + (["ramjet-fp32-load", "ramjet-fp32-load-adapt", "tf-fp32-load"] if model in load_models else [])


def epoch_steps(a, model):
    """Batches an epoch: --steps, else the model's default on the run's device (None: the whole epoch)."""
    return a.steps or (CUDA_DEFAULT_STEPS if a.device == "cuda" else DEFAULT_STEPS)[model]


def threads(a):
    """CPU threads of a row: --threads on the CPU; under --device cuda every core of the machine (os.cpu_count()),
    for ramjet's data pipeline and the peer's host side alike, as a GPU run has the machine to itself."""
    return os.cpu_count() if a.device == "cuda" else a.threads


def bench_manifest(model, precision, a, work, adapt_threads=False):
    """The model's manifest for a timed run: 2 epochs (the second is the steady state), --steps batches each,
    the bench's threads, no periodic checkpoints and no export (the peers export nothing either); checkpoints go
    to the work folder, not next to the manifest."""
    with open(MANIFESTS[model]) as f:
        doc = json.load(f)
    steps = epoch_steps(a, model)
    if steps:
        doc["data"]["train"]["take"] = steps * BATCH
    doc["data"]["train"]["budget"] = {"cpu": a.threads}
    doc["train"].update(epochs=2, precision=precision, threads=a.threads)
    doc["train"]["checkpoint"] = {"dir": os.path.join(work, f"checkpoints-{model}-{precision}"), "every_steps": 0}
    doc.pop("export", None)
    if adapt_threads:  # the backend's own setting for a shared machine (plugins/onednn/thread_tuner.hpp)
        doc["train"]["backend"] = {"type": "cpu", "adapt_threads": True}
    path = os.path.join(work, f"{model}-{precision}{'-adapt' if adapt_threads else ''}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def cuda_manifest(model, precision, a, work, graphs=True):
    """The model's manifest for a GPU row: train.backend "cuda" (graphs False: with cuda_graphs off), batch 256, 2
    epochs of epoch_steps batches (the second is the steady state), the data pipeline's budget every core
    (threads(a)), no train.threads (the cuda backend's parallelism is the device's own), no periodic checkpoints and
    no export."""
    with open(MANIFESTS[model]) as f:
        doc = json.load(f)
    doc["data"]["train"].update(batch=CUDA_BATCH, take=epoch_steps(a, model) * CUDA_BATCH, budget={"cpu": threads(a)})
    backend = "cuda" if graphs else {"type": "cuda", "cuda_graphs": False}
    doc["train"].update(backend=backend, epochs=2, precision=precision)
    doc["train"].pop("threads", None)
    variant = f"cuda-{precision}{'' if graphs else '-launched'}"
    checkpoints = os.path.join(work, f"checkpoints-{model}-{variant}")
    doc["train"]["checkpoint"] = {"dir": checkpoints, "every_steps": 0}
    doc.pop("export", None)
    path = os.path.join(work, f"{model}-{variant}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def ramjet_row(a, work, model, precision, trace=None, adapt_threads=False, cuda=False, graphs=True):
    """`ramjet run MANIFEST --quiet --report R` of the bench manifest (cuda: the GPU's, with or without CUDA graphs),
    read back from R."""
    if cuda:
        manifest = cuda_manifest(model, precision, a, work, graphs)
    else:
        manifest = bench_manifest(model, precision, a, work, adapt_threads)
    variant = ("-cuda" if cuda else "") + ("" if graphs else "-launched")
    report = os.path.join(work, f"report-{model}{variant}-{precision}.json")
    command = [a.ramjet, "run", manifest, "--quiet", "--report", report]
    if trace:
        command += ["--trace", os.path.join(work, "trace.json")]
    _, rss = run_measured(command, env=dict(os.environ, OMP_NUM_THREADS=str(threads(a))))
    with open(report) as f:
        r = json.load(f)
    history = r["train"]["history"]
    steps = r["train"].get("steps")
    return {"samples_per_s": history[-1]["samples_per_s"], "peak_rss_bytes": rss,
            "steps_per_epoch": steps // len(history) if steps else None,
            "test_accuracy": r.get("eval", {}).get("accuracy"), "input_wait_fraction": r["train"]["input_wait_fraction"]}


def peer_command(a, model, name):
    """The peer process for a row name such as tf-bf16-jit, torch-compile-fp32 or torch-cuda-amp-compile."""
    steps = epoch_steps(a, model)
    common = ["--model", model, "--threads", str(threads(a)), "--warmup", str(a.warmup)]
    common += ["--steps", str(steps)] if steps else []
    if name.startswith("torch-cuda-"):
        return ([a.torch_python, os.path.join(HERE, "torch_peer.py"), "--device", "cuda", "--batch", str(CUDA_BATCH),
                 "--precision", "float16" if "-amp" in name else "float32"]
                + common + (["--compile"] if name.endswith("-compile") else []))
    bf16 = "bf16" in name
    if name.startswith("tf-"):
        return ([sys.executable, os.path.join(HERE, "keras_peer.py"), "--precision",
                 "mixed_bfloat16" if bf16 else "float32"] + common + (["--jit"] if name.endswith("-jit") else []))
    return ([a.torch_python, os.path.join(HERE, "torch_peer.py"), "--precision", "bfloat16" if bf16 else "float32"]
            + common + (["--compile"] if "compile" in name else []))


def peer_row(a, model, name):
    out, rss = run_measured(peer_command(a, model, name), env=dict(os.environ, OMP_NUM_THREADS=str(threads(a))))
    result = json.loads(out.strip().splitlines()[-1])
    return {"samples_per_s": result["samples_per_s"], "peak_rss_bytes": rss, "params": result.get("params"),
            "steps_per_epoch": result.get("steps"), "test_accuracy": result["history"][-1]["test_accuracy"],
            "gpu": result.get("gpu")}


def _die_with_parent():
    """Linux's PR_SET_PDEATHSIG: the spinner gets SIGKILL when the bench dies, even by SIGKILL, which no finally
    block sees."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


@contextlib.contextmanager
def busy_process():
    """One competing process spinning a single thread of pure CPU work for as long as the block runs; killed on
    the way out, however the block ends."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL,
                               preexec_fn=_die_with_parent)
    log(f"  busy process {spinner.pid} started")
    try:
        yield spinner.pid
    finally:
        spinner.kill()
        spinner.wait()
        log(f"  busy process {spinner.pid} stopped")


def exit_on_sigterm():
    """SIGTERM raises SystemExit, so a killed bench still unwinds busy_process and stops its spinner."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def runner(a, work, model, name, quiet):
    """A function running row `name` of `model` once. `quiet` maps row names to their results so far: the
    tf-fp32-load row runs the Keras fp32 variant (with or without jit) that was faster without load."""
    if name == "ramjet-fp32-load":
        return lambda: loaded(lambda: ramjet_row(a, work, model, "float32"))
    if name == "ramjet-fp32-load-adapt":
        return lambda: loaded(lambda: ramjet_row(a, work, model, "float32", adapt_threads=True))
    if name == "tf-fp32-load":
        def tf_loaded():
            jit = quiet.get("tf-fp32-jit", 0) > quiet.get("tf-fp32", 0)
            row = loaded(lambda: peer_row(a, model, "tf-fp32-jit" if jit else "tf-fp32"))
            row["variant"] = "jit" if jit else "no-jit"
            return row
        return tf_loaded
    if name == CUDA_LAUNCHED_ROW:
        return lambda: ramjet_row(a, work, model, "mixed_float16", cuda=True, graphs=False)
    if name.startswith("ramjet-cuda-"):
        return lambda: ramjet_row(a, work, model, "mixed_float16" if name.endswith("-fp16") else "float32", cuda=True)
    if name.startswith("ramjet-"):
        precision = "mixed_bfloat16" if "bf16" in name else "float32"
        return lambda: ramjet_row(a, work, model, precision, trace=name.endswith("-trace"))
    return lambda: peer_row(a, model, name)


def loaded(run):
    with busy_process():
        row = run()
    row["load"] = "1 single-thread busy process"
    return row
