"""Torchvision ImageNet classifiers at their real shapes, built with onnx.helper.

Each builder returns an ``onnx.ModelProto`` (opset 14, input ``x`` of 1x3x224x224 unless
stated, output ``y`` of 1x1000 logits) with seeded random weights drawn by the test
suite's `tests.models.Builder`. The graphs follow what ``torch.onnx.export`` writes for
the torchvision module in eval mode: Conv (no bias) + BatchNormalization for every
conv-norm pair (the tool folds BN), ReLU / ReLU6 (as Clip(0, 6)) / HardSwish / Sigmoid /
SiLU (``Mul(x, Sigmoid(x))``) as the architecture uses them, squeeze-excite as
GlobalAveragePool -> 1x1 Conv -> act -> 1x1 Conv -> Sigmoid/HardSigmoid -> ``Mul(scale,
x)`` broadcast over the feature map, residual adds in torch's operand order, Flatten +
Gemm classifiers, Dropout and stochastic depth dropped (identity at inference).

`ZOO` maps a torchvision name to its builder, `published_macs(name)` gives torchvision's
documented GFLOPS figure (which torchvision counts as multiply-accumulates of conv and
linear layers), `measure(model)` loads a model the way ``bbgrap-hls inspect`` does and
returns its canonical node count, parameters and MACs.

Per model (what differs from the torch export, if anything):

- resnet18, resnet50, resnext50_32x4d: torchvision's ResNet (V1.5: the stride on the
  3x3 conv of a bottleneck). No substitution.
- mobilenet_v2: no substitution.
- mobilenet_v3_large: Hardswish exported as ONNX HardSwish (opset 14), Hardsigmoid as
  HardSigmoid(alpha=1/6, beta=0.5). No substitution.
- efficientnet_b0 / efficientnet_b1: SiLU as ``Mul(x, Sigmoid(x))`` as torch exports it.
  efficientnet_b1 is built at 240x240, the crop size of its torchvision weights (the
  published figure is measured there); ``res=224`` gives the 224 variant. No substitution.
- googlenet: ``transform_input=False`` and ``aux_logits=False`` (what
  ``googlenet(weights=None)`` builds in eval mode), BasicConv2d = Conv + BN(eps 1e-3) +
  ReLU, and torchvision's "5x5" branch that is really a 3x3 conv. Every MaxPool keeps
  ``ceil_mode=1`` as torch exports it: the tool's frontend and cost model accept
  ceil-mode pools, so no substitution was needed.
- squeezenet1_1: MaxPool ``ceil_mode=1`` kept (at 224 every pool window fits exactly, so
  ceil and floor give the same shapes anyway). No substitution.
- regnety_400mf: torchvision's ``regnet_y_400mf`` (stage widths 48/104/208/440, depths
  1/3/6/6, group width 8, SE on a quarter of the block's input width). No substitution.
- vgg16: ``AdaptiveAvgPool2d((7, 7))`` on a 7x7 map exports as a 1x1 AveragePool; kept.
- densenet121: torchvision layout (each dense layer concatenates all earlier features,
  then BN -> ReLU -> 1x1 conv -> BN -> ReLU -> 3x3 conv; transitions BN -> ReLU -> 1x1
  conv -> AvgPool 2x2). The first layer of a block reads its single input directly
  instead of a one-input Concat (the tool's canonicalisation removes such a Concat
  anyway). No other substitution.
- mnasnet1_0: ``x.mean([2, 3])`` exported as ReduceMean(keepdims=0). No substitution.

Run ``python bench/zoo.py [--plan u250] [models...]`` for the table (model, canonical
nodes, parameters, GMACs, published GMACs, ratio) and, with ``--plan``, the planner's
result per model.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.families import Net, mobilenet_v3  # noqa: E402
from tests.families import make_divisible as _make_divisible  # noqa: E402
from tests.models import _rename_output  # noqa: E402


def _finish(b: Net, x: str, name: str) -> onnx.ModelProto:
    return _rename_output(b, x, name)


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


# -- mobile networks --------------------------------------------------------------------

def mobilenet_v2(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """MobileNetV2 1.0: inverted residuals with ReLU6, 1280-channel last conv."""
    b = Net(seed)
    x = b.cba(b.input("x", (1, 3, res, res)), 32, 3, 2, act="Relu6")
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for j in range(n):
            cin, stride = b.shapes[x][1], s if j == 0 else 1
            hidden = int(round(cin * t))
            y = b.cba(x, hidden, 1, act="Relu6") if t != 1 else x
            y = b.cba(y, hidden, 3, stride, group=hidden, act="Relu6")
            y = b.cba(y, c, 1, act=None)
            x = b.binary("Add", x, y) if stride == 1 and cin == c else y
    x = b.cba(x, 1280, 1, act="Relu6")
    return _finish(b, b.head(x), "mobilenet_v2")


def mobilenet_v3_large(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """MobileNetV3-Large: HardSwish/ReLU blocks, SE with HardSigmoid, 960 -> 1280 -> 1000 head."""
    # (kernel, expanded, out, se, activation, stride)
    blocks = [(3, 16, 16, False, "Relu", 1), (3, 64, 24, False, "Relu", 2), (3, 72, 24, False, "Relu", 1),
              (5, 72, 40, True, "Relu", 2), (5, 120, 40, True, "Relu", 1), (5, 120, 40, True, "Relu", 1),
              (3, 240, 80, False, "HardSwish", 2), (3, 200, 80, False, "HardSwish", 1),
              (3, 184, 80, False, "HardSwish", 1), (3, 184, 80, False, "HardSwish", 1),
              (3, 480, 112, True, "HardSwish", 1), (3, 672, 112, True, "HardSwish", 1),
              (5, 672, 160, True, "HardSwish", 2), (5, 960, 160, True, "HardSwish", 1),
              (5, 960, 160, True, "HardSwish", 1)]
    b, y = mobilenet_v3(blocks, 16, 960, 1280, 1000, seed, res)
    return _finish(b, y, "mobilenet_v3_large")


def _efficientnet(name: str, width: float, depth: float, seed: int, res: int) -> onnx.ModelProto:
    b = Net(seed)
    ch = lambda c: _make_divisible(c * width, 8)  # noqa: E731
    x = b.cba(b.input("x", (1, 3, res, res)), ch(32), 3, 2, act="SiLU")
    # (expand ratio, kernel, stride, in, out, layers)
    for e, k, s, _cin, cout, n in [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
                                   (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
                                   (6, 3, 1, 192, 320, 1)]:
        for j in range(int(math.ceil(n * depth))):
            cin, stride, out = b.shapes[x][1], s if j == 0 else 1, ch(cout)
            hidden = _make_divisible(cin * e, 8)
            y = b.cba(x, hidden, 1, act="SiLU") if hidden != cin else x
            y = b.cba(y, hidden, k, stride, group=hidden, act="SiLU")
            y = b.se(y, max(1, cin // 4), "SiLU", "Sigmoid")
            y = b.cba(y, out, 1, act=None)
            x = b.binary("Add", y, x) if stride == 1 and cin == out else y
    x = b.cba(x, 4 * b.shapes[x][1], 1, act="SiLU")
    return _finish(b, b.head(x), name)


def efficientnet_b0(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """EfficientNet-B0: MBConv blocks with SiLU and SE (squeeze to a quarter of the block input)."""
    return _efficientnet("efficientnet_b0", 1.0, 1.0, seed, res)


def efficientnet_b1(seed: int = 0, res: int = 240) -> onnx.ModelProto:
    """EfficientNet-B1: B0 with depth x1.1, at its 240x240 evaluation crop."""
    return _efficientnet("efficientnet_b1", 1.0, 1.1, seed, res)


def mnasnet1_0(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """MNASNet 1.0: ReLU inverted residuals, mean over H and W, then Linear."""
    b = Net(seed)
    x = b.cba(b.input("x", (1, 3, res, res)), 32, 3, 2)
    x = b.cba(x, 32, 3, 1, group=32)
    x = b.cba(x, 16, 1, act=None)
    for cout, k, s, e, n in [(24, 3, 2, 3, 3), (40, 5, 2, 3, 3), (80, 5, 2, 6, 3), (96, 3, 1, 6, 2),
                             (192, 5, 2, 6, 4), (320, 3, 1, 6, 1)]:
        for j in range(n):
            cin, stride = b.shapes[x][1], s if j == 0 else 1
            y = b.cba(x, cin * e, 1)
            y = b.cba(y, cin * e, k, stride, group=cin * e)
            y = b.cba(y, cout, 1, act=None)
            x = b.binary("Add", y, x) if stride == 1 and cin == cout else y
    x = b.cba(x, 1280, 1)
    m = b.node("ReduceMean", [x], (1, 1280), axes=[2, 3], keepdims=0)
    return _finish(b, b.gemm(m, 1000), "mnasnet1_0")


def mobilenet_v3_small(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """MobileNetV3-Small: SE with HardSigmoid in all but two blocks, 576 -> 1024 -> 1000 head."""
    blocks = [(3, 16, 16, True, "Relu", 2), (3, 72, 24, False, "Relu", 2), (3, 88, 24, False, "Relu", 1),
              (5, 96, 40, True, "HardSwish", 2), (5, 240, 40, True, "HardSwish", 1),
              (5, 240, 40, True, "HardSwish", 1), (5, 120, 48, True, "HardSwish", 1),
              (5, 144, 48, True, "HardSwish", 1), (5, 288, 96, True, "HardSwish", 2),
              (5, 576, 96, True, "HardSwish", 1), (5, 576, 96, True, "HardSwish", 1)]
    b, y = mobilenet_v3(blocks, 16, 576, 1024, 1000, seed, res)
    return _finish(b, y, "mobilenet_v3_small")


def shufflenet_v2_x1_0(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """ShuffleNetV2 x1.0: stages of 4/8/4 units at 116/232/464 channels; a stride-2 unit runs
    both branches on the whole input, a stride-1 unit splits the channels in two (``chunk``,
    exported as Split) and convolves one half; Concat, then the channel shuffle (Reshape,
    Transpose, Reshape); 1x1 conv to 1024, mean over H and W, Linear."""
    b = Net(seed)
    x = b.maxpool(b.cba(b.input("x", (1, 3, res, res)), 24, 3, 2), 3, 2, 1)
    for cout, n in ((116, 4), (232, 8), (464, 4)):
        for j in range(n):
            half = cout // 2
            if j == 0:
                left = b.cba(b.cba(x, b.shapes[x][1], 3, 2, group=b.shapes[x][1], act=None), half, 1)
                right = x
                stride = 2
            else:
                left, right = b.split(x, [half, half])
                stride = 1
            right = b.cba(right, half, 1)
            right = b.cba(right, half, 3, stride, group=half, act=None)
            right = b.cba(right, half, 1)
            x = b.shuffle(b.concat([left, right]), 2)
    x = b.cba(x, 1024, 1)
    m = b.node("ReduceMean", [x], (1, 1024), axes=[2, 3], keepdims=0)
    return _finish(b, b.gemm(m, 1000), "shufflenet_v2_x1_0")


# -- RegNet -------------------------------------------------------------------------------

def _regnet_stages(depth: int, w_0: int, w_a: float, w_m: float, group_width: int) -> list[tuple[int, int, int]]:
    """(width, depth, groups) per stage from RegNet's quantised linear width rule."""
    cont = np.arange(depth) * w_a + w_0
    cap = np.round(np.log(cont / w_0) / np.log(w_m))
    widths = (np.round(w_0 * np.power(w_m, cap) / 8) * 8).astype(int).tolist()
    stages: list[list[int]] = []
    for w in widths:
        if stages and stages[-1][0] == w:
            stages[-1][1] += 1
        else:
            stages.append([w, 1])
    out = []
    for w, d in stages:
        g = min(group_width, w)
        w = _make_divisible(w, g)
        out.append((w, d, w // g))
    return out


def regnety_400mf(seed: int = 0, res: int = 224) -> onnx.ModelProto:
    """RegNetY-400MF: SimpleStemIN (32), bottleneck blocks (ratio 1) with grouped 3x3 and SE."""
    b = Net(seed)
    x = b.cba(b.input("x", (1, 3, res, res)), 32, 3, 2)
    for w, d, groups in _regnet_stages(16, 48, 27.89, 2.09, 8):
        for j in range(d):
            cin, stride = b.shapes[x][1], 2 if j == 0 else 1
            y = b.cba(x, w, 1)
            y = b.cba(y, w, 3, stride, group=groups)
            y = b.se(y, int(round(0.25 * cin)), "Relu", "Sigmoid")
            y = b.cba(y, w, 1, act=None)
            s = b.cba(x, w, 1, stride, act=None) if stride != 1 or cin != w else x
            x = b.act(b.binary("Add", s, y))
    return _finish(b, b.head(x), "regnety_400mf")


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


SEGMENTATION: dict[str, Callable[..., onnx.ModelProto]] = {"unet": unet}
"""Segmentation networks (no torchvision figure: ``main`` prints their MACs without a ratio)."""


ZOO: dict[str, Callable[..., onnx.ModelProto]] = {
    "resnet18": resnet18, "resnet50": resnet50, "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_large": mobilenet_v3_large, "efficientnet_b0": efficientnet_b0, "googlenet": googlenet,
    "squeezenet1_1": squeezenet1_1, "regnety_400mf": regnety_400mf, "vgg16": vgg16,
    "resnext50_32x4d": resnext50_32x4d, "densenet121": densenet121, "efficientnet_b1": efficientnet_b1,
    "mnasnet1_0": mnasnet1_0, "mobilenet_v3_small": mobilenet_v3_small,
    "shufflenet_v2_x1_0": shufflenet_v2_x1_0, "inception_v3": inception_v3,
}

# torchvision's "GFLOPS" per model: the figure of the model's page under
# https://pytorch.org/vision/stable/models/generated/torchvision.models.<builder>.html
# (IMAGENET1K_V1 weights; the same column of the table in
# https://pytorch.org/vision/stable/models.html). torchvision counts one multiply-add of
# a conv or linear layer as one operation, so the figure is GMACs. Each was looked up in
# that documentation (docs search); where the page's excerpt stopped short of the figure,
# the `_ops` meta value of the weights in torchvision's source is quoted instead (it is
# what the page prints, to 2 decimals).
#
# Our counts (`python bench/zoo.py`) agree with the published figures within 1.6 %; every
# remaining difference is the page's rounding to 2 decimals: the 3-decimal `_ops` values
# of torchvision's source match our counts to the last digit, e.g. mobilenet_v3_large
# 0.217 (page 0.22, ours -1.4 %), mnasnet1_0 0.314 (page 0.31, ours +1.4 %),
# efficientnet_b0 0.386 (page 0.39), efficientnet_b1 0.687 at 240x240 (page 0.69),
# regnety_400mf 0.402 (page 0.40). The SE blocks' 1x1 convs and the classifiers are in
# both counts; the SE Mul, residual Adds, pools and activations are in neither.
_PUBLISHED: dict[str, float] = {
    "resnet18": 1.81,            # .../torchvision.models.resnet18 (GFLOPS 1.81)
    "resnet50": 4.09,            # .../torchvision.models.resnet50.html (GFLOPS 4.09)
    "mobilenet_v2": 0.30,        # .../torchvision.models.mobilenet_v2.html (GFLOPS 0.30)
    "mobilenet_v3_large": 0.22,  # .../torchvision.models.mobilenet_v3_large.html (GFLOPS 0.22)
    "efficientnet_b0": 0.39,     # .../torchvision.models.efficientnet_b0.html (GFLOPS 0.39)
    "googlenet": 1.50,           # .../torchvision.models.googlenet.html (GFLOPS 1.50)
    # squeezenet1_1.html: the page's excerpt ends before the figure; torchvision's
    # squeezenet.py gives SqueezeNet1_1_Weights.IMAGENET1K_V1 "_ops": 0.349 (page: 0.35).
    "squeezenet1_1": 0.35,
    "regnety_400mf": 0.40,       # .../torchvision.models.regnet_y_400mf.html (GFLOPS 0.40)
    "vgg16": 15.47,              # .../torchvision.models.vgg16.html (GFLOPS 15.47)
    "resnext50_32x4d": 4.23,     # .../torchvision.models.resnext50_32x4d.html (GFLOPS 4.23)
    # densenet121.html not found by the docs search; torchvision's densenet.py gives
    # DenseNet121_Weights.IMAGENET1K_V1 "_ops": 2.834 (page: 2.83).
    "densenet121": 2.83,
    "efficientnet_b1": 0.69,     # .../torchvision.models.efficientnet_b1.html (GFLOPS 0.69, V1 weights, 240 crop)
    "mnasnet1_0": 0.31,          # .../torchvision.models.mnasnet1_0.html (GFLOPS 0.31)
    # the three below: the figures issue 14 quotes from torchvision's tables; the
    # inception_v3 page's excerpt ends before the figure, a torchvision-weights model card
    # (huggingface.co/lucid-dl/inception-v3, "IMAGENET1K_V1 ... GFLOPs 5.713 ... torchvision")
    # gives its `_ops` value
    "mobilenet_v3_small": 0.06,  # .../torchvision.models.mobilenet_v3_small.html (GFLOPS 0.06)
    "shufflenet_v2_x1_0": 0.14,  # .../torchvision.models.shufflenet_v2_x1_0.html (GFLOPS 0.14)
    "inception_v3": 5.71,        # .../torchvision.models.inception_v3.html (GFLOPS 5.71, 299x299)
}


# torchvision's own 3-decimal `_ops` values (the weights' meta in torchvision's source),
# where the documentation's 2-decimal figure differs from our count by its rounding:
# shufflenet_v2_x1_0 0.145 (ShuffleNet_V2_X1_0_QuantizedWeights' meta, the same
# architecture: the page prints 0.14), mobilenet_v3_small 0.057 (page 0.06).
_OPS_3DP: dict[str, float] = {"shufflenet_v2_x1_0": 0.145, "mobilenet_v3_small": 0.057, "mobilenet_v3_large": 0.217,
                              "efficientnet_b0": 0.386, "regnety_400mf": 0.402, "inception_v3": 5.713}


def torchvision_ops(name: str) -> float:
    """torchvision's 3-decimal `_ops` (GMACs) of ``name`` where recorded, else its published figure."""
    return _OPS_3DP.get(name, published_macs(name))


def published_macs(name: str) -> float:
    """torchvision's documented GFLOPS (= G multiply-accumulates) of ``name`` at its evaluation crop."""
    if name not in _PUBLISHED:
        raise KeyError(f"no published figure for '{name}' (known: {', '.join(_PUBLISHED)})")
    return _PUBLISHED[name]


def canonical(model: onnx.ModelProto):
    """Load ``model`` as ``bbgrap-hls inspect`` does (frontend, then canonicalisation)."""
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{model.graph.name}.onnx"
        onnx.save(model, str(path))
        return canonicalize(load_model(str(path)))


def measure(model: onnx.ModelProto) -> tuple[object, dict]:
    """The canonical graph and ``inspect``'s summary of it (``macs``, ``params``, ``nodes``)."""
    from bbgrap_hls.commands.inspect import summarize

    g = canonical(model)
    return g, summarize(g, canonical=True)


def plan(graph, board: str = "u250") -> str:
    """One line: the default-strategy plan's frames/s on ``board``, or the error it gives."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.search import make_plan

    t = time.monotonic()
    try:
        p = make_plan(graph, load_board(board), baselines=False)
    except Exception as e:  # InfeasibleError expected for several models today
        return f"{type(e).__name__}: {str(e).splitlines()[0]} ({time.monotonic() - t:.1f} s)"
    return (f"{p.fps:,.1f} frames/s, ii {p.ii_cycles:,} cycles, bottleneck {p.bottleneck} "
            f"({time.monotonic() - t:.1f} s)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    known = {**ZOO, **SEGMENTATION}
    ap.add_argument("models", nargs="*", help=f"subset of: {', '.join(known)}")
    ap.add_argument("--plan", metavar="BOARD", help="also plan each model on BOARD (default strategy)")
    args = ap.parse_args(argv)
    names = args.models or list(ZOO)
    unknown = [n for n in names if n not in known]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)}")
    print(f"{'model':<20} {'nodes':>6} {'params':>12} {'GMACs':>8} {'published':>9} {'ratio':>7}"
          + ("  plan on " + args.plan if args.plan else ""), flush=True)
    worst = 0.0
    for name in names:
        g, info = measure(known[name]())
        gmacs = info["macs"] / 1e9
        line = f"{name:<20} {len(info['nodes']):>6} {info['params']:>12,} {gmacs:>8.3f} "
        if name in SEGMENTATION:
            line += f"{'-':>9} {'-':>7}"
        else:
            pub = published_macs(name)
            worst = max(worst, abs(gmacs / pub - 1))
            line += f"{pub:>9.2f} {gmacs / pub:>7.3f}"
        if args.plan:
            line += "  " + plan(g, args.plan)
        print(line, flush=True)
    print(f"largest deviation from the published figure: {100 * worst:.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
