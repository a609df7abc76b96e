"""The arithmetic of ./dev bench train: a model's training work per sample and parameter count from `ramjet graph`,
the fraction of the measured matmul peak a row reaches, and issue 14's targets as ratios within one run; under
--device cuda issue 16's instead (cuda_checks), which a failed or missing row leaves unjudged rather than dropped.
"""
import json
import math
import subprocess

from rows import CUDA_LAUNCHED_ROW, CUDA_ROWS, PEERS


def graph(ramjet, manifest):
    return json.loads(subprocess.run([ramjet, "graph", manifest, "--json"], check=True, capture_output=True,
                                     text=True).stdout)


def param_count(g):
    """Every parameter ramjet holds, batch norm's moving statistics included (as Keras's count_params)."""
    return sum(math.prod(p["shape"]) for p in g["params"].values())


def training_flops_per_sample(g):
    """Multiply-adds of the forward pass × 2 flops × 3 (forward, backward data, backward weights). Convolutions
    count kernel area × input channels / groups per output element, so a depthwise convolution (groups = channels)
    counts its 3×3 window and a 1×1 convolution its channels; batch norm, activations, adds and pooling count
    nothing (memory-bound, no matmul work)."""
    shapes = {i["name"]: i["shape"] for i in g["inputs"]}
    macs = 0
    for node in g["nodes"]:
        shapes[node["name"]] = node["shape"]
        attrs = node.get("attrs", {})
        if node["op"] == "conv2d":
            in_channels = shapes[node["inputs"][0]][-1]
            out = node["shape"]
            window = attrs["kernel"][0] * attrs["kernel"][1] * in_channels // attrs.get("groups", 1)
            macs += out[0] * out[1] * out[2] * window
        elif node["op"] == "dense":
            macs += math.prod(shapes[node["inputs"][0]]) * attrs["units"]
    return 2 * 3 * macs


def add_peak_fractions(rows, peak, flops):
    """GFLOP/s and the fraction of the matmul peak of its precision, on every ramjet row of one model."""
    for row in rows:
        if row["name"].startswith("ramjet") and row.get("samples_per_s"):
            key = "bfloat16_gflops" if "bf16" in row["name"] else "float32_gflops"
            row["gflops"] = round(row["samples_per_s"] * flops * 1e-9, 1)
            row["fraction_of_matmul_peak"] = round(row["gflops"] / peak[key], 3) if peak.get(key) else None


def check(model, text, target, value):
    return {"model": model, "ratio": text, "target": target, "value": round(value, 3), "met": value >= target}


def unjudged(model, text, target, why):
    """A check a failed or missing row leaves open: no value, `met` None, and why."""
    return {"model": model, "ratio": text, "target": target, "value": None, "met": None, "unjudged": why}


def why_unjudged(by, names):
    """Why rows `names` cannot be judged ("" when they all have a speed): which were not run and which failed (the
    failed row carries its error)."""
    missing = [n for n in names if n not in by]
    failed = [n for n in names if n in by and not by[n].get("samples_per_s")]
    return "; ".join(f"{', '.join(rows)} {what}" for rows, what in ((failed, "failed"), (missing, "not run")) if rows)


def cuda_checks(model, by):
    """Issue 16's targets: ramjet-cuda-fp16 ≥ 1.3 × the best torch-cuda row; on the ResNet ≥ 2 × ramjet-cuda-fp32
    (what mixed_float16 gains). Every torch-cuda row must have run: one that failed could have been the best."""
    torch_rows = [n for n in CUDA_ROWS if n.startswith("torch-")]
    speed = {n: by.get(n, {}).get("samples_per_s") for n in CUDA_ROWS}
    text = "ramjet-cuda-fp16 / best torch-cuda row"
    why = why_unjudged(by, ["ramjet-cuda-fp16"] + torch_rows)
    if why:
        out = [unjudged(model, text, 1.3, why)]
    else:
        best = max(torch_rows, key=speed.get)
        out = [check(model, f"{text} ({best})", 1.3, speed["ramjet-cuda-fp16"] / speed[best])]
    if model == "resnet":
        text = "ramjet-cuda-fp16 / ramjet-cuda-fp32"
        why = why_unjudged(by, ["ramjet-cuda-fp16", "ramjet-cuda-fp32"])
        out.append(unjudged(model, text, 2.0, why) if why else
                   check(model, text, 2.0, speed["ramjet-cuda-fp16"] / speed["ramjet-cuda-fp32"]))
    return out


def cuda_graph_gain(by):
    """ramjet-cuda-fp16 over the same row with every kernel launched every step (no target: what graphs buy), or
    None where either did not run."""
    replayed = by.get("ramjet-cuda-fp16", {}).get("samples_per_s")
    launched = by.get(CUDA_LAUNCHED_ROW, {}).get("samples_per_s")
    return round(replayed / launched, 3) if replayed and launched else None


def add_gflops(rows, flops):
    """GFLOP/s of every GPU row that ran (ramjet and PyTorch build the same network, so the same work a sample)."""
    for row in rows:
        if row.get("samples_per_s"):
            row["gflops"] = round(row["samples_per_s"] * flops * 1e-9, 1)


def speed_checks(model, by):
    """ramjet ≥ 2 × the best peer row of the same precision (every variant a row of its own)."""
    out = []
    for precision in ("fp32", "bf16"):
        ours = by.get(f"ramjet-{precision}", {}).get("samples_per_s")
        peers = {n: by[n]["samples_per_s"] for n in PEERS if precision in n and by.get(n, {}).get("samples_per_s")}
        if ours and peers:
            best = max(peers, key=peers.get)
            out.append(check(model, f"ramjet-{precision} / best {precision} peer ({best})", 2.0, ours / peers[best]))
    return out


def memory_check(model, by):
    """Peak RSS of ramjet's fp32 training no more than the leanest peer process's: smallest peer / ramjet ≥ 1."""
    ours = by.get("ramjet-fp32", {}).get("peak_rss_bytes")
    peers = {n: by[n]["peak_rss_bytes"] for n in PEERS if by.get(n, {}).get("peak_rss_bytes")}
    if not ours or not peers:
        return []
    leanest = min(peers, key=peers.get)
    return [check(model, f"peak RSS: leanest peer ({leanest}) / ramjet-fp32", 1.0, peers[leanest] / ours)]


def ratio_checks(model, by):
    """Plain ratios of two rows: tracing's cost, and throughput under one competing busy process."""
    pairs = [("ramjet-fp32-trace / ramjet-fp32 (tracing costs at most 3 %)", 0.97, "ramjet-fp32-trace", "ramjet-fp32"),
             ("ramjet-fp32-load / ramjet-fp32 (kept under load)", 0.6, "ramjet-fp32-load", "ramjet-fp32"),
             ("ramjet-fp32-load / tf-fp32-load", 1.5, "ramjet-fp32-load", "tf-fp32-load"),
             ("ramjet-fp32-load-adapt / ramjet-fp32 (kept under load, adapt_threads)", 0.6, "ramjet-fp32-load-adapt",
              "ramjet-fp32"),
             ("ramjet-fp32-load-adapt / tf-fp32-load", 1.5, "ramjet-fp32-load-adapt", "tf-fp32-load")]
    out = []
    for text, target, top, bottom in pairs:
        a, b = by.get(top, {}).get("samples_per_s"), by.get(bottom, {}).get("samples_per_s")
        if a and b:
            out.append(check(model, text, target, a / b))
    return out


def peak_checks(model, by):
    """The CNN's fraction of the measured matmul peak: ≥ 70 % in fp32, ≥ 60 % in bf16."""
    out = []
    for name, target in (("ramjet-fp32", 0.70), ("ramjet-bf16", 0.60)):
        fraction = by.get(name, {}).get("fraction_of_matmul_peak")
        if fraction:
            out.append(check(model, f"{name} fraction of the matmul peak", target, fraction))
    return out


def model_checks(model, rows, device="cpu"):
    by = {r["name"]: r for r in rows}
    if device == "cuda":
        return cuda_checks(model, by)
    checks = speed_checks(model, by) + memory_check(model, by) + ratio_checks(model, by)
    return checks + (peak_checks(model, by) if model == "cnn" else [])
