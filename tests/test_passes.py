"""Canonicalisation passes: each pass runs on small models where it applies, with the float
reference run before and after it, and must change the graph where it should.

Tolerances: exact (``array_equal``) where a pass keeps every float operation (identities,
Sub/Sum rewritten as Add, Clip bounds, moving a Reshape); rtol 1e-4, atol 1e-5 where it
moves a scale into a constant (BatchNormalization folding, Div → Mul, Gemm alpha/beta,
ChannelAffine) or changes the order of a float64 sum (Dense layouts). Against onnxruntime:
rtol 1e-4, atol 1e-5 · max(1, max |y|) (the deep ImageNet-shaped nets accumulate float32
rounding of that order before any pass runs).
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from bbgrap_hls.frontend import load_model
from bbgrap_hls.ir import Graph
from bbgrap_hls.ops import get_op
from bbgrap_hls.passes import (
    CANONICAL_KINDS,
    ClipToRelu6,
    FoldBatchNorm,
    FoldConstants,
    FoldFlattenIntoDense,
    FoldPadIntoConv,
    LowerArithmetic,
    LowerChannelAffine,
    LowerGemm,
    LowerShapeOps,
    MarkHostOps,
    ReduceMeanToGlobalPool,
    RemoveIdentity,
    canonicalize,
    host_ops_in_middle,
)
from bbgrap_hls.reference import run_float
from tests.models import ALL, Builder, random_input, save

C, HW = 4, 6
X = (1, C, HW, HW)


def load(model: onnx.ModelProto, tmp_path) -> Graph:
    return load_model(save(model, tmp_path / "m.onnx"))


def feeds_for(graph: Graph, scale: float = 1.0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {i: (scale * rng.standard_normal(graph.shape(i))).astype(np.float32) for i in graph.inputs}


def signature(graph: Graph) -> list[tuple]:
    return [(n.op, tuple(n.inputs), tuple(n.outputs)) for n in graph.nodes]


def kinds(graph: Graph) -> Counter:
    return Counter(n.op for n in graph.nodes)


def check(passes: list, graph: Graph, exact: bool, scale: float = 1.0) -> Graph:
    """Run ``passes`` in order; the float reference must give the same outputs (same names)."""
    before_sig = signature(graph)
    out = graph
    for cls in passes:
        out = cls().run(out)
    assert signature(graph) == before_sig, "a pass edited its input graph"
    feeds = feeds_for(graph, scale)
    before, after = run_float(graph, feeds), run_float(out, feeds)
    assert list(after) == list(before)
    for k in before:
        if exact:
            np.testing.assert_array_equal(after[k], before[k])
        else:
            np.testing.assert_allclose(after[k], before[k], rtol=1e-4, atol=1e-5)
    return out


def tail(b: Builder, y: str, name: str = "model") -> onnx.ModelProto:
    """Finish a Builder model with a Relu named ``y`` as its output."""
    b.nodes.append(onnx.helper.make_node("Relu", [y], ["y"], name="out_relu"))
    b.shapes["y"] = b.shapes[y]
    return b.model(["y"], name)


# -- RemoveIdentity ----------------------------------------------------------------------
IDENTITIES = {
    "Identity": lambda b, x: b.node("Identity", [x], b.shapes[x]),
    "Dropout": lambda b, x: b.node("Dropout", [x, b.const("ratio", np.array(0.3, np.float32))], b.shapes[x]),
    "Reshape": lambda b, x: b.reshape(x, [0, -1, HW, HW], b.shapes[x]),
    "Transpose": lambda b, x: b.node("Transpose", [x], b.shapes[x], perm=[0, 1, 2, 3]),
    "Concat": lambda b, x: b.concat([x]),
    "Sum": lambda b, x: b.node("Sum", [x], b.shapes[x]),
}


@pytest.mark.parametrize("case", sorted(IDENTITIES))
def test_remove_identity(case, tmp_path):
    b = Builder(1)
    g = load(tail(b, IDENTITIES[case](b, b.conv(b.input("x", X), C))), tmp_path)
    assert kinds(g)[case] == 1
    out = check([RemoveIdentity], g, exact=True)
    assert kinds(out) == Counter({"Conv": 1, "Relu": 1})


def test_remove_identity_keeps_output_names(tmp_path):
    b = Builder(1)
    c = b.conv(b.input("x", X), C)
    b.nodes.append(onnx.helper.make_node("Identity", [c], ["y"], name="id"))
    b.nodes.append(onnx.helper.make_node("Identity", ["x"], ["y2"], name="id2"))
    b.shapes.update(y=X, y2=X)
    g = load(b.model(["y", "y2"]), tmp_path)
    out = check([RemoveIdentity], g, exact=True)
    # y is now written by the Conv; x -> y2 cannot lose its node without renaming an output
    assert kinds(out) == Counter({"Conv": 1, "Identity": 1})
    assert out.outputs == ["y", "y2"]


def test_remove_identity_flatten_of_matrix(tmp_path):
    b = Builder(1)
    g = load(tail(b, b.flatten(b.gemm(b.input("x", (2, 8)), 5))), tmp_path)
    out = check([RemoveIdentity], g, exact=True)
    assert "Flatten" not in kinds(out)


# -- FoldConstants -----------------------------------------------------------------------
def test_fold_constants(tmp_path):
    b = Builder(1)
    x, s = b.input("x", X), b.input("s", (1, C, 1, 1))
    t = b.act(b.binary("Mul", s, b.const("k", np.full((1, C, 1, 1), 3.0, np.float32))), "Sigmoid")
    g = load(tail(b, b.binary("Add", b.conv(x, C), t)), tmp_path)
    value = np.linspace(-1, 1, C, dtype=np.float32).reshape(1, C, 1, 1)
    feeds = feeds_for(g)
    want = run_float(g, {**feeds, "s": value})["y"]
    # make ``s`` a constant, as a pass may leave one behind
    g.tensors["s"].data = value
    g.inputs.remove("s")
    out = FoldConstants().run(g)
    assert kinds(out) == Counter({"Conv": 1, "Add": 1, "Relu": 1})
    np.testing.assert_array_equal(run_float(out, {"x": feeds["x"]})["y"], want)


# -- LowerShapeOps ------------------------------------------------------------------------
SHAPE_CASES = {
    "Flatten": lambda b, x: b.flatten(x),
    "Squeeze": lambda b, x: b.node("Squeeze", [x, b.const("ax", np.array([0], np.int64))], X[1:]),
    "Unsqueeze": lambda b, x: b._unsqueeze0(x),
    "Unsqueeze+Squeeze": lambda b, x: b.node(
        "Squeeze", [b.node("Unsqueeze", [x, b.const("ax", np.array([2], np.int64))], (1, C, 1, HW, HW)),
                    b.const("ax", np.array([2], np.int64))], X),
}


@pytest.mark.parametrize("case", sorted(SHAPE_CASES))
def test_lower_shape_ops(case, tmp_path):
    b = Builder(1)
    y = SHAPE_CASES[case](b, b.conv(b.input("x", X), C))
    if case == "Unsqueeze":
        b.shapes[y] = (1,) + X
    g = load(tail(b, y), tmp_path)
    out = check([LowerShapeOps], g, exact=True)
    assert kinds(out) == Counter({"Conv": 1, "Reshape": 1, "Relu": 1})
    if case == "Unsqueeze+Squeeze":  # merged into one same-shape Reshape, which then goes
        assert kinds(check([LowerShapeOps, RemoveIdentity], g, exact=True))["Reshape"] == 0


# -- LowerArithmetic ----------------------------------------------------------------------
def _pc(b: Builder, lo: float = 0.0) -> str:
    v = b.rng.normal(0, 1, (1, C, 1, 1)).astype(np.float32)
    return b.const("k", np.sign(v) * (np.abs(v) + lo))


ARITH = {  # case -> (builder, exact)
    "x-c": (lambda b, x: b.binary("Sub", x, _pc(b)), True),
    "c-x": (lambda b, x: b.binary("Sub", _pc(b), x), True),
    "x-y": (lambda b, x: b.binary("Sub", x, b.act(x, "Sigmoid")), True),
    "x/c": (lambda b, x: b.binary("Div", x, _pc(b, 0.5)), False),
    "sum3": (lambda b, x: b.node("Sum", [x, b.act(x, "Sigmoid"), b.act(x, "Tanh")], X), True),
    "c+x": (lambda b, x: b.binary("Add", _pc(b), x), True),
    "c*x": (lambda b, x: b.binary("Mul", _pc(b), x), True),
}


@pytest.mark.parametrize("case", sorted(ARITH))
def test_lower_arithmetic(case, tmp_path):
    build, exact = ARITH[case]
    b = Builder(2)
    g = load(tail(b, build(b, b.act(b.conv(b.input("x", X), C), "LeakyRelu", alpha=0.1))), tmp_path)
    out = check([LowerArithmetic], g, exact=exact)
    k = kinds(out)
    assert not {"Sub", "Div", "Sum"} & set(k)
    assert signature(out) != signature(g)
    for n in out.nodes:
        if n.op in ("Add", "Mul"):  # a constant operand always comes second
            assert out.const(n.inputs[0]) is None


# -- ClipToRelu6 ----------------------------------------------------------------------------
@pytest.mark.parametrize("bounds", [(0.0, 6.0, "Relu6"), (0.0, None, "Relu"), (-1.0, 1.0, "Clip"),
                                    (0.0, 4.0, "Clip")])
@pytest.mark.parametrize("opset", [9, 13])
def test_clip_to_relu6(bounds, opset, tmp_path):
    lo, hi, want = bounds
    b = Builder(3, opset)
    x = b.conv(b.input("x", X), C)
    if opset < 11:
        y = b.node("Clip", [x], X, min=lo, **({} if hi is None else {"max": hi}))
    else:
        ins = [x, b.const("lo", np.array(lo, np.float32))] + ([] if hi is None else [b.const("hi", np.array(hi, np.float32))])
        y = b.node("Clip", ins, X)
    g = load(tail(b, y), tmp_path)
    out = check([ClipToRelu6], g, exact=True, scale=5.0)  # inputs large enough to hit 6
    assert kinds(out)[want] == (2 if want == "Relu" else 1)
    assert kinds(out)["Clip"] == (want == "Clip")


# -- ReduceMeanToGlobalPool -----------------------------------------------------------------
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("axes", [(2, 3), (-1, -2)])
def test_reduce_mean_to_global_pool(keepdims, opset, axes, tmp_path):
    b = Builder(4, opset)
    x = b.conv(b.input("x", X), C)
    shape = (1, C, 1, 1) if keepdims else (1, C)
    if opset >= 18:
        m = b.node("ReduceMean", [x, b.const("axes", np.array(axes, np.int64))], shape, keepdims=keepdims)
    else:
        m = b.node("ReduceMean", [x], shape, axes=list(axes), keepdims=keepdims)
    y = b.gemm(m, 3) if not keepdims else m
    g = load(tail(b, y), tmp_path)
    out = check([ReduceMeanToGlobalPool], g, exact=False)
    assert kinds(out)["GlobalAveragePool"] == 1 and "ReduceMean" not in kinds(out)
    if not keepdims:  # the shape-only change disappears into the Dense
        assert kinds(canonicalize(g)) == Counter({"Conv": 1, "GlobalAveragePool": 1, "Dense": 1, "Relu": 1})


def test_reduce_mean_over_channels_stays(tmp_path):
    b = Builder(4)
    g = load(tail(b, b.node("ReduceMean", [b.conv(b.input("x", X), C)], (1, 1, HW, HW), axes=[1])), tmp_path)
    assert kinds(check([ReduceMeanToGlobalPool], g, exact=True))["ReduceMean"] == 1


# -- LowerGemm ------------------------------------------------------------------------------
def _gemm(b: Builder, x: str, trans_b: int = 1, alpha: float = 1.0, beta: float = 1.0, bias=(5,)) -> str:
    n, c = b.shapes[x]
    w = b.weights((5, c) if trans_b else (c, 5), c)
    ins = [x, b.const("w", w)] + ([] if bias is None else [b.const("c", b.rng.normal(0, 1, bias).astype(np.float32))])
    return b.node("Gemm", ins, (n, 5), transB=trans_b, alpha=alpha, beta=beta)


GEMMS = {  # case -> (builder, lowered?)
    "transB1": (lambda b, x: _gemm(b, x), True),
    "transB0": (lambda b, x: _gemm(b, x, trans_b=0), True),
    "alpha_beta": (lambda b, x: _gemm(b, x, alpha=0.5, beta=-2.0), True),
    "no_bias": (lambda b, x: _gemm(b, x, bias=None), True),
    "bias_1xCo": (lambda b, x: _gemm(b, x, bias=(1, 5)), True),
    "bias_scalar": (lambda b, x: _gemm(b, x, bias=()), True),
    "bias_per_row": (lambda b, x: _gemm(b, x, bias=(3, 5)), False),
    "matmul": (lambda b, x: b.matmul(x, 5), True),
}


@pytest.mark.parametrize("case", sorted(GEMMS))
def test_lower_gemm(case, tmp_path):
    build, lowered = GEMMS[case]
    b = Builder(5)
    g = load(tail(b, build(b, b.input("x", (3, 8)))), tmp_path)
    out = check([LowerGemm], g, exact=False)
    assert kinds(out)["Dense"] == lowered
    assert kinds(out)["Gemm"] + kinds(out)["MatMul"] == (not lowered)


def test_dense_counts(tmp_path):
    b = Builder(5)
    out = LowerGemm().run(load(tail(b, _gemm(b, b.input("x", (3, 8)))), tmp_path))
    dense = next(n for n in out.nodes if n.op == "Dense")
    assert get_op("Dense").macs(dense, out) == 3 * 8 * 5
    assert get_op("Dense").params(dense, out) == 8 * 5 + 5


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


# -- MarkHostOps ------------------------------------------------------------------------------
def test_trailing_host_ops(tmp_path):
    b = Builder(9)
    s = b.act(b.gemm(b.input("x", (1, 8)), 6), "Softmax", axis=1)
    r = b.reshape(s, [1, 2, 3], (1, 2, 3))
    b.nodes[-1].output[0] = "y"
    b.shapes["y"] = b.shapes[r]
    g = load(b.model(["y"]), tmp_path)
    out = check([MarkHostOps], g, exact=True)
    assert [(n.op, n.host) for n in out.nodes] == [("Gemm", False), ("Softmax", True), ("Reshape", True)]
    assert host_ops_in_middle(out) == []


def test_host_op_in_the_middle(tmp_path):
    """A Softmax over channels feeding a conv (LRN was this test's host op until it became a
    fabric op, issue 14)."""
    b = Builder(13)
    x = b.node("Softmax", [b.conv(b.input("x", X), C)], X, axis=1)
    g = load(tail(b, b.conv(x, C)), tmp_path)
    out = canonicalize(g)
    sm = next(n for n in out.nodes if n.op == "Softmax")
    assert sm.host
    problems = host_ops_in_middle(out)
    assert len(problems) == 1 and f"'{sm.name}' (Softmax)" in problems[0] and "(Conv)" in problems[0]


def test_lrn_in_the_middle_is_a_fabric_op(tmp_path):
    b = Builder(9)
    x = b.node("LRN", [b.conv(b.input("x", X), C)], X, size=3)
    out = canonicalize(load(tail(b, b.conv(x, C)), tmp_path))
    assert not next(n for n in out.nodes if n.op == "LRN").host
    assert host_ops_in_middle(out) == []


# -- canonicalize ----------------------------------------------------------------------------
SMALL_RES = {"resnet18": 32, "mobilenet_v2": 32}  # shape-faithful at a resolution that runs fast
LEFTOVER = {"BatchNormalization", "Gemm", "MatMul", "Sub", "Div", "Sum", "Identity", "Dropout", "Flatten",
            "Squeeze", "Unsqueeze", "ReduceMean"}


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("opset", [9, 13])
def test_canonicalize_models(name, opset, tmp_path):
    kw = {"res": SMALL_RES[name]} if name in SMALL_RES else {}
    model = ALL[name](seed=3, opset=opset, **kw)
    path = save(model, tmp_path / "m.onnx")
    g = load_model(path)
    before = signature(g)
    out = canonicalize(g)
    assert signature(g) == before
    k = kinds(out)
    assert set(k) <= CANONICAL_KINDS and not set(k) & LEFTOVER, k
    assert signature(canonicalize(out)) == signature(out)  # a fixed point
    feeds = random_input(model, seed=3)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = run_float(out, feeds)
    for o, ref in zip(out.outputs, want, strict=True):
        np.testing.assert_allclose(got[o], ref, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(ref).max())))
    if {"BatchNormalization", "Gemm", "Flatten"} & set(kinds(g)):
        assert len(out.nodes) < len(g.nodes)


LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "shufflenet", "squeezenet"])
def test_canonicalize_light_zoo(name):
    g = load_model(os.path.join(LIGHT, f"light_{name}.onnx"))
    out = canonicalize(g)
    assert set(kinds(out)) <= CANONICAL_KINDS
    feeds = feeds_for(g)
    ref, got = run_float(g, feeds), run_float(out, feeds)
    for o in g.outputs:
        np.testing.assert_allclose(got[o], ref[o], rtol=1e-4, atol=1e-5)
