"""Small ONNX models with seeded random weights, shared by the whole test suite.

Every builder takes a ``seed`` (and an ``opset`` where it matters), returns an
``onnx.ModelProto`` that passes ``onnx.checker``, and names its single input ``x`` and
its single output ``y`` unless stated. `save(model, path)` writes one to disk.

The block-sized models (``mlp`` ... ``channel_shuffle``) are for exactness tests; the
network-sized ones (``resnet8``, ``ds_cnn``, ``mobilenet_v1``, ``mlp_autoencoder``) are
the planner's workloads; ``resnet18`` and ``mobilenet_v2`` are shape-faithful to the
published ImageNet networks (for MAC counts; their weights are random).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import onnx

from tests.model_builder import DEFAULT_OPSET, Builder

# -- block-sized models -----------------------------------------------------------------

def mlp(seed: int = 0, opset: int = DEFAULT_OPSET, sizes: tuple[int, ...] = (64, 32, 16, 10)) -> onnx.ModelProto:
    """Gemm → Relu → MatMul+Add → Relu → Gemm, input ``(1, sizes[0])``."""
    b = Builder(seed, opset)
    x = b.input("x", (1, sizes[0]))
    for k, c in enumerate(sizes[1:]):
        if k % 2:
            x = b.binary("Add", b.matmul(x, c), b.const("bias", b.rng.normal(0, 0.1, c).astype(np.float32)))
        else:
            x = b.gemm(x, c, trans_b=k == 0)
        if k < len(sizes) - 2:
            x = b.act(x)
    return _rename_output(b, x, "mlp")


def lenet(seed: int = 0, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """LeNet-5-like: 2 × (conv 5×5 → relu → maxpool) → flatten → 3 dense, input 1×1×28×28."""
    b = Builder(seed, opset)
    x = b.input("x", (1, 1, 28, 28))
    x = b.maxpool(b.act(b.conv(x, 6, 5, pad=2)), 2, 2)
    x = b.maxpool(b.act(b.conv(x, 16, 5, pad=0)), 2, 2)
    x = b.torch_flatten(x)
    x = b.act(b.gemm(x, 120))
    x = b.act(b.gemm(x, 84))
    return _rename_output(b, b.gemm(x, 10), "lenet")


def residual_block(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 16, hw: int = 16) -> onnx.ModelProto:
    """Basic ResNet block with a strided projection shortcut: conv-bn-relu-conv-bn + 1×1 conv-bn, add, relu."""
    b = Builder(seed, opset)
    x = b.input("x", (1, c, hw, hw))
    y = b.conv_bn(b.conv_bn(x, 2 * c, 3, 2), 2 * c, 3, 1, act=None)
    s = b.conv_bn(x, 2 * c, 1, 2, act=None)
    return _rename_output(b, b.act(b.binary("Add", y, s)), "residual_block")


def ds_block(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 16, hw: int = 16) -> onnx.ModelProto:
    """Depthwise-separable block: depthwise 3×3 (stride 2) → bn → relu6 → pointwise 1×1 → bn → relu."""
    b = Builder(seed, opset)
    x = b.input("x", (1, c, hw, hw))
    x = b.conv_bn(x, c, 3, 2, group=c, act="Relu6")
    return _rename_output(b, b.conv_bn(x, 2 * c, 1, 1), "ds_block")


def inception_block(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 16, hw: int = 12) -> onnx.ModelProto:
    """Four branches (1×1; 1×1→3×3; 1×1→5×5; maxpool 3×3 s1 → 1×1) concatenated on channels."""
    b = Builder(seed, opset)
    x = b.input("x", (1, c, hw, hw))
    b1 = b.act(b.conv(x, 8, 1))
    b2 = b.act(b.conv(b.act(b.conv(x, 8, 1)), 12, 3))
    b3 = b.act(b.conv(b.act(b.conv(x, 4, 1)), 6, 5))
    b4 = b.act(b.conv(b.maxpool(x, 3, 1, 1), 6, 1))
    return _rename_output(b, b.concat([b1, b2, b3, b4]), "inception_block")


def se_block(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 32, hw: int = 8, r: int = 4) -> onnx.ModelProto:
    """Squeeze-excite: conv → GAP → flatten → dense → relu → dense → sigmoid → reshape → Mul."""
    b = Builder(seed, opset)
    x = b.input("x", (1, c, hw, hw))
    f = b.act(b.conv(x, c, 3))
    s = b.flatten(b.gap(f))
    s = b.act(b.gemm(b.act(b.gemm(s, c // r)), c), "Sigmoid")
    s = b.reshape(s, [1, c, 1, 1], (1, c, 1, 1))
    return _rename_output(b, b.binary("Mul", f, s), "se_block")


def channel_shuffle(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 12, hw: int = 8, groups: int = 3) -> onnx.ModelProto:
    """Grouped 1×1 conv, then the channel shuffle as PyTorch exports it (the target shapes
    computed from Shape/Gather/Div/Unsqueeze/Concat), then a depthwise 3×3 conv."""
    b = Builder(seed, opset)
    x = b.input("x", (1, c, hw, hw))
    y = b.act(b.conv(x, c, 1, group=groups))
    shp = b.node("Shape", [y], None)
    dims = [b.node("Gather", [shp, b.const("i", np.array(i, np.int64))], None, axis=0) for i in range(4)]
    g = b.const("groups", np.array(groups, np.int64))
    per = b.node("Div", [dims[1], g], None)
    parts = [b._unsqueeze0(t) for t in (dims[0], g, per, dims[2], dims[3])]
    five = b.node("Concat", parts, None, axis=0)
    y5 = b.node("Reshape", [y, five], (1, groups, c // groups, hw, hw))
    t = b.node("Transpose", [y5], (1, c // groups, groups, hw, hw), perm=[0, 2, 1, 3, 4])
    back = b.node("Concat", [b._unsqueeze0(dims[0]), b.const("m1", np.array([-1], np.int64)),
                             b._unsqueeze0(dims[2]), b._unsqueeze0(dims[3])], None, axis=0)
    z = b.node("Reshape", [t, back], (1, c, hw, hw))
    return _rename_output(b, b.conv(z, c, 3, group=c), "channel_shuffle")


# -- crops, splits, global max pooling and nearest upsampling (issue 14) ---------------------

def split_block(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 8, hw: int = 6) -> onnx.ModelProto:
    """ShuffleNetV2's basic unit: Split in halves, a conv branch on one half, Concat, channel
    shuffle (2 groups); then a crop of rows/columns and of an unaligned channel range."""
    b = Builder(seed, opset)
    x = b.act(b.conv(b.input("x", (1, 3, hw, hw)), c, 3))
    a, r = b.split(x, [c // 2, c // 2])
    r = b.act(b.conv(b.act(b.conv(r, c // 2, 1)), c // 2, 3, group=c // 2))
    y = b.shuffle(b.concat([a, r]), 2)
    y = b.slice(y, [1, 1, 1], [c - 1, hw - 1, hw], [1, 2, 3])
    return _rename_output(b, b.conv(y, 4, 1), "split_block")


def gmaxpool_block(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 8, hw: int = 6) -> onnx.ModelProto:
    """conv → GlobalMaxPool → Flatten → Gemm."""
    b = Builder(seed, opset)
    x = b.act(b.conv(b.input("x", (1, 3, hw, hw)), c, 3))
    n, cc = b.shapes[x][:2]
    g = b.node("GlobalMaxPool", [x], (n, cc, 1, 1))
    return _rename_output(b, b.gemm(b.flatten(g), 5), "gmaxpool_block")


def upsample_block(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 4, hw: int = 8) -> onnx.ModelProto:
    """A YOLO-style neck: a stride-2 conv, nearest 2× upsampling, Concat with the features
    before the stride, a conv."""
    b = Builder(seed, opset)
    f = b.act(b.conv(b.input("x", (1, 3, hw, hw)), c, 3))
    d = b.act(b.conv(f, 2 * c, 3, 2))
    u = b.upsample(d, 2)
    return _rename_output(b, b.conv(b.concat([f, u]), c, 3), "upsample_block")


def _shuffle_unit(b: Builder, x: str, cout: int, stride: int) -> str:
    """A ShuffleNetV2 unit: stride 1 splits the channels in halves (``chunk``), keeps one and
    runs 1×1 → depthwise 3×3 → 1×1 on the other; stride 2 runs both branches on the whole
    input; then Concat and a channel shuffle of 2 groups."""
    c = b.shapes[x][1]
    half = cout // 2
    if stride == 1:
        keep, x2 = b.split(x, [c // 2, c - c // 2])
    else:
        keep = b.conv_bn(b.conv_bn(x, c, 3, 2, group=c, act=None), half, 1)
        x2 = x
    y = b.conv_bn(x2, half, 1)
    y = b.conv_bn(y, half, 3, stride, group=half, act=None)
    y = b.conv_bn(y, half, 1)
    return b.shuffle(b.concat([keep, y]), 2)


def shufflenet_tiny(seed: int = 0, opset: int = DEFAULT_OPSET, hw: int = 16, width: int = 8,
                    classes: int = 10) -> onnx.ModelProto:
    """A small ShuffleNetV2: stem conv (stride 2) and max pool, a downsampling unit and a basic
    unit (channel split, branch, Concat, channel shuffle) per stage, 1×1 conv, GAP, Gemm."""
    b = Builder(seed, opset)
    x = b.maxpool(b.conv_bn(b.input("x", (1, 3, hw, hw)), width, 3, 2), 3, 2, 1)
    for c in (2 * width, 4 * width):
        x = _shuffle_unit(b, _shuffle_unit(b, x, c, 2), c, 1)
    x = b.conv_bn(x, 4 * width, 1)
    return _rename_output(b, b.gemm(b.flatten(b.gap(x)), classes), "shufflenet_tiny")


def yolo_tiny(seed: int = 0, opset: int = DEFAULT_OPSET, hw: int = 16, width: int = 8,
              anchors: int = 2, classes: int = 3) -> onnx.ModelProto:
    """A small YOLO-style detector: a strided backbone (LeakyReLU 0.1), a 1×1 conv at the
    deepest stage, nearest 2× upsampling, Concat with the stride-2 features, a 3×3 conv and
    the detection head (``anchors·(5 + classes)`` channels)."""
    b = Builder(seed, opset)

    def cba(t: str, c: int, k: int = 3, s: int = 1) -> str:
        return b.act(b.bn(b.conv(t, c, k, s, bias=False)), "LeakyRelu", alpha=0.1)

    x = cba(b.input("x", (1, 3, hw, hw)), width)
    p3 = cba(x, 2 * width, 3, 2)
    p4 = cba(cba(p3, 4 * width, 3, 2), 2 * width, 1)
    y = cba(b.concat([b.upsample(p4, 2), p3]), 2 * width)
    return _rename_output(b, b.conv(y, anchors * (5 + classes), 1), "yolo_tiny")


def crop_input_block(seed: int = 0, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """The graph input cropped (rows 2..5, columns 0..3, channels 1..4 of 6: an unaligned first
    channel), upsampled 2×, then GlobalMaxPool as the graph output: no conv anywhere."""
    b = Builder(seed, opset)
    y = b.upsample(b.slice(b.input("x", (1, 6, 7, 5)), [1, 2, 0], [5, 6, 4], [1, 2, 3]), 2)
    n, c = b.shapes[y][:2]
    return _rename_output(b, b.node("GlobalMaxPool", [y], (n, c, 1, 1)), "crop_input_block")


def dense_slice_block(seed: int = 0, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """Gemm → Slice of features 3..8 of an (N, C) tensor → Gemm."""
    b = Builder(seed, opset)
    y = b.slice(b.gemm(b.input("x", (1, 12)), 10), [3], [9], [1])
    return _rename_output(b, b.gemm(y, 4), "dense_slice_block")


RESAMPLE: dict[str, Callable[..., onnx.ModelProto]] = {
    "split_block": split_block, "gmaxpool_block": gmaxpool_block, "upsample_block": upsample_block,
    "crop_input_block": crop_input_block, "dense_slice_block": dense_slice_block,
}
FAMILIES: dict[str, Callable[..., onnx.ModelProto]] = {"shufflenet_tiny": shufflenet_tiny, "yolo_tiny": yolo_tiny}
"""Small versions of network families with these ops (tests/test_ops_resample.py); not in `ALL`."""
"""Models of Split/Slice, GlobalMaxPool and Resize (tests/test_ops_resample.py); not in `ALL`."""


# -- network-sized models -------------------------------------------------------------------

def resnet8(seed: int = 0, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """MLPerf Tiny image classification ResNet-8: 32×32×3 → 3 stages (16/32/64) → 10 classes."""
    b = Builder(seed, opset)
    x = b.conv_bn(b.input("x", (1, 3, 32, 32)), 16, 3)
    for k, c in enumerate((16, 32, 64)):
        stride = 1 if k == 0 else 2
        y = b.conv_bn(b.conv_bn(x, c, 3, stride), c, 3, 1, act=None)
        s = x if k == 0 else b.conv_bn(x, c, 1, stride, act=None)
        x = b.act(b.binary("Add", y, s))
    x = b.flatten(b.node("AveragePool", [x], (1, 64, 1, 1), kernel_shape=[8, 8], strides=[8, 8]))
    return _rename_output(b, b.act(b.gemm(x, 10), "Softmax"), "resnet8")


def ds_cnn(seed: int = 0, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """MLPerf Tiny keyword spotting DS-CNN: 1×49×10 MFCC → conv 10×4 s2 (64) → 4 DS blocks → 12 classes."""
    b = Builder(seed, opset)
    x = b.input("x", (1, 1, 49, 10))
    w = b.const("w", b.weights((64, 1, 10, 4), 40))
    x = b.node("Conv", [x, w, b.const("b", np.zeros(64, np.float32))], (1, 64, 25, 5),
               kernel_shape=[10, 4], strides=[2, 2], pads=[5, 1, 4, 2])
    x = b.act(b.bn(x))
    for _ in range(4):
        x = b.conv_bn(b.conv_bn(x, 64, 3, 1, group=64), 64, 1, 1)
    x = b.flatten(b.node("AveragePool", [x], (1, 64, 1, 1), kernel_shape=[25, 5]))
    return _rename_output(b, b.gemm(x, 12), "ds_cnn")


def mobilenet_v1(seed: int = 0, opset: int = DEFAULT_OPSET, alpha: float = 0.25, res: int = 96,
                 classes: int = 2) -> onnx.ModelProto:
    """MobileNetV1 (width ``alpha``, input ``res``×``res``); defaults are MLPerf Tiny's visual wake words."""
    b = Builder(seed, opset)
    ch = lambda c: max(8, int(c * alpha))  # noqa: E731
    x = b.conv_bn(b.input("x", (1, 3, res, res)), ch(32), 3, 2)
    for c, s in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]:
        x = b.conv_bn(b.conv_bn(x, b.shapes[x][1], 3, s, group=b.shapes[x][1]), ch(c), 1, 1)
    return _rename_output(b, b.gemm(b.flatten(b.gap(x)), classes), "mobilenet_v1")


def mlp_autoencoder(seed: int = 0, opset: int = DEFAULT_OPSET,
                    sizes: tuple[int, ...] = (640, 128, 128, 128, 128, 8, 128, 128, 128, 128, 640)) -> onnx.ModelProto:
    """MLPerf Tiny anomaly detection autoencoder: 10 dense layers with batchnorm and relu."""
    b = Builder(seed, opset)
    x = b.input("x", (1, sizes[0]))
    for k, c in enumerate(sizes[1:]):
        x = b.gemm(x, c)
        if k < len(sizes) - 2:
            x = b.act(b.bn(x))
    return _rename_output(b, x, "mlp_autoencoder")


def resnet18(seed: int = 0, opset: int = DEFAULT_OPSET, res: int = 224) -> onnx.ModelProto:
    """ResNet-18 (He et al. 2016) with torchvision's layer shapes; 1.81 G MACs at 224×224."""
    b = Builder(seed, opset)
    x = b.conv_bn(b.input("x", (1, 3, res, res)), 64, 7, 2)
    x = b.maxpool(x, 3, 2, 1)
    for k, c in enumerate((64, 128, 256, 512)):
        for j in range(2):
            stride = 2 if k > 0 and j == 0 else 1
            y = b.conv_bn(b.conv_bn(x, c, 3, stride), c, 3, 1, act=None)
            s = b.conv_bn(x, c, 1, stride, act=None) if b.shapes[x][1] != c or stride != 1 else x
            x = b.act(b.binary("Add", y, s))
    return _rename_output(b, b.gemm(b.flatten(b.gap(x)), 1000), "resnet18")


def mobilenet_v2(seed: int = 0, opset: int = DEFAULT_OPSET, res: int = 224) -> onnx.ModelProto:
    """MobileNetV2 1.0 (Sandler et al. 2018) with torchvision's layer shapes; 0.30 G MACs at 224×224."""
    b = Builder(seed, opset)
    x = b.conv_bn(b.input("x", (1, 3, res, res)), 32, 3, 2, act="Relu6")
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for j in range(n):
            cin, stride = b.shapes[x][1], s if j == 0 else 1
            y = b.conv_bn(x, cin * t, 1, 1, act="Relu6") if t != 1 else x
            y = b.conv_bn(y, cin * t, 3, stride, group=cin * t, act="Relu6")
            y = b.conv_bn(y, c, 1, 1, act=None)
            x = b.binary("Add", x, y) if stride == 1 and cin == c else y
    x = b.conv_bn(x, 1280, 1, 1, act="Relu6")
    return _rename_output(b, b.gemm(b.flatten(b.gap(x)), 1000), "mobilenet_v2")


def _rename_output(b: Builder, x: str, name: str) -> onnx.ModelProto:
    """Finish the model with the last node's output renamed to ``y``."""
    last = b.nodes[-1]
    assert last.output[0] == x, "the output must come from the last node"
    last.output[0] = "y"
    b.shapes["y"] = b.shapes[x]
    return b.model(["y"], name)


def save(model: onnx.ModelProto, path: str | os.PathLike) -> str:
    """Write ``model`` to ``path``; returns the path as a string."""
    onnx.save(model, str(path))
    return str(path)


BLOCKS: dict[str, Callable[..., onnx.ModelProto]] = {
    "mlp": mlp, "lenet": lenet, "residual_block": residual_block, "ds_block": ds_block,
    "inception_block": inception_block, "se_block": se_block, "channel_shuffle": channel_shuffle,
}
NETWORKS: dict[str, Callable[..., onnx.ModelProto]] = {
    "resnet8": resnet8, "ds_cnn": ds_cnn, "mobilenet_v1": mobilenet_v1,
    "mlp_autoencoder": mlp_autoencoder, "resnet18": resnet18, "mobilenet_v2": mobilenet_v2,
}
ALL: dict[str, Callable[..., onnx.ModelProto]] = {**BLOCKS, **NETWORKS}


def random_input(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded standard-normal float32 feeds for every graph input of ``model``."""
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    return {vi.name: rng.standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim]).astype(np.float32)
            for vi in model.graph.input if vi.name not in inits}


# -- ConvTranspose and the U-Net-style family (issue 14; tests/test_ops_convtranspose.py) ------

def conv_transpose(b: Builder, x: str, cout: int, k: int = 2, stride: int = 2, pad: int = 0,
                   output_padding: int = 0, group: int = 1, bias: bool = True) -> str:
    """A ConvTranspose node (weights (C, cout/group, k, k), He-like scaling over the taps that
    reach an output pixel)."""
    n, c, h, w = b.shapes[x]
    fan = max(1, c // group * k * k // (stride * stride))
    wt = b.const("wt", b.weights((c, cout // group, k, k), fan))
    ins = [x, wt] + ([b.const("b", b.rng.normal(0, 0.1, cout).astype(np.float32))] if bias else [])
    size = [stride * (d - 1) + output_padding + k - 2 * pad for d in (h, w)]
    return b.node("ConvTranspose", ins, (n, cout, *size), kernel_shape=[k, k], strides=[stride, stride],
                  pads=[pad] * 4, output_padding=[output_padding] * 2, group=group)


def convt_block(seed: int = 0, opset: int = DEFAULT_OPSET, k: int = 2, stride: int = 2, pad: int = 0,
                output_padding: int = 0, group: int = 1, c: int = 4, hw: int = 5) -> onnx.ModelProto:
    """conv 3×3 → ReLU → ConvTranspose (k, stride, pad, output padding, groups) → ReLU → conv 1×1."""
    b = Builder(seed, opset)
    x = b.act(b.conv(b.input("x", (1, 3, hw, hw)), c, 3))
    u = b.act(conv_transpose(b, x, c, k, stride, pad, output_padding, group))
    return _rename_output(b, b.conv(u, 3, 1), "convt_block")


def unet_tiny(seed: int = 0, opset: int = DEFAULT_OPSET, hw: int = 16, width: int = 4,
              classes: int = 3) -> onnx.ModelProto:
    """A small U-Net-style segmenter: 3×3 conv + BN + ReLU encoder stages at strides 1, 2, 4
    (stride-2 convs), ConvTranspose 2×2 stride 2 up-convolutions, skip Concats with the encoder
    features of the same size, and a 1×1 conv head of ``classes`` channels at full resolution."""
    b = Builder(seed, opset)
    e1 = b.conv_bn(b.conv_bn(b.input("x", (1, 3, hw, hw)), width), width)
    e2 = b.conv_bn(b.conv_bn(e1, 2 * width, 3, 2), 2 * width)
    m = b.conv_bn(b.conv_bn(e2, 4 * width, 3, 2), 4 * width)
    d2 = b.conv_bn(b.concat([b.act(conv_transpose(b, m, 2 * width)), e2]), 2 * width)
    d1 = b.conv_bn(b.concat([b.act(conv_transpose(b, d2, width)), e1]), width)
    return _rename_output(b, b.conv(d1, classes, 1), "unet_tiny")


def convt_gan_block(seed: int = 0, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """A DCGAN-like generator on a 1×1 latent: ConvTranspose 4×4 stride 1 (a 4×4 map: the Conv
    pads 3 around one pixel) → ReLU → 4×4 stride 2 pad 1 → ReLU → 3×3 stride 2 pad 1, output
    padding 1, groups 2 → conv 1×1."""
    b = Builder(seed, opset)
    x = b.act(conv_transpose(b, b.input("x", (1, 8, 1, 1)), 8, 4, 1, 0))
    x = b.act(conv_transpose(b, x, 4, 4, 2, 1))
    x = conv_transpose(b, x, 4, 3, 2, 1, 1, group=2)
    return _rename_output(b, b.conv(x, 3, 1), "convt_gan_block")


def convt_row_block(seed: int = 0, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """A one-row input (1×5): ConvTranspose 2×3 stride 2 without bias → conv 1×1."""
    b = Builder(seed, opset)
    w = b.const("wt", b.weights((4, 2, 2, 3), 8))
    x = b.node("ConvTranspose", [b.input("x", (1, 4, 1, 5)), w], (1, 2, 2, 11), kernel_shape=[2, 3], strides=[2, 2])
    return _rename_output(b, b.conv(x, 3, 1), "convt_row_block")


CONVT: dict[str, Callable[..., onnx.ModelProto]] = {
    "convt_2x2_s2": convt_block,
    "convt_3x3_s2_pad_outpad": lambda seed=0, opset=DEFAULT_OPSET: convt_block(seed, opset, 3, 2, 1, 1),
    "convt_4x4_s4_group": lambda seed=0, opset=DEFAULT_OPSET: convt_block(seed, opset, 4, 4, 0, 0, 2, hw=3),
    "convt_3x3_s3_outpad2": lambda seed=0, opset=DEFAULT_OPSET: convt_block(seed, opset, 3, 3, 0, 2, hw=3),
    "convt_gan_block": convt_gan_block, "convt_row_block": convt_row_block,
}
"""Models of ConvTranspose variants (tests/test_ops_convtranspose.py); not in `ALL`."""
UNET: dict[str, Callable[..., onnx.ModelProto]] = {"unet_tiny": unet_tiny}
"""The small U-Net-style family (tests/test_ops_convtranspose.py); not in `ALL`."""


# -- bilinear Resize (issue 14; tests/test_ops_bilinear.py) ---------------------------------------

def _bilinear(b: Builder, x: str, scale: int, coord: str) -> str:
    """Bilinear upsampling as torch exports ``F.interpolate(mode="bilinear")``: ``half_pixel``
    family for ``align_corners=False`` (torch writes ``pytorch_half_pixel``), ``align_corners``."""
    n, c, h, w = b.shapes[x]
    sc = b.const("scales", np.array([1, 1, scale, scale], np.float32))
    return b.node("Resize", [x, "", sc], (n, c, h * scale, w * scale), mode="linear",
                  coordinate_transformation_mode=coord)


def bilinear_block(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 4, hw: int = 6, scale: int = 2,
                   coord: str = "pytorch_half_pixel") -> onnx.ModelProto:
    """conv 3×3 → ReLU → bilinear ``scale``× → conv 3×3."""
    b = Builder(seed, opset)
    x = b.act(b.conv(b.input("x", (1, 3, hw, hw)), c, 3))
    return _rename_output(b, b.conv(_bilinear(b, x, scale, coord), c, 3), "bilinear_block")


def fpn_tiny(seed: int = 0, opset: int = DEFAULT_OPSET, hw: int = 16, width: int = 4) -> onnx.ModelProto:
    """A tiny FPN-like segmenter: a stride-2 backbone of three levels, the top level upsampled
    bilinear 2× (torch ``align_corners=False``) and added to the 1×1 lateral of the level below,
    twice, then a 3×3 head and a bilinear 2× (``align_corners=True``) back to the input size."""
    b = Builder(seed, opset)
    c1 = b.act(b.conv(b.input("x", (1, 3, hw, hw)), width, 3, 2))
    c2 = b.act(b.conv(c1, 2 * width, 3, 2))
    c3 = b.act(b.conv(c2, 2 * width, 3, 2))
    p3 = b.conv(c3, width, 1)
    p2 = b.binary("Add", _bilinear(b, p3, 2, "pytorch_half_pixel"), b.conv(c2, width, 1))
    p1 = b.binary("Add", _bilinear(b, p2, 2, "half_pixel"), b.conv(c1, width, 1))
    head = b.conv(b.act(b.conv(p1, width, 3)), 3, 1)
    return _rename_output(b, _bilinear(b, head, 2, "align_corners"), "fpn_tiny")


BILINEAR: dict[str, Callable[..., onnx.ModelProto]] = {
    "bilinear_block": bilinear_block,
    "bilinear_x4_align_corners": lambda seed=0, opset=DEFAULT_OPSET: bilinear_block(seed, opset, 4, 4, 4,
                                                                                     "align_corners"),
    "fpn_tiny": fpn_tiny,
}
"""Models of bilinear Resize (tests/test_ops_bilinear.py); not in `ALL`."""


def _lrn(b: Builder, x: str, size: int, alpha: float, beta: float = 0.75, bias: float = 1.0) -> str:
    return b.node("LRN", [x], b.shapes[x], size=size, alpha=alpha, beta=beta, bias=bias)


def alexnet_tiny(seed: int = 0, opset: int = DEFAULT_OPSET, hw: int = 16, width: int = 16) -> onnx.ModelProto:
    """AlexNet's pattern at toy size: conv 5×5 → ReLU → LRN(5) → maxpool 3/2 → conv 3×3 → ReLU →
    LRN(3, AlexNet's k = 2) → global average pool → dense. The first LRN's alpha is large enough
    that the normalisation matters at these activation sizes."""
    b = Builder(seed, opset)
    x = _lrn(b, b.act(b.conv(b.input("x", (1, 3, hw, hw)), width, 5)), 5, 0.5)
    x = b.maxpool(x, 3, 2)
    x = _lrn(b, b.act(b.conv(x, width + width // 2, 3)), 3, 0.05, 0.75, 2.0)
    return _rename_output(b, b.gemm(b.flatten(b.gap(x)), 10), "alexnet_tiny")


def lrn_tail(seed: int = 0, opset: int = DEFAULT_OPSET, c: int = 6, hw: int = 5) -> onnx.ModelProto:
    """conv 3×3 → ReLU → LRN(size 4: an even window, 1 channel before and 2 after) as the output."""
    b = Builder(seed, opset)
    x = b.act(b.conv(b.input("x", (1, 3, hw, hw)), c, 3))
    return _rename_output(b, _lrn(b, x, 4, 0.3, 0.6, 1.5), "lrn_tail")


LRN: dict[str, Callable[..., onnx.ModelProto]] = {"alexnet_tiny": alexnet_tiny, "lrn_tail": lrn_tail}
"""Models with LRN on the fabric (tests/test_ops_lrn.py); not in `ALL`."""
