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
from bbgrap_hls.ops import Op, get_op
from bbgrap_hls.ops.qdq import fold_dequantize
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import check_qdq_model, kernels, quantize, run_int8
from tests import models

# Models whose every output is exact (docs/numerics.md); inception_block's Concat gets one
# scale where the QDQ model has one per input (our producers requantise once, onnxruntime
# twice): test_qdq_concat_mismatches_are_double_rounding.
EXACT_MODELS = ["mlp", "lenet", "residual_block", "ds_block", "se_block", "channel_shuffle",
                "mlp_autoencoder", "ds_cnn", "mobilenet_v1"]


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
    n, exact, _ = _agreement(*_qdq(name, tmp_path), ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    assert exact == n  # docs/numerics.md: every element


@pytest.mark.parametrize("name", ["lenet", "ds_cnn"])
def test_qdq_reduce_range_matches_optimised_onnxruntime(name, tmp_path):
    n, exact, _ = _agreement(*_qdq(name, tmp_path, reduce_range=True),
                             ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    assert exact == n  # docs/numerics.md: 100 % with reduce_range


# -- node by node: every node fed onnxruntime's own int8 codes, every mismatch explained ----

_U = 2.0**-24  # float32 unit roundoff: onnxruntime runs the QDQ model's ops in float32


def _ort_codes(qp: str):
    """A session returning every QuantizeLinear output (the int8 codes of every activation).

    Returns ``(session, {our tensor name: onnxruntime output name}, {our name: (s, z)})``.
    Our int8 graph keeps the tensor a QuantizeLinear reads (a graph output keeps the name of
    its final DequantizeLinear), so the names match.
    """
    m = onnx.load(qp)
    init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    outs = {o.name for o in m.graph.output}
    names, params = {}, {}
    for node in m.graph.node:
        if node.op_type != "QuantizeLinear" or node.input[0] in init:
            continue
        assert init[node.input[2]].dtype == np.int8  # QInt8 activations: codes compare directly
        names[node.input[0]] = node.output[0]
        params[node.input[0]] = (float(init[node.input[1]]), int(init[node.input[2]]))
        m.graph.output.append(helper.make_tensor_value_info(node.output[0], TensorProto.INT8, None))
    for node in m.graph.node:  # a graph output: its final DequantizeLinear's name is ours
        if node.op_type == "DequantizeLinear" and node.output[0] in outs:
            src = next(k for k, v in names.items() if v == node.input[0])
            names[node.output[0]], params[node.output[0]] = names[src], params[src]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]), names, params


def _exact_value(node, ins: list, q) -> tuple[np.ndarray, np.ndarray]:
    """Our pre-rounding output in output steps (exact rational, as float64) and a bound on
    onnxruntime's float32 error there: ``(v, err)``, ``v = acc·M/2^S`` (``acc·2^-S`` for
    ChannelAffine) before the zero point and clamp. ``err`` bounds the error of a float32
    sum of ``K`` products, ``(K + 4)·u·Σ|terms|``, plus the multiplier's 2^-30."""
    k = node.attrs["q"]
    x = ins[0].astype(np.int64) - k["zp_in"]
    if node.op == "ChannelAffine":
        cs = (1, -1) + (1,) * (x.ndim - 2)
        m, b, s = (k[key].reshape(cs).astype(np.float64) for key in ("mult", "bias", "shift"))
        v = (x * m + b) / 2.0**s
        return v, 8 * _U * (np.abs(x * m) + np.abs(b)) / 2.0**s + 2.0**-30 * np.abs(v)
    b_q = k["bias"] + k["zp_in"] * k["w"].reshape(len(k["bias"]), -1).astype(np.int64).sum(1)
    absk = dict(k, w=np.abs(k["w"]), bias=np.abs(b_q), zp_in=0)
    if node.op == "Conv":
        acc, mag = kernels.conv_acc(ins[0], k, node.attrs), kernels.conv_acc(np.abs(x), absk, node.attrs)
        terms = k["w"][0].size
    else:
        acc, mag = kernels.dense_acc(ins[0], k, node.attrs), kernels.dense_acc(np.abs(x), absk, node.attrs)
        terms = k["w"].shape[1]
    cs = (1, -1) + (1,) * (acc.ndim - 2)
    r = k["mult"].reshape(cs) / 2.0 ** k["shift"].reshape(cs)
    v = acc * r
    return v, ((terms + 4) * _U * mag + 4 * _U * np.abs(acc)) * r + 2.0**-30 * np.abs(v)


def _per_node(qp: str, x: str, feeds) -> dict[str, int]:
    """Every fabric node of our int8 graph run on onnxruntime's codes of its inputs, its
    output compared with onnxruntime's codes; returns the count of elements per class.

    Classes: ``exact``; ``near_tie`` (a Conv/Dense/ChannelAffine output whose exact value
    is within onnxruntime's float32 error of a .5 boundary: its float rounding may go
    either way); ``tie`` (an exact .5: ours rounds up, onnxruntime to even); ``concat``
    (a producer of a Concat input: onnxruntime rounds onto the input's own scale, then
    again onto the Concat's, ours once onto the Concat's: one step apart) and
    ``concat_clip`` (the same, where onnxruntime's first code saturates: the input's own
    range is narrower than the Concat's). For the last two onnxruntime's code must equal
    that double rounding of our exact value. Anything else fails the test.
    """
    q = quantize(canonicalize(load_model(qp)))
    sess, names, params = _ort_codes(qp)
    outs = [o.name for o in sess.get_outputs()]
    concat_of = {i: n for n in q.nodes if n.op == "Concat" for i in n.inputs}
    count = dict.fromkeys(("exact", "near_tie", "tie", "concat", "concat_clip"), 0)
    for xin in feeds:
        res = dict(zip(outs, sess.run(None, {x: xin}), strict=True))
        theirs = {t: res[o].reshape(q.tensors[t].shape) for t, o in names.items() if t in q.tensors}
        for node in q.nodes:
            acts = [i for i in node.inputs if i and q.tensors[i].data is None]
            if node.host or any(_own_scale(q, params, i) for i in acts):
                continue  # the Concat itself: its inputs are on other scales in onnxruntime
            assert all(i in theirs for i in acts + node.outputs), node.name
            ins = [theirs[i] if i in theirs else (q.tensors[i].data if i else None) for i in node.inputs]
            op = get_op(node.op)
            ours = (op.run_int8(node, ins, q) if type(op).run_int8 is not Op.run_int8
                    else kernels.run_node_int8(node, ins, q))[0].astype(np.int64)
            y = node.outputs[0]
            if _own_scale(q, params, y):  # ours is on the Concat's scale: compare its slice
                cat = concat_of[y]
                lo = sum(q.tensors[i].shape[1] for i in cat.inputs[:cat.inputs.index(y)])
                ref = theirs[cat.outputs[0]][:, lo:lo + ours.shape[1]].astype(np.int64)
                (s_i, z_i), (s_c, z_c) = params[y], params[cat.outputs[0]]
                v, _ = _exact_value(node, ins, q)  # our exact value in Concat steps
                q_i = np.clip(np.rint(v * s_c / s_i) + z_i, z_i if node.attrs.get("act") else -128, 127)
                twice = np.clip(np.rint((q_i - z_i) * s_i / s_c) + z_c, -128, 127)
                assert np.array_equal(twice, ref), node.name  # onnxruntime's two roundings
                bad, clip = ours != ref, (q_i == 127) | (q_i == -128)
                assert np.all(np.abs(ours - ref)[bad & ~clip] == 1), node.name
                count["concat"] += int((bad & ~clip).sum())
                count["concat_clip"] += int((bad & clip).sum())
            else:
                ref = theirs[y].astype(np.int64)
                bad = ours != ref
                tie, near = _ties(node, ins, q, ours, ref)
                assert np.all((tie | near)[bad]) and np.all(np.abs(ours - ref)[bad] == 1), \
                    f"{node.name}: {int((bad & ~tie & ~near).sum())} mismatches not at a tie"
                count["tie"] += int((bad & tie).sum())
                count["near_tie"] += int((bad & ~tie).sum())
            count["exact"] += int((~bad).sum())
    return count


def _ties(node, ins, q, ours, ref) -> tuple[np.ndarray, np.ndarray]:
    """(exact .5 ties, where ours must round up and onnxruntime to even; near-ties)."""
    k = node.attrs["q"]
    if node.op in ("AveragePool", "GlobalAveragePool"):
        x = ins[0].astype(np.int64) - k["zp_in"]
        if node.op == "AveragePool":  # the tested pools: non-overlapping windows, no pads
            (kh, kw), a = node.attrs["kernel"], node.attrs
            n, c, h, w = x.shape
            assert not any(a["pads"]) and (tuple(a["strides"]) == (kh, kw) or (h, w) == (kh, kw))
            acc = x.reshape(n, c, h // kh, kh, w // kw, kw).sum(axis=(3, 5))
            m, s = int(k["mult"][kh * kw - 1]), int(k["shift"][kh * kw - 1])
        else:
            acc, m, s = x.sum(axis=(2, 3), keepdims=True), int(k["mult"]), int(k["shift"])
        tie = (acc * m) % (1 << s) == 1 << (s - 1)  # exact: integers
        up = k["zp_out"] + ((acc * m) >> s) + 1
        assert np.all((ours == up)[tie]) and np.all(((ref - k["zp_out"]) % 2 == 0)[tie]), node.name
        return tie, np.zeros(tie.shape, bool)
    if node.op not in ("Conv", "Dense", "ChannelAffine"):
        return np.zeros(ours.shape, bool), np.zeros(ours.shape, bool)
    v, err = _exact_value(node, ins, q)
    return np.zeros(ours.shape, bool), np.abs(v - np.floor(v) - 0.5) <= err


def _model_feeds(name: str, tmp_path, samples: int = 4):
    qp, x, shape = _qdq(name, tmp_path)
    rng = np.random.default_rng(2)
    return qp, x, [rng.standard_normal(shape).astype(np.float32) for _ in range(samples)]


def _own_scale(q, params, t: str) -> bool:
    """onnxruntime keeps tensor ``t`` on a scale other than ours (a Concat input)."""
    s, z = params[t]
    return (s, z) != (float(q.tensors[t].quant.scale), int(q.tensors[t].quant.zp))


@pytest.mark.parametrize("name", ["lenet", "residual_block", "se_block", "ds_cnn", "mlp_autoencoder",
                                  "channel_shuffle"])
def test_qdq_every_node_matches_onnxruntime(name, tmp_path):
    count = _per_node(*_model_feeds(name, tmp_path))
    # 4 samples: no near-tie turns up (40 give 4 of 5.8 M node outputs on ds_cnn, all explained)
    assert count["exact"] > 0 and count["exact"] == sum(count.values())


def test_qdq_concat_mismatches_are_double_rounding(tmp_path):
    count = _per_node(*_model_feeds("inception_block", tmp_path))
    total = sum(count.values())
    assert count["concat"] > 0.02 * total  # the cause is present (3.2 % of node outputs)...
    n, exact, near = _agreement(*_qdq("inception_block", tmp_path), ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    assert near == n and exact < n  # ...and shows at the output, within one step on these inputs


def test_qdq_pool_ties_round_up_where_onnxruntime_rounds_to_even(tmp_path):
    """Power-of-two scales make onnxruntime's float pooling exact, so real .5 ties occur:
    AveragePool 2×2 (sum / 4) and GlobalAveragePool 4×4 (sum / 16); ours round them up
    (docs/numerics.md), onnxruntime's QuantizeLinear to even. Every other code agrees."""
    s = numpy_helper.from_array(np.array(1 / 16, np.float32), "s")
    z = numpy_helper.from_array(np.array(3, np.int8), "z")
    nodes = []
    for a, b in (("x", "x1"), ("p", "p1"), ("g", "y")):
        nodes += [helper.make_node("QuantizeLinear", [a, "s", "z"], [a + "q"]),
                  helper.make_node("DequantizeLinear", [a + "q", "s", "z"], [b])]
    nodes.insert(2, helper.make_node("AveragePool", ["x1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]))
    nodes.insert(5, helper.make_node("GlobalAveragePool", ["p1"], ["g"]))
    g = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])], [s, z])
    qp = str(tmp_path / "pool.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), qp)
    rng = np.random.default_rng(3)
    feeds = [(rng.integers(-131, 125, (1, 4, 8, 8)) / 16).astype(np.float32) for _ in range(8)]
    count = _per_node(qp, "x", feeds)
    assert count["tie"] > 20 and count["exact"] + count["tie"] == sum(count.values())


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
