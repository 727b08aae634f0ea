"""QDQ models from onnxruntime's quantize_static: our integer reference against onnxruntime.

onnxruntime runs with graph optimisations off, i.e. the QDQ semantics as written (DQ →
float op → Q). With optimisations on, on x86 CPUs without VNNI its fused u8s8 kernels
saturate 16-bit pair sums; that path is checked with ``reduce_range=True`` (7-bit
weights, which avoids the saturation). docs/numerics.md, "QDQ models", has the figures.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.frontend import fold, load_model
from bbgrap_hls.ops.qdq import fold_dequantize
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import check_qdq_model, quantize, run_int8
from tests import models

# Models whose every output is exact; inception_block's Concat gets one scale where the
# QDQ model has one per input (our producers requantise once, onnxruntime twice).
EXACT_MODELS = ["mlp", "lenet", "residual_block", "ds_block", "se_block", "channel_shuffle",
                "mlp_autoencoder", "ds_cnn"]


@pytest.fixture(autouse=True)
def _fold_dequantize(monkeypatch):
    """Until the frontend registers it: fold constant DequantizeLinear at any opset."""
    if "DequantizeLinear" not in fold._FAST:
        monkeypatch.setitem(fold._FAST, "DequantizeLinear", fold_dequantize)


class _Reader(CalibrationDataReader):
    def __init__(self, name: str, shape: list[int], n: int = 16):
        rng = np.random.default_rng(1)
        self.it = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.it, None)


def _qdq(name: str, tmp_path, **kw) -> tuple[str, str, list[int]]:
    m = models.ALL[name](seed=0)
    fp = models.save(m, tmp_path / f"{name}.onnx")
    x = m.graph.input[0].name
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    qp = str(tmp_path / f"{name}_qdq.onnx")
    logging.disable(logging.WARNING)
    try:
        opts = dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
        quantize_static(fp, qp, _Reader(x, shape), **(opts | kw))
    finally:
        logging.disable(logging.NOTSET)
    return qp, x, shape


def _agreement(qp: str, x: str, shape: list[int], level) -> tuple[int, int, int]:
    """(elements, exact, within one step) of our int8 outputs against onnxruntime's."""
    check_qdq_model(qp)
    q = quantize(canonicalize(load_model(qp)))
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    sess = ort.InferenceSession(qp, so, providers=["CPUExecutionProvider"])
    o = q.outputs[0]
    s, z = float(q.tensors[o].quant.scale), int(q.tensors[o].quant.zp)
    rng = np.random.default_rng(2)
    n = exact = near = 0
    for _ in range(4):
        xin = rng.standard_normal(shape).astype(np.float32)
        theirs = np.rint(sess.run(None, {x: xin})[0].astype(np.float64) / s) + z
        d = np.abs(theirs - run_int8(q, {x: xin})[o].astype(np.int64))
        n, exact, near = n + d.size, exact + int((d == 0).sum()), near + int((d <= 1).sum())
    return n, exact, near


@pytest.mark.parametrize("name", EXACT_MODELS)
def test_qdq_matches_onnxruntime(name, tmp_path):
    n, exact, near = _agreement(*_qdq(name, tmp_path), ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    assert near >= 0.999 * n and exact >= 0.99 * n


@pytest.mark.parametrize("name", ["lenet", "ds_cnn"])
def test_qdq_reduce_range_matches_optimised_onnxruntime(name, tmp_path):
    n, exact, near = _agreement(*_qdq(name, tmp_path, reduce_range=True),
                                ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    assert near >= 0.999 * n and exact >= 0.99 * n


def test_qdq_concat_within_one_step(tmp_path):
    n, exact, near = _agreement(*_qdq("inception_block", tmp_path), ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    assert near >= 0.999 * n and exact >= 0.9 * n


@pytest.mark.parametrize("kw,what", [
    ({"activation_type": QuantType.QInt16}, "int16"),
    ({"activation_type": QuantType.QUInt8, "weight_type": QuantType.QUInt8, "per_channel": False,
      "extra_options": {"WeightSymmetric": False}}, "non-zero zero point"),
])
def test_unsupported_schemes_are_refused(kw, what, tmp_path):
    qp, _, _ = _qdq("lenet", tmp_path, **kw)
    with pytest.raises(UnsupportedError, match=f"tensor '.*'.*{what}"):
        check_qdq_model(qp)


def test_per_axis_activations_are_refused(tmp_path):
    c = 3
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)]
    inits = [numpy_helper.from_array(np.full(c, 0.1, np.float32), "s"),
             numpy_helper.from_array(np.zeros(c, np.int8), "z")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 2, 2])], inits)
    path = tmp_path / "axis.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    with pytest.raises(UnsupportedError, match="tensor 'x': per-axis"):
        check_qdq_model(path)
    with pytest.raises(UnsupportedError, match="tensor 'x': per-axis"):
        quantize(canonicalize(load_model(path)))
