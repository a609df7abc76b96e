"""LiteRT (ai-edge-litert, the TensorFlow Lite runtime) running an int8 .tflite over the 10,000 Fashion-MNIST test
images: num_threads 2, the input resized to batch 256 (and one more interpreter for the last, partial batch), the
float images quantized once with the input tensor's scale and zero point (the file's interface; not timed). One
warm-up pass, then the median of --repeat timed passes. Prints one JSON line; --predictions writes the top-1 classes
as little-endian int32."""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pipeline"))
import fashion_mnist  # noqa: E402
import numpy as np  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402


def quantize(images, detail):
    """TFLite's QUANTIZE: round half away from zero, add the zero point, saturate."""
    dtype = np.dtype(detail["dtype"]).type
    if dtype == np.float32:
        return images
    scale, zero_point = detail["quantization"]
    scaled = images / np.float32(scale)
    q = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) + zero_point
    return np.clip(q, np.iinfo(dtype).min, np.iinfo(dtype).max).astype(dtype)


def prepared_interpreter(model, threads, batch):
    interpreter = Interpreter(model_path=model, num_threads=threads)
    detail = interpreter.get_input_details()[0]
    interpreter.resize_tensor_input(detail["index"], [batch] + list(detail["shape"][1:]), strict=False)
    interpreter.allocate_tensors()
    return interpreter, detail["index"], interpreter.get_output_details()[0]["index"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--predictions", help="write the top-1 classes here (int32, little-endian)")
    a = p.parse_args()
    xt, yt = fashion_mnist.load("test")
    probe = Interpreter(model_path=a.model)
    inputs = probe.get_input_details()
    if len(inputs) != 1 or len(probe.get_output_details()) != 1:
        sys.exit(f"litert_peer: {a.model}: expected one input and one output")
    images = quantize((xt[..., None] / 255.0).astype("float32"), inputs[0])
    batches = [images[i:i + a.batch] for i in range(0, len(images), a.batch)]
    interpreters = {len(b): None for b in batches}
    for size in interpreters:
        interpreters[size] = prepared_interpreter(a.model, a.threads, size)

    def run_pass():
        classes = []
        for b in batches:
            interpreter, input_index, output_index = interpreters[len(b)]
            interpreter.set_tensor(input_index, b)
            interpreter.invoke()
            classes.append(interpreter.get_tensor(output_index).reshape(len(b), -1).argmax(1))
        return np.concatenate(classes)

    classes, seconds = fashion_mnist.timed_passes(run_pass, a.repeat)
    if a.predictions:
        classes.astype("<i4").tofile(a.predictions)
    detail = inputs[0]
    print(json.dumps({"samples_per_s": len(xt) / statistics.median(seconds),
                      "runs": [round(len(xt) / s, 1) for s in seconds],
                      "accuracy": float((classes == yt).mean()),
                      "input": {"dtype": np.dtype(detail["dtype"]).name, "scale": float(detail["quantization"][0]),
                                "zero_point": int(detail["quantization"][1])},
                      "file_bytes": os.path.getsize(a.model)}))


if __name__ == "__main__":
    main()
