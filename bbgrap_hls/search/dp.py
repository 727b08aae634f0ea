"""Exact segmentation: contiguous segments of the unit order along the core path.

For a target ii ``T`` and a rule, every unit takes its cheapest folding meeting ``T``
(`fold.Chooser`); then a reachability DP over (core position, units placed) decides in
``O(cores · units)`` whether the units fit the cores in order with every link carrying its
cut within ``T``. A heavy conv/dense unit may instead be split along output channels
over ``k`` consecutive cores: its first part shares a core with the units before it, its
last part with the units after it, the parts between have a core each. Bisection over the candidate targets gives the least ``T``;
it is exact when feasibility is monotone in ``T`` (checked: `Segmentation.monotone`).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.search.fold import BIG, make_chooser, rules
from bbgrap_hls.search.problem import N_RES, Problem, Table


@dataclass
class Segmentation:
    """A mapping of units to cores with a folding per unit.

    Attributes:
        core: unit index -> core id (the last part's core for a split unit).
        fold: unit index -> folding index into its table.
        split: unit index -> list of (core, folding index into the part's table): equal
            parts index ``split_tables[k]``; uneven parts (in ``part_co``) ``part_tables[c]``.
        part_co: unit index -> channels of each part, for an uneven split only.
        target: the target ii it was built for.
        monotone: feasibility was monotone in the target under its rule.
        source: the strategy whose segmentation this is when ``search`` took a baseline's.
    """

    core: list[int]
    fold: list[int]
    split: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    part_co: dict[int, list[int]] = field(default_factory=dict)
    target: int = 0
    monotone: bool = True
    source: str = ""


UNEVEN_PARTS = 3
"""Most parts of an uneven split (equal splits go up to the cores on the path)."""


class SegmentDP:
    """Feasibility and reconstruction for one problem, one rule and a core-path prefix."""

    def __init__(self, prob: Problem, weights: np.ndarray, n_cores: int | None = None,
                 memo: dict | None = None):
        self.prob = prob
        # `run`'s answers by target and choices, shared by the rules of one problem and path:
        # rules that pick the same rows at a target get the same answer
        self.memo = memo
        self.path = prob.core_path[: n_cores or len(prob.core_path)]
        self.ch = [make_chooser(u.table, weights) for u in prob.units]
        self.split_ch = {u.index: {k: make_chooser(t, weights) for k, t in u.split_tables.items()
                                   if k <= len(self.path)} for u in prob.units if u.split_tables}
        self.part_ch = {u.index: {c: make_chooser(t, weights) for c, t in u.part_tables.items()}
                        for u in prob.units if u.part_tables}
        self.monotone = all(c.monotone for c in self.ch) and all(
            c.monotone for d in (*self.split_ch.values(), *self.part_ch.values()) for c in d.values())
        self.lims = [prob.limits(k) for k in self.path]
        self._picks: dict[tuple[int, int], tuple] = {}  # `_uneven`: part sizes, folds, resources
        self.widths = [prob.link_width(a, b) for a, b in zip(self.path, self.path[1:], strict=False)]
        self._rows, self._offset = _unit_rows(prob)
        self._splittable = sorted(set(self.split_ch) | set(self.part_ch))
        self._part_choosers = [c for d in (*self.split_ch.values(), *self.part_ch.values()) for c in d.values()]

    def _choose(self, target: int) -> tuple[list[int], np.ndarray]:
        idx = [c.pick(target) for c in self.ch]
        at = np.array(idx, dtype=np.int64)
        res = self._rows[np.where(at >= 0, self._offset + at, len(self._rows) - 1)]
        return idx, res

    def signature(self) -> bytes:
        """A digest of every folding choice of the rule (per table, the row picked at each
        target): two rules with the same signature give the same answers."""
        h = hashlib.blake2b(digest_size=16)
        for c in [*self.ch, *(c for d in self.split_ch.values() for c in d.values()),
                  *(c for d in self.part_ch.values() for c in d.values())]:
            h.update(c.best.tobytes())
            h.update(b"|")
        return h.digest()

    def may_fit(self, cands: np.ndarray, lo: int, hi: int) -> list[int]:
        """Positions ``lo <= c < hi`` of ``cands`` (ascending) whose targets pass a necessary
        condition of `run`: the units that cannot be split, at their foldings meeting the
        target (every one must have one), fill the cores of the path in order (each core as
        far as it takes them, as `run` does; the split units counted as using nothing and
        the links left out, which only removes constraints)."""
        if hi <= lo:
            return []
        t = cands[lo:hi]
        lims = np.array(self.lims, dtype=np.int64)
        n = len(lims)
        ok = np.ones(len(t), dtype=bool)
        core = np.zeros(len(t), dtype=np.int64)  # the core each target's fill has reached
        load = np.zeros((len(t), N_RES), dtype=np.int64)
        cur = np.broadcast_to(lims[0], load.shape).copy()  # each target's current core's limits
        for u, c in enumerate(self.ch):
            if u in self.split_ch or u in self.part_ch:
                continue
            pos = c.neg_ii.searchsorted(-t, side="left")
            ok &= pos < len(c.best)
            res = c.table.res[c.best[np.minimum(pos, len(c.best) - 1)]]
            for _ in range(n + 1):  # next core while the unit does not fit the current one
                over = ok & (load + res > cur).any(axis=1)
                if not over.any():
                    break
                core[over] += 1
                load[over] = 0
                cur[over] = lims[np.minimum(core[over], n - 1)]
                ok &= core < n
            load += res
        return [lo + int(i) for i in np.nonzero(ok)[0]]

    def _link_ok(self, q: int, bits: np.ndarray | int, target: int):
        w = self.widths[q]
        if w is None:
            return np.zeros_like(bits, dtype=bool) if isinstance(bits, np.ndarray) else False
        return -(-bits // w) <= target

    @staticmethod
    def _jmax(pre: np.ndarray, s: np.ndarray, room: np.ndarray) -> np.ndarray:
        """Per start ``s[t]``: the largest ``j`` with units ``[s[t], j)`` fitting in
        ``room[t]`` (``s[t]`` itself always)."""
        j = None
        for r in range(N_RES):
            jr = np.searchsorted(pre[:, r], pre[s, r] + room[:, r], side="right") - 1
            j = jr if j is None else np.minimum(j, jr)
        return np.maximum(j, s)

    def run(self, target: int, reconstruct: bool = False) -> Segmentation | None | bool:
        """Whether ``target`` is feasible; with ``reconstruct`` the segmentation (or None).

        States at a core position ``q``: *plain* ``s`` (core ``q`` empty, units ``< s`` placed
        before it) and *tail* ``(s, k)`` (core ``q`` already holds the last of the ``k`` parts
        of unit ``s − 1``, split over cores ``q−k+1 … q``). A core takes a contiguous run of
        units after its state; a split of unit ``i`` starts on a core after a run ``[s, i)``
        there, puts one part alone on each core in between and leaves a tail state.
        """
        idx, res = self._choose(target)
        key = None
        if self.memo is not None and not reconstruct:
            key = (target, tuple(idx), tuple(c.pick(target) for c in self._part_choosers))
            if key in self.memo:
                return self.memo[key]
        got = self._run(target, reconstruct, idx, res)
        if key is not None:
            self.memo[key] = got
        return got

    def _run(self, target: int, reconstruct: bool, idx: list[int], res: np.ndarray):
        prob, m, n = self.prob, self.prob.m, len(self.path)
        pre = np.vstack([np.zeros((1, N_RES), np.int64), np.cumsum(res, axis=0)])
        reach = np.zeros(m + 1, dtype=bool)
        reach[0] = True
        hist: list[tuple[np.ndarray, np.ndarray, dict]] = []   # per core: (reach, jmax, tails)
        tails_at: list[dict[tuple[int, int], tuple]] = [dict() for _ in range(n)]
        for q in range(n):
            lim = np.asarray(self.lims[q], dtype=np.int64)
            jmax = np.full(m + 1, -1, dtype=np.int64)
            for r in range(N_RES):
                jr = np.searchsorted(pre[:, r], pre[:, r] + lim[r], side="right") - 1
                jmax = jr if r == 0 else np.minimum(jmax, jr)
            jmax = np.where(reach, jmax, -1)
            diff = np.zeros(m + 2, dtype=np.int64)
            starts = np.nonzero(reach)[0]
            np.add.at(diff, starts, 1)
            np.add.at(diff, np.maximum(jmax[starts], starts) + 1, -1)
            tails = tails_at[q]
            if tails:
                keys = list(tails)
                s_t = np.array([key[0] for key in keys], dtype=np.int64)
                room = lim - np.array([tails[key][0] for key in keys], dtype=np.int64).reshape(-1, N_RES)
                jt = self._jmax(pre, s_t, room)
                for key, j in zip(keys, jt.tolist(), strict=True):
                    base, origin = tails[key][:2]
                    tails[key] = (base, origin, j)
                np.add.at(diff, s_t, 1)
                np.add.at(diff, jt + 1, -1)
            placed = np.cumsum(diff)[: m + 1] > 0
            hist.append((reach.copy(), jmax, tails))
            if placed[m]:
                if not reconstruct:
                    return True
                return self._rebuild(q, hist, idx, target)
            if q == n - 1:
                break
            for i in self._splittable:
                if i < m and placed[i]:
                    self._try_split(i, q, target, pre, reach, jmax, tails, lim, tails_at)
            reach = placed & self._link_ok(q, prob.cut_bits, target)
        return False if not reconstruct else None

    def _try_split(self, i, q, target, pre, reach, jmax, tails, lim, tails_at) -> None:
        """Record the tail states of splitting unit ``i`` from core position ``q``: equal
        parts (key ``(i + 1, k, 0)``) and uneven ones (``(i + 1, k, 1)``, `_uneven`)."""
        n = len(self.path)
        equal = [(k, ch) for k, ch in self.split_ch.get(i, {}).items()
                 if q + k - 1 < n and (i + 1, k, 0) not in tails_at[q + k - 1]]
        uneven = [k for k in range(2, min(UNEVEN_PARTS, n - q) + 1)
                  if (i + 1, k, 1) not in tails_at[q + k - 1]] if i in self.part_ch else []
        if not equal and not uneven:
            return
        # Start states on core q whose run [s, i) may precede the first part (``origins``),
        # with the room each leaves (a row of ``rooms``): the largest plain s is the lightest
        # plain run, then the tails.
        plain = np.flatnonzero(reach[: i + 1])
        origins = [("plain", int(plain[-1]))] if len(plain) else []
        rooms = [(lim - (pre[i] - pre[plain[-1]]))[None]] if len(plain) else []
        at = [key for key in tails if key[0] <= i]
        if at:
            base = np.array([tails[key][0] for key in at], dtype=np.int64).reshape(-1, N_RES)
            rooms.append(lim - (pre[i] - pre[[key[0] for key in at]]) - base)
            origins += [("tail", key) for key in at]
        if not origins:
            return
        rooms = np.concatenate(rooms)
        for k, ch in equal:
            f = ch.pick(target)
            if f < 0:
                continue
            part = ch.table.res[f].astype(np.int64)
            if any(np.any(part > self.lims[q + p]) for p in range(1, k)):
                continue
            if not all(self._link_ok(q + p, self._cross(i, p + 1, k), target) for p in range(k - 1)):
                continue
            fit = np.flatnonzero(np.all(part <= rooms, axis=1))
            if len(fit):
                tails_at[q + k - 1][(i + 1, k, 0)] = (part, (q, i, [(int(f), None)] * k, origins[fit[0]]))
        for k in uneven:
            found = self._uneven(i, q, k, target, origins, rooms)
            if found is not None:
                tails_at[q + k - 1][(i + 1, k, 1)] = found

    def _cross(self, i: int, num: int, den: int) -> int:
        """Bits per frame on the link after a split part of unit ``i``: what crosses the cut
        before ``i`` and the share ``num/den`` of its output computed so far."""
        prob = self.prob
        return int(prob.cut_bits[i]) + prob.tensor_bits[prob.units[i].out_tensor] * num // den

    def _uneven(self, i: int, q: int, k: int, target: int, origins: list, rooms: np.ndarray) -> tuple | None:
        """Unit ``i`` split into ``k`` uneven parts from core position ``q`` (its first part
        after one of ``origins``, whose rooms are the rows of ``rooms``), or None.

        Parts are multiples of a step ``c0`` (a multiple of the unit's granule dividing
        ``Co``, the least whose gather keeps ``target``). Greedy: the first part as large as
        the best origin's room allows, each middle part as large as a core allows, the
        last part the rest (the smallest tail it can leave for the units after it).
        """
        co = self.prob.units[i].geom.co
        key = (i, target)
        if key not in self._picks:
            self._picks = {k: v for k, v in self._picks.items() if k[1] == target}  # one target at a time
            self._picks[key] = self._part_picks(i, target)
        if self._picks[key] is None:
            return None
        c0, sizes_all, picks, res_all, ok_step = self._picks[key]

        def largest(room: np.ndarray, most: int) -> np.ndarray:
            """Per row of ``room``: the largest part size of at most ``most`` channels
            fitting that room, 0 when none does."""
            fit = (ok_step & (sizes_all <= most)) & np.all(res_all <= room[:, None, :], axis=2)
            return np.where(fit, sizes_all, 0).max(axis=1, initial=0)

        got = largest(rooms, co - c0 * (k - 1))
        first = int(np.argmax(got))  # the first origin of the largest first part
        if got[first] == 0:
            return None
        sizes, origin = [int(got[first])], origins[first]
        for p in range(1, k - 1):
            c = int(largest(np.asarray(self.lims[q + p], dtype=np.int64)[None], co - sum(sizes) - c0 * (k - 1 - p))[0])
            if not c:
                return None
            sizes.append(c)
        rest = co - sum(sizes)
        if rest % c0 or rest not in picks or np.any(picks[rest][1] > self.lims[q + k - 1]):
            return None
        sizes.append(rest)
        done = np.cumsum(sizes)
        if not all(self._link_ok(q + p, self._cross(i, int(done[p]), co), target) for p in range(k - 1)):
            return None
        return picks[rest][1], (q, i, [(int(picks[c][0]), c) for c in sizes], origin)

    def _part_picks(self, i: int, target: int) -> tuple | None:
        """Unit ``i``'s uneven parts at ``target``: the step ``c0`` (None when no step keeps
        the gather within ``target``), the part sizes with a folding, each size's (folding,
        resources), the resources as rows, and which sizes are multiples of ``c0``."""
        unit = self.prob.units[i]
        g, co = unit.geom, unit.geom.co
        c0 = next((c for c in range(unit.granule, co, unit.granule)
                   if co % c == 0 and g.ho * g.wo * (co // c) <= target), None)
        if c0 is None:
            return None
        got = [(c, f, ch.table.res[f]) for c, ch in self.part_ch[i].items() if (f := ch.pick(target)) >= 0]
        sizes = np.array([c for c, _, _ in got], np.int64)
        return (c0, sizes, {c: (int(f), r.astype(np.int64)) for c, f, r in got},
                np.array([r for _, _, r in got], np.int64).reshape(-1, N_RES), sizes % c0 == 0)

    def _rebuild(self, q_end, hist, idx, target) -> Segmentation:
        m = self.prob.m
        core = [-1] * m
        fold = list(idx)
        split: dict[int, list[tuple[int, int]]] = {}
        part_co: dict[int, list[int]] = {}
        j, q = m, q_end
        state = None   # a state already chosen for core q (following a split's origin)
        while j > 0 or state is not None:
            reach, jmax, tails = hist[q]
            if state is None:
                cands = [int(s) for s in np.nonzero(reach)[0] if s <= j <= max(jmax[s], s)]
                state = ("plain", max(cands)) if cands else \
                    ("tail", next(key for key, v in tails.items() if key[0] <= j <= v[2]))
            kind, key = state
            s = key if kind == "plain" else key[0]
            for u in range(s, j):
                core[u] = self.path[q]
            if kind == "plain":
                j, q, state = s, q - 1, None
                continue
            q0, i, parts, origin = tails[key][1]
            split[i] = [(self.path[q0 + p], f) for p, (f, _) in enumerate(parts)]
            if parts[0][1] is not None:
                part_co[i] = [c for _, c in parts]
            core[i], fold[i] = self.path[q], -1
            j, q, state = i, q0, origin
        return Segmentation(core=core, fold=fold, split=split, part_co=part_co, target=target,
                            monotone=self.monotone)


def _unit_rows(prob: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Every unit table's rows in one array (and a last row of BIG: no folding) with each
    table's first row, so that `SegmentDP._choose` gathers a target's rows in one indexing;
    kept on the problem while its tables' arrays stay the same."""
    res = [u.table.res for u in prob.units]
    got = prob.unit_rows
    if got is None or len(got[0]) != len(res) or any(a is not b for a, b in zip(got[0], res, strict=True)):
        rows = np.vstack([*(r.astype(np.int64).reshape(-1, N_RES) for r in res),
                          np.full((1, N_RES), BIG, dtype=np.int64)])
        got = prob.unit_rows = (res, rows, np.cumsum([0, *(len(r) for r in res)])[:-1])
    return got[1], got[2]


def part_tables(prob: Problem, seg: Segmentation, u: int) -> list[Table]:
    """The table each part of split unit ``u`` folds from (``seg.split[u]`` indexes them)."""
    unit = prob.units[u]
    if u in seg.part_co:
        return [unit.part_tables[c] for c in seg.part_co[u]]
    return [unit.split_tables[len(seg.split[u])]] * len(seg.split[u])


def candidate_targets(prob: Problem) -> np.ndarray:
    """Every ii a unit, a split part or a link cut can have, ascending."""
    vals = [u.table.ii for u in prob.units]
    vals += [t.ii for u in prob.units for t in u.split_tables.values()]
    vals += [t.ii for u in prob.units for t in u.part_tables.values()]
    vals += [np.array([u.geom.ho * u.geom.wo * (u.geom.co // c)]) for u in prob.units
             for c in u.part_tables if u.geom.co % c == 0]
    widths = [w for w in (prob.link_width(a, b) for a, b in zip(prob.core_path, prob.core_path[1:], strict=False)) if w]
    for w in set(widths):
        vals.append(-(-prob.cut_bits // w))
    return np.unique(np.concatenate(vals))


def best_segmentation(prob: Problem, n_cores: int | None = None,
                      prove_seconds: float = 60.0) -> Segmentation | None:
    """Least-target segmentation over all rules (bisection per rule).

    When a rule's folding choice is not monotone, every candidate between the lower bound
    and the bisection result is checked too (for at most ``prove_seconds``); the result's
    ``monotone`` flag says whether the least target was proved under the rules. Such a rule
    may also fit at a smaller target while it does not at the largest one (at the largest
    target every block takes its cheapest row under the rule, which need not be the one that
    leaves room for the others: LeNet on one core short of BRAM18 fits only with its dense
    layer at a faster folding whose weights are LUTs), so then the candidates from the lower
    bound up are checked as well, the first that fits being the rule's least target.
    """
    deadline = time.monotonic() + prove_seconds
    cands = candidate_targets(prob)
    cands = cands[cands > 0] if np.any(cands > 0) else cands
    best: Segmentation | None = None
    lb_pos: int | None = None
    unproved = False  # a non-monotone rule's scan ran out of time below the best target
    done: set[bytes] = set()  # `SegmentDP.signature` of the rules searched to the end
    memo: dict = {}
    for w in rules(prob.limits(prob.core_path[0])):
        dp = SegmentDP(prob, w, n_cores, memo)
        sig = dp.signature()
        if sig in done:
            # The same choices as a rule already searched (and proved) in full: it finds no
            # smaller target (the off-chip rules priced out where no block takes off-chip rows).
            continue
        hi_limit = len(cands) - 1 if best is None else int(np.searchsorted(cands, best.target)) - 1
        if hi_limit < 0:
            continue
        # targets failing `may_fit` cannot fit: `run` is not asked about them
        may = np.zeros(len(cands), dtype=bool)
        may[dp.may_fit(cands, 0, hi_limit + 1)] = True
        if may[hi_limit] and dp.run(int(cands[hi_limit])):
            lo, hi = 0, hi_limit
            while lo < hi:
                mid = (lo + hi) // 2
                if may[mid] and dp.run(int(cands[mid])):
                    hi = mid
                else:
                    lo = mid + 1
            found: int | None = lo
        elif dp.monotone:
            continue
        else:
            found, lo = None, hi_limit
        proved = True
        if not dp.monotone:
            # Feasibility may not be monotone in the target: check every smaller candidate
            # above the lower bound (within the deadline) before calling the result exact.
            if lb_pos is None:
                lb_pos = int(np.searchsorted(cands, lower_bound(prob, n_cores)))
            for c in np.nonzero(may[lb_pos:lo])[0] + lb_pos:
                if time.monotonic() > deadline:
                    proved = False
                    break
                if dp.run(int(cands[c])):
                    found = c
                    break
        if proved:
            done.add(sig)
        if found is None:
            unproved = unproved or not proved
            continue
        seg = dp.run(int(cands[found]), reconstruct=True)
        if seg is not None:
            seg.monotone = proved
            if best is None or seg.target < best.target:
                best = seg
    if best is not None and unproved:
        best.monotone = False
    return best


def lower_bound(prob: Problem, n_cores: int | None = None) -> int:
    """No plan beats this ii: each unit's fastest folding that fits the largest core alone
    (a splittable unit: its fastest part), and the cut over the widest link."""
    path = prob.core_path[: n_cores or len(prob.core_path)]
    lim = np.max(np.array([prob.limits(k) for k in path]), axis=0)
    lb = 0
    for u in prob.units:
        tables = [u.table] + [t for k, t in u.split_tables.items() if k <= len(path)]
        # An uneven split gathers at least two beats per pixel.
        floor = [0] * len(tables) + [2 * u.geom.ho * u.geom.wo] * len(u.part_tables)
        tables += list(u.part_tables.values())
        fits = [np.maximum(t.ii[np.all(t.res <= lim, axis=1)], fl) for t, fl in zip(tables, floor, strict=True)]
        fits = [f for f in fits if len(f)]
        best = int(min(int(f.min()) for f in fits)) if fits else int(u.table.ii.min())
        lb = max(lb, best)
    return lb
