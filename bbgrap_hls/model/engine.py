"""Cycles and resources of the layer engine (docs/engine.md; RTL ``hw/rtl/conv_engine.sv``).

`schedule` is the RTL's schedule as a recurrence, exact (the module twin,
``tests/test_rtl_engine.py``, measures every layer's end and every frame equal to it): per
layer ``O(folds + write bursts)`` steps, no cycle stepping, so a ResNet-50-sized program
(about 50 layers) takes milliseconds. `engine_cost` is the resource estimate.

The memory is the one the module test simulates (`bbgrap_hls.rtlsim.axi_mem`): a read burst's
first beat ``latency`` cycles after its address handshake, then one beat every ``period``
cycles, bursts in order; a write burst's beats accepted one every ``period`` cycles from its
address handshake on, its response ``latency`` cycles after its last beat. Each port (feature
reads, feature writes, weight reads) has its own such channel.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from bbgrap_hls.codegen.engine_image import FIELDS, RECORD_BYTES, EngineLayer, program
from bbgrap_hls.model.blocks import (
    LUT_AXI_READ,
    LUT_BASE_MVU,
    LUT_FRAME_ADDR,
    LUT_PER_PE,
    LUT_PER_SIMD,
    LUT_REQUANT,
    REQUANT_DSP,
    _lut_per_mac,
)
from bbgrap_hls.model.memory import memory

SETUP = 24
"""conv_engine.sv: from a layer's start (the ``start`` cycle, or the previous layer's end) to
its first RUN cycle: 21 cycles reading the 20 descriptor words (registered ROM reads), one
more to enter DERIVE1, DERIVE1, DERIVE2."""

DEPTH = 5
"""A pixel's PE results are pushed into the write queue 5 cycles after its last read (read,
product, accumulate, requantise 2; as conv_offchip)."""

BURST = 16
"""Default write burst (``BURST`` of the RTL)."""

QUEUE = 40
"""Default write queue beats (``WQ`` of the RTL)."""

ROOM = 7
"""The compute reads on only while the write queue has ``ROOM`` free beats (its pipeline's results)."""


@dataclass(frozen=True)
class LayerTiming:
    """One layer's cycles (the frame's ``start`` cycle is 0): ``run`` its first RUN cycle,
    ``loaded`` the last input beat, ``fold_ends`` every fold's last read, ``end`` the layer's
    end (``layer_end``: the cycle after its last write response), ``queue`` the most beats its
    write queue may hold (an upper bound; the compute stalls above ``WQ − ROOM``)."""

    run: int
    loaded: int
    fold_ends: list[int]
    end: int
    queue: int


@dataclass(frozen=True)
class EngineTiming:
    """A frame: its layers and ``cycles``, start to ``done`` inclusive (the engine's ii and
    latency: the next frame may start the cycle after ``done``)."""

    layers: list[LayerTiming]
    cycles: int


def _fields(row) -> dict[str, int]:
    return dict(zip(FIELDS, row, strict=True)) if not isinstance(row, dict) else row


def _rows(rows, pe: int, simd: int, beat: int) -> list:
    """Descriptor rows as given, or laid out by `engine_image.program` from `EngineLayer`s."""
    rows = list(rows)
    if rows and isinstance(rows[0], EngineLayer):
        return program(rows, pe, simd, beat).descriptors
    return rows


def layer_timing(row, t0: int, pe: int, simd: int, beat: int, latency: int, period: int,
                 feat_base: int = 0, burst: int = BURST) -> LayerTiming:
    """One layer of `schedule` starting at cycle ``t0`` (its descriptor read begins at ``t0 + 1``).

    Cycles (``a = t0 + SETUP`` the first RUN cycle, ``L`` latency, ``P`` period, ``TB`` tile
    beats, ``Cf = Ho·Wo·SF`` a fold's reads):

    - input: bursts from ``a + 1`` back to back, beats at ``a + 1 + L + j·P``, the last
      ``X = a + 1 + L + (⌈H·W·C/DB⌉ − 1)·P``;
    - tile ``t``'s last beat: ``D_0 = a + 2 + L + (TB − 1)·P``, ``D_1 = D_0 + TB·P``,
      ``D_t = max(E_{t−2} + 2 + L, D_{t−1} + P) + (TB − 1)·P`` (requested the cycle after its
      half is free, the cycle after fold ``t − 2``'s last read);
    - fold ``n`` reads from ``S_n = max(E_{n−1} + 1, D_n + 1, X + 1 if n = 0)`` to
      ``E_n = S_n + Cf − 1``;
    - a pixel ``q`` of fold ``n`` is pushed at ``S_n + (q + 1)·SF − 1 + DEPTH``; output beat
      ``i`` (``DB/PE`` results, the last one zero-padded) with its last result;
    - write burst ``k`` (``len = min(BURST, beats to 4 KB, beats left)``) is decided at
      ``g_k = max(push of its last beat + 1, w_{k−1} + 1)``, its first beat at
      ``f_k = max(g_k + 1, w_{k−1} + P)``, its last ``w_k = f_k + (len − 1)·P``, its response
      at ``w_k + L``;
    - the layer ends the cycle after its last response.
    """
    f = _fields(row)
    h, w, c, co = f["H"], f["W"], f["C"], f["CO"]
    kh, kw, sh, sw = f["KH"], f["KW"], f["SH"], f["SW"]
    ho = (h + f["PT"] + f["PB"] - kh) // sh + 1
    wo = (w + f["PL"] + f["PR"] - kw) // sw + 1
    sf = kh * kw * c // simd
    nf = co // pe
    tb = f["TILE_BEATS"]
    cf = ho * wo * sf
    a = t0 + SETUP
    nin = -(-h * w * c // beat)
    x = a + 1 + latency + (nin - 1) * period
    ends: list[int] = []
    starts: list[int] = []
    d_prev = 0
    for n in range(nf):
        if n == 0:
            d = a + 2 + latency + (tb - 1) * period
        elif n == 1:
            d = d_prev + tb * period
        else:
            d = max(ends[n - 2] + 2 + latency, d_prev + period) + (tb - 1) * period
        s = max(ends[-1] + 1 if ends else x + 1, d + 1)
        starts.append(s)
        ends.append(s + cf - 1)
        d_prev = d
    # writes: results fold-major, pixel-major, DB/PE a beat
    rpb = beat // pe
    results = ho * wo * nf
    nout = -(-results // rpb)

    def push(i: int) -> int:
        r = min((i + 1) * rpb, results) - 1
        n, q = divmod(r, ho * wo)
        return starts[n] + (q + 1) * sf - 1 + DEPTH

    def pushed(t: int) -> int:  # beats pushed by cycle t
        return bisect.bisect_right(range(nout), t, key=push)

    addr = f["OUT_BASE"] + feat_base
    b0, wl, queue = 0, -(10**18), 0
    while b0 < nout:
        to4k = (4096 - addr % 4096) // beat
        ln = min(burst, to4k, nout - b0)
        g = max(push(b0 + ln - 1) + 1, wl + 1)
        first = max(g + 1, wl + period)
        wl = first + (ln - 1) * period
        queue = max(queue, pushed(wl) - b0)
        b0 += ln
        addr += ln * beat
    return LayerTiming(run=a, loaded=x, fold_ends=ends, end=wl + latency + 1, queue=queue)


def schedule(rows, pe: int, simd: int, beat: int, latency: int, period: int = 1, feat_base: int = 0,
             burst: int = BURST, queue: int = QUEUE) -> EngineTiming:
    """Every layer's cycles of one frame of ``conv_engine.sv`` (start at cycle 0), the program
    ``rows`` (`engine_image.Program.descriptors`, dicts of `FIELDS`, or the `EngineLayer` chain,
    laid out by `engine_image.program` at ``feat_base`` 0 as the RTL's bases) on a memory of
    ``latency`` and ``period`` (an integer number of cycles per beat) with ``beat`` bytes a
    beat; ``feat_base``: the RTL's ``FEAT_BASE`` (where write bursts cut at 4 KB).

    Raises:
        ValueError: a layer's write queue could fill (``queue`` beats less `ROOM`): its compute
            might stall on the writes, which the recurrence does not model.
    """
    if period < 1 or int(period) != period:
        raise ValueError(f"engine: period {period} must be a whole number of cycles")
    out, t0 = [], 0
    for i, row in enumerate(_rows(rows, pe, simd, beat)):
        lt = layer_timing(row, t0, pe, simd, beat, latency, int(period), feat_base, burst)
        if lt.queue + ROOM > queue:
            raise ValueError(f"engine: layer {i}'s writes may hold {lt.queue} beats, the queue has "
                             f"{queue} (less {ROOM}): the compute would stall on its writes")
        out.append(lt)
        t0 = lt.end
    return EngineTiming(out, t0 + 1)


@dataclass(frozen=True)
class EngineCost:
    """The engine's resources (`engine_cost`) and its frame cycles on a memory."""

    cycles: int
    dsp: int
    bram18: int
    lut: int


def engine_cost(rows, pe: int, simd: int, beat: int, latency: int, period: int = 1, feat_base: int = 0,
                burst: int = BURST, queue: int = QUEUE) -> EngineCost:
    """Cycles and resources of an engine sized for the program ``rows``.

    - DSP: ``pe·simd`` products and `REQUANT_DSP` per requantiser (as `offchip_mvu`): a fit
      of the same datapath.
    - BRAM18 (`memory`): the input buffer (``DB`` bytes a row, the largest map's
      ``⌈H·W·C/DB⌉`` rows) and the two tile halves (``max(pe·simd, DB)`` bytes a row, the
      largest ``PW + SF`` words each), the write queue (``queue`` beats; LUTRAM at the default
      size, the RTL reads it asynchronously) and the program ROM (``20·layers`` 32-bit words).
    - LUT: `offchip_mvu`'s unit (products, requantisers, lanes, base, `LUT_FRAME_ADDR` for the
      window addresses) plus three AXI masters (feature read, feature write, weight read) at
      `LUT_AXI_READ` each, plus the memories' LUTs. A guess: the AXI masters here are address
      generators without FIFOs, so this likely overestimates; not fitted to a synthesis run.
    """
    t = schedule(rows, pe, simd, beat, latency, period, feat_base, burst, queue)
    wb = pe * simd
    rb = max(wb, beat)
    pw = -(-RECORD_BYTES * pe // wb)
    fs = [_fields(r) for r in _rows(rows, pe, simd, beat)]
    in_rows = max(-(-f["H"] * f["W"] * f["C"] // beat) for f in fs)
    tile_words = max(pw + f["KH"] * f["KW"] * f["C"] // simd for f in fs)
    mem = memory(beat * 8, in_rows) + memory(rb * 8, 2 * -(-tile_words * wb // rb)) \
        + memory(beat * 8, queue) + memory(32, 20 * len(fs))
    lut_unit = round(_lut_per_mac(simd) * pe * simd) + (LUT_PER_PE + LUT_REQUANT) * pe + LUT_PER_SIMD * simd
    lut = LUT_BASE_MVU + lut_unit + LUT_FRAME_ADDR + 3 * LUT_AXI_READ + mem.lut
    return EngineCost(cycles=t.cycles, dsp=pe * simd + REQUANT_DSP * pe, bram18=mem.bram18, lut=lut)
