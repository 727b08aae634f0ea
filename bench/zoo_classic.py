"""The zoo's classic CNNs: ResNet-18/50 and ResNeXt-50 32x4d, VGG-16, SqueezeNet 1.1,
GoogLeNet, Inception-v3, DenseNet-121, and the U-Net segmentation network.

Builders of `zoo` (bench/zoo.py), which re-exports them and documents, per model, what
differs from the torch export; the mobile networks are in zoo_mobile.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.families import Net  # noqa: E402
from tests.models import _rename_output  # noqa: E402
from tests.models import _rename_output as _finish  # noqa: E402

# -- ResNet family ----------------------------------------------------------------------

def _resnet(name: str, block: str, layers: tuple[int, ...], seed: int, res: int,
            groups: int = 1, width_per_group: int = 64) -> onnx.ModelProto:
    b = Net(seed)
    x = b.cba(b.input("x", (1, 3, res, res)), 64, 7, 2)
    x = b.maxpool(x, 3, 2, 1)
    expansion = 4 if block == "bottleneck" else 1
    for k, (planes, n) in enumerate(zip((64, 128, 256, 512), layers, strict=True)):
        for j in range(n):
            stride = 2 if k > 0 and j == 0 else 1
            cin, cout = b.shapes[x][1], planes * expansion
            if block == "basic":
                y = b.cba(b.cba(x, planes, 3, stride), planes, 3, 1, act=None)
            else:
                width = int(planes * (width_per_group / 64.0)) * groups
                y = b.cba(x, width, 1)
                y = b.cba(y, width, 3, stride, group=groups)
                y = b.cba(y, cout, 1, act=None)
            s = b.cba(x, cout, 1, stride, act=None) if stride != 1 or cin != cout else x
            x = b.act(b.binary("Add", y, s))
    return _finish(b, b.head(x), name)


def resnet18(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """ResNet-18: basic blocks [2, 2, 2, 2]."""
    return _resnet("resnet18", "basic", (2, 2, 2, 2), seed, res)


def resnet50(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """ResNet-50 (V1.5): bottlenecks [3, 4, 6, 3]."""
    return _resnet("resnet50", "bottleneck", (3, 4, 6, 3), seed, res)


def resnext50_32x4d(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """ResNeXt-50 32x4d: bottlenecks [3, 4, 6, 3], 32 groups of width 4 per 64 planes."""
    return _resnet("resnext50_32x4d", "bottleneck", (3, 4, 6, 3), seed, res, groups=32, width_per_group=4)



# -- older classics -------------------------------------------------------------------------

def vgg16(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """VGG-16 (configuration D, no BN): 13 biased 3x3 convs, 5 max pools, 3 fully connected layers."""
    b = Net(seed)
    x = b.input("x", (1, 3, res, res))
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        x = b.maxpool(x, 2, 2) if v == "M" else b.act(b.conv(x, v, 3))
    if b.shapes[x][2:] != (7, 7):
        raise ValueError(f"vgg16 is built for 7x7 final maps only (res 224), got {b.shapes[x][2:]}")
    x = b.pool(x, "AveragePool", 1, 1)  # AdaptiveAvgPool2d((7, 7)) on a 7x7 map
    x = b.act(b.gemm(b.flatten(x), 4096))
    x = b.act(b.gemm(x, 4096))
    return _finish(b, b.gemm(x, 1000), "vgg16")


def squeezenet1_1(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """SqueezeNet 1.1: 3x3 stem, eight Fire modules, conv classifier, then global pooling."""
    b = Net(seed)
    x = b.act(b.conv(b.input("x", (1, 3, res, res)), 64, 3, 2, pad=0))

    def fire(x: str, sq: int, e1: int, e3: int) -> str:
        s = b.act(b.conv(x, sq, 1))
        return b.concat([b.act(b.conv(s, e1, 1)), b.act(b.conv(s, e3, 3))])

    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = fire(fire(x, 16, 64, 64), 16, 64, 64)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = fire(fire(x, 32, 128, 128), 32, 128, 128)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    for sq, e in ((48, 192), (48, 192), (64, 256), (64, 256)):
        x = fire(x, sq, e, e)
    x = b.gap(b.act(b.conv(x, 1000, 1)))
    return _finish(b, b.flatten(x), "squeezenet1_1")


def googlenet(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """GoogLeNet as torchvision builds it (BN convs, no LRN, aux heads off, 3x3 "5x5" branch)."""
    b = Net(seed)
    conv = lambda x, c, k, s=1: b.cba(x, c, k, s, eps=1e-3)  # noqa: E731  BasicConv2d

    def inception(x: str, c1: int, c3r: int, c3: int, c5r: int, c5: int, pp: int) -> str:
        b1 = conv(x, c1, 1)
        b2 = conv(conv(x, c3r, 1), c3, 3)
        b3 = conv(conv(x, c5r, 1), c5, 3)
        b4 = conv(b.pool(x, "MaxPool", 3, 1, 1, ceil=True), pp, 1)
        return b.concat([b1, b2, b3, b4])

    x = conv(b.input("x", (1, 3, res, res)), 64, 7, 2)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = conv(conv(x, 64, 1), 192, 3)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    x = inception(x, 64, 96, 128, 16, 32, 32)
    x = inception(x, 128, 128, 192, 32, 96, 64)
    x = b.pool(x, "MaxPool", 3, 2, ceil=True)
    for cfg in ((192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
                (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128)):
        x = inception(x, *cfg)
    x = b.pool(x, "MaxPool", 2, 2, ceil=True)
    x = inception(x, 256, 160, 320, 32, 128, 128)
    x = inception(x, 384, 192, 384, 48, 128, 128)
    return _finish(b, b.head(x), "googlenet")


def inception_v3(seed: int = 0, res: int = 299) -> onnx.ModelProto:
    """Inception-v3 as torchvision builds it in eval mode (aux head off, ``transform_input``
    off): BasicConv2d = Conv + BN(eps 1e-3) + ReLU; modules A (x3), B, C (x4: 1x7 / 7x1
    factorisations), D, E (x2: 1x3 and 3x1 branches concatenated); the branch pools are
    ``avg_pool2d(3, 1, 1)`` (padding counted, as torch exports it). At its 299x299 input."""
    b = Net(seed)
    conv = lambda x, c, k, s=1, pad=None: b.act(b.bn(b.conv(x, c, k, s, pad=pad, bias=False), 1e-3))  # noqa: E731
    rect = lambda x, c, kh, kw: b.cba_rect(x, c, (kh, kw))  # noqa: E731

    def avg(x: str) -> str:
        return b.node("AveragePool", [x], b.shapes[x], kernel_shape=[3, 3], strides=[1, 1], pads=[1] * 4,
                      count_include_pad=1)

    def a(x: str, pool: int) -> str:
        return b.concat([conv(x, 64, 1), conv(conv(x, 48, 1), 64, 5), conv(conv(conv(x, 64, 1), 96, 3), 96, 3),
                         conv(avg(x), pool, 1)])

    def c(x: str, c7: int) -> str:
        b7 = rect(rect(conv(x, c7, 1), c7, 1, 7), 192, 7, 1)
        d7 = rect(rect(rect(rect(conv(x, c7, 1), c7, 7, 1), c7, 1, 7), c7, 7, 1), 192, 1, 7)
        return b.concat([conv(x, 192, 1), b7, d7, conv(avg(x), 192, 1)])

    def e(x: str) -> str:
        t = conv(x, 384, 1)
        d = conv(conv(x, 448, 1), 384, 3)
        return b.concat([conv(x, 320, 1), b.concat([rect(t, 384, 1, 3), rect(t, 384, 3, 1)]),
                         b.concat([rect(d, 384, 1, 3), rect(d, 384, 3, 1)]), conv(avg(x), 192, 1)])

    x = conv(b.input("x", (1, 3, res, res)), 32, 3, 2, pad=0)
    x = conv(conv(x, 32, 3, pad=0), 64, 3)
    x = b.maxpool(x, 3, 2)
    x = b.maxpool(conv(conv(x, 80, 1), 192, 3, pad=0), 3, 2)
    x = a(a(a(x, 32), 64), 64)
    x = b.concat([conv(x, 384, 3, 2, pad=0), conv(conv(conv(x, 64, 1), 96, 3), 96, 3, 2, pad=0),
                  b.maxpool(x, 3, 2)])  # B
    for c7 in (128, 160, 160, 192):
        x = c(x, c7)
    x = b.concat([conv(conv(x, 192, 1), 320, 3, 2, pad=0),
                  conv(rect(rect(conv(x, 192, 1), 192, 1, 7), 192, 7, 1), 192, 3, 2, pad=0),
                  b.maxpool(x, 3, 2)])  # D
    x = e(e(x))
    return _finish(b, b.head(x), "inception_v3")


def densenet121(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """DenseNet-121 (growth 32, blocks 6/12/24/16, bottleneck 4x, compression 0.5)."""
    b = Net(seed)
    x = b.cba(b.input("x", (1, 3, res, res)), 64, 7, 2)
    x = b.maxpool(x, 3, 2, 1)
    for k, n in enumerate((6, 12, 24, 16)):
        feats = [x]
        for _ in range(n):
            cat = b.concat(feats) if len(feats) > 1 else feats[0]
            y = b.conv(b.act(b.bn(cat)), 128, 1, bias=False)
            y = b.conv(b.act(b.bn(y)), 32, 3, bias=False)
            feats.append(y)
        x = b.concat(feats)
        if k < 3:
            x = b.conv(b.act(b.bn(x)), b.shapes[x][1] // 2, 1, bias=False)
            x = b.pool(x, "AveragePool", 2, 2)
    return _finish(b, b.head(b.act(b.bn(x))), "densenet121")


def unet(seed: int = 0, res: int = 256, base: int = 64, classes: int = 2) -> onnx.ModelProto:
    """A U-Net as milesial/Pytorch-UNet builds it with ``bilinear=False`` (not a torchvision model:
    no published figure): DoubleConv (3x3 conv without bias + BN + ReLU, twice) at ``base``
    channels, four MaxPool 2x2 + DoubleConv stages doubling them, four ConvTranspose 2x2 stride 2
    halving them, each followed by a Concat with the encoder features of its size (skip first)
    and a DoubleConv, and a 1x1 conv head; input 1x3x``res``x``res``."""
    from tests.models import conv_transpose

    b = Net(seed)

    def double(x: str, c: int) -> str:
        return b.cba(b.cba(x, c, 3), c, 3)

    x = double(b.input("x", (1, 3, res, res)), base)
    skips = []
    for k in range(1, 5):
        skips.append(x)
        x = double(b.pool(x, "MaxPool", 2, 2), base << k)
    for k in range(3, -1, -1):
        x = double(b.concat([skips[k], conv_transpose(b, x, base << k, 2, 2)]), base << k)
    return _rename_output(b, b.conv(x, classes, 1), "unet")
