"""Numpy model of the integer formulas the RTL implements (docs/numerics.md, DESIGN.md).

The arithmetic is the project's one integer reference (`bbgrap_hls.quant.arith`); this
file adds what the module testbenches need around it: per-channel parameter rows, the
window order the RTL emits, padding, and the packing of the requantisation words.
Everything is int64 numpy on NHWC arrays, independent of the RTL.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.quant import arith


def requant(acc: np.ndarray, m, s, zp, lo, hi) -> np.ndarray:
    """y = clamp(zp + ((acc*m + 2^(s-1)) >> s), lo, hi); per-channel arrays broadcast on the last axis."""
    m, s, zp, lo, hi = (np.asarray(v, dtype=np.int64) for v in (m, s, zp, lo, hi))
    return arith.requantize(acc, m, s, zp, lo, hi)


def round_shift(v: np.ndarray, s: int) -> np.ndarray:
    """(v + 2^(s-1)) >> s on int64 (s = 0: v)."""
    return arith.shift_round(v, s) if s > 0 else np.asarray(v, dtype=np.int64)


def pad(x: np.ndarray, pads: tuple[int, int, int, int], value: int) -> np.ndarray:
    """Pad an HWC array by (top, left, bottom, right) with ``value``."""
    t, left, b, r = pads
    return np.pad(x, ((t, b), (left, r), (0, 0)), constant_values=value)


def windows(x: np.ndarray, k: tuple[int, int], st: tuple[int, int], dil: tuple[int, int],
            pads: tuple[int, int, int, int], pad_value: int) -> np.ndarray:
    """Sliding windows of an HWC array as [Ho, Wo, kh, kw, C] (the order the RTL emits)."""
    xp = pad(x, pads, pad_value)
    kh, kw = k
    ho = (xp.shape[0] - (kh - 1) * dil[0] - 1) // st[0] + 1
    wo = (xp.shape[1] - (kw - 1) * dil[1] - 1) // st[1] + 1
    out = np.empty((ho, wo, kh, kw, x.shape[2]), dtype=x.dtype)
    for oy in range(ho):
        for ox in range(wo):
            for i in range(kh):
                for j in range(kw):
                    out[oy, ox, i, j] = xp[oy * st[0] + i * dil[0], ox * st[1] + j * dil[1]]
    return out


def add(a, b, za, zb, ma, mb, s, zy, lo, hi) -> np.ndarray:
    """Add: clamp(zy + ((ma*(a-za) + mb*(b-zb) + 2^(s-1)) >> s), lo, hi), one rounding."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    return np.clip(zy + round_shift(ma * (a - za) + mb * (b - zb), s), lo, hi).astype(np.int8)


def mul(a, b, za, zb, m, s, zy, lo, hi) -> np.ndarray:
    """Mul: clamp(zy + (((a-za)*(b-zb)*m + 2^(s-1)) >> s), lo, hi), one rounding."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    return np.clip(zy + round_shift((a - za) * (b - zb) * m, s), lo, hi).astype(np.int8)


def channel_shuffle(x: np.ndarray, perm) -> np.ndarray:
    """Output channel k of every pixel is input channel perm[k] (NHWC, channels last)."""
    return np.asarray(x)[..., np.asarray(perm, np.int64)]


def repeat_pixel(x: np.ndarray, pixels: int) -> np.ndarray:
    """Frames [F, C] of one pixel broadcast to [F, pixels, C] (the per-pixel broadcast of
    `bbgrap_hls.quant`'s Mul/Add operands, numpy broadcasting of (N, C, 1, 1))."""
    x = np.asarray(x)
    return np.broadcast_to(x[:, None, :], (x.shape[0], pixels, x.shape[1])).copy()


def random_rq(rng: np.random.Generator, n: int, acc_scale: float) -> np.ndarray:
    """Per-channel (m, s, zp, lo, hi) rows for accumulators of magnitude about ``acc_scale``.

    m is a positive multiplier of up to 24 bits (the quantiser's MULT_BITS) and s chosen so
    outputs span the int8 range, with a few channels given a fused-ReLU lower bound.
    """
    target = 100.0 / max(acc_scale, 1.0) * rng.uniform(0.5, 1.5, size=n)  # output units per acc unit
    s = np.clip(23 - np.floor(np.log2(target)).astype(np.int64) - rng.integers(0, 3, size=n), 1, 62)
    m = np.clip((target * 2.0**s).astype(np.int64), 1, 2**24 - 1)
    zp = rng.integers(-20, 21, size=n)
    lo = np.where(rng.random(n) < 0.3, zp, -128)
    hi = np.where(rng.random(n) < 0.2, 100, 127)
    return np.stack([m, s, zp, lo, hi], axis=1).astype(np.int64)


def rq_words(rq: np.ndarray) -> list[int]:
    """64-bit words {m, s, zp, lo, hi} of per-channel rows."""
    out = []
    for m, s, zp, lo, hi in rq.tolist():
        out.append((m & 0xFFFFFFFF) << 32 | (s & 0xFF) << 24 | (zp & 0xFF) << 16 | (lo & 0xFF) << 8 | (hi & 0xFF))
    return out
