"""Space-to-depth stem (passes/stem.py, issue 13 "several pixels per beat"): the graph input
held as s x s pixel blocks and the strided stem conv rewritten over them compute what the model
computes, in float (onnxruntime) and in int8 (the same codes)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.passes.stem import space_to_depth_stem, stem_conv
from bbgrap_hls.quant import quantize, run_int8
from bbgrap_hls.quant.execute import quantize_inputs
from bbgrap_hls.reference import run_float
from tests import models

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


def stem_model(k: int = 3, s: int = 2, pad: int = 1, c: int = 3, hw: int = 16, cout: int = 8, seed: int = 0):
    """conv k×k stride s (the stem) → ReLU → conv 3×3 → ReLU."""
    b = models.Builder(seed)
    x = b.act(b.conv(b.input("x", (1, c, hw, hw)), cout, k, s, pad=pad))
    return models._rename_output(b, b.act(b.conv(x, cout, 3)), "stem")


def _graph(model, tmp_path):
    return canonicalize(load_model(models.save(model, tmp_path / "m.onnx")))


def _onnx_to_blocks(x: np.ndarray, s: int) -> np.ndarray:
    """ONNX SpaceToDepth by onnxruntime (the layout's definition)."""
    from onnx import TensorProto, helper

    n, c, h, w = x.shape
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=s)
    g = helper.make_graph([node], "s2d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, c * s * s, h // s, w // s])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


# (kernel, stride, pad, channels, size): MobileNet / EfficientNet (3x3 s2 p1), ResNet (7x7 s2 p3),
# SqueezeNet 1.1 (3x3 s2 p0), a patch stem (4x4 s4 p0), an odd stride (3x3 s3 p1), 2x2 s2
STEMS = [(3, 2, 1, 3, 16), (7, 2, 3, 3, 16), (3, 2, 0, 3, 16), (4, 4, 0, 3, 16), (3, 3, 1, 2, 12), (2, 2, 0, 4, 8)]


@pytest.mark.parametrize("k,s,pad,c,hw", STEMS)
def test_blocked_stem_computes_the_model(tmp_path, k, s, pad, c, hw):
    """Float outputs equal onnxruntime's on the model (the caller gives the model's input); the
    held input is ONNX SpaceToDepth's layout; int8 codes equal the unblocked graph's."""
    model = stem_model(k, s, pad, c, hw)
    g = _graph(model, tmp_path)
    assert stem_conv(g) is not None
    gb = space_to_depth_stem(g)
    assert gb.input_blocks == {"x": s} and gb.model_input_shape("x") == (1, c, hw, hw)
    assert gb.shape("x") == (1, c * s * s, hw // s, hw // s)
    x = np.random.default_rng(1).standard_normal((1, c, hw, hw)).astype(np.float32)
    np.testing.assert_array_equal(gb.held_input("x", x), _onnx_to_blocks(x, s))
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = run_float(gb, {"x": x})[gb.outputs[0]]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    calib = {"x": np.random.default_rng(2).standard_normal((8, c, hw, hw)).astype(np.float32)}
    q, qb = quantize(g, calib), quantize(gb, calib)
    a = run_int8(q, quantize_inputs(q, {"x": x}))[q.outputs[0]]
    b = run_int8(qb, quantize_inputs(qb, {"x": x}))[qb.outputs[0]]
    np.testing.assert_array_equal(a, b)


def test_stems_that_stay_unblocked(tmp_path):
    """Stride 1, an input size the stride does not divide, a depthwise stem and an input with a
    second reader are left as they are."""
    assert stem_conv(_graph(stem_model(3, 1, 1), tmp_path)) is None
    assert stem_conv(_graph(stem_model(3, 2, 1, hw=15), tmp_path)) is None
    b = models.Builder(0)
    x = b.input("x", (1, 4, 8, 8))
    y = b.conv(x, 4, 3, 2, group=4)
    assert stem_conv(_graph(models._rename_output(b, y, "dw"), tmp_path)) is None
    b = models.Builder(0)
    x = b.input("x", (1, 3, 8, 8))
    y = b.binary("Add", b.conv(x, 3, 1, 1), x)
    assert stem_conv(_graph(models._rename_output(b, b.conv(y, 4, 3, 2), "two"), tmp_path)) is None
