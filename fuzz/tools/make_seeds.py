#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets whose formats Python's standard library can produce: IDX (raw and
gzipped), TFRecord with tf.train.Example records, safetensors checkpoints, the quantized graph JSON, and pipeline
manifests. PNG and JPEG seeds come from make_image_seeds.cpp (libpng/libjpeg); plugin manifests are copied from a
build tree. Run from the repository root: python3 fuzz/tools/make_seeds.py. Seeds are small valid files: the
fuzzer mutates from the paths a real file takes."""
import gzip
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus")


def write(target, name, data):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# --- .npy -------------------------------------------------------------------------------------------------------
def npy(descr, shape, payload, version=1, fortran="False"):
    dims = f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(d) for d in shape) + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {dims}, }}"
    preamble = 10 if version == 1 else 12
    header += " " * ((-(preamble + len(header) + 1)) % 64) + "\n"
    size = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + payload


def npy_seeds():
    write("npy", "u8_3d.npy", npy("|u1", [2, 2, 3], bytes(range(12))))
    write("npy", "i8_1d.npy", npy("<i8", [3], struct.pack("<3q", 1, -2, 3)))
    write("npy", "f8_2d_v2.npy", npy("<f8", [2, 2], struct.pack("<4d", 0.5, 1.5, -2.0, 1e30), version=2))
    write("npy", "f4_2d_v3.npy", npy("<f4", [1, 3], struct.pack("<3f", 1, 2, 3), version=3))
    write("npy", "i4_empty.npy", npy("<i4", [0, 4], b""))


# --- IDX --------------------------------------------------------------------------------------------------------
def idx(code, dims, payload):
    return bytes([0, 0, code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


def idx_seeds():
    images = idx(0x08, [3, 4, 4], bytes(range(48)))
    labels = idx(0x08, [3], bytes([1, 0, 2]))
    write("idx_gzip", "images_u8.idx", images)
    write("idx_gzip", "labels_u8.idx", labels)
    write("idx_gzip", "images_u8.idx.gz", gzip.compress(images, mtime=0))
    write("idx_gzip", "labels_u8.idx.gz", gzip.compress(labels, mtime=0))
    write("idx_gzip", "int16_2d.idx", idx(0x0B, [2, 3], struct.pack(">6h", 1, -2, 3, -4, 5, -6)))
    write("idx_gzip", "int32_1d.idx", idx(0x0C, [2], struct.pack(">2i", 7, -9)))
    write("idx_gzip", "float32_2d.idx.gz", gzip.compress(idx(0x0D, [2, 2], struct.pack(">4f", 0.5, -1, 2, 3)), mtime=0))
    write("idx_gzip", "float64_4d.idx", idx(0x0E, [1, 1, 2, 1], struct.pack(">2d", 1.25, -2.5)))
    write("idx_gzip", "int8_empty.idx", idx(0x09, [0, 5], b""))


# --- TFRecord and tf.train.Example -------------------------------------------------------------------------------
def crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = crc32c_table()


def masked_crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(number, payload):  # length-delimited
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def bytes_feature(*values):
    return field(1, b"".join(field(1, v) for v in values))


def float_feature(*values):
    return field(2, field(1, b"".join(struct.pack("<f", v) for v in values)))


def int64_feature(*values):
    return field(3, field(1, b"".join(varint(v) for v in values)))


def example(features):
    entries = b"".join(field(1, field(1, name.encode()) + field(2, value)) for name, value in features.items())
    return field(1, entries)


def record(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))


def tfrecord_seeds():
    # Every record holds the features of all three declarations the target chooses between (see tfrecord.cpp).
    def full(i):
        return example({"image": bytes_feature(bytes([i, i + 1, i + 2, i + 3])), "label": int64_feature(i),
                        "x": float_feature(0.5, -1.0, 2.0, float(i)), "y": int64_feature(1, 2, 3, 200 + i),
                        "raw": bytes_feature(struct.pack("<4h", 1, -1, 300, -300))})
    write("tfrecord", "three_records.tfrecord", b"".join(record(full(i)) for i in range(3)))
    write("tfrecord", "one_record.tfrecord", record(full(7)))
    write("tfrecord", "empty_features.tfrecord", record(example({})))
    write("tfrecord", "empty_record.tfrecord", record(b""))
    write("tfrecord", "wrong_kind.tfrecord", record(example({"image": int64_feature(1), "label": bytes_feature(b"x"),
                                                             "x": int64_feature(1), "raw": float_feature(1.0)})))
    write("tfrecord", "empty.tfrecord", b"")


# --- safetensors checkpoints -----------------------------------------------------------------------------------
def safetensors(tensors, metadata):
    header, data = {}, b""
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def checkpoint_seeds():
    meta = {"format": "ramjet-checkpoint-1", "step": "12", "pipeline": json.dumps({"epoch": 1, "position": 4}),
            "trainer": json.dumps({"lr_scale": 1.0, "history": [{"loss": 0.5}]})}
    tensors = {"param/dense/kernel": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
               "param/dense/bias": ("F32", [2], struct.pack("<2f", 0, 1)),
               "optimizer/dense/kernel/m": ("F32", [2, 2], bytes(16)),
               "best/dense/bias": ("F32", [2], bytes(8))}
    write("safetensors", "checkpoint.safetensors", safetensors(tensors, meta))
    write("safetensors", "dtypes.safetensors", safetensors({
        "a": ("I8", [3], b"\x01\x02\x03"), "b": ("U8", [1, 1], b"\x04"), "c": ("I16", [1], b"\x05\x00"),
        "d": ("I32", [1], b"\x06\x00\x00\x00"), "e": ("I64", [1], bytes(8)), "f": ("F64", [1], bytes(8)),
        "g": ("BF16", [2], bytes(4)), "h": ("F16", [1], bytes(2)), "i": ("BOOL", [1], b"\x01"),
        "scalar": ("F32", [], bytes(4)), "empty": ("F32", [0, 3], b"")}, {"note": "not a checkpoint"}))
    write("safetensors", "no_metadata.safetensors", safetensors({"x": ("F32", [1], bytes(4))}, {}))


# --- the quantized graph ---------------------------------------------------------------------------------------
def quant(scale, zero_point):
    return {"dtype": "int8", "scale": [scale], "zero_point": [zero_point]}


def qgraph_seeds():
    conv_q = quant(0.02, -128)
    tiny = {
        "inputs": [{"name": "image", "shape": [4, 4, 1], "dtype": "float32"}],
        "nodes": [
            {"name": "conv2d", "op": "conv2d", "inputs": ["image"], "shape": [4, 4, 2],
             "attrs": {"filters": 2, "kernel": [3, 3], "strides": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1],
                       "groups": 1, "use_bias": True, "activation": "relu"},
             "params": {"kernel": "conv2d/kernel", "bias": "conv2d/bias"}},
            {"name": "max_pool", "op": "max_pool", "inputs": ["conv2d"], "shape": [2, 2, 2],
             "attrs": {"pool": [2, 2], "strides": [2, 2], "padding": [0, 0, 0, 0]}},
            {"name": "flatten", "op": "flatten", "inputs": ["max_pool"], "shape": [8], "attrs": {}},
            {"name": "dense", "op": "dense", "inputs": ["flatten"], "shape": [3],
             "attrs": {"units": 3, "use_bias": True, "activation": "linear"},
             "params": {"kernel": "dense/kernel", "bias": "dense/bias"}}],
        "outputs": ["dense"],
        "params": {"conv2d/kernel": {"shape": [3, 3, 1, 2], "dtype": "int8"}, "conv2d/bias": {"shape": [2], "dtype": "int32"},
                   "dense/kernel": {"shape": [8, 3], "dtype": "int8"}, "dense/bias": {"shape": [3], "dtype": "int32"}},
        "mode": "full_integer",
        "quantization": {
            "version": 1, "mode": "full_integer", "input_type": "int8", "output_type": "int8",
            "calibration": {"method": "minmax", "batches": 1},
            "tensors": {"image": quant(1 / 255, -128), "conv2d": conv_q, "max_pool": conv_q, "flatten": conv_q,
                        "dense": quant(0.05, 0),
                        "conv2d/kernel": {"dtype": "int8", "scale": [0.004, 0.006], "zero_point": [0, 0], "axis": 3},
                        "conv2d/bias": {"dtype": "int32", "scale": [1.5e-5, 2.3e-5], "zero_point": [0, 0], "axis": 0},
                        "dense/kernel": {"dtype": "int8", "scale": [0.01], "zero_point": [0]},
                        "dense/bias": {"dtype": "int32", "scale": [0.0002], "zero_point": [0]}}}}
    write("tflite_writer", "tiny_full_integer.json", json.dumps(tiny, indent=1))
    for interface in ("uint8", "float32"):
        g = json.loads(json.dumps(tiny))
        g["quantization"]["input_type"] = g["quantization"]["output_type"] = interface
        write("tflite_writer", f"tiny_{interface}_interface.json", json.dumps(g, indent=1))
    dyn = json.loads(json.dumps(tiny))
    dyn["mode"] = dyn["quantization"]["mode"] = "dynamic_range"
    dyn["quantization"]["input_type"] = dyn["quantization"]["output_type"] = "float32"
    dyn["params"]["conv2d/bias"]["dtype"] = dyn["params"]["dense/bias"]["dtype"] = "float32"
    for name in ("image", "conv2d", "max_pool", "flatten", "dense", "conv2d/bias", "dense/bias"):
        del dyn["quantization"]["tensors"][name]
    write("tflite_writer", "tiny_dynamic_range.json", json.dumps(dyn, indent=1))
    dw = {
        "inputs": [{"name": "x", "shape": [4, 4, 2], "dtype": "float32"}],
        "nodes": [
            {"name": "depthwise", "op": "conv2d", "inputs": ["x"], "shape": [4, 4, 2],
             "attrs": {"filters": 2, "kernel": [3, 3], "strides": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1],
                       "groups": 2, "use_bias": False, "activation": "relu6"},
             "params": {"kernel": "depthwise/kernel"}},
            {"name": "gap", "op": "global_avg_pool", "inputs": ["depthwise"], "shape": [2], "attrs": {}},
            {"name": "dense", "op": "dense", "inputs": ["gap"], "shape": [3],
             "attrs": {"units": 3, "use_bias": True, "activation": "linear"},
             "params": {"kernel": "dense/kernel", "bias": "dense/bias"}},
            {"name": "softmax", "op": "softmax", "inputs": ["dense"], "shape": [3], "attrs": {}}],
        "outputs": ["softmax"],
        "params": {"depthwise/kernel": {"shape": [3, 3, 1, 2], "dtype": "int8"}, "dense/kernel": {"shape": [2, 3], "dtype": "int8"},
                   "dense/bias": {"shape": [3], "dtype": "int32"}},
        "mode": "full_integer",
        "quantization": {
            "version": 1, "mode": "full_integer", "input_type": "int8", "output_type": "int8",
            "calibration": {"method": "minmax", "batches": 1},
            "tensors": {"x": quant(1 / 255, -128), "depthwise": quant(6 / 255, -128), "gap": quant(6 / 255, -128),
                        "dense": quant(8 / 255, 0), "softmax": quant(1 / 256, -128),
                        "depthwise/kernel": {"dtype": "int8", "scale": [0.002, 0.003], "zero_point": [0, 0], "axis": 3},
                        "dense/kernel": {"dtype": "int8", "scale": [0.01], "zero_point": [0]},
                        "dense/bias": {"dtype": "int32", "scale": [0.0002], "zero_point": [0]}}}}
    write("tflite_writer", "depthwise_softmax.json", json.dumps(dw, indent=1))


# --- pipeline manifests ----------------------------------------------------------------------------------------
def pipeline_seeds():
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
    for folder, name in (("fashion_mnist", "train.json"), ("fashion_mnist", "fast.json"),
                         ("fashion_mnist", "inspect.json"), ("plugin-template", "pipeline.json"),
                         ("plugin-template", "train.json")):
        with open(os.path.join(examples, folder, name), "rb") as f:
            write("pipeline_manifest", f"{folder}_{name}", f.read())
    layers = [{"type": "flatten"}, {"type": "dense", "units": 10}]
    loss = {"type": "sparse_softmax_cross_entropy", "labels": "label"}
    records = {
        "data": {"train": {"source": {"type": "tfrecord", "files": "train-*.tfrecord",
                                      "features": {"image": {"type": "bytes"},
                                                   "label": {"type": "int64", "shape": []}}},
                           "map": [{"type": "decode_image", "key": "image", "channels": 1},
                                   {"type": "resize", "key": "image", "size": [28, 28]},
                                   {"type": "cast", "key": "image", "dtype": "float32"}],
                           "batch": 32, "shuffle": 1000}},
        "model": {"input": {"image": [28, 28, 1]}, "layers": layers, "loss": loss},
        "train": {"backend": "cpu", "optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 1},
    }
    write("pipeline_manifest", "tfrecord_images.json", json.dumps(records, indent=1))
    folder = {"data": {"train": {"source": {"type": "image_folder", "root": "images", "channels": 3},
                                 "map": [{"type": "random_crop", "key": "image", "size": [24, 24], "padding": 2},
                                         {"type": "random_flip"}, {"type": "one_hot", "key": "label", "depth": 4}],
                                 "batch": 8}}}
    write("pipeline_manifest", "image_folder.json", json.dumps(folder, indent=1))
    synthetic = {"seed": 3, "data": {"train": {"source": {"type": "synthetic", "count": 64,
                                                          "tensors": {"x": {"shape": [4], "dtype": "float32"}}},
                                               "batch": 16}}}
    write("pipeline_manifest", "synthetic.json", json.dumps(synthetic, indent=1))

# --- plugin manifests (as ramjet_add_plugin writes them) -----------------------------------------------------------
def plugin_manifest_seeds():
    def manifest(name, provides, abi=(2, 2), version="0.1.0"):
        return json.dumps({"file_format_version": "1.0", "name": name, "version": version,
                           "abi": {"min": abi[0], "max": abi[1]}, "library": f"libramjet_{name}.so",
                           "provides": provides}, indent=2) + "\n"
    write("plugin_manifest", "stock_sources.json", manifest("stock_sources", {"data_source": ["idx", "synthetic"]}))
    write("plugin_manifest", "tflite.json", manifest("tflite", {"quantizer": ["int8"], "exporter": ["tflite"]}))
    write("plugin_manifest", "every_kind.json", manifest("all", {
        "data_source": ["a"], "transform": ["b", "c"], "precision_policy": ["d"], "strategy": ["e"],
        "quantizer": ["f"], "exporter": ["g"], "backend": ["h"]}, abi=(1, 3), version="1.2.3-rc.1"))


# --- dictionaries: the words each format is made of, so mutations reach past the first check --------------------
def dictionaries():
    folder = os.path.join(ROOT, "..", "dict")
    os.makedirs(folder, exist_ok=True)
    json_words = ['"{"', '"}"', '"["', '"]"', '":"', '","', '"\\""', '"true"', '"false"', '"null"', '"-1"', '"0"',
                  '"1e400"', '"18446744073709551616"', '"9223372036854775807"', '"-9223372036854775808"', '"0.5"',
                  '"\\\\u0000"', '"\\\\ud800"']
    def words(*keys):
        return json_words + [json.dumps(f'"{k}"') for k in keys]
    sets = {
        "pipeline_manifest": words("seed", "data", "train", "eval", "source", "type", "map", "cache", "memory",
                                   "shuffle", "batch", "prefetch", "parallelism", "model", "input", "layers", "loss",
                                   "labels", "units", "filters", "kernel", "strides", "padding", "pool", "activation",
                                   "relu", "softmax", "dense", "conv2d", "max_pool", "flatten", "dropout", "backend",
                                   "cpu", "precision", "float32", "mixed_bfloat16", "optimizer", "adam", "sgd",
                                   "learning_rate", "epochs", "steps", "checkpoint", "dir", "every_steps", "keep",
                                   "export", "quantizer", "int8", "format", "tflite", "path", "calibration", "batches",
                                   "method", "idx", "images", "num_classes", "tfrecord", "files", "features", "bytes",
                                   "int64", "float", "shape", "dtype", "image_folder", "root", "decode_image",
                                   "channels", "normalize", "scale", "resize", "size", "synthetic", "count", "tensors",
                                   "threads", "early_stopping", "schedule", "accumulate"),
        "plugin_manifest": words("file_format_version", "1.0", "2.0", "name", "version", "abi", "min", "max",
                                 "library", "provides", "data_source", "transform", "precision_policy", "strategy",
                                 "quantizer", "exporter", "backend", "../", "/"),
        "tflite_writer": words("inputs", "outputs", "nodes", "params", "name", "op", "attrs", "shape", "dtype",
                               "float32", "int8", "int32", "uint8", "mode", "full_integer", "dynamic_range",
                               "quantization", "version", "input_type", "output_type", "tensors", "scale",
                               "zero_point", "axis", "conv2d", "dense", "max_pool", "avg_pool", "global_avg_pool",
                               "flatten", "reshape", "softmax", "activation", "add", "batch_norm", "dropout", "relu",
                               "relu6", "sigmoid", "tanh", "linear", "filters", "kernel", "strides", "padding",
                               "dilation", "groups", "use_bias", "units", "pool", "bias"),
        "safetensors": words("__metadata__", "dtype", "shape", "data_offsets", "F32", "F64", "F16", "BF16", "I8",
                             "U8", "I16", "I32", "I64", "BOOL", "format", "ramjet-checkpoint-1", "step", "pipeline",
                             "trainer", "epoch", "position", "param/", "optimizer/", "best/"),
        "png": ['"\\x89PNG\\x0d\\x0a\\x1a\\x0a"', '"IHDR"', '"PLTE"', '"IDAT"', '"IEND"', '"tRNS"', '"gAMA"',
                '"sBIT"', '"iCCP"', '"zTXt"', '"tEXt"', '"iTXt"', '"pHYs"', '"acTL"', '"fcTL"', '"\\x00\\x00\\xff\\xff"',
                '"\\x7f\\xff\\xff\\xff"'],
        "npy": ['"\\x93NUMPY"', '"\'descr\'"', '"\'fortran_order\'"', '"\'shape\'"', '"True"', '"False"',
                '"\'<f4\'"', '"\'<f8\'"', '"\'<i4\'"', '"\'<i8\'"', '"\'|u1\'"', '"\'>f4\'"', '"\'|O\'"',
                '"(0,)"', '"18446744073709551615"', '"9223372036854775807"'],
        "jpeg": ['"\\xff\\xd8"', '"\\xff\\xd9"', '"\\xff\\xc0"', '"\\xff\\xc1"', '"\\xff\\xc2"',
                 '"\\xff\\xc4"', '"\\xff\\xcc"', '"\\xff\\xda"', '"\\xff\\xdb"', '"\\xff\\xdd"',
                 '"\\xff\\xe0"', '"\\xff\\xee"', '"\\xff\\xd0"', '"\\xff\\xfe"', '"Adobe"', '"JFIF\\x00"',
                 '"\\xff\\xff"'],
    }
    for target, entries in sets.items():
        with open(os.path.join(folder, f"{target}.dict"), "w") as f:
            f.write("# Written by fuzz/tools/make_seeds.py.\n" + "\n".join(entries) + "\n")


if __name__ == "__main__":
    plugin_manifest_seeds()
    dictionaries()
    idx_seeds()
    npy_seeds()
    tfrecord_seeds()
    checkpoint_seeds()
    qgraph_seeds()
    pipeline_seeds()
