"""The bench models in PyTorch, the same architectures as ramjet's manifests and bench/train/keras_models.py, with
Keras's semantics where PyTorch's defaults differ: "same" padding, which for a 3×3 stride-2 convolution on an even
input pads 0 before and 1 after (an explicit nn.ZeroPad2d((0, 1, 0, 1)), so outputs and FLOPs match TensorFlow's);
no convolution bias before batch norm; BatchNorm2d(eps=1e-3, momentum=0.01), Keras's epsilon and momentum 0.99.
Plain modules and `+` for the residual add, so FX graph-mode quantization (bench/infer/torch_peer.py) traces them.
"""
import torch
from torch import nn

MODELS = ("cnn", "resnet", "mobilenet")


def bn(channels):
    return nn.BatchNorm2d(channels, eps=1e-3, momentum=0.01)


def conv_same(in_channels, out_channels, kernel, stride=1, groups=1):
    """A convolution with TensorFlow's "same" padding and no bias."""
    if stride == 1 or kernel == 1:
        return nn.Conv2d(in_channels, out_channels, kernel, stride, padding=kernel // 2, groups=groups, bias=False)
    assert kernel == 3 and stride == 2, "only the shapes these models use"
    return nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)),
                         nn.Conv2d(in_channels, out_channels, kernel, stride, padding=0, groups=groups, bias=False))


class ResidualBlock(nn.Module):
    """conv3×3(stride) → BN → relu → conv3×3 → BN, plus a conv1×1(stride) → BN projection; add; relu."""

    def __init__(self, in_channels, filters, stride):
        super().__init__()
        self.body = nn.Sequential(conv_same(in_channels, filters, 3, stride), bn(filters), nn.ReLU(),
                                  conv_same(filters, filters, 3), bn(filters))
        self.shortcut = nn.Sequential(conv_same(in_channels, filters, 1, stride), bn(filters))
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))


def resnet():
    blocks, channels = [], 32
    for filters, stride in ((32, 1), (64, 2), (128, 2)):
        blocks.append(ResidualBlock(channels, filters, stride))
        channels = filters
    return nn.Sequential(conv_same(1, 32, 3), bn(32), nn.ReLU(), *blocks,
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 10))


def mobilenet():
    layers, channels = [conv_same(1, 32, 3), bn(32), nn.ReLU6()], 32
    for filters, stride in ((64, 2), (128, 1), (128, 2), (256, 1), (256, 1)):
        layers += [conv_same(channels, channels, 3, stride, groups=channels), bn(channels), nn.ReLU6(),
                   conv_same(channels, filters, 1), bn(filters), nn.ReLU6()]
        channels = filters
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 10))


def build(name):
    return {"cnn": cnn, "resnet": resnet, "mobilenet": mobilenet}[name]()


def count_params(model):
    """Parameters as Keras and ramjet count them: batch norm's running mean and variance included."""
    stats = sum(b.numel() for n, b in model.named_buffers() if n.endswith(("running_mean", "running_var")))
    return sum(p.numel() for p in model.parameters()) + stats


def channels_last(x):
    return x.contiguous(memory_format=torch.channels_last)
