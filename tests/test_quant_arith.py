"""Integer kernels against plain computations of the same formulas (docs/numerics.md)."""

from __future__ import annotations

import numpy as np
import pytest

from bbgrap_hls.ir import Node
from bbgrap_hls.quant import arith, kernels


def _requant_py(acc: int, m: int, s: int, zp: int, lo: int = -128, hi: int = 127) -> int:
    """The contract with Python's unbounded ints: floor((acc·M + 2^(S-1)) / 2^S)."""
    return min(hi, max(lo, zp + (acc * m + (1 << (s - 1))) // (1 << s)))


@pytest.mark.parametrize("acc,m,s,want", [
    (1, 1 << 30, 31, 1),        # +0.5 tie rounds up
    (-1, 1 << 30, 31, 0),       # -0.5 tie rounds up (towards +inf)
    (3, 1 << 30, 31, 2),        # 1.5 -> 2
    (-3, 1 << 30, 31, -1),      # -1.5 -> -1
    (-5, 1 << 30, 30, -5),      # negative accumulator, multiplier 1.0
    (10**6, (1 << 31) - 1, 31, 127),     # saturates high
    (-(10**6), (1 << 31) - 1, 31, -128),  # saturates low
])
def test_requantize_edges(acc, m, s, want):
    assert int(arith.requantize(np.array([acc]), m, s, 0)[0]) == want == _requant_py(acc, m, s, 0)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("zp", [-128, 0, 77])
def test_requantize_matches_python_ints(seed, zp):
    rng = np.random.default_rng(seed)
    acc = rng.integers(-(2**31), 2**31, 500)
    m = rng.integers(2 ** (arith.MULT_BITS - 1), 2**arith.MULT_BITS, 500)
    s = rng.integers(1, 63, 500)
    got = arith.requantize(acc, m, s, zp, -100, 90)
    want = [_requant_py(int(a), int(b), int(c), zp, -100, 90) for a, b, c in zip(acc, m, s, strict=True)]
    assert got.tolist() == want


@pytest.mark.parametrize("real", [2.0**-70, 2.0**-50, 2.0**-40, 1e-4, 0.3, 0.999999999, 1.0, 3.7, 2.0**22])
def test_quantize_multiplier_range_and_precision(real):
    m, s = arith.quantize_multiplier(real)
    b = arith.MULT_BITS
    assert b == 24 and 1 <= s <= arith.MAX_SHIFT and 0 <= m < 2**b  # a DSP48E2's A operand with its sign
    if s < arith.MAX_SHIFT:
        assert 2 ** (b - 1) <= m and abs(m / 2.0**s - real) <= real * 2.0**-b
    else:  # shift saturated: absolute error below one ulp of 2^-62
        assert abs(m / 2.0**s - real) <= 2.0**-63


@pytest.mark.parametrize("real", [-1.0, float("nan"), float("inf")])  # 0 and >= 2^16 saturate: test_degenerate
def test_quantize_multiplier_refuses(real):
    with pytest.raises(ValueError):
        arith.quantize_multiplier(real)


def test_requantize_approximates_real_multiplier():
    rng = np.random.default_rng(3)
    acc = rng.integers(-(2**20), 2**20, 2000)
    for real in (1e-5, 3e-3, 0.02, 0.9):
        m, s = arith.quantize_multiplier(real)
        y = arith.requantize(acc, m, s, 0, -(2**31), 2**31)  # int8 cast wraps: check in range
        ok = np.abs(acc * real) < 120
        assert np.all(np.abs(y[ok].astype(np.int64) - acc[ok] * real) <= 0.5 + 1e-6)


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([0.25, 0.75, -0.25, -0.75, 1000.0, -1000.0], np.float32)
    assert arith.quantize(x, 0.5, 0).tolist() == [0, 2, 0, -2, 127, -128]
    assert arith.quantize(np.float32(0.0), 0.1, -128) == -128


def test_weights_are_symmetric_per_channel():
    w = np.array([[0.5, -1.0], [0.0, 0.0], [2.0, 1.0]], np.float32)
    q, s = arith.quantize_weights(w)
    assert q.dtype == np.int8 and q.tolist() == [[64, -127], [0, 0], [127, 64]]
    assert np.allclose(s, [1 / 127, 1.0, 2 / 127])


def test_lut_matches_formula():
    f = np.tanh
    lut = arith.build_lut(f, 0.05, 3, 1 / 127, 0)
    for q in (-128, -1, 0, 3, 127):
        want = np.clip(np.rint(np.tanh(np.float32((q - 3) * 0.05)) * 127), -128, 127)
        assert lut[q + 128] == want
    x = np.array([[-128, 0, 127]], np.int8)
    assert arith.apply_lut(x, lut).tolist() == [[lut[0], lut[128], lut[255]]]


def _q(**kw):
    return {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in kw.items()}


@pytest.mark.parametrize("pads", [(0, 0, 0, 0), (1, 1, 1, 1)])
@pytest.mark.parametrize("group", [1, 4])
def test_conv_kernel_against_float(pads, group):
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (1, 4, 6, 6)).astype(np.int8)
    w = rng.integers(-127, 128, (8, 4 // group, 3, 3)).astype(np.int8)
    b = rng.integers(-5000, 5000, 8)
    zx, zy = 11, -7
    bias = b - zx * w.reshape(8, -1).astype(np.int64).sum(1)
    m, s = zip(*(arith.quantize_multiplier(r) for r in rng.uniform(1e-4, 3e-3, 8)), strict=True)
    attrs = {"kernel": (3, 3), "strides": (1, 1), "dilations": (1, 1), "pads": pads, "group": group}
    node = Node("c", "Conv", ["x", "w"], ["y"], dict(attrs, q=_q(w=w, bias=bias, mult=list(m), shift=list(s),
                                                                  zp_in=zx, zp_out=zy, lo=zy, hi=127)))
    y = kernels.run_mac(node, [x, None], None)[0]
    # float64 reference of the same formula, written out (no code shared with the kernel):
    # padded pixels are real zeros (x - zp = 0); one shifted slice per kernel offset
    xf = np.pad(x.astype(np.float64) - zx, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ho, wo = xf.shape[2] - 2, xf.shape[3] - 2
    acc = np.zeros((1, 8, ho, wo)) + b.reshape(1, -1, 1, 1)
    for o in range(8):
        cg = 4 // group
        c0 = o // (8 // group) * cg
        for u in range(3):
            for v in range(3):
                acc[0, o] += np.tensordot(w[o, :, u, v].astype(np.float64), xf[0, c0:c0 + cg, u:u + ho, v:v + wo], 1)
    want = np.clip(zy + np.floor(acc * np.array(m).reshape(1, -1, 1, 1) / 2.0 ** np.array(s).reshape(1, -1, 1, 1) + 0.5),
                   zy, 127)
    assert np.array_equal(y, want.astype(np.int8))


def test_add_and_mul_kernels_against_float():
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (2, 3, 4, 4)).astype(np.int8)
    b = rng.integers(-128, 128, (2, 3, 4, 4)).astype(np.int8)
    q = _q(mult_a=1 << 30, mult_b=-(3 << 28), shift=31, zp_a=5, zp_b=-9, zp_out=2, lo=-128, hi=127)
    y = kernels.run_add(Node("a", "Sub", ["a", "b"], ["y"], {"q": q}), [a, b], None)[0]
    real = (a - 5.0) * 0.5 - (b + 9.0) * 0.375
    assert np.array_equal(y, np.clip(2 + np.floor(real + 0.5), -128, 127).astype(np.int8))
    m, s = arith.quantize_multiplier(0.004)
    q = _q(mult=m, shift=s, zp_a=5, zp_b=-9, zp_out=0, lo=-128, hi=127)
    y = kernels.run_mul(Node("m", "Mul", ["a", "b"], ["y"], {"q": q}), [a, b], None)[0]
    want = [_requant_py(int(u), m, s, 0) for u in ((a.astype(np.int64) - 5) * (b.astype(np.int64) + 9)).ravel()]
    assert y.ravel().tolist() == want


def test_global_average_pool_kernel():
    rng = np.random.default_rng(6)
    x = rng.integers(-128, 128, (1, 5, 3, 3)).astype(np.int8)
    m, s = arith.quantize_multiplier(1 / 9)
    q = _q(mult=m, shift=s, zp_in=-3, zp_out=4, count=9)
    y = kernels.run_gap(Node("g", "GlobalAveragePool", ["x"], ["y"], {"q": q}), [x], None)[0]
    sums = (x.astype(np.int64) + 3).sum(axis=(2, 3)).ravel()
    assert y.ravel().tolist() == [_requant_py(int(v), m, s, 4) for v in sums]
