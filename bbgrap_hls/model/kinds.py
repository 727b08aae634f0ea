"""Op kind -> block kind, legal foldings, and the cost of a node at a folding.

An op kind without a block raises `UnsupportedError` naming the node: a missing cost is
an error, never a silent zero. An op class may also declare ``cost_block = "<kind>"``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.model.band import banded
from bbgrap_hls.model.blocks import (
    BLOCKS,
    LUT_CAPABLE,
    LUT_REQUANT_CAPABLE,
    OFFCHIP_CAPABLE,
    PACK_CAPABLE,
    SHORT_RING_KINDS,
    URAM_CAPABLE,
    BlockCost,
    lut_requantised,
    pack_change,
)
from bbgrap_hls.model.geometry import Geometry, geometry
from bbgrap_hls.model.offchip import OFFCHIP_BEAT_BYTES, offchip_mvu, staged

LUT_ACTIVATIONS = (
    "Relu", "Relu6", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Clip", "Elu",
    "Selu", "Gelu", "Silu", "Swish", "Softplus", "Softsign", "Mish", "PRelu", "Celu", "Erf",
    "Exp", "Neg", "Abs", "Sign", "Sqrt", "Reciprocal", "Log", "ThresholdedRelu", "Lut",
)

OP_BLOCKS: dict[str, str] = {
    "Dense": "dense", "Gemm": "dense", "MatMul": "dense",
    "MaxPool": "maxpool", "AveragePool": "avgpool",
    "GlobalAveragePool": "gap", "GlobalMaxPool": "gmaxpool",
    "Slice": "slice", "Resize": "upsample", "ZeroInsert": "zeroinsert", "DepthToSpace": "depth2space",
    "Add": "eltwise2", "Mul": "eltwise2", "Sub": "eltwise2",
    "ChannelAffine": "affine",
    "Concat": "concat",
    "Transpose": "shuffle", "ChannelShuffle": "shuffle",
    "Pad": "pad",
    "Flatten": "wire", "Identity": "wire", "Squeeze": "wire", "Unsqueeze": "wire",
    "Dropout": "wire",
    **{k: "lut" for k in LUT_ACTIVATIONS},
}
"""Op kind -> block kind (Conv and Reshape are decided per node by `block_kind`)."""

FUSABLE_ACTS = ("Relu", "Relu6")
"""Activations fused into a preceding Conv/Dense (the requantiser's clamp)."""

WEIGHTED = ("conv", "dense")
"""Blocks with independent ``pe`` and ``simd``; every other block has ``pe == simd``."""


def block_kind(node: Node, graph: Graph) -> str:
    """The block kind that implements ``node``.

    Raises:
        UnsupportedError: the op kind has no cost model.
    """
    from bbgrap_hls.ops import REGISTRY

    op = REGISTRY.get(node.op)
    limit = getattr(op, "fabric_limit", None)  # attributes the fabric's block does not cover
    why = limit(node, graph) if limit is not None else None
    if why:
        raise UnsupportedError(f"node '{node.name}' ({node.op}): {why}")
    declared = getattr(op, "cost_block", None) if op is not None else None
    if declared:
        return declared
    if node.op == "Conv":
        g = geometry(node, graph)
        if g.group > 1 and g.group == g.c and g.co == g.c:
            return "dwconv"
        return "conv"
    if node.op in ("Reshape", "Transpose") and len(graph.shape(node.outputs[0])) not in (2, 4):
        # the middle of a layout chain (a channel shuffle's rank-5 view): nothing streams
        # there; codegen follows the chain's indices and builds one shuffle at its end
        # (codegen/design.py, `_layout`), so the plan charges one block too
        return "wire"
    if node.op == "Reshape":
        out = graph.shape(node.outputs[0])
        src = graph.shape(graph.act_inputs(node)[0]) if graph.act_inputs(node) else out
        return "wire" if len(out) <= 2 or tuple(out) == tuple(src) else "shuffle"
    kind = OP_BLOCKS.get(node.op)
    if kind is None:
        raise UnsupportedError(
            f"node '{node.name}' ({node.op}): no cost model for op kind '{node.op}' "
            f"(known: Conv, Reshape, {', '.join(sorted(OP_BLOCKS))})")
    return kind


def divisors(n: int) -> list[int]:
    """Positive divisors of ``n`` ascending."""
    small, large = [], []
    k = 1
    while k * k <= n:
        if n % k == 0:
            small.append(k)
            if k * k != n:
                large.append(n // k)
        k += 1
    return small + large[::-1]


PADDED_STEP = 1.12
"""A padded lane count is kept when the next larger one kept is at least this many times it
(`padded_lanes`)."""


@functools.lru_cache(maxsize=4096)
def padded_lanes(co: int) -> list[int]:
    """Output lane counts of a conv/dense with padded folds, ascending: the divisors of
    ``co`` and lane counts ``pe = ceil(co/n)`` that do not divide it (``n`` neuron folds, the
    last one padded with ``n·pe - co`` zero rows whose outputs are dropped: `padded_out_lanes`).

    Every ``ceil(co/n)`` is the least ``pe`` for ``n`` folds, but keeping them all would
    double the planner's tables; one is kept when it is at least `PADDED_STEP` below the
    next larger lane count kept (from the largest down), so the lane counts are at most
    about 12 % apart. MobileNetV2's 144 channels take 21 lanes (7 folds, against 8 at 18
    lanes and 6 at 24). Cached: every table of a ``co``-channel block asks (do not modify)."""
    out = set(divisors(co))
    for n in range(1, co + 1):  # pe descending
        pe = -(-co // n)
        if pe not in out and min(d for d in out if d > pe) >= pe * PADDED_STEP:
            out.add(pe)
    return sorted(out)


def lane_channels(g: Geometry, kind: str) -> int:
    """The channel count every lane count of a pe == simd block must divide."""
    if kind == "concat":
        c = 0
        for ci in g.in_channels or (g.c,):
            c = _gcd(c, ci)
        return c
    if kind in ("pad", "slice"):
        return _gcd(g.c, g.co)
    if kind == "depth2space":  # a lane group must stay inside one output pixel's channels
        return g.co
    if kind == "eltwise2":
        return _gcd(g.co, *(g.in_channels or (g.c,)))
    return g.c


def _gcd(*xs: int) -> int:
    out = 0
    for x in xs:
        out = math.gcd(out, x)
    return out


PARALLEL_WINDOW_LANES = ("dwconv", "maxpool", "avgpool")
"""Window kinds of ``p`` lanes in and out that may read ``j | K`` window taps a cycle
(``simd = p·j``: the vector unit's ``J``, `foldings` with ``parallel_window``)."""


def foldings(kind: str, g: Geometry, parallel_window: bool = False,
             padded: bool = False) -> list[tuple[int, int]]:
    """Legal ``(pe, simd)`` pairs of a block, in ascending parallelism.

    With ``parallel_window`` a conv may also take ``simd = C·j`` for ``j | K``, ``j > 1``,
    and a depthwise conv or a window pool ``simd = p·j`` (several window positions per cycle;
    docs/cost-model.md, "Parallel window"). With ``padded`` a conv/dense may also take a
    ``pe`` that does not divide ``Co`` (`padded_lanes`; docs/cost-model.md, "Padded folds").
    """
    if kind == "conv" and g.grouped:  # the groups in turn: a fold stays inside one group
        simds = divisors(g.cgi)
        if parallel_window:
            simds = simds + [g.cgi * j for j in divisors(g.k)[1:]]
        return [(pe, simd) for pe in divisors(g.cgo) for simd in simds]
    if kind in WEIGHTED:
        simds = divisors(g.c)
        if parallel_window and kind == "conv":
            simds = simds + [g.c * j for j in divisors(g.k)[1:]]
        return [(pe, simd) for pe in (padded_lanes(g.co) if padded else divisors(g.co)) for simd in simds]
    if kind in PARALLEL_WINDOW_LANES and parallel_window:
        return [(p, p * j) for p in divisors(g.c) for j in divisors(g.k)]
    if kind == "wire":
        return [(1, 1)]
    out = [(p, p) for p in divisors(lane_channels(g, kind))]
    if g.pairs > 1 and kind in PAIR_STREAM_KINDS:
        c = lane_channels(g, kind)
        out.append((2 * c, 2 * c))  # two pixels a beat (`pairable`)
    return out


@functools.lru_cache(maxsize=1 << 16)
def block_cost(kind: str, g: Geometry, pe: int, simd: int, uram: bool = False, mmv: int = 1,
               ddr: bool = False, memory: tuple[float, int, int] | None = None, pack: bool = False,
               lut_macs: bool = False, lutw: bool = False, lut_requant: bool = False,
               in_slots: int = 2, in_cycles: int | None = None, stage: bool = False,
               stage_bound: bool = False, px: int = 1, po: int = 1, bands: int = 1,
               timing: bool = True, short_ring: bool = False, out_slots: int = 2,
               dense_groups: bool = False, wide_groups: bool = False, ring_uram: bool = False) -> BlockCost:
    """Cost of a block kind at a folding (the folding must be legal).

    ``uram`` puts the weight memory in URAM (kinds in `URAM_CAPABLE`; ignored for the others,
    whose input FIFOs the planner places); ``mmv`` is a
    conv's pixel copies (`pixel_copies`); ``ddr`` keeps the weights in the core's board
    memory (kinds in `OFFCHIP_CAPABLE`, no copies: `offchip_mvu`), and then ``uram`` puts
    its frame buffers in URAM, ``in_slots`` (2 or 1) is its input frame slots and ``in_cycles``
    (one slot) the cycles its producer takes to deliver a frame (`offchip_mvu`), ``stage`` (one
    slot) puts a DDR frame stage in front of it (`offchip.staged`; ``stage_bound``: the stage's
    cycles as closed-form bounds, the planner's tables); ``memory`` is ``(rate bytes/cycle, latency cycles, beat
    bytes)`` of the board memory as the block sees it (None: one beat per cycle, no latency);
    ``pack`` asks for DSP packing, applied where `packs` allows it (conv/dense on chip,
    ``pe >= 2``) and ignored elsewhere; ``lut_macs`` puts every product of a conv/dense on
    chip or a depthwise conv in LUTs (`lut_capable`; it overrides ``pack``) and is ignored
    elsewhere; ``lutw`` builds
    the weight memory (`URAM_CAPABLE` kinds, at most `LUT_ROM_DEPTH` words) from LUTs instead
    of BRAM or URAM (``weights == "lut"``); ``lut_requant`` builds the requantisers' products
    from LUTs (kinds in `LUT_REQUANT_CAPABLE`, not off chip: `lut_requantised`; ignored elsewhere).
    ``px``/``po`` (conv on chip only): input/output pixels per beat (`blocks.mvu`).
    ``bands`` (an off-chip conv with two slots): computed that many bands of output rows a
    frame behind a band splitter (`band.banded`; ``timing=False``: without frame 0's schedule,
    for the tables). ``short_ring`` (`SHORT_RING_KINDS` on chip): the window generator's ring
    holds `timing.short_ring_rows` rows (`blocks.mvu`); ``ring_uram`` (the same kinds, a ring
    `rings.ring_uram_fits` allows) keeps it in URAM (`rings._line_buffer`). ``out_slots`` (an off-chip conv/dense
    without a DDR frame stage, banded or not): the frame slots of its output buffer, 2 or 1
    (`offchip_mvu`; one halves the output memory, a frame's first fold then waits for the
    previous frame's output to have left). ``dense_groups`` (a grouped conv, `Geometry.grouped`):
    computed as a dense conv over its block-diagonal matrix instead of group by group, the
    foldings of a dense conv (`foldings` of the geometry with one group). ``wide_groups`` (a
    grouped conv with a window generator computed group by group, ``simd`` a multiple of
    ``C/group``): its window generator takes whole pixels (`blocks.mvu` ``wide``).
    """
    if dense_groups and (kind != "conv" or not g.grouped or ddr):
        raise ValueError(f"dense_groups is for a grouped conv on chip, not '{kind}' with {g.group} group(s)")
    if (short_ring or ring_uram) and (kind not in SHORT_RING_KINDS or ddr):
        raise ValueError(f"block kind '{kind}' (ddr={ddr}) has no window ring to shorten or move")
    if (px != 1 or po != 1) and (kind != "conv" or ddr):
        raise ValueError(f"block kind '{kind}' (ddr={ddr}) takes one pixel a beat (px={px}, po={po})")
    if ddr:
        cost = _offchip_cost(kind, g, pe, simd, uram, mmv, memory, in_slots, in_cycles, stage, stage_bound, bands,
                             timing, out_slots)
        if pack and packs(kind, pe):  # the products as the mvu's (`pack_change`)
            d_dsp, d_lut = pack_change(pe, simd)
            cost = replace(cost, dsp=cost.dsp + d_dsp, lut=cost.lut + d_lut)
        return cost
    if out_slots != 2:
        raise ValueError(f"block kind '{kind}' on chip has no output frame slots (out_slots={out_slots})")
    kw: dict = {}
    if uram and kind in URAM_CAPABLE:  # a block without weights: nothing of its own moves
        kw["uram"] = True
    if lutw and kind in URAM_CAPABLE:
        kw["lutw"] = True
    if mmv > 1:
        if kind != "conv":
            raise ValueError(f"block kind '{kind}' has no pixel copies")
        kw["mmv"] = mmv
    if px != 1 or po != 1:
        kw["px"], kw["po"] = px, po
    if short_ring:
        kw["short"] = True
    if ring_uram:
        kw["ring_uram"] = True
    if wide_groups:
        kw["wide"] = True
    if dense_groups:  # a grouped conv as a dense one over its block-diagonal matrix
        kw["dense"] = True
    if lut_macs and lut_capable(kind):
        kw["lut"] = True
    elif pack and packs(kind, pe):
        kw["pack"] = True
    cost = BLOCKS[kind](g, pe, simd, **kw)
    if lut_requant and kind in LUT_REQUANT_CAPABLE:
        cost = lut_requantised(kind, cost, pe, mmv)
    return cost


def _offchip_cost(kind: str, g: Geometry, pe: int, simd: int, uram: bool, mmv: int,
                  memory: tuple[float, int, int] | None, in_slots: int, in_cycles: int | None, stage: bool,
                  stage_bound: bool, bands: int, timing: bool, out_slots: int) -> BlockCost:
    """`block_cost` of a block whose weights are off chip (``ddr``), before packing."""
    if kind not in OFFCHIP_CAPABLE or mmv > 1:
        raise ValueError(f"block kind '{kind}' (mmv={mmv}) cannot keep its weights off chip")
    if out_slots not in (1, 2) or (out_slots == 1 and stage):
        raise ValueError(f"out_slots={out_slots}: 2, or 1 without a DDR frame stage")
    if stage:
        if in_slots != 1 or in_cycles is not None:
            raise ValueError("a DDR frame stage goes with one input slot (its own in_cycles)")
        rate, latency, beat = memory or (None, 0, OFFCHIP_BEAT_BYTES)
        return staged(g, pe, simd, uram=uram, rate=rate, latency=latency, beat_bytes=beat, bound=stage_bound)
    if bands > 1:
        if kind != "conv" or in_slots != 2 or in_cycles is not None:
            raise ValueError(f"row bands are for a two-slot off-chip conv, not '{kind}' (in_slots={in_slots})")
        rate, latency, beat = memory or (None, 0, OFFCHIP_BEAT_BYTES)
        return banded(g, pe, simd, bands, uram=uram, rate=rate, latency=latency, beat_bytes=beat,
                      timing=timing, out_slots=out_slots)
    if memory is None:
        return offchip_mvu(g, pe, simd, uram=uram, in_slots=in_slots, in_cycles=in_cycles, out_slots=out_slots)
    rate, latency, beat = memory
    return offchip_mvu(g, pe, simd, uram=uram, rate=rate, latency=latency, beat_bytes=beat, in_slots=in_slots,
                       in_cycles=in_cycles, out_slots=out_slots)


def packs(kind: str, pe: int) -> bool:
    """Whether DSP packing applies to a block: a conv or dense, its weights on chip or off
    chip (``conv_offchip.sv`` ``PACK = 2``, as the mvu), with at least two output lanes to pair."""
    return kind in PACK_CAPABLE and pe >= 2


def lut_capable(kind: str, ddr: bool = False) -> bool:
    """Whether a block may compute its products in LUTs (``lut_mul.sv``): a conv or dense
    with its weights on chip (the matrix-vector unit; `offchip_mvu` keeps DSPs) or a
    depthwise conv (the vector unit, `LUT_CAPABLE`)."""
    return kind in LUT_CAPABLE and not ddr


def lut_requant_capable(kind: str) -> bool:
    """Whether a block's requantisers may build their products from LUTs (`LUT_REQUANT_CAPABLE`;
    an off-chip conv/dense keeps its DSPs)."""
    return kind in LUT_REQUANT_CAPABLE


MAX_COPIES = 4
"""Most pixel copies a conv may take (`pixel_copies`)."""


def pixel_copies(kind: str, g: Geometry, pe: int) -> list[int]:
    """Legal pixel-copy counts of a block at output lanes ``pe``: ``[1]``, and for a conv
    with a window generator also ``2 … min(Co/pe, MAX_COPIES)``."""
    if kind != "conv" or g.pointwise or g.co % pe or g.grouped:
        return [1]
    return list(range(1, min(g.co // pe, MAX_COPIES) + 1))


PAIR_STREAM_KINDS = ("eltwise2",)
"""Blocks without a window whose hardware does not know the channels (a per-tensor Add or
Mul, `hw/rtl/eltwise.sv`): at ``2·C`` lanes a beat holds two pixels (`pairable`)."""


def pairable(kind: str, g: Geometry) -> bool:
    """Whether a block may stream two horizontally adjacent pixels a beat (the planner's
    ``pixel_pairs`` option; docs/cost-model.md, "Two pixels a beat"): an image of even width
    into a conv with a window generator, or into a `PAIR_STREAM_KINDS` block whose inputs
    all have its channels (no broadcast)."""
    if g.h * g.w <= 1 or g.w % 2:
        return False
    if kind == "conv":
        return not g.pointwise and g.group == 1
    if kind in PAIR_STREAM_KINDS:
        return all(c == g.co for c in (g.in_channels or (g.c,)))
    return False


def pair_modes(kind: str, g: Geometry, pe: int, simd: int) -> list[tuple[int, int, int]]:
    """``(px, po, mmv)`` of a conv's paired rows at ``(pe, simd)`` (``g.pairs`` only):
    input at two pixels a beat (``px = 2``: ``simd`` a multiple of ``C``, so the window
    generator takes whole pixels) with one output pixel a beat (``po = 1``, copies as
    `pixel_copies`), or also two output pixels a beat (``po = 2``: stride 1 across, an even
    output width, an even number of copies ``2 <= mmv <= 2·min(Co/pe, MAX_COPIES)``, two
    halves of ``mmv/2`` copies for the even and odd output columns)."""
    if not g.pairs or kind != "conv" or simd % g.c or g.co % pe:
        return []
    nf = g.co // pe
    out = [(2, 1, m) for m in range(1, min(nf, MAX_COPIES) + 1)]
    if g.pairs > 1 and g.sw == 1 and g.wo % 2 == 0:
        out += [(2, 2, m) for m in range(2, 2 * min(nf, MAX_COPIES) + 1, 2)]
    return out


def in_lanes(kind: str, g: Geometry, pe: int, simd: int, px: int = 1, dense: bool = False,
             wide: bool = False) -> int:
    """Lanes per beat of the block's input stream: ``min(simd, C)`` for conv/dense (a
    parallel window reads ``C`` lanes, a grouped conv's ``C/group``; ``px`` pixels a beat: ``px·C``), ``pe`` for a
    depthwise conv or a window pool (``simd = pe·j`` with a parallel window), ``simd`` otherwise."""
    if kind in WEIGHTED:
        # (a grouped conv: its group's channels, unless computed dense, ``dense_groups``, or
        # with whole pixels into its window generator, ``wide_groups``)
        return g.c if wide else min(simd, g.cgi if g.grouped and not dense else g.c) * px
    return pe if kind in PARALLEL_WINDOW_LANES else simd


def node_geometry(node: Node, graph: Graph, co: int | None = None) -> Geometry:
    """Geometry of ``node``; ``co`` overrides the output channels (a split part)."""
    g = geometry(node, graph)
    return g if co is None else replace(g, co=co)
