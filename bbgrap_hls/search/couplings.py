"""What couples the rows of different blocks in `program.fit_rows`' programs, beyond each row's
own resources: the reconvergent FIFOs that off-chip rows lengthen (`Lag`, `lags`) and the
one-input-slot rows that need an off-chip producer (`Pair`, `pairs`; docs/cost-model.md "One
input slot")."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.model import block_cost, foldings, in_lanes
from bbgrap_hls.model.band import band_fill
from bbgrap_hls.model.blocks import out_lanes
from bbgrap_hls.model.stage import MAX_STAGE_LANES, stage_bound
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.problem import BW_CYCLES, N_RES, RES, Problem
from bbgrap_hls.search.tables import Table


@dataclass(frozen=True)
class Lag:
    """A reconvergent FIFO's frames of lag beyond what its reader's rows charge (`fit_rows`):
    at least the sum, over the chosen rows, of ``weights`` (pairs: a table's index in the
    program, a weight per row of that table), each frame in one of the memories of
    ``per_frame`` (a row of resources in `RES` order per kind of memory: BRAM18, URAM, the
    core's board memory; `lag_prices`)."""

    per_frame: np.ndarray
    weights: list[tuple[int, np.ndarray]]
    # kind -> (a table's index in the program, a bool per row): that kind's frames only with
    # one of those rows chosen (board memory: a producer row whose lanes a stage takes)
    gate: dict[int, tuple[int, np.ndarray]] = field(default_factory=dict)


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
    ok = tu.ddr[ru] & ~tu.padded[ru] & (tu.bands[ru] == 1)  # (a banded producer holds a band, not a frame)
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
"""Bits of a deep FIFO per RAMB18, at any width: a FIFO of ``L`` int8 lanes (``8L`` bits) takes
``ceil(8L/9)`` columns of the 2,048 × 9 shape, at most ``L``, so at least 2,048 × 8 bits a RAMB18
(`model.memory.memory` takes the fewest over its shapes: never more than that)."""
URAM_BEATS = 4096
"""Beats of a FIFO per URAM288 column (`model.memory.uram_memory`: one 4K × 72 shape)."""


def uram_per_bit(lanes: int) -> float:
    """URAM288 a FIFO of ``lanes`` int8 lanes takes per bit it holds, its depth rounding aside:
    ``ceil(8·lanes/72)`` columns of `URAM_BEATS` beats of ``lanes`` bytes; one lane holds 4,096 × 8
    bits in a URAM, 9 lanes 4,096 × 72 (not monotone: 10 lanes need two columns for 80 bits)."""
    return -(-8 * lanes // 72) / (8 * lanes * URAM_BEATS)


def _fifo_lanes(prob: Problem, items: list[Item], idx: list[int], reader: int, pk: int,
                core: int) -> tuple[int, Table | None, int | None]:
    """The unit and table whose row sets the lanes of the FIFO from unit ``pk`` into unit ``reader``'s
    parts on ``core`` (its producer's, or for the host's input, ``pk`` -1, the reader's: the
    FIFO then takes the reader's input lanes) and its position in this program (``idx``), None
    where that block is on another core; table None where unknown: a split producer's gather,
    a split reader of the host's input. A wire streams its producer's beats."""
    while pk >= 0 and prob.units[pk].kind == "wire" and prob.units[pk].producers:
        pk = prob.units[pk].producers[0]
    mine = [i for i, it in enumerate(items) if it.unit == (reader if pk < 0 else pk)]
    if len(mine) != 1 or items[mine[0]].part >= 0:
        return -1, None, None
    it = items[mine[0]]
    return it.unit, it.table, (idx.index(mine[0]) if it.core == core and mine[0] in idx else None)


def row_lanes(prob: Problem, t: Table, u: int, host: bool) -> np.ndarray:
    """Per row of unit ``u``'s table ``t``, the lanes of its output stream (`build._Part.out_lanes`)
    or with ``host`` of its input (`in_lanes`, what the host's input streams at)."""
    unit = prob.units[u]
    if host:
        return np.array([in_lanes(unit.kind, unit.geom, int(p), int(s), int(x), bool(d), bool(w))
                         for p, s, x, d, w in zip(t.pe, t.simd, t.px, t.dense, t.wide, strict=True)],
                        dtype=np.int64)
    co = unit.geom.co
    return np.array([out_lanes(co, int(p), int(m), int(o)) for p, m, o in zip(t.pe, t.mmv, t.po, strict=True)],
                    dtype=np.int64)


def ddr_lanes(prob: Problem, bits: int, lanes: set[int], target: int) -> set[int]:
    """Those of ``lanes`` at which a FIFO of a ``bits``-bit frame may go to board memory
    (`fifo_memory.fifos_to_ddr`): at most `MAX_STAGE_LANES`, its stage's ii and delivery within
    ``target``."""
    if prob.offchip_memory is None:
        return set()
    rate, latency, _ = prob.offchip_memory
    out = set()
    for n in lanes:
        if n <= MAX_STAGE_LANES:
            st = stage_bound(max(1, bits // 8 // n), n, rate, latency)
            if st.ii <= target and st.deliver <= target:
                out.add(n)
    return out


def lag_prices(prob: Problem, bits: int, lanes: set[int] | None, uram: bool, ddr: set[int] | None,
               target: int) -> np.ndarray:
    """`Lag.per_frame` of a FIFO of a ``bits``-bit frame whose width is one of ``lanes`` (None:
    unknown, any), charged whatever the width the producer's row gives it (the rows are chosen
    in the same program, so the width is not known when the price is set; the price is the
    dearest over ``lanes``, never below the build's):

    - BRAM18: `FRAME_BITS_PER_BRAM18` at any width;
    - URAM288 (``uram``: the core has some): the most `uram_per_bit` over ``lanes`` (one lane,
      8x an 8-lane FIFO's, when unknown);
    - with ``ddr`` (the lanes, `ddr_lanes`, at which the FIFO may go to the core's board memory;
      `lags` allows this kind only with a producer row of those lanes): no BRAM18 or URAM, but
      the stage's LUTs and its bandwidth, ``BW_CYCLES·bytes / target`` with ``bytes`` a frame
      written and read (`stage_bound`: two frames of its beats, a narrow beat padded to 4 bytes),
      the most over ``ddr``. `fifos_to_ddr` charges that once per FIFO whatever its depth, the
      program per frame of lag: the same for a lag of one frame, more for a longer one, less
      (and then short) below a frame, where the build mostly cannot move the FIFO anyway (its
      depth must exceed a frame's write and the memory's latency). The stage is checked, and
      its bandwidth charged, at ``target``: the build uses the core's slowest block's ii, at
      most that."""
    rows = [np.zeros(N_RES)]
    rows[0][RES.index("bram18")] = bits / FRAME_BITS_PER_BRAM18
    if uram:  # the build moves big FIFOs to URAM while the core has some left
        rows.append(np.zeros(N_RES))
        rows[-1][RES.index("uram")] = bits * max(uram_per_bit(n) for n in lanes or (1,))
    if ddr:
        rate, latency, _ = prob.offchip_memory
        stages = [stage_bound(max(1, bits // 8 // n), n, rate, latency) for n in sorted(ddr)]
        rows.append(np.zeros(N_RES))
        rows[-1][RES.index("lut")] = max(st.lut for st in stages)
        rows[-1][RES.index("bw")] = BW_CYCLES * max(st.bytes_per_frame for st in stages) / max(1, target)
    return np.array(rows)


def lags(prob: Problem, items: list[Item], idx: list[int], target: int) -> list[Lag]:
    """The FIFOs on one core's reconvergent paths that grow when a block on another path to
    the same reader keeps its weights off chip (`Lag`, for the program of ``items[i]``,
    ``i`` in ``idx``).

    The tables charge a reader's input FIFOs at the structural starts of its producers' most
    parallel on-chip foldings (`problem._start`). An off-chip row stores its whole input frame
    and computes every fold before its first output (build.py: fill 1 and its lead), a lag of
    at most ``1 - fill + (ii + 7) / target`` frames on its path more than that folding's (whose
    ``fill`` of a frame a dense layer has already); a row in ``B`` row bands only band 0's input
    and folds, ``band_fill − fill + (ii/B + 7) / target`` (at least its folds); an input of the reader then waits that
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
    core = items[idx[0]].core
    uram = prob.board.cores[core].uram_limit > 0
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
                        w = np.where(tb.ddr, 1.0 - fill[b] + (tb.ii + 7) / target, 0.0)
                        for n in np.unique(tb.bands[tb.bands > 1]):  # row bands: band 0's input and folds
                            at_n = tb.bands == n
                            w[at_n] = max(0.0, band_fill(prob.units[b].geom, int(n)) - fill[b]) \
                                + (tb.ii[at_n] / n + 7) / target
                        weights.append((pos, w))
            if weights:
                bits = prob.tensor_bits[t]
                ul, tl, at = _fifo_lanes(prob, items, idx, unit.index, pk, core)
                per_row = None if tl is None else row_lanes(prob, tl, ul, pk < 0)
                lanes = None if per_row is None else set(per_row[tl.ii <= target].tolist()) or None
                # board memory only for a FIFO within the core (`fifos_to_ddr` moves no stream's),
                # and only with a row of its width table giving the lanes a stage takes
                ddr = ddr_lanes(prob, bits, lanes, target) if prob.ddr_fifos and at is not None and lanes else set()
                gate = {}
                if ddr and ddr != lanes:
                    gate[1 + uram] = (at, np.isin(per_row, list(ddr)))
                out.append(Lag(lag_prices(prob, bits, lanes, uram, ddr, target), weights, gate))
    return out
