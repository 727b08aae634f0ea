"""Network families at test size, and the torchvision building blocks they share with
bench/zoo.py (which builds the same families at their published ImageNet shapes).

`Net` adds to `tests.models.Builder` what torchvision networks need: BatchNorm with a
chosen eps, SiLU as torch exports it (``Mul(x, Sigmoid(x))``), HardSigmoid, ceil-mode
pools, squeeze-excite, rectangular kernels (Inception-v3's 1x7 / 7x1) and classifier heads.

`TINY` maps a family name to a small builder: the family's characteristic blocks (the
operators, the branch and merge structure, the activations) at a 32x32 input with few
channels and one or two blocks per stage, so that gen + csim and the RTL twin run in
seconds. Each docstring says what of the full network it keeps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper

from tests.models import Builder, _rename_output

OPSET = 14  # HardSwish needs 14; torch exports these models at opset >= 14 by default


class Net(Builder):
    """`Builder` with the pieces torchvision networks need (BN eps, SiLU, HardSigmoid,
    ceil-mode pools, squeeze-excite, classifier heads)."""

    def __init__(self, seed: int = 0, opset: int = OPSET):
        super().__init__(seed, opset)

    def bn(self, x: str, eps: float = 1e-5) -> str:
        c = self.shapes[x][1]
        r = self.rng
        params = [r.uniform(0.5, 1.5, c), r.normal(0, 0.1, c), r.normal(0, 0.1, c), r.uniform(0.5, 1.5, c)]
        ins = [x] + [self.const(nm, p.astype(np.float32))
                     for nm, p in zip(("gamma", "beta", "mean", "var"), params, strict=True)]
        return self.node("BatchNormalization", ins, self.shapes[x], epsilon=eps)

    def act(self, x: str, op: str | None = "Relu", **attrs) -> str:
        if op is None:
            return x
        if op == "SiLU":  # torch exports nn.SiLU as x * sigmoid(x)
            return self.binary("Mul", x, self.node("Sigmoid", [x], self.shapes[x]))
        if op == "HardSigmoid":  # F.hardsigmoid: relu6(x + 3) / 6
            return self.node("HardSigmoid", [x], self.shapes[x], alpha=1.0 / 6, beta=0.5)
        return super().act(x, op, **attrs)

    def cba(self, x: str, cout: int, k: int = 1, stride: int = 1, group: int = 1,
            act: str | None = "Relu", eps: float = 1e-5) -> str:
        """Conv (no bias) -> BatchNorm -> activation: torchvision's Conv2dNormActivation."""
        return self.act(self.bn(self.conv(x, cout, k, stride, group=group, bias=False), eps), act)

    def pool(self, x: str, op: str, k: int, stride: int, pad: int = 0, ceil: bool = False) -> str:
        n, c, h, w = self.shapes[x]

        def out(d: int) -> int:
            span = d + 2 * pad - k
            o = (-(-span // stride) if ceil else span // stride) + 1
            if ceil and (o - 1) * stride >= d + pad:  # the last window must start inside
                o -= 1
            return o

        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        if ceil:
            attrs["ceil_mode"] = 1
        return self.node(op, [x], (n, c, out(h), out(w)), **attrs)

    def se(self, x: str, squeeze: int, act: str = "Relu", gate: str = "Sigmoid") -> str:
        """torchvision.ops.SqueezeExcitation: ``scale * x`` with scale from a GAP and two 1x1 convs."""
        c = self.shapes[x][1]
        s = self.act(self.conv(self.gap(x), squeeze, 1), act)
        s = self.act(self.conv(s, c, 1), gate)
        return self.binary("Mul", s, x)

    def head(self, x: str, classes: int = 1000) -> str:
        """AdaptiveAvgPool2d(1) -> flatten -> (Dropout) -> Linear."""
        return self.gemm(self.flatten(self.gap(x)), classes)

    def conv_rect(self, x: str, cout: int, kernel: tuple[int, int], stride: int = 1) -> str:
        """A bias-free conv with a ``kh x kw`` kernel and torch's 'same' padding ((k-1)/2 per side)."""
        n, c, h, w = self.shapes[x]
        (kh, kw), (ph, pw) = kernel, ((kernel[0] - 1) // 2, (kernel[1] - 1) // 2)
        wt = self.const("w", self.weights((cout, c, kh, kw), c * kh * kw))
        ho, wo = (h + 2 * ph - kh) // stride + 1, (w + 2 * pw - kw) // stride + 1
        return self.node("Conv", [x, wt], (n, cout, ho, wo), kernel_shape=[kh, kw], strides=[stride, stride],
                         pads=[ph, pw, ph, pw])

    def cba_rect(self, x: str, cout: int, kernel: tuple[int, int], stride: int = 1, eps: float = 1e-3) -> str:
        """Inception-v3's BasicConv2d with a rectangular kernel: Conv -> BN(eps 1e-3) -> ReLU."""
        return self.act(self.bn(self.conv_rect(x, cout, kernel, stride), eps))


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's channel rounding (nearest multiple of ``divisor``, never below 90 %)."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def _finish(b: Net, x: str) -> onnx.ModelProto:
    return _rename_output(b, x, "y")


def _finish_heads(b: Net, heads: list[str]) -> onnx.ModelProto:
    """The model with outputs ``y0, y1, ...`` (one Identity each, as an exporter names them)."""
    names = []
    for k, h in enumerate(heads):
        b.nodes.append(helper.make_node("Identity", [h], [f"y{k}"], name=f"y{k}_node"))
        b.shapes[f"y{k}"] = b.shapes[h]
        names.append(f"y{k}")
    return b.model(names, "heads")


def _stem(b: Net, c: int, act: str = "Relu", res: int = 32, eps: float = 1e-5) -> str:
    return b.cba(b.input("x", (1, 3, res, res)), c, 3, 2, act=act, eps=eps)


# -- the families at test size -----------------------------------------------------------

def mobilenet_v3(blocks, stem: int, last: int, hidden: int, classes: int, seed: int, res: int) -> tuple[Net, str]:
    """torchvision's MobileNetV3 body and head: ``blocks`` of ``(kernel, expanded, out, se,
    activation, stride)``, BN eps 1e-3, SE with HardSigmoid on a quarter of the expansion
    (rounded to 8); returns the builder and the logits (bench/zoo.py builds the full sizes)."""
    b = Net(seed)
    eps = 1e-3
    x = _stem(b, stem, "HardSwish", res, eps)
    for k, exp, out, use_se, a, s in blocks:
        cin = b.shapes[x][1]
        y = b.cba(x, exp, 1, act=a, eps=eps) if exp != cin else x
        y = b.cba(y, exp, k, s, group=exp, act=a, eps=eps)
        if use_se:
            y = b.se(y, make_divisible(exp // 4, 8), "Relu", "HardSigmoid")
        y = b.cba(y, out, 1, act=None, eps=eps)
        x = b.binary("Add", y, x) if s == 1 and cin == out else y
    x = b.cba(x, last, 1, act="HardSwish", eps=eps)
    x = b.act(b.gemm(b.flatten(b.gap(x)), hidden), "HardSwish")
    return b, b.gemm(x, classes)


def _mobilenet_v3(blocks, stem: int, last: int, hidden: int, seed: int, res: int) -> onnx.ModelProto:
    return _finish(*mobilenet_v3(blocks, stem, last, hidden, 10, seed, res))


def mobilenet_v3_small_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """MobileNetV3-Small's first blocks: a stride-2 depthwise block with SE whose expansion
    equals its input (no 1x1 expand), ReLU then HardSwish blocks, 5x5 depthwise, HardSigmoid
    SE gates, a residual block, the 1x1 -> GAP -> Linear+HardSwish -> Linear head."""
    blocks = [(3, 16, 16, True, "Relu", 2), (3, 48, 24, False, "Relu", 2), (3, 56, 24, False, "Relu", 1),
              (5, 64, 32, True, "HardSwish", 2), (5, 96, 32, True, "HardSwish", 1)]
    return _mobilenet_v3(blocks, 16, 96, 64, seed, res)


def mobilenet_v3_large_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """MobileNetV3-Large's pattern: a stride-1 first block without expansion (a residual
    around a depthwise conv), ReLU blocks without SE, 5x5 SE blocks with residuals, then
    HardSwish blocks with and without SE."""
    blocks = [(3, 16, 16, False, "Relu", 1), (3, 32, 24, False, "Relu", 2), (5, 48, 24, True, "Relu", 1),
              (3, 64, 32, False, "HardSwish", 2), (3, 80, 32, True, "HardSwish", 1)]
    return _mobilenet_v3(blocks, 16, 96, 64, seed, res)


def efficientnet_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """EfficientNet-B0's MBConv: SiLU as x*sigmoid(x) everywhere, SE (squeeze to a quarter of
    the block input, SiLU, Sigmoid gate) in every block, an expansion-1 first block, 3x3 and
    5x5 depthwise, a residual block, the 1x1 head conv at 4x the last width."""
    b = Net(seed)
    x = _stem(b, 16, "SiLU", res)
    for e, k, s, cout in [(1, 3, 1, 8), (6, 3, 2, 16), (6, 5, 1, 16), (4, 5, 2, 24)]:
        cin = b.shapes[x][1]
        hidden = cin * e
        y = b.cba(x, hidden, 1, act="SiLU") if hidden != cin else x
        y = b.cba(y, hidden, k, s, group=hidden, act="SiLU")
        y = b.se(y, max(1, cin // 4), "SiLU", "Sigmoid")
        y = b.cba(y, cout, 1, act=None)
        x = b.binary("Add", y, x) if s == 1 and cin == cout else y
    x = b.cba(x, 4 * b.shapes[x][1], 1, act="SiLU")
    return _finish(b, b.head(x, 10))


def _regnet(se: bool, seed: int, res: int) -> onnx.ModelProto:
    b = Net(seed)
    x = _stem(b, 16, "Relu", res)
    for w, d, groups in [(16, 1, 2), (32, 2, 4)]:  # group width 8
        for j in range(d):
            cin, stride = b.shapes[x][1], 2 if j == 0 else 1
            y = b.cba(x, w, 1)
            y = b.cba(y, w, 3, stride, group=groups)
            if se:
                y = b.se(y, max(1, int(round(0.25 * cin))), "Relu", "Sigmoid")
            y = b.cba(y, w, 1, act=None)
            s = b.cba(x, w, 1, stride, act=None) if stride != 1 or cin != w else x
            x = b.act(b.binary("Add", s, y))
    return _finish(b, b.head(x, 10))


def regnetx_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """RegNetX: bottleneck blocks (ratio 1) with a grouped 3x3 (group width 8), projection
    shortcuts on stride and width changes, the Add then ReLU."""
    return _regnet(False, seed, res)


def regnety_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """RegNetY: RegNetX's blocks with SE after the grouped 3x3 (a quarter of the block input)."""
    return _regnet(True, seed, res)


def resnext_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """ResNeXt: bottlenecks with 8 groups in the strided 3x3 (V1.5), expansion 4, projection
    shortcuts, a 3x3/2 max pool after the stem."""
    b = Net(seed)
    x = b.maxpool(_stem(b, 16, "Relu", res), 3, 2, 1)
    for planes, n in ((8, 2), (16, 1)):
        for j in range(n):
            stride = 2 if planes > 8 and j == 0 else 1
            cin, cout, width = b.shapes[x][1], planes * 4, planes * 2
            y = b.cba(b.cba(x, width, 1), width, 3, stride, group=8)
            y = b.cba(y, cout, 1, act=None)
            s = b.cba(x, cout, 1, stride, act=None) if stride != 1 or cin != cout else x
            x = b.act(b.binary("Add", y, s))
    return _finish(b, b.head(x, 10))


def densenet_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """DenseNet: every dense layer concatenates all earlier features and starts with
    BatchNorm -> ReLU on the Concat (a BN no conv can absorb), bottleneck 1x1 at 4x growth,
    3x3 at the growth rate; a transition (BN -> ReLU -> 1x1 at half width -> 2x2 AvgPool);
    a final BN -> ReLU before the head."""
    b = Net(seed)
    x = b.maxpool(_stem(b, 16, "Relu", res), 3, 2, 1)
    growth = 8
    for k, n in enumerate((3, 2)):
        feats = [x]
        for _ in range(n):
            cat = b.concat(feats) if len(feats) > 1 else feats[0]
            y = b.conv(b.act(b.bn(cat)), 4 * growth, 1, bias=False)
            y = b.conv(b.act(b.bn(y)), growth, 3, bias=False)
            feats.append(y)
        x = b.concat(feats)
        if k == 0:
            x = b.conv(b.act(b.bn(x)), b.shapes[x][1] // 2, 1, bias=False)
            x = b.pool(x, "AveragePool", 2, 2)
    return _finish(b, b.head(b.act(b.bn(x)), 10))


def inception_v3_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """Inception-v3's modules: A (1x1; 1x1 -> 5x5; 1x1 -> 3x3 -> 3x3; 3x3 average pool (pad 1,
    padding counted as torch exports it) -> 1x1), a B-style reduction (3x3/2; 1x1 -> 3x3 ->
    3x3/2; 3x3/2 max pool), C (1x1; 1x1 -> 1x7 -> 7x1; 1x1 -> 7x1 -> 1x7 -> 7x1 -> 1x7;
    pool -> 1x1), BasicConv2d = Conv + BN(eps 1e-3) + ReLU, unpadded stem convs."""
    b = Net(seed)
    c = lambda x, co, k, s=1: b.cba(x, co, k, s, eps=1e-3)  # noqa: E731
    r = lambda x, co, kh, kw: b.cba_rect(x, co, (kh, kw))  # noqa: E731

    def avg3(x: str) -> str:
        return b.node("AveragePool", [x], b.shapes[x], kernel_shape=[3, 3], strides=[1, 1], pads=[1] * 4,
                      count_include_pad=1)

    x = b.input("x", (1, 3, res, res))
    x = b.act(b.bn(b.conv(x, 16, 3, 1, pad=0, bias=False), 1e-3))  # 30x30
    x = b.act(b.bn(b.conv(x, 16, 3, 2, pad=0, bias=False), 1e-3))  # 14x14
    x = b.concat([c(x, 8, 1), c(c(x, 6, 1), 8, 5), c(c(c(x, 8, 1), 12, 3), 12, 3), c(avg3(x), 8, 1)])  # A
    mp = b.maxpool(x, 3, 2)
    x = b.concat([b.act(b.bn(b.conv(x, 16, 3, 2, pad=0, bias=False), 1e-3)),
                  b.act(b.bn(b.conv(c(c(x, 8, 1), 12, 3), 12, 3, 2, pad=0, bias=False), 1e-3)), mp])  # B: 6x6
    b7 = r(r(c(x, 8, 1), 8, 1, 7), 16, 7, 1)
    b77 = r(r(r(r(c(x, 8, 1), 8, 7, 1), 8, 1, 7), 8, 7, 1), 16, 1, 7)
    x = b.concat([c(x, 16, 1), b7, b77, c(avg3(x), 16, 1)])  # C
    return _finish(b, b.head(x, 10))


def yolo_heads_tiny(seed: int = 0, res: int = 32) -> onnx.ModelProto:
    """A YOLOv5-style detector with three output heads: a strided SiLU backbone (C3-like
    blocks reduced to a residual pair of convs), a top-down path (1x1 conv, nearest 2x
    upsampling, Concat with the backbone's features at that scale) at strides 16 and 8,
    and one 1x1 detection conv per scale (3 anchors x (5 + 3 classes) channels), each a
    graph output (``y0`` at stride 8, ``y1`` at 16, ``y2`` at 32)."""
    b = Net(seed)
    c = lambda x, co, k=3, s=1: b.cba(x, co, k, s, act="SiLU", eps=1e-3)  # noqa: E731

    def res_block(x: str) -> str:
        return b.binary("Add", x, c(c(x, b.shapes[x][1], 1), b.shapes[x][1], 3))

    x = c(c(b.input("x", (1, 3, res, res)), 8, 3, 2), 16, 3, 2)  # stride 4
    p3 = res_block(c(x, 16, 3, 2))  # stride 8
    p4 = res_block(c(p3, 24, 3, 2))  # stride 16
    p5 = c(c(p4, 32, 3, 2), 32, 1)  # stride 32
    t4 = c(b.concat([b.upsample(c(p5, 24, 1), 2), p4]), 24)
    t3 = c(b.concat([b.upsample(c(t4, 16, 1), 2), p3]), 16)
    heads = [b.conv(t, 3 * (5 + 3), 1) for t in (t3, t4, p5)]
    return _finish_heads(b, heads)


TINY: dict[str, Callable[..., onnx.ModelProto]] = {
    "mobilenet_v3_small_tiny": mobilenet_v3_small_tiny, "mobilenet_v3_large_tiny": mobilenet_v3_large_tiny,
    "efficientnet_tiny": efficientnet_tiny, "regnetx_tiny": regnetx_tiny, "regnety_tiny": regnety_tiny,
    "resnext_tiny": resnext_tiny, "densenet_tiny": densenet_tiny, "inception_v3_tiny": inception_v3_tiny,
    "yolo_heads_tiny": yolo_heads_tiny,
}
