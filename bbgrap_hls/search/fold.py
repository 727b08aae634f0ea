"""Folding choice: the cheapest folding of a unit that meets a target ii.

A *rule* is a weight vector over the resources (dsp, bram18, uram, lut); at target ``T`` a unit takes the
folding with ``ii <= T`` of least weighted resource use. Tables are sorted by ii
descending, so the foldings meeting ``T`` are a suffix and the choice is a suffix argmin.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.search.problem import N_RES, Table

BIG = np.int64(1) << 50
"""Resource use of 'no folding meets the target' (never fits)."""


@dataclass
class Chooser:
    """Precomputed suffix argmins of one table under one rule."""

    table: Table
    best: np.ndarray      # best[pos]: folding index of least cost among positions >= pos
    monotone: bool        # resources never decrease as the target tightens
    neg_ii: np.ndarray = None  # -table.ii (ascending), for the searches
    # `best` as runs of one row, for `pick` (called millions of times per plan): a bisection
    # over a short Python list instead of a NumPy search. The run holding position ``pos``
    # is the last whose start ``p`` has ``neg_ii[p - 1] < -target`` (``pos`` counts the
    # rows with ``neg_ii < -target``), so ``_th`` holds those ``neg_ii[p - 1]`` (-inf for
    # the first run) and a last run, -1, starts past the table.
    _th: list = field(default=None, repr=False)
    _val: list = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.neg_ii is None:
            self.neg_ii = -self.table.ii
        n = len(self.best)
        if not n:
            self._th, self._val = [-np.inf], [-1]
            return
        firsts = _run_starts(self.best)
        self._th = [-np.inf, *self.neg_ii[np.concatenate((firsts[1:], [n])) - 1].tolist()]
        self._val = [*self.best[firsts].tolist(), -1]

    def pick(self, target: int) -> int:
        """Folding index meeting ``target`` at least cost, or -1 when none does."""
        return self._val[bisect_left(self._th, -target) - 1]


def make_chooser(table: Table, weights: np.ndarray) -> Chooser:
    """The table's chooser under the rule ``weights``, kept on the table: the strategies ask
    for the same one many times (each rule of each core the refinement folds)."""
    key = weights.tobytes()
    hit = table.choosers.get(key)
    if hit is not None and hit[0] is table.ii and hit[1] is table.res:  # arrays not rebound since
        return hit[2]
    chooser = _chooser(table, weights)
    table.choosers[key] = (table.ii, table.res, chooser)
    return chooser


def _chooser(table: Table, weights: np.ndarray) -> Chooser:
    cost = table.res @ weights
    n = len(cost)
    # best[pos]: the row of least cost among positions >= pos; ties to the slower row, then
    # to the later position. Rank every row by that order (a stable sort by cost of the rows
    # in tie order, which does not depend on the rule and is kept on the table), then a
    # suffix minimum of ranks.
    ties = table.choosers.get(b"ties")
    if ties is None or ties[0] is not table.ii:
        ties = (table.ii, np.lexsort((-np.arange(n), -table.ii)))
        table.choosers[b"ties"] = ties
    order = ties[1][np.argsort(cost[ties[1]], kind="stable")]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    best = order[np.minimum.accumulate(rank[::-1])[::-1]] if n else np.empty(0, dtype=np.int64)
    r = table.res[best[_run_starts(best)]]  # one row per run of equal picks
    monotone = bool(np.all(r[1:] >= r[:-1])) if len(r) > 1 else True
    return Chooser(table, best, monotone)


def _run_starts(best: np.ndarray) -> np.ndarray:
    """The positions where a run of equal values of ``best`` begins (0 first)."""
    return np.concatenate(([0], np.flatnonzero(best[1:] != best[:-1]) + 1)) if len(best) else best[:0]


def rules(limits: np.ndarray) -> list[np.ndarray]:
    """The weightings tried: balanced (each resource over its limit), then each one alone
    with the others as tie-breakers, then balanced with BRAM18 or URAM as a tie-breaker
    (resources the core does not have are skipped)."""
    # a resource the core lacks (no URAM, no memory bandwidth) weighs so much that a row
    # using it is never the cheapest while another row meets the target
    inv = np.where(limits > 0, 1.0 / np.maximum(limits.astype(float), 1.0), 1e6)
    out = [inv]
    for r in range(len(limits)):
        if limits[r] <= 0:
            continue
        w = inv * 1e-3
        w[r] = inv[r]
        out.append(w)
    for r in (1, 2):  # RES[1:3]: BRAM18 and URAM
        if limits[r] > 0 and np.count_nonzero(limits > 0) > 2:
            # balanced but for one memory, a tie-breaker: a memory the balanced rule prices
            # high that no core runs short of (URAM on u250 for MobileNetV2) then does not
            # push every block to rows heavy in the others (LUT weights)
            w = inv.copy()
            w[r] *= 1e-3
            out.append(w)
    bw = len(limits) - 1  # RES[-1]: the board memory's bandwidth (off-chip weight rows)
    if limits[bw] > 0:
        # Each rule once more with off-chip rows priced out: an off-chip row saves BRAM/URAM
        # but costs unpacked DSPs and frame buffers, so a rule that picks it for every block
        # can overflow a core that fits with every block on chip. (Added while chasing
        # ResNet-18 on u250 losing with off-chip rows allowed; that loss was the split
        # candidates' choice in problem.py, and these rules did not change its plan.)
        for w in list(out):
            w = w.copy()
            w[bw] = 1e6
            out.append(w)
    return out


def candidate_targets(tables: list[Table]) -> np.ndarray:
    """Every ii any folding of these tables has, ascending."""
    return np.unique(np.concatenate([t.ii for t in tables])) if tables else np.array([0])


def fold_core(tables: list[Table], limits: np.ndarray) -> tuple[int, list[int]] | None:
    """Least target ii at which all ``tables`` fit ``limits`` together (one core).

    Returns:
        ``(ii, folding index per table)`` or None when nothing fits even at the smallest
        folding. Bisection over the candidate targets, best over the rules.
    """
    if not tables:
        return 0, []
    cands = candidate_targets(tables)
    best: tuple[int, list[int]] | None = None
    for w in rules(limits):
        choosers = [make_chooser(t, w) for t in tables]

        def fits(target: int, choosers=choosers) -> list[int] | None:
            idx = [c.pick(target) for c in choosers]
            if min(idx) < 0:
                return None
            use = sum(c.table.res[i] for c, i in zip(choosers, idx, strict=False))
            return idx if np.all(use <= limits) else None

        lo, hi = 0, len(cands) - 1
        if fits(int(cands[hi])) is None:
            continue
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(int(cands[mid])) is not None:
                hi = mid
            else:
                lo = mid + 1
        idx = fits(int(cands[lo]))
        ii = max(int(c.table.ii[i]) for c, i in zip(choosers, idx, strict=False))
        if best is None or ii < best[0]:
            best = (ii, idx)
    return best


def fold_at(tables: list[Table], limits: np.ndarray, target: int) -> list[int] | None:
    """Each table's cheapest folding meeting ``target`` under the first rule (balanced
    first) whose choices fit ``limits`` together, or None when no rule's do."""
    for w in rules(limits):
        idx = [make_chooser(t, w).pick(target) for t in tables]
        if idx and min(idx) < 0:
            return None
        use = sum((t.res[i] for t, i in zip(tables, idx, strict=True)), np.zeros(N_RES, np.int64))
        if np.all(use <= limits):
            return idx
    return None


def balance(tables: list[Table], limits: np.ndarray, start: list[int]) -> list[int]:
    """FINN-style balancing: raise the folding of the slowest unit while the core fits.

    Each step moves the bottleneck unit to its cheapest faster folding (least sum of its
    resources over ``limits``, then fewest lanes); it stops when the bottleneck cannot get
    faster within ``limits``.
    """
    inv = 1.0 / np.maximum(limits.astype(float), 1.0)
    idx = list(start)
    use = sum(t.res[i] for t, i in zip(tables, idx, strict=False)) if tables else np.zeros(N_RES, np.int64)
    while tables:
        iis = [int(t.ii[i]) for t, i in zip(tables, idx, strict=False)]
        u = int(np.argmax(iis))
        t = tables[u]
        faster = np.nonzero(t.ii < iis[u])[0]
        if len(faster) == 0:
            break
        room = limits - (use - t.res[idx[u]])
        ok = faster[np.all(t.res[faster] <= room, axis=1)]
        if len(ok) == 0:
            break
        # least (cost, lanes, -ii, row): lexsort's last key is the primary one
        cost = t.res[ok] @ inv
        lanes = t.pe[ok] * t.simd[ok] * t.mmv[ok]
        f = int(ok[np.lexsort((ok, -t.ii[ok], lanes, cost))[0]])
        use = use - t.res[idx[u]] + t.res[f]
        idx[u] = int(f)
    return idx
