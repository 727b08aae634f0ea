"""Lay constant arrays out the way the HLS kernels read them (see ``hw/hls/bb_weights.h``).

A weight memory is ``banks × depth`` words of ``lanes`` int8, as a ``(banks, depth, lanes)``
array. The matrix-vector unit has ``PE`` banks of ``SIMD``-lane words: lane ``s`` of bank
``pe`` at address ``nf·SF + sf`` holds the weight of output channel ``nf·PE + pe`` and
window element ``sf·SIMD + s``; window elements run over ``(ky, kx, c)`` with ``c``
innermost, the NHWC order in which activations stream. In URAM the banks sit side by side
in one word (`wide_words`). Per-channel constants are ``[PE][NF]``.
"""

from __future__ import annotations

import numpy as np


def conv_matrix(w: np.ndarray, group: int = 1) -> np.ndarray:
    """OIHW weights (``I = C / group``) as a dense ``(CO, KH·KW·C)`` matrix, NHWC order.

    Grouped convolutions become block-diagonal: the weight of an input channel outside an
    output channel's group is zero.
    """
    co, cig, kh, kw = w.shape
    c = cig * group
    full = np.zeros((co, kh, kw, c), dtype=w.dtype)
    cog = co // group
    for g in range(group):
        full[g * cog:(g + 1) * cog, :, :, g * cig:(g + 1) * cig] = w[g * cog:(g + 1) * cog].transpose(0, 2, 3, 1)
    return full.reshape(co, kh * kw * c)


def grouped_matrix(w: np.ndarray) -> np.ndarray:
    """OIHW weights of a grouped conv (``I = C / group``) as the ``(CO, KH·KW·I)`` matrix the
    grouped matrix-vector unit reads: row ``co`` over its own group's window only, in
    ``(ky, kx, c mod I)`` order (the window generator emits a window group by group).
    The dense `conv_matrix` of the same weights is this one's rows spread block-diagonally."""
    co, cig, kh, kw = w.shape
    return w.transpose(0, 2, 3, 1).reshape(co, kh * kw * cig)


def fold_mvu(mat: np.ndarray, pe: int, simd: int) -> np.ndarray:
    """A ``(CO, K)`` matrix as the MVU's weight memory ``(PE, NF·SF, SIMD)``.

    The same layout serves the parallel window (conv ``simd = C·j``): the window vector is
    still consumed ``simd`` elements per cycle in ``(ky, kx, c)`` order.
    """
    co, k = mat.shape
    if co % pe or k % simd:
        raise ValueError(f"folding pe={pe}, simd={simd} does not divide the matrix {mat.shape}")
    nf, sf = co // pe, k // simd
    m = mat.reshape(nf, pe, sf, simd)  # [nf, pe, sf, s]
    return np.ascontiguousarray(m.transpose(1, 0, 2, 3).reshape(pe, nf * sf, simd))


def pad_rows(a: np.ndarray, pe: int, repeat: bool = False) -> np.ndarray:
    """``a`` with its first axis padded to a multiple of ``pe`` (padded folds: the last
    neuron fold of a matrix-vector unit whose ``pe`` does not divide its rows): zero rows,
    or with ``repeat`` copies of the last row (per-channel constants that must stay in the
    requantiser's range; the padding rows' outputs are dropped)."""
    a = np.asarray(a)
    n = a.shape[0]
    m = -(-n // pe) * pe
    if m == n:
        return a
    fill = np.repeat(a[-1:], m - n, axis=0) if repeat else np.zeros((m - n, *a.shape[1:]), dtype=a.dtype)
    return np.concatenate([a, fill])


def fold_channels(v: np.ndarray, lanes: int) -> np.ndarray:
    """A per-channel vector ``(C,)`` as ``[lanes][C / lanes]`` (channel ``f·lanes + p`` at [p][f])."""
    v = np.asarray(v).reshape(-1)
    if v.size % lanes:
        raise ValueError(f"{lanes} lanes do not divide {v.size} channels")
    return np.ascontiguousarray(v.reshape(-1, lanes).T)


def fold_dw(w: np.ndarray, lanes: int, simd: int | None = None) -> np.ndarray:
    """Depthwise weights ``(C, 1, KH, KW)`` as the memory ``(P·J, CF·K/J, 1)``, ``J = simd / lanes``.

    Bank ``p·J + j`` (one lane) at address ``cf·K/J + kf`` holds the weight of channel
    ``cf·P + p`` at window position ``k = kf·J + j`` (``k = ky·KW + kx``); ``J = 1`` (no
    parallel window) gives ``P`` banks of ``CF·K`` words.
    """
    c = w.shape[0]
    k = w.shape[2] * w.shape[3]
    j = (simd or lanes) // lanes
    if c % lanes or (simd or lanes) % lanes or k % j:
        raise ValueError(f"depthwise folding lanes={lanes}, simd={simd} does not fit {c} channels, "
                         f"{k} window positions")
    m = w.reshape(c // lanes, lanes, k // j, j)  # [cf, p, kf, j]
    return np.ascontiguousarray(m.transpose(1, 3, 0, 2).reshape(lanes * j, (c // lanes) * (k // j), 1))


def wide_words(banked: np.ndarray) -> np.ndarray:
    """A ``(banks, depth, lanes)`` weight memory as one memory of ``banks·lanes``-lane words.

    Word ``a`` is ``[bank 0 lanes, bank 1 lanes, ...]`` at address ``a``: shape
    ``(depth, banks·lanes)``, what the URAM layout of ``bb_weights.h`` reads.
    """
    b, d, n = banked.shape
    return np.ascontiguousarray(banked.transpose(1, 0, 2).reshape(d, b * n))
