"""TensorFlow/Keras training the Keras tutorial CNN on Fashion-MNIST in memory: model.fit, batch 128, Adam 1e-3,
2 threads. Prints steady-state samples/s (steps after the first 50 of the measured epoch) and, with --epochs,
test accuracy and elapsed time after each epoch."""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pipeline"))
import fashion_mnist  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


class StepTimer(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.times = []

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=["float32", "mixed_bfloat16"], default="float32")
    p.add_argument("--jit", action="store_true")
    p.add_argument("--epochs", type=int, default=1)
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
    layers = tf.keras.layers
    model = tf.keras.Sequential([
        layers.Input((28, 28, 1)),
        layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
        layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2),
        layers.Flatten(), layers.Dense(128, activation="relu"),
        layers.Dense(10), layers.Activation("linear", dtype="float32")])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=a.jit)
    ds = tf.data.Dataset.from_tensor_slices((x, y.astype("int32"))).shuffle(60000, seed=1).batch(128).prefetch(
        tf.data.AUTOTUNE)
    timer = StepTimer()
    history = []
    start = time.perf_counter()
    for epoch in range(a.epochs):
        model.fit(ds, epochs=1, verbose=0, callbacks=[timer])
        _, accuracy = model.evaluate(xt, yt, batch_size=256, verbose=0)
        history.append({"epoch": epoch + 1, "test_accuracy": float(accuracy),
                        "elapsed_s": time.perf_counter() - start})
    times = np.array(timer.times[50:469])
    steady = (len(times) - 1) * 128 / (times[-1] - times[0])
    print(json.dumps({"samples_per_s": steady, "history": history, "tensorflow": tf.__version__}))


if __name__ == "__main__":
    main()
