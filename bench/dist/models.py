"""The two models `./dev bench dist` trains, as ramjet layers and as PyTorch and Keras models: the Keras tutorial
CNN (225 k parameters: computation dominates) and a wide MLP of 11.6 M parameters (46 MB of gradients a step:
communication matters)."""

CNN_LAYERS = [
    {"type": "conv2d", "filters": 32, "kernel": 3, "activation": "relu"}, {"type": "max_pool", "pool": 2},
    {"type": "conv2d", "filters": 64, "kernel": 3, "activation": "relu"}, {"type": "max_pool", "pool": 2},
    {"type": "flatten"}, {"type": "dense", "units": 128, "activation": "relu"}, {"type": "dense", "units": 10}]
LARGE_LAYERS = [
    {"type": "flatten"}, {"type": "dense", "units": 4096, "activation": "relu"},
    {"type": "dense", "units": 2048, "activation": "relu"}, {"type": "dense", "units": 10}]
LAYERS = {"cnn": CNN_LAYERS, "large": LARGE_LAYERS}


def torch_model(name):
    from torch import nn

    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 4096), nn.ReLU(), nn.Linear(4096, 2048), nn.ReLU(),
                         nn.Linear(2048, 10))


def keras_model(name):
    import tensorflow as tf

    layers = tf.keras.layers
    if name == "cnn":
        body = [layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
                layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2),
                layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10)]
    else:
        body = [layers.Flatten(), layers.Dense(4096, activation="relu"), layers.Dense(2048, activation="relu"),
                layers.Dense(10)]
    return tf.keras.Sequential([layers.Input((28, 28, 1))] + body)
