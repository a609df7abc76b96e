"""Keras training the deblurring U-Net of examples/deblur on bench/deblur/pairs.py's arrays: the model built from
ramjet's graph IR (`ramjet graph MANIFEST --json`) by tests/tools/keras_from_ir.py's build() — Conv2D,
MaxPooling2D, Conv2DTranspose, Concatenate, Add with Keras's initializers — compiled with Adam and MSE; model.fit on
a tf.data pipeline (shuffle, batch, prefetch), 2 intra-op threads. --precision mixed_bfloat16 sets that global
policy before the model is built, with a float32 linear activation on the output as the mixed-precision guide
advises.

Prints one JSON object: samples/s over the last epoch (a callback timing its batch ends, after the epoch's first
batch), and the test PSNR (tf.image.psnr, averaged over the test images) after the last epoch.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")  # the peer as it ships (keras_from_ir turns them off otherwise)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
import keras_from_ir  # noqa: E402
import pairs  # noqa: E402


class EpochTimer(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.times = []

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter())


def main():
    a = pairs.peer_arguments(["float32", "mixed_bfloat16"], "--jit", "compile with XLA (jit_compile)")
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(a.seed)
    keras.mixed_precision.set_global_policy(a.precision)
    with open(a.ir) as f:
        ir = json.load(f)
    with open(a.data) as f:
        data = json.load(f)
    body, _ = keras_from_ir.build(ir)
    out = keras.layers.Activation("linear", dtype="float32", name="restored_float32")(body.outputs[0])
    model = keras.Model(body.inputs, out)
    model.compile(optimizer=keras.optimizers.Adam(a.lr), loss="mse", jit_compile=a.jit)
    noisy, clean = np.load(data["train_noisy"]), np.load(data["train_clean"])
    name = ir["inputs"][0]["name"]
    ds = (tf.data.Dataset.from_tensor_slices(({name: noisy}, clean)).shuffle(len(noisy), seed=a.seed)
          .batch(a.batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE))
    timer = EpochTimer()
    start = time.perf_counter()
    model.fit(ds, epochs=a.epochs, verbose=0, callbacks=[timer])
    times = np.array(timer.times)
    samples_per_s = (len(times) - 1) * a.batch / (times[-1] - times[0])
    test_noisy, test_clean = np.load(data["test_noisy"]), np.load(data["test_clean"])
    restored = model.predict(test_noisy, batch_size=250, verbose=0)
    print(json.dumps({"samples_per_s": samples_per_s, "psnr": pairs.psnr(restored, test_clean),
                      "input_psnr": pairs.psnr(test_noisy, test_clean), "precision": a.precision,
                      "variant": "jit" if a.jit else "no-jit", "parameters": model.count_params(),
                      "wall_s": time.perf_counter() - start, "tensorflow": tf.__version__}))


if __name__ == "__main__":
    main()
