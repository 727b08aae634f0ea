"""What couples the rows of different blocks in `ilp.fit_rows`' programs, beyond each row's
own resources: the reconvergent FIFOs that off-chip rows lengthen (`Lag`, `lags`) and the
one-input-slot rows that need an off-chip producer (`Pair`, `pairs`; docs/cost-model.md "One
input slot")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bbgrap_hls.model import block_cost, foldings
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.problem import N_RES, RES, Problem
from bbgrap_hls.search.tables import Table


@dataclass(frozen=True)
class Lag:
    """A reconvergent FIFO's frames of lag beyond what its reader's rows charge (`fit_rows`):
    at least the sum, over the chosen rows, of ``weights`` (pairs: a table's index in the
    program, a weight per row of that table), each frame in one of the memories of
    ``per_frame`` (a row of resources in `RES` order per kind of memory: BRAM18, URAM)."""

    per_frame: np.ndarray
    weights: list[tuple[int, np.ndarray]]


@dataclass(frozen=True)
class Pair:
    """A block that may take a row with one input frame slot (`Table.in1`, table ``reader``
    in the program) and its one producer (table ``producer``), over a tensor of ``elems``
    elements a frame. Such a row needs the producer off chip with two output slots (the next
    frame waits there, whole, while the reader computes; docs/cost-model.md "One input
    slot") and fast enough: the row's ii assumes its frame arrives a beat a cycle
    (``elems / simd`` cycles), a producer of ``pe`` lanes takes ``elems / pe``, and the
    difference adds to the reader's ii (at most: `offchip_mvu` ``in_cycles``), which must
    stay within the target."""

    reader: int
    producer: int
    elems: int


def frame_cycles(elems, pe):
    """Cycles a producer of ``pe`` lanes a beat (an int or an array) takes to emit a frame of
    ``elems`` elements, a beat a cycle."""
    return -(-elems // pe)


def pair_rows(pair: Pair, tables: list[Table], rows: list[np.ndarray],
               target: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The reader's one-slot rows among ``rows``, grouped by the producer rows that allow
    them at ``target``: (reader rows, producer rows), positions within each table's ``rows``."""
    tx, tu = tables[pair.reader], tables[pair.producer]
    rx, ru = rows[pair.reader], rows[pair.producer]
    ok = tu.ddr[ru] & ~tu.padded[ru]
    arrive = frame_cycles(pair.elems, tu.pe[ru])
    groups: dict[bytes, tuple[list[int], np.ndarray]] = {}
    for k in np.nonzero(tx.paired[rx])[0]:  # (a row behind a DDR frame stage needs no pair)
        r = rx[k]
        slack = target - int(tx.ii[r]) + pair.elems // int(tx.simd[r])
        allow = np.nonzero(ok & (arrive <= slack))[0]
        groups.setdefault(allow.tobytes(), ([], allow))[0].append(int(k))
    return [(np.asarray(xs), us) for xs, us in groups.values()]


@dataclass(frozen=True)
class Item:
    """A block (``part`` -1) or one part of a split block on ``core``, folding from ``table``."""

    unit: int
    part: int
    core: int
    table: Table


def one_slot_rows(prob: Problem, seg: Segmentation, u: int) -> bool:
    """Whether unit ``u`` takes part in a program with its one-input-slot rows (`Table.full`):
    an unsplit block with off-chip rows. Those behind a DDR frame stage are legal after any
    producer; the others only with `in1_producer`'s (`legal_rows`)."""
    t = prob.units[u].table
    if u in seg.split or t.extra_key is None or (not prob.ddr_stages and in1_producer(prob, seg, u) is None):
        return False
    return t.extra is not None


def legal_rows(prob: Problem, seg: Segmentation, it: Item, rows: np.ndarray) -> np.ndarray:
    """``rows`` of ``it``'s table that it may take whatever the other blocks' rows: without
    the one-input-slot rows without a stage when it has no `in1_producer` (with one, its
    `Pair` constraint decides), and without the rows behind a stage when the problem does
    not allow stages (``ddr_stages``)."""
    t = it.table
    if it.part >= 0 or not t.in1.any():
        return rows
    drop = t.stage[rows] if not prob.ddr_stages else np.zeros(len(rows), dtype=bool)
    if in1_producer(prob, seg, it.unit) is None:
        drop = drop | t.paired[rows]
    return rows[~drop]


def in1_producer(prob: Problem, seg: Segmentation, u: int) -> int | None:
    """The producer of unit ``u`` when ``u`` may take a one-input-slot row (`Table.extra`):
    its only input comes from one unit on the same core, neither split, that may keep its
    weights off chip and whose output nothing else reads; else None."""
    unit = prob.units[u]
    if unit.table.extra_key is None or u in seg.split or len(unit.producers) != 1:
        return None
    p = unit.producers[0]
    if p < 0 or p in seg.split or seg.core[p] != seg.core[u] or not prob.units[p].table.ddr.any():
        return None
    out = prob.units[p].out_tensor
    if out in prob.graph.outputs or sum(w.producers.count(p) for w in prob.units) != 1:
        return None
    return p if unit.table.extra is not None else None  # (its one-slot rows built here, first)


def pairs(prob: Problem, seg: Segmentation, items: list[Item], idx: list[int]) -> list[Pair]:
    """The `Pair` constraints of one program (``items[i]``, ``i`` in ``idx``)."""
    pos = {items[i].unit: k for k, i in enumerate(idx) if items[i].part < 0}
    out = []
    for k, i in enumerate(idx):
        it = items[i]
        if it.part < 0 and it.table.in1.any():
            p = in1_producer(prob, seg, it.unit)
            if p in pos:
                out.append(Pair(k, pos[p], prob.tensor_bits[prob.units[p].out_tensor] // 8))
    return out


FRAME_BITS_PER_BRAM18 = 16384
"""Bits of a deep FIFO per RAMB18 (8 of every 9 bits: `model.memory` of an 8-bit lane)."""
FRAME_BITS_PER_URAM = 4096 * 64
"""Bits of a deep FIFO per URAM288 at 8 lanes (64 of its 72 bits; `model.memory.uram_memory`)."""


def lags(prob: Problem, items: list[Item], idx: list[int], target: int) -> list[Lag]:
    """The FIFOs on one core's reconvergent paths that grow when a block on another path to
    the same reader keeps its weights off chip (`Lag`, for the program of ``items[i]``,
    ``i`` in ``idx``).

    The tables charge a reader's input FIFOs at the structural starts of its producers' most
    parallel on-chip foldings (`problem._start`). An off-chip row stores its whole input frame
    and computes every fold before its first output (build.py: fill 1 and its lead), a lag of
    at most ``1 - fill + (ii + 7) / target`` frames on its path more than that folding's (whose
    ``fill`` of a frame a dense layer has already); an input of the reader then waits that
    long for every such block on the other inputs' paths that is not on its own, in beats of
    its frame (an upper bound where its own path is late anyway). Only blocks on the reader's
    core count: the program of another core does not choose theirs (a refit catches those)."""
    anc: list[int] = []  # per unit, a bit per unit it reads from, itself included
    for unit in prob.units:
        a = 1 << unit.index
        for pu in unit.producers:
            if pu >= 0:
                a |= anc[pu]
        anc.append(a)
    offchip: dict[int, list[int]] = {}  # unit -> its tables' indices in the program (off-chip rows)
    for pos, i in enumerate(idx):
        if items[i].table.ddr.any():
            offchip.setdefault(items[i].unit, []).append(pos)
    if not offchip:
        return []
    fill = {}  # the structural fill the tables assumed (`problem._start`)
    for b in offchip:
        unit = prob.units[b]
        fill[b] = block_cost(unit.kind, unit.geom, *foldings(unit.kind, unit.geom, prob.parallel_window)[-1]).fill
    here = {items[i].unit for i in idx}
    uram = int(prob.board.cores[items[idx[0]].core].uram_limit > 0)
    out = []
    for unit in prob.units:
        ps = unit.producers
        if len(ps) < 2 or unit.index not in here:
            continue
        for k, (t, pk) in enumerate(zip(unit.in_tensors, ps, strict=False)):
            other = 0
            for j, pj in enumerate(ps):
                if j != k and pj >= 0:
                    other |= anc[pj]
            late = other & ~(anc[pk] if pk >= 0 else 0)
            weights = []
            for b, positions in offchip.items():
                if late >> b & 1:
                    for pos in positions:
                        tb = items[idx[pos]].table
                        weights.append((pos, np.where(tb.ddr, 1.0 - fill[b] + (tb.ii + 7) / target, 0.0)))
            if weights:
                per_frame = np.zeros((1 + uram, N_RES))
                per_frame[0, RES.index("bram18")] = prob.tensor_bits[t] / FRAME_BITS_PER_BRAM18
                if uram:  # the build moves big FIFOs to URAM while the core has some left
                    per_frame[1, RES.index("uram")] = prob.tensor_bits[t] / FRAME_BITS_PER_URAM
                out.append(Lag(per_frame, weights))
    return out
