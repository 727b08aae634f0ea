"""Cost of the layer engine's window unit (`hw/rtl/engine_window.sv`; docs/engine.md, "Window unit").

`cycles` counts a layer from its start pulse to its done pulse by following the unit's four
engines row by row (a max-plus recurrence, one step per output row, no per-cycle stepping) against the memory the twin simulates
(`bbgrap_hls.rtlsim.axi_mem`): a read burst's first beat ``L`` cycles after its address
handshake, a write burst's response ``L`` cycles after its last W beat, one beat every ``P``
cycles on each channel (a channel's next beat never earlier than ``P`` after its last one,
across phases too), address channels always ready. `resources` estimates DSPs, RAMB18s and
LUTs (module doc of the function says which numbers are fitted and which are guesses).
"""

from __future__ import annotations

from dataclasses import dataclass

from bbgrap_hls.codegen.engine_window import DW, WINDOW_FIELDS
from bbgrap_hls.model import blocks
from bbgrap_hls.model.memory import memory

DRAIN = 4
"""Cycles from a pixel's last tap issue to the pixel packed into a beat (c1 row buffer, c2
accumulator, c3 requantiser product, c4 rounding; max pool the same depth)."""


def _rows(f: dict, g: int):
    """Each output row's ``(block, global row of its block's row 0, lo, loads)``: ``loads`` is
    ``(skipped rows, first row, last row)`` of the loader for it (``first > last``: none)."""
    h, kh, sh, pt = f["H"], f["KH"], f["SH"], f["PT"]
    for b in range(f["C"] // g):
        have = 0
        for oy in range(f["HO"]):
            lo = oy * sh - pt
            skip = max(0, min(lo, h) - have)
            have += skip
            rend = min(lo + kh - 1, h - 1)
            yield b, b * h, lo, (skip, have, rend)
            have = max(have, rend + 1)


def group_cycles(kh: int, kw: int, taps: int = 1) -> int:
    """Issue cycles of one window: ``KH·ceil(KW/TAPS)``, a group of up to ``TAPS`` taps of one
    window row a cycle (the row's last group partial when ``TAPS`` does not divide ``KW``)."""
    return kh * -(-kw // taps)


def cycles(desc: list[int], g: int, beat: int, kb: int, latency: int, period: int = 1, taps: int = 1) -> int:
    """Cycles from ``start`` (cycle 0) to ``done`` of the layer with descriptor ``desc``
    (`WINDOW_FIELDS` values), ``g`` channels a block, ``beat`` bytes a beat, memory latency
    ``latency`` (>= 1) and ``period`` (>= 1, integer) cycles a beat; ``kb`` row slots (the
    RTL's ``KB``: the loader runs a row ahead when the next row's rows fit beside the current
    row's); ``taps`` window taps a cycle (the RTL's ``TAPS``, `group_cycles`).

    Row ``n``'s events, in order (the RTL's engines: module doc of `hw/rtl/engine_window.sv`):
    the loader decides at ``y = free + skipped rows``, is allowed at ``z = max(y, e[n-2] + 1)``
    when the rows fit beside row n-1's, else ``max(y, e[n-1] + 1)``, reads its ``k`` beats
    from ``max(z + 1 + L, last read + P)`` on (one a ``P``), and row n's rows are in from the
    cycle after the last; the fetcher (depthwise) reads block k from ``max(free, start of block
    k-1) + 1``; row n issues from ``s[n] = 1 + max(e[n-1] + 1, rows in, weights in, row n-2
    written)`` to ``e[n] = s[n] + WO·KH·ceil(KW/TAPS) − 1``; the writer decides at ``x = max(free,
    e[n] + 5)`` and sends the row's new beats from ``max(x + 1, last W + P)``, one a ``P``
    (a run's beats completed by its rows so far; its last row: all of them, the last one
    zero-filled; a run is the whole map, or with ``OUT_STRIDE`` past ``HO·WO·G`` one block);
    ``done`` is ``L + 1`` after the last W beat. Input block ``b`` is read from ``IN_BASE +
    b·IN_STRIDE``.
    """
    f = dict(zip(WINDOW_FIELDS, desc, strict=True))
    if kb < f["KH"] or latency < 1 or period < 1 or taps < 1:
        raise ValueError(f"window unit model: KB={kb} below KH={f['KH']}, or latency {latency} / period "
                         f"{period} / TAPS {taps} below 1")
    w, c, wo = f["W"], f["C"], f["WO"]
    L, P = latency, period
    never = -(1 << 60)
    rnext = wnext = wrnext = never  # each channel's earliest next beat
    issue = wo * group_cycles(f["KH"], f["KW"], taps)
    nrows = c // g * f["HO"]
    # OUT_STRIDE past the block's bytes: each block's rows a run of their own from a whole beat
    # (its last beat zero-filled); else the map's rows one run
    runs = f["OUT_STRIDE"] != f["HO"] * wo * g
    run_rows = f["HO"] if runs else nrows
    lfree, ffree, wfree = 1, 1, 1  # cycle each engine is next free to decide
    e = [0, 0]  # e[n-2], e[n-1]: last issue cycles (cycle 0: before any row, C_WAIT from 1)
    s_blk: dict[int, int] = {}  # block -> its first row's first issue cycle
    f_in: dict[int, int] = {}  # block -> cycle its weights are in
    written = [1, 1]  # cycle rows n-2, n-1 are written (visible); 1: no such row
    beats = 0
    last_w = 0
    prev = None  # (global row base, lo) of row n-1
    for n, (b, grow, lo, (skip, first, last)) in enumerate(_rows(f, g)):
        # loader
        y = lfree + skip
        if first > last:
            rows_in, lfree = y + 1, y + 1
        else:
            safe = prev is not None and (grow + last) - (prev[0] + max(prev[1], 0)) < kb
            z = max(y, (e[0] if safe else e[1]) + 1) if n else y
            start = f["IN_BASE"] + b * f["IN_STRIDE"] + first * w * g
            end = start + (last - first + 1) * w * g
            k = -(-end // beat) - start // beat
            t0 = max(z + 1 + L, rnext)
            t1 = t0 + (k - 1) * P
            rnext, rows_in, lfree = t1 + P, t1 + 1, t1 + 1
        # fetcher: block b's weights (blocks in order; block b >= 2 after block b-1 started)
        ready = max(e[1] + 1, rows_in, written[0])
        if f["MODE"] == DW:
            if b not in f_in:
                x = max(ffree, s_blk[b - 1] if b >= 2 else 1)
                t0 = max(x + 1 + L, wnext)
                t1 = t0 + (f["W_BEATS"] - 1) * P
                wnext, ffree, f_in[b] = t1 + P, t1 + 1, t1 + 1
            ready = max(ready, f_in[b])
        # compute
        s = ready + 1
        s_blk.setdefault(b, s)
        en = s + issue - 1
        e = [e[1], en]
        prev = (grow, lo)
        # writer
        x = max(wfree, en + DRAIN + 1)
        total = (n % run_rows + 1) * wo * g  # the run's bytes so far
        target = -(-total // beat) if n % run_rows == run_rows - 1 else total // beat
        if target > beats:
            t0 = max(x + 1, wrnext)
            t1 = t0 + (target - beats - 1) * P
            wrnext, wfree, last_w = t1 + P, t1 + 1, t1
            beats = target
        else:
            wfree = x + 1
        if n % run_rows == run_rows - 1:
            beats = 0
        written = [written[1], wfree]
    return last_w + L + 1


def traffic(desc: list[int], g: int, beat: int) -> dict[str, int]:
    """Beats the layer moves: ``read`` (feature), ``write``, ``weights``."""
    f = dict(zip(WINDOW_FIELDS, desc, strict=True))
    h, w, c, ho, wo, kh, sh, pt = (f[k] for k in ("H", "W", "C", "HO", "WO", "KH", "SH", "PT"))
    rd = 0
    for b in range(c // g):
        have, blk = 0, f["IN_BASE"] + b * f["IN_STRIDE"]
        for oy in range(ho):
            lo = oy * sh - pt
            have = max(have, min(lo, h))
            rend = min(lo + kh - 1, h - 1)
            if have <= rend:
                start, end = blk + have * w * g, blk + (rend + 1) * w * g
                rd += -(-end // beat) - start // beat
                have = rend + 1
    runs = f["OUT_STRIDE"] != ho * wo * g  # a run a block (`cycles`)
    write = c // g * -(-ho * wo * g // beat) if runs else -(-ho * wo * c // beat)
    return {"read": rd, "write": write, "weights": c // g * f["W_BEATS"]}


DESC_DSP = 9
"""DSP48E2s of the descriptor's sizes: the 32-bit ``H·W``, ``C/G·HO`` and the loader's rows ×
``W``, three DSPs each (Yosys 0.70 at G 4 and 8, bench/resources.py ``--engine``)."""

LUT_LANE = 200
"""LUTs a lane besides its requantiser: the accumulator's add, max compare and start value,
and the pixel's pad select. Fitted to Yosys 0.70 (G 8 less G 4 at WMAX 16: 676 a lane with
rq_lane's 476); it was `blocks.LUT_VVU_LANE` (75)."""

LUT_CONTROL = 4400
"""LUTs of the loader, fetcher, compute and writer engines (32-bit row and address
arithmetic, three AXI channels). Fitted to Yosys 0.70: 4,314 at G 4 / 8, WMAX 16 and 4,490
at G 8, WMAX 64 besides lanes and memories; it was a guess of 4,900 (`LUT_BASE_SIMPLE`,
three `LUT_AXI_READ`, `LUT_FRAME_ADDR`)."""


@dataclass(frozen=True)
class WindowResources:
    dsp: int
    bram18: int
    lut: int


def banks(g: int, data_w: int, taps: int = 1) -> int:
    """Banks of the row buffer and of the weight memory: ``NB = max(PPB, TAPS rounded up to
    a power of two)``, so that a beat writes ``PPB`` and a tap group reads ``TAPS`` distinct
    banks (the RTL's ``NB``)."""
    return max(data_w // (8 * g), 1 << (taps - 1).bit_length())


def resources(g: int, data_w: int, wmax: int, womax: int, kb: int, kmax: int, taps: int = 1) -> WindowResources:
    """DSPs, RAMB18s and LUTs of `engine_window` with these parameters (``taps``: its ``TAPS``).

    Counted from the RTL: ``G`` requantiser lanes of `blocks.REQUANT_DSP` DSPs (rq_lane.sv) and
    ``TAPS·G`` 8 x 8 depthwise products (one DSP48E2 each: a guess, Vivado may build them in
    LUTs); the row buffer (``NB`` banks of ``8G`` x ``KB·ceil(WMAX/NB)`` bits, `banks`), the
    weight memory (``NB`` banks holding two blocks' words, and a group's reads past the last
    tap) and the output beat buffer (two rows' beats and a carry) through `memory` (the
    project's fitted RAM mapping). The records (two blocks' ``G`` x 64 bits) are registers, not
    counted.
    DSPs besides: `DESC_DSP` for the descriptor's sizes.
    LUTs: `blocks.LUT_REQUANT` and `LUT_LANE` a lane and `LUT_CONTROL`, fitted to Yosys; each
    tap of a group past the first adds a lane's add or compare (``LUT_VVU_LANE``) and its
    pixel and weight selects (``2·8G`` bits of an ``NB``-way multiplexer, ``LUT_MERGE_BIT`` a
    bit and select bit: a guess, not synthesised).
    """
    ppb = data_w // (8 * g)
    nb = banks(g, data_w, taps)
    rw = -(-wmax // nb)
    wbmax = -(-(8 + kmax) * g * 8 // data_w)  # a block's weight beats
    wd = -(-max(wbmax * ppb, 8 + kmax + taps - 1) // nb)  # a block's words a bank
    ofd = 2 * -(-womax // ppb) + 2  # two rows' output beats and a carry
    mems = [memory(8 * g, kb * rw)] * nb + [memory(8 * g, 2 * wd)] * nb + [memory(data_w, ofd)]
    bram = sum(m.bram18 for m in mems)
    sel = 2 * 8 * g * blocks.LUT_MERGE_BIT * max(1, (nb - 1).bit_length())
    lut = (sum(m.lut for m in mems) + g * (blocks.LUT_REQUANT + LUT_LANE)
           + (taps - 1) * (g * blocks.LUT_VVU_LANE + sel)
           + LUT_CONTROL)
    return WindowResources(dsp=g * (blocks.REQUANT_DSP + taps) + DESC_DSP, bram18=bram, lut=lut)
