"""Final pass: every block at the cheapest folding that still meets the design ii.

The search fixes the partition and the design ii (the target ``T``); the foldings it
picked on the way may be wider than ``T`` needs (a baseline's uniform folding, a
single-resource weighting that traded DSPs for LUTRAM weights, a repair step). This pass
refolds each block to the cheapest folding with ``ii <= T`` while every core still fits.

**Cost of a folding** (`fold_cost`): the sum over the resources of the block's use divided
by its core's limit,

    cost = dsp / dsp_limit + bram18 / bram18_limit + uram / uram_limit + lut / lut_limit

(use of a resource the core does not have makes the cost infinite), the block's input
FIFOs and width converter included as in its folding table. Ties go to fewer lanes
(``pe·simd``), then to the table order. A split node's parts share one folding; its cost
is the sum over its parts' cores.

**Algorithm** (deterministic, no clock):

1. Every block to its cheapest folding with ``ii <= T`` (for the latency objective: with
   ``ii <= max(c, ii now)``, ``c`` the largest cap found by bisection over the blocks'
   ii values for which the latency does not grow). The plan is rebuilt (real FIFO depths,
   converters, link endpoints); where a core is over a limit, that core's blocks go back
   to the search's foldings (throughput objective; for latency the bisection lowers the
   cap instead).
2. Descent: block by block (largest possible saving first), the cheapest folding cheaper
   than its current one with ``ii <= T`` for which the rebuilt plan fits every core (and,
   for the latency objective, keeps the latency); sweeps until nothing changes or
   ``max_builds`` plans were built.

The design ii never grows (every block stays at ``ii <= T``; link loads do not depend on
the folding) and every accepted plan fits. For the throughput objective the latency may
grow (slower blocks take longer to drain a frame); for the latency objective it never
exceeds the search's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bbgrap_hls.model import WEIGHTED
from bbgrap_hls.plan import Plan
from bbgrap_hls.search.build import build_plan, core_use
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.problem import Problem, Table
from bbgrap_hls.search.repair import violations

MAX_BUILDS = 3000
"""Default cap on the plans the descent builds (about 1 ms each for a 20-block model)."""


@dataclass
class NarrowStats:
    """What the pass did: blocks refolded, total lanes and plans built."""

    refolded: int
    lanes_before: int
    lanes_after: int
    builds: int
    converged: bool


def lanes(kind: str, pe: int, simd: int, mmv: int = 1) -> int:
    """Parallel lanes of a block: ``pe·simd`` products (times the pixel copies) for
    conv/dense, ``simd`` otherwise."""
    return pe * simd * mmv if kind in WEIGHTED else simd


def fold_cost(table: Table, limits: np.ndarray) -> np.ndarray:
    """Per folding row: the sum of its resources over ``limits`` (inf where a resource the
    core lacks is used)."""
    lim = limits.astype(float)
    frac = np.where(lim > 0, table.res / np.maximum(lim, 1.0), np.where(table.res > 0, np.inf, 0.0))
    return frac.sum(axis=1)


class _Units:
    """The folding choices of one segmentation: per *slot* (a unit, or one part of an
    unevenly split unit: slot ``m·(p + 1) + u`` for part ``p`` of unit ``u``, ``m`` units),
    its table, the cores its folding is charged to, the cost of each row and the order of
    rows (cheapest first)."""

    def __init__(self, prob: Problem, seg: Segmentation):
        self.prob, self.seg = prob, seg
        self.tables: dict[int, Table] = {}
        self.cost: dict[int, np.ndarray] = {}
        self.rank: dict[int, np.ndarray] = {}  # rank[slot][row]: position in the cheapest-first order
        self.fold: dict[int, int] = {}
        m = prob.m
        # a block on a one-input-slot row (`Table.extra`, the integer program's) keeps it, and
        # without a DDR frame stage so does its producer: the pair's constraint
        # (`couplings.Pair`) is not checked here; so does a block on a row with FIFOs in board
        # memory (`Table.more`)
        pinned = set()
        for u, unit in enumerate(prob.units):
            if u not in seg.split and seg.fold[u] >= len(unit.table):
                pinned |= {u, *unit.producers} if unit.table.full().paired[seg.fold[u]] else {u}
        for u, unit in enumerate(prob.units):
            if unit.kind == "wire" or u in pinned:
                continue
            if u in seg.part_co:  # uneven parts: each part its own table and core
                for p, ((c, f), co) in enumerate(zip(seg.split[u], seg.part_co[u], strict=True)):
                    self._add(m * (p + 1) + u, unit.part_tables[co], [c], f)
            elif u in seg.split:
                self._add(u, unit.split_tables[len(seg.split[u])], [c for c, _ in seg.split[u]],
                          seg.split[u][0][1])
            else:
                self._add(u, unit.table, [seg.core[u]], seg.fold[u])

    def _add(self, slot: int, t: Table, cores: list[int], fold: int) -> None:
        cost = sum(fold_cost(t, self.prob.limits(c)) for c in cores)
        width = t.pe * t.simd * t.mmv
        order = np.lexsort((np.arange(len(t)), width, cost))
        rank = np.empty(len(t), dtype=np.int64)
        rank[order] = np.arange(len(t))
        self.tables[slot], self.cost[slot], self.rank[slot], self.fold[slot] = t, cost, rank, fold

    def cheapest(self, u: int, cap: int, cur: int) -> int:
        """Cheapest row of slot ``u`` with ``ii <= max(cap, ii of cur)``."""
        t = self.tables[u]
        ok = np.nonzero(t.ii <= max(cap, int(t.ii[cur])))[0]
        return int(ok[np.argmin(self.rank[u][ok])])

    def cheaper(self, u: int, cur: int, target: int) -> list[int]:
        """Rows of slot ``u`` cheaper than ``cur`` (by rank) with ``ii <= target``, cheapest first."""
        t, r = self.tables[u], self.rank[u]
        ok = np.nonzero((t.ii <= target) & (r < r[cur]))[0]
        return [int(x) for x in ok[np.argsort(r[ok])]]

    def segmentation(self, fold: dict[int, int]) -> Segmentation:
        seg, m = self.seg, self.prob.m
        out = replace(seg, core=list(seg.core), fold=list(seg.fold), split=dict(seg.split),
                      part_co=dict(seg.part_co))
        for slot, f in fold.items():
            u, p = slot % m, slot // m - 1
            if p >= 0:  # one part of an uneven split
                parts = list(out.split[u])
                parts[p] = (parts[p][0], f)
                out.split[u] = parts
            elif u in seg.split:
                out.split[u] = [(c, f) for c, _ in seg.split[u]]
            else:
                out.fold[u] = f
        return out

    def cores_of(self, slot: int) -> list[int]:
        u, p = slot % self.prob.m, slot // self.prob.m - 1
        if p >= 0:
            return [self.seg.split[u][p][0]]
        return [c for c, _ in self.seg.split[u]] if u in self.seg.split else [self.seg.core[u]]

    def total_lanes(self, fold: dict[int, int]) -> int:
        n = 0
        for slot, f in fold.items():
            t = self.tables[slot]
            kind = self.prob.units[slot % self.prob.m].kind
            n += lanes(kind, int(t.pe[f]), int(t.simd[f]), t.copies(f)) * len(self.cores_of(slot))
        return n


def row_of(table: Table, pe: int, simd: int, weights: str | None, mmv: int = 1, lut: bool = False,
           lutrq: bool = False, in_slots: int = 2, stage: bool = False, px: int = 1, po: int = 1,
           bands: int = 1, frames_uram: bool | None = None, ring: int = 0, dense: bool = False,
           wide: bool = False) -> int:
    """The row of ``table`` (its `Table.full` rows) with this folding, weight placement, pixel
    copies, kind of multiplier (``lut``: products in LUTs, the plan's ``pack == 0``;
    ``lutrq``: requantisers in LUTs, the plan's ``requant == "lut"``), input frame slots and
    DDR frame stage (the plan's ``in_stage``) and row bands; an off-chip row's frame buffers
    in URAM or not (``frames_uram``, the plan's block has URAM; None: either); a short
    window ring or not (``ring``: `Table.ring`, the plan's ``short_ring`` and ``ring_uram``); a grouped conv computed dense or
    group by group (``dense``, the plan's ``dense_groups``), with whole pixels into its window
    generator or not (``wide``, the plan's ``wide_groups``).

    Raises:
        ValueError: no such row (the plan was not made for this problem).
    """
    if in_slots == 1:
        table = table.full()
    ddr = weights == "ddr"  # off-chip rows per folding: two input slots or one, frames in BRAM or URAM
    uram = (weights == "uram") if not ddr or frames_uram is None else frames_uram
    hit = np.nonzero((table.pe == pe) & (table.simd == simd) & ((ddr and frames_uram is None) | (table.uram == uram))
                     & (table.ddr == ddr) & (table.mmv == mmv) & (table.lut == lut)
                     & (table.lutrq == lutrq) & (table.in1 == (in_slots == 1)) & (table.stage == stage)
                     & (table.px == px) & (table.po == po) & (table.bands == bands) & (table.ring == ring)
                     & (table.dense == dense) & (table.wide == wide))[0]
    if weights == "lut" and table.lutw[hit].any():  # a LUT-built memory (else LUTRAM-sized anyway)
        hit = hit[table.lutw[hit]]
    elif weights != "lut":
        hit = hit[~table.lutw[hit]]
    if not len(hit):
        raise ValueError(f"no folding pe={pe}, simd={simd}, mmv={mmv}, weights={weights}, lut={lut} in the table")
    return int(hit[0])


def segmentation_of(prob: Problem, plan: Plan) -> Segmentation:
    """The segmentation a plan of ``prob`` was built from (cores, folding rows, splits):
    ``build_plan(prob, segmentation_of(prob, plan), ...)`` rebuilds the same plan."""
    nodes = {n.name: n for n in plan.nodes}
    core, fold, split, part_co = [0] * prob.m, [0] * prob.m, {}, {}
    for u, unit in enumerate(prob.units):
        n = nodes[unit.node.name]
        if n.split:
            sizes = [p.co_end - p.co_begin for p in n.split]
            if len(set(sizes)) > 1:
                part_co[u] = sizes
                tables = [unit.part_tables[c] for c in sizes]
            else:
                tables = [unit.split_tables[len(n.split)]] * len(n.split)
            split[u] = [(p.core, row_of(t, p.pe, p.simd, p.weights, p.mmv, p.pack == 0, p.requant == "lut",
                                        px=p.px))
                        for p, t in zip(n.split, tables, strict=True)]
            core[u], fold[u] = n.split[-1].core, -1
        else:
            core[u], fold[u] = n.core, row_of(unit.table, n.pe, n.simd, n.weights, n.mmv, n.pack == 0,
                                                   n.requant == "lut", n.in_slots, n.in_stage, n.px, n.po,
                                                   n.bands, n.uram > 0 if n.weights == "ddr" else None,
                                                   2 if n.ring_uram else int(n.short_ring), n.dense_groups,
                                                   n.wide_groups)
    return Segmentation(core=core, fold=fold, split=split, part_co=part_co, target=plan.ii_cycles)


def narrow(prob: Problem, seg: Segmentation, plan: Plan, objective: str, strategy: str,
           max_builds: int = MAX_BUILDS) -> tuple[Plan, Segmentation, NarrowStats]:
    """Refold every block of ``plan`` (built from ``seg``) to its cheapest folding meeting
    the plan's ii (module docstring). Returns the new plan, its segmentation and stats;
    the plan is ``plan`` itself when nothing could be narrowed."""
    units = _Units(prob, seg)
    target, lat0 = plan.ii_cycles, plan.latency_cycles
    builds = 0

    def accept(fold: dict[int, int], which: bool = True) -> tuple[Plan | None, list[int]]:
        """The plan of ``fold`` when it keeps the ii, fits and (latency objective) keeps
        the latency; else None and the cores over a limit (``which``: else None only)."""
        nonlocal builds
        builds += 1
        seg = units.segmentation(fold)
        # what the plan would charge each core, without its latency profiles: most trials
        # of a large model are over a limit, and only a fitting one needs the whole plan
        use = core_use(prob, seg, stop=not which)
        if use is None:
            return None, []
        bad = sorted(k for k, x in use.items() if np.any(x > prob.limits(k)))
        if bad:
            return None, bad
        p = build_plan(prob, seg, strategy, objective)
        bad = sorted({v[0] for v in violations(p)})
        if bad or p.ii_cycles > target or (objective == "latency" and p.latency_cycles > lat0):
            return None, bad
        return p, bad

    start = dict(units.fold)
    best_plan, fold = plan, dict(start)
    # 1. Every block to its cheapest folding under a cap.
    caps = [target]
    if objective == "latency":
        caps = sorted({int(x) for t in units.tables.values() for x in t.ii if x <= target} | {0})
    lo, hi = 0, len(caps) - 1
    while lo <= hi:  # largest accepted cap (one try for the throughput objective)
        mid = (lo + hi + 1) // 2 if lo < hi else lo
        trial = {u: units.cheapest(u, caps[mid], f) for u, f in start.items()}
        p, bad = accept(trial)
        if p is None and bad and objective != "latency":
            # Cores over a limit keep the search's foldings; the others stay narrowed.
            trial = {u: (start[u] if set(units.cores_of(u)) & set(bad) else f) for u, f in trial.items()}
            p, _ = accept(trial)
        if p is not None:
            best_plan, fold = p, trial
            lo = mid + 1
        else:
            hi = mid - 1
        if objective != "latency":
            break
    # 2. Descent, largest possible saving first.
    order = sorted(fold, key=lambda u: (-(units.cost[u][fold[u]]
                                          - units.cost[u][units.cheapest(u, target, fold[u])]), u))
    converged = False
    while builds < max_builds:
        changed = False
        for u in order:
            for g in units.cheaper(u, fold[u], target):
                if builds >= max_builds:
                    break
                trial = dict(fold)
                trial[u] = g
                p, _ = accept(trial, which=False)
                if p is not None:
                    best_plan, fold, changed = p, trial, True
                    break
        if not changed:
            converged = builds < max_builds or not any(units.cheaper(u, fold[u], target) for u in order)
            break
    refolded = sum(1 for u in fold if fold[u] != start[u])
    stats = NarrowStats(refolded, units.total_lanes(start), units.total_lanes(fold), builds, converged)
    if not refolded:
        return plan, seg, stats
    return best_plan, units.segmentation(fold), stats
