"""Exact segmentation: contiguous segments of the unit order along the core path.

For a target ii ``T`` and a rule, every unit takes its cheapest folding meeting ``T``
(`fold.Chooser`); then a reachability DP over (core position, units placed) decides in
``O(cores · units)`` whether the units fit the cores in order with every link carrying its
cut within ``T``. A heavy conv/dense unit may instead be split along output channels
over ``k`` consecutive cores. Bisection over the candidate targets gives the least ``T``;
it is exact when feasibility is monotone in ``T`` (checked: `Segmentation.monotone`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.search.fold import BIG, make_chooser, rules
from bbgrap_hls.search.problem import N_RES, Problem


@dataclass
class Segmentation:
    """A mapping of units to cores with a folding per unit.

    Attributes:
        core: unit index -> core id (the last part's core for a split unit).
        fold: unit index -> folding index into its table.
        split: unit index -> list of (core, folding index into split_tables[k]).
        target: the target ii it was built for.
        monotone: feasibility was monotone in the target under its rule.
    """

    core: list[int]
    fold: list[int]
    split: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    target: int = 0
    monotone: bool = True


class SegmentDP:
    """Feasibility and reconstruction for one problem, one rule and a core-path prefix."""

    def __init__(self, prob: Problem, weights: np.ndarray, n_cores: int | None = None):
        self.prob = prob
        self.path = prob.core_path[: n_cores or len(prob.core_path)]
        self.ch = [make_chooser(u.table, weights) for u in prob.units]
        self.split_ch = {u.index: {k: make_chooser(t, weights) for k, t in u.split_tables.items()
                                   if k <= len(self.path)} for u in prob.units if u.split_tables}
        self.monotone = all(c.monotone for c in self.ch) and all(
            c.monotone for d in self.split_ch.values() for c in d.values())
        self.lims = [prob.limits(k) for k in self.path]
        self.widths = [prob.link_width(a, b) for a, b in zip(self.path, self.path[1:], strict=False)]

    def _choose(self, target: int) -> tuple[list[int], np.ndarray]:
        idx = [c.pick(target) for c in self.ch]
        res = np.array([c.table.res[i] if i >= 0 else (BIG,) * N_RES for c, i in zip(self.ch, idx, strict=False)],
                       dtype=np.int64).reshape(-1, N_RES)
        return idx, res

    def _link_ok(self, q: int, bits: np.ndarray | int, target: int):
        w = self.widths[q]
        if w is None:
            return np.zeros_like(bits, dtype=bool) if isinstance(bits, np.ndarray) else False
        return -(-bits // w) <= target

    def run(self, target: int, reconstruct: bool = False) -> Segmentation | None | bool:
        """Whether ``target`` is feasible; with ``reconstruct`` the segmentation (or None)."""
        prob, m, n = self.prob, self.prob.m, len(self.path)
        idx, res = self._choose(target)
        pre = np.vstack([np.zeros((1, N_RES), np.int64), np.cumsum(res, axis=0)])
        reach = np.zeros(m + 1, dtype=bool)
        reach[0] = True
        hist: list[tuple[np.ndarray, np.ndarray]] = []   # per core: (reach before, jmax)
        split_in: list[dict[int, tuple[int, int, list[int]]]] = [dict() for _ in range(n)]
        for q in range(n):
            jmax = np.full(m + 1, -1, dtype=np.int64)
            for r in range(N_RES):
                jr = np.searchsorted(pre[:, r], pre[:, r] + self.lims[q][r], side="right") - 1
                jmax = jr if r == 0 else np.minimum(jmax, jr)
            jmax = np.where(reach, jmax, -1)
            diff = np.zeros(m + 2, dtype=np.int64)
            starts = np.nonzero(reach)[0]
            np.add.at(diff, starts, 1)
            np.add.at(diff, np.maximum(jmax[starts], starts) + 1, -1)
            placed = np.cumsum(diff)[: m + 1] > 0
            for j in split_in[q]:
                placed[j] = True
            hist.append((reach.copy(), jmax))
            if placed[m]:
                if not reconstruct:
                    return True
                return self._rebuild(q, hist, split_in, idx, target)
            if q == n - 1:
                break
            # Splits starting on core q (from a reachable state i).
            for i in np.nonzero(reach)[0]:
                if i < m and i in self.split_ch:
                    self._try_split(int(i), q, target, split_in)
            reach = placed & self._link_ok(q, prob.cut_bits, target)
        return False if not reconstruct else None

    def _try_split(self, i: int, q: int, target: int, split_in) -> None:
        prob = self.prob
        out_bits = prob.tensor_bits[prob.units[i].out_tensor]
        for k, ch in self.split_ch[i].items():
            if q + k > len(self.path):
                continue
            f = ch.pick(target)
            if f < 0:
                continue
            if any(np.any(ch.table.res[f] > self.lims[q + p]) for p in range(k)):
                continue
            ok = all(self._link_ok(q + p, int(prob.cut_bits[i]) + out_bits * (p + 1) // k, target)
                     for p in range(k - 1))
            last = q + k - 1
            if ok and (i + 1) not in split_in[last]:
                split_in[last][i + 1] = (q, i, [f] * k)

    def _rebuild(self, q_end, hist, split_in, idx, target) -> Segmentation:
        m = self.prob.m
        core = [-1] * m
        fold = list(idx)
        split: dict[int, list[tuple[int, int]]] = {}
        j, q = m, q_end
        while j > 0:
            if j in split_in[q] and not self._plain_ok(hist[q], j):
                start_q, i, parts = split_in[q][j]
                split[i] = [(self.path[start_q + p], parts[p]) for p in range(len(parts))]
                core[i] = self.path[q]
                fold[i] = -1
                j, q = i, start_q - 1
                continue
            reach, jmax = hist[q]
            cands = [i for i in np.nonzero(reach)[0] if i <= j <= max(jmax[i], i)]
            i = int(max(cands))
            for u in range(i, j):
                core[u] = self.path[q]
            j, q = i, q - 1
        return Segmentation(core=core, fold=fold, split=split, target=target, monotone=self.monotone)

    @staticmethod
    def _plain_ok(h, j) -> bool:
        reach, jmax = h
        return any(i <= j <= max(jmax[i], i) for i in np.nonzero(reach)[0])


def candidate_targets(prob: Problem) -> np.ndarray:
    """Every ii a unit, a split part or a link cut can have, ascending."""
    vals = [u.table.ii for u in prob.units]
    vals += [t.ii for u in prob.units for t in u.split_tables.values()]
    widths = [w for w in (prob.link_width(a, b) for a, b in zip(prob.core_path, prob.core_path[1:], strict=False)) if w]
    for w in set(widths):
        vals.append(-(-prob.cut_bits // w))
    return np.unique(np.concatenate(vals))


def best_segmentation(prob: Problem, n_cores: int | None = None,
                      prove_seconds: float = 60.0) -> Segmentation | None:
    """Least-target segmentation over all rules (bisection per rule).

    When a rule's folding choice is not monotone, every candidate between the lower bound
    and the bisection result is checked too (for at most ``prove_seconds``); the result's
    ``monotone`` flag says whether the least target was proved under the rules.
    """
    deadline = time.monotonic() + prove_seconds
    cands = candidate_targets(prob)
    cands = cands[cands > 0] if np.any(cands > 0) else cands
    best: Segmentation | None = None
    for w in rules(prob.limits(prob.core_path[0])):
        dp = SegmentDP(prob, w, n_cores)
        hi_limit = len(cands) - 1 if best is None else int(np.searchsorted(cands, best.target)) - 1
        if hi_limit < 0 or not dp.run(int(cands[hi_limit])):
            continue
        lo, hi = 0, hi_limit
        while lo < hi:
            mid = (lo + hi) // 2
            if dp.run(int(cands[mid])):
                hi = mid
            else:
                lo = mid + 1
        found = lo
        if not dp.monotone:
            # Feasibility may not be monotone in the target: check every smaller candidate
            # above the lower bound (within the deadline) before calling the result exact.
            lb = lower_bound(prob, n_cores)
            proved = True
            for c in range(int(np.searchsorted(cands, lb)), lo):
                if time.monotonic() > deadline:
                    proved = False
                    break
                if dp.run(int(cands[c])):
                    found = c
                    break
        else:
            proved = True
        seg = dp.run(int(cands[found]), reconstruct=True)
        if seg is not None:
            seg.monotone = proved
            if best is None or seg.target < best.target:
                best = seg
    return best


def lower_bound(prob: Problem, n_cores: int | None = None) -> int:
    """No plan beats this ii: each unit's fastest folding that fits the largest core alone
    (a splittable unit: its fastest part), and the cut over the widest link."""
    path = prob.core_path[: n_cores or len(prob.core_path)]
    lim = np.max(np.array([prob.limits(k) for k in path]), axis=0)
    lb = 0
    for u in prob.units:
        tables = [u.table] + [t for k, t in u.split_tables.items() if k <= len(path)]
        best = min((int(t.ii[i]) for t in tables for i in range(len(t)) if np.all(t.res[i] <= lim)),
                   default=int(u.table.ii.min()))
        lb = max(lb, best)
    return lb
