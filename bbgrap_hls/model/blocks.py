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
from dataclasses import dataclass, replace

from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.memory import (
    LUT_ROM_DEPTH,
    MemCost,
    block_memory,
    lut_rom,
    lutram,
    memory,
    rom,
    uram_memory,
    uram_weights,
)
from bbgrap_hls.model.timing import RTL_DEPTH, WindowRows, window_rows, window_schedule

# LUT constants (per block, per lane); see docs/cost-model.md, "LUT".
LUT_BASE_MVU = 60       # control, counters, AXI-Stream handshakes of a matrix-vector unit (Yosys: whole
                        # cores at pe = simd = 1, ~140 LUTs besides the requantiser and products, ROMs included)
LUT_PER_MAC = 20        # adder-tree share of one int8 product lane, up to 4 input lanes
LUT_PER_MAC_WIDE = 4    # more per product and doubling of the input lanes from 4 to 16, flat beyond (Yosys: the
                        # unit without requantisers, control, lanes and memories per product: 21, 25, 24, 29, 28
                        # at 4, 8, 16, 32, 64 lanes; 31 for the 8 x 8 conv)
LUT_PER_PE = 40         # requantisation rounding, clamp and output register per output lane
LUT_PER_SIMD = 10       # input lane routing
LUT_BASE_SIMPLE = 100   # control of a block without weights
LUT_PER_LANE = 30       # datapath of one lane of an elementwise / window block
LUT_REQUANT = 560       # one requantiser lane: 64-bit rounding shifter, zero point, clamp (Yosys)
LUT_WINDOW = 120        # sliding-window generator (swg.sv): counters, ring addressing (Yosys: 115-127 at one lane)
LUT_WINDOW_LANE = 7     # per input lane: the padding multiplexer into the row memory (Yosys: 132-606 at 2-64 lanes)
LUT_WINDOW_PORT = 15    # per read port past the first (parallel window): its address (Yosys: 14-31)
LUT_VVU = 15            # vector unit (vvu.sv: dwconv, pools) control, besides the window generator
LUT_VVU_LANE = 75       # per vvu channel lane: the 32-bit accumulate or compare and its forwarding multiplexer
                        # (Yosys, max mode: 92, 327, 1264, 5036 LUTs at 1, 4, 16, 64 lanes)
LUT_ELTWISE = 460       # one add / mul lane: 64-bit sum, constant rounding, clamp (Yosys, 31-bit multipliers)
BIAS_BITS = 32          # per output channel: int32 bias'
RQ_BITS = 64            # per output channel: {m 32, s 8, zp 8, lo 8, hi 8}
REQUANT_DSP = 4         # DSP48E2 per requantised lane: 32×32-bit acc·M (Yosys, bench/resources.py)
ELTWISE_DSP = 4         # DSP48E2 per lane of add: two 9 × 31-bit products of 2 each (Yosys, multipliers in
                        # [2^30, 2^31) as the quantiser makes them); mul needs 3 and is charged 4
DEPTH_SIMPLE = 2        # blocks without an RTL module yet (shuffle, pad): register in, out
LUT_MERGE_BIT = 1       # pixel copies: per output bit and copy, the merge's multiplexer share
AFFINE_DSP = 2          # DSP48E2 per channel-affine lane: the 9 × 32-bit product (Yosys)
LUT_AFFINE = 385        # one channel-affine lane: 41-bit rounding shift, zero point, clamp (Yosys)
LUT_AXI_READ = 1500     # an AXI4 read master with its burst FIFO control (as a buffer endpoint)
LUT_FRAME_ADDR = 300    # off-chip weights: frame-buffer address generation (window taps, padding)
LUT_MUL = 109           # LUT multipliers: one int8 × int8 product in LUTs (lut_mul.sv: radix-4
                        # Booth, 109 LUT6 + 10 CARRY4 in Yosys), instead of a DSP48E2
LUT_RQ_MUL = 2005       # LUT requantiser (rq_lane.sv RQ_LUT = 1): the 32 x 32-bit acc·M product in LUTs
                        # (lut_mulw.sv, radix-4 Booth), instead of REQUANT_DSP DSP48E2s (Yosys: the lane
                        # 2,567 LUTs against 562 with its DSPs)
LUT_ELTWISE_MUL = 1440  # LUT add / mul lane (eltwise.sv RQ_LUT = 1): its constant products in LUTs, instead of
                        # ELTWISE_DSP DSP48E2s (Yosys, 31-bit constants: add 1,451, mul 1,420 per lane more)
LUT_PACK = 2            # DSP packing: per packed lane pair and input lane, the operand's 9-bit
                        # pre-subtract and the correction's carry into the adder tree (Yosys)


@dataclass(frozen=True)
class BlockCost:
    """Cost of one block at one folding.

    Attributes:
        ii: cycles per frame.
        depth: pipeline depth in cycles (the block's last internal step to its output beat).
        fill: fraction of the input frame the block must receive before its first output.
        first: compute cycles before its first output beat once the data is there.
        tail: cycles of work left after its last input beat (input at full rate).
        lead: cycle of the last internal step before the first output beat, input offered
            every cycle from cycle 0 (`bbgrap_hls.model.timing`).
        span: cycle of the last internal step of the frame, same conditions: the last
            output beat leaves at ``span + depth``.
        window: a window block's row-level schedule (`WindowRows`): its output rows when
            its input rows arrive at any times (the design latency, `search.build`).
        dsp, bram18, uram, lut: resources.
        weights: where the weight memory lives: ``"bram"``, ``"uram"``, ``"lut"`` (LUTRAM,
            under 1,024 bits per bank), ``"ddr"`` (a board memory: `offchip_mvu`) or None
            for a block without weights.
        offchip_bytes: bytes the block reads from its core's board memory per frame.
        lut_macs: the block's products are in LUTs (``lut_mul.sv``), not DSP48E2s.
        lut_requant: the block's requantisers' products are in LUTs (``rq_lane.sv`` ``RQ_LUT = 1``,
            ``eltwise.sv`` ``RQ_LUT = 1``), not DSP48E2s (`lut_requantised`).
    """

    ii: int
    depth: int = DEPTH_SIMPLE
    fill: float = 0.0
    first: int = 0
    tail: int = 0
    lead: int = 0
    span: int = 0
    window: WindowRows | None = None
    dsp: int = 0
    bram18: int = 0
    uram: int = 0
    lut: int = 0
    weights: str | None = None
    offchip_bytes: int = 0
    lut_macs: bool = False
    lut_requant: bool = False


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _lut_per_mac(simd: int) -> float:
    """Adder-tree LUTs per product of a matrix-vector unit with ``simd`` input lanes:
    ``LUT_PER_MAC + LUT_PER_MAC_WIDE·clamp(log2(simd/4), 0, 2)``: 20 up to 4 lanes, 24 at 8,
    28 from 16 on (Yosys: 21, 25 and 31, 24, 29, 28 at 4, 8, 16, 32, 64; docs/benchmarks.md)."""
    return LUT_PER_MAC + LUT_PER_MAC_WIDE * min(2.0, max(0.0, math.log2(simd / 4)))


def _window_lut(lanes: int, j: int = 1) -> int:
    """LUTs of the window generator (``swg``) streaming ``lanes`` input lanes and read through
    ``j`` ports (memories apart): ``LUT_WINDOW + LUT_WINDOW_LANE·lanes + LUT_WINDOW_PORT·(j − 1)``.
    Fitted to ``swg`` alone in Yosys (docs/benchmarks.md, "resources"): 115-127 at 1 lane,
    132, 158, 170, 234, 354, 578-606 at 2, 4, 8, 16, 32, 64; 249 at 3 lanes × 9 ports."""
    return LUT_WINDOW + LUT_WINDOW_LANE * lanes + LUT_WINDOW_PORT * (j - 1)


def _accumulators(p: int, c: int) -> MemCost:
    """The vector unit's accumulator memory: ``C/p`` words of ``32·p`` bits (LUTRAM; registers
    for one word)."""
    return memory(32 * p, c // p)


def _line_buffer(g: Geometry, lanes: int, j: int = 1) -> MemCost:
    """Line buffer of a window block whose input streams at ``lanes`` lanes.

    The RTL window generator (``swg``) keeps a ring of `window_rows` padded rows, one
    memory of ``lanes·8``-bit words; with a parallel window (``j`` window positions read per
    cycle) it reads that memory through ``j`` read ports, which the tools build as ``j``
    copies (one read port each, the write port shared).
    """
    if g.pointwise:
        return MemCost()
    return memory(lanes * 8, window_rows(g) * g.wp * (g.c // lanes)).times(j)


def _weights(banks: int, bank_bits: int, depth: int, uram: bool, lutw: bool = False) -> tuple[MemCost, str]:
    """Weight memory of ``banks`` banks read at the same address every cycle.

    The banks share the address, so they sit side by side in one ``banks·bank_bits`` wide
    memory (as the RTL declares it, with ``rom_style = "block"``), in BRAM, LUTRAM (under
    1,024 bits) or URAM (cut into 72-bit columns, or as half-words read through both ports
    where that takes fewer: `uram_weights`). A memory small enough for LUTRAM never goes to URAM.
    ``lutw``: a memory up to `LUT_ROM_DEPTH` words deep is built from LUTs instead (`lut_rom`:
    ``rom_style = "logic"``), placement ``"lut"``; deeper ones ignore it.
    """
    bram = block_memory(banks * bank_bits, depth)  # the RTL asks for block RAM (rom_style)
    if bram.bram18 == 0:
        return bram, "lut"
    if lutw and depth <= LUT_ROM_DEPTH:
        return lut_rom(banks * bank_bits, depth), "lut"
    if uram:
        return uram_weights(banks * bank_bits, depth), "uram"
    return bram, "bram"


def _params(lanes: int, words: int) -> MemCost:
    """Per-channel bias (32 bits) and requantisation word (64 bits) of ``lanes`` lanes."""
    return rom(BIAS_BITS * lanes, words) + rom(RQ_BITS * lanes, words)


def mvu(g: Geometry, pe: int, simd: int, uram: bool = False, mmv: int = 1, pack: bool = False,
        lut: bool = False, lutw: bool = False) -> BlockCost:
    """Conv (sliding window + matrix-vector unit); dense is the 1×1×1 case.

    ``simd`` divides ``C`` or, with a parallel window, is ``C·j`` with ``j | K``: the unit
    consumes ``simd`` elements of the flattened (ky, kx, c) window per cycle and the input
    streams at ``min(simd, C)`` lanes. ``mmv > 1`` (a conv with a window generator,
    ``2 <= mmv <= Co/pe``): that many copies of the unit behind the one window generator,
    output pixel ``p`` on copy ``p mod mmv``, ``sf·nf/mmv`` cycles per pixel; each copy
    collects its pixel and a merge streams one whole pixel (``Co`` lanes) per beat
    (docs/cost-model.md, "Pixel copies"). ``pack`` (``pe >= 2``): output lanes ``2i`` and
    ``2i+1`` share one DSP48E2 per input lane (``mac2.sv``; docs/cost-model.md, "DSP"),
    ``ceil(pe/2)·simd`` multipliers instead of ``pe·simd``, same cycles. ``lut``: every
    product in LUTs (``lut_mul.sv``, `LUT_MUL` each), no DSP but the requantisers', same cycles.
    ``lutw``: the weight memory in LUTs (`_weights`).
    """
    if pack and lut:
        raise ValueError("a block's products are packed in DSPs or in LUTs, not both")
    if pack and pe < 2:
        raise ValueError(f"DSP packing pairs output lanes: pe={pe} cannot pack")
    pairs = pe // 2 if pack else 0
    # A dense layer on a flattened image (ho·wo < h·w) is one vector of h·w·c per output
    # pixel: the mvu stores all of it (MW = h·w·c), not h·w vectors of c.
    vectors = g.ho * g.wo if g.pointwise and g.ho * g.wo < g.h * g.w else g.h * g.w
    sf, nf = g.k * (g.in_elems // vectors if g.pointwise else g.c) // simd, g.co // pe
    folds = sf * nf
    if mmv > 1 and (g.pointwise or mmv > nf):
        raise ValueError(f"pixel copies need a window generator and 2 <= mmv <= Co/pe = {nf} (mmv={mmv})")
    lanes = min(simd, g.c)
    rows = None
    wmem, where = _weights(pe, simd * 8, folds, uram, lutw)
    mem = wmem + _params(pe, nf)
    if nf > 1:
        mem = mem + memory(simd * 8, sf)  # the input vector, reused by folds 1..nf-1
    mem = mem.times(mmv)  # every copy its own weights, constants and input vector
    if g.pointwise:
        pix = vectors
        ii = pix * folds
        lead, span, tail = sf - 1, ii - 1, (nf - 1) * sf
        depth, fill, first = RTL_DEPTH["mvu"], 1.0 / pix, sf
    else:
        mem = mem + _line_buffer(g, lanes, simd // lanes)
        if mmv > 1:  # the first whole pixel: all folds of copy 0
            ws = window_schedule(g, lanes, folds, folds, copies=mmv)
            depth = RTL_DEPTH["mvu"] + RTL_DEPTH["swg"] + RTL_DEPTH["copies"]
        else:
            ws = window_schedule(g, lanes, folds, sf)
            depth = RTL_DEPTH["mvu"] + RTL_DEPTH["swg"]
        ii = max(ws.write, ws.read)
        lead, span = ws.lead, ws.span
        rows = ws.by_row
        if mmv > 1:
            # Window w is read from (w div M)·folds + (w mod M)·sf after the first: the frame's
            # last pixel (and a row's) leaves after its copy's folds, past the mean read time.
            def last(n: int) -> int:
                return ((n - 1) // mmv) * folds + ((n - 1) % mmv) * sf + folds - 1

            span = max(span, lead - folds + 1 + last(g.ho * g.wo))
            rows = replace(rows, drain=max(0, last(g.wo) + 1 - rows.row_read))
        tail = max(0, span - ws.last_in)
        fill, first = ws.fill, sf
    lut_unit = round(_lut_per_mac(simd) * pe * simd) + (LUT_PER_PE + LUT_REQUANT) * pe + LUT_PER_SIMD * simd \
        + LUT_PACK * pairs * simd + (LUT_MUL * pe * simd if lut else 0)
    mults = 0 if lut else (pe - pairs) * simd
    # each further copy its control; with copies, every copy's collector and merge input
    lut_copies = 0 if mmv == 1 else LUT_BASE_MVU * (mmv - 1) + LUT_MERGE_BIT * 8 * g.co * mmv
    return BlockCost(
        ii=ii, depth=depth, fill=fill, first=first, tail=tail, lead=lead, span=span, window=rows,
        dsp=mmv * (mults + REQUANT_DSP * pe), bram18=mem.bram18, uram=mem.uram,
        lut=LUT_BASE_MVU + mmv * lut_unit + lut_copies + (0 if g.pointwise else _window_lut(lanes, simd // lanes))
        + mem.lut,
        weights=where, lut_macs=lut,
    )


def _window_unit(g: Geometry, p: int, simd: int, extra: MemCost) -> tuple[BlockCost, MemCost]:
    """Timing of swg -> vvu at ``p`` input lanes, ``simd = p·j`` lanes into the vector unit."""
    j = simd // p
    reads = g.k * (g.c // p) // j
    ws = window_schedule(g, p, reads, (g.k // j - 1) * (g.c // p) + 1)
    mem = extra + _line_buffer(g, p, j) + _accumulators(p, g.c)
    cost = BlockCost(ii=max(ws.write, ws.read), depth=RTL_DEPTH["vvu"] + RTL_DEPTH["swg"],
                     fill=ws.fill, first=reads, tail=max(0, ws.span - ws.last_in), lead=ws.lead,
                     span=ws.span, window=ws.by_row)
    return cost, mem


def dwconv(g: Geometry, pe: int, simd: int, uram: bool = False, lutw: bool = False,
           lut: bool = False) -> BlockCost:
    """Depthwise conv: ``p = pe`` channels at a time, one multiplier per lane.

    ``simd == pe`` normally; with a parallel window ``simd = p·j`` (``j | K``): ``j`` window
    positions of the ``p`` channels per cycle, ``simd`` multipliers, input at ``p`` lanes.
    ``lut``: every product in LUTs (the vvu's ``PACK = 0``, ``lut_mul.sv``), `LUT_MUL` each,
    no DSP but the requantisers', same cycles.
    """
    p = pe
    wmem, where = _weights(simd, 8, g.k * g.c // simd, uram, lutw)
    c, mem = _window_unit(g, p, simd, wmem + _params(p, g.c // p))
    return replace(c, dsp=(0 if lut else simd) + REQUANT_DSP * p, bram18=mem.bram18, uram=mem.uram,
                   lut=LUT_VVU + _window_lut(p, simd // p) + LUT_VVU_LANE * p + LUT_PER_LANE * (simd - p)
                   + (LUT_PER_PE + LUT_REQUANT) * p + (LUT_MUL * simd if lut else 0) + mem.lut,
                   weights=where, lut_macs=lut)


def pool(g: Geometry, pe: int, simd: int, requant: bool) -> BlockCost:
    """Max / average pool over a window (average requantises every lane)."""
    p = pe
    c, mem = _window_unit(g, p, p, _params(p, g.c // p) if requant else MemCost())
    return replace(c, dsp=REQUANT_DSP * p if requant else 0, bram18=mem.bram18,
                   lut=LUT_VVU + _window_lut(p) + (LUT_VVU_LANE + (LUT_REQUANT if requant else 0)) * p
                   + mem.lut)


def gap(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Global average pool: int32 accumulators per channel, requantise at the end."""
    p = pe
    cg = g.c // p
    ii = g.h * g.w * cg
    mem = memory(32 * p, cg) + _params(p, cg)
    return BlockCost(ii=ii, depth=RTL_DEPTH["vvu"], fill=1.0, tail=0, lead=ii - cg, span=ii - 1,
                     dsp=REQUANT_DSP * p, bram18=mem.bram18,
                     lut=LUT_BASE_SIMPLE + (2 * LUT_PER_LANE + LUT_REQUANT) * p + mem.lut)


def _stream(ii: int, depth: int, **kw) -> BlockCost:
    """A block that moves one beat per cycle: its last output leaves ``depth`` after its
    last input."""
    return BlockCost(ii=ii, depth=depth, span=max(0, ii - 1), **kw)


def eltwise2(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Add / Mul of two streams: the products of one lane (both operands rescaled: two
    multipliers for Add; ``(a−za)·(b−zb)`` then the multiplier for Mul) and one rounding."""
    p = pe
    return _stream(g.ho * g.wo * g.co // p, RTL_DEPTH["eltwise2"], dsp=ELTWISE_DSP * p,
                   lut=LUT_BASE_SIMPLE + LUT_ELTWISE * p)


def affine(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Per-channel affine ``y = x·a_c + b_c`` requantised: per lane one ``(x − zp)·mult``
    product (9 × 32 bits: two 27 × 18 DSP tiles) and a rounding shifter, no second
    multiplier (`hw/rtl/channel_affine.sv`; Yosys: 4 DSP, 1,141 LUT at p = 2)."""
    p = pe
    mem = rom(8 * p, g.c // p) + _params(p, g.c // p)
    return _stream(g.h * g.w * g.c // p, RTL_DEPTH["affine"], dsp=AFFINE_DSP * p,
                   bram18=mem.bram18, lut=LUT_BASE_SIMPLE + (LUT_PER_LANE + LUT_AFFINE) * p + mem.lut)


def lut_act(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Lookup-table activation: one 256 × 8 table read by every lane (a read port per lane,
    each a 256-word ROM in LUTs: shallower than `ROM_BRAM_DEPTH`)."""
    p = pe
    mem = rom(8, 256).times(p)
    return _stream(g.h * g.w * g.c // p, RTL_DEPTH["lut"], bram18=mem.bram18,
                   lut=LUT_BASE_SIMPLE // 4 + 10 * p + mem.lut)


def concat(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Channel concat: per pixel, each input's channels in turn."""
    p = pe
    n = max(1, len(g.in_channels))
    return _stream(g.h * g.w * sum(g.in_channels or (g.c,)) // p, RTL_DEPTH["concat"],
                   lut=LUT_BASE_SIMPLE // 2 + 10 * p * n)


def shuffle(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Channel permutation inside a pixel (``channel_shuffle.sv``): two pixel banks, one
    written while the other is read out, the reader starting a pixel the cycle after its
    last input beat (``C/p`` reads), then the output register.

    The banks are registers (``2·C`` bytes of flip-flops, not counted): the permutation is a
    constant, so each output bit is a ``2·C/p``-input multiplexer (``ceil(C/(2p))`` LUT6)
    and no crossbar; ``2·C`` LUTs of write enables and control (Yosys: 107, 213, 405, 1464
    LUTs for C/p = 12/12, 32/8, 64/16, 256/16 against 120, 192, 384, 1536).
    """
    p = pe
    n = g.c // p
    ii = g.h * g.w * g.c // p
    return BlockCost(ii=ii, depth=RTL_DEPTH["shuffle"], fill=1.0 / (g.h * g.w), tail=n, lead=n,
                     span=ii - 1 + n, lut=8 * p * _ceil(n, 2) + 2 * g.c)


def pad(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Zero-point padding inserted into the stream: one beat per output beat."""
    p = pe
    return _stream(g.ho * g.wo * g.co // p, DEPTH_SIMPLE, lut=LUT_BASE_SIMPLE // 2 + 10 * p)


def wire(g: Geometry, pe: int, simd: int) -> BlockCost:
    """A reinterpretation of the stream (Flatten, Reshape to a vector): no hardware."""
    return BlockCost(ii=0, depth=0)


URAM_CAPABLE = ("conv", "dense", "dwconv")
"""Block kinds whose weight memory may live in URAM (``uram=True``)."""

PACK_CAPABLE = ("conv", "dense")
"""Block kinds whose multipliers may pack two output lanes per DSP48E2 (``pack=True``, ``pe >= 2``)."""

LUT_CAPABLE = ("conv", "dense", "dwconv")
"""Block kinds whose products may be built from LUTs (``lut=True``: ``lut_mul.sv``; the matrix-vector
unit's and the depthwise vector unit's ``PACK = 0``)."""

LUT_REQUANT_CAPABLE = ("conv", "dense", "dwconv", "avgpool", "gap", "eltwise2")
"""Block kinds whose requantisers may build their products from LUTs (`lut_requantised`). The
other kinds with DSPs (affine, lrn, bilinear, an off-chip conv/dense) have no LUT-only variant."""


def lut_requantised(kind: str, cost: BlockCost, pe: int, mmv: int = 1) -> BlockCost:
    """``cost`` with its requantisers' products in LUTs (``rq_lane.sv``/``eltwise.sv``
    ``RQ_LUT = 1``, ``lut_mulw.sv``): same cycles and memories, `REQUANT_DSP` DSPs fewer and
    `LUT_RQ_MUL` LUTs more per requantised lane (``pe`` lanes in each of ``mmv`` copies); an
    add/mul lane `ELTWISE_DSP` fewer and `LUT_ELTWISE_MUL` more. A conv/dense/dwconv with
    DSP products keeps them (the planner offers this on its LUT-product rows only)."""
    if kind not in LUT_REQUANT_CAPABLE:
        raise ValueError(f"block kind '{kind}' has no LUT requantiser")
    if kind == "eltwise2":
        dsp, lut = ELTWISE_DSP * pe, LUT_ELTWISE_MUL * pe
    else:
        dsp, lut = REQUANT_DSP * pe * mmv, LUT_RQ_MUL * pe * mmv
    return replace(cost, dsp=cost.dsp - dsp, lut=cost.lut + lut, lut_requant=True)


OFFCHIP_CAPABLE = ("conv", "dense")
"""Block kinds whose weights may live in a board memory (``ddr=True``, `offchip_mvu`)."""

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


OFFCHIP_DEPTH = 6
"""conv_offchip.sv: a result is written to the output frame buffer 5 cycles after its last
read (read, product, accumulate, requantise 2) and leaves through a registered read (1)."""

OFFCHIP_BEAT_BYTES = 64
"""Default AXI data width of the weight reader, in bytes (a 512-bit port, `Memory.port_width_bits`)."""


def _offchip_last_read(nf: int, cf: int, in_beats: int, tile_beats: float, period: float,
                       latency: int) -> float:
    """Cycle of frame 0's last fold's last read in ``hw/rtl/conv_offchip.sv`` (first input
    beat at cycle 0, input every cycle, tiles 0 and 1 loaded while the block idled).

    Fold ``t`` reads from ``S_t`` to ``E_t = S_t + cf − 1``; ``S_0 = in_beats`` (the whole
    frame stored), ``S_t = max(E_{t−1} + 1, D_t + 1)``; tile ``t ≥ 2`` is requested the cycle
    after fold ``t − 2``'s last read, its first beat ``latency`` cycles after the request and
    then one beat per ``period`` cycles, after the previous tile's beats:
    ``D_t = max(E_{t−2} + 1 + latency, D_{t−1} + period) + (tile_beats − 1)·period``.
    """
    ends: list[float] = []
    d_prev = float("-inf")
    for t in range(nf):
        d = float("-inf") if t < 2 else \
            max(ends[t - 2] + 1 + latency, d_prev + period) + (tile_beats - 1) * period
        s = in_beats if t == 0 else max(ends[t - 1] + 1, d + 1)
        ends.append(s + cf - 1)
        d_prev = d
    return ends[-1]


def offchip_mvu(g: Geometry, pe: int, simd: int, uram: bool = False, rate: float | None = None,
                latency: int = 0, beat_bytes: int = OFFCHIP_BEAT_BYTES) -> BlockCost:
    """Conv / dense whose weights live in a board memory, read once per frame.

    Weights reloading (docs/cost-model.md, "Off-chip weights"; ``hw/rtl/conv_offchip.sv``):
    the block stores its whole input frame, then computes the output ``pe`` channels at a
    time (fold ``n`` of ``nf``) over every output pixel, ``cf = Ho·Wo·sf`` reads, while an
    AXI4 read master fetches the next fold's weights (a tile of ``pe·K·C`` bytes,
    ``tile_beats`` beats of ``beat_bytes``) into the other half of a double-buffered tile
    memory; each weight is read from off chip exactly once per frame. The outputs of a
    frame collect in an output frame buffer and stream out pixel by pixel (``pe`` lanes)
    once the last fold is done. Input, compute and output each have two frame slots.

    The memory delivers a tile's first beat ``latency`` cycles after its request and then
    one beat every ``period = beat_bytes / rate`` cycles (``rate`` bytes per cycle; None:
    one beat per cycle). Per fold the schedule repeats every
    ``T = max(cf, tile_beats·period, (latency + (tile_beats − 1)·period + cf + 1) / 2)``
    cycles (compute; memory bandwidth; a tile half's round trip: requested the cycle after
    its last read, loaded, computed), so

        ii = ceil(max(H·W·C/lanes, Ho·Wo·Co/pe, nf·T, (Ho·Wo·Co/pe + 4 + nf·T) / 2))

    (the last term: an output slot is reused two frames later, from the cycle of its last
    read; it binds only when ``sf = 1``, where the output is as long as the compute).

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
    frames = frame_mem(lanes * 8, 2 * in_beats).times(j) + frame_mem(pe * 8, 2 * out_beats)
    tiles = memory(pe * simd * 8, 2 * sf)  # one fold's weights, double-buffered
    mem = frames + tiles + _params(pe, nf)
    per_fold = max(cf, tile_beats * period, (latency + (tile_beats - 1) * period + cf + 1) / 2)
    # an output slot is written again from the frame after next: its last read (a frame's
    # results, then depth − 1, then out_beats reads) to that frame's last read
    slot = (out_beats + OFFCHIP_DEPTH - 2 + nf * per_fold) / 2
    ii = math.ceil(max(in_beats, out_beats, nf * per_fold, slot) - 1e-9)
    last = math.ceil(_offchip_last_read(nf, cf, in_beats, tile_beats, period, latency) - 1e-9)
    lead = last + 1  # the output frame buffer's first read: its first beat leaves at lead + depth
    span = last + out_beats
    lut_unit = round(_lut_per_mac(simd) * pe * simd) + (LUT_PER_PE + LUT_REQUANT) * pe + LUT_PER_SIMD * simd
    return BlockCost(
        ii=ii, depth=OFFCHIP_DEPTH, fill=1.0, first=sf, tail=span - (in_beats - 1), lead=lead,
        span=span, window=None, dsp=pe * simd + REQUANT_DSP * pe, bram18=mem.bram18, uram=mem.uram,
        lut=LUT_BASE_MVU + lut_unit + LUT_AXI_READ + LUT_FRAME_ADDR + mem.lut, weights="ddr",
        offchip_bytes=sf * simd * nf * pe,  # the whole weight memory (a grouped conv's is block-diagonal)
    )


# -- Slice (crop), GlobalMaxPool, nearest upsampling (issue 14) -------------------------------
# Self-contained: `bbgrap_hls.model.kinds` maps the op kinds Slice, GlobalMaxPool and Resize
# to these block kinds; modules hw/rtl/slice.sv, gmaxpool.sv, upsample.sv.

def slice_block(g: Geometry, pe: int, simd: int) -> BlockCost:
    """A crop of the stream (``slice.sv``): rows, columns and a channel range kept, the rest
    dropped. The crop is ``g.pads`` (negative: top, left, bottom, right). Every input beat is
    read in one cycle; a kept pixel's ``CO/p`` output beats leave with its last ``CO/p`` input
    beats (output register), whatever the first channel, so the timing does not depend on it.
    Per output bit a multiplexer over the ``CO/p`` beats (a LUT6 per 4 inputs; the pixel's
    earlier channels held in flip-flops, not counted). Yosys: 419 / 306 LUTs (C 256, CO 128 at
    p 16, C0 = 0), 170 / 114 (48, 24 at 4, C0 = 5), 88 / 114 (64, 16 at 8, C0 = 20); fewer where
    the kept channels end the pixel (no multiplexer: 147 / 306 for C0 = 128 above)."""
    p = pe
    n, no = g.c // p, g.co // p
    y0, x0 = -g.pads[0], -g.pads[1]
    in_beats = g.h * g.w * n
    lead = (y0 * g.w + x0) * n + n - no
    span = ((y0 + g.ho - 1) * g.w + x0 + g.wo - 1) * n + n - 1
    return BlockCost(ii=in_beats, depth=RTL_DEPTH["shuffle"], fill=lead / in_beats, tail=span - (in_beats - 1),
                     lead=lead, span=span, lut=LUT_BASE_SIMPLE // 2 + 8 * p * _ceil(no, 4))


def gmaxpool(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Global max pool: the vvu's max mode over ``K = H·W`` (one running maximum per channel
    in its accumulator memory), one pixel out per frame; no requantisation, no DSP."""
    p = pe
    cg = g.c // p
    ii = g.h * g.w * cg
    mem = memory(32 * p, cg)
    return BlockCost(ii=ii, depth=RTL_DEPTH["vvu"], fill=1.0, tail=0, lead=ii - cg, span=ii - 1,
                     bram18=mem.bram18, lut=LUT_BASE_SIMPLE + 2 * LUT_PER_LANE * p + mem.lut)


def upsample(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Nearest upsampling by integer ``Ho/H × Wo/W`` (``upsample.sv``): two row buffers
    (``2·W·C/p`` words of ``8p`` bits) written as input rows come, whenever a buffer is free;
    the reader emits each row's copies one beat per cycle into the output register, chasing
    the row being written. ii = the output beats. The memory is read at a registered address,
    so Yosys maps it as `memory` counts it. Yosys: 2 / 2 RAMB18 and 58 / 58 LUTs (C 64, p 8,
    8 × 8), 4 / 4 RAMB18 and 69 / 66 LUTs (C 128, p 16, 26 × 26)."""
    p = pe
    n = g.c // p
    ii = g.ho * g.wo * n
    mem = memory(8 * p, 2 * g.w * n)
    # fill: a copy row needs its whole input row, so the output lags the input by up to one
    # input row (what a reconvergent path around the block must hold; the first beat needs one)
    return BlockCost(ii=ii, depth=2, fill=1.0 / g.h, tail=(g.wo // g.w - 1) * n, span=ii - 1,  # depth: write, read
                     bram18=mem.bram18, lut=LUT_BASE_SIMPLE // 2 + p + mem.lut)


BLOCKS.update({"slice": slice_block, "gmaxpool": gmaxpool, "upsample": upsample})


# -- ZeroInsert: the upsampling half of a lowered ConvTranspose (issue 14) ---------------------
# `bbgrap_hls.model.kinds` maps the op kind ZeroInsert to this block; module hw/rtl/zeroinsert.sv.

def zeroinsert(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Zero insertion (``zeroinsert.sv``): ``Ho × Wo`` output pixels of ``C/p`` beats, an
    input pixel every ``s_h``-th row and ``s_w``-th column after the ``pads`` (top, left), the
    zero point elsewhere. No memory: the output register takes the input beat where an input
    pixel lands and the constant otherwise, one output beat per cycle, so ii = the output beats
    and the output keeps pace with the input (fill 0); ``tail`` is the padding and inserted
    beats after the last input pixel. Leading padding (``pads`` top/left, ``z`` beats) leaves
    once the frame's first input beat is offered, before that beat is taken: counted from the
    first input beat taken, the last output beat is ``ii − 1 − z`` (+ depth). LUTs: about 30 for
    the counters and one LUT per output bit (the input bit or the zero point's). Yosys: 89 / 94
    (C 64, p 8, 8 × 8, 2 × 2), 162 / 158 (C 128, p 16, 26 × 26, 2 × 2, pads 1), 68 / 62 (C 32,
    p 4, 16 × 16, 4 × 4)."""
    p = pe
    n = g.c // p
    ii = g.ho * g.wo * n
    sh = (g.ho - g.pads[0] - g.pads[2] - 1) // max(1, g.h - 1) if g.h > 1 else 1
    sw = (g.wo - g.pads[1] - g.pads[3] - 1) // max(1, g.w - 1) if g.w > 1 else 1
    last = ((g.pads[0] + (g.h - 1) * sh) * g.wo + g.pads[1] + (g.w - 1) * sw) * n + n - 1  # last input beat out
    lead0 = (g.pads[0] * g.wo + g.pads[1]) * n  # padding beats before the first input pixel
    return BlockCost(ii=ii, depth=1, fill=0.0, tail=ii - 1 - last, lead=0, span=ii - 1 - lead0,
                     lut=30 + 8 * p)


BLOCKS["zeroinsert"] = zeroinsert


def depth2space(g: Geometry, pe: int, simd: int) -> BlockCost:
    """DepthToSpace in DCR mode (``depth2space.sv``), block ``b = Ho/H``: two row buffers of
    ``W·C/p`` words written as input rows come, whenever a buffer is free; the reader emits
    output row ``(y, i)`` as the ``b·Co/p``-beat runs at ``(x·b + i)·b·Co/p`` of every pixel,
    one beat per cycle, chasing the writer. ii = the beats; the first phase row of the first
    input row is paced by the writer (its last beat needs the row's last pixel), the rest of
    the frame then streams: the last output beat leaves ``(b − 1)/b`` of a row plus the later
    rows after it. A reconvergent path holds up to an input row (``fill = 1/H``, as upsample).
    Yosys (measured / model): 2 / 2 RAMB18 and 54 / 58 LUTs (C 64, p 8, 8 × 8, b 2), 4 / 4 and
    61 / 66 (C 128, p 16, 13 × 13, b 2), 1 / 1 and 65 / 52 (C 32, p 2, 16 × 16, b 4)."""
    p = pe
    n = g.c // p
    ii = g.h * g.w * n
    b = max(1, g.ho // g.h)
    nb = n // b
    row = g.w * n
    first = (g.w - 1) * n + nb - 1  # the last beat of the first phase row of row 0
    mem = memory(8 * p, 2 * row)
    return BlockCost(ii=ii, depth=2, fill=1.0 / g.h, tail=row - row // b - (row - 1 - first), span=first + ii - row // b,
                     bram18=mem.bram18, lut=LUT_BASE_SIMPLE // 2 + p + mem.lut)


BLOCKS["depth2space"] = depth2space


# -- bilinear Resize (issue 14): op kind ResizeBilinear declares `cost_block = "bilinear"` ---------

def bilinear(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Bilinear upsampling by integer ``Ho/H × Wo/W`` (``bilinear.sv``, ``bb::bilinear2d``): a
    ring of three input rows (``3·W·C/p`` words of ``8p`` bits); output row ``oy`` starts once its lower
    source row (``y1``) is complete, then one output beat per cycle from four taps
    (rows ``y0, y1`` × columns ``x0, x1``) while the next input row is taken ahead into the
    third buffer. ii = the output beats. The first output row needs input row 0 only (the
    weight of row 1 is 0 there in every accepted coordinate mode): lead = the cycle its last
    beat is written. Later the output lags further: output row 1 already needs input row 1
    complete (half_pixel, align_corners and asymmetric alike), and the lag, input fraction
    taken minus output fraction given, peaks there at ``(2 − 1/s_h)/H``: that is ``fill``,
    what a reconvergent path around the block must hold (so the design latency counts it as
    if the first output waited for it: pessimistic by up to ``(1 − 1/s_h)/H`` of a frame).
    Resources as Yosys maps ``bilinear.sv`` (bench/resources.py's flow): the six products per
    lane (four 9 × 8-bit vertical, two 9 × 19-bit horizontal) become DSP48E2s, and the ring,
    read at four addresses a cycle (two rows × two columns), is distributed RAM (no BRAM):
    about 88 LUTs per lane and 64-word bank. Yosys / model: 48 / 48 DSP, 0 / 0 RAMB18,
    1495 / 1508 LUTs (C 32, p 8, 8 × 8, s 2, half_pixel); 96 / 96, 0 / 0, 2896 / 2916 (C 64,
    p 16, 8 × 8); 25 / 24, 0 / 0, 2671 / 1156 (C 16, p 4, 13 × 13, align_corners: a 52-word
    row and 26-entry tables, LUTs under-counted, not yet modelled). Module test: ii and
    latency exact (bilinear-0..3)."""
    p = pe
    n = g.c // p
    ii = g.ho * g.wo * n
    row = g.w * n
    banks = -(-3 * row // 64)  # 64-word distributed-RAM banks of the ring
    lead = row - 1  # the last beat of input row 0 written; read into the output register after it
    span = lead + ii - 1
    s_h = max(1, g.ho // g.h)
    tail = max(0, span - (g.h * row - 1))  # input at full rate: every input row taken by then (module test)
    return BlockCost(ii=ii, depth=2, fill=min(1.0, (2 - 1 / s_h) / g.h), tail=tail,
                     lead=lead, span=span, dsp=6 * p, lut=LUT_BASE_SIMPLE + 88 * p * banks)


BLOCKS["bilinear"] = bilinear


# -- LRN across channels (issue 14): op kind LRN declares `cost_block = "lrn"` -----------------
LUT_LRN = 30  # control and flags (Yosys fit, below)
LUT_LRN_LANE = 185  # per lane: d² into the 22-bit prefix sum, the window sum's subtraction, its code, rounding, clamp


def lrn(g: Geometry, pe: int, simd: int) -> BlockCost:
    """LRN across channels (``lrn.sv``, ``bb::lrn``): the pixel buffer of ``channel_shuffle`` (two
    banks, one written while the other is read), each bank also holding the prefix sums of
    squares ``P[0..C]`` accumulated as the pixel's beats come in; the reader starts a pixel the
    cycle after its last input beat, one beat per cycle: per lane ``S = P[c+after+1] − P[c−before]``
    and its code (stage 1), then the factor table, ``d·T``, rounding and clamp (stage 2).
    Timing as `shuffle` with depth ``RTL_DEPTH["lrn"]``: ii = ``H·W·C/p``, a pixel's output
    leaves ``C/p`` beats after its input. Per lane two products (``d²``, 9 × 9 bits, and
    ``d·T``, 9 × 16) in DSP48E2s and a copy of the factor table (``ops.lrn.table_len``
    16-bit words, 800-880 for size ≤ 7: one RAMB18 per lane, ``rom_style = "block"``, charged with `rom`);
    the banks are distributed RAM, a row of ``p`` lanes per word (``2·C/p`` words: ``9·p``
    bits of ``d``, read once, and ``22·p`` of prefix sums, read at two row offsets, `lutram`;
    the reads are combinational, so never block RAM). Yosys / model (bench/resources.py):
    937 / 906 LUT (C 8, p 4), 294 / 295 (32, 1), 591 / 536 (64, 2), 1,652 / 1,766 (64, 8),
    3,437 / 3,494 (96, 16); DSP and RAMB18 equal."""
    from bbgrap_hls.ops.lrn import table_len

    p = pe
    n = g.c // p
    ii = g.h * g.w * n
    mem = rom(16, table_len(MAX_LRN_SIZE_COSTED, g.c)).times(p)
    banks = lutram(9 * p, 2 * n) + 2 * lutram(22 * p, 2 * n)
    return BlockCost(ii=ii, depth=RTL_DEPTH["lrn"], fill=1.0 / (g.h * g.w), tail=n, lead=n, span=ii - 1 + n,
                     dsp=2 * p, bram18=mem.bram18,
                     lut=LUT_LRN + LUT_LRN_LANE * p + banks + mem.lut)


MAX_LRN_SIZE_COSTED = 7  # the table length charged (the geometry has no size; AlexNet and GoogLeNet use 5)
BLOCKS["lrn"] = lrn
