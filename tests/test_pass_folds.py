"""Canonicalisation passes that fold a node into its neighbour: a BatchNormalization or a
per-channel scale into the conv or Dense weights before it (`FoldBatchNorm`), per-channel
Mul/Add into one ChannelAffine (`LowerChannelAffine`), a zero Pad into the conv's pads
(`FoldPadIntoConv`), a Flatten into the reading Dense's weight columns (`FoldFlattenIntoDense`).

Each runs on small models where it applies, with the float reference run before and after
it (test_passes.py's `check`, whose tolerances its docstring gives), and must change the
graph where it should.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest

from bbgrap_hls.passes import (
    FoldBatchNorm,
    FoldFlattenIntoDense,
    FoldPadIntoConv,
    LowerChannelAffine,
    LowerGemm,
    LowerShapeOps,
    RemoveIdentity,
    canonicalize,
)
from bbgrap_hls.reference import run_float
from tests.models import Builder
from tests.test_passes import HW, C, X, _pc, check, feeds_for, kinds, load, tail


# -- FoldBatchNorm ----------------------------------------------------------------------------
def _decomposed(b: Builder, x: str) -> str:
    y = b.binary("Mul", x, b.const("s", b.rng.uniform(0.5, 2, (1, C, 1, 1)).astype(np.float32)))
    return b.binary("Add", y, b.const("t", b.rng.normal(0, 1, (C, 1, 1)).astype(np.float32)))


FOLDS = {  # case -> (builder of the tail after the input, kinds left after folding)
    "conv_bn": (lambda b, x: b.bn(b.conv(x, C)), {"Conv": 1}),
    "conv_nobias_bn": (lambda b, x: b.bn(b.conv(x, C, bias=False)), {"Conv": 1}),
    "depthwise_bn": (lambda b, x: b.bn(b.conv(x, C, group=C, stride=2)), {"Conv": 1}),
    "conv_mul_add": (lambda b, x: _decomposed(b, b.conv(x, C)), {"Conv": 1}),
    "conv_scalar_mul": (lambda b, x: b.binary("Mul", b.conv(x, C), b.const("s", np.array(0.5, np.float32))),
                        {"Conv": 1}),
    "conv_bn_bn": (lambda b, x: b.bn(b.bn(b.conv(x, C))), {"Conv": 1}),
    "gemm_bn": (lambda b, x: b.bn(b.gemm(b.flatten(x), 6)), {"Reshape": 1, "Dense": 1}),
    "shared_output": (lambda b, x: (lambda c: b.binary("Add", b.bn(c), c))(b.conv(x, C)),
                      {"Conv": 1, "BatchNormalization": 1, "Add": 1}),
    "spatial_const": (lambda b, x: b.binary("Add", b.conv(x, C), b.const("t", np.ones((1, 1, HW, HW), np.float32))),
                      {"Conv": 1, "Add": 1}),
}


@pytest.mark.parametrize("case", sorted(FOLDS))
def test_fold_batch_norm(case, tmp_path):
    build, left = FOLDS[case]
    b = Builder(6)
    g = load(tail(b, build(b, b.input("x", X))), tmp_path)
    out = check([LowerShapeOps, LowerGemm, FoldBatchNorm], g, exact=False)
    assert kinds(out) == Counter({**left, "Relu": 1})


def test_fold_batch_norm_into_graph_output(tmp_path):
    b = Builder(6)
    c = b.bn(b.conv(b.input("x", X), C))
    b.nodes[-1].output[0] = "y"
    b.shapes["y"] = b.shapes[c]
    g = load(b.model(["y"]), tmp_path)
    out = check([FoldBatchNorm], g, exact=False)
    assert [(n.op, n.outputs) for n in out.nodes] == [("Conv", ["y"])]


# -- LowerChannelAffine --------------------------------------------------------------------
AFFINES = {  # case -> (builder, ChannelAffine nodes expected)
    "bn_of_input": (lambda b, x: b.bn(x), 1),
    "mul_after_relu": (lambda b, x: b.binary("Mul", b.act(x), _pc(b)), 1),
    "mul_add_after_sigmoid": (lambda b, x: _decomposed(b, b.act(x, "Sigmoid")), 2),
    "scalar_add": (lambda b, x: b.binary("Add", b.act(x, "Tanh"), b.const("k", np.array(3.0, np.float32))), 1),
    "mul_two_activations": (lambda b, x: b.binary("Mul", x, b.act(b.gap(x), "Sigmoid")), 0),
    "add_spatial_const": (lambda b, x: b.binary("Add", x, b.const("t", np.ones((1, 1, HW, HW), np.float32))), 0),
}


@pytest.mark.parametrize("case", sorted(AFFINES))
def test_lower_channel_affine(case, tmp_path):
    build, count = AFFINES[case]
    b = Builder(7)
    g = load(tail(b, build(b, b.input("x", X))), tmp_path)
    out = check([LowerChannelAffine], g, exact=False)
    k = kinds(out)
    assert k["ChannelAffine"] == count
    assert "BatchNormalization" not in k
    assert k["Mul"] + k["Add"] + k["ChannelAffine"] == kinds(g)["Mul"] + kinds(g)["Add"] + kinds(g)["BatchNormalization"]


def test_channel_affines_merge(tmp_path):
    b = Builder(7)
    g = load(tail(b, _decomposed(b, b.act(b.input("x", X), "Sigmoid"))), tmp_path)
    out = canonicalize(g)
    assert kinds(out) == Counter({"Sigmoid": 1, "ChannelAffine": 1, "Relu": 1})
    feeds = feeds_for(g)
    np.testing.assert_allclose(run_float(out, feeds)["y"], run_float(g, feeds)["y"], rtol=1e-4, atol=1e-5)


# -- FoldPadIntoConv ------------------------------------------------------------------------
def _pad(b: Builder, x: str, pads: list[int], value: float = 0.0) -> str:
    n, c, h, w = b.shapes[x]
    shape = (n + pads[0] + pads[4], c + pads[1] + pads[5], h + pads[2] + pads[6], w + pads[3] + pads[7])
    return b.node("Pad", [x, b.const("pads", np.array(pads, np.int64)),
                          b.const("v", np.array(value, np.float32))], shape)


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("readers", [1, 2])
def test_fold_pad_into_conv(stride, readers, tmp_path):
    # TensorFlow 'same' padding of a stride-2 3x3 conv: one row/column after, none before.
    b = Builder(3)
    p = _pad(b, b.input("x", X), [0, 0, 0, 0, 0, 0, 1, 1])
    ys = [b.conv(p, 5, k=3, stride=stride, pad=0) for _ in range(readers)]
    y = ys[0] if readers == 1 else b.binary("Add", *ys)
    out = check([FoldPadIntoConv], load(tail(b, y), tmp_path), exact=False)
    assert "Pad" not in kinds(out)
    assert all(n.attrs["pads"] == (0, 0, 1, 1) for n in out.nodes if n.op == "Conv")


@pytest.mark.parametrize("case", ["value", "channels", "crop", "wide", "other_reader"])
def test_fold_pad_into_conv_keeps_what_it_cannot_fold(case, tmp_path):
    b = Builder(4)
    x = b.input("x", X)
    pads = {"channels": [0, 1, 1, 1, 0, 0, 1, 1], "crop": [0, 0, -1, 0, 0, 0, 1, 1],
            "wide": [0, 0, 3, 3, 0, 0, 3, 3]}.get(case, [0, 0, 1, 1, 0, 0, 1, 1])
    p = _pad(b, x, pads, value=0.5 if case == "value" else 0.0)
    y = b.conv(p, 5, k=3, pad=0)
    if case == "other_reader":
        y = b.binary("Add", y, b.conv(b.node("Relu", [p], b.shapes[p]), 5, k=3, pad=0))
    out = check([FoldPadIntoConv], load(tail(b, y), tmp_path), exact=False)
    assert kinds(out)["Pad"] == 1


# -- FoldFlattenIntoDense --------------------------------------------------------------------
def _flatten_dense(b: Builder, x: str, readers: int = 1, torch: bool = False) -> list[str]:
    f = (b.torch_flatten if torch else b.flatten)(b.conv(x, 3, stride=1))
    return [b.gemm(f, 5) for _ in range(readers)]


@pytest.mark.parametrize("torch", [False, True])
@pytest.mark.parametrize("readers", [1, 2])
def test_fold_flatten_into_dense(torch, readers, tmp_path):
    b = Builder(8)
    ys = _flatten_dense(b, b.input("x", (1, 2, 4, 5)), readers, torch)
    y = ys[0] if readers == 1 else b.binary("Add", *ys)
    g = load(tail(b, y), tmp_path)
    lowered = check([LowerShapeOps, LowerGemm], g, exact=False)
    out = check([FoldFlattenIntoDense], lowered, exact=False)
    assert "Reshape" not in kinds(out) and kinds(out)["Dense"] == readers
    for d in (n for n in out.nodes if n.op == "Dense"):
        assert d.attrs["in_layout"] == "NHWC" and out.shape(d.inputs[0]) == (1, 3, 4, 5)
        # column (h*W + w)*C + c of the new weight is column c*H*W + h*W + w of the old one
        old = lowered.const(next(n for n in lowered.nodes if n.name == d.name).inputs[1])
        new = out.const(d.inputs[1])
        for c_, h, w in np.ndindex(3, 4, 5):
            np.testing.assert_array_equal(new[:, (h * 5 + w) * 3 + c_], old[:, c_ * 20 + h * 5 + w])


@pytest.mark.parametrize("other", ["graph_output", "relu_reader"])
def test_fold_flatten_needs_only_dense_readers(other, tmp_path):
    b = Builder(8)
    f = b.flatten(b.conv(b.input("x", (1, 2, 4, 5)), 3))
    d = b.gemm(f, 5)
    if other == "graph_output":
        b.shapes["y2"] = b.shapes[f]
        b.nodes.append(onnx.helper.make_node("Identity", [f], ["y2"], name="copy"))
        g = load(b.model([d, "y2"]), tmp_path)
    else:
        g = load(tail(b, b.concat([d, b.act(f)])), tmp_path)
    out = check([RemoveIdentity, LowerShapeOps, LowerGemm, FoldFlattenIntoDense], g, exact=False)
    assert kinds(out)["Reshape"] == 1
