"""Segment boundaries moved by integer programs (`rebalance`).

The exact segmentation (`dp.py`) places contiguous runs of units on the cores of the path
with each unit at its cheapest row under one weighting of the resources; `ilp.joint_plan`
then chooses every core's rows jointly, but keeps the segmentation's cores. Where the
weighting misjudges a core, its boundaries are wrong too: ResNet-50 on u250 planned at
401,408 cycles a frame with its last two SLRs at 36 % and 24 % of their DSPs, their URAM
full of weights that BRAM18 (10 % used) could have held.

`rebalance` moves the boundaries. At a target ii it packs the units along the core path
greedily: each core takes the longest run of the next units whose program fits its limits
less `PACK_MARGIN` in its linear relaxation (`program.fit_rows` ``relax``, with the run's
couplings, as `ilp._at` sets up its first program: a necessary condition, tens of
milliseconds where the integer program takes seconds to refuse a near miss), the run cut back to where the link to the next core carries the
cut within the target. For contiguous runs whose fitting is hereditary (a sub-run of a run
that fits fits too: true of summed resources) the longest runs decide feasibility exactly;
the couplings (one-slot pairs, reconvergent lags) and the link cuts are not hereditary, so the
packing is a heuristic there. `ilp._at` then chooses each core's rows and builds the plan,
refitting for what the rows do not charge, as for `joint_plan`. Targets below the plan to
beat are bisected (a target that fails is taken to mean every lower one fails: not proved).
A run's longest end is searched from the end the same core had at the previous target
tried (galloping), after a bound from each unit's least resources meeting the target.

A split unit keeps the segmentation's parts and their cores (the packing does not split):
the units between two split units are packed on the cores from the first one's last part to
the second one's first part, each core's program with the parts it holds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bbgrap_hls.plan import Plan
from bbgrap_hls.search import couplings
from bbgrap_hls.search.couplings import Item, legal_rows, one_slot_rows
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.ilp import _at, _items
from bbgrap_hls.search.problem import N_RES, Problem
from bbgrap_hls.search.program import _rows_at, candidates, fit_rows
from bbgrap_hls.search.tables import Table

MOVED = "integer programs, boundaries moved"
"""`Segmentation.source` of a plan whose cores `rebalance` chose."""

PACK_MARGIN = 0.03
"""Share of each core's limits the packing leaves free: what the built plan adds beyond the
rows (FIFOs around off-chip blocks, link endpoints, converters), which `ilp._at` then fits."""


TARGET_STEP = 0.005
"""Least relative step between two targets `rebalance` tries (`targets_below`)."""

UNDERUSED = 0.5
"""`make_plan` moves the boundaries only of a plan with a core under this share of its DSPs
(`underused`): the packing costs seconds to tens of seconds (its linear programs, about
200 on DenseNet-121), which a balanced plan does not repay. ResNet-50 on u250 (cores at 36 %
and 24 %): 401,408 → 225,792 cycles; DenseNet-121 on u250 (least-used core at 69 %) would gain
200,704 → 182,280 for planning 9.8 → 31.6 s, and is left as it is."""

BUILDS = 2
"""Targets at which `rebalance` builds a plan before it gives up: the least that packs, then
evenly up the targets to the last one `MIN_GAIN` below the plan to beat. A build that fails
tries every refit mode of `ilp._at`: seconds each on EfficientNet-B0."""

MIN_GAIN = 0.02
"""`rebalance` builds only at targets at least this share below the plan to beat."""


class _Packer:
    """Greedy packing of one problem's units along its core path at a target."""

    def __init__(self, prob: Problem, seg: Segmentation):
        self.prob = prob
        self.split = {u: list(ps) for u, ps in seg.split.items()}
        self.part_co = dict(seg.part_co)
        # the split units' parts (`ilp._items`), by core: each core's program holds its parts
        shell = Segmentation(core=list(seg.core), fold=[0] * prob.m, split=self.split, part_co=self.part_co)
        self.parts: dict[int, list[Item]] = {}
        for it in _items(prob, shell):
            if it.part >= 0:
                self.parts.setdefault(it.core, []).append(it)
        self.path = prob.core_path
        self.widths = [prob.link_width(a, b) for a, b in zip(self.path, self.path[1:], strict=False)]
        self.hint: dict[int, int] = {}  # path position -> the run's end at the last target packed
        self.programs = 0
        self._least: dict[int, np.ndarray] = {}
        self._fit: dict[tuple[int, int, int, int], bool] = {}
        self._cands: dict[int, np.ndarray] = {}
        self._pruned: dict[tuple[int, int], tuple[Table, np.ndarray]] = {}

    def least(self, target: int) -> np.ndarray:
        """Prefix sums over the units of each resource's least use over a unit's rows meeting
        ``target`` (a row may differ per resource: a bound; +inf for a unit with none)."""
        got = self._least.get(target)
        if got is None:
            rows = []
            for unit in self.prob.units:
                t = unit.table.full().at_target(target)
                ok = t.ii <= target
                rows.append(t.res[ok].min(axis=0).astype(float) if ok.any() else np.full(N_RES, np.inf))
            got = self._least[target] = np.cumsum(np.vstack([np.zeros(N_RES), *rows]), axis=0)
        return got

    def _bound(self, k: int, start: int, target: int) -> int:
        """The largest end whose units' least resources fit core ``k``'s limits (a bound on the run)."""
        pre = self.least(target)
        ok = np.all(pre[start + 1:] - pre[start] <= self.prob.limits(k), axis=1)
        bad = np.nonzero(~ok)[0]
        return start + (int(bad[0]) if len(bad) else len(ok))

    def fits(self, k: int, start: int, end: int, target: int) -> bool:
        """Whether the linear relaxation of the program of units ``[start, end)`` on core ``k``
        at ``target`` fits its limits less `PACK_MARGIN`, with the couplings of a core that
        holds just them (`ilp._at`'s first program, relaxed)."""
        key = (k, start, end, target)
        if key in self._fit:
            return self._fit[key]
        prob = self.prob
        core = [-1] * prob.m
        core[start:end] = [k] * (end - start)
        seg = Segmentation(core=core, fold=[0] * prob.m, split=self.split, part_co=self.part_co)
        items, rows = [], []
        for part in self.parts.get(k, []):
            at, pruned = self._rows(part.table, target)
            items.append(Item(part.unit, part.part, k, at))
            rows.append(pruned)
        for u in range(start, end):
            t = prob.units[u].table
            if one_slot_rows(prob, seg, u) or t.more is not None:
                t = t.full()
            at, pruned = self._rows(t, target)
            it = Item(u, -1, k, at)
            items.append(it)
            rows.append(legal_rows(prob, seg, it, pruned))
        if not items:
            return True
        idx = list(range(len(items)))
        limits = prob.limits(k)
        room = np.floor(limits * (1.0 - PACK_MARGIN)).astype(np.int64)
        self.programs += 1
        ok = fit_rows([it.table for it in items], room, target, scale=limits, among=rows, prune=False,
                      lags=couplings.lags(prob, items, idx, target),
                      pairs=couplings.pairs(prob, seg, items, idx), relax=True) is not None
        self._fit[key] = ok
        return ok

    def _rows(self, t: Table, target: int) -> tuple[Table, np.ndarray]:
        """``t`` priced at ``target`` (`Table.at_target`) and its rows a program at ``target``
        needs (`program._rows_at` of its `program.candidates`), once per table and target."""
        key = (id(t), target)
        got = self._pruned.get(key)
        if got is None:
            at = t.at_target(target)
            got = self._pruned[key] = (at, _rows_at(at, self.candidates(t), target))
        return got

    def candidates(self, t: Table) -> np.ndarray:
        """`program.candidates` of ``t``, once per table (the packing's programs and the builds')."""
        got = self._cands.get(id(t))
        if got is None:
            got = self._cands[id(t)] = candidates(t)
        return got

    def _longest(self, ok: Callable[[int], bool], lo: int, hi: int, guess: int) -> int:
        """The largest ``e`` in ``[lo, hi]`` with ``ok(e)`` (``ok`` monotone: true up to some
        end), or ``lo - 1``; galloping from ``guess``."""
        guess = min(max(guess, lo), hi)
        if ok(guess):
            good, step = guess, 1
            while good + step <= hi and ok(good + step):
                good, step = good + step, 2 * step
            bad = min(good + step, hi + 1)
        else:
            bad, step = guess, 1
            while bad - step >= lo and not ok(bad - step):
                bad, step = bad - step, 2 * step
            good = bad - step if bad - step >= lo else lo - 1
        while bad - good > 1:  # ok(good) (or good = lo - 1), not ok(bad) (or bad = hi + 1)
            mid = (good + bad) // 2
            if ok(mid):
                good = mid
            else:
                bad = mid
        return good

    def _cut_ok(self, q: int, end: int, target: int) -> bool:
        w = self.widths[q]
        return w is not None and -(-int(self.prob.cut_bits[end]) // w) <= target

    def pack(self, target: int) -> list[int] | None:
        """Core per unit with each core's run as long as it fits, or None. A split unit keeps
        its parts' cores: the units between two split units are packed on the cores from the
        first one's last part to the second one's first part."""
        m, core = self.prob.m, [0] * self.prob.m
        start, q0 = 0, 0
        for u in [*sorted(self.split), m]:
            q1 = self.path.index(self.split[u][0][0]) if u < m else len(self.path) - 1
            got = self._gap(target, start, u, q0, q1)
            if got is None:
                return None
            core[start:u] = got
            if u < m:
                core[u] = self.split[u][-1][0]
                start, q0 = u + 1, self.path.index(core[u])
        return core

    def _gap(self, target: int, lo: int, hi: int, q0: int, q1: int) -> list[int] | None:
        """Cores of units ``[lo, hi)`` on path positions ``q0 .. q1``, each run as long as it
        fits (the last core takes the rest), or None."""
        out, start = [], lo
        for q in range(q0, q1 + 1):
            k = self.path[q]
            if start == hi:
                break
            if q == q1:  # the last core of the gap takes the rest
                if not self.fits(k, start, hi, target):
                    return None
                end = hi
            else:
                top = min(hi, self._bound(k, start, target))
                end = self._longest(lambda e, k=k, s=start: self.fits(k, s, e, target), start, top,
                                    self.hint.get(q, top)) if top > start else start
                if end < start:
                    return None
                self.hint[q] = end
                while end > start and end < hi and not self._cut_ok(q, end, target):
                    end -= 1
            out += [k] * (end - start)
            start = end
        return out if start == hi else None


def underused(plan: Plan) -> bool:
    """Whether `rebalance` is worth its time on ``plan``: a core of it uses less than
    `UNDERUSED` of its DSPs."""
    return len(plan.cores) > 1 and any(c.dsp < UNDERUSED * c.dsp_limit for c in plan.cores)


HINT = 0.8
"""`move_hint`: a plan whose boundaries were left as they are, with a core under this share
of its DSPs, says that `--move-boundaries` may pack its cores better (MobileNetV3-Large on
u250: least-used core at 68 %, 17,936 → 20,140 fps moved; on u280: 75 %, 11,958 → 13,666;
EfficientNet-B0 on u250: 67 %, 7,972 → 9,566; DenseNet-121 on u250: 69 %, 1,495 → 1,708,
planning 13 → 41 s)."""


def move_hint(plan: Plan) -> str:
    """A clause for the plan's ``bottleneck_note`` when a core of ``plan`` (several cores, its
    boundaries not moved, as `underused` left them) uses under `HINT` of its DSPs; else empty."""
    if len(plan.cores) < 2 or underused(plan):
        return ""
    c = min(plan.cores, key=lambda c: c.dsp / max(1, c.dsp_limit))
    if c.dsp >= HINT * c.dsp_limit:
        return ""
    return (f"core {c.id} uses {c.dsp:,} of its {c.dsp_limit:,} DSPs: --move-boundaries (make_plan "
            "move_boundaries=True) packs the cores again by integer programs, which may find a faster "
            "plan for seconds to tens of seconds more planning")


def targets_below(prob: Problem, below: int, seg: Segmentation | None = None) -> np.ndarray:
    """The targets `rebalance` tries: the row ii values under ``below`` of the units and of
    ``seg``'s split parts, above the slowest one's fastest row, thinned from the top so that
    each is at least `TARGET_STEP` below the one kept before it (ascending)."""
    tables = ([it.table for it in _items(prob, seg)] if seg is not None and seg.split
              else [u.table.full() for u in prob.units])
    iis = np.unique(np.concatenate([t.ii for t in tables]))
    floor = max(int(t.ii.min()) for t in tables)
    kept: list[int] = []
    for v in iis[(iis >= floor) & (iis < below)][::-1]:
        if not kept or v * (1.0 + TARGET_STEP) <= kept[-1]:
            kept.append(int(v))
    return np.array(kept[::-1], dtype=np.int64)


def rebalance(prob: Problem, strategy: str, objective: str, seg: Segmentation, below: int,
              stats: dict | None = None) -> tuple[Plan, Segmentation] | None:
    """A plan with its boundaries packed (module doc) faster than ``below``, or None (also for a
    one-core path).

    The least of `targets_below` at which the packing succeeds is bisected (packing only);
    `ilp._at` then builds the plan there, or further up (`BUILDS`, each at least `MIN_GAIN`
    below ``below``).
    ``stats`` (when given) receives ``programs`` (the packing's), ``packed`` and ``built``
    (targets tried by each)."""
    if len(prob.core_path) < 2:
        return None
    iis = targets_below(prob, below, seg)
    packer = _Packer(prob, seg)
    packs: dict[int, list[int] | None] = {}

    def pack(i: int) -> list[int] | None:
        if i not in packs:
            packs[i] = packer.pack(int(iis[i]))
        return packs[i]

    best = None
    lo, hi = 0, len(iis) - 1
    if hi >= 0 and pack(hi) is not None:
        while lo < hi:
            mid = (lo + hi) // 2
            if pack(mid) is None:
                lo = mid + 1
            else:
                hi = mid
        if stats is not None:
            stats["least_packed"] = int(iis[hi])
        hint: dict = {}
        last = int(np.searchsorted(iis, below * (1.0 - MIN_GAIN), side="right"))  # targets worth a build
        tries = sorted({hi + (last - 1 - hi) * b // max(1, BUILDS - 1) for b in range(BUILDS)}) if hi < last else []
        for i in tries:  # the least target that packs, then evenly up to the last worth a build
            core = pack(i)
            if core is None:
                continue
            s = Segmentation(core=core, fold=[0] * prob.m, split=packer.split, part_co=packer.part_co)
            items = _items(prob, s)
            best = _at(prob, s, items, int(iis[i]), strategy, objective, [packer.candidates(it.table) for it in items],
                       hint=hint)
            if stats is not None:
                stats["built"] = stats.get("built", 0) + 1
            if best is not None:
                break
    if stats is not None:
        stats.update(programs=packer.programs, packed=len(packs))
    if best is None or best[0].ii_cycles >= below:
        return None
    return best


__all__ = ["BUILDS", "HINT", "MIN_GAIN", "MOVED", "PACK_MARGIN", "TARGET_STEP", "UNDERUSED", "move_hint", "rebalance",
           "targets_below", "underused"]
