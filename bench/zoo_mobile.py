"""The zoo's mobile networks: MobileNetV2, MobileNetV3-Large/Small, EfficientNet-B0/B1,
MNASNet 1.0, ShuffleNetV2 x1.0 and RegNetY-400MF.

Builders of `zoo` (bench/zoo.py), which re-exports them and documents, per model, what
differs from the torch export; the classic CNNs are in zoo_classic.py.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.families import Net, mobilenet_v3  # noqa: E402
from tests.families import make_divisible as _make_divisible  # noqa: E402
from tests.models import _rename_output as _finish  # noqa: E402

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
