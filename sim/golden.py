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
    outputs span the int8 range; zp, lo and hi are the layer's, the same in every row (a
    quantised layer's output zero point and clamp: the RTL takes them as parameters,
    `rq_params`), sometimes a fused-ReLU lower bound or a lowered upper one.
    """
    target = 100.0 / max(acc_scale, 1.0) * rng.uniform(0.5, 1.5, size=n)  # output units per acc unit
    s = np.clip(23 - np.floor(np.log2(target)).astype(np.int64) - rng.integers(0, 3, size=n), 1, 62)
    m = np.clip((target * 2.0**s).astype(np.int64), 1, 2**24 - 1)
    zp = np.full(n, int(rng.integers(-20, 21)))
    lo = np.full(n, int(zp[0]) if rng.random() < 0.3 else -128)
    hi = np.full(n, 100 if rng.random() < 0.2 else 127)
    return np.stack([m, s, zp, lo, hi], axis=1).astype(np.int64)


def rq_words(rq: np.ndarray) -> list[int]:
    """32-bit words {m[23:0], s} of per-channel rows (the RTL's RQ_FILE; zp, lo and hi are
    parameters, `rq_params`)."""
    return [(m & 0xFFFFFF) << 8 | (s & 0xFF) for m, s, *_ in rq.tolist()]


def rq_params(rq: np.ndarray) -> dict[str, int]:
    """The RTL parameters ``RQ_ZP``, ``RQ_LO``, ``RQ_HI`` of per-channel rows, whose zp, lo
    and hi are the same in every row."""
    zp, lo, hi = (np.unique(rq[:, k]) for k in (2, 3, 4))
    if len(zp) != 1 or len(lo) != 1 or len(hi) != 1:
        raise ValueError("the RTL's requantisers take one zero point and clamp for all channels")
    return {"RQ_ZP": int(zp[0]), "RQ_LO": int(lo[0]), "RQ_HI": int(hi[0])}
