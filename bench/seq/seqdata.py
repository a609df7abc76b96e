"""What every row of `./dev bench seq` shares: the character transformer's manifest, rewritten for a benchmark run,
and the fortunes windows exactly as ramjet's text source cuts them.

The peers tokenize the corpus themselves, as ramjet does (plugins/stock_text): the files of the manifest's glob in
byte-sorted order, each decoded as UTF-8, concatenated, encoded with the tokenizer.json through Hugging Face's
`tokenizers` library (the char-level file ramjet writes: one token per code point); then windows of 128 token IDs
every 128 tokens inside the split [floor(from·n), floor(to·n)), labels the same window one token later.
`verify()` checks the result against ramjet's own data report (count, min, max, mean and std of tokens and labels).
"""
import glob
import json
import math
import os
import subprocess

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = os.path.join(ROOT, "examples", "char_transformer", "train.json")
BATCH = 32


def original():
    with open(MANIFEST) as f:
        return json.load(f)


def absolute(path):
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(os.path.dirname(MANIFEST), path))


def source(doc, name="train"):
    """The manifest's text source with its paths made absolute."""
    s = dict(doc["data"][name]["source"])
    s["files"] = absolute(s["files"]) if isinstance(s["files"], str) else [absolute(p) for p in s["files"]]
    s["vocabulary"] = absolute(s["vocabulary"])
    return s


def bench_manifest(folder, name, take, epochs, evaluate=False, checkpoint_dir=None):
    """The example's manifest for a measurement: absolute paths (it lives in a temporary folder), Adam 1e-3 with
    no schedule and no weight decay for every row, batch 32, `take` windows an epoch, no eval section unless
    `evaluate` (the [0.95, 1] split, for --quality), no checkpoints unless `checkpoint_dir`."""
    doc = original()
    doc["data"]["train"]["source"] = source(doc, "train")
    doc["data"]["train"]["batch"] = BATCH
    doc["data"]["train"]["take"] = take
    if evaluate:
        doc["data"]["eval"]["source"] = source(doc, "eval")
    else:
        doc["data"].pop("eval", None)
    doc["train"]["optimizer"] = {"type": "adam", "learning_rate": 0.001}
    doc["train"].pop("schedule", None)
    doc["train"]["epochs"] = epochs
    if checkpoint_dir:
        # Only at the end of each epoch: what `ramjet generate` reads afterwards.
        doc["train"]["checkpoint"] = {"dir": checkpoint_dir, "every_steps": 1 << 40, "keep": 1}
    else:
        doc["train"].pop("checkpoint", None)
    doc.pop("export", None)
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def ensure_tokenizer(ramjet, folder):
    """ramjet writes the tokenizer.json on the first run of the manifest; the peers need it before any row runs."""
    doc = original()
    vocabulary = source(doc)["vocabulary"]
    if not os.path.exists(vocabulary):
        path = os.path.join(folder, "data-only.json")
        with open(path, "w") as f:
            json.dump({"seed": doc.get("seed", 0), "data": {"train": {"source": source(doc), "batch": BATCH,
                                                                      "take": BATCH}}}, f)
        subprocess.run([ramjet, "run", path, "--quiet"], check=True, capture_output=True, text=True)
    return vocabulary


def token_ids(src):
    """The whole corpus as token IDs (int32), as the text source reads it."""
    from tokenizers import Tokenizer  # imported here: run.py reads reports only and needs no tokenizers

    patterns = [src["files"]] if isinstance(src["files"], str) else src["files"]
    files = []
    for p in patterns:
        files += sorted(glob.glob(p), key=lambda f: f.encode())  # glob sorted bytewise, as the source does
    text = "".join(open(f, "rb").read().decode("utf-8") for f in files)
    tokenizer = Tokenizer.from_file(src["vocabulary"])
    # In pieces: one Encoding of the whole corpus (ids, offsets, token strings and masks of 2.5 M tokens) takes
    # about 0.9 GB at its peak, which would count in every peer's peak memory. The tokenizer is char-level (its
    # pre-tokenizer splits every code point), so cutting the text anywhere gives the same IDs.
    piece = 1 << 16
    return np.concatenate([np.asarray(tokenizer.encode(text[i:i + piece]).ids, dtype=np.int32)
                           for i in range(0, len(text), piece)])


def windows(split_name="train", take=None):
    """(tokens, labels), each int32 [windows, context], of the manifest's `split_name` source; the first `take`."""
    src = source(original(), split_name)
    ids = token_ids(src)
    context = src["context"]
    stride = src.get("stride", context)
    n = len(ids)
    first, end = 0, n
    if "split" in src:
        first = math.floor(src["split"][0] * n)
        end = min(n, math.floor(src["split"][1] * n))
    count = (end - first - (context + 1)) // stride + 1
    if take is not None:
        count = min(count, take)
    starts = first + stride * np.arange(count)
    index = starts[:, None] + np.arange(context)[None, :]
    return ids[index], ids[index + 1]


def verify(ramjet, folder, take=None):
    """Our windows against ramjet's: the data report of the same source (train and eval splits). Returns a dict."""
    doc = original()
    data = {}
    for name in ("train", "eval"):
        data[name] = {"source": source(doc, name), "batch": 256}
        if take and name == "train":
            data[name]["take"] = take
    path = os.path.join(folder, "data-only.json")
    report = os.path.join(folder, "data-report.json")
    with open(path, "w") as f:
        json.dump({"seed": doc.get("seed", 0), "data": data}, f)
    subprocess.run([ramjet, "run", path, "--quiet", "--report", report], check=True, capture_output=True, text=True)
    with open(report) as f:
        theirs = json.load(f)["data"]
    out = {"identical": True}
    for name in ("train", "eval"):
        tokens, labels = windows(name, take if name == "train" else None)
        same = theirs[name]["elements"] == len(tokens)
        for key, ours in (("tokens", tokens), ("labels", labels)):
            t = theirs[name]["tensors"][key]
            same &= t["min"] == ours.min() and t["max"] == ours.max() and t["values"] == ours.size
            same &= math.isclose(t["mean"], float(ours.mean(dtype=np.float64)), rel_tol=1e-7)
            same &= math.isclose(t["std"], float(ours.std(dtype=np.float64)), rel_tol=1e-6)
        out[name] = {"windows": int(len(tokens)), "identical": bool(same)}
        out["identical"] &= bool(same)
    return out


if __name__ == "__main__":
    import argparse
    import tempfile

    p = argparse.ArgumentParser(description="check the peers' windows against ramjet's text source")
    p.add_argument("--ramjet", required=True)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        ensure_tokenizer(a.ramjet, d)
        print(json.dumps(verify(a.ramjet, d)))
