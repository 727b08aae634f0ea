"""Integer arithmetic of the int8 contract (docs/numerics.md), as pure numpy functions.

Everything the fabric computes is built from these few functions; HLS kernels and RTL
modules implement the same formulas. Integer results are exact: accumulators are
``int64`` in numpy (the hardware's int32 accumulator never overflows for int8 layers
of realistic size, and the requantisation product is 64-bit as in hardware).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

QMIN, QMAX = -128, 127
#: Weights are symmetric int8 in [-WMAX, WMAX] (as onnxruntime's QInt8 symmetric weights).
WMAX = 127
#: Largest requantisation shift: keeps ``acc * M + 2^(S-1)`` inside int64 for |acc| < 2^31.
MAX_SHIFT = 62
#: Significant bits of a requantisation multiplier ``M``: 24, so that ``M`` with its sign bit
#: (25) is the 27-bit A operand of a DSP48E2: a requantiser lane's 32 x 25-bit product is two
#: DSP48E2s (not four), an add lane's 9 x 25-bit products one each (docs/numerics.md,
#: "Requantisation multipliers"). 2^-25 relative error keeps QDQ models equal to onnxruntime
#: on every tested element (17 bits did not: tests/test_quant_qdq.py).
MULT_BITS = 24
#: Largest requantisation multiplier ``M`` (unsigned, `MULT_BITS` bits).
MAX_MULT = (1 << MULT_BITS) - 1
#: A calibrated range narrower than this is a zero-range tensor (a dead ReLU, a constant
#: zero branch): it gets `ZERO_RANGE_SCALE` (docs/numerics.md, "Degenerate numbers").
MIN_RANGE = 1e-8
ZERO_RANGE_SCALE = 1.0


def quantize(x: np.ndarray, scale: float | np.ndarray, zp: int | np.ndarray,
             lo: int = QMIN, hi: int = QMAX) -> np.ndarray:
    """``clamp(round_half_even(x / scale) + zp, lo, hi)`` as ONNX QuantizeLinear (float32 math).

    ``scale`` and ``zp`` broadcast against ``x`` (reshape per-channel values first).
    Returns int8 when the bounds fit int8, else int32.
    """
    # clip before the integer cast: an infinite or huge value (a LUT of an overflowing
    # function) saturates like any other out-of-range value instead of wrapping
    q = np.clip(np.rint(np.asarray(x, np.float32) / np.asarray(scale, np.float32)), -(2.0**40), 2.0**40)
    q = q.astype(np.int64)
    q = np.clip(q + np.asarray(zp, np.int64), lo, hi)
    return q.astype(np.int8 if (lo >= QMIN and hi <= QMAX) else np.int32)


def dequantize(q: np.ndarray, scale: float | np.ndarray, zp: int | np.ndarray) -> np.ndarray:
    """``(q - zp) * scale`` in float32, as ONNX DequantizeLinear."""
    return ((np.asarray(q, np.int64) - np.asarray(zp, np.int64)).astype(np.float32)
            * np.asarray(scale, np.float32))


def choose_params(lo: float, hi: float) -> tuple[np.float32, int]:
    """Per-tensor asymmetric int8 ``(scale, zp)`` covering ``[lo, hi]`` (0 always included).

    ``scale = (hi - lo) / 255``, ``zp = clamp(round(-128 - lo / scale))``: the same rule as
    onnxruntime's calibrators, so that real 0 is exactly representable (padding, ReLU).
    A zero-range tensor (``hi - lo < MIN_RANGE``: every value 0) gets scale
    `ZERO_RANGE_SCALE`: any scale represents it exactly, and 1 keeps every multiplier that
    writes or reads it (``s_in/s_out`` ratios) far from both ends of the multiplier range.

    Raises:
        ValueError: ``lo`` or ``hi`` is not finite (the caller names the tensor).
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"range [{lo}, {hi}] is not finite")
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < MIN_RANGE:
        scale = np.float32(ZERO_RANGE_SCALE)
    else:
        scale = np.float32((hi - lo) / (QMAX - QMIN))
    zp = int(np.clip(np.rint(QMIN - lo / float(scale)), QMIN, QMAX))
    return scale, zp


def quantize_weights(w: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-output-channel int8 weights.

    Returns ``(w_q, scale)``: ``scale[c] = max|w[c]| / 127`` (1 for an all-zero channel,
    at least the smallest normal float32 so that a channel of subnormal weights never gets
    scale 0), ``w_q = clamp(round_half_even(w / scale), -127, 127)`` as int8, same layout
    as ``w``.
    """
    w = np.asarray(w, np.float32)
    red = tuple(k for k in range(w.ndim) if k != axis)
    amax = np.max(np.abs(w), axis=red) if red else np.abs(w)
    tiny = np.finfo(np.float32).tiny
    scale = np.where(amax > 0, np.maximum(amax / np.float32(WMAX), tiny), np.float32(1.0)).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    return quantize(w, scale.reshape(shape), 0, -WMAX, WMAX), scale


def quantize_bias(b: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """int32 bias ``round_half_even(b / scale)`` with ``scale = s_x * s_w[c]`` (saturated)."""
    q = np.rint(np.asarray(b, np.float64) / np.asarray(scale, np.float64))
    return np.clip(q, -(2**31), 2**31 - 1).astype(np.int64)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """The requantisation pair ``(M, S)`` with ``M / 2^S ≈ real``.

    ``M`` is in ``[2^23, 2^24 - 1]`` (`MULT_BITS` = 24 significant bits) and ``1 <= S <= 62``.
    Both ends saturate without changing any result (docs/numerics.md, "Degenerate numbers"):
    below ``2^-39`` the shift stays at 62 and ``M`` gets smaller, down to ``(0, 62)`` for
    ``real < 2^-63`` or 0 (``|acc·real| < 2^-32``: every output is the zero point);
    from ``2^23`` on the pair is ``(2^24 - 1, 1)`` (every non-zero accumulator saturates
    the int8 clamp either way, and a zero one gives the zero point).

    Raises:
        ValueError: ``real`` is negative, NaN or infinite (a bug upstream: scales are
            finite and positive).
    """
    if not (math.isfinite(real) and real >= 0):
        raise ValueError(f"requantisation multiplier must be finite and >= 0, got {real}")
    if real < 2.0**-MAX_SHIFT / 2:
        return 0, MAX_SHIFT
    if real >= 2.0 ** (MULT_BITS - 1):
        return MAX_MULT, 1
    m, e = math.frexp(real)  # real = m * 2^e, m in [0.5, 1)
    mult, shift = round(m * (1 << MULT_BITS)), MULT_BITS - e
    if mult == 1 << MULT_BITS:
        mult, shift = 1 << (MULT_BITS - 1), shift - 1
    if shift > MAX_SHIFT:
        mult, shift = round(real * 2.0**MAX_SHIFT), MAX_SHIFT
    if shift < 1:  # real rounds up to 2^23
        return MAX_MULT, 1
    return int(mult), int(shift)


def quantize_multipliers(real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`quantize_multiplier` elementwise: int64 arrays ``(M, S)``."""
    pairs = [quantize_multiplier(float(r)) for r in np.ravel(real)]
    shape = np.shape(real)
    return (np.array([p[0] for p in pairs], np.int64).reshape(shape),
            np.array([p[1] for p in pairs], np.int64).reshape(shape))


def shift_round(prod: np.ndarray, shift: np.ndarray | int) -> np.ndarray:
    """``(prod + 2^(S-1)) >> S``: arithmetic shift, ties rounded up (towards +inf)."""
    prod = np.asarray(prod, np.int64)
    shift = np.asarray(shift, np.int64)
    return (prod + np.left_shift(np.int64(1), shift - 1)) >> shift


def requantize(acc: np.ndarray, mult: np.ndarray | int, shift: np.ndarray | int,
               zp: int, lo: int = QMIN, hi: int = QMAX) -> np.ndarray:
    """``clamp(zp + ((acc * M + 2^(S-1)) >> S), lo, hi)`` as int8.

    ``acc`` is an integer array; ``mult``/``shift`` broadcast against it (per channel:
    reshape to the channel axis first). The product is 64-bit, the shift arithmetic.
    """
    prod = np.asarray(acc, np.int64) * np.asarray(mult, np.int64)
    y = shift_round(prod, shift) + np.int64(zp)
    return np.clip(y, lo, hi).astype(np.int8)


def build_lut(f: Callable[[np.ndarray], np.ndarray], s_in: float, z_in: int,
              s_out: float, z_out: int) -> np.ndarray:
    """256-entry int8 table ``lut[q + 128] = quantize(f(dequantize(q)))`` for q in -128..127."""
    q = np.arange(QMIN, QMAX + 1, dtype=np.int64)
    y = np.asarray(f(dequantize(q, s_in, z_in)), np.float32)
    return quantize(y, s_out, z_out)


def apply_lut(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Look up every int8 element: ``y = lut[x + 128]``."""
    return np.asarray(lut, np.int8)[np.asarray(x, np.int64) + 128]


def channel_shape(ndim: int, axis: int = 1) -> tuple[int, ...]:
    """A broadcast shape putting per-channel values on ``axis`` of an ``ndim`` array."""
    s = [1] * ndim
    s[axis] = -1
    return tuple(s)
