"""The partitioning problem: blocks in topological order with folding tables, the core path.

A *unit* is one hardware block: a fabric node plus the Relu/Relu6 fused into it. Units are
numbered in the graph's topological order; partitions are contiguous segments of that
order laid along `core_path`, so every channel goes forward along the path (the quotient
graph of cores is acyclic by construction).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.board import Board, Core
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.model import FUSABLE_ACTS, WEIGHTED, block_cost, block_kind, foldings, node_geometry
from bbgrap_hls.model.geometry import Geometry, hwc
from bbgrap_hls.model.links import fifo_cost, width_converter_lut

RES = ("dsp", "bram18", "lut")
"""Resources the search balances (URAM is unused by the model: weights stay in BRAM)."""


@dataclass
class Table:
    """All legal foldings of a unit (or of a split part) with their costs, as arrays."""

    pe: np.ndarray
    simd: np.ndarray
    ii: np.ndarray
    res: np.ndarray  # (n_foldings, 3): dsp, bram18, lut (block + its input FIFOs/converters)

    def __len__(self) -> int:
        return len(self.ii)


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


def _table(kind: str, g: Geometry, n_inputs: int) -> Table:
    rows = []
    for pe, simd in foldings(kind, g):
        c = block_cost(kind, g, pe, simd)
        fifo = fifo_cost(simd, 2)
        # Charge each input a default FIFO and a worst-case converter (from 1 lane).
        lut = c.lut + n_inputs * (fifo.lut + width_converter_lut(1, simd) if kind != "wire" else 0)
        rows.append((pe, simd, c.ii, c.dsp, c.bram18 + n_inputs * fifo.bram18, lut))
    a = np.array(rows, dtype=np.int64)
    order = np.lexsort((a[:, 3] + a[:, 4] + a[:, 5], a[:, 2]))[::-1]  # ii descending
    a = a[order]
    return Table(pe=a[:, 0], simd=a[:, 1], ii=a[:, 2], res=a[:, 3:6].copy())


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

    @property
    def m(self) -> int:
        return len(self.units)

    def core(self, k: int) -> Core:
        return self.board.cores[k]

    def limits(self, k: int) -> np.ndarray:
        c = self.board.cores[k]
        return np.array([c.dsp_limit, c.bram18_limit, c.lut_limit], dtype=np.int64)

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


def build_problem(graph: Graph, board: Board, split_candidates: int = 8) -> Problem:
    """Units, folding tables and cut sizes of ``graph`` on ``board``.

    Raises:
        UnsupportedError: a node has no cost model (names the node).
    """
    consumers = graph.consumers()
    fused_into: dict[str, str] = {}
    host_ops = [n.name for n in graph.nodes if n.host]
    fabric = [n for n in graph.nodes if not n.host]
    kinds = {n.name: block_kind(n, graph) for n in fabric}
    # Fuse a Relu/Relu6 that is the only reader of a Conv/Dense output.
    fuse_next: dict[str, Node] = {}
    for n in fabric:
        if kinds[n.name] in WEIGHTED:
            readers = consumers.get(n.outputs[0], [])
            if (len(readers) == 1 and readers[0].op in FUSABLE_ACTS and not readers[0].host
                    and n.outputs[0] not in graph.outputs):
                fuse_next[n.name] = readers[0]
                fused_into[readers[0].name] = n.name
    units: list[Unit] = []
    unit_of_tensor: dict[str, int] = {}
    for n in fabric:
        if n.name in fused_into:
            continue
        g = node_geometry(n, graph)
        kind = kinds[n.name]
        acts = graph.act_inputs(n) or [i for i in n.inputs if i][:1]
        fused = [fuse_next[n.name].name] if n.name in fuse_next else []
        out = fuse_next[n.name].outputs[0] if fused else n.outputs[0]
        u = Unit(index=len(units), node=n, kind=kind, geom=g, fused=fused, out_tensor=out,
                 in_tensors=list(acts), producers=[unit_of_tensor.get(t, -1) for t in acts],
                 table=_table(kind, g, len(acts)))
        units.append(u)
        unit_of_tensor[out] = u.index
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
    prob = Problem(graph, board, units, host_ops, fused_into, core_path(board), cut, tensor_bits)
    _add_split_tables(prob, split_candidates)
    return prob


def _elems(graph: Graph, name: str) -> int:
    h, w, c = hwc(graph.shape(name))
    return h * w * c


def _add_split_tables(prob: Problem, how_many: int) -> None:
    """Tables for the ``how_many`` heaviest conv/dense units split over k cores."""
    n = len(prob.core_path)
    if n < 2:
        return
    weighted = [u for u in prob.units if u.kind in WEIGHTED]
    weighted.sort(key=lambda u: (-int(u.table.ii[0]), u.index))
    lim = prob.limits(prob.core_path[0])
    must = [u for u in weighted if np.any(u.table.res[0] > lim)]
    chosen = {u.index: u for u in weighted[:how_many] + must}
    for u in chosen.values():
        for k in range(2, n + 1):
            if u.geom.co % k == 0:
                u.split_tables[k] = _table(u.kind, _replace_co(u.geom, u.geom.co // k), len(u.in_tensors))


def _replace_co(g: Geometry, co: int) -> Geometry:
    from dataclasses import replace

    return replace(g, co=co)
