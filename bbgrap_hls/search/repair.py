"""The repair step: a segmentation whose plan, once built, is over a core's limits (FIFOs,
converters and gathers the folding tables only approximate) gets foldings lowered until it
fits, the least ii increase first (`repair`); `violations` lists what a plan exceeds."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.plan import Plan
from bbgrap_hls.search.build import build_plan
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.problem import RES, Problem


def violations(plan: Plan) -> list[tuple[int, str, int, int]]:
    """(core, resource, use, limit) for every limit a plan exceeds."""
    out = []
    for c in plan.cores:
        for r in RES:
            if getattr(c, r) > getattr(c, f"{r}_limit"):
                out.append((c.id, r, getattr(c, r), getattr(c, f"{r}_limit")))
    return out


def repair(prob: Problem, seg: Segmentation, strategy: str, objective: str) -> tuple[Plan, Segmentation]:
    """Build the plan; while a core is over a limit, lower the folding that frees the most of
    that resource for the least ii increase. Returns the plan (possibly still over when
    every unit on the core is at its smallest folding: the caller reports infeasible)."""
    r_index = {r: i for i, r in enumerate(RES)}
    for _ in range(4 * len(prob.core_path) + 20):
        plan = build_plan(prob, seg, strategy, objective)
        bad = [v for v in violations(plan) if v[1] in r_index]
        if not bad:
            return plan, seg
        progress = False
        for core, res, use, lim in bad:
            r, deficit = r_index[res], use - lim
            cp = next(c for c in plan.cores if c.id == core)
            room = np.array([getattr(cp, f"{x}_limit") - getattr(cp, x) for x in RES], dtype=np.int64)
            room[r] = 0
            # Lower foldings on this core, least ii increase per unit freed first, until the
            # blocks' own use has dropped by the deficit; then rebuild (FIFOs may change).
            def lower(u: int, r: int = r, room: np.ndarray = room) -> tuple | None:
                # the unit's folding that frees some of r with the least ii, then the largest
                # saving, then the first row; another resource may grow only into the room the
                # core has left of it (a row with less URAM but many more DSPs would only move
                # the violation; weights moved off chip spend free bandwidth)
                t, f = prob.units[u].table, seg.fold[u]
                grow = np.maximum(t.res - t.res[f], 0)
                cand = np.nonzero((t.res[:, r] < t.res[f, r]) & np.all(grow <= np.maximum(room, 0), axis=1))[0]
                if not len(cand):
                    return None
                g = int(cand[np.lexsort((cand, t.res[cand, r], t.ii[cand]))[0]])
                return int(t.ii[g]), -int(t.res[f, r] - t.res[g, r]), u, g

            # (a block on a one-input-slot row, the integer program's, keeps it: `Table.extra`)
            keys = {u: lower(u) for u in range(prob.m) if seg.core[u] == core and u not in seg.split
                    and seg.fold[u] < len(prob.units[u].table)}
            while deficit > 0:
                best = min((k for k in keys.values() if k is not None), default=None)
                if best is None:
                    break
                u, g = best[2], best[3]
                t = prob.units[u].table
                deficit -= int(t.res[seg.fold[u], r] - t.res[g, r])
                room -= np.maximum(t.res[g] - t.res[seg.fold[u]], 0)
                room[r] = 0
                seg.fold[u] = g
                keys[u] = lower(u)
                progress = True
        if not progress:
            return plan, seg
    return build_plan(prob, seg, strategy, objective), seg
