"""TensorFlow/Keras training a bench model (bench/train/keras_models.py: cnn, resnet, mobilenet) on Fashion-MNIST in
memory: model.fit from tf.data, batch 128, Adam 1e-3, 2 threads, float32 or mixed_bfloat16, --jit for
jit_compile (XLA). Prints one JSON line: steady-state samples/s over the first epoch's steps after --warmup (compile
and tracing fall in the warm-up), the model's parameter count, and test accuracy with elapsed time after each
epoch. --steps limits every epoch to its first N batches (the same N every framework gets)."""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pipeline"))
sys.path.insert(0, HERE)
import fashion_mnist  # noqa: E402
import keras_models  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

BATCH = 128


class StepTimer(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.times = []

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=keras_models.MODELS, default="cnn")
    p.add_argument("--precision", choices=["float32", "mixed_bfloat16"], default="float32")
    p.add_argument("--jit", action="store_true")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, help="batches an epoch (default: the whole training set, 469)")
    p.add_argument("--warmup", type=int, default=50, help="first-epoch steps left out of the timing")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(42)
    tf.keras.mixed_precision.set_global_policy(a.precision)
    x, y = fashion_mnist.load("train")
    xt, yt = fashion_mnist.load("test")
    x = (x[..., None] / 255.0).astype("float32")
    xt = (xt[..., None] / 255.0).astype("float32")
    model = keras_models.build(a.model)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=a.jit)
    ds = tf.data.Dataset.from_tensor_slices((x, y.astype("int32"))).shuffle(60000, seed=1).batch(BATCH)
    if a.steps:
        ds = ds.take(a.steps)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    history, first_epoch = [], None
    start = time.perf_counter()
    for epoch in range(a.epochs):
        timer = StepTimer()
        model.fit(ds, epochs=1, verbose=0, callbacks=[timer])
        first_epoch = first_epoch or timer.times
        _, accuracy = model.evaluate(xt, yt, batch_size=256, verbose=0)
        history.append({"epoch": epoch + 1, "test_accuracy": float(accuracy),
                        "elapsed_s": time.perf_counter() - start})
    times = np.array(first_epoch[a.warmup:])
    if len(times) < 2:
        sys.exit(f"keras_peer: {len(first_epoch)} steps leave fewer than 2 after the {a.warmup}-step warm-up")
    steady = (len(times) - 1) * BATCH / (times[-1] - times[0])
    print(json.dumps({"samples_per_s": steady, "model": a.model, "params": int(model.count_params()),
                      "steps": len(first_epoch), "history": history, "tensorflow": tf.__version__}))


if __name__ == "__main__":
    main()
