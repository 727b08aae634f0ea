"""Cost of an off-chip conv computed a band of output rows at a time (docs/cost-model.md,
"Row bands"; RTL ``hw/rtl/band_split.sv`` + ``hw/rtl/conv_band.sv``, HLS ``bb::band_split`` and
``bb::conv2d_banded`` in ``hw/hls/conv2d_banded.h``).

An off-chip conv (`offchip.offchip_mvu`) stores its whole input frame and its whole output
frame, two slots each: at ImageNet sizes those frame buffers are what no longer fits a small
board once the weights are off chip. With ``bands = B`` the frame's ``Ho`` output rows are
computed ``R = Ho/B`` rows at a time. A *band splitter* in front of the conv re-emits the
input stream as ``B`` band frames of ``Hb = (R − 1)·sh + kh`` rows each (band ``b`` covers input
rows ``b·R·sh − pt … b·R·sh − pt + Hb − 1``): rows above or below the image as padding rows,
rows a band shares with the one before replayed from a buffer of the last ``Hb − R·sh`` rows,
and rows no band reads dropped. The conv itself is `offchip_mvu` on the band's geometry
(``h = Hb``, ``ho = R``, no top or bottom padding), run ``B`` times a frame; its frame slots
hold a band, and each weight is read ``B`` times a frame (once per band): memory traded for
board-memory bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from bbgrap_hls.model.blocks import BlockCost
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.memory import memory
from bbgrap_hls.model.offchip import OFFCHIP_BEAT_BYTES, OFFCHIP_DEPTH, fold_step, folds, offchip_mvu
from bbgrap_hls.model.timing import resample

SPLIT_DEPTH = 1
"""band_split.sv: its output beat is registered (one cycle from the input beat or the
buffer read to the conv's input). Its leading padding rows need no input: they go out
before the frame's first beat comes (`_band_schedule`)."""

LUT_BAND_SPLIT = 64
"""LUTs of the splitter's row/band/beat counters and step decode; its data path adds 8 or
16 per lane (`band_split_lut`). Yosys (xcup, bench/resources.py's script) on six
configurations: 2 lanes no buffer 50 (model 80), 8 lanes no buffer 118 (128), 8 lanes with a
BRAM row buffer 198 (192), 16 lanes 326 (320), 32 lanes 593 (576), 2 lanes with a LUTRAM
buffer 96 (96 + the buffer's 16 as `memory` counts it: 112); BRAM18 as `memory` (4, 4, 8)."""

MAX_BAND_ROWS = 8
"""The largest band (output rows) the tables offer: bands of 1, 2, 4 and 8 rows (those that
divide ``Ho``)."""


def band_geometry(g: Geometry, bands: int) -> Geometry:
    """The geometry the conv sees for one band: ``Hb`` input rows, ``R`` output rows, the
    left and right padding only."""
    if bands < 1 or g.ho % bands:
        raise ValueError(f"bands={bands} must divide the output height {g.ho}")
    r = g.ho // bands
    hb = (r - 1) * g.sh + g.kh
    return replace(g, h=hb, ho=r, pads=(0, g.pads[1], 0, g.pads[3]))


def band_rows(g: Geometry, bands: int) -> list[int]:
    """Input row index of every band's first row (negative: padding above the image)."""
    r = g.ho // bands
    return [b * r * g.sh - g.pads[0] for b in range(bands)]


def dropped_rows(g: Geometry, bands: int) -> int:
    """Input rows no band reads (a stride larger than the window, rows below the last band):
    the splitter's ``drop`` rows (`_rows`)."""
    return sum(kind == "drop" for kind, _ in _rows(g, bands))


def overlap_rows(g: Geometry, bands: int) -> int:
    """Rows a band shares with the band before: the splitter's row buffer (0 with one band)."""
    if bands == 1:
        return 0
    return max(0, band_geometry(g, bands).h - (g.ho // bands) * g.sh)


def split_beats(g: Geometry, bands: int, lanes: int) -> int:
    """Cycles the splitter takes for a frame when never stalled: one per band beat it emits
    (passed, replayed or padding) and one per dropped input beat."""
    row = g.w * g.c // lanes
    return (bands * band_geometry(g, bands).h + dropped_rows(g, bands)) * row


def band_split_lut(lanes: int, buffered: bool = True) -> int:
    """LUTs of the splitter (its row buffer not included: `memory`): `LUT_BAND_SPLIT` plus,
    per bit, the padding/input multiplexer in front of the output register and, with a row
    buffer (``buffered``: `overlap_rows` > 0), the register/buffer-read multiplexer after it."""
    return LUT_BAND_SPLIT + (16 if buffered else 8) * lanes


def _rows(g: Geometry, bands: int) -> list[tuple[str, int]]:
    """The splitter's rows of one frame in order, ``(kind, band)``: ``pass`` (an input row taken
    and emitted), ``gen`` (a padding or replayed row, no input), ``drop`` (an input row taken,
    nothing emitted; band −1 after the last band)."""
    hb = band_geometry(g, bands).h
    out: list[tuple[str, int]] = []
    nxt = 0  # input rows received
    for b, r0 in enumerate(band_rows(g, bands)):
        for row in range(r0, r0 + hb):
            if row < 0 or row >= g.h or row < nxt:
                out.append(("gen", b))
                continue
            out += [("drop", b)] * (row - nxt)
            out.append(("pass", b))
            nxt = row + 1
    return out + [("drop", -1)] * (g.h - nxt)


def _band_schedule(g: Geometry, bands: int, lanes: int, nf: int, cf: int, out_beats: int, tile_beats: float,
                   period: float, latency: int, frames: int = 1,
                   out_slots: int = 2) -> tuple[list[float], list[float]]:
    """Cycle of every fold's last read ``E`` and of every band frame's last output read ``O``
    in ``hw/rtl/conv_band.sv`` over ``frames`` frames (``frames·bands`` band frames; first
    input beat at cycle 0, the frames offered back to back every cycle, output taken every
    cycle, tiles 0 and 1 loaded and frame 0's leading padding rows emitted while the block
    idled).

    The splitter (`_rows`) takes a step a cycle, a row ``W·C/lanes`` steps: input beat ``i``
    (of the whole stream) no earlier than cycle ``i``; an emitted beat once the output
    register is free (its previous beat handed over, at the latest in that cycle). A beat
    reaches the conv `SPLIT_DEPTH` after its step; band frame ``f``'s first beat no earlier
    than the cycle after the last read of band frame ``f − 2`` (two input slots), the others
    at once. The conv runs `offchip._schedule`'s recurrence band frame by band frame: fold 0
    reads from the cycle after its band's last beat and once the output slot of the band
    frame ``out_slots`` before (``OSLOTS``, 1 or 2) is free."""
    row = g.w * g.c // lanes
    rows = _rows(g, bands)
    last_emit = {b: k for k, (kind, b) in enumerate(rows) if kind != "drop"}  # band -> its last row
    neg = float("-inf")
    t = -1e12  # the last step (before the frame: time enough for its leading padding rows)
    free = neg  # the output register takes a beat from this cycle on
    i = 0  # next input beat
    ends: list[float] = []
    outs: list[float] = []
    d_prev = neg
    for fr in range(frames):
        band_first = -1
        for k, (kind, b) in enumerate(rows):
            if kind == "drop":
                t = max(t + 1, i) + row - 1
                i += row
                continue
            f = fr * bands + b
            s1 = max(t + 1, free, i if kind == "pass" else neg)
            if b != band_first:  # the band frame's first beat waits for an input slot
                band_first = b
                h1 = max(s1 + SPLIT_DEPTH, ends[(f - 1) * nf - 1] + 1 if f >= 2 else neg)
                t = s1 if row == 1 else max(s1 + 1, h1) + row - 2
                free = h1 if row == 1 else t + SPLIT_DEPTH
            else:
                t = s1 + row - 1
                free = t + SPLIT_DEPTH
            if kind == "pass":
                i += row
            if k != last_emit[b]:
                continue
            # band frame f is in (its last beat handed over at `free`): its folds
            for n in range(nf):
                floor = max(free + 1, outs[f - out_slots] if f >= out_slots else neg) if n == 0 else neg
                d_prev = fold_step(ends, outs, nf, cf, out_beats, tile_beats, period, latency, d_prev, floor)
    return ends, outs


def banded(g: Geometry, pe: int, simd: int, bands: int, uram: bool = False, rate: float | None = None,
           latency: int = 0, beat_bytes: int = OFFCHIP_BEAT_BYTES, timing: bool = True,
           out_slots: int = 2) -> BlockCost:
    """`offchip_mvu` a band at a time: a band splitter, then the off-chip conv on
    `band_geometry` run ``bands`` times a frame (two band slots in, ``out_slots`` out).

    The conv takes the band frames back to back, so over a frame

        ii = max(B·ii_band, split_beats)

    (``ii_band`` the band conv's ii with two input slots and ``out_slots`` output slots, `offchip_mvu`;
    the splitter's cycles bind only where it drops many rows): equal to the mean frame
    interval of `_band_schedule` over `SCHEDULE_FRAMES` frames on 6,943 random cases with two
    output slots (tests/test_rtl_band.py checks a sample, and a sample with one). The conv's input and output slots
    hold a band: its frame memories are a band's, the splitter adds a buffer of the
    `overlap_rows` (``lanes`` wide, one word a beat). Each weight is read once per band:
    ``offchip_bytes = B·weights``. Frame 0's schedule is `_band_schedule` (the splitter's
    steps row by row, its leading padding rows emitted before the input comes: exact against
    the RTL, tests/test_rtl_band.py); its last
    output read ``O`` gives ``span = O − OFFCHIP_DEPTH + 1`` (the last beat leaves at
    ``span + depth``), band 0's last fold read ``X`` gives ``lead = X + 1``; the first output
    needs band 0's input, the rows up to ``Hb − pt`` (``fill``). ``timing=False`` leaves frame 0's
    schedule out (``lead``, ``span`` and ``tail`` those of one band: the planner's tables, which
    need the ii and the resources only; `_band_schedule` is most of their time otherwise).
    """
    if bands == 1:
        return offchip_mvu(g, pe, simd, uram=uram, rate=rate, latency=latency, beat_bytes=beat_bytes,
                           out_slots=out_slots)
    gb = band_geometry(g, bands)
    c = offchip_mvu(gb, pe, simd, uram=uram, rate=rate, latency=latency, beat_bytes=beat_bytes, out_slots=out_slots)
    lanes = min(simd, g.c)
    ii = max(bands * c.ii, split_beats(g, bands, lanes))
    lead, span = c.lead, c.span
    if timing:
        sf, nf = folds(gb, pe, simd)
        period = 1.0 if rate is None else max(1.0, beat_bytes / rate)
        ends, outs = _band_schedule(g, bands, lanes, nf, gb.ho * gb.wo * sf, gb.ho * gb.wo * nf,
                                    -(-pe * simd * sf // beat_bytes), period, latency, out_slots=out_slots)
        lead = math.ceil(ends[nf - 1] - 1e-9) + 1
        span = math.ceil(outs[bands - 1] - OFFCHIP_DEPTH + 1 - 1e-9)
    overlap = overlap_rows(g, bands)
    buf = memory(lanes * 8, overlap * (g.w * g.c // lanes))
    return replace(c, ii=ii, fill=band_fill(g, bands), lead=lead, span=span, tail=span - (g.in_elems // lanes - 1),
                   bram18=c.bram18 + buf.bram18, lut=c.lut + buf.lut + band_split_lut(lanes, overlap > 0),
                   offchip_bytes=bands * c.offchip_bytes, bands=bands)


def band_fill(g: Geometry, bands: int) -> float:
    """The fraction of the input frame a banded conv takes before its first output: band 0's
    input rows, ``(Hb − pt)/H``."""
    return min(1.0, max(1, band_geometry(g, bands).h - g.pads[0]) / g.h)


def band_counts(g: Geometry) -> list[int]:
    """The band counts the tables offer a conv (more than one band): those giving bands of
    1, 2, 4, … `MAX_BAND_ROWS` output rows that divide ``Ho``."""
    out = []
    r = 1
    while r <= MAX_BAND_ROWS and r < g.ho:
        if g.ho % r == 0:
            out.append(g.ho // r)
        r *= 2
    return out


def banded_rows_out(r_in: tuple[np.ndarray, np.ndarray], g: Geometry, pe: int, simd: int, bands: int,
                    memory: tuple[float, int, int] | None, out_slots: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Output rows (first and last beat of each of the ``Ho`` rows, `model.timing`'s ``Rows``)
    of a banded conv whose ``H`` input rows arrive as ``r_in`` (the design latency, `search.build`).

    Band ``b`` is in the conv once its last input row has arrived, the splitter has emitted
    it (one band after the other, `SPLIT_DEPTH` later, a band's beats a cycle each) and the
    previous band's folds are done; its folds then take the band conv's compute (its lead
    after its input, `offchip_mvu` on `band_geometry`), and its ``R`` rows of ``Wo·Co/pe``
    beats leave one after the other, the first `OFFCHIP_DEPTH` + 1 after its last read; with one
    output slot (``out_slots = 1``) a band's folds also wait for the band before to have left.
    The two input slots and the tile reads' waits beyond the band conv's own lead are not
    modelled: exact where the folds bind the band (the planner's usual case), early otherwise."""
    rate, latency, beat = memory or (None, 0, OFFCHIP_BEAT_BYTES)
    gb = band_geometry(g, bands)
    lanes = min(simd, g.c)
    band_beats = gb.in_elems // lanes
    c = offchip_mvu(gb, pe, simd, rate=rate, latency=latency, beat_bytes=beat)
    compute = c.lead - band_beats  # band 0's folds after its last input beat
    s_in, e_in = resample(r_in, g.h)
    r = g.ho // bands
    out_row = g.wo * (g.co // pe)
    starts, ends = [], []
    emitted = folded = out_end = -(1 << 62)
    for r0 in band_rows(g, bands):
        last = min(g.h - 1, r0 + gb.h - 1)
        ready = max(int(e_in[last]) + 1 if last >= 0 else int(s_in[0]), emitted + band_beats) + SPLIT_DEPTH
        emitted = ready - SPLIT_DEPTH
        slot = out_end if out_slots == 1 else ready  # (one output slot: free once the band before left)
        folded = max(ready, slot, folded) + compute
        for _ in range(r):
            st = max(folded + OFFCHIP_DEPTH, out_end + 1)  # (folded: the band's last read + 1)
            out_end = st + out_row - 1
            starts.append(st)
            ends.append(out_end)
    return np.asarray(starts, np.int64), np.asarray(ends, np.int64)
