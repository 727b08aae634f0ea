"""The partitioning problem: blocks in topological order with folding tables, the core path.

A *unit* is one hardware block: a fabric node plus the Relu/Relu6 fused into it. Units are
numbered in the graph's topological order; partitions are contiguous segments of that
order laid along `core_path`, so every channel goes forward along the path (the quotient
graph of cores is acyclic by construction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np

from bbgrap_hls.board import Board, Core
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.model import (
    FUSABLE_ACTS,
    WEIGHTED,
    block_cost,
    block_kind,
    foldings,
    in_lanes,
    node_geometry,
    pairable,
)
from bbgrap_hls.model.geometry import Geometry, hwc
from bbgrap_hls.quant.build import FUSING_KINDS
from bbgrap_hls.search.fifos import (
    pad_run,
)
from bbgrap_hls.search.input_fifos import _Inputs  # noqa: F401
from bbgrap_hls.search.prefetch import prefetch
from bbgrap_hls.search.tables import BW_CYCLES, N_RES, RES, Table, _offchip_ok, _table  # noqa: F401

DSP_PACKING = True
"""Default of the planner's ``dsp_packing`` option (`build_problem`, `make_plan`, ``--dsp-packing``)."""
LUT_MACS = True
"""Default of the planner's ``lut_macs`` option (`build_problem`, `make_plan`, ``--lut-macs``)."""
PADDED_FOLDS = True
"""Default of the planner's ``padded_folds`` option (`build_problem`, `make_plan`, ``--padded-folds``)."""
DDR_STAGES = True
"""Default of the planner's ``ddr_stages`` option (`build_problem`, `make_plan`, ``--ddr-stages``)."""
DDR_FIFOS = True
"""Default of the planner's ``ddr_fifos`` option (`build_problem`, `make_plan`, ``--ddr-fifos``): on
since the RTL twin runs a skip FIFO in board memory at the planned ii (tests/test_ddr_fifo_twin.py);
it acts only where a core's built plan is over its BRAM18, so plans that fit without it do not change."""
ROW_BANDS = True
"""Default of the planner's ``row_bands`` option (`build_problem`, `make_plan`, ``--row-bands``): an
off-chip conv may be computed a band of output rows at a time (`model.band`), its frame buffers a
band's; it only adds rows to the tables of plans with off-chip weights."""


@dataclass
class Unit:
    """One block: ``node`` plus the activations fused into it."""

    index: int
    node: Node
    kind: str
    geom: Geometry
    fused: list[str]
    out_tensor: str
    in_tensors: list[str]
    producers: list[int]  # unit index per input, -1 for a graph input or a host op
    table: Table
    split_tables: dict[int, Table] = field(default_factory=dict)
    part_tables: dict[int, Table] = field(default_factory=dict)  # uneven parts: channels -> table
    granule: int = 0    # uneven parts' channel counts are multiples of it (0: no uneven split)
    start: float = 0.0  # structural start of its output in frames (fifos.py), links excluded
    cycles: int = 0     # pipeline cycles from the graph input to its output, links excluded


@dataclass
class Problem:
    """Everything the strategies share for one graph on one board."""

    graph: Graph
    board: Board
    units: list[Unit]
    host_ops: list[str]
    fused_into: dict[str, str]
    core_path: list[int]
    cut_bits: np.ndarray  # cut_bits[j]: bits/frame crossing between units j-1 and j
    tensor_bits: dict[str, int]
    parallel_window: bool = False
    pixel_copies: bool = True
    offchip_memory: tuple[float, int, int] | None = None  # off-chip weight rows: (rate, latency, beat)
    dsp_packing: bool = False  # conv/dense with pe >= 2: two output lanes per DSP48E2
    lut_macs: bool = False  # conv/dense on chip and depthwise convs may compute their products in LUTs
    lut_requant: bool = False  # requantisers (and add/mul lanes) may build their products from LUTs
    padded_folds: bool = False  # conv/dense may take a pe that does not divide Co (`padded_lanes`)
    ddr_stages: bool = True  # off-chip blocks may take one input slot behind a DDR frame stage
    ddr_fifos: bool = False  # whole-frame FIFOs may go to board memory (`fifo_memory.fifos_to_ddr`)
    pixel_pairs: bool = False  # convs and Adds may stream two pixels a beat (`kinds.pair_modes`)
    row_bands: bool = True  # off-chip convs may compute bands of output rows (`model.band`)
    short_rings: bool = False  # window blocks may keep a short window ring (`Table.ring`)
    out1: bool = False  # off-chip blocks may keep one output frame slot (`Table.out1`)
    # `build._cached_parts`: a block's parts by core and row (each copy of a problem starts empty)
    parts: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # `dp.SegmentDP`: every unit table's rows stacked, with the tables they came from
    unit_rows: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def m(self) -> int:
        return len(self.units)

    def core(self, k: int) -> Core:
        return self.board.cores[k]

    def limits(self, k: int) -> np.ndarray:
        """Core ``k``'s limits in `RES` order."""
        c = self.board.cores[k]
        bw = math.floor(BW_CYCLES * self.board.offchip_share(k)) if self.offchip_memory else 0
        return np.array([c.dsp_limit, c.bram18_limit, c.uram_limit, c.lut_limit, bw], dtype=np.int64)

    def link_width(self, a: int, b: int) -> int | None:
        link = self.board.link(a, b)
        return None if link is None else link.width_bits


def core_path(board: Board) -> list[int]:
    """The longest simple path of linked cores (ties: lexicographically smallest).

    Boards in a chain give the chain; a ring gives the ring opened at core 0. Cores off
    the path are not used by the partitioner.
    """
    n = len(board.cores)
    best: list[int] = [0]

    def dfs(path: list[int], seen: set[int]) -> None:
        nonlocal best
        if len(path) > len(best):
            best = list(path)
        if len(best) == n:
            return
        for nb in board.neighbours(path[-1]):
            if nb not in seen:
                seen.add(nb)
                path.append(nb)
                dfs(path, seen)
                path.pop()
                seen.discard(nb)

    for start in range(n):
        dfs([start], {start})
        if len(best) == n:
            break
    return best


def build_problem(graph: Graph, board: Board, split_candidates: int = 8,
                  parallel_window: bool = True, pixel_copies: bool = True,
                  offchip_weights: bool = False, dsp_packing: bool = DSP_PACKING,
                  lut_macs: bool = LUT_MACS, lut_requant: bool = False,
                  padded_folds: bool = PADDED_FOLDS, ddr_stages: bool = DDR_STAGES,
                  extras: bool = False, ddr_fifos: bool = DDR_FIFOS, pixel_pairs: bool = False,
                  row_bands: bool = ROW_BANDS, short_rings: bool = False, out1: bool = False) -> Problem:
    """Units, folding tables and cut sizes of ``graph`` on ``board``.

    Args:
        graph: canonical graph.
        board: the board.
        split_candidates: how many of the heaviest conv/dense units may be split.
        parallel_window: allow conv ``simd = C·j`` with ``j | K`` (docs/cost-model.md).
        pixel_copies: allow a conv up to `MAX_COPIES` copies of its matrix-vector unit
            (docs/cost-model.md, "Pixel copies").
        offchip_weights: let conv/dense blocks keep their weights in their core's board
            memory (docs/cost-model.md, "Off-chip weights"), its bandwidth a planned resource.
        dsp_packing: conv/dense blocks with ``pe >= 2`` on chip pack two output lanes per
            DSP48E2 (docs/cost-model.md, "DSP").
        lut_macs: conv/dense blocks on chip and depthwise convs may compute their products in
            LUTs instead (docs/cost-model.md, "LUT multipliers"), chosen per block by the search.
        lut_requant: the requantisers of LUT-product conv/dense/dwconv rows and of the other
            requantising kinds may build their products from LUTs (rows without any DSP;
            docs/cost-model.md, "LUT requantisers").
        padded_folds: conv/dense blocks on chip may take a ``pe`` that does not divide
            ``Co``, the last neuron fold padded (`padded_lanes`; docs/cost-model.md, "Padded
            folds"); not split parts, pixel copies or off-chip weights.
        ddr_stages: with ``offchip_weights``, an off-chip conv/dense may take one input frame
            slot behind a DDR frame stage (docs/cost-model.md, "DDR frame stage").
        ddr_fifos: with ``offchip_weights``, a FIFO of a frame or more may go to the core's
            board memory where the core is over its BRAM18 (`fifo_memory.fifos_to_ddr`;
            docs/cost-model.md, "Skip FIFOs in board memory").
        pixel_pairs: convs with a window generator and per-tensor Adds/Muls on images of even
            width also have rows at two pixels a beat (`Geometry.pairs`, `kinds.pair_modes`).
        row_bands: with ``offchip_weights``, an off-chip conv may also be computed a band of
            output rows at a time behind a band splitter (`model.band`; docs/cost-model.md,
            "Row bands"); without, its band rows are left out of its table.
        short_rings: window blocks (conv with a window, one copy, one pixel a beat; depthwise
            conv; pools) also have each on-chip folding with a short window ring where that
            takes fewer BRAM18 (docs/cost-model.md, "Short window rings").
        out1: with ``offchip_weights``, each off-chip conv/dense row without a DDR frame stage
            also comes with one output frame slot where that takes fewer BRAM18 or URAM
            (docs/cost-model.md, "One output slot").
        extras: with ``ddr_stages``, also build the off-chip blocks' one-input-slot rows
            (`Table.extra`) with the tables (in parallel where it can), for a caller that will
            run the integer program (it asks for them all); else they are built when asked.

    Raises:
        UnsupportedError: a node has no cost model (names the node).
    """
    consumers = graph.consumers()
    fused_into: dict[str, str] = {}
    host_ops = [n.name for n in graph.nodes if n.host]
    fabric = [n for n in graph.nodes if not n.host]
    kinds = {n.name: block_kind(n, graph) for n in fabric}
    # Fuse a Relu/Relu6 that is the only reader of its producer's output where the quantiser
    # folds it into the producer's clamp (Conv, depthwise too, Dense, ChannelAffine, Add, Sub):
    # the generated design has no block for it, and the tensor crossing cores is its output.
    fuse_next: dict[str, Node] = {}
    for n in fabric:
        if n.op in FUSING_KINDS:
            readers = consumers.get(n.outputs[0], [])
            if (len(readers) == 1 and readers[0].op in FUSABLE_ACTS and not readers[0].host
                    and n.outputs[0] not in graph.outputs):
                fuse_next[n.name] = readers[0]
                fused_into[readers[0].name] = n.name
    units: list[Unit] = []
    unit_of_tensor: dict[str, int] = {}
    use_uram = any(c.uram_limit > 0 for c in board.cores)
    mem = offchip_memory(board) if offchip_weights else None
    # the units without their tables first (a table needs its inputs' structural starts
    # only), then every table at once (`prefetch`: half in a second process where it can run)
    specs: list[SimpleNamespace] = []
    for n in fabric:
        if n.name in fused_into:
            continue
        g = node_geometry(n, graph)
        kind = kinds[n.name]
        if pixel_pairs and pairable(kind, g):
            g = replace(g, pairs=2)
        acts = graph.act_inputs(n) or [i for i in n.inputs if i][:1]
        fused = [fuse_next[n.name].name] if n.name in fuse_next else []
        out = fuse_next[n.name].outputs[0] if fused else n.outputs[0]
        producers = [unit_of_tensor.get(t, -1) for t in acts]
        ins = _inputs(graph, specs, acts, producers)
        start, cycles = _start(kind, g, ins, parallel_window)
        specs.append(SimpleNamespace(
            node=n, kind=kind, geom=g, fused=fused, out_tensor=out, in_tensors=list(acts), producers=producers,
            start=start, cycles=cycles, call=(kind, g, ins, parallel_window, use_uram, pixel_copies, mem, dsp_packing,
                                              lut_macs, lut_requant, padded_folds, short_rings, out1, row_bands)))
        unit_of_tensor[out] = len(specs) - 1
    prefetch([sp.call for sp in specs], extras=extras and ddr_stages and mem is not None)
    for sp in specs:
        fields = vars(sp)
        t = _table(*fields.pop("call"))  # (without its row-band rows unless ``row_bands``)
        if t.fifo_ddr.any():  # the integer program's rows alone (`Table.more`)
            t, more = t.subset(~t.fifo_ddr), t.subset(t.fifo_ddr)
            t.more = more if ddr_fifos else None
        units.append(Unit(index=len(units), table=t, **fields))
    if not units:
        raise BadInputError(f"graph '{graph.name}': no node runs on the fabric (all are host ops)")
    tensor_bits = {t: 8 * _elems(graph, t) for u in units for t in [u.out_tensor, *u.in_tensors]}
    # cut_bits[j]: each tensor produced by a unit < j and read by a unit >= j, counted once.
    m = len(units)
    last_use = {}
    for u in units:
        for p in u.producers:
            if p >= 0:
                last_use[p] = max(last_use.get(p, -1), u.index)
    diff = np.zeros(m + 2, dtype=np.int64)
    for p, last in last_use.items():
        bits = tensor_bits[units[p].out_tensor]
        diff[p + 1] += bits
        diff[last + 1] -= bits
    cut = np.cumsum(diff)[: m + 1]
    prob = Problem(graph, board, units, host_ops, fused_into, core_path(board), cut, tensor_bits,
                   parallel_window, pixel_copies, mem, dsp_packing, lut_macs, lut_requant, padded_folds,
                   ddr_stages, ddr_fifos, pixel_pairs, row_bands, short_rings, out1)
    _add_split_tables(prob, split_candidates, use_uram)
    return prob


def offchip_memory(board: Board) -> tuple[float, int, int] | None:
    """The board memory as an off-chip weight reader sees it: ``(rate, latency, beat)``, a
    port's bytes per cycle (at most a core's share), the read latency in cycles and the
    port's bytes per beat; the slowest over the cores' home memories (one table serves every
    core). None: no core reaches a memory."""
    seen = []
    for c in board.cores:
        mem = board.home_memory(c.id)
        if mem is not None:
            beat = mem.port_width_bits // 8
            seen.append((min(float(beat), board.offchip_share(c.id)), mem.latency_cycles, beat))
    if not seen:
        return None
    return min(r for r, _, _ in seen), max(lat for _, lat, _ in seen), min(b for _, _, b in seen)


def _start(kind: str, g: Geometry, ins: _Inputs, parallel_window: bool) -> tuple[float, int]:
    """Structural start (frames) and pipeline cycles of a block's output (fifos.py): its
    inputs' latest start plus its fill (the input pixels it needs before its first output);
    cycles add one FIFO register and the block's depth at its most parallel folding (an
    upper bound)."""
    s_in = max(ins.starts, default=0.0)
    c_in = max(ins.cycles, default=0) + 1
    if kind == "wire":
        return s_in, c_in - 1
    pe, simd = foldings(kind, g, parallel_window)[-1]
    c = block_cost(kind, g, pe, simd)
    run = pad_run(g, in_lanes(kind, g, pe, simd)) if c.window is not None else 0  # fifos.py
    return s_in + c.fill, c_in + c.depth + run


def _inputs(graph: Graph, units: list, tensors: list[str], producers: list[int]) -> _Inputs:
    """A block's inputs as its tables need them (their producers already built: `Unit`s, or
    anything with their ``start`` and ``cycles``)."""
    return _Inputs(tuple(_elems(graph, t) for t in tensors),
                   tuple(units[p].start if p >= 0 else 0.0 for p in producers),
                   tuple(units[p].cycles if p >= 0 else 0 for p in producers))


def _elems(graph: Graph, name: str) -> int:
    h, w, c = hwc(graph.shape(name))
    return h * w * c


def _add_split_tables(prob: Problem, how_many: int, use_uram: bool) -> None:
    """Tables for the ``how_many`` heaviest conv/dense units split over k cores: equal
    parts (``split_tables[k]``, ``Co/k`` channels each) and uneven parts (``part_tables[c]``
    for every multiple ``c`` of the unit's `granule` below ``Co``)."""
    n = len(prob.core_path)
    if n < 2:
        return
    # (a grouped conv is not split: its parts would need whole groups; docs/cost-model.md, "Grouped convs")
    weighted = [u for u in prob.units if u.kind in WEIGHTED and not u.geom.grouped]
    # heaviest first by the slowest on-chip folding (off-chip rows include deliberately
    # slowed ones, which say nothing about the work)
    def slowest_on_chip(u: Unit) -> int:
        """Row of the unit's slowest on-chip folding (its first row, off-chip rows aside)."""
        on = np.nonzero(~u.table.ddr)[0]
        return int(on[0]) if len(on) else 0

    weighted.sort(key=lambda u: (-int(u.table.ii[slowest_on_chip(u)]), u.index))
    lim = prob.limits(prob.core_path[0])
    # units that do not fit a core on chip even at their slowest folding must be splittable
    # (an off-chip row that fits does not count: the search may still want them on chip)
    must = [u for u in weighted if np.any(u.table.res[slowest_on_chip(u)] > lim)]
    chosen = {u.index: u for u in weighted[:how_many] + must}
    calls: dict[tuple[int, str, int], tuple] = {}  # (unit, "split" k parts or "part" of c channels): `_table` call
    for u in chosen.values():
        ins = _inputs(prob.graph, prob.units, u.in_tensors, u.producers)
        for k in range(2, n + 1):
            if u.geom.co % k == 0:
                calls[(u.index, "split", k)] = (
                    u.kind, _replace_co(u.geom, u.geom.co // k), ins, prob.parallel_window, use_uram,
                    prob.pixel_copies, prob.offchip_memory, prob.dsp_packing, prob.lut_macs, prob.lut_requant,
                    False, False, False, False)  # (no padded folds, short rings, one output slot nor bands)
        u.granule = granule(u.geom.co)
        for c in range(u.granule, u.geom.co, u.granule):
            # The block alone: the gather's rate depends on all the parts (`gather_ii`).
            # (no pixel copies nor LUT multipliers: they would double or triple the tables,
            # half of planning time, for a rare combination)
            calls[(u.index, "part", c)] = (u.kind, _replace_co(u.geom, c), ins, prob.parallel_window, use_uram,
                                           False, prob.offchip_memory, prob.dsp_packing)
    prefetch(list(calls.values()))
    for (i, what, k), call in calls.items():
        u = chosen[i]
        t = _table(*call)  # (no row bands: a split part is computed whole-frame, `SplitPart` has none)
        if what == "split":
            # The gather on the last core streams whole parts per beat at most (the
            # concat's lanes divide each part's channels): k beats per pixel.
            t.ii = np.maximum(t.ii, gather_ii(u.geom, [u.geom.co // k] * k))
            u.split_tables[k] = t
        else:
            u.part_tables[k] = t


UNEVEN_SIZES = 16
"""At most this many channel counts for the parts of an uneven split (`granule`)."""


def granule(co: int) -> int:
    """The channel step of uneven split parts: the least divisor ``d`` of ``co`` with
    ``co/d <= UNEVEN_SIZES`` (128 channels: parts of 8, 16, ... 120)."""
    return next(d for d in range(1, co + 1) if co % d == 0 and co // d <= UNEVEN_SIZES)


def gather_ii(g: Geometry, parts: list[int]) -> int:
    """Cycles per frame of concatenating parts of these channel counts: per pixel,
    ``Co/gcd(parts)`` beats (the lanes must divide every part; ``k`` for ``k`` equal parts)."""
    return g.ho * g.wo * (g.co // math.gcd(*parts))


def _replace_co(g: Geometry, co: int) -> Geometry:
    return replace(g, co=co, pairs=min(g.pairs, 1))  # split parts: their outputs one pixel a beat
