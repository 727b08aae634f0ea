"""What a folding table's row charges for a block's inputs (`tables._tables_of`): each input's
FIFO at its reconvergence depth (fifos.py) and a width-converter allowance, and with board
memory allowed, what moving the frame-sized ones to a DDR stage changes (`Table.fifo_ddr`)."""

from __future__ import annotations

from dataclasses import dataclass

from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.links import fifo_cost
from bbgrap_hls.model.memory import LUTRAM_PER_BRAM18
from bbgrap_hls.model.stage import fifo_chunks, ring_stage
from bbgrap_hls.search.fifos import (
    broadcast_depth,
    input_depths,
    pad_depth,
    ring_depth,
    stall_depth,
    turn_depth,
    zeroinsert_depth,
)


@dataclass(frozen=True)
class _Inputs:
    """What a table needs to charge a block's input FIFOs: per input, its elements per
    frame and its producer's structural start (frames) and cycles (fifos.py)."""

    elems: tuple[int, ...]
    starts: tuple[float, ...]
    cycles: tuple[int, ...]


def _input_fifos(kind: str, g: Geometry, inputs: _Inputs, lanes: int, ii: int, pe: int, window: bool,
                 on_uram: bool, memory: tuple[float, int, int] | None = None) -> tuple:
    """What a table row charges for a block's inputs: BRAM18, URAM and LUTs of each input's
    FIFO (its reconvergence depth in the block's ``lanes``, the block at ``ii``) and a
    worst-case width converter (from 1 lane), whether a FIFO went to URAM, and with
    ``memory`` (rate bytes/cycle, latency, beat: `offchip_memory`) what moving the FIFOs that
    a ring in board memory can hold (`model.stage.fifo_chunks`: a frame in one region or, for
    a FIFO shorter than a frame, in several) to the core's board memory changes:
    ``(BRAM18 and URAM saved, LUTs added, bytes a frame written and read, the stages'
    slowest ii)`` or None (no such FIFO). The stages are costed by `ring_stage`, as the
    integer program's lags are (`couplings.lag_prices`)."""
    bram = uram = lut = 0
    big_fifo = False
    saved_bram = saved_uram = m_lut = m_bytes = m_ii = 0
    beats = [max(1, e // lanes) for e in inputs.elems]
    starts = [s + (cy + 1) / ii for s, cy in zip(inputs.starts, inputs.cycles, strict=True)]
    pixels = max(1, g.h * g.w)
    channels = [max(1, e // pixels) for e in inputs.elems]
    for k, (d, b) in enumerate(zip(input_depths(beats, starts, g.h), beats, strict=True)):
        # the producer's lanes are unknown here: the block's own (fifos.py)
        d = max(d, stall_depth(kind, g, pe, lanes))
        if kind == "eltwise2":  # a broadcast operand waits for its repeat unit
            d = max(d, broadcast_depth(b, max(1, g.out_elems // lanes)))
        if kind == "bilinear":  # the ring's refusals
            d = max(d, ring_depth(g, lanes))
        if kind == "concat":  # the other inputs' turns
            d = max(d, turn_depth(channels, k, pixels, lanes))
        if window:  # the window generator's padding writes
            d = max(d, pad_depth(g, lanes, lanes, ii))
        if kind == "zeroinsert":  # rows of zeros take no input
            d = max(d, zeroinsert_depth(g, pe, lanes, ii))
        fifo = fifo_cost(lanes, d, on_uram)
        big_fifo = big_fifo or fifo.uram > 0
        bram += fifo.bram18
        uram += fifo.uram
        lut += fifo.lut + _converter_allowance(lanes)
        if memory is None or b * lanes != g.out_elems:  # (a broadcast operand's FIFO stays)
            continue
        ring = fifo_chunks(d, b, lanes, memory[0], memory[1])
        if ring is None:
            continue
        st = ring_stage(b, *ring, lanes, memory[0], memory[1])
        # a ring of chunks only for a FIFO the stage's LUTs would not buy as distributed RAM
        if ring[0] == 1 or fifo.bram18 * LUTRAM_PER_BRAM18 > st.lut:
            saved_bram += fifo.bram18 - st.bram18
            saved_uram += fifo.uram
            m_lut += st.lut - fifo.lut
            m_bytes += st.bytes_per_frame
            m_ii = max(m_ii, st.ii, st.deliver)
    moved = (saved_bram, saved_uram, m_lut, m_bytes, m_ii) if m_bytes and saved_bram + saved_uram > 0 else None
    return bram, uram, lut, big_fifo, moved


CONVERTER_ALLOWANCE = (20, 8)
"""LUTs a table row charges for a width converter into a block: a constant and a term per input lane."""


def _converter_allowance(lanes: int) -> int:
    """What a table row charges for a width converter into a block of ``lanes`` input lanes,
    whose producer's lanes are unknown here: `CONVERTER_ALLOWANCE` (``20 + 8·lanes``, 0 at one
    lane; the converter formula before the width converters were fitted to Yosys). An
    allowance, not a converter's cost: the final plan charges each real one
    (`width_converter_lut`), and the repair lowers foldings where a core is then over."""
    base, per_lane = CONVERTER_ALLOWANCE
    return 0 if lanes == 1 else base + per_lane * lanes
