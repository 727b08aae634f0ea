"""From a segmentation to a `Plan`: channels, transfers, link loads, FIFO depths, latency,
per-core use; plus the repair step that keeps every core within its limits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bbgrap_hls.model import block_cost, in_lanes, packs
from bbgrap_hls.model.band import banded_rows_out
from bbgrap_hls.model.blocks import BlockCost
from bbgrap_hls.model.blocks import out_lanes as stream_lanes
from bbgrap_hls.model.geometry import hwc
from bbgrap_hls.model.links import (
    fifo_cost,
    fifo_in_uram,
    link_cost,
    stream_endpoint_lut,
    width_converter_lut,
)
from bbgrap_hls.model.timing import (
    FIFO_DEPTH,
    RTL_DEPTH,
    Rows,
    bilinear_rows_out,
    crop_rows_out,
    depth2space_rows_out,
    input_rows,
    latest,
    out_profile,
    resample,
    shift,
    stream_rows_out,
    window_rows_out,
    zeroinsert_rows_out,
)
from bbgrap_hls.ops.resize_linear import taps as bilinear_taps
from bbgrap_hls.plan import ChannelPlan, CorePlan, NodePlan, Plan, SplitPart, TransferPlan, path_route
from bbgrap_hls.search.couplings import frame_cycles
from bbgrap_hls.search.dp import Segmentation, part_tables
from bbgrap_hls.search.fifo_memory import fifos_to_ddr, fifos_to_lutram, fifos_to_uram
from bbgrap_hls.search.fifos import (
    DEFAULT_DEPTH,
    broadcast_depth,
    gather_lanes,
    input_depths,
    narrowing_depth,
    pad_depth,
    pad_run,
    ring_depth,
    stall_depth,
    turn_depth,
    zeroinsert_depth,
)
from bbgrap_hls.search.problem import BW_CYCLES, N_RES, Problem, gather_ii
from bbgrap_hls.search.tables import RING_URAM, _packs_row

CONVERT = RTL_DEPTH["converter"] + FIFO_DEPTH
"""Cycles a width converter adds between two blocks: its register and its output FIFO."""


@dataclass
class _Part:
    core: int
    co_begin: int
    co_end: int
    pe: int
    simd: int
    cost: BlockCost
    mmv: int = 1
    px: int = 1  # input pixels a beat (`pair_modes`)
    po: int = 1  # output pixels a beat

    @property
    def bw(self) -> int:
        """Bandwidth reserved in the core's board memory, bytes per `BW_CYCLES` cycles."""
        return -(-BW_CYCLES * self.cost.offchip_bytes // max(1, self.cost.ii))

    @property
    def out_lanes(self) -> int:
        """Lanes of the part's output stream (a whole pixel with pixel copies)."""
        return stream_lanes(self.co_end - self.co_begin, self.pe, self.mmv, self.po)


def unit_parts(prob: Problem, seg: Segmentation, u: int) -> list[_Part]:
    """The parts of unit ``u`` (one unless split), with their costs."""
    unit = prob.units[u]
    if u in seg.split:
        k = len(seg.split[u])
        sizes = seg.part_co.get(u) or [unit.geom.co // k] * k
        tables = part_tables(prob, seg, u)
        gather = gather_ii(unit.geom, sizes)  # the parts' concatenation on the last core
        out, begin = [], 0
        for (c, f), co, t in zip(seg.split[u], sizes, tables, strict=True):
            g = replace(unit.geom, co=co, pairs=min(unit.geom.pairs, 1))
            cost = block_cost(unit.kind, g, int(t.pe[f]), int(t.simd[f]), uram=bool(t.uram[f]), mmv=t.copies(f),
                              ddr=bool(t.ddr[f]), memory=prob.offchip_memory if t.ddr[f] else None,
                              pack=_packs_row(prob.dsp_packing, bool(t.ddr[f])), lut_macs=bool(t.lut[f]), lutw=bool(t.lutw[f]),
                              lut_requant=bool(t.lutrq[f]), px=int(t.px[f]), po=int(t.po[f]),
                              short_ring=bool(t.ring[f]), ring_uram=bool(t.ring[f] == RING_URAM),
                              dense_groups=bool(t.dense[f]), wide_groups=bool(t.wide[f]))
            out.append(_Part(c, begin, begin + co, int(t.pe[f]), int(t.simd[f]),
                             _at_least(cost, max(gather, int(t.ii[f]))), t.copies(f), *t.pairs(f)))
            begin += co
        return out
    t, f = unit.table, seg.fold[u]
    in_cycles = None
    if f >= len(t):  # a one-input-slot row (`Table.extra`, the integer program's): without a
        t = t.full()  # stage, the frame arrives at its off-chip producer's pace (`couplings.Pair`)
        if t.paired[f]:  # (or a row with FIFOs in board memory, `Table.more`)
            p = unit.producers[0]
            elems = prob.tensor_bits[prob.units[p].out_tensor] // 8
            tp = prob.units[p].table
            tp = tp.full() if seg.fold[p] >= len(tp) else tp  # (the producer on such a row too)
            in_cycles = max(elems // int(t.simd[f]), frame_cycles(elems, int(tp.pe[seg.fold[p]])))
    # a table row's ii may exceed its block's (an off-chip row slowed to its port's rate)
    cost = block_cost(unit.kind, unit.geom, int(t.pe[f]), int(t.simd[f]), uram=bool(t.uram[f]),
                      mmv=t.copies(f), ddr=bool(t.ddr[f]), memory=prob.offchip_memory if t.ddr[f] else None,
                      pack=_packs_row(prob.dsp_packing, bool(t.ddr[f])), lut_macs=bool(t.lut[f]), lutw=bool(t.lutw[f]),
                      lut_requant=bool(t.lutrq[f]), in_slots=1 if t.in1[f] else 2, in_cycles=in_cycles,
                      stage=bool(t.stage[f]), px=int(t.px[f]), po=int(t.po[f]), bands=int(t.bands[f]),
                      short_ring=bool(t.ring[f]), ring_uram=bool(t.ring[f] == RING_URAM),
                      out_slots=1 if t.out1[f] else 2, dense_groups=bool(t.dense[f]), wide_groups=bool(t.wide[f]))
    # (a row behind a stage has its tables' bound of the stage's cycles: the cost is exact)
    floor = cost.ii if t.stage[f] else int(t.ii[f])
    return [_Part(seg.core[u], 0, unit.geom.co, int(t.pe[f]), int(t.simd[f]), _at_least(cost, floor),
                  t.copies(f), *t.pairs(f))]


def _cached_parts(prob: Problem, seg: Segmentation, u: int) -> list[_Part]:
    """`unit_parts`, kept per problem by what they depend on (core and row, or the split's
    cores, rows and channel counts): the narrowing pass rebuilds plans that differ in one
    block. The parts are never modified."""
    if u in seg.split:
        key = (u, tuple(seg.split[u]), tuple(seg.part_co.get(u, ())))
    else:
        key = (u, seg.core[u], seg.fold[u])
        t = prob.units[u].table
        if seg.fold[u] >= len(t) and t.full().paired[seg.fold[u]]:  # one input slot, no stage:
            key += (seg.fold[prob.units[u].producers[0]],)  # its producer's row sets its ii
    got = prob.parts.get(key)
    if got is None:
        got = prob.parts[key] = unit_parts(prob, seg, u)
    return got


def _out_lanes(parts: list[_Part], pixels: int, ii: int) -> int:
    """Lanes of a unit's output stream: its part's, or a split's gather (`gather_lanes` at
    the blocks' largest ``ii``, as codegen/design.py builds it)."""
    if len(parts) == 1:
        return parts[0].out_lanes
    return gather_lanes([p.co_end - p.co_begin for p in parts], [p.out_lanes for p in parts], pixels, ii)


def _pack(prob: Problem, kind: str, part: _Part) -> int:
    """Output lanes per DSP of a part: 2 where the plan packs it (`bbgrap_hls.model.packs`),
    0 where its products are in LUTs."""
    if part.cost.lut_macs:
        return 0
    ddr = part.cost.weights == "ddr"
    return 2 if _packs_row(prob.dsp_packing, ddr) and packs(kind, part.pe) else 1


def _node_pack(packs_: list[int]) -> int:
    """A node's ``pack`` from its parts': theirs when they agree, else the largest (the
    parts record their own)."""
    return packs_[0] if len(set(packs_)) == 1 else max(packs_)


def _at_least(cost: BlockCost, ii: int) -> BlockCost:
    return cost if cost.ii >= ii else replace(cost, ii=ii)


def _route(prob: Problem, a: int, b: int) -> list[int]:
    return path_route(prob.core_path, a, b)


def build_plan(prob: Problem, seg: Segmentation, strategy: str, objective: str) -> Plan:
    """Assemble the plan of ``seg`` (no repair; see `repair`)."""
    return _build(prob, seg, strategy, objective, use_only=False)


def core_use(prob: Problem, seg: Segmentation, stop: bool = False) -> dict[int, np.ndarray] | None:
    """Per core id, what `build_plan` charges it, in `RES` order (the plan's ``CorePlan``
    fields ``dsp``, ``bram18``, ``uram``, ``lut``, ``bw``): the same computation without
    the latency profiles and the plan's records, for checking a fit before building. With
    ``stop``, None as soon as some core is sure to be over a limit: the blocks' own use is
    charged first and nothing after it gives any back but the FIFO BRAM18 moved to URAM (so
    the blocks alone over any limit, or the LUTs, DSPs, URAM or bandwidth so far over theirs)."""
    return _build(prob, seg, "", "", use_only=True, stop=stop)


def _build(prob: Problem, seg: Segmentation, strategy: str, objective: str, use_only: bool, stop: bool = False):
    """`build_plan`, or with ``use_only`` `core_use` (the row-by-row timing, which only the
    latency needs, skipped)."""
    board, graph = prob.board, prob.graph
    parts = [_cached_parts(prob, seg, u) for u in range(prob.m)]
    out_core = [p[-1].core for p in parts]
    blocks_ii = max(max(1, p.cost.ii) for ps in parts for p in ps)
    out_lanes = [_out_lanes(p, max(1, prob.units[u].geom.ho * prob.units[u].geom.wo), blocks_ii)
                 for u, p in enumerate(parts)]
    for u, unit in enumerate(prob.units):  # a wire streams its producer's beats (a layout alias)
        if unit.kind == "wire" and unit.producers and unit.producers[0] >= 0:
            out_lanes[u] = out_lanes[unit.producers[0]]
    # per core: dsp, bram18, uram, lut, bw (Python ints; arrays for the caller)
    use = {c.id: [0] * N_RES for c in board.cores}
    for ps in parts:
        for p in ps:
            d = use[p.core]
            d[0] += p.cost.dsp
            d[1] += p.cost.bram18
            d[2] += p.cost.uram
            d[3] += p.cost.lut
            d[4] += p.bw
    for u, ps in enumerate(parts):  # a split's FIFOs into its concatenation (`turn_depth`)
        if len(ps) > 1:
            sizes = [p.co_end - p.co_begin for p in ps]
            pixels = max(1, prob.units[u].geom.ho * prob.units[u].geom.wo)
            for k in range(len(ps)):
                depth = turn_depth(sizes, k, pixels, out_lanes[u])
                if depth > DEFAULT_DEPTH:  # two beats: registers, as before they were sized
                    fc = fifo_cost(out_lanes[u], depth)
                    use[ps[-1].core][1] += fc.bram18
                    use[ps[-1].core][3] += fc.lut
    lut_limit = {c.id: c.lut_limit for c in board.cores}
    if stop and any(np.any(np.array(x) > prob.limits(k)) for k, x in use.items()):
        return None
    # -- transfers: one per (tensor, destination core) -------------------------------------
    readers: dict[tuple[str, int], list[str]] = {}
    src_of: dict[str, int] = {}
    for u, unit in enumerate(prob.units):
        for t, pu in zip(unit.in_tensors, unit.producers, strict=False):
            if pu < 0:
                continue
            for p in parts[u]:
                if p.core != out_core[pu]:
                    readers.setdefault((t, p.core), []).append(unit.node.name)
                    src_of[t] = pu
    transfers: list[TransferPlan] = []
    hop_bits: dict[tuple[int, int], dict[str, int]] = {}
    for tid, ((t, dst), names) in enumerate(sorted(readers.items(), key=lambda kv: (
            prob.units[src_of[kv[0][0]]].index, prob.core_path.index(kv[0][1])))):
        pu = src_of[t]
        route = _route(prob, out_core[pu], dst)
        bits = prob.tensor_bits[t]
        lat = 0
        for a, b in zip(route, route[1:], strict=False):
            hop_bits.setdefault((a, b), {})[t] = bits
            lat += board.link(a, b).latency_cycles
        lanes = out_lanes[pu]
        for k, c in enumerate(route):
            use[c][3] += stream_endpoint_lut(lanes) * (1 if 0 < k < len(route) - 1 else 1)
            if stop and use[c][3] > lut_limit[c]:
                return None
        transfers.append(TransferPlan(tid, t, out_core[pu], dst, "stream", route, None, bits, 0, lat,
                                      False, sorted(set(names))))
    hop_ii = {h: link_cost(sum(ts.values()), board.link(*h).width_bits, 0).ii for h, ts in hop_bits.items()}
    for tr in transfers:
        tr.ii_cycles = max((hop_ii[h] for h in zip(tr.route, tr.route[1:], strict=False)), default=0)
    tid_of = {(tr.tensor, tr.dst_core): tr.id for tr in transfers}
    # The design ii (needed by the FIFO depths): largest block or link-hop ii.
    design_ii = max([max(1, p.cost.ii) for ps in parts for p in ps] + list(hop_ii.values()))
    # -- latency profiles and channels ------------------------------------------------------
    prof: dict[int, tuple[int, int]] = {}  # first and last output beat (docs/cost-model.md, "Latency")
    rows: dict[int, Rows] = {}  # each unit's output, row by row (model.timing)
    cycles: dict[int, int] = {}  # pipeline cycles to each unit's output (fifos.py)
    struct_start: dict[int, float] = {}  # each unit's structural start in frames (fifos.py)
    chans: list[ChannelPlan] = []
    big_fifos: list[tuple[int, int, int, int]] = []  # (channel index, core, lanes, depth)
    unit_of_node: dict[str, int] = {}
    for u, unit in enumerate(prob.units):
        unit_of_node[unit.node.name] = u
        arrivals, in_cycles, starts = [], [], []
        c = max((p.cost for p in parts[u]), key=lambda c: c.ii)
        simd = parts[u][0].simd
        lanes_in = in_lanes(unit.kind, unit.geom, parts[u][0].pe, simd, parts[u][0].px,
                            parts[u][0].cost.dense_groups, parts[u][0].cost.wide_groups)
        in_beats = max(1, unit.geom.in_elems // max(1, lanes_in))
        for t, pu in zip(unit.in_tensors, unit.producers, strict=False):
            cyc = cycles.get(pu, 0)
            tr = transfers[tid_of[(t, parts[u][-1].core)]] if pu >= 0 and out_core[pu] != parts[u][-1].core else None
            if tr is not None:
                cyc += tr.latency_cycles
            if not use_only:
                if pu < 0:  # the testbench offers the graph input one beat per cycle from cycle 0
                    h = hwc(graph.shape(t))[0] if len(graph.shape(t)) == 4 else 1
                    r = input_rows(h, max(1, prob.tensor_bits[t] // 8 // max(1, lanes_in) // h))
                else:
                    r = rows[pu]
                if tr is not None:
                    # A beat holds each hop ceil(beat_bits / width) cycles (LinkCost.profile).
                    beats = max(1, prob.tensor_bits[t] // 8 // max(1, out_lanes[pu]))
                    per_row = max(1, tr.ii_cycles // beats) * max(1, beats // len(r[0]))
                    r = stream_rows_out(r, len(r[0]), per_row, 0, 0, tr.latency_cycles)
                # The FIFO's register stages (model.timing); a producer at other lanes reaches the
                # block through a FIFO, a width converter and a second FIFO (codegen/design.py).
                # A wire (a layout alias) has no FIFO of its own: its reader's FIFO is the one.
                lanes_p = out_lanes[pu] if pu >= 0 else lanes_in
                arrivals.append(r if unit.kind == "wire" else
                                shift(r, FIFO_DEPTH + (CONVERT if lanes_p != lanes_in else 0)))
            fifo = 0 if unit.kind == "wire" else FIFO_DEPTH
            in_cycles.append(cyc + fifo)
            starts.append(struct_start.get(pu, 0.0) + (cyc + fifo) / design_ii)
        g = unit.geom
        if not use_only:
            r_in = latest(arrivals, max(len(x[0]) for x in arrivals)) if arrivals else input_rows(1, in_beats)
        if use_only:
            r_out = None
        elif unit.kind == "wire":
            r_out = r_in
        elif unit.kind == "zeroinsert":  # rows of zeros need no input (model.timing)
            r_out = zeroinsert_rows_out(r_in, g.h, max(1, (g.ho - g.pads[0] - g.pads[2] - 1) // max(1, g.h - 1)),
                                        g.pads, g.wo, max(1, c.ii // (g.ho * g.wo)), c.depth)
        elif unit.kind == "slice" and g.ho * g.wo > 1:  # a crop row by row (model.timing)
            n_in = max(1, c.ii // (g.h * g.w))
            r_out = crop_rows_out(r_in, g.h, -g.pads[0], -g.pads[1], g.ho, g.wo, g.w, n_in,
                                  max(1, n_in * g.co // max(1, g.c)), c.depth)
        elif unit.kind == "depth2space":  # phase rows after the first read the stored row (model.timing)
            r_out = depth2space_rows_out(r_in, g.h, max(1, g.ho // g.h), g.w, max(1, c.ii // (g.h * g.w)), c.depth)
        elif unit.kind == "bilinear":  # output row oy after its lower source row (model.timing)
            need = bilinear_taps(g.h, max(1, g.ho // g.h), unit.node.attrs["coord"])[:, 1]
            r_out = bilinear_rows_out(r_in, g.h, need, max(1, c.ii // g.ho), c.depth)
        elif c.window is not None:  # sliding-window generator -> mvu / vvu, row by row
            r_out = window_rows_out(resample(r_in, g.h), c.window, c.depth)
        elif c.bands > 1:  # an off-chip conv a band of rows at a time (model.band)
            r_out = banded_rows_out(r_in, g, parts[u][0].pe, parts[u][0].simd, c.bands, prob.offchip_memory,
                                    c.out_slots)
        elif g.ho * g.wo <= 1 or c.fill >= 1.0:  # needs the whole input: one output row
            a_out, b_out = out_profile(int(r_in[0][0]), int(r_in[1][-1]), in_beats, c.lead, c.span,
                                       c.tail, c.fill, c.depth)
            r_out = np.array([a_out]), np.array([max(a_out, b_out)])
        else:  # pixel by pixel at ii / Ho cycles per row
            r_out = stream_rows_out(r_in, g.ho, max(1, c.ii // g.ho), c.lead, c.tail, c.depth)
        if len(parts[u]) > 1:
            route = _route(prob, parts[u][0].core, parts[u][-1].core)
            gather = sum(board.link(x, y).latency_cycles for x, y in zip(route, route[1:], strict=False))
            # each part's FIFO into the concat, through a width converter where its lanes differ;
            # a part on another core also passes its output FIFO before the link
            to_cat = FIFO_DEPTH * (2 if gather else 1) + (
                CONVERT if any(p.out_lanes != out_lanes[u] for p in parts[u]) else 0)
            # the last pixel's beats of the later parts leave after the first part's (`turn_depth`)
            to_cat += sum(-(-(p.co_end - p.co_begin) // out_lanes[u]) for p in parts[u][1:])
            if not use_only:
                r_out = shift(r_out, gather + to_cat)
        else:
            gather = 0
        if not use_only:
            rows[u] = r_out
            prof[u] = (int(r_out[0][0]), max(int(r_out[1][-1]), int(r_out[0][0])))
        # Pipeline cycles to this output: latest input (FIFO register, links) + depth + gather.
        cycles[u] = max(in_cycles, default=1) + (0 if unit.kind == "wire" else c.depth) + gather
        if c.window is not None:  # a frame's padding delays the output in steady state (fifos.py)
            cycles[u] += pad_run(g, lanes_in)
        # The structural start, as `problem._start` but from the plan's own blocks: an
        # off-chip block needs its whole input frame (fill 1) and then computes every fold
        # before its first output (its lead after the frame), which a reconvergent path
        # around it must hold (fifos.py).
        s_in = max((struct_start.get(pu, 0.0) for pu in unit.producers), default=0.0)
        struct_start[u] = s_in + (0.0 if unit.kind == "wire" else c.fill)
        if c.weights == "ddr":
            cycles[u] += max(0, c.lead + 1 - in_beats)
        lanes_of = [out_lanes[pu] if pu >= 0 else lanes_in for pu in unit.producers]
        beats_of = [max(1, prob.tensor_bits[t] // 8 // ln) for t, ln in zip(unit.in_tensors, lanes_of, strict=True)]
        depths = input_depths(beats_of, starts, unit.geom.h)
        for k, (t, pu) in enumerate(zip(unit.in_tensors, unit.producers, strict=False)):
            bits = prob.tensor_bits[t]
            lanes = lanes_of[k]
            src = prob.units[pu].node.name if pu >= 0 else "@input"
            beats = beats_of[k]
            depth = depths[k]
            for p in parts[u]:
                if pu < 0:
                    kind, tid, src_core = "host", None, None
                elif out_core[pu] == p.core:
                    kind, tid, src_core = "fifo", None, out_core[pu]
                else:
                    kind, tid, src_core = "stream", tid_of[(t, p.core)], out_core[pu]
                # a matrix-vector unit stalls its input during folds 1..NF-1 (fifos.py)
                part_lanes = in_lanes(unit.kind, unit.geom, p.pe, p.simd, p.px, p.cost.dense_groups,
                                      p.cost.wide_groups)  # the block's input lanes
                d = max(depth, stall_depth(unit.kind, unit.geom, p.pe, lanes))
                if p.cost.window is not None:  # the window generator's padding writes (fifos.py)
                    d = max(d, pad_depth(unit.geom, part_lanes, lanes, p.cost.ii))
                if unit.kind == "zeroinsert":  # rows of zeros take no input (fifos.py)
                    d = max(d, zeroinsert_depth(unit.geom, p.pe, lanes, p.cost.ii))
                if unit.kind == "eltwise2":  # a broadcast operand waits for its repeat unit (fifos.py)
                    d = max(d, broadcast_depth(beats, max(1, unit.geom.out_elems // max(1, lanes))))
                if unit.kind == "bilinear":  # the ring's refusals (fifos.py)
                    d = max(d, ring_depth(unit.geom, part_lanes))
                if unit.kind == "concat":  # the other inputs' turns (fifos.py)
                    d = max(d, turn_depth(_pixel_channels(prob, unit), k, unit.geom.h * unit.geom.w, part_lanes))
                if pu >= 0:  # a window block's row burst before a narrowing converter (fifos.py)
                    d = max(d, narrowing_depth(prob.units[pu].geom, parts[pu][-1].cost.window is not None, lanes,
                                               part_lanes))
                fc = fifo_cost(lanes, d)
                if fifo_in_uram(lanes, d) and board.cores[p.core].uram_limit > 0:
                    big_fifos.append((len(chans), p.core, lanes, d))
                use[p.core][1] += fc.bram18
                use[p.core][3] += fc.lut + width_converter_lut(lanes, part_lanes)
                if stop and use[p.core][3] > lut_limit[p.core]:
                    return None
                ii = transfers[tid].ii_cycles if tid is not None else beats
                chans.append(ChannelPlan(t, src, unit.node.name, src_core, p.core, kind, tid, d,
                                         lanes, bits, ii, False, fc.bram18))
    fifos_to_uram(prob, use, chans, big_fifos)
    core_ii = {c.id: max((p.cost.ii for ps in parts for p in ps if p.core == c.id), default=0) for c in board.cores}
    ddr_fifo_bytes: dict[int, int] = {}
    if prob.ddr_fifos and prob.offchip_memory is not None:
        ddr_fifo_bytes = fifos_to_ddr(prob, use, chans, core_ii)
    fifos_to_lutram(prob, use, chans)
    if use_only:
        return {k: np.array(x, dtype=np.int64) for k, x in use.items()}
    for t in graph.outputs:
        for u, unit in enumerate(prob.units):
            if unit.out_tensor == t:
                chans.append(ChannelPlan(t, unit.node.name, "@output", out_core[u], None, "host", None,
                                         DEFAULT_DEPTH, out_lanes[u], prob.tensor_bits[t],
                                         max(1, prob.tensor_bits[t] // 8 // out_lanes[u]), False, 0))
    # -- nodes and cores --------------------------------------------------------------------
    nodes: list[NodePlan] = []
    fused_core = {}
    for u, unit in enumerate(prob.units):
        ps = parts[u]
        for f in unit.fused:
            fused_core[f] = (unit.node.name, out_core[u], out_lanes[u])
    for n in graph.nodes:
        if n.host:
            nodes.append(NodePlan(n.name, n.op, "host", None, 1, 1, 0, 0, 0, 0, 0, 0))
        elif n.name in fused_core:
            owner, core, pe = fused_core[n.name]
            nodes.append(NodePlan(n.name, n.op, "fused", core, pe, pe, 0, 0, 0, 0, 0, 0, owner))
        else:
            u = unit_of_node[n.name]
            ps = parts[u]
            split = None
            if len(ps) > 1:
                split = [SplitPart(p.core, p.co_begin, p.co_end, p.pe, p.simd, p.cost.ii, p.cost.dsp,
                                   p.cost.bram18, p.cost.uram, p.cost.lut, p.cost.weights, p.mmv,
                                   p.cost.offchip_bytes, _pack(prob, prob.units[u].kind, p),
                                   "lut" if p.cost.lut_requant else "dsp", p.px) for p in ps]
            nodes.append(NodePlan(
                n.name, n.op, prob.units[u].kind, ps[0].core, ps[0].pe, ps[0].simd,
                max(p.cost.ii for p in ps), max(p.cost.depth for p in ps),
                sum(p.cost.dsp for p in ps), sum(p.cost.bram18 for p in ps),
                sum(p.cost.uram for p in ps), sum(p.cost.lut for p in ps), None, split,
                _placement([p.cost.weights for p in ps]), ps[0].mmv,
                sum(p.cost.offchip_bytes for p in ps), _node_pack([_pack(prob, prob.units[u].kind, p) for p in ps]),
                "lut" if any(p.cost.lut_requant for p in ps) else "dsp", ps[0].cost.in_slots, ps[0].cost.in_stage,
                ps[0].px, ps[0].po, ps[0].cost.bands, ps[0].cost.short_ring, ps[0].cost.out_slots,
                ps[0].cost.dense_groups, ps[0].cost.wide_groups, ps[0].cost.ring_uram))
    cores = []
    for c in board.cores:
        names = [nd.name for nd in nodes if nd.block not in ("host", "fused") and c.id in (
            [p.core for p in nd.split] if nd.split else [nd.core])]
        d = use[c.id]
        mem = board.home_memory(c.id)
        lim = prob.limits(c.id)
        cores.append(CorePlan(c.id, c.name, names, int(d[0]), int(d[1]), int(d[2]), int(d[3]),
                              c.dsp_limit, c.bram18_limit, c.uram_limit, c.lut_limit, int(core_ii[c.id]),
                              None if mem is None else mem.name, int(d[4]), int(lim[4]),
                              sum(p.cost.offchip_bytes for ps in parts for p in ps if p.core == c.id)
                              + ddr_fifo_bytes.get(c.id, 0)))
    # -- design ii, bottleneck, latency -------------------------------------------------------
    cands = [(nd.ii_cycles, nd.name) for nd in nodes if nd.block not in ("host", "fused")]
    cands += [(ii, f"link:{a}-{b}") for (a, b), ii in sorted(hop_ii.items())]
    ii, bottleneck = max(cands, key=lambda x: (x[0], x[1] if False else 0))
    ii = max(1, ii)
    latency = max((prof[u][1] for u, unit in enumerate(prob.units) if unit.out_tensor in graph.outputs),
                  default=max(p[1] for p in prof.values()))
    latency += FIFO_DEPTH  # the output FIFO
    fps = board.clock_mhz * 1e6 / ii
    n_cross = sum(len(names) for names in readers.values())
    off_before = sum(2 * prob.tensor_bits[t] // 8 * len(names) for (t, _), names in readers.items())
    optimizer = {
        "buffers_before": n_cross, "buffers_after": 0,
        "barriers_before": n_cross, "barriers_after": 0,
        "transfers_before": n_cross, "transfers_after": len(transfers),
        "offchip_bytes_per_frame_before": off_before, "offchip_bytes_per_frame_after": 0,
        "link_bytes_per_frame_after": sum(sum(ts.values()) for ts in hop_bits.values()) // 8,
        "fifos_resized": sum(1 for ch in chans if ch.depth != DEFAULT_DEPTH),
        "removed": _removed(readers, transfers, prob),
    }
    return Plan(
        model=graph.name, strategy=strategy, objective=objective, ii_cycles=int(ii),
        bottleneck=bottleneck, fps=fps, latency_cycles=int(latency),
        latency_us=latency / board.clock_mhz, optimal=False, optimality_note="",
        search_seconds=0.0, board=board.name, clock_mhz=board.clock_mhz,
        core_order=list(prob.core_path), cores=cores, nodes=nodes, channels=chans,
        transfers=transfers, host_ops=list(prob.host_ops), optimizer=optimizer)


def _pixel_channels(prob, unit) -> list[int]:
    """Elements of one pixel of each input of ``unit`` (its channels; a 2-D tensor: all)."""
    pixels = max(1, unit.geom.h * unit.geom.w)
    return [max(1, prob.tensor_bits[t] // 8 // pixels) for t in unit.in_tensors]


def _placement(where: list[str | None]) -> str | None:
    """A node's weight placement: its parts' (URAM wins when parts differ)."""
    for w in ("ddr", "uram", "bram", "lut"):
        if w in where:
            return w
    return None


def _removed(readers, transfers, prob) -> list[str]:
    out = []
    for (t, dst), names in sorted(readers.items()):
        if len(names) > 1:
            out.append(f"tensor {t} to core {dst}: {len(names)} reader edges share one transfer "
                       f"({len(names) - 1} duplicate crossing(s) removed)")
    for tr in transfers:
        out.append(f"tensor {tr.tensor} core {tr.src_core}->{tr.dst_core}: off-chip buffer and barrier "
                   f"replaced by a stream over route {tr.route}")
    return out
