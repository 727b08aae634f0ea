"""1-D models (Conv1d, MaxPool1d, AvgPool1d over (N, C, L)) load as 2-D with W = 1.

The float reference of the lifted graph equals onnxruntime on the 1-D model; the tensors
that cannot be lifted keep their shape (and a 1-D Conv behind them is refused as before);
the whole flow runs (int8, plan over several cores, g++ C simulation bit-exact).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.errors import BbgrapError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.reference import run_float


def ecg_model(path, transpose_first: bool = False, output_1d: bool = False) -> str:
    """Conv1d(stride 2, asymmetric pads) → BN → Relu → MaxPool1d, a residual Conv1d branch
    added back, a broadcast per-channel constant Mul, Concat on channels (axis -2), AvgPool1d,
    then Flatten → Gemm (or the 1-D tensor itself as the output)."""
    rng = np.random.default_rng(0)

    def w(name, *s, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(s) * scale).astype(np.float32), name)

    nodes = []
    x = "x"
    if transpose_first:
        nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1], name="tr"))
        x = "xt"
    nodes += [
        helper.make_node("Conv", [x, "w1", "b1"], ["c1"], kernel_shape=[5], strides=[2], pads=[2, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["n1"], name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2], strides=[2], name="pool1"),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], kernel_shape=[3], pads=[1, 1], dilations=[1],
                         name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Add", ["r2", "p1"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "s"], ["m"], name="mul_pc"),
        helper.make_node("Concat", ["m", "p1"], ["cat"], axis=-2, name="cat"),
        helper.make_node("AveragePool", ["cat"], ["ap"], kernel_shape=[3], strides=[1], pads=[1, 1],
                         count_include_pad=0, name="pool2"),
    ]
    inits = [w("w1", 8, 4, 5), w("b1", 8), w("g", 8, scale=0.1), w("be", 8), w("mu", 8),
             numpy_helper.from_array(np.full(8, 0.9, np.float32), "var"), w("w2", 8, 8, 3), w("b2", 8),
             numpy_helper.from_array((1 + 0.1 * rng.standard_normal((8, 1))).astype(np.float32), "s")]
    if output_1d:
        out = helper.make_tensor_value_info("ap", TensorProto.FLOAT, [1, 16, 16])
    else:
        nodes += [helper.make_node("Flatten", ["ap"], ["f"], axis=1, name="flat"),
                  helper.make_node("Gemm", ["f", "wd", "bd"], ["y"], transB=1, name="fc")]
        inits += [w("wd", 5, 16 * 16, scale=0.05), w("bd", 5)]
        out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])
    shape = [1, 64, 4] if transpose_first else [1, 4, 64]
    g = helper.make_graph(nodes, "ecg", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return str(path)


@pytest.mark.parametrize("output_1d", [False, True])
def test_1d_model_matches_onnxruntime(tmp_path, output_1d):
    path = ecg_model(tmp_path / "ecg.onnx", output_1d=output_1d)
    g = load_model(path)
    assert g.shape("x") == (1, 4, 64, 1)
    conv = next(n for n in g.nodes if n.name == "conv1")
    assert conv.attrs["kernel"] == (5, 1) and tuple(conv.attrs["pads"]) == (2, 0, 1, 0)
    x = np.random.default_rng(3).standard_normal((1, 4, 64)).astype(np.float32)
    (want,) = ort.InferenceSession(path).run(None, {"x": x})
    name = g.outputs[0]
    for graph in (g, canonicalize(g)):
        got = run_float(graph, {"x": x})[name]
        assert got.shape == (want.shape + (1,) if output_1d else want.shape)
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-5)
        # `run` and `predict` give the declared (N, C, L) shape back (Graph.output_shapes)
        declared = graph.declared_outputs({name: got})[name]
        assert declared.shape == want.shape
    if output_1d:
        from bbgrap_hls.cli import main

        np.save(tmp_path / "x.npy", x)
        assert main(["run", path, "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy")]) == 0
        y = np.load(tmp_path / "y.npy")
        assert y.shape == want.shape
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_1d_conv_behind_a_transpose_is_not_lifted(tmp_path):
    with pytest.raises(BbgrapError, match="only 2-D convolution"):
        load_model(ecg_model(tmp_path / "t.onnx", transpose_first=True))


def test_2d_models_are_untouched(tmp_path):
    from bbgrap_hls.frontend.lift1d import lift_plan
    from tests import models

    for name, build in models.ALL.items():
        if name in ("resnet18", "mobilenet_v2"):
            continue  # large; 2-D like the rest
        assert lift_plan(onnx.load(models.save(build(seed=0), tmp_path / f"{name}.onnx"))) == set(), name
    assert lift_plan(onnx.load(ecg_model(tmp_path / "ecg.onnx")))  # and the 1-D one is lifted


@pytest.mark.csim
def test_1d_model_csim_on_several_cores(tmp_path):
    from bbgrap_hls.board import load_board
    from bbgrap_hls.codegen import csim
    from bbgrap_hls.codegen.project import generate
    from bbgrap_hls.quant.quantizer import quantize
    from bbgrap_hls.search import make_plan

    g = canonicalize(load_model(ecg_model(tmp_path / "ecg.onnx")))
    gq = quantize(g)
    board = load_board("u250")
    plan = make_plan(g, board, strategy="even")
    assert len({n.core for n in plan.nodes if n.core is not None}) > 1
    x = np.random.default_rng(3).standard_normal((1, 4, 64)).astype(np.float32)  # the 1-D shape
    files, design = generate(gq, plan, board, {gq.inputs[0]: x})
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    res = csim.run(tmp_path, tmp_path / "tb", design.outputs, werror=True)
    assert res.ok, res.message
