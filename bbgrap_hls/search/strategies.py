"""The strategies: exact, search (exact plus local refinement), and the baselines."""

from __future__ import annotations

import math
import random
import time

import numpy as np

from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.search.dp import Segmentation, best_segmentation, part_tables
from bbgrap_hls.search.fold import balance, fold_at, fold_core
from bbgrap_hls.search.problem import N_RES, RES, Problem


def exact(prob: Problem, n_cores: int | None = None) -> Segmentation:
    seg = best_segmentation(prob, n_cores)
    if seg is None:
        raise InfeasibleError(explain_infeasible(prob, n_cores))
    return seg


def single(prob: Problem) -> Segmentation:
    return exact(prob, 1)


def _fits(prob: Problem, core: int, units: list[int], folds: list[int]) -> bool:
    use = sum((prob.units[u].table.res[f] for u, f in zip(units, folds, strict=False)), np.zeros(N_RES, np.int64))
    return bool(np.all(use <= prob.limits(core)))


def even(prob: Problem) -> Segmentation:
    """Equal unit counts per core of the path, one parallelism ``s`` for every unit."""
    path, m = prob.core_path, prob.m
    n = min(len(path), m)
    bounds = [round(q * m / n) for q in range(n + 1)]
    core = [0] * m
    for q in range(n):
        for u in range(bounds[q], bounds[q + 1]):
            core[u] = path[q]
    best = None
    s = 1
    while s <= 4096:
        folds = [_uniform(prob, u, s) for u in range(m)]
        if all(_fits(prob, path[q], list(range(bounds[q], bounds[q + 1])),
                     folds[bounds[q]: bounds[q + 1]]) for q in range(n)):
            best = folds
        elif best is not None:
            break
        s *= 2
    if best is None:
        raise InfeasibleError("even: " + explain_infeasible(prob))
    return Segmentation(core=core, fold=best)


def _balanced(prob: Problem, u: int) -> np.ndarray:
    """Each row's resources, each over the first core's limit, summed (the balanced rule):
    where a folding exists with weights in BRAM and in URAM, the relatively cheaper wins."""
    return prob.units[u].table.res @ (1.0 / np.maximum(prob.limits(prob.core_path[0]), 1))


def _uniform(prob: Problem, u: int, s: int) -> int:
    """The row of unit ``u`` at parallelism ``s``: the largest pe and simd up to ``s`` (the
    smallest the table has when none is: an off-chip variant's table may start above 1)."""
    t = prob.units[u].table
    # the baseline has no pixel copies, one pixel a beat, and computes a grouped conv's groups in turn
    one = (t.mmv == 1) & (t.px == 1) & ~t.dense & ~t.wide
    pes, simds = t.pe[one & (t.pe <= s)], t.simd[one & (t.simd <= s)]
    pe = int(pes.max()) if pes.size else int(t.pe[one].min())
    simd = int(simds.max()) if simds.size else int(t.simd[one].min())
    hit = np.nonzero((t.pe == pe) & (t.simd == simd) & one)[0]
    if len(hit):
        cost = _balanced(prob, u)
        return int(min(hit, key=lambda i: (cost[i], i)))
    below = np.nonzero((t.pe <= s) & one)[0]
    return int(below[-1]) if len(below) else int(np.nonzero(one)[0][0])


def _slowest(prob: Problem, u: int) -> int:
    t = prob.units[u].table
    return int(np.lexsort((_balanced(prob, u), -t.ii))[0])


def greedy(prob: Problem) -> Segmentation:
    """Fill cores in topological order at the lowest folding, then balance each core."""
    path, m = prob.core_path, prob.m
    core, fold = [0] * m, [_slowest(prob, u) for u in range(m)]
    q, members = 0, {k: [] for k in path}
    for u in range(m):
        while not _fits(prob, path[q], members[path[q]] + [u], [fold[v] for v in members[path[q]] + [u]]):
            q += 1
            if q >= len(path):
                raise InfeasibleError("greedy: " + explain_infeasible(prob))
        members[path[q]].append(u)
        core[u] = path[q]
    for k, us in members.items():
        idx = balance([prob.units[u].table for u in us], prob.limits(k), [fold[u] for u in us])
        for u, f in zip(us, idx, strict=False):
            fold[u] = f
    return Segmentation(core=core, fold=fold)


def boost(prob: Problem, seg: Segmentation) -> Segmentation:
    """For the latency objective: on each core, speed up blocks beyond the design ii while
    they fit (slowest first, each to its cheapest faster folding; split blocks keep theirs).
    A block that ends earlier lets the blocks after it start earlier."""
    fold = list(seg.fold)
    for k in prob.core_path:
        us = [u for u in range(prob.m) if seg.core[u] == k and u not in seg.split]
        if not us:
            continue
        lim = prob.limits(k)
        inv = 1.0 / np.maximum(lim.astype(float), 1.0)
        use = sum((prob.units[u].table.res[fold[u]] for u in us), np.zeros(N_RES, np.int64))
        use = use + sum((t.res[f] for p, parts in seg.split.items()
                         for (c, f), t in zip(parts, part_tables(prob, seg, p), strict=True) if c == k),
                        np.zeros(N_RES, np.int64))
        moved = True
        while moved:
            moved = False
            for u in sorted(us, key=lambda u: (-int(prob.units[u].table.ii[fold[u]]), u)):
                t = prob.units[u].table
                room = lim - (use - t.res[fold[u]])
                ok = [f for f in np.nonzero(t.ii < t.ii[fold[u]])[0] if np.all(t.res[f] <= room)]
                if ok:
                    f = min(ok, key=lambda f: (float(t.res[f] @ inv), int(t.pe[f] * t.simd[f] * t.copies(f)), int(f)))
                    use = use - t.res[fold[u]] + t.res[f]
                    fold[u], moved = int(f), True
                    break
    return Segmentation(core=list(seg.core), fold=fold, split=dict(seg.split), part_co=dict(seg.part_co),
                        target=seg.target, monotone=False)


def _core_ii(prob: Problem, k: int, units: list[int]) -> tuple[int, list[int]] | None:
    return fold_core([prob.units[u].table for u in units], prob.limits(k))


def _link_ii(prob: Problem, core: list[int]) -> int:
    """Largest link ii of a contiguous mapping (cut sizes at each core boundary)."""
    path, worst = prob.core_path, 0
    for j in range(1, prob.m):
        if core[j] != core[j - 1]:
            a, b = path.index(core[j - 1]), path.index(core[j])
            for x in range(a, b):
                w = prob.link_width(path[x], path[x + 1]) or 1
                worst = max(worst, -(-int(prob.cut_bits[j]) // w))
    return worst


def refine(prob: Problem, seg: Segmentation, time_limit: float, seed: int) -> Segmentation:
    """Local search from ``seg``: refold every core on its own, then move boundary units
    between neighbouring cores while the design ii drops. Split units stay where they are.
    Deterministic for a seed: the move order is seeded and the iteration count bounded."""
    if seg.split:
        return seg
    rng = random.Random(seed)
    path = prob.core_path
    core = list(seg.core)
    t0 = time.monotonic()

    cache: dict[tuple[int, tuple[int, ...]], tuple[int, list[int]] | None] = {}

    def evaluate(core):
        folds, worst = [0] * prob.m, _link_ii(prob, core)
        for k in path:
            us = tuple(u for u in range(prob.m) if core[u] == k)
            if (k, us) not in cache:
                cache[(k, us)] = _core_ii(prob, k, list(us))
            r = cache[(k, us)]
            if r is None:
                return None
            worst = max(worst, r[0])
            for u, f in zip(us, r[1], strict=False):
                folds[u] = f
        return worst, folds

    cur = evaluate(core)
    if cur is None:
        return seg
    base_ii = max(int(prob.units[u].table.ii[seg.fold[u]]) for u in range(prob.m))
    base_ii = max(base_ii, _link_ii(prob, seg.core))
    if cur[0] > base_ii:
        cur = (base_ii, list(seg.fold))
    for _ in range(4 * prob.m + 20):
        if time.monotonic() - t0 > time_limit:
            break
        moves = []
        for j in range(1, prob.m):
            if core[j] != core[j - 1]:
                moves += [(j, core[j - 1]), (j - 1, core[j])]
        rng.shuffle(moves)
        improved = False
        for u, k in moves:
            trial = list(core)
            trial[u] = k
            r = evaluate(trial)
            if r is not None and r[0] < cur[0]:
                core, cur, improved = trial, r, True
                break
            if time.monotonic() - t0 > time_limit:
                break
        if not improved:
            break
    if cur[0] < base_ii:
        # Each core was folded to its own least ii; refold it to the design ii only.
        fold = list(cur[1])
        for k in path:
            us = [u for u in range(prob.m) if core[u] == k]
            idx = fold_at([prob.units[u].table for u in us], prob.limits(k), cur[0])
            for u, f in zip(us, idx or [], strict=False):
                fold[u] = f
        return Segmentation(core=core, fold=fold, target=cur[0], monotone=False)
    return seg


def explain_infeasible(prob: Problem, n_cores: int | None = None) -> str:
    """Which resource on which core is short by how much, and the smallest change that fits."""
    names = ("DSP", "BRAM18", "URAM", "LUT", "bytes per 1,024 cycles of memory bandwidth")
    path = prob.core_path[: n_cores or len(prob.core_path)]
    lims = [prob.limits(k) for k in path]
    big = max(lims, key=lambda x: tuple(x))
    # every row a block may take, those with FIFOs in board memory too (`Table.more`)
    tables = [u.table if u.table.more is None else u.table.full() for u in prob.units]
    for u, t in zip(prob.units, tables, strict=True):
        low = t.res.min(axis=0)
        for r in range(N_RES):
            if low[r] > big[r] and not u.split_tables:
                f = int(np.argmin(t.res[:, r]))
                parts = math.ceil(low[r] / max(big[r], 1))  # a limit may round down to 0
                return (f"node '{u.node.name}' ({u.node.op}, output {u.geom.ho}x{u.geom.wo}x{u.geom.co}) "
                        f"needs {int(low[r])} {names[r]} even at its lowest folding (pe={int(t.pe[f])}, "
                        f"simd={int(t.simd[f])}); core {path[0]} allows {int(big[r])}: short by "
                        f"{int(low[r] - big[r])}. Smallest change: split it over >= {parts} cores "
                        f"(a board with >= {parts} linked cores) or a core with >= {int(low[r])} {names[r]}")
    need = sum(t.res.min(axis=0) for t in tables)
    total = sum(lims)
    for r in range(N_RES):
        if need[r] > total[r]:
            per = max(int(big[r]), 1)
            return (f"the model needs {int(need[r])} {names[r]} at the lowest folding, the "
                    f"{len(path)} core(s) {path} allow {int(total[r])} together: short by "
                    f"{int(need[r] - total[r])}. Smallest change: a board with >= "
                    f"{math.ceil(need[r] / per)} cores of {per} {names[r]} each")
    # Every block alone fits; together at the folding that uses least of all resources
    # (each over the path's total) the one most over names the cause, not the links.
    inv = np.where(total > 0, 1.0 / np.maximum(total, 1), 1e6)
    pick = sum(t.res[int(np.argmin(t.res @ inv))] for t in tables)
    over = pick - total
    r = int(np.argmax(over * inv))
    if over[r] > 0 or len(path) == 1:
        uses = ", ".join(f"{int(pick[i])} / {int(total[i])} {names[i]}" for i in range(N_RES) if total[i] or pick[i])
        return (f"the {prob.m} blocks do not fit cores {path} together: with every block at its most "
                f"economical folding they need {uses}"
                + (f"; {names[r]} is short by {int(over[r])}" if over[r] > 0 else
                   "; no folding mix found fits every resource at once")
                + ". Smallest change: a larger board"
                + ("" if prob.offchip_memory else ", or --offchip-weights (weights in the board memory)"))
    # Enough in total: fill the cores in block order at those foldings; the core that runs
    # out first names the resource (the links come last: only when the fill fits).
    k, use = 0, np.zeros(N_RES, np.int64)
    for u, t in zip(prob.units, tables, strict=True):
        row = t.res[int(np.argmin(t.res @ inv))]
        if np.all(use + row <= lims[k]):
            use = use + row
            continue
        if k + 1 < len(path) and np.all(row <= lims[k + 1]):
            k, use = k + 1, row.copy()
            continue
        over = use + row - lims[k]
        r = int(np.argmax(np.where(lims[k] > 0, over / np.maximum(lims[k], 1), 0)))
        return (f"the {prob.m} blocks do not fit cores {path} in order: with every block at its most "
                f"economical folding, core {path[k]} runs out of {names[r]} at block '{u.node.name}' "
                f"(needs {int(use[r] + row[r])}, has {int(lims[k][r])}) with "
                f"{prob.m - u.index} block(s) still to place. Smallest change: a larger board"
                + ("" if prob.offchip_memory else ", or --offchip-weights (weights in the board memory)"))
    return (f"no contiguous split of the {prob.m} blocks over cores {path} fits every core's "
            f"limits and every link (largest cut {int(prob.cut_bits.max())} bits/frame); "
            f"try a board with more cores, or --strategy greedy")


_ = RES
