"""TensorFlow/Keras training the character transformer of examples/char_transformer on the fortunes windows:
the model is built from ramjet's graph IR (`ramjet graph MANIFEST --json`) by tests/tools/keras_from_ir.py's
build(), which maps every IR op onto Keras's own layers (Embedding, a PositionEmbedding layer as Keras Hub's,
LayerNormalization, MultiHeadAttention(use_causal_mask=True), Dense with exact gelu, Add); a float32 linear
Activation on the logits as the mixed-precision guide advises; compiled with Adam(1e-3) and
SparseCategoricalCrossentropy(from_logits=True); model.fit on a tf.data pipeline (shuffle, batch 32, prefetch) of
bench/seq/seqdata.py's windows, the same IDs as ramjet's text source. 2 intra-op threads.

Prints one JSON object: steady-state tokens/s of --steps timed batches after --warmup (a callback timing batch
ends), or with --precision mixed_bfloat16 the same under that global policy (set before the model is built).
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# keras_from_ir.py turns TensorFlow's oneDNN kernels off for its role as a float32 reference; as a peer TensorFlow
# runs as it ships, with them on (its default on x86 Linux).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import seqdata  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
import keras_from_ir  # noqa: E402


class StepTimer(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.times = []

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ir", required=True, help="the graph IR, as `ramjet graph MANIFEST --json` prints it")
    p.add_argument("--precision", choices=["float32", "mixed_bfloat16"], default="float32")
    p.add_argument("--jit", action="store_true", help="compile(jit_compile=True): XLA")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps first (tracing, XLA compilation)")
    p.add_argument("--take", type=int, help="windows of the train split to draw batches from (default: all)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(a.seed)
    keras.mixed_precision.set_global_policy(a.precision)  # before the model is built: its layers read it
    with open(a.ir) as f:
        ir = json.load(f)
    body, _ = keras_from_ir.build(ir)
    logits = keras.layers.Activation("linear", dtype="float32", name="logits_float32")(body.outputs[0])
    model = keras.Model(body.inputs, logits)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=a.jit)
    tokens, labels = seqdata.windows("train", a.take)
    name = ir["inputs"][0]["name"]
    batch = seqdata.BATCH
    ds = (tf.data.Dataset.from_tensor_slices(({name: tokens}, labels)).shuffle(len(tokens), seed=a.seed)
          .batch(batch, drop_remainder=True).repeat().prefetch(tf.data.AUTOTUNE))
    timer = StepTimer()
    start = time.perf_counter()
    history = model.fit(ds, epochs=1, steps_per_epoch=a.warmup + a.steps, verbose=0, callbacks=[timer])
    times = np.array(timer.times)
    began = times[a.warmup - 1] if a.warmup > 0 else start
    tokens_per_s = a.steps * batch * tokens.shape[1] / (times[-1] - began)
    print(json.dumps({"tokens_per_s": tokens_per_s, "precision": a.precision, "variant": "jit" if a.jit else "no-jit",
                      "parameters": model.count_params(), "warmup_steps": a.warmup, "steps": a.steps,
                      "warmup_s": float(began - start), "final_loss": float(history.history["loss"][-1]),
                      "tensorflow": tf.__version__, "keras": keras.__version__}))


if __name__ == "__main__":
    main()
