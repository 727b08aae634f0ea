"""Analytic cost of every hardware block kind (docs/cost-model.md has the formulas).

A block's cost depends on its geometry and its folding (``pe`` output lanes, ``simd``
input elements per cycle). Each kind is one small function ``(g, pe, simd) -> BlockCost``;
`BLOCKS` maps the block kind to it, and `bbgrap_hls.model.kinds` maps op kinds to block
kinds. Blocks with weight memories (`URAM_CAPABLE`) also take ``uram=True``: the weights
then live in URAM288 instead of BRAM (the planner decides per node).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.memory import MemCost, memory, uram_memory

# LUT constants (per block, per lane); see docs/cost-model.md, "LUT".
LUT_BASE_MVU = 250      # control, counters, AXI-Stream handshakes of a matrix-vector unit
LUT_PER_MAC = 20        # adder-tree share of one int8 product lane
LUT_PER_PE = 40         # requantisation rounding, clamp and output register per output lane
LUT_PER_SIMD = 10       # input lane routing
LUT_BASE_SIMPLE = 100   # control of a block without weights
LUT_PER_LANE = 30       # datapath of one lane of an elementwise / window block
REQ_PARAM_BITS = 72     # per output channel: bias 32 + multiplier 32 + shift 8
DEPTH_MVU = 6           # window read 1, DSP 1, accumulate 1, requantise 3
DEPTH_SIMPLE = 2        # register in, register out


@dataclass(frozen=True)
class BlockCost:
    """Cost of one block at one folding.

    Attributes:
        ii: cycles per frame.
        depth: pipeline depth in cycles (first needed input to first output, beyond the
            data it must wait for).
        fill: fraction of the input frame the block must receive before its first output.
        first: compute cycles before its first output beat once the data is there.
        tail: cycles of work left after its last input beat.
        dsp, bram18, uram, lut: resources.
        weights: where the weight memory lives: ``"bram"``, ``"uram"``, ``"lut"`` (LUTRAM,
            under 1,024 bits per bank) or None for a block without weights.
    """

    ii: int
    depth: int = DEPTH_SIMPLE
    fill: float = 0.0
    first: int = 0
    tail: int = 0
    dsp: int = 0
    bram18: int = 0
    uram: int = 0
    lut: int = 0
    weights: str | None = None


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _fill_window(g: Geometry) -> float:
    """Fraction of the input needed before the first window is complete."""
    rows = max(0, g.kh - 1 - g.pads[0])
    cols = max(1, g.kw - g.pads[1])
    return min(1.0, (rows * g.w + min(cols, g.w)) / max(1, g.h * g.w))


def _line_buffer(g: Geometry, lanes: int, parallel: bool = False) -> MemCost:
    """Line buffer of a window block whose input streams at ``lanes`` lanes.

    One memory of ``(kh-1)·Wp + kw`` pixels; with a parallel window (several window
    positions read per cycle) the ``kh-1`` buffered rows are ``kh-1`` memories of ``Wp``
    pixels (one read port each) feeding a ``kh × kw`` register window (flip-flops, not
    counted).
    """
    if g.pointwise:
        return MemCost()
    if parallel:
        return memory(8 * lanes, g.wp * (g.c // lanes)).times(g.kh - 1)
    pixels = (g.kh - 1) * g.wp + g.kw
    return memory(lanes * 8, pixels * (g.c // lanes))


def _weights(banks: int, bank_bits: int, depth: int, uram: bool) -> tuple[MemCost, str]:
    """Weight memory of ``banks`` banks read at the same address every cycle.

    In BRAM (or LUTRAM) each bank is its own memory; in URAM the banks sit side by side in
    one ``banks·bank_bits`` wide memory (they share the address), cut into 72-bit columns.
    A memory small enough for LUTRAM never goes to URAM.
    """
    bram = memory(bank_bits, depth).times(banks)
    if bram.bram18 == 0:
        return bram, "lut"
    if uram:
        return uram_memory(banks * bank_bits, depth), "uram"
    return bram, "bram"


def _tail_rows(g: Geometry) -> int:
    """Output pixels still to compute after the last input pixel arrives."""
    return 1 + _ceil(g.pads[2], g.sh) * g.wo


def mvu(g: Geometry, pe: int, simd: int, uram: bool = False) -> BlockCost:
    """Conv (sliding window + matrix-vector unit); dense is the 1×1×1 case.

    ``simd`` divides ``C`` or, with a parallel window, is ``C·j`` with ``j | K``: the unit
    consumes ``simd`` elements of the flattened (ky, kx, c) window per cycle and the input
    streams at ``min(simd, C)`` lanes.
    """
    folds = (g.k * g.c // simd) * (g.co // pe)
    ii = max(g.hp * g.wp * g.c // min(simd, g.c), g.ho * g.wo * folds)
    wmem, where = _weights(pe, simd * 8, folds, uram)
    mem = wmem + memory(REQ_PARAM_BITS, g.co // pe).times(pe)
    if g.pointwise:
        if g.co // pe > 1:
            mem = mem + memory(simd * 8, g.c // simd)  # input pixel/vector reused Co/pe times
    else:
        mem = mem + _line_buffer(g, min(simd, g.c), parallel=simd > g.c)
    one_pixel = g.h * g.w == 1 and g.ho * g.wo == 1
    depth = DEPTH_MVU + math.ceil(math.log2(simd))
    return BlockCost(
        ii=ii, depth=depth,
        fill=1.0 if one_pixel else _fill_window(g),
        first=0 if one_pixel else g.k * g.c // simd,
        tail=(g.co // pe - 1) * (g.c // simd) if one_pixel else folds * _tail_rows(g),
        dsp=pe * simd + pe, bram18=mem.bram18, uram=mem.uram,
        lut=LUT_BASE_MVU + LUT_PER_MAC * pe * simd + LUT_PER_PE * pe + LUT_PER_SIMD * simd + mem.lut,
        weights=where,
    )


def dwconv(g: Geometry, pe: int, simd: int, uram: bool = False) -> BlockCost:
    """Depthwise conv: ``p = pe`` channels at a time, one multiplier per lane.

    ``simd == pe`` normally; with a parallel window ``simd = p·j`` (``j | K``): ``j`` window
    positions of the ``p`` channels per cycle, ``simd`` multipliers, input at ``p`` lanes.
    """
    p = pe
    ii = max(g.hp * g.wp * g.c // p, g.ho * g.wo * g.k * g.c // simd)
    wmem, where = _weights(simd, 8, g.k * g.c // simd, uram)
    mem = wmem + memory(REQ_PARAM_BITS, g.c // p).times(p) + _line_buffer(g, p, parallel=simd > p)
    return BlockCost(
        ii=ii, depth=DEPTH_MVU, fill=_fill_window(g), first=g.k * g.c // simd,
        tail=g.k * g.c // simd * _tail_rows(g), dsp=simd + p, bram18=mem.bram18, uram=mem.uram,
        lut=LUT_BASE_SIMPLE + LUT_PER_LANE * simd + LUT_PER_PE * p + mem.lut, weights=where,
    )


def pool(g: Geometry, pe: int, simd: int, requant: bool) -> BlockCost:
    """Max / average pool over a window (average requantises: one DSP per lane)."""
    p = pe
    ii = max(g.hp * g.wp * g.c // p, g.ho * g.wo * g.k * g.c // p)
    mem = _line_buffer(g, p)
    return BlockCost(
        ii=ii, depth=DEPTH_SIMPLE + (3 if requant else 0), fill=_fill_window(g),
        first=g.k * g.c // p, tail=g.k * g.c // p * _tail_rows(g),
        dsp=p if requant else 0, bram18=mem.bram18,
        lut=LUT_BASE_SIMPLE + LUT_PER_LANE * p + mem.lut,
    )


def gap(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Global average pool: int32 accumulators per channel, requantise at the end."""
    p = pe
    mem = memory(32 * p, g.c // p)
    return BlockCost(ii=g.h * g.w * g.c // p, depth=DEPTH_SIMPLE + 3, fill=1.0, tail=g.c // p,
                     dsp=p, bram18=mem.bram18, lut=LUT_BASE_SIMPLE + 2 * LUT_PER_LANE * p + mem.lut)


def eltwise2(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Add / Mul of two streams: two multipliers per lane (both operands rescaled)."""
    p = pe
    return BlockCost(ii=g.ho * g.wo * g.co // p, depth=DEPTH_SIMPLE + 3, dsp=2 * p,
                     lut=LUT_BASE_SIMPLE + 2 * LUT_PER_LANE * p)


def affine(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Per-channel affine ``y = x·a_c + b_c`` requantised: one multiplier per lane."""
    p = pe
    mem = memory(REQ_PARAM_BITS, g.c // p).times(p)
    return BlockCost(ii=g.h * g.w * g.c // p, depth=DEPTH_SIMPLE + 3, dsp=p, bram18=mem.bram18,
                     lut=LUT_BASE_SIMPLE + LUT_PER_LANE * p + mem.lut)


def lut_act(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Lookup-table activation: a 256 × 8 table per lane (2,048 bits: one RAMB18)."""
    p = pe
    mem = memory(8, 256).times(p)
    return BlockCost(ii=g.h * g.w * g.c // p, depth=DEPTH_SIMPLE + 1, bram18=mem.bram18,
                     lut=LUT_BASE_SIMPLE + LUT_PER_LANE * p + mem.lut)


def concat(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Channel concat: per pixel, each input's channels in turn."""
    p = pe
    n = max(1, len(g.in_channels))
    return BlockCost(ii=g.h * g.w * sum(g.in_channels or (g.c,)) // p,
                     lut=LUT_BASE_SIMPLE // 2 + 10 * p * n)


def shuffle(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Channel permutation inside a pixel: a double-buffered pixel memory."""
    p = pe
    mem = memory(8 * p, 2 * g.c // p)
    return BlockCost(ii=g.h * g.w * g.c // p, fill=1.0 / (g.h * g.w), tail=g.c // p,
                     bram18=mem.bram18, lut=LUT_BASE_SIMPLE + LUT_PER_LANE * p + mem.lut)


def pad(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Zero-point padding inserted into the stream: one beat per output beat."""
    p = pe
    return BlockCost(ii=g.ho * g.wo * g.co // p, lut=LUT_BASE_SIMPLE // 2 + 10 * p)


def wire(g: Geometry, pe: int, simd: int) -> BlockCost:
    """A reinterpretation of the stream (Flatten, Reshape to a vector): no hardware."""
    return BlockCost(ii=0, depth=0)


URAM_CAPABLE = ("conv", "dense", "dwconv")
"""Block kinds whose weight memory may live in URAM (``uram=True``)."""

BLOCKS: dict[str, Callable[..., BlockCost]] = {
    "conv": mvu,
    "dense": mvu,
    "dwconv": dwconv,
    "maxpool": lambda g, pe, simd: pool(g, pe, simd, requant=False),
    "avgpool": lambda g, pe, simd: pool(g, pe, simd, requant=True),
    "gap": gap,
    "eltwise2": eltwise2,
    "affine": affine,
    "lut": lut_act,
    "concat": concat,
    "shuffle": shuffle,
    "pad": pad,
    "wire": wire,
}
"""Block kind -> cost function ``(geometry, pe, simd) -> BlockCost``."""
