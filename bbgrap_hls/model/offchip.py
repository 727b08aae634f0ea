"""Cost of a conv / dense block whose weights live in a board memory (weights reloading;
docs/cost-model.md, "Off-chip weights"; RTL ``hw/rtl/conv_offchip.sv``, HLS
``bb::conv2d_offchip``). Registered as the ``ddr`` rows of conv and dense by
`bbgrap_hls.model.kinds`."""

from __future__ import annotations

import math

from bbgrap_hls.model.blocks import (
    LUT_AXI_READ,
    LUT_BASE_MVU,
    LUT_FRAME_ADDR,
    LUT_PER_PE,
    LUT_PER_SIMD,
    LUT_REQUANT,
    REQUANT_DSP,
    BlockCost,
    _lut_per_mac,
    _params,
)
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.memory import memory, uram_memory

OFFCHIP_DEPTH = 6
"""conv_offchip.sv: a result is written to the output frame buffer 5 cycles after its last
read (read, product, accumulate, requantise 2) and leaves through a registered read (1)."""

OFFCHIP_BEAT_BYTES = 64
"""Default AXI data width of the weight reader, in bytes (a 512-bit port, `Memory.port_width_bits`)."""


def _fold_ends(nf: int, cf: int, in_beats: int, tile_beats: float, period: float, latency: int,
               frames: int = 1, gap: int = 0) -> list[float]:
    """Cycle of every fold's last read in ``hw/rtl/conv_offchip.sv`` over ``frames`` frames
    (first input beat at cycle 0, input offered and output taken every cycle, tiles 0 and 1
    loaded while the block idled).

    Fold ``u`` (fold ``u mod nf`` of frame ``u // nf``) reads from ``S_u`` to
    ``E_u = S_u + cf − 1``; ``S_0 = in_beats`` (the whole frame stored),
    ``S_u = max(E_{u−1} + 1, D_u + 1)``; tile ``u ≥ 2`` is requested the cycle after fold
    ``u − 2``'s last read (across frames too), its first beat ``latency`` cycles after the
    request and then one beat per ``period`` cycles, after the previous tile's beats:
    ``D_u = max(E_{u−2} + 1 + latency, D_{u−1} + period) + (tile_beats − 1)·period``. A later
    frame's fold 0 also waits ``gap`` cycles after the previous frame's last read (one frame
    slot: `_single_slot_ii`; with two the frames after the first are not run here).
    """
    ends: list[float] = []
    d_prev = float("-inf")
    for u in range(frames * nf):
        d = float("-inf") if u < 2 else \
            max(ends[u - 2] + 1 + latency, d_prev + period) + (tile_beats - 1) * period
        if u == 0:
            s = in_beats
        else:
            s = max(ends[u - 1] + (1 if u % nf else gap), d + 1)
        ends.append(s + cf - 1)
        d_prev = d
    return ends


SINGLE_SLOT_FRAMES = 6
"""Frames `_single_slot_ii` runs: its ii is the mean of intervals 2..5 between the frames' last
reads (the module test's measure; a schedule whose folds wait for tiles may alternate)."""


def _single_slot_ii(nf: int, cf: int, in_beats: int, out_beats: int, tile_beats: float, period: float,
                    latency: int) -> float:
    """Steady-state cycles per frame of ``conv_offchip.sv`` with ``SLOTS = 1`` (one input and
    one output frame slot), input offered every cycle and output taken every cycle: the
    fold/tile recurrence (`_fold_ends`) over `SINGLE_SLOT_FRAMES` frames, a frame's fold 0
    waiting for its input slot and its output slot. The input slot is free the cycle after
    the previous frame's last read ``E``, so the frame's last input beat arrives at
    ``E + in_beats`` and fold 0 may read from ``E + in_beats + 1``; the previous frame's
    results leave the output slot from ``E + 6`` on, one beat a cycle, and fold 0 may read in
    the cycle of its last beat, ``E + out_beats + 5``."""
    gap = max(in_beats + 1, out_beats + OFFCHIP_DEPTH - 1)
    ends = _fold_ends(nf, cf, in_beats, tile_beats, period, latency, SINGLE_SLOT_FRAMES, gap)
    last = ends[nf - 1::nf]  # each frame's last read
    return (last[-1] - last[1]) / (SINGLE_SLOT_FRAMES - 2)


def offchip_mvu(g: Geometry, pe: int, simd: int, uram: bool = False, rate: float | None = None,
                latency: int = 0, beat_bytes: int = OFFCHIP_BEAT_BYTES, slots: int = 2) -> BlockCost:
    """Conv / dense whose weights live in a board memory, read once per frame.

    Weights reloading (docs/cost-model.md, "Off-chip weights"; ``hw/rtl/conv_offchip.sv``):
    the block stores its whole input frame, then computes the output ``pe`` channels at a
    time (fold ``n`` of ``nf``) over every output pixel, ``cf = Ho·Wo·sf`` reads, while an
    AXI4 read master fetches the next fold's weights (a tile of ``pe·K·C`` bytes,
    ``tile_beats`` beats of ``beat_bytes``) into the other half of a double-buffered tile
    memory; each weight is read from off chip exactly once per frame. The outputs of a
    frame collect in an output frame buffer and stream out pixel by pixel (``pe`` lanes)
    once the last fold is done. With ``slots = 2`` input, compute and output each have two
    frame slots, so three frames overlap:

    The memory delivers a tile's first beat ``latency`` cycles after its request and then
    one beat every ``period = beat_bytes / rate`` cycles (``rate`` bytes per cycle; None:
    one beat per cycle). Per fold the schedule repeats every
    ``T = max(cf, tile_beats·period, (latency + (tile_beats − 1)·period + cf + 1) / 2)``
    cycles (compute; memory bandwidth; a tile half's round trip: requested the cycle after
    its last read, loaded, computed), so

        ii = ceil(max(H·W·C/lanes, Ho·Wo·Co/pe, nf·T, (Ho·Wo·Co/pe + 4 + nf·T) / 2))

    (the last term: an output slot is reused two frames later, from the cycle of its last
    read; it binds only when ``sf = 1``, where the output is as long as the compute).

    With ``slots = 1`` (half the frame memory) a frame's input waits for the previous
    frame's last read and its first fold for its input and for the previous frame's output
    to have left: ``ii ≈ max(H·W·C/lanes + 1, Ho·Wo·Co/pe + 5) + nf·T`` (`_single_slot_ii`,
    exact). Frame 0's schedule, so the latency, is the same.

    ``rate``/``latency``/``beat_bytes`` are the memory as this block sees it (the planner
    also charges ``offchip_bytes`` per ii against the memory's share). ``uram`` puts the two
    frame buffers in URAM instead of BRAM. Exact (RTL module tests) when ``rate`` divides
    ``beat_bytes`` and the tile is whole beats.
    """
    vectors = g.ho * g.wo if g.pointwise and g.ho * g.wo < g.h * g.w else g.h * g.w
    sf, nf = g.k * (g.in_elems // vectors if g.pointwise else g.c) // simd, g.co // pe
    lanes = min(simd, g.c)
    j = simd // lanes  # a parallel window reads j taps per cycle: j read ports (copies)
    in_beats = g.in_elems // lanes
    cf = g.ho * g.wo * sf
    out_beats = g.ho * g.wo * nf
    tile_beats = -(-pe * simd * sf // beat_bytes)
    period = 1.0 if rate is None else max(1.0, beat_bytes / rate)
    frame_mem = uram_memory if uram else memory
    if slots not in (1, 2):
        raise ValueError(f"offchip_mvu: slots={slots}, expected 1 or 2")
    frames = frame_mem(lanes * 8, slots * in_beats).times(j) + frame_mem(pe * 8, slots * out_beats)
    tiles = memory(pe * simd * 8, 2 * sf)  # one fold's weights, double-buffered
    mem = frames + tiles + _params(pe, nf)
    per_fold = max(cf, tile_beats * period, (latency + (tile_beats - 1) * period + cf + 1) / 2)
    # an output slot is written again from the frame after next: its last read (a frame's
    # results, then depth − 1, then out_beats reads) to that frame's last read
    slot = (out_beats + OFFCHIP_DEPTH - 2 + nf * per_fold) / 2
    if slots == 2:
        ii = math.ceil(max(in_beats, out_beats, nf * per_fold, slot) - 1e-9)
    else:
        ii = math.ceil(_single_slot_ii(nf, cf, in_beats, out_beats, tile_beats, period, latency) - 1e-9)
    last = math.ceil(_fold_ends(nf, cf, in_beats, tile_beats, period, latency)[-1] - 1e-9)
    lead = last + 1  # the output frame buffer's first read: its first beat leaves at lead + depth
    span = last + out_beats
    lut_unit = round(_lut_per_mac(simd) * pe * simd) + (LUT_PER_PE + LUT_REQUANT) * pe + LUT_PER_SIMD * simd
    return BlockCost(
        ii=ii, depth=OFFCHIP_DEPTH, fill=1.0, first=sf, tail=span - (in_beats - 1), lead=lead,
        span=span, window=None, dsp=pe * simd + REQUANT_DSP * pe, bram18=mem.bram18, uram=mem.uram,
        lut=LUT_BASE_MVU + lut_unit + LUT_AXI_READ + LUT_FRAME_ADDR + mem.lut, weights="ddr",
        offchip_bytes=sf * simd * nf * pe,  # the whole weight memory (a grouped conv's is block-diagonal)
    )
