"""The integer reference's conv/dense sums in float64 BLAS equal the int64 sums (quant/kernels.py)."""

from __future__ import annotations

import numpy as np
import pytest

from bbgrap_hls.ops.conv import _IM2COL_ELEMENTS, Conv
from bbgrap_hls.quant import kernels


def _conv_case(rng, cin, cout, hw, k, stride=1, pad=1, group=1, extreme=False):
    x = rng.integers(-128, 128, (2, cin, hw, hw)).astype(np.int8)
    w = rng.integers(-127, 128, (cout, cin // group, k, k)).astype(np.int8)
    if extreme:  # the largest products of one sign everywhere: the biggest possible sums
        x[:] = -128
        w[:] = -127
    q = {"w": w, "zp_in": int(rng.integers(-128, 128)) if not extreme else -128,
         "bias": rng.integers(-(2**20), 2**20, cout).astype(np.int32)}
    attrs = {"pads": (pad, pad, pad, pad), "strides": (stride, stride), "dilations": (1, 1), "group": group,
             "kernel": (k, k)}
    return x, q, attrs


def _naive(x, q, attrs):
    """The sum by Python ints, one output at a time (small cases only)."""
    p, (sh, sw), g = attrs["pads"], attrs["strides"], attrs["group"]
    xp = np.pad(x.astype(object), ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])), constant_values=q["zp_in"])
    w = q["w"].astype(object)
    n, _, hp, wp = xp.shape
    cout, cin_g, kh, kw = w.shape
    ho, wo = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    out = np.zeros((n, cout, ho, wo), dtype=object)
    for o in range(cout):
        c0 = (o // (cout // g)) * cin_g
        for i in range(ho):
            for j in range(wo):
                win = xp[:, c0:c0 + cin_g, i * sh:i * sh + kh, j * sw:j * sw + kw]
                out[:, o, i, j] = (win * w[o]).reshape(n, -1).sum(axis=1) + int(q["bias"][o])
    return out.astype(np.int64)


@pytest.mark.parametrize("case", [
    dict(cin=3, cout=4, hw=6, k=3),
    dict(cin=8, cout=6, hw=7, k=3, stride=2, pad=0),
    dict(cin=8, cout=8, hw=5, k=3, group=8),          # depthwise
    dict(cin=6, cout=4, hw=5, k=1, pad=0, group=2),
    dict(cin=16, cout=4, hw=4, k=3, extreme=True),
])
def test_conv_float_path_equals_python_ints(case):
    x, q, attrs = _conv_case(np.random.default_rng(7), **case)
    got = kernels.conv_acc(x, q, attrs)
    assert got.dtype == np.int64
    assert np.array_equal(got, _naive(x, q, attrs))
    assert np.array_equal(got, kernels.conv_acc(x, q, attrs, limit=0))  # the integer path


def test_conv_large_sums_exact_both_paths():
    """Deep convs (4,608 taps, the direct per-offset path of Conv.conv) with the largest int8
    products: float64 and int64 agree to the last unit."""
    rng = np.random.default_rng(3)
    x, q, attrs = _conv_case(rng, cin=512, cout=8, hw=24, k=3)
    x[:, :256] = -128  # half the channels at the extreme: sums far from zero
    q["w"][:4] = -127
    assert 2 * 512 * 24 * 24 * 9 > _IM2COL_ELEMENTS  # Conv.conv takes its per-offset path
    got = kernels.conv_acc(x, q, attrs)
    want = kernels.conv_acc(x, q, attrs, limit=0)
    assert np.array_equal(got, want)
    assert np.abs(want).max() > 127 * 128 * 2000  # the sums really are large


def test_conv_path_choice(monkeypatch):
    """float64 below the bound, int64 at or above it (the fallback), chosen from the actual
    operand ranges and the pad value."""
    seen = []
    real = Conv.conv

    def spy(x, w, attrs, pad_value=0, acc_dtype=np.float64):
        seen.append(np.dtype(acc_dtype))
        return real(x, w, attrs, pad_value=pad_value, acc_dtype=acc_dtype)

    monkeypatch.setattr(Conv, "conv", staticmethod(spy))
    x, q, attrs = _conv_case(np.random.default_rng(1), cin=4, cout=2, hw=4, k=3)
    x[:] = 3
    q["w"][:] = 5
    q["w"][0, 0, 0, 0] = -7
    q["zp_in"] = -11  # the pad value is the largest |x|
    bound = kernels.float_sum_bound(11, 7, 4 * 9)
    assert bound == 36 * 77
    kernels.conv_acc(x, q, attrs, limit=bound + 1)
    kernels.conv_acc(x, q, attrs, limit=bound)
    assert seen == [np.dtype(np.float64), np.dtype(np.int64)]
    # the real limit: int8 operands are exact up to 2^39 taps, not beyond
    assert kernels.float_sum_bound(128, 128, (1 << 39) - 1) < kernels.FLOAT64_EXACT
    assert kernels.float_sum_bound(128, 128, 1 << 39) >= kernels.FLOAT64_EXACT


def test_float64_is_exact_only_below_2_53():
    """The premise of the bound: float64 adds integers exactly below 2^53, and not above."""
    big = float(kernels.FLOAT64_EXACT)
    assert (big - 2) + 1 == big - 1
    assert big + 1 == big  # 2^53 + 1 rounds: why the bound must stay below 2^53


def test_dense_float_path_equals_int_path():
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (3, 300)).astype(np.int8)
    q = {"w": rng.integers(-127, 128, (10, 300)).astype(np.int8), "bias": rng.integers(-999, 999, 10)}
    got = kernels.dense_acc(x, q, {})
    want = x.astype(object) @ q["w"].astype(object).T + q["bias"].astype(object)
    assert np.array_equal(got, want.astype(np.int64))
    assert np.array_equal(got, kernels.dense_acc(x, q, {}, limit=0))
