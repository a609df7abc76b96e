"""PyTorch training the character transformer of examples/char_transformer on the fortunes windows, written as a
PyTorch user writes it: nn.Embedding, a learned position nn.Parameter, pre-LayerNorm blocks of nn.LayerNorm,
nn.MultiheadAttention(batch_first=True) with a boolean causal mask (is_causal=True as the hint; PyTorch then runs
F.scaled_dot_product_attention's causal kernel) and an nn.Linear → nn.GELU() (exact erf) → nn.Linear MLP, a final
nn.LayerNorm and nn.Linear logits; F.cross_entropy over every token; torch.optim.Adam(lr=1e-3) with its defaults.
`--attention sdpa` swaps in nanoGPT's hand-written CausalSelfAttention (one qkv nn.Linear,
F.scaled_dot_product_attention(is_causal=True), an output nn.Linear): the same parameters, laid out differently.

Modes:
  --steps N [--warmup W] [--compile] [--precision bfloat16]   steady-state tokens/s of N timed steps after W
  --train-steps N --evaluate                                   train N steps, then the mean token cross-entropy on
                                                               the manifest's eval split (bench/seq/quality.py)
Prints one JSON object on stdout. The windows are bench/seq/seqdata.py's: the same IDs as ramjet's text source.
"""
import argparse
import json
import math
import os
import sys
import time

# Inductor compiles its kernels in a pool of processes by default; on 2 cores one thread of compilation is fairer
# to whatever shares the machine, and it changes nothing after the compile.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seqdata  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402


class CausalSelfAttention(nn.Module):
    """nanoGPT's: one projection to q, k, v, PyTorch's fused attention kernel, an output projection."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, d_model, heads, hidden, attention):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model, eps=1e-5)
        self.sdpa = attention == "sdpa"
        self.attn = CausalSelfAttention(d_model, heads) if self.sdpa else nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-5)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))

    def forward(self, x, mask):
        h = self.norm1(x)
        if self.sdpa:
            x = x + self.attn(h)
        else:
            x = x + self.attn(h, h, h, attn_mask=mask, is_causal=True, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class CharTransformer(nn.Module):
    def __init__(self, vocabulary=114, context=128, d_model=128, heads=4, hidden=512, blocks=2, attention="mha"):
        super().__init__()
        self.token_embedding = nn.Embedding(vocabulary, d_model)
        self.position_embedding = nn.Parameter(torch.randn(1, context, d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(d_model, heads, hidden, attention) for _ in range(blocks))
        self.final_norm = nn.LayerNorm(d_model, eps=1e-5)
        self.logits = nn.Linear(d_model, vocabulary)
        self.register_buffer("mask", torch.triu(torch.ones(context, context, dtype=torch.bool), diagonal=1),
                             persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.token_embedding(tokens) + self.position_embedding[:, :t]
        for block in self.blocks:
            x = block(x, self.mask[:t, :t])
        return self.logits(self.final_norm(x))


def keras_initialisation(model, d_model, heads):
    """Keras's initial distributions instead of PyTorch's (for --keras-init): Embedding U(±0.05), glorot-uniform
    kernels and zero biases, the position table glorot-uniform, and MultiHeadAttention's einsum kernels with the
    fans Keras computes for them ([d, heads, key_dim]: fan_in heads·d, fan_out key_dim·d; [heads, key_dim, d]:
    fan_in key_dim·heads, fan_out d·heads)."""
    def uniform_(t, limit):
        with torch.no_grad():
            t.uniform_(-limit, limit)

    key_dim = d_model // heads
    for m in model.modules():
        if isinstance(m, nn.Embedding):
            uniform_(m.weight, 0.05)
        elif isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.MultiheadAttention):
            uniform_(m.in_proj_weight, math.sqrt(6.0 / (heads * d_model + key_dim * d_model)))
            nn.init.zeros_(m.in_proj_bias)
            uniform_(m.out_proj.weight, math.sqrt(6.0 / (key_dim * heads + d_model * heads)))
            nn.init.zeros_(m.out_proj.bias)
    uniform_(model.position_embedding, math.sqrt(6.0 / (2 * model.position_embedding.shape[1])))


def architecture():
    """The sizes, read from the manifest's layers, so that this model follows examples/char_transformer."""
    layers = seqdata.original()["model"]["layers"]
    embedding = next(l for l in layers if l["type"] == "embedding")
    attention = [l for l in layers if l["type"] == "multi_head_attention"]
    hidden = next(l for l in layers if l["type"] == "dense" and l.get("activation") == "gelu")
    return dict(vocabulary=embedding["input_dim"], context=seqdata.source(seqdata.original())["context"],
                d_model=embedding["output_dim"], heads=attention[0]["num_heads"], hidden=hidden["units"],
                blocks=len(attention))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (inductor)")
    p.add_argument("--attention", choices=["mha", "sdpa"], default="mha")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--warmup", type=int, help="untimed steps first (default 10 eager, 20 compiled)")
    p.add_argument("--take", type=int, help="windows of the train split to draw batches from (default: all)")
    p.add_argument("--train-steps", type=int, help="quality mode: train this many steps, no timing")
    p.add_argument("--evaluate", action="store_true", help="then the mean token cross-entropy on the eval split")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keras-init", action="store_true",
                   help="Keras's initial distributions and Adam epsilon (1e-7) instead of PyTorch's (--attention mha)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    tokens, labels = seqdata.windows("train", a.take)
    x = torch.from_numpy(tokens).long()
    y = torch.from_numpy(labels).long()
    arch = architecture()
    model = CharTransformer(**arch, attention=a.attention)
    parameters = sum(t.numel() for t in model.parameters())
    vocabulary = arch["vocabulary"]
    step_model = torch.compile(model) if a.compile else model
    if a.keras_init:
        keras_initialisation(model, arch["d_model"], arch["heads"])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7 if a.keras_init else 1e-8)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bfloat16")
    batch = seqdata.BATCH
    order, at = torch.randperm(len(x)), 0

    def next_batch():
        nonlocal order, at
        if at + batch > len(order):  # a new epoch, reshuffled; the last partial batch is dropped
            order, at = torch.randperm(len(x)), 0
        index = order[at:at + batch]
        at += batch
        return x[index], y[index]

    def step():
        xb, yb = next_batch()
        with autocast:
            loss = F.cross_entropy(step_model(xb).reshape(-1, vocabulary), yb.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    out = {"torch": torch.__version__, "parameters": parameters, "precision": a.precision,
           "variant": "compile" if a.compile else "eager", "attention": a.attention, "keras_init": a.keras_init}
    model.train()
    if a.train_steps:
        start = time.perf_counter()
        for _ in range(a.train_steps):
            loss = step()
        out.update(steps=a.train_steps, final_loss=loss.item(), train_s=time.perf_counter() - start)
    else:
        warmup = a.warmup if a.warmup is not None else (20 if a.compile else 10)
        start = time.perf_counter()
        for _ in range(warmup):
            step()
        began = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        loss.item()
        elapsed = time.perf_counter() - began
        out.update(tokens_per_s=a.steps * batch * tokens.shape[1] / elapsed, warmup_steps=warmup, steps=a.steps,
                   warmup_s=began - start, final_loss=loss.item())
    if a.evaluate:
        xt, yt = (torch.from_numpy(t).long() for t in seqdata.windows("eval"))
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for i in range(0, len(xt), 64):
                logits = model(xt[i:i + 64]).reshape(-1, vocabulary)
                total += F.cross_entropy(logits, yt[i:i + 64].reshape(-1), reduction="sum").item()
                count += yt[i:i + 64].numel()
        out.update(val_loss=total / count, val_windows=len(xt))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
