"""tf.data doing the benchmark's work: AUTOTUNE map and prefetch, batch 128, one timed epoch after a warm-up."""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import fashion_mnist  # noqa: E402

AUTOTUNE = tf.data.AUTOTUNE


def augment(image, label):
    image = tf.image.pad_to_bounding_box(image, 4, 4, 36, 36)
    image = tf.image.random_crop(image, [28, 28, 1])
    image = tf.image.random_flip_left_right(image)
    return tf.cast(image, tf.float32) * (1.0 / 255.0), label


def decode(path, label):
    image = tf.io.decode_png(tf.io.read_file(path), channels=1)
    return augment(image, label)


def dataset(workload, png_root):
    if workload == "augment":
        images, labels = fashion_mnist.load("train")
        ds = tf.data.Dataset.from_tensor_slices((images[..., None], labels.astype("int32")))
        ds = ds.map(augment, num_parallel_calls=AUTOTUNE)
    else:
        classes = sorted(d for d in os.listdir(png_root) if not d.startswith("."))
        paths, labels = [], []
        for c, name in enumerate(classes):
            files = sorted(os.listdir(os.path.join(png_root, name)))
            paths += [os.path.join(png_root, name, f) for f in files]
            labels += [c] * len(files)
        ds = tf.data.Dataset.from_tensor_slices((paths, labels))
        ds = ds.map(decode, num_parallel_calls=AUTOTUNE)
    return ds.batch(128).prefetch(AUTOTUNE)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", choices=["augment", "decode"], required=True)
    p.add_argument("--png-root")
    a = p.parse_args()
    ds = dataset(a.workload, a.png_root)
    for _ in ds.take(20):  # warm-up: tracing and autotuning start
        pass
    start = time.perf_counter()
    n = 0
    for images, _ in ds:
        n += int(images.shape[0])
    seconds = time.perf_counter() - start
    print(json.dumps({"samples": n, "seconds": seconds, "samples_per_s": n / seconds}))


if __name__ == "__main__":
    main()
