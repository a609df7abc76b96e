"""Builds the Keras model a ramjet graph IR describes, layer for layer with Keras's own layers (and their weight
layouts), so that ramjet's weights load into it unchanged; optionally runs it on inputs and writes its outputs.

  keras_from_ir.py --case DIR

DIR/case.json: {"ir": <graph IR>, "params": {name: {"file", "shape"}}, "inputs": {name: {"file", "shape",
"dtype"}}, "output": FILE}; every file raw little-endian float32 (int32 for int32 inputs), relative to DIR. Writes the
model's first output as raw float32 to DIR/FILE. Run with the venv's python (needs TensorFlow / Keras 3).
"""
import argparse
import itertools
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # plain float32 kernels: the reference, not the peer
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers, ops  # noqa: E402


class PositionEmbedding(layers.Layer):
    """ramjet's position_embedding: Keras Hub's PositionEmbedding added to its input, in one layer."""

    def __init__(self, sequence_length, **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = sequence_length

    def build(self, shape):
        self.embeddings = self.add_weight(name="embeddings", shape=(self.sequence_length, shape[-1]))

    def call(self, x):
        return x + self.embeddings[: ops.shape(x)[1]]


class MatMul(layers.Layer):
    def __init__(self, transpose_a, transpose_b, **kwargs):
        super().__init__(**kwargs)
        self.ta, self.tb = transpose_a, transpose_b

    def call(self, a, b):
        if self.ta:
            a = ops.swapaxes(a, -1, -2)
        if self.tb:
            b = ops.swapaxes(b, -1, -2)
        return ops.matmul(a, b)


class DepthToSpace(layers.Layer):
    """tf.nn.depth_to_space (NHWC, DCR), which Keras has no layer for."""

    def __init__(self, block_size, **kwargs):
        super().__init__(**kwargs)
        self.block_size = block_size

    def call(self, x):
        import tensorflow as tf
        return tf.nn.depth_to_space(x, self.block_size)


def activation(name, attrs):
    if name == "leaky_relu":
        return layers.LeakyReLU(negative_slope=attrs.get("negative_slope", 0.2))
    if name == "elu":
        return layers.ELU(alpha=attrs.get("alpha", 1.0))
    return layers.Activation({"linear": "linear", "gelu": keras.activations.gelu}.get(name, name))


def fused(name):
    # A fused activation as a Keras activation function (gelu: the exact, erf form, as ramjet computes it).
    return {"gelu": lambda x: keras.activations.gelu(x, approximate=False)}.get(name, name)


def transpose_padding(a, in_hw, out_hw):
    """Keras Conv2DTranspose's padding and output_padding that give the IR's output size and [top, bottom, left,
    right] padding (as ramjet's rule derives them from Keras's)."""
    k, s = a["kernel"], a["strides"]
    choices = [None] + list(itertools.product(range(s[0]), range(s[1])))
    for padding in ("valid", "same"):
        for extra in choices:
            out, pads = [], []
            for i in range(2):
                same_pad = k[i] // 2 if padding == "same" else 0
                if extra is not None:
                    o = (in_hw[i] - 1) * s[i] + k[i] - 2 * same_pad + extra[i]
                else:
                    o = in_hw[i] * s[i] + max(k[i] - s[i], 0) if padding == "valid" else in_hw[i] * s[i]
                full = (in_hw[i] - 1) * s[i] + k[i]
                before = max(full - o, 0) // 2 if padding == "same" else 0
                out.append(o)
                pads += [before, full - before - o]
            if out == list(out_hw) and pads == a["padding"]:
                return padding, extra
    raise SystemExit(f"keras_from_ir.py: no Keras Conv2DTranspose gives padding {a['padding']}")


def keras_padding(pads, in_hw, kernel, strides, dilation=(1, 1)):
    """"valid" or "same" when Keras's rule gives the IR's [top, bottom, left, right] padding, else None."""
    if list(pads) == [0, 0, 0, 0]:
        return "valid"
    same = []
    for i in range(2):
        extent = (kernel[i] - 1) * dilation[i] + 1
        out = -(-in_hw[i] // strides[i])
        total = max((out - 1) * strides[i] + extent - in_hw[i], 0)
        same += [total // 2, total - total // 2]
    return "same" if same == list(pads) else None


def build(ir):
    values, weights = {}, {}  # name -> tensor; layer -> [param names in Keras's weight order]
    inputs = []
    for spec in ir["inputs"]:
        t = keras.Input(shape=tuple(spec["shape"]), dtype=spec.get("dtype", "float32"), name=spec["name"])
        values[spec["name"]] = t
        inputs.append(t)
    for node in ir["nodes"]:
        op, a, name = node["op"], node.get("attrs", {}), node["name"]
        p = node.get("params", {})
        x = [values[i] for i in node["inputs"]]
        if op == "dense":
            layer = layers.Dense(a["units"], activation=fused(a.get("activation", "linear")),
                                 use_bias=a.get("use_bias", True), name=name)
            out = layer(x[0])
            weights[name] = [p["kernel"]] + ([p["bias"]] if "bias" in p else [])
        elif op == "embedding":
            layer = layers.Embedding(a["input_dim"], a["output_dim"], name=name)
            out = layer(x[0])
            weights[name] = [p["embeddings"]]
        elif op == "position_embedding":
            layer = PositionEmbedding(a["sequence_length"], name=name)
            out = layer(x[0])
            weights[name] = [p["embeddings"]]
        elif op == "layer_norm":
            layer = layers.LayerNormalization(epsilon=a["epsilon"], center="beta" in p, scale="gamma" in p, name=name)
            out = layer(x[0])
            weights[name] = [p[r] for r in ("gamma", "beta") if r in p]
        elif op == "rms_norm":
            layer = layers.RMSNormalization(epsilon=a["epsilon"], name=name)
            out = layer(x[0])
            weights[name] = [p["scale"]]
        elif op == "multi_head_attention":
            layer = layers.MultiHeadAttention(a["num_heads"], a["key_dim"], value_dim=a["value_dim"],
                                              dropout=a.get("dropout", 0.0), use_bias=a.get("use_bias", True),
                                              output_shape=a["output_shape"], name=name)
            q = x[0]
            v = x[1] if len(x) > 1 else q
            k = x[2] if len(x) > 2 else v
            out = layer(q, v, key=k, use_causal_mask=a.get("use_causal_mask", False))
            order = []
            for role in ("query", "key", "value", "attention_output"):
                order.append(p[role + "/kernel"])
                if role + "/bias" in p:
                    order.append(p[role + "/bias"])
            weights[name] = order
        elif op == "matmul":
            out = MatMul(a.get("transpose_a", False), a.get("transpose_b", False), name=name)(x[0], x[1])
        elif op == "add":
            out = layers.Add(name=name)(x)
        elif op == "multiply":
            out = layers.Multiply(name=name)(x)
        elif op == "subtract":
            out = layers.Subtract(name=name)(x)
        elif op == "concat":
            # The IR counts the axis from the end (-1 the last), as Keras's negative axes do.
            out = layers.Concatenate(axis=a.get("axis", -1), name=name)(x)
        elif op == "zero_padding2d":
            t, b, l, r = a["padding"]
            out = layers.ZeroPadding2D(((t, b), (l, r)), name=name)(x[0])
        elif op == "cropping2d":
            t, b, l, r = a["cropping"]
            out = layers.Cropping2D(((t, b), (l, r)), name=name)(x[0])
        elif op == "depth_to_space":
            out = DepthToSpace(a["block_size"], name=name)(x[0])
        elif op == "transpose":
            out = layers.Permute([d + 1 for d in a["perm"]], name=name)(x[0])
        elif op == "activation":
            layer = activation(a["activation"], a)
            layer.name = name
            out = layer(x[0])
        elif op == "softmax":
            out = layers.Softmax(name=name)(x[0])
        elif op == "dropout":
            out = layers.Dropout(a["rate"], name=name)(x[0])
        elif op == "conv1d":
            pad = a["padding"]
            k, d = a["kernel"], a["dilation"]
            padding = "valid" if pad == [0, 0] else ("causal" if pad[1] == 0 and pad[0] > 0 else "same")
            layer = layers.Conv1D(a["filters"], k, strides=a["strides"], padding=padding, dilation_rate=d,
                                  groups=a["groups"], activation=fused(a.get("activation", "linear")),
                                  use_bias=a.get("use_bias", True), name=name)
            out = layer(x[0])
            weights[name] = [p["kernel"]] + ([p["bias"]] if "bias" in p else [])
        elif op == "conv2d":
            if a.get("groups", 1) != 1:
                raise SystemExit(f"keras_from_ir.py: {name}: grouped or depthwise conv2d is not mapped")
            k, st, d = a["kernel"], a["strides"], a.get("dilation", [1, 1])
            padding = keras_padding(a["padding"], x[0].shape[1:3], k, st, d)
            source = x[0]
            if padding is None:  # explicit padding Keras's rules do not produce: pad, then a valid convolution
                t, b, l, r = a["padding"]
                source, padding = layers.ZeroPadding2D(((t, b), (l, r)), name=name + "_pad")(source), "valid"
            layer = layers.Conv2D(a["filters"], k, strides=st, padding=padding, dilation_rate=d,
                                  activation=fused(a.get("activation", "linear")), use_bias=a.get("use_bias", True),
                                  name=name)
            out = layer(source)
            weights[name] = [p["kernel"]] + ([p["bias"]] if "bias" in p else [])
        elif op in ("max_pool", "avg_pool"):
            padding = keras_padding(a["padding"], x[0].shape[1:3], a["pool"], a["strides"])
            if padding is None:
                raise SystemExit(f"keras_from_ir.py: {name}: padding {a['padding']} has no Keras pooling form")
            cls = layers.MaxPooling2D if op == "max_pool" else layers.AveragePooling2D
            out = cls(a["pool"], strides=a["strides"], padding=padding, name=name)(x[0])
        elif op in ("global_avg_pool", "global_max_pool"):
            rank = len(x[0].shape) - 1
            cls = {("global_avg_pool", 2): layers.GlobalAveragePooling1D, ("global_avg_pool", 3): layers.GlobalAveragePooling2D,
                   ("global_max_pool", 2): layers.GlobalMaxPooling1D, ("global_max_pool", 3): layers.GlobalMaxPooling2D}
            out = cls[(op, rank)](name=name)(x[0])
        elif op == "conv2d_transpose":
            padding, extra = transpose_padding(a, x[0].shape[1:3], node["shape"][:2])
            layer = layers.Conv2DTranspose(a["filters"], a["kernel"], strides=a["strides"], padding=padding,
                                           output_padding=extra, activation=fused(a.get("activation", "linear")),
                                           use_bias=a.get("use_bias", True), name=name)
            out = layer(x[0])
            weights[name] = [p["kernel"]] + ([p["bias"]] if "bias" in p else [])
        elif op == "resize":  # UpSampling2D when the layer was one (it kept its size), else Resizing
            if "size" in a:
                out = layers.UpSampling2D(tuple(a["size"]), interpolation=a["interpolation"], name=name)(x[0])
            else:
                out = layers.Resizing(a["height"], a["width"], interpolation=a["interpolation"], name=name)(x[0])
        elif op == "flatten":
            out = layers.Flatten(name=name)(x[0])
        elif op == "reshape":
            out = layers.Reshape(tuple(a["shape"]), name=name)(x[0])
        else:
            raise SystemExit(f"keras_from_ir.py: no Keras layer for op '{op}' (node '{name}')")
        values[name] = out
    model = keras.Model(inputs, [values[o] for o in ir["outputs"]])
    return model, weights


def load(case_dir, spec, dtype="float32"):
    return np.fromfile(os.path.join(case_dir, spec["file"]), dtype=spec.get("dtype", dtype)).reshape(spec["shape"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    a = p.parse_args()
    with open(os.path.join(a.case, "case.json")) as f:
        case = json.load(f)
    model, weights = build(case["ir"])
    for layer_name, names in weights.items():
        layer = model.get_layer(layer_name)
        layer.set_weights([load(a.case, case["params"][n]).reshape(w.shape) for n, w in zip(names, layer.get_weights())])
    feeds = {name: load(a.case, spec) for name, spec in case["inputs"].items()}
    out = model(feeds, training=False)
    if isinstance(out, (list, tuple)):
        out = out[0]
    np.asarray(out, dtype="float32").tofile(os.path.join(a.case, case["output"]))


if __name__ == "__main__":
    main()
