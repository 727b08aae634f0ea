"""Cost of a conv / dense block whose weights live in a board memory (weights reloading;
docs/cost-model.md, "Off-chip weights"; RTL ``hw/rtl/conv_offchip.sv``, HLS
``bb::conv2d_offchip``). Registered as the ``ddr`` rows of conv and dense by
`bbgrap_hls.model.kinds`."""

from __future__ import annotations

import math
from dataclasses import replace

from bbgrap_hls.model.blocks import (
    LUT_BASE_MVU,
    LUT_OFFCHIP_CONTROL,
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


def _schedule(nf: int, cf: int, in_beats: int, out_beats: int, tile_beats: float, period: float,
              latency: int, frames: int = 1, in_slots: int = 2,
              out_slots: int = 2, arrive: float | None = None) -> tuple[list[float], list[float]]:
    """Cycle of every fold's last read and of every frame's last output read in
    ``hw/rtl/conv_offchip.sv`` with ``ISLOTS = in_slots``, ``OSLOTS = out_slots`` over
    ``frames`` frames (first input beat at cycle 0, the frames' beats offered back to back
    every cycle, output taken every cycle, tiles 0 and 1 loaded while the block idled).

    Fold ``u`` (fold ``u mod nf`` of frame ``u // nf``) reads from ``S_u`` to
    ``E_u = S_u + cf − 1``, ``S_u = max(E_{u−1} + 1, D_u + 1)``; tile ``u ≥ 2`` is requested
    the cycle after fold ``u − 2``'s last read (across frames too), its first beat ``latency``
    cycles after the request and then one beat per ``period`` cycles, after the previous
    tile's beats: ``D_u = max(E_{u−2} + 1 + latency, D_{u−1} + period) + (tile_beats − 1)·period``.
    Frame ``f``'s fold 0 also waits for

    - its input: the frame's first beat ``A_f`` comes after the previous frame's last,
      ``A_f = max(A_{f−1} + in_beats, X_{f−in_slots} + 1)`` (``A_0 = 0``; an input slot is
      free the cycle after the last read ``X`` of the frame ``in_slots`` before), and fold 0
      reads from the cycle after its last beat, ``A_f + in_beats``; with ``arrive`` (default
      ``in_beats``) the producer takes that many cycles to deliver a frame: ``in_beats``
      becomes ``arrive`` in both;
    - an output slot: free from the cycle of the last output read ``O`` of the frame
      ``out_slots`` before, ``O_f = max(X_f + OFFCHIP_DEPTH, O_{f−1} + 1) + out_beats − 1``
      (a result is written 5 cycles after its last read, the streamer reads it the cycle
      after, one frame after the other; its last beat leaves at ``O_f + 1``).
    """
    arrive = in_beats if arrive is None else arrive
    ends: list[float] = []  # E_u
    outs: list[float] = []  # O_f
    first_in = 0.0  # A_f
    d_prev = float("-inf")
    for u in range(frames * nf):
        f, n = divmod(u, nf)
        floor = float("-inf")
        if n == 0:
            if f:
                free = ends[(f - in_slots + 1) * nf - 1] + 1 if f >= in_slots else float("-inf")
                first_in = max(first_in + arrive, free)
            floor = max(first_in + arrive, outs[f - out_slots] if f >= out_slots else floor)
        d_prev = fold_step(ends, outs, nf, cf, out_beats, tile_beats, period, latency, d_prev, floor)
    return ends, outs


def fold_step(ends: list[float], outs: list[float], nf: int, cf: int, out_beats: int, tile_beats: float,
              period: float, latency: int, d_prev: float, floor: float) -> float:
    """One fold ``u = len(ends)`` of `_schedule`'s recurrence: its tile's last beat ``D_u`` (the
    return value, the next call's ``d_prev``), its last read ``E_u`` appended to ``ends`` (its
    first read no earlier than ``floor`` too: a frame's input and output slot), and, on a
    frame's last fold, that frame's last output read appended to ``outs``."""
    u = len(ends)
    d = float("-inf") if u < 2 else max(ends[u - 2] + 1 + latency, d_prev + period) + (tile_beats - 1) * period
    s = max(ends[u - 1] + 1 if u else float("-inf"), d + 1, floor)
    ends.append(s + cf - 1)
    if u % nf == nf - 1:
        outs.append(max(ends[-1] + OFFCHIP_DEPTH, outs[-1] + 1 if outs else float("-inf")) + out_beats - 1)
    return d


def _fold_ends(nf: int, cf: int, in_beats: int, tile_beats: float, period: float,
               latency: int) -> list[float]:
    """Cycle of every fold's last read of frame 0 (`_schedule`: ``S_0 = in_beats``, the
    whole frame stored; the frame slots do not matter)."""
    return _schedule(nf, cf, in_beats, 0, tile_beats, period, latency)[0]


SCHEDULE_FRAMES = 6
"""Frames `_slots_ii` runs: its ii is the mean of intervals 2..5 between the frames' last
output beats (the module test's measure; a schedule whose folds wait for tiles may alternate,
and with one fold a frame, memory-bound, the two tiles loaded before frame 0 may still show)."""


def _slots_ii(nf: int, cf: int, in_beats: int, out_beats: int, tile_beats: float, period: float,
              latency: int, in_slots: int, out_slots: int, arrive: float | None = None) -> float:
    """Cycles per frame of ``conv_offchip.sv`` with ``ISLOTS = in_slots`` and
    ``OSLOTS = out_slots``, input offered and output taken every cycle, as the module test
    measures them: `_schedule` over `SCHEDULE_FRAMES` frames. With one input slot a frame's fold 0 reads from
    ``X + in_beats + 1`` at the earliest (``X`` the previous frame's last read: its input is
    stored from ``X + 1``); with one output slot from ``X + out_beats + 5`` (the previous
    frame's last output read); with two of either, the slot is the one the frame two before
    used."""
    outs = _schedule(nf, cf, in_beats, out_beats, tile_beats, period, latency, SCHEDULE_FRAMES,
                     in_slots, out_slots, arrive)[1]
    return (outs[-1] - outs[1]) / (SCHEDULE_FRAMES - 2)


def folds(g: Geometry, pe: int, simd: int) -> tuple[int, int]:
    """``(sf, nf)`` of an off-chip conv: reads a fold per output vector (a strided pointwise
    conv reads only its output pixels' vectors) and folds a frame (``Co/pe``)."""
    vectors = g.ho * g.wo if g.pointwise and g.ho * g.wo < g.h * g.w else g.h * g.w
    return g.k * (g.in_elems // vectors if g.pointwise else g.c) // simd, g.co // pe


def offchip_mvu(g: Geometry, pe: int, simd: int, uram: bool = False, rate: float | None = None,
                latency: int = 0, beat_bytes: int = OFFCHIP_BEAT_BYTES, in_slots: int = 2,
                out_slots: int = 2, in_cycles: int | None = None) -> BlockCost:
    """Conv / dense whose weights live in a board memory, read once per frame.

    Weights reloading (docs/cost-model.md, "Off-chip weights"; ``hw/rtl/conv_offchip.sv``):
    the block stores its whole input frame, then computes the output ``pe`` channels at a
    time (fold ``n`` of ``nf``) over every output pixel, ``cf = Ho·Wo·sf`` reads, while an
    AXI4 read master fetches the next fold's weights (a tile of ``pe·K·C`` bytes,
    ``tile_beats`` beats of ``beat_bytes``) into the other half of a double-buffered tile
    memory; each weight is read from off chip exactly once per frame. The outputs of a
    frame collect in an output frame buffer and stream out pixel by pixel (``pe`` lanes)
    once the last fold is done. With ``in_slots = out_slots = 2`` input, compute and output
    each have two frame slots, so three frames overlap:

    The memory delivers a tile's first beat ``latency`` cycles after its request and then
    one beat every ``period = beat_bytes / rate`` cycles (``rate`` bytes per cycle; None:
    one beat per cycle). Per fold the schedule repeats every
    ``T = max(cf, tile_beats·period, (latency + (tile_beats − 1)·period + cf + 1) / 2)``
    cycles (compute; memory bandwidth; a tile half's round trip: requested the cycle after
    its last read, loaded, computed), so

        ii = ceil(max(H·W·C/lanes, Ho·Wo·Co/pe, nf·T, (Ho·Wo·Co/pe + 4 + nf·T) / 2))

    (the last term: an output slot is reused two frames later, from the cycle of its last
    read; it binds only when ``sf = 1``, where the output is as long as the compute).

    ``in_slots``/``out_slots`` (1 or 2, ``ISLOTS``/``OSLOTS`` of the RTL) are the frame slots of
    the input and of the output buffer (memory ``in_slots·H·W·C/lanes`` and
    ``out_slots·Ho·Wo·Co/pe`` beats). With one input slot a frame's input is stored from the
    cycle after the previous frame's last read, so its fold 0 waits for it; with one output
    slot fold 0 waits for the previous frame's output to have left. Any slot count but two
    and two: the frame recurrence over 6 frames (`_slots_ii`, exact with the input offered
    every cycle); compute-bound, one of each gives ``ii = max(H·W·C/lanes, Ho·Wo·Co/pe + 4) + nf·T``,
    one input slot only ``H·W·C/lanes + nf·T``, one output slot only ``Ho·Wo·Co/pe + 4 + nf·T``.
    Frame 0's schedule, so the latency, is the same for every slot count. ``in_cycles`` (one
    input slot; default ``H·W·C/lanes``): the cycles the producer takes to deliver a frame
    (in a design, after an off-chip producer emitting ``pe_p`` lanes a beat,
    ``max(H·W·C/lanes, H·W·C/pe_p)``: the frame waits there, whole, while this block
    computes, docs/cost-model.md "One input slot").

    ``rate``/``latency``/``beat_bytes`` are the memory as this block sees it (the planner
    also charges ``offchip_bytes`` per ii against the memory's share). ``uram`` puts the two
    frame buffers in URAM instead of BRAM. Exact (RTL module tests) when ``rate`` divides
    ``beat_bytes`` and the tile is whole beats.
    """
    sf, nf = folds(g, pe, simd)
    lanes = min(simd, g.c)
    j = simd // lanes  # a parallel window reads j taps per cycle: j read ports (copies)
    in_beats = g.in_elems // lanes
    cf = g.ho * g.wo * sf
    out_beats = g.ho * g.wo * nf
    tile_beats = -(-pe * simd * sf // beat_bytes)
    period = 1.0 if rate is None else max(1.0, beat_bytes / rate)
    frame_mem = uram_memory if uram else memory
    if in_cycles is not None and (in_slots != 1 or in_cycles < in_beats):
        raise ValueError(f"offchip_mvu: in_cycles={in_cycles} needs one input slot and at least {in_beats}")
    if in_slots not in (1, 2) or out_slots not in (1, 2):
        raise ValueError(f"offchip_mvu: in_slots={in_slots}, out_slots={out_slots}, expected 1 or 2")
    frames = frame_mem(lanes * 8, in_slots * in_beats).times(j) + frame_mem(pe * 8, out_slots * out_beats)
    tiles = memory(pe * simd * 8, 2 * sf)  # one fold's weights, double-buffered
    mem = frames + tiles + _params(pe, nf)
    per_fold = max(cf, tile_beats * period, (latency + (tile_beats - 1) * period + cf + 1) / 2)
    # an output slot is written again from the frame after next: its last read (a frame's
    # results, then depth − 1, then out_beats reads) to that frame's last read
    slot = (out_beats + OFFCHIP_DEPTH - 2 + nf * per_fold) / 2
    two = math.ceil(max(in_beats, out_beats, nf * per_fold, slot) - 1e-9)  # two slots of each
    if (in_slots, out_slots) == (2, 2):
        ii = two
    elif (in_slots, out_slots) == (1, 2) and per_fold == cf:
        # compute-bound: the recurrence's value in closed form (equal on 17,000 random cases;
        # the planner's tables hold a row like this per off-chip folding)
        arrive = in_beats if in_cycles is None else in_cycles
        ii = math.ceil(max(arrive + nf * cf, out_beats, slot) - 1e-9)
    else:
        # never below two slots' ii: with one fold a frame and the folds waiting for tiles the
        # recurrence's first 6 frames may still be faster than its long run
        ii = max(two, math.ceil(_slots_ii(nf, cf, in_beats, out_beats, tile_beats, period, latency,
                                          in_slots, out_slots, in_cycles) - 1e-9))
    if per_fold == cf:  # compute-bound: every tile is in before its fold (equal to the recurrence
        last = in_beats + nf * cf - 1  # on 25,000 random cases; most table rows are like this)
    else:
        last = math.ceil(_fold_ends(nf, cf, in_beats, tile_beats, period, latency)[-1] - 1e-9)
    lead = last + 1  # the output frame buffer's first read: its first beat leaves at lead + depth
    span = last + out_beats
    lut_unit = round(_lut_per_mac(simd) * pe * simd) + (LUT_PER_PE + LUT_REQUANT) * pe + LUT_PER_SIMD * simd
    return BlockCost(
        ii=ii, depth=OFFCHIP_DEPTH, fill=1.0, first=sf, tail=span - (in_beats - 1), lead=lead,
        span=span, window=None, dsp=pe * simd + REQUANT_DSP * pe, bram18=mem.bram18, uram=mem.uram,
        lut=LUT_BASE_MVU + lut_unit + LUT_OFFCHIP_CONTROL + mem.lut, weights="ddr",
        offchip_bytes=sf * simd * nf * pe,  # the whole weight memory (a grouped conv's is block-diagonal)
        in_slots=in_slots, out_slots=out_slots,
    )


def staged(g: Geometry, pe: int, simd: int, uram: bool = False, rate: float | None = None,
           latency: int = 0, beat_bytes: int = OFFCHIP_BEAT_BYTES, bound: bool = False) -> BlockCost:
    """`offchip_mvu` with one input slot behind a DDR frame stage (docs/cost-model.md, "DDR
    frame stage"; ``hw/rtl/ddr_stage.sv`` in front of ``conv_offchip.sv`` ``ISLOTS = 1``).

    The stage takes the producer's beats whenever they come and writes each frame to a
    scratch area of the board memory; when the block frees its slot it reads the frame back,
    ``deliver`` cycles from first to last beat (`stage.built_stage`; with ``bound`` its
    closed-form upper bounds `stage.stage_bound`, for the planner's tables), so the block sees a
    producer that delivers a frame in ``in_cycles = max(in_beats, deliver)`` and never stalls
    its real producer. The pair's ii is the larger of the two; the stage's FIFOs and AXI
    masters add to the block's resources and its written and read frames to ``offchip_bytes``
    (its bandwidth is charged with the weights'); frame 0 reaches the block's slot
    ``stage.latency − in_beats`` cycles later than straight from the producer, which delays
    ``lead`` and ``span`` (the latency; not the ii)."""
    from bbgrap_hls.model.stage import built_stage, stage_bound

    lanes = min(simd, g.c)
    in_beats = g.in_elems // lanes
    sc = (stage_bound if bound else built_stage)(in_beats, lanes, rate, latency)
    c = offchip_mvu(g, pe, simd, uram=uram, rate=rate, latency=latency, beat_bytes=beat_bytes, in_slots=1,
                    in_cycles=max(in_beats, sc.deliver))
    late = max(0, sc.latency - in_beats)
    return replace(c, ii=max(c.ii, sc.ii), lead=c.lead + late, span=c.span + late, tail=c.tail + late,
                   bram18=c.bram18 + sc.bram18, lut=c.lut + sc.lut,
                   offchip_bytes=c.offchip_bytes + sc.bytes_per_frame, in_stage=True)
