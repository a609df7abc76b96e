"""Writes a reference int8 .tflite made by TensorFlow itself, to check the readers in tflite_predict.py (and to
compare ramjet's exporter against): the Keras tutorial CNN trained briefly on Fashion-MNIST, then TFLiteConverter's
full-integer quantization with int8 input and output.

  keras_reference_tflite.py --out FILE [--epochs 1] [--train-images 60000] [--per-channel-dense]

The converted model has a static batch of 1 so that Flatten becomes a constant RESHAPE (a dynamic batch adds SHAPE,
which Arm NN 20.08 cannot parse), and dense kernels are per-tensor unless --per-channel-dense (Arm NN 20.08 wants
per-tensor FullyConnected weights, as the TFLite 8-bit spec does). Run with the venv's python (needs TensorFlow).
Prints one JSON line with the Keras float32 test accuracy.
"""
import argparse
import gzip
import json
import os
import struct

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

DATASET = "/usr/share/datasets/fashion-mnist"


def load(prefix):
    with gzip.open(os.path.join(DATASET, f"{prefix}-images-idx3-ubyte.gz")) as f:
        _, n, h, w = struct.unpack(">IIII", f.read(16))
        images = np.frombuffer(f.read(), dtype=np.uint8).reshape(n, h, w, 1)
    with gzip.open(os.path.join(DATASET, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        f.read(8)
        labels = np.frombuffer(f.read(), dtype=np.uint8)
    return (images / 255.0).astype("float32"), labels.astype("int32")


def build_model(batch_size=None):
    layers = tf.keras.layers
    return tf.keras.Sequential([
        layers.Input((28, 28, 1), batch_size=batch_size),
        layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
        layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2),
        layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10)])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--train-images", type=int, default=60000)
    p.add_argument("--calibration-images", type=int, default=1000)
    p.add_argument("--per-channel-dense", action="store_true")
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(7)
    x, y = load("train")
    xt, yt = load("t10k")
    model = build_model()
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x[:a.train_images], y[:a.train_images], batch_size=128, epochs=a.epochs, verbose=0)
    _, accuracy = model.evaluate(xt, yt, batch_size=256, verbose=0)

    batch_one = build_model(batch_size=1)
    batch_one.set_weights(model.get_weights())
    converter = tf.lite.TFLiteConverter.from_keras_model(batch_one)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([image[None]] for image in x[:a.calibration_images])
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    converter._experimental_disable_per_channel_quantization_for_dense_layers = not a.per_channel_dense
    flatbuffer = converter.convert()
    with open(a.out, "wb") as f:
        f.write(flatbuffer)
    print(json.dumps({"out": a.out, "keras_fp32_accuracy": float(accuracy), "bytes": os.path.getsize(a.out),
                      "tensorflow": tf.__version__}))


if __name__ == "__main__":
    main()
