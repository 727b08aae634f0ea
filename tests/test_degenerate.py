"""Degenerate numbers never crash (issue 14 item 4, docs/numerics.md "Degenerate numbers").

A ReLU whose input is always negative (a zero-range tensor), an all-zero weight channel,
a constant branch (zero weights: its value is the bias everywhere) and a branch that is
constant zero go through quantize, the int8 reference, gen and (marker ``csim``, a few
examples) g++ C simulation. Hypothesis draws the shapes, which of the degenerate pieces
and where; the unit tests pin the arithmetic rules (saturating multipliers, zero-range
scale, refusal of non-finite ranges).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.errors import BadInputError
from bbgrap_hls.quant import arith
from tests.test_properties import _COMMON, _Net, check_example

KINDS = ("dead_relu", "zero_channel", "const_branch", "zero_branch")


def degenerate_model(kinds: tuple[str, ...], c: int, hw: int, seed: int):
    """Conv stem, then one piece per kind, summed or concatenated; GAP + Dense head."""
    net = _Net(np.random.default_rng(seed))
    net.shapes["x"] = (1, c, hw, hw)
    x = net.conv("x", c, 3, 1, 1)
    branches = []
    for k in kinds:
        y = net.conv(x, c, 1, 1, 0)
        wname, bname = net.inits[-2].name, net.inits[-1].name
        w = numpy_helper.to_array(net.inits[-2]).copy()
        if k == "dead_relu":  # bias far below any pre-activation: Relu output is always 0
            net.inits[-1] = numpy_helper.from_array(np.full(c, -1e3, np.float32), bname)
            y = net.act(y, "Relu")
        elif k == "zero_channel":
            w[0] = 0
            net.inits[-2] = numpy_helper.from_array(w, wname)
        elif k in ("const_branch", "zero_branch"):
            net.inits[-2] = numpy_helper.from_array(np.zeros_like(w), wname)
            if k == "zero_branch":
                net.inits[-1] = numpy_helper.from_array(np.zeros(c, np.float32), bname)
        branches.append(y)
    y = branches[0]
    for b in branches[1:]:
        y = net.node("Add", [y, b], net.shapes[y])
    y = net.node("Concat", [y, branches[-1]], (1, 2 * c, hw, hw), axis=1)
    y = net.node("GlobalAveragePool", [y], (1, 2 * c, 1, 1))
    y = net.node("Flatten", [y], (1, 2 * c), axis=1)
    wt = net.const(net.rng.standard_normal((3, 2 * c)))
    y = net.node("Gemm", [y, wt, net.const(np.zeros(3))], (1, 3), transB=1)
    g = helper.make_graph(net.nodes, "degenerate", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 3])], net.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


def _kinds(draw) -> tuple[str, ...]:
    return tuple(draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3)))


@settings(max_examples=12, **_COMMON)
@given(data=st.data())
def test_degenerate_graphs_quantize_and_gen(tmp_path_factory, data):
    kinds = _kinds(data.draw)
    c, hw, seed = data.draw(st.integers(1, 4)), data.draw(st.integers(3, 6)), data.draw(st.integers(0, 999))
    try:
        check_example(degenerate_model(kinds, c, hw, seed), "u250", "greedy", tmp_path_factory.mktemp("d"), seed=seed)
    except Exception as e:
        raise AssertionError(f"kinds {kinds} c {c} hw {hw} seed {seed}: {type(e).__name__}: {e}") from e


@pytest.mark.csim
@pytest.mark.parametrize("kinds", [("dead_relu", "zero_channel"), ("const_branch", "zero_branch", "dead_relu")],
                         ids=["dead_zero_channel", "constant_branches"])
def test_degenerate_graphs_csim_bit_exact(tmp_path, kinds):
    res = check_example(degenerate_model(kinds, 3, 5, 1), "u250", "greedy", tmp_path, csim=True)
    assert res["csim"].startswith("PASS")


def test_dead_relu_gets_the_zero_range_scale(tmp_path):
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant import quantize, run_int8
    from tests.models import save

    g = canonicalize(load_model(save(degenerate_model(("dead_relu",), 2, 4, 0), tmp_path / "m.onnx")))
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gq = quantize(g, {"x": rng.standard_normal((4, 1, 2, 4, 4)).astype(np.float32)})
    dead = [t for t in gq.tensors.values() if t.quant is not None and float(t.quant.scale) == arith.ZERO_RANGE_SCALE]
    assert dead and all(int(t.quant.zp) == -128 for t in dead)
    env = run_int8(gq, {"x": rng.standard_normal((1, 2, 4, 4)).astype(np.float32)}, keep=True)
    for t in dead:  # exactly the zero point: real 0
        assert np.all(env[t.name] == -128)


@pytest.mark.parametrize("real,want", [
    (0.0, (0, arith.MAX_SHIFT)),
    (2.0**-70, (0, arith.MAX_SHIFT)),
    (2.0**23, (arith.MAX_MULT, 1)),
    (1e12, (arith.MAX_MULT, 1)),
    (2.0**23 * (1 - 2.0**-40), (arith.MAX_MULT, 1)),  # rounds up to 2^23
    (2.0**-50, (round(2.0**12), 62)),  # past the largest shift: fewer significant bits
])
def test_quantize_multiplier_saturates(real, want):
    assert arith.quantize_multiplier(real) == want


@pytest.mark.parametrize("real", [2.0**23, 2.0**23 * 1.5, 3e9, 1e15])
def test_saturated_multiplier_gives_the_exact_result(real):
    """From 2^23 on, every non-zero accumulator saturates the clamp, as the exact product does."""
    acc = np.arange(-300, 301, dtype=np.int64)
    m, s = arith.quantize_multiplier(real)
    exact = np.clip(np.where(acc == 0, 5, np.sign(acc) * 10**9 + 5), -128, 127)
    assert arith.requantize(acc, m, s, 5).tolist() == exact.tolist()


def test_tiny_multiplier_gives_the_zero_point():
    acc = np.array([-(2**31) + 1, -1, 0, 1, 2**31 - 1], np.int64)
    m, s = arith.quantize_multiplier(1e-20)
    assert arith.requantize(acc, m, s, -7).tolist() == [-7] * 5


def test_zero_range_scale_and_non_finite_refusal():
    assert arith.choose_params(0.0, 0.0) == (np.float32(1.0), -128)
    assert arith.choose_params(-1e-9, 1e-9)[0] == np.float32(1.0)
    with pytest.raises(ValueError):
        arith.choose_params(0.0, float("inf"))
    w_q, s = arith.quantize_weights(np.array([[0.0, 0.0], [1e-44, -1e-44], [1.0, -0.5]], np.float32))
    assert np.all(s > 0) and w_q[0].tolist() == [0, 0] and w_q[2].tolist() == [127, -64]


def test_overflowing_model_is_refused_naming_the_tensor(tmp_path):
    """A float model that overflows float32 on the calibration samples: one clean line."""
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant import quantize
    from tests.models import save

    net = _Net(np.random.default_rng(0))
    net.shapes["x"] = (1, 2, 4, 4)
    y = net.conv("x", 2, 1, 1, 0)
    net.inits[-2] = numpy_helper.from_array(np.full((2, 2, 1, 1), 1e30, np.float32), net.inits[-2].name)
    y = net.conv(y, 2, 1, 1, 0)
    net.inits[-2] = numpy_helper.from_array(np.full((2, 2, 1, 1), 1e30, np.float32), net.inits[-2].name)
    g = helper.make_graph(net.nodes, "o", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 2, 4, 4])], net.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    gf = canonicalize(load_model(save(m, tmp_path / "m.onnx")))
    with pytest.raises(BadInputError, match=r"tensor '.*': calibrated range .* is not finite"), \
            warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        quantize(gf)
