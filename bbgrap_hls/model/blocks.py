"""Analytic cost of every hardware block kind (docs/cost-model.md has the formulas).

A block's cost depends on its geometry and its folding (``pe`` output lanes, ``simd``
input elements per cycle). Each kind is one small function ``(g, pe, simd) -> BlockCost``;
`BLOCKS` maps the block kind to it, and `bbgrap_hls.model.kinds` maps op kinds to block
kinds. Blocks with weight memories (`URAM_CAPABLE`) also take ``uram=True``: the weights
then live in URAM288 instead of BRAM (the planner decides per node).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.links import trim_converter_lut
from bbgrap_hls.model.memory import (
    LUT_ROM_DEPTH,
    MemCost,
    block_memory,
    lut_rom,
    memory,
    rom,
    uram_weights,
)
from bbgrap_hls.model.rings import (
    _line_buffer,
    _ring_select_lut,
    _window_lut,
    ring_uram_fits,
)
from bbgrap_hls.model.timing import RTL_DEPTH, WindowRows, window_schedule

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
LUT_REQUANT = 144       # one requantiser lane: the two DSP products' sum, rounding shifter, zero point, clamp
                        # (Yosys: rq_lane 24 + rq_round 120; 475 when rq_round shifted and clamped all 64 bits)
LUT_REQUANT_UNIFORM = 78  # one requantiser lane whose multiplier and shift are module constants (vvu.sv
                        # UNIFORM: average and global pools): the shifter folds away (Yosys: gap 66 and 65,
                        # average pool 53 LUTs a lane under LUT_REQUANT)
LUT_VVU = 15            # vector unit (vvu.sv: dwconv, pools) control, besides the window generator
LUT_VVU_LANE = 75       # per vvu channel lane: the 32-bit accumulate or compare and its forwarding multiplexer
                        # (Yosys, max mode: 92, 327, 1264, 5036 LUTs at 1, 4, 16, 64 lanes)
LUT_POOL_TAP = 12       # per pool lane and window tap past the first (parallel window): the byte compare or
                        # add into the tap tree (Yosys: max 3x3 J=3 +154 over J=1 at 4 lanes with 2 ports)
LUT_ELTWISE = 90        # one add / mul lane: the products' sum, rounding shifter, zero point, clamp (Yosys:
                        # 107 add, 73 mul; 438 and 404 when rq_round shifted and clamped all 64 bits)
BIAS_BITS = 32          # per output channel: int32 bias'
RQ_BITS = 32            # per output channel: {m 24, s 8} (the zero point and clamp are the layer's: parameters)
REQUANT_DSP = 2         # DSP48E2 per requantised lane: the 32 × 25-bit acc·M as two 25 × 18-bit products (rq_lane.sv)
ELTWISE_DSP = 2         # DSP48E2 per add / mul lane: add two 9 × 25-bit products, mul 9 × 9 then 18 × 25
                        # (the quantiser's multipliers are below 2^24: quant/arith.py MULT_BITS), one each
DEPTH_SIMPLE = 2        # blocks without an RTL module yet (shuffle, pad): register in, out
LUT_MERGE_BIT = 1       # pixel copies: per output bit and copy, the merge's multiplexer share
LUT_JOIN = 2            # paired output (conv.sv PO = 2): the join's valid and ready of the two halves
AFFINE_DSP = 1          # DSP48E2 per channel-affine lane: the 9 × 25-bit product (Yosys)
LUT_AFFINE = 90         # one channel-affine lane: rounding shift, zero point, clamp (Yosys; 385 when rq_round
                        # shifted and clamped all 64 bits)
LUT_OFFCHIP_CONTROL = 320  # off-chip weights (conv_offchip.sv): the AXI4 read master, tile and
                        # frame-buffer addressing (window taps, padding) beyond the matrix-vector
                        # unit's terms; fitted to Yosys 0.70 on four configurations (bench/resources.py
                        # --offchip: 0.99-1.01), replacing a guess of 1,800 (LUT_AXI_READ 1,500 and
                        # LUT_FRAME_ADDR 300: Yosys/model 0.70-0.86; Yosys maps axi_read in 78-86 LUTs)
LUT_MUL = 109           # LUT multipliers: one int8 × int8 product in LUTs (lut_mul.sv: radix-4
                        # Booth, 109 LUT6 + 10 CARRY4 in Yosys), instead of a DSP48E2
LUT_RQ_MUL = 1588       # LUT requantiser (rq_lane.sv RQ_LUT = 1): the 32 x 25-bit acc·M product in LUTs
                        # (lut_mulw.sv, radix-4 Booth), instead of REQUANT_DSP DSP48E2s (Yosys: the lane
                        # 2,063 LUTs against 475 with its DSPs)
LUT_ELTWISE_MUL = 1136  # LUT add / mul lane (eltwise.sv RQ_LUT = 1): its constant products in LUTs, instead of
                        # ELTWISE_DSP DSP48E2s (Yosys, 24-bit constants: add 1,147, mul 1,124 per lane more)
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
        in_slots, out_slots: an off-chip block's input and output frame slots, 1 or 2
            (`offchip_mvu`; ``conv_offchip.sv`` ``ISLOTS``, ``OSLOTS``); 2 for other blocks.
        in_stage: a one-input-slot off-chip block's input passes through a DDR frame stage
            (`offchip.staged`; ``ddr_stage.sv``), whose resources and traffic are counted here.
        bands: an off-chip conv computed this many bands of output rows a frame behind a band
            splitter (`band.banded`; ``conv_band.sv``), 1 for every other block.
        short_ring: the window generator keeps a short ring (`timing.short_ring_rows`).
        ring_uram: the window generator's ring lives in URAM, `ring_pack` ring words a
            URAM word (`_line_buffer`; ``swg.sv`` ``RING_URAM``).
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
    in_slots: int = 2
    out_slots: int = 2
    in_stage: bool = False
    bands: int = 1
    short_ring: bool = False
    ring_uram: bool = False
    dense_groups: bool = False  # a grouped conv computed dense (`kinds.block_cost`)
    wide_groups: bool = False  # a grouped conv's window generator takes whole pixels (`mvu` ``wide``)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@functools.lru_cache(maxsize=1 << 14)
def _lut_per_mac(simd: int) -> float:
    """Adder-tree LUTs per product of a matrix-vector unit with ``simd`` input lanes:
    ``LUT_PER_MAC + LUT_PER_MAC_WIDE·clamp(log2(simd/4), 0, 2)``: 20 up to 4 lanes, 24 at 8,
    28 from 16 on (Yosys: 21, 25 and 31, 24, 29, 28 at 4, 8, 16, 32, 64; docs/benchmarks.md)."""
    return LUT_PER_MAC + LUT_PER_MAC_WIDE * min(2.0, max(0.0, math.log2(simd / 4)))


def _accumulators(p: int, c: int) -> MemCost:
    """The vector unit's accumulator memory: ``C/p`` words of ``32·p`` bits (LUTRAM; registers
    for one word)."""
    return memory(32 * p, c // p)


@functools.lru_cache(maxsize=1 << 14)
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


@functools.lru_cache(maxsize=1 << 14)
def _params(lanes: int, words: int) -> MemCost:
    """Per-channel bias (32 bits) and requantisation word (64 bits) of ``lanes`` lanes."""
    return rom(BIAS_BITS * lanes, words) + rom(RQ_BITS * lanes, words)


@functools.lru_cache(maxsize=1 << 14)
def padded_out_lanes(co: int, pe: int) -> int:
    """Lanes of the output stream of a conv/dense at ``pe`` output lanes: ``pe`` when it
    divides ``co``; else (padded folds: ``ceil(co/pe)`` neuron folds, the last one's
    ``nf·pe - co`` padding rows computed and dropped) the least divisor of ``co`` above
    ``pe``: the block's trimming converter (``trim.sv``, ``bb::trim_convert``) drops the
    padding lanes and, at least as wide as its input, takes an input beat every cycle. A
    multiple of ``co`` (an elementwise block at two pixels a beat) is its own width."""
    if co % pe == 0 or pe % co == 0:
        return pe
    return min(d for d in range(pe + 1, co + 1) if co % d == 0)


def out_lanes(co: int, pe: int, mmv: int = 1, po: int = 1) -> int:
    """Lanes of a block's output stream at ``pe`` output lanes: with pixel copies one whole
    pixel a beat (``po`` pixels: ``po·co``), else `padded_out_lanes`."""
    return co * po if mmv > 1 else padded_out_lanes(co, pe)


@functools.lru_cache(maxsize=1 << 14)
def trim_lut(co: int, pe: int) -> int:
    """LUTs of ``trim.sv`` after a unit at ``pe`` lanes with padded folds (``pe ∤ co``):
    `trim_converter_lut` of its ``ceil(co/pe)`` input beats a pixel, read out at
    ``padded_out_lanes`` lanes (Yosys 0.70 on nine configurations: 21→24 lanes of 144 channels
    412 LUTs, 10→16 of 512 2,127, 14→16 of 1,280 5,450)."""
    lanes = padded_out_lanes(co, pe)
    return trim_converter_lut(-(-co // pe), lanes, co // lanes)


def mvu(g: Geometry, pe: int, simd: int, uram: bool = False, mmv: int = 1, pack: bool = False,
        lut: bool = False, lutw: bool = False, px: int = 1, po: int = 1, short: bool = False,
        wide: bool = False, dense: bool = False, ring_uram: bool = False) -> BlockCost:
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

    ``px = 2`` (paired input, conv.sv ``PX = 2``): the input streams two horizontally
    adjacent pixels a beat (``simd >= C``, ``W`` even) and the window generator writes a
    padded column pair a cycle: ``ii = max(Hp·ceil(Wp/2), Ho·Wo·sf·nf/mmv)``; a 1×1 conv
    then has a window generator too (no dense on a flattened image). ``po = 2`` (paired
    output, ``PO = 2``; ``px = 2``, stride 1 across, ``Wo`` even, ``mmv`` even, ``2 <= mmv``,
    ``mmv/2 <= nf``, ``pe | Co``): two halves, each a window generator emitting one column
    parity's windows and ``mmv/2`` copies (a collector each, also for one copy), joined into
    one beat of two pixels (``2·Co`` lanes); both halves' line buffers count. ``short``
    (a window generator, one copy, one pixel a beat): its ring holds `short_ring_rows` rows,
    the writer waiting at frame boundaries (`timing.ring_period`; docs/cost-model.md, "Short
    window rings"). ``ring_uram`` (a window generator, one pixel a beat, not ``wide``,
    `ring_uram_fits` at its input lanes): its ring in URAM (`_line_buffer`), same cycles.
    A grouped conv (`Geometry.grouped`) computes its groups in turn (docs/cost-model.md,
    "Grouped convs"): ``sf = K·(C/group)/simd``, input at ``min(simd, C/group)`` lanes, or with
    ``wide`` (``simd`` a multiple of ``C/group``, a window generator) at ``C`` lanes, the window
    generator slicing each group's channels out of the whole pixel it reads; with ``dense``
    as a dense conv over its block-diagonal matrix (every output channel over all ``C``).
    """
    if short and (g.pointwise or mmv != 1 or px != 1 or po != 1):
        raise ValueError(f"a short ring is for a window generator with one copy and one pixel a beat "
                         f"(mmv={mmv}, px={px}, po={po}, pointwise={g.pointwise})")
    if pack and lut:
        raise ValueError("a block's products are packed in DSPs or in LUTs, not both")
    if px not in (1, 2) or po not in (1, 2):
        raise ValueError(f"one or two pixels a beat (px={px}, po={po})")
    if pack:
        return packed(mvu(g, pe, simd, uram=uram, mmv=mmv, lutw=lutw, px=px, po=po, short=short, wide=wide,
                          dense=dense, ring_uram=ring_uram), pe, simd, mmv)
    # A dense layer on a flattened image (ho·wo < h·w) is one vector of h·w·c per output
    # pixel: the mvu stores all of it (MW = h·w·c), not h·w vectors of c.
    vectors = g.ho * g.wo if g.pointwise and g.ho * g.wo < g.h * g.w else g.h * g.w
    # a grouped conv: the unit computes the groups in turn, each fold over its group's
    # K·C/group window elements only (the window generator emits the window group by group)
    grouped = g.grouped and not dense
    cin = g.cgi if grouped else g.c  # input channels an output channel sees
    sf, nf = g.k * (cin if grouped or not g.pointwise else g.in_elems // vectors) // simd, -(-g.co // pe)
    folds = sf * nf
    if px == 2 and (simd % g.c or g.w % 2 or (g.pointwise and vectors != g.h * g.w)):
        raise ValueError(f"a paired input needs simd a multiple of C and W even, on an image "
                         f"(simd={simd}, C={g.c}, W={g.w})")
    if po == 2 and (px != 2 or g.sw != 1 or g.wo % 2 or mmv % 2 or mmv // 2 > nf or nf * pe != g.co):
        raise ValueError(f"a paired output needs px = 2, stride 1 across, Wo even, mmv even with "
                         f"2 <= mmv, mmv/2 <= Co/pe = {nf} and pe | Co (sw={g.sw}, Wo={g.wo}, mmv={mmv}, pe={pe})")
    windowed = not g.pointwise or px == 2  # a window generator in front of the unit
    copies = mmv // po  # copies behind each window generator
    if copies > 1 and (not windowed or copies > nf):
        raise ValueError(f"pixel copies need a window generator and 2 <= mmv <= Co/pe = {nf} (mmv={mmv})")
    if grouped and (g.cgo % pe or (cin % simd and simd % cin) or mmv > 1 or px > 1):
        raise ValueError(f"a grouped conv folds inside a group: pe | Co/group, simd | C/group or "
                         f"C/group·j, one copy, one pixel a beat (pe={pe}, simd={simd}, group={g.group})")
    if wide and (not grouped or simd % cin or not windowed):
        raise ValueError(f"whole pixels into a grouped conv's window generator need groups, simd a multiple of "
                         f"C/group and a window (simd={simd}, group={g.group})")
    # input lanes: a grouped conv's window generator with whole pixels in (``wide``) writes a
    # pixel a cycle and slices a group's channels out of the word it reads
    lanes = g.c if wide else min(simd, cin)
    j = simd // cin if wide else simd // lanes  # taps a beat (window generator read ports)
    if ring_uram and (not windowed or px != 1 or wide or not ring_uram_fits(g, lanes)):
        raise ValueError(f"a ring in URAM is for a window generator of one pixel a beat, not of whole pixels "
                         f"for groups, whose C/lanes words fill URAM words (C={g.c}, lanes={lanes}, px={px}, "
                         f"wide={wide})")
    rows = None
    wmem, where = _weights(pe, simd * 8, folds, uram, lutw)
    mem = wmem + _params(pe, nf)
    folds_a_vector = nf // g.group if grouped else nf  # (a group's folds share its window)
    if folds_a_vector > 1:
        mem = mem + memory(simd * 8, sf)  # the input vector, reused by the (group's) other folds
    mem = mem.times(mmv)  # every copy its own weights, constants and input vector
    if not windowed:
        pix = vectors
        ii = pix * folds
        lead, span, tail = sf - 1, ii - 1, (nf - 1) * sf
        depth, fill, first = RTL_DEPTH["mvu"], 1.0 / pix, sf
    else:
        mem = mem + _line_buffer(g, lanes, j, px, short, ring_uram).times(po)  # po window generators
        if mmv > 1:  # the first whole pixel: all folds of copy 0 (of each half with po = 2)
            ws = window_schedule(g, lanes, folds, folds, copies=copies, px=px, po=po)
            depth = RTL_DEPTH["mvu"] + RTL_DEPTH["swg"] + RTL_DEPTH["copies"]
        else:
            ws = window_schedule(g, lanes, folds, sf, px=px, short=short)
            depth = RTL_DEPTH["mvu"] + RTL_DEPTH["swg"]
        ii = ws.ii
        lead, span = ws.lead, ws.span
        rows = ws.by_row
        if mmv > 1:
            # Window w (of a half with po = 2, which reads every po-th column) is read from
            # (w div M)·folds + (w mod M)·sf after the first, M the copies behind its window
            # generator: the frame's last pixel (and a row's) leaves after its copy's folds,
            # past the mean read time. The halves run in lock step: the join adds no cycle.
            def last(n: int) -> int:
                return ((n - 1) // copies) * folds + ((n - 1) % copies) * sf + folds - 1

            span = max(span, lead - folds + 1 + last(g.ho * g.wo // po))
            rows = replace(rows, drain=max(0, last(g.wo // po) + 1 - rows.row_read))
        tail = max(0, span - ws.last_in)
        fill, first = ws.fill, sf
    lut_unit = round(_lut_per_mac(simd) * pe * simd) + (LUT_PER_PE + LUT_REQUANT) * pe + LUT_PER_SIMD * simd \
        + (LUT_MUL * pe * simd if lut else 0)
    mults = 0 if lut else pe * simd
    # each further copy its control; with copies, every copy's collector and merge input
    lut_copies = 0 if mmv == 1 else LUT_BASE_MVU * (mmv - 1) + LUT_MERGE_BIT * 8 * g.co * mmv
    if po == 2:  # the join: the halves' valid and ready (its data are wires)
        lut_copies += LUT_JOIN
    lut_trim = 0
    if nf * pe > g.co:  # padded folds: the trimming converter after the unit
        if mmv > 1:
            raise ValueError(f"pixel copies need pe | Co (pe={pe}, Co={g.co})")
        lut_trim = trim_lut(g.co, pe)
        depth += RTL_DEPTH["converter"]
    return BlockCost(
        ii=ii, depth=depth, fill=fill, first=first, tail=tail, lead=lead, span=span, window=rows, short_ring=short,
        ring_uram=ring_uram, wide_groups=wide, dense_groups=dense,
        dsp=mmv * (mults + REQUANT_DSP * pe), bram18=mem.bram18, uram=mem.uram,
        lut=LUT_BASE_MVU + mmv * lut_unit + lut_copies + lut_trim
        + (po * _window_lut(px * lanes, j) if windowed else 0) + _ring_select_lut(lanes, j, ring_uram)
        + (j * cin * 8 * -(-(g.group - 1) // 3) if wide else 0)  # the group slice's multiplexer, a port
        + mem.lut,
        weights=where, lut_macs=lut,
    )


def packed(cost: BlockCost, pe: int, simd: int, mmv: int = 1) -> BlockCost:
    """An mvu's ``cost`` (DSP products, unpacked) with DSP packing (`pack_change`); same
    cycles and memories (`mvu` with ``pack``).
    """
    dsp, lut = pack_change(pe, simd, mmv)
    return replace(cost, dsp=cost.dsp + dsp, lut=cost.lut + lut)


def pack_change(pe: int, simd: int, mmv: int = 1) -> tuple[int, int]:
    """What DSP packing changes in an mvu's cost, ``(dsp, lut)``: output lanes ``2i`` and
    ``2i+1`` share one DSP48E2 per input lane, ``floor(pe/2)·simd`` multipliers fewer and
    `LUT_PACK` LUTs more per pair and input lane, in each of ``mmv`` copies (the planner's
    tables derive their packed rows so)."""
    if pe < 2:
        raise ValueError(f"DSP packing pairs output lanes: pe={pe} cannot pack")
    pairs = pe // 2
    return -mmv * pairs * simd, mmv * LUT_PACK * pairs * simd


def _window_unit(g: Geometry, p: int, simd: int, extra: MemCost, short: bool = False,
                 ring_uram: bool = False) -> tuple[BlockCost, MemCost]:
    """Timing of swg -> vvu at ``p`` input lanes, ``simd = p·j`` lanes into the vector unit;
    ``short``: a ring of `short_ring_rows` rows, ``ring_uram``: in URAM (`mvu`)."""
    j = simd // p
    if ring_uram and not ring_uram_fits(g, p):
        raise ValueError(f"a ring in URAM needs C/lanes words to fill URAM words (C={g.c}, lanes={p})")
    reads = g.k * (g.c // p) // j
    ws = window_schedule(g, p, reads, (g.k // j - 1) * (g.c // p) + 1, short=short)
    mem = extra + _line_buffer(g, p, j, short=short, in_uram=ring_uram) + _accumulators(p, g.c)
    cost = BlockCost(ii=ws.ii, depth=RTL_DEPTH["vvu"] + RTL_DEPTH["swg"],
                     fill=ws.fill, first=reads, tail=max(0, ws.span - ws.last_in), lead=ws.lead,
                     span=ws.span, window=ws.by_row, short_ring=short, ring_uram=ring_uram,
                     lut=_ring_select_lut(p, j, ring_uram))
    return cost, mem


def dwconv(g: Geometry, pe: int, simd: int, uram: bool = False, lutw: bool = False,
           lut: bool = False, short: bool = False, ring_uram: bool = False) -> BlockCost:
    """Depthwise conv: ``p = pe`` channels at a time, one multiplier per lane.

    ``simd == pe`` normally; with a parallel window ``simd = p·j`` (``j | K``): ``j`` window
    positions of the ``p`` channels per cycle, ``simd`` multipliers, input at ``p`` lanes.
    ``lut``: every product in LUTs (the vvu's ``PACK = 0``, ``lut_mul.sv``), `LUT_MUL` each,
    no DSP but the requantisers', same cycles. ``short``: a short window ring, ``ring_uram``:
    the ring in URAM (`mvu`).
    """
    p = pe
    wmem, where = _weights(simd, 8, g.k * g.c // simd, uram, lutw)
    c, mem = _window_unit(g, p, simd, wmem + _params(p, g.c // p), short, ring_uram)
    return replace(c, dsp=(0 if lut else simd) + REQUANT_DSP * p, bram18=mem.bram18, uram=mem.uram,
                   lut=c.lut + LUT_VVU + _window_lut(p, simd // p) + LUT_VVU_LANE * p + LUT_PER_LANE * (simd - p)
                   + LUT_REQUANT * p + (LUT_MUL * simd if lut else 0) + mem.lut,
                   weights=where, lut_macs=lut)


def pool(g: Geometry, pe: int, simd: int, requant: bool, short: bool = False, ring_uram: bool = False) -> BlockCost:
    """Max / average pool over a window (average requantises every lane); ``simd = pe·j``: a
    parallel window, ``j | K`` taps of the ``pe`` lanes a cycle (as `dwconv`: ``j`` ring read
    ports, the vvu's ``J``); ``short``: a short window ring, ``ring_uram``: the ring in URAM
    (`mvu`). An average pool's bias' and requantiser are module constants (``vvu.sv``
    ``UNIFORM``: one per tensor), no memory."""
    p = pe
    c, mem = _window_unit(g, p, simd, MemCost(), short, ring_uram)
    return replace(c, dsp=REQUANT_DSP * p if requant else 0, bram18=mem.bram18, uram=mem.uram,
                   lut=c.lut + LUT_VVU + _window_lut(p, simd // p) + LUT_POOL_TAP * (simd - p)
                   + (LUT_VVU_LANE + (LUT_REQUANT_UNIFORM if requant else 0)) * p + mem.lut)


def gap(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Global average pool: int32 accumulators per channel, requantise at the end. Its bias'
    and requantiser are module constants (``vvu.sv`` ``UNIFORM``: the quantiser gives a pool one
    zero point, multiplier and shift), no memory: EfficientNet-B0's 16 pools at one lane held
    45 BRAM18 of them."""
    p = pe
    cg = g.c // p
    ii = g.h * g.w * cg
    mem = memory(32 * p, cg)
    return BlockCost(ii=ii, depth=RTL_DEPTH["vvu"], fill=1.0, tail=0, lead=ii - cg, span=ii - 1,
                     dsp=REQUANT_DSP * p, bram18=mem.bram18,
                     lut=LUT_BASE_SIMPLE + (2 * LUT_PER_LANE + LUT_REQUANT_UNIFORM) * p + mem.lut)


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

SHORT_RING_KINDS = ("conv", "dwconv", "maxpool", "avgpool")
"""Block kinds with a window generator whose ring may be short (``short=True``,
`timing.short_ring_rows`; a conv only with a window, one copy, one pixel a beat)."""

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
    "maxpool": lambda g, pe, simd, **kw: pool(g, pe, simd, requant=False, **kw),
    "avgpool": lambda g, pe, simd, **kw: pool(g, pe, simd, requant=True, **kw),
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
