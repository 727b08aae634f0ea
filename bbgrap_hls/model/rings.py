"""A window generator's ring of rows (``swg.sv``): its memory, where it lives, its LUTs.

Conv, depthwise conv and pool blocks read their windows from one ring of padded input rows
(`timing.window_rows`, or `timing.short_ring_rows` when short), in BRAM or, where a URAM
word holds whole ring words of one pixel, in URAM (docs/cost-model.md, "Window rings in
URAM"). `blocks` charges a block's ring through these functions; the planner's tables and
codegen ask them which rings may go to URAM.
"""

from __future__ import annotations

from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.memory import MemCost, memory, uram_memory
from bbgrap_hls.model.timing import ring_rows, window_rows

LUT_WINDOW = 120        # sliding-window generator (swg.sv): counters, ring addressing (Yosys: 115-127 at one lane)
LUT_WINDOW_LANE = 7     # per input lane: the padding multiplexer into the row memory (Yosys: 132-606 at 2-64 lanes)
LUT_WINDOW_PORT = 15    # per read port past the first (parallel window): its address (Yosys: 14-31)


def _window_lut(lanes: int, j: int = 1) -> int:
    """LUTs of the window generator (``swg``) streaming ``lanes`` input lanes and read through
    ``j`` ports (memories apart): ``LUT_WINDOW + LUT_WINDOW_LANE·lanes + LUT_WINDOW_PORT·(j − 1)``.
    Fitted to ``swg`` alone in Yosys (docs/benchmarks.md, "resources"): 115-127 at 1 lane,
    132, 158, 170, 234, 354, 578-606 at 2, 4, 8, 16, 32, 64; 249 at 3 lanes × 9 ports."""
    return LUT_WINDOW + LUT_WINDOW_LANE * lanes + LUT_WINDOW_PORT * (j - 1)


def ring_pack(lanes: int) -> int:
    """Ring words of ``lanes`` lanes a URAM word holds when a window generator's ring lives in
    URAM (``swg.sv`` ``RING_URAM``): ``8/lanes`` up to 8 lanes (64 of a URAM288 word's 72
    bits), one from 8 lanes on (a word of ``lanes·8`` bits across ``ceil(lanes·8/72)`` URAMs);
    0 where neither fits (a lane count that is not a power of two below 8 or a multiple of 8)."""
    if lanes <= 8:
        return 8 // lanes if 8 % lanes == 0 else 0
    return 1 if lanes % 8 == 0 else 0


def ring_uram_fits(g: Geometry, lanes: int) -> bool:
    """Whether a window generator taking ``lanes`` lanes of ``g``'s ``C`` channels can keep its
    ring in URAM: `ring_pack` words of a pixel fill a URAM word (``C/lanes`` a multiple of it),
    so that a URAM word never holds two pixels and the writer writes it whole."""
    r = ring_pack(lanes)
    return not g.pointwise and r > 0 and (g.c // lanes) % r == 0


def ring_lanes(kind: str, g: Geometry, pe: int, simd: int, dense: bool = False) -> int:
    """Input lanes of a window block's generator (one pixel a beat, not ``wide``): ``pe`` for a
    depthwise conv or pool, ``min(simd, C)`` for a conv, ``min(simd, C/group)`` for a grouped
    one computed group by group (``dense`` False; `mvu`'s ``lanes``)."""
    if kind != "conv":
        return pe
    return min(simd, g.cgi if g.grouped and not dense else g.c)


def _line_buffer(g: Geometry, lanes: int, j: int = 1, px: int = 1, short: bool = False,
                 in_uram: bool = False) -> MemCost:
    """Line buffer of a window block whose input streams at ``lanes`` lanes.

    The RTL window generator (``swg``) keeps a ring of `window_rows` padded rows, one
    memory of ``lanes·8``-bit words; with a parallel window (``j`` window positions read per
    cycle) it reads that memory through ``j`` read ports, which the tools build as ``j``
    copies (one read port each, the write port shared). A paired input (``px = 2``) splits
    the rows into two banks, even and odd padded columns, ``ceil(Wp/2)`` words a row each.
    ``short``: a ring of `short_ring_rows` rows (``swg.sv`` ``ROWS``; one pixel a beat).
    ``in_uram`` (`ring_uram_fits`): each copy in URAM, ``R = ring_pack(lanes)`` ring words a
    URAM word (``swg.sv`` ``RING_URAM``: the writer gathers a URAM word's first ``R − 1``
    ring words in a register and writes it whole with the last, so a copy takes one write
    and one read a cycle, a URAM's two ports): ``uram_memory(R·lanes·8, words/R)``. A 1-lane
    ring of 4 × 114 × 96 words is 22 RAMB18 (a 9-bit wide, 2K deep RAMB18 holds 2,048 of
    its bytes) and two URAM288 (4K words of 8 of its bytes).
    """
    if g.pointwise and px == 1:
        return MemCost()
    if px == 2:
        return memory(lanes * 8, window_rows(g) * -(-g.wp // 2)).times(2 * j)
    words = ring_rows(g, short) * g.wp * (g.c // lanes)
    if in_uram:
        r = ring_pack(lanes)
        return uram_memory(r * lanes * 8, words // r).times(j)
    return memory(lanes * 8, words).times(j)


def _ring_select_lut(lanes: int, j: int, in_uram: bool) -> int:
    """LUTs a URAM ring adds to its window generator (`_line_buffer`): per read port the
    multiplexer picking the ring word out of the ``R = ring_pack(lanes)`` a URAM word holds,
    ``lanes·8·ceil((R − 1)/3)`` (a LUT3 for two, a LUT6 for four, three LUTs for eight, as
    `memory.distributed_memory`'s read multiplexer); the gather register is flip-flops."""
    if not in_uram:
        return 0
    return j * lanes * 8 * -(-(ring_pack(lanes) - 1) // 3)
