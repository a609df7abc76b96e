"""The bench models as a Keras user writes them, the same architectures as ramjet's manifests (examples/
fashion_mnist/train.json for cnn, bench/train/models/{resnet,mobilenet}.json): padding "same", no convolution bias
before batch norm, BatchNormalization at its defaults (momentum 0.99, epsilon 1e-3). Shared by bench/train and
bench/infer so that training and inference measure the same networks.
"""
import tensorflow as tf

MODELS = ("cnn", "resnet", "mobilenet")
# Parameters as ramjet counts them (batch norm's moving statistics included, as Keras's count_params does).
PARAMS = {"cnn": 225_034, "resnet": 310_570, "mobilenet": 139_146}


def cnn(layers, x):
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(64, 3, activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    return layers.Dense(128, activation="relu")(x)


def conv_bn(layers, x, filters, kernel, strides=1):
    x = layers.Conv2D(filters, kernel, strides=strides, padding="same", use_bias=False)(x)
    return layers.BatchNormalization()(x)


def resnet(layers, x):
    x = layers.ReLU()(conv_bn(layers, x, 32, 3))
    for filters, strides in ((32, 1), (64, 2), (128, 2)):
        y = layers.ReLU()(conv_bn(layers, x, filters, 3, strides))
        y = conv_bn(layers, y, filters, 3)
        shortcut = conv_bn(layers, x, filters, 1, strides)
        x = layers.ReLU()(layers.Add()([y, shortcut]))
    return layers.GlobalAveragePooling2D()(x)


def mobilenet(layers, x):
    x = layers.ReLU(6.0)(conv_bn(layers, x, 32, 3))
    for filters, strides in ((64, 2), (128, 1), (128, 2), (256, 1), (256, 1)):
        x = layers.DepthwiseConv2D(3, strides=strides, padding="same", use_bias=False)(x)
        x = layers.ReLU(6.0)(layers.BatchNormalization()(x))
        x = layers.ReLU(6.0)(conv_bn(layers, x, filters, 1))
    return layers.GlobalAveragePooling2D()(x)


def build(name):
    """The model `name` with logits out. Under a mixed policy a float32 linear Activation ends it, as Keras's
    mixed-precision guide advises (the loss then reads float32 logits)."""
    layers = tf.keras.layers
    inputs = layers.Input((28, 28, 1))
    body = {"cnn": cnn, "resnet": resnet, "mobilenet": mobilenet}[name]
    logits = layers.Dense(10)(body(layers, inputs))
    if tf.keras.mixed_precision.global_policy().compute_dtype != "float32":
        logits = layers.Activation("linear", dtype="float32")(logits)
    return tf.keras.Model(inputs, logits, name=name)
