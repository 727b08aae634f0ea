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

from bbgrap_hls.codegen.engine_image import (
    FIELDS,
    RECORD_BYTES,
    EngineLayer,
    in_buffer_bytes,
    load_runs,
    program,
    step_out_hw,
    store_runs,
)
from bbgrap_hls.model.blocks import (
    LUT_BASE_MVU,
    LUT_PER_PE,
    LUT_PER_SIMD,
    LUT_REQUANT,
    REQUANT_DSP,
    _lut_per_mac,
    pack_change,
)
from bbgrap_hls.model.memory import URAM_WIDTH, memory, uram_memory

SETUP = len(FIELDS) + 4
"""conv_engine.sv: from a step's start (the ``start`` cycle, or the previous step's end) to
its first RUN cycle: 23 cycles reading the 22 descriptor words (registered ROM reads), one
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

LOAD_CHUNK = 16
"""Beats of a span of the input load (``CHUNK`` of the RTL): chunk ``k`` of every run, then
chunk ``k + 1``, so that fold 0 may start a row once its input rows are in."""


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

    - input: `load_runs`' ``R`` runs of ``B`` beats in spans of `LOAD_CHUNK` beats, chunk
      ``k`` of every run before chunk ``k + 1`` of any, their bursts from ``a + 1`` back to back
      (one a cycle, the next span's with the last of a span), beats at ``a + 1 + L + j·P``, the
      last ``X = a + 1 + L + (R·B − 1)·P`` (whole layer, blocks abutting: ``R·B = ⌈H·W·C/DB⌉``);
      round ``k`` (chunk ``k`` of every run) is in at ``X_k = a + 1 + L + (R·min((k+1)·LOAD_CHUNK, B) − 1)·P``;
    - fold 0's output row ``oy`` may start at ``Y_oy = X_k + 1``, ``k`` the first round whose
      ``(k+1)·LOAD_CHUNK·DB`` bytes of each run reach ``skip + (oy·SH − PT + KH)·W·PE`` (one
      run: plus the ``(C/PE − 1)·H·W·PE`` bytes of the blocks before the last), its last row at
      ``X + 1``;
    - tile ``t``'s last beat: ``D_0 = a + 2 + L + (TB − 1)·P``, ``D_1 = D_0 + TB·P``,
      ``D_t = max(E_{t−2} + 2 + L, D_{t−1} + P) + (TB − 1)·P`` (requested the cycle after its
      half is free, the cycle after fold ``t − 2``'s last read);
    - fold ``n ≥ 1`` reads from ``S_n = max(E_{n−1} + 1, D_n + 1)`` to ``E_n = S_n + Cf − 1``;
      fold 0's row ``oy`` from ``R_oy = max(R_{oy−1} + Wo·SF, Y_oy)``, ``R_0 = max(Y_0, D_0 + 1)``,
      to ``E_0 = R_{Ho−1} + Wo·SF − 1``;
    - a pixel ``q`` of fold ``n`` is pushed ``SF − 1 + DEPTH`` cycles after its first read; output beat
      ``i`` (``DB/PE`` results, the last one zero-padded) with its last result; `store_runs`:
      the folds packed one after the other (blocks abutting), or each fold from a new beat
      (``OUT_STRIDE`` a multiple of the beat), its last beat zero-padded;
    - write burst ``k`` (``len = min(BURST, beats to 4 KB, beats left in its run)``, a run
      from ``OUT_BASE + r·OUT_STRIDE``) is decided at
      ``g_k = max(push of its last beat + 1, w_{k−1} + 1)``, its first beat at
      ``f_k = max(g_k + 1, w_{k−1} + P)``, its last ``w_k = f_k + (len − 1)·P``, its response
      at ``w_k + L``;
    - the layer ends the cycle after its last response.

    A step of ``FRAMES = F > 1`` frames ("Batched frames"): the load is ``F·R`` runs (chunk ``k``
    of every frame's runs, then chunk ``k + 1``): ``R`` becomes ``F·R`` above; fold 0 computes
    frame 0's rows, then frame 1's, ..., each frame's row ``oy`` gated by the same ``Y_oy``
    (every run's bytes in), each frame's last row by ``X + 1``; fold ``n ≥ 1`` reads ``F·Cf``
    cycles; the results of (fold ``n``, frame ``f``) are a run of their own at ``OUT_BASE +
    n·OUT_STRIDE + f·FRAME_STRIDE``, fold-major.
    """
    f = _fields(row)
    kh, kw = f["KH"], f["KW"]
    ho, wo = step_out_hw(f)
    sf = kh * kw * f["C"] // simd
    nf = f["CO"] // pe
    tb = f["TILE_BEATS"]
    cf = ho * wo * sf
    a = t0 + SETUP
    nfr = f["FRAMES"]
    runs, run_beats, skip = load_runs(f, pe, beat)
    before = (f["C"] // pe - 1) * f["H"] * f["W"] * pe if runs == 1 else 0
    runs *= nfr  # every frame's runs, chunk by chunk
    x = a + 1 + latency + (runs * run_beats - 1) * period  # the runs' bursts back to back
    # fold 0's rows as the rounds of chunks come in
    rounds = -(-run_beats // LOAD_CHUNK)
    row_bytes, chunk_bytes = f["W"] * pe, LOAD_CHUNK * beat

    def ready(oy: int) -> int:
        if oy == ho - 1:
            return x + 1
        need = skip + before + (oy * f["SH"] - f["PT"] + kh) * row_bytes
        k = min(rounds - 1, max(0, -(-need // chunk_bytes) - 1))
        return a + 2 + latency + (runs * min((k + 1) * LOAD_CHUNK, run_beats) - 1) * period

    ends: list[int] = []
    starts: list[int] = []
    rows: list[int] = []  # fold 0's rows' first reads, frame after frame
    d_prev = 0
    for n in range(nf):
        if n == 0:
            d = a + 2 + latency + (tb - 1) * period
            r = max(ready(0), d + 1)
            rows.append(r)
            for i in range(1, nfr * ho):
                r = max(r + wo * sf, ready(i % ho))
                rows.append(r)
            s, e = rows[0], r + wo * sf - 1
        else:
            d = d_prev + tb * period if n == 1 else max(ends[n - 2] + 2 + latency, d_prev + period) + (tb - 1) * period
            s = max(ends[-1] + 1, d + 1)
            e = s + nfr * cf - 1
        starts.append(s)
        ends.append(e)
        d_prev = d
    # writes: results fold-major, pixel-major, DB/PE a beat; one run of all folds (blocks
    # that abut) or a run per fold (each fold's last beat flushed)
    rpb = beat // pe
    wruns, wbeats, flush = store_runs(f, pe, beat)
    nout = wruns * wbeats
    fold_beats = -(-ho * wo // rpb)

    nout *= nfr

    def push(i: int) -> int:
        fr = 0
        if flush:  # (fold n, frame fr)'s beats from beat (n·F + fr)·fold_beats
            k, j = divmod(i, fold_beats)
            n, fr = divmod(k, nfr)
            q = min((j + 1) * rpb, ho * wo) - 1
        else:
            n, q = divmod(min((i + 1) * rpb, ho * wo * nf) - 1, ho * wo)
        first = rows[fr * ho + q // wo] + q % wo * sf if n == 0 else starts[n] + (fr * ho * wo + q) * sf
        return first + sf - 1 + DEPTH

    def pushed(t: int) -> int:  # beats pushed by cycle t
        return bisect.bisect_right(range(nout), t, key=push)

    wl, queue = -(10**18), 0
    for k in range(wruns * nfr):
        addr = f["OUT_BASE"] + k // nfr * f["OUT_STRIDE"] + k % nfr * f["FRAME_STRIDE"] + feat_base
        b0, bend = k * wbeats, (k + 1) * wbeats
        while b0 < bend:
            to4k = (4096 - addr % 4096) // beat
            ln = min(burst, to4k, bend - b0)
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


DESC_DSP = 6
"""DSP48E2s of the descriptor's sizes, besides the products and requantisers (DERIVE1/2's
``H·W``, ``H·W·C``, ``C/PE·beats``, ``SH·W·PE``, ``PT·W·PE``, ``KH·W·PE``, one each: the RTL
takes ``H·W``, ``W·PE`` and a block's beats to 24 bits, `engine_image.load_runs` checks the
first two); Yosys 0.70 counts 6 at PE × SIMD 4 × 4 (bench/resources.py ``--engine``; 7 before
the load's row gate added ``KH·W·PE``, with ``H·W·C`` and ``C/PE·beats`` two each)."""

LUT_CONTROL = 3140
LUT_CONTROL_BEAT = 42
"""LUTs of the engine besides `offchip_mvu`'s unit and the memories: descriptor, window
addresses, the three AXI masters, the tile row and result packing, the load's chunks and fold
0's row gate; ``LUT_CONTROL + LUT_CONTROL_BEAT`` a beat byte. Fitted to Yosys 0.70
(bench/resources.py ``--engine``) at PE × SIMD 4 × 4: 2,506 LUTs at 8-byte beats, 2,841 at 16
(engine-conv-4x4, -4x4-w128), then 600 more for the load in chunks and the row gate (Yosys
+619, +557 and +643 on engine-conv-4x4, -4x4-w128, -8x8: 5,725, 6,222, 10,607 LUTs), then 370
more for batched frames (stop 56: the frame counters and addresses of the load, the window
and the write runs; Yosys 6,100, 6,619, 10,860: +375, +397, +253; model/Yosys 1.00, 1.00,
0.98 after). (It
replaces a guess of three `LUT_AXI_READ` masters and `LUT_FRAME_ADDR`, 4,800 LUTs: Yosys /
model 0.69 at 4 × 4.)"""


@dataclass(frozen=True)
class EngineCost:
    """The engine's resources (`engine_cost`) and its frame cycles on a memory."""

    cycles: int | None  # None: a step's writes cannot keep up (`schedule` refuses to time it)
    dsp: int
    bram18: int
    lut: int
    uram: int = 0


def engine_cost(rows, pe: int, simd: int, beat: int, latency: int, period: int = 1, feat_base: int = 0,
                burst: int = BURST, queue: int = QUEUE, pack: bool = False, uram: bool = False,
                tile_uram: int = 0, timed: bool = True) -> EngineCost:
    """Cycles and resources of an engine sized for the program ``rows``; ``pack``: the RTL's
    ``PACK = 1`` (output lanes ``2i``, ``2i+1`` share a DSP48E2 per input lane; the same cycles);
    ``uram``: the RTL's ``IBUF_URAM = 1`` (the input buffer in URAM288); ``tile_uram``: its
    ``TMEM_URAM`` (72-bit columns of the tile memory's rows in URAM288); the same cycles;
    ``timed`` False: resources only (``cycles`` None; the schedule is the costly part).

    - DSP: ``pe·simd`` products and `REQUANT_DSP` per requantiser (as `offchip_mvu`): a fit
      of the same datapath. Packed, ``pe/2·simd`` products (`blocks.pack_change`: also its
      `LUT_PACK` LUTs a pair and input lane).
    - DSP: besides, `DESC_DSP` for the descriptor's sizes (32-bit products).
    - BRAM18 (`memory`): the input buffer (``DB`` bytes a row, the largest step's
      `in_buffer_bytes`) and the two tile halves (``max(pe·simd, DB)`` bytes a row, the
      largest ``PW + SF`` words each), the write queue (``queue`` beats; LUTRAM at the default
      size, the RTL reads it asynchronously), the program ROM (22 32-bit words a step) and the
      two halves' requantiser records (``8·pe`` bytes each: LUTRAM in Yosys when they fit a
      tile row, registers shifted in otherwise).
    - URAM288 (``uram``): the input buffer instead, `memory.uram_memory` (``ceil(8·DB/72)``
      columns of 72 bits, each ``ceil(rows/4096)`` deep), no BRAM18 or LUTRAM for it;
      ``tile_uram`` columns: the tile memory's low ``min(72·tile_uram, 8·row bytes)`` bits
      likewise, the rest of each row a memory of its own (`memory`). Counted by the URAM288
      geometry; Yosys 0.70 maps both so (bench/resources.py ``--engine``, the -uram rows).
    - LUT: `offchip_mvu`'s unit (products, requantisers, lanes, base) plus the fitted
      `LUT_CONTROL` and `LUT_CONTROL_BEAT` a beat byte, plus the memories' LUTs.
    """
    cycles = None  # not ``timed`` (resources only: the planner times its steps itself), or write-bound
    try:
        if timed:
            cycles = schedule(rows, pe, simd, beat, latency, period, feat_base, burst, queue).cycles
    except ValueError:  # a write-bound step: the recurrence does not time it (the resources stand)
        pass
    wb = pe * simd
    rb = max(wb, beat)
    pw = -(-RECORD_BYTES * pe // wb)
    fs = [_fields(r) for r in _rows(rows, pe, simd, beat)]
    in_rows = max(in_buffer_bytes(f, pe, beat) // beat for f in fs)
    tile_words = max(pw + f["KH"] * f["KW"] * f["C"] // simd for f in fs)
    ibuf = uram_memory(beat * 8, in_rows) if uram else memory(beat * 8, in_rows)
    tile_rows = 2 * -(-tile_words * wb // rb)
    ub = min(URAM_WIDTH * tile_uram, rb * 8)
    tile = uram_memory(ub, tile_rows) + memory(rb * 8 - ub, tile_rows)
    mem = ibuf + tile + memory(beat * 8, queue) + memory(32, len(FIELDS) * len(fs))
    if RECORD_BYTES * pe <= rb:  # the records in one tile row: written whole, a memory of two words
        mem += memory(RECORD_BYTES * pe * 8, 2)
    lut_unit = round(_lut_per_mac(simd) * pe * simd) + (LUT_PER_PE + LUT_REQUANT) * pe + LUT_PER_SIMD * simd
    lut = LUT_BASE_MVU + lut_unit + LUT_CONTROL + LUT_CONTROL_BEAT * beat + mem.lut
    dsp = pe * simd + REQUANT_DSP * pe + DESC_DSP
    if pack:
        d_dsp, d_lut = pack_change(pe, simd)
        dsp, lut = dsp + d_dsp, lut + d_lut
    return EngineCost(cycles=cycles, dsp=dsp, bram18=mem.bram18, lut=lut, uram=mem.uram)
