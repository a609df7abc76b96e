"""TensorFlow's side of ./dev bench infer: trains a bench model (bench/train/keras_models.py: the Keras tutorial CNN
or the MobileNet) briefly (Adam 1e-3, batch 128; --steps batches an epoch), times its
float32 inference over the 10,000 test images at batch 256 (the faster of model.predict and an XLA-compiled
tf.function on in-memory batches; a warm-up pass first, then the median of --repeat passes), and writes TensorFlow's
own full-integer int8 .tflite of it (int8 input and output, calibrated on training images) for the LiteRT row.
Prints one JSON line."""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pipeline"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "train"))
import fashion_mnist  # noqa: E402
import keras_models  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def time_predict(model, xt, batch, repeat):
    return fashion_mnist.timed_passes(lambda: model.predict(xt, batch_size=batch, verbose=0).argmax(1), repeat)


def time_xla(model, xt, batch, repeat):
    forward = tf.function(lambda x: model(x, training=False), jit_compile=True)
    batches = [tf.constant(xt[i:i + batch]) for i in range(0, len(xt), batch)]
    return fashion_mnist.timed_passes(lambda: np.concatenate([forward(b).numpy().argmax(1) for b in batches]), repeat)


def write_int8_tflite(model, x, path, calibration_images):
    """TensorFlow's full-integer post-training quantization: int8 kernels and activations, int8 input and output."""
    def representative_dataset():
        for image in x[:calibration_images]:
            yield [image[None]]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative_dataset
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    with open(path, "wb") as f:
        f.write(converter.convert())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=("cnn", "mobilenet"), default="cnn")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, help="batches of 128 an epoch (default: the whole training set)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tflite-out", required=True, help="where to write TensorFlow's int8 .tflite")
    p.add_argument("--calibration-images", type=int, default=1280, help="ramjet's 10 batches of 128")
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(42)
    x, y = fashion_mnist.load("train")
    xt, yt = fashion_mnist.load("test")
    x = (x[..., None] / 255.0).astype("float32")
    xt = (xt[..., None] / 255.0).astype("float32")

    model = keras_models.build(a.model)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    start = time.perf_counter()
    take = a.steps * 128 if a.steps else len(x)
    model.fit(x[:take], y[:take].astype("int32"), batch_size=128, epochs=a.epochs, shuffle=True, verbose=0)
    train_s = time.perf_counter() - start

    methods = {}
    for name, timer in (("predict", time_predict), ("xla", time_xla)):
        classes, seconds = timer(model, xt, a.batch, a.repeat)
        methods[name] = {"samples_per_s": len(xt) / statistics.median(seconds),
                         "runs": [round(len(xt) / s, 1) for s in seconds],
                         "accuracy": float((classes == yt).mean())}
    best = max(methods, key=lambda m: methods[m]["samples_per_s"])
    write_int8_tflite(model, x, a.tflite_out, a.calibration_images)
    print(json.dumps({**methods[best], "method": best,
                      "methods": {m: round(v["samples_per_s"], 1) for m, v in methods.items()},
                      "model": a.model, "params": int(model.count_params()),
                      "train_s": round(train_s, 1), "tflite": a.tflite_out, "tensorflow": tf.__version__}))


if __name__ == "__main__":
    main()
