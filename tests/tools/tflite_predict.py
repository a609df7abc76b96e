"""Runs a .tflite image classifier over IDX test images with an independent reader and writes its top-1 classes.

  tflite_predict.py --engine litert|armnn --model FILE --images IDX[.gz] [--labels IDX[.gz]] [--limit N]
                    --out PRED.bin [--threads T] [--batch B]

Images are read as uint8, scaled to float32 in [0, 1] and laid out NHWC [N, H, W, 1]. An int8/uint8 model input
is quantized with the input tensor's own scale and zero point; a float32 input is fed as it is. PRED.bin gets one
little-endian int32 class per image, in file order, and stdout one JSON line:
{"engine": ..., "count": N, "accuracy": ... (null without --labels), "seconds": ..., "input": {...}}.

litert (ai-edge-litert, the TensorFlow Lite runtime) runs with the venv's python; armnn (Debian's python3-pyarmnn,
Arm NN 20.08 TfLiteParser on the CpuRef backend, one image per call) with /usr/bin/python3. Only numpy is needed
besides the engine, so neither TensorFlow nor torch is imported. A failure exits 1 with a message naming the file
(3 when the engine itself is missing: ai_edge_litert or pyarmnn not importable, or Arm NN without its CpuRef
backend); Arm NN aborts the process on some files (per-channel FullyConnected weights, for one), so callers
should run this in a subprocess.
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np

IDX_IMAGES_MAGIC = 0x00000803  # unsigned byte, 3 dimensions
IDX_LABELS_MAGIC = 0x00000801  # unsigned byte, 1 dimension


class ToolError(Exception):
    """A failure to report as one line on stderr, with exit status 1."""
    exit_status = 1


class EngineUnavailable(ToolError):
    """The engine itself is missing here (not the model's fault): exit status 3, so a test can skip."""
    exit_status = 3


def read_idx(path, magic):
    """The uint8 array in an IDX file (raw or gzipped), checked against the header's magic and dimensions."""
    if not os.path.isfile(path):
        raise ToolError(f"{path}: no such file")
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    try:
        with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise ToolError(f"{path}: cannot read: {e}") from e
    if len(data) < 4 or int.from_bytes(data[:4], "big") != magic:
        raise ToolError(f"{path}: not an IDX file with magic 0x{magic:08x}")
    rank = magic & 0xFF
    header = 4 + 4 * rank
    if len(data) < header:
        raise ToolError(f"{path}: truncated IDX header")
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    expected = header + int(np.prod(dims))
    if len(data) != expected:
        raise ToolError(f"{path}: IDX header says {dims} ({expected} bytes) but the file has {len(data)} bytes")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def quantize(images, dtype, scale, zero_point):
    """float32 → int8/uint8 as TFLite's QUANTIZE does: round half away from zero, add the zero point, saturate."""
    info = np.iinfo(dtype)
    scaled = images / np.float32(scale)
    q = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)


def model_input(images, dtype, scale, zero_point):
    if dtype == np.float32:
        return images
    if dtype in (np.int8, np.uint8):
        if not scale:
            raise ToolError(f"quantized {np.dtype(dtype).name} input has no scale")
        return quantize(images, dtype, scale, zero_point)
    raise ToolError(f"unsupported input dtype {np.dtype(dtype).name} (expected float32, int8 or uint8)")


class LiteRT:
    """ai-edge-litert's Interpreter, resized once per batch size in use (full batches and the remainder). A file
    whose graph cannot take another batch (a constant RESHAPE to batch 1, say) runs at its own batch instead."""

    def __init__(self, model, threads):
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as e:
            raise EngineUnavailable(f"ai_edge_litert is not importable with {sys.executable}: {e}") from e
        self.model = model
        self._make = lambda: Interpreter(model_path=model, num_threads=threads)
        self._by_batch = {}
        try:
            probe = self._make()
        except (ValueError, RuntimeError) as e:
            raise ToolError(f"{model}: LiteRT cannot load it: {e}") from e
        inputs, outputs = probe.get_input_details(), probe.get_output_details()
        if len(inputs) != 1 or len(outputs) != 1:
            raise ToolError(f"{model}: expected one input and one output, got {len(inputs)} and {len(outputs)}")
        self.input_dtype = np.dtype(inputs[0]["dtype"]).type
        self.input_scale, self.input_zero_point = inputs[0]["quantization"]
        self.file_batch = int(inputs[0]["shape"][0])
        self._sample_shape = [int(d) for d in inputs[0]["shape"][1:]]
        self.fixed_batch = False

    def _interpreter(self, batch):
        if batch not in self._by_batch:
            try:
                interpreter = self._make()
                index = interpreter.get_input_details()[0]["index"]
                if batch != self.file_batch:
                    interpreter.resize_tensor_input(index, [batch] + self._sample_shape, strict=False)
                interpreter.allocate_tensors()
            except (ValueError, RuntimeError) as e:
                if batch == self.file_batch:
                    raise ToolError(f"{self.model}: LiteRT cannot prepare it: {e}") from e
                print(f"tflite_predict: {self.model}: LiteRT cannot run it at batch {batch} ({e}); "
                      f"running at the file's batch {self.file_batch}", file=sys.stderr)
                self.fixed_batch = True
                return None
            self._by_batch[batch] = (interpreter, index, interpreter.get_output_details()[0]["index"])
        return self._by_batch[batch]

    def run(self, batch):
        prepared = None if self.fixed_batch else self._interpreter(len(batch))
        if prepared is None:
            step = self.file_batch
            if len(batch) % step:
                raise ToolError(f"{self.model}: {len(batch)} images do not split into the file's batch {step}")
            return np.concatenate([self._invoke(self._interpreter(step), batch[i:i + step])
                                   for i in range(0, len(batch), step)])
        return self._invoke(prepared, batch)

    @staticmethod
    def _invoke(prepared, batch):
        interpreter, input_index, output_index = prepared
        interpreter.set_tensor(input_index, batch)
        try:
            interpreter.invoke()
        except RuntimeError as e:
            raise ToolError(f"LiteRT inference failed: {e}") from e
        return interpreter.get_tensor(output_index).reshape(len(batch), -1)


class ArmNN:
    """Arm NN's TfLiteParser and CpuRef backend: the file's static input shape (batch 1), one image per call."""

    def __init__(self, model):
        try:
            import pyarmnn as ann
        except ImportError as e:
            raise EngineUnavailable(f"pyarmnn is not importable with {sys.executable} (Debian's python3-pyarmnn runs "
                            f"with /usr/bin/python3): {e}") from e
        self._ann = ann
        try:
            parser = ann.ITfLiteParser()
            network = parser.CreateNetworkFromBinaryFile(model)
            inputs = parser.GetSubgraphInputTensorNames(0)
            outputs = parser.GetSubgraphOutputTensorNames(0)
            if len(inputs) != 1 or len(outputs) != 1:
                raise ToolError(f"{model}: expected one input and one output, got {len(inputs)} and {len(outputs)}")
            self._input_binding = parser.GetNetworkInputBindingInfo(0, inputs[0])
            self._output_binding = parser.GetNetworkOutputBindingInfo(0, outputs[0])
            self._runtime = ann.IRuntime(ann.CreationOptions())
            optimized, messages = ann.Optimize(network, [ann.BackendId("CpuRef")], self._runtime.GetDeviceSpec(),
                                               ann.OptimizerOptions())
            self._network_id, _ = self._runtime.LoadNetwork(optimized)
        except RuntimeError as e:  # pyarmnn turns armnn::Exception into RuntimeError
            if "Current platform provides []" in str(e):
                raise EngineUnavailable(f"Arm NN has no CpuRef backend here (Debian's libarmnn-cpuref-backend22): "
                                        f"{e}") from e
            raise ToolError(f"{model}: Arm NN cannot load it: {e}") from e
        info = self._input_binding[1]
        types = {ann.DataType_Float32: np.float32, ann.DataType_QAsymmS8: np.int8, ann.DataType_QSymmS8: np.int8,
                 ann.DataType_QAsymmU8: np.uint8}
        if info.GetDataType() not in types:
            raise ToolError(f"{model}: unsupported Arm NN input data type {info.GetDataType()}")
        self.input_dtype = types[info.GetDataType()]
        self.input_scale, self.input_zero_point = info.GetQuantizationScale(), info.GetQuantizationOffset()
        shape = info.GetShape()
        self._input_shape = [shape[i] for i in range(shape.GetNumDimensions())]
        if self._input_shape[0] != 1:
            raise ToolError(f"{model}: Arm NN needs a static batch of 1, the input shape is {self._input_shape}")
        self.model = model

    def run(self, batch):
        ann = self._ann
        rows = []
        for image in batch:
            inputs = ann.make_input_tensors([self._input_binding], [np.ascontiguousarray(image[None])])
            outputs = ann.make_output_tensors([self._output_binding])
            try:
                self._runtime.EnqueueWorkload(self._network_id, inputs, outputs)
            except RuntimeError as e:
                raise ToolError(f"{self.model}: Arm NN inference failed: {e}") from e
            rows.append(ann.workload_tensors_to_ndarray(outputs)[0].reshape(-1))
        return np.stack(rows)


def predict(engine, images, batch):
    """Top-1 class per image. The raw (possibly quantized) outputs are compared: dequantizing with a positive scale
    keeps their order."""
    classes = np.empty(len(images), dtype="<i4")
    for start in range(0, len(images), batch):
        chunk = model_input(images[start:start + batch], engine.input_dtype, engine.input_scale,
                            engine.input_zero_point)
        classes[start:start + len(chunk)] = engine.run(chunk).argmax(axis=1)
    return classes


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engine", choices=["litert", "armnn"], required=True)
    p.add_argument("--model", required=True, help=".tflite file")
    p.add_argument("--images", required=True, help="IDX images (uint8 [N, H, W]), raw or gzipped")
    p.add_argument("--labels", help="IDX labels; with them the accuracy is reported")
    p.add_argument("--limit", type=int, help="only the first N images")
    p.add_argument("--out", required=True, help="where to write the int32 little-endian predictions")
    p.add_argument("--threads", type=int, default=2, help="LiteRT threads")
    p.add_argument("--batch", type=int, default=256, help="LiteRT batch (Arm NN always runs batch 1)")
    a = p.parse_args()
    try:
        if not os.path.isfile(a.model):
            raise ToolError(f"{a.model}: no such file")
        images = read_idx(a.images, IDX_IMAGES_MAGIC)
        labels = read_idx(a.labels, IDX_LABELS_MAGIC) if a.labels else None
        if labels is not None and len(labels) != len(images):
            raise ToolError(f"{a.labels}: {len(labels)} labels for {len(images)} images in {a.images}")
        if a.limit is not None:
            images = images[:a.limit]
            labels = labels[:a.limit] if labels is not None else None
        images = (images.astype(np.float32) / np.float32(255))[..., None]
        engine = LiteRT(a.model, a.threads) if a.engine == "litert" else ArmNN(a.model)
        start = time.perf_counter()
        classes = predict(engine, images, a.batch)
        seconds = time.perf_counter() - start
        try:
            classes.tofile(a.out)
        except OSError as e:
            raise ToolError(f"{a.out}: cannot write: {e}") from e
    except ToolError as e:
        print(f"tflite_predict: {e}", file=sys.stderr)
        sys.exit(e.exit_status)
    accuracy = float((classes == labels).mean()) if labels is not None and len(labels) else None
    print(json.dumps({"engine": a.engine, "count": len(classes), "accuracy": accuracy, "seconds": round(seconds, 3),
                      "input": {"dtype": np.dtype(engine.input_dtype).name, "scale": float(engine.input_scale),
                                "zero_point": int(engine.input_zero_point)}}))


if __name__ == "__main__":
    main()
