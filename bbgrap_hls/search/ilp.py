"""Foldings chosen jointly per core by an integer program (HiGHS, `highspy`).

The segmentation's folding rules pick each block's cheapest row meeting a target under a
weighting of the resources, one block at a time (`fold.py`). Where several resources bind
at once (a Zynq part: BRAM18, URAM, LUTs and the memory bandwidth all short; an SLR whose
DSPs and LUTs are both nearly full), a choice made block by block can fail although some
combination of rows fits: ResNet-18 and MobileNetV2 on zcu104 were refused that way,
ResNet-18 on zcu102 planned at 7.2 M cycles a frame where rows fitting at 1.8 M existed, and
ResNet-18 on u250 at 112,896 where 102,312 fits the same segmentation.

`fit_rows` solves the choice exactly: one row per table with ``ii <= target``, the rows'
resources summed within a core's limits, minimising the sum of each row's resources over
the limits (the least-used design, which leaves the most room for what the tables do not
charge). Rows dominated in ii and every resource are dropped first (`candidates`).
`joint_plan` keeps a segmentation's cores and splits (on a one-core path: every block on
it) and searches the least target at which the built plan fits, each core's rows chosen
by its own program: the tables charge a block and its input FIFOs, not the FIFOs around
off-chip blocks, link endpoints or the converters the built plan adds, so at each target the
programs are solved again with a core's limits lowered by what its built plan used beyond
its rows (`REFITS` times at most), and targets are bisected over the rows' ii values (a
target that fails is taken to mean every lower one fails: not proved).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import numpy as np

from bbgrap_hls.plan import Plan
from bbgrap_hls.search import couplings
from bbgrap_hls.search.build import build_plan
from bbgrap_hls.search.couplings import Item, Lag, Pair, legal_rows, one_slot_rows, pair_rows
from bbgrap_hls.search.dp import Segmentation, part_tables
from bbgrap_hls.search.fifo_memory import room_to_free
from bbgrap_hls.search.problem import N_RES, RES, Problem
from bbgrap_hls.search.repair import violations
from bbgrap_hls.search.tables import Table

JOINT = "integer program"
"""`Segmentation.source` of a plan whose foldings `joint_plan` chose."""

REFITS = 4
"""Programs solved at one target, each with the limits less the built plan's extra use."""

_BRAM, _URAM, _LUT = RES.index("bram18"), RES.index("uram"), RES.index("lut")

TIME_LIMIT = 30.0
"""Seconds HiGHS may spend on one program (a safety net: the programs seen solve in well
under a second; a program stopped by it uses the best rows found, or none)."""


_QUIET: list[bool] = []


def _highs():
    """A silent `highspy.Highs`. The first one of a process prints HiGHS' banner on file
    descriptor 1 (the C library's stdout, before any option can be set): it is sent to
    /dev/null (the plan's own output stays what it is)."""
    import highspy

    if _QUIET:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
        _QUIET.append(True)
    h.setOptionValue("output_flag", False)
    # one thread: HiGHS keeps its worker threads after a run, and `make_plan` forks a second
    # planning process (`parallel.Aside`), whose copy of a threaded HiGHS would wait on workers
    # it does not have (a hang, seen on GoogLeNet)
    h.setOptionValue("threads", 1)
    return h


MIP_GAP = 0.01
"""Relative gap at which HiGHS stops: the objective only ranks fitting choices."""


def _pareto(res: np.ndarray, rows: np.ndarray, tie: np.ndarray | None = None) -> np.ndarray:
    """Of ``rows``, those no other row of ``rows`` matches or beats in every column of
    ``res`` (of equal rows the one of least ``tie``, then the first); a choice using a
    dominated row fits with its dominator too. Rows are visited by ascending sum (a dominator comes first), `_CHUNK` at a time: a
    row of the block is dropped when an earlier row of the block, or a row kept before the
    block, matches or beats it (dominance is transitive, so earlier rows that were themselves
    dropped may be counted: their dominators were earlier still)."""
    if len(rows) < 2:
        return rows
    r = res[rows]
    order = np.lexsort((rows, np.zeros(len(rows)) if tie is None else tie[rows], r.sum(axis=1)))
    cols = np.ascontiguousarray(r[order].T)  # one array per column, rows by ascending sum
    keep = np.zeros(len(r), dtype=bool)
    kept = cols[:, :0]  # the rows kept so far, by column
    earlier = np.tri(_CHUNK, k=-1, dtype=bool)  # [i, j]: j comes before i
    for a in range(0, len(r), _CHUNK):
        block = cols[:, a:a + _CHUNK]
        n = block.shape[1]
        # [i, j]: row j matches or beats row i in every column (a column at a time: no 3-D temporary)
        beaten = earlier[:n, :n].copy()
        for c in block:
            beaten &= c[None, :] <= c[:, None]
        ok = ~beaten.any(axis=1)
        if kept.shape[1] and ok.any():
            rest = block[:, ok]
            beaten = kept[0][None, :] <= rest[0][:, None]
            for k, c in zip(kept[1:], rest[1:], strict=True):
                beaten &= k[None, :] <= c[:, None]
            ok[ok] = ~beaten.any(axis=1)
        keep[a:a + n] = ok
        kept = np.concatenate((kept, block[:, ok]), axis=1)
    return np.sort(rows[order[keep]])


_CHUNK = 64
"""Rows `_pareto` checks against the kept ones at once (bounds its memory)."""


def candidates(t: Table) -> np.ndarray:
    """The rows of ``t`` no other row matches or beats in ii and every resource: the only ones
    a least-resource choice at any target needs. Off-chip rows and the others separately:
    `_at` may surcharge the off-chip ones."""
    key = np.column_stack((t.ii, t.res))
    return np.sort(np.concatenate([_pareto(key, np.nonzero(m)[0]) for m in _groups(t)]))


def _groups(t: Table) -> tuple[np.ndarray, ...]:
    """Row masks of ``t`` that dominance may not cross: on-chip rows, off-chip rows (with a
    DDR frame stage or not: legal after any producer), and off-chip rows with one input slot
    without a stage (legal only after some producers: `Pair`)."""
    return ~t.ddr, t.ddr & ~t.paired, t.paired


def fit_rows(tables: list[Table], limits: np.ndarray, target: int, scale: np.ndarray | None = None,
             among: list[np.ndarray] | None = None, prune: bool = True,
             lags: list[Lag] | None = None, least: int | None = None, info: dict | None = None,
             pairs: list[Pair] | None = None, relax: bool = False) -> list[int] | None:
    """One row index per table, each with ``ii <= target`` (and in ``among[i]`` when given:
    e.g. `candidates`), whose resources sum to at most ``limits`` (`RES` order), minimising
    the sum of the rows' resources over ``scale`` (default ``limits``); None when no choice
    fits (or HiGHS found none in `TIME_LIMIT`). Rows another row of the table matches or
    beats in every resource are dropped first (`_rows_at`) unless ``prune`` is False
    (``among`` already pruned at this target). Each of ``lags`` adds what a reconvergent FIFO holds
    beyond its rows' charge: its frames of lag (at least the sum of the chosen rows'
    ``weights``) times its resources per frame, a kind in its ``gate`` only with one of the
    rows it names chosen; rows with FIFOs in board memory come priced at ``target``
    (`Table.at_target`, as `_at` and `explain` give them). With ``least`` (a `RES` index) the program
    minimises that resource's total instead, without its limit. Each of ``pairs`` allows a
    reader's one-input-slot rows only with a producer row that serves them (`Pair`). ``info`` (when given)
    receives ``lag_use`` (what the lags charge, `RES` order), ``objective`` and ``bound`` (the
    objective found and HiGHS' proved lower bound on it). ``relax``: the linear relaxation (each
    table's choice a mix of its rows): None when even that does not fit, else each table's
    row of largest share (a necessary condition only)."""
    import highspy

    scale = np.maximum((limits if scale is None else scale).astype(float), 1.0)
    among = among or [np.arange(len(t)) for t in tables]
    rows = ([_rows_at(t, a, target) for t, a in zip(tables, among, strict=True)] if prune
            else [a[t.ii[a] <= target] for t, a in zip(tables, among, strict=True)])
    if any(len(r) == 0 for r in rows):
        return None
    res = np.concatenate([t.res[r] for t, r in zip(tables, rows, strict=True)]).astype(float)
    owner = np.repeat(np.arange(len(tables)), [len(r) for r in rows])
    first = np.concatenate(([0], np.cumsum([len(r) for r in rows])))
    lags = lags or []
    kinds = [len(lag.per_frame) for lag in lags]
    n, u, z = len(res), len(tables), sum(kinds)
    # The constraint matrix by columns, from (row, column, value) triples. Column j < n (a
    # table row) has a 1 in its table's row (choose exactly one row per table), its nonzero
    # resources in rows u .. u + N_RES - 1 and minus its lag weights in the lags' rows
    # u + N_RES + l; lag l has a column per memory (its frames there, continuous) with that
    # memory's resources per frame and a 1 in its row (frames - sum of the chosen weights >= 0).
    cols, q = np.nonzero(res)
    r_, c_, v_ = [owner, u + q], [np.arange(n), cols], [np.ones(n), res[cols, q]]
    col_of = n + np.concatenate(([0], np.cumsum(kinds)))
    for lag_i, lag in enumerate(lags):
        for ti, w in lag.weights:
            j = np.nonzero(w[rows[ti]])[0]
            r_.append(np.full(len(j), u + N_RES + lag_i))
            c_.append(first[ti] + j)
            v_.append(-w[rows[ti]][j].astype(float))
        for a, per in enumerate(lag.per_frame):
            q = np.nonzero(per)[0]
            r_ += [u + q, [u + N_RES + lag_i]]
            c_ += [np.full(len(q), col_of[lag_i] + a), [col_of[lag_i] + a]]
            v_ += [per[q].astype(float), [1.0]]
    # pair constraints: the reader's one-slot rows of a lane count minus the producer rows
    # that allow them <= 0
    n_pairs = 0
    for pair in pairs or []:
        for xs, us in pair_rows(pair, tables, rows, target):
            at = u + N_RES + len(lags) + n_pairs
            r_ += [np.full(len(xs), at), np.full(len(us), at)]
            c_ += [first[pair.reader] + xs, first[pair.producer] + us]
            v_ += [np.ones(len(xs)), -np.ones(len(us))]
            n_pairs += 1
    # gated lag kinds: the kind's frames minus (the most frames the lag can need) times the
    # table's allowed chosen rows <= 0
    n_gates = 0
    for lag_i, lag in enumerate(lags):
        most = sum(float(w[rows[ti]].max(initial=0.0)) for ti, w in lag.weights)
        for a, (ti, allow) in lag.gate.items():
            at = u + N_RES + len(lags) + n_pairs + n_gates
            j = np.nonzero(allow[rows[ti]])[0]
            r_ += [[at], np.full(len(j), at)]
            c_ += [[col_of[lag_i] + a], first[ti] + j]
            v_ += [[1.0], np.full(len(j), -max(most, 1.0))]
            n_gates += 1
    row, col, value = (np.concatenate([np.asarray(a) for a in x]) for x in (r_, c_, v_))
    order = np.argsort(col, kind="stable")
    index = row[order].astype(np.int32)
    value = value[order]
    start = np.concatenate(([0], np.cumsum(np.bincount(col.astype(np.int64), minlength=n + z)))).astype(np.int32)
    per_frame = np.concatenate([np.asarray(lag.per_frame, dtype=float) for lag in lags]) if lags else np.zeros((0, N_RES))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n + z, u + N_RES + len(lags) + n_pairs + n_gates
    weight = 1.0 / scale
    upper = limits.astype(float)
    if least is not None:
        weight = np.eye(N_RES)[least]
        upper[least] = highspy.kHighsInf
    lp.col_cost_ = np.concatenate((res @ weight, per_frame @ weight))
    lp.col_lower_ = np.zeros(n + z)
    lp.col_upper_ = np.concatenate((np.ones(n), np.full(z, highspy.kHighsInf)))
    lp.row_lower_ = np.concatenate((np.ones(u), np.full(N_RES, -highspy.kHighsInf), np.zeros(len(lags)),
                                    np.full(n_pairs + n_gates, -highspy.kHighsInf)))
    lp.row_upper_ = np.concatenate((np.ones(u), upper, np.full(len(lags), highspy.kHighsInf),
                                    np.zeros(n_pairs + n_gates)))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    if not relax:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * n + [highspy.HighsVarType.kContinuous] * z
    h = _highs()
    h.setOptionValue("time_limit", TIME_LIMIT)
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("mip_rel_gap", MIP_GAP)
    h.passModel(lp)
    h.run()
    highspy.Highs.resetGlobalScheduler(True)  # no HiGHS thread left for a fork to miss
    if h.getInfo().primal_solution_status != 2:  # no feasible point
        return None
    x = np.asarray(h.getSolution().col_value)
    if info is not None:
        got = h.getInfo()
        info.update(lag_use=x[n:] @ per_frame, objective=got.objective_function_value, bound=got.mip_dual_bound)
    x = x[:n]
    if relax:
        return [int(rows[i][np.argmax(x[first[i]:first[i + 1]])]) for i in range(u)]
    pick = [-1] * u
    for j in np.nonzero(x > 0.5)[0]:
        pick[owner[j]] = int(rows[owner[j]][j - first[owner[j]]])
    return pick if min(pick) >= 0 else None


def _items(prob: Problem, seg: Segmentation) -> list[Item]:
    """The program's blocks and split parts; a block that may take one-input-slot rows has
    them too (`Table.full`, `couplings.one_slot_rows`), and one with rows whose FIFOs are in
    board memory (`Table.more`) those."""
    out = []
    for u in range(prob.m):
        if u in seg.split:
            for j, ((c, _), t) in enumerate(zip(seg.split[u], part_tables(prob, seg, u), strict=True)):
                out.append(Item(u, j, c, t))
        else:
            t = prob.units[u].table
            if one_slot_rows(prob, seg, u) or t.more is not None:
                t = t.full()
            out.append(Item(u, -1, seg.core[u], t))
    return out


def _with_folds(seg: Segmentation, items: list[Item], folds: dict[int, int], target: int) -> Segmentation:
    """``seg`` with item ``i``'s row ``folds[i]``, its cores and splits as they were."""
    fold = list(seg.fold)
    split = {u: list(ps) for u, ps in seg.split.items()}
    for i, f in folds.items():
        it = items[i]
        if it.part < 0:
            fold[it.unit] = f
        else:
            split[it.unit][it.part] = (it.core, f)
    return Segmentation(core=list(seg.core), fold=fold, split=split, part_co=dict(seg.part_co),
                        target=int(target), monotone=False)


def _rows_at(t: Table, among: np.ndarray | None, target: int) -> np.ndarray:
    """The rows of ``among`` (default: all) meeting ``target`` that no other such row matches
    or beats in every resource (of equal ones the least ii), off-chip rows and the others
    apart (so the set stays right when `_at` surcharges the off-chip rows). The same rows from
    all rows as from `candidates`."""
    a = np.arange(len(t)) if among is None else among
    a = a[t.ii[a] <= target]
    # off-chip rows by ii too: their ii sets the lag they add (`couplings.lags`)
    on, *off = (m[a] for m in _groups(t))
    key = np.column_stack((t.ii, t.res))
    return np.sort(np.concatenate((_pareto(t.res, a[on], tie=t.ii), *(_pareto(key, a[m]) for m in off))))


def _at(prob: Problem, seg0: Segmentation, items: list[Item], target: int, strategy: str, objective: str,
        among: list[np.ndarray] | None, last: dict | None = None,
        hint: dict | None = None) -> tuple[Plan, Segmentation] | None:
    """A plan with ``seg0``'s cores and splits whose blocks all meet ``target`` and which
    fits, or None; each core's rows chosen by its own program.

    The programs charge the reconvergent FIFOs that off-chip rows lengthen (`couplings.lags`, bounds);
    what the built plan uses beyond its rows and those charges is the rest of them (blocks on
    other cores, the bounds' rounding) and, across cores, the links' endpoints. First a core's
    limits are lowered by that excess (`REFITS` programs); if that finds no fitting plan,
    that extra is spread over the core's off-chip rows as a surcharge instead (the next
    program then weighs fewer off-chip blocks against their weights on chip). If that fails
    too, a ``uram`` mode (on a board with URAM) and then a ``lutram`` mode: a core over its
    BRAM18 keeps its BRAM18 limit and leaves free the URAM, or the LUTs, its FIFOs would need
    to give the excess back (`fifo_memory.room_to_free`; the build then moves them,
    `fifos_to_uram`, `fifos_to_lutram`): the program keeps fewer weights in URAM or spends
    fewer LUTs. The mode that fitted the last target
    (``hint``, `joint_plan`'s) is tried first: any plan that fits at ``target`` will do.
    ``last`` (when
    given) receives the violations of the last plan built (`repair.violations`). The rows with
    FIFOs in board memory are priced at ``target`` first (`Table.at_target`), so the pruning,
    the programs and the excess all see one charge."""
    items = [replace(it, table=it.table.at_target(target)) for it in items]
    on = {k: [i for i, it in enumerate(items) if it.core == k] for k in prob.core_path}
    limits = {k: prob.limits(k) for k in on}
    pruned: dict[int, np.ndarray] = {}  # per table: equal split parts share one
    for i, it in enumerate(items):
        if id(it.table) not in pruned:
            pruned[id(it.table)] = _rows_at(it.table, None if among is None else among[i], target)
    rows_at = [pruned[id(it.table)] for it in items]
    rows_at = [legal_rows(prob, seg0, it, r) for it, r in zip(items, rows_at, strict=True)]
    lags = {k: couplings.lags(prob, items, idx, target) for k, idx in on.items()}
    pairs = {k: couplings.pairs(prob, seg0, items, idx) for k, idx in on.items()}
    modes = ("room", "spread") + (("uram",) if any(limits[k][_URAM] > 0 for k in on) else ()) + ("lutram",)
    board_rows = [r[_in_board_memory(it.table)[r]] for it, r in zip(items, rows_at, strict=True)]
    on_chip = [r[~_in_board_memory(it.table)[r]] for it, r in zip(items, rows_at, strict=True)]
    if any(len(b) for b in board_rows) and all(len(r) for r in on_chip):
        modes += (ON_CHIP,)
    if hint is not None and hint.get("mode") in modes:  # the mode that fitted the last target first
        modes = (hint["mode"],) + tuple(m for m in modes if m != hint["mode"])
    for mode in modes:
        spread = mode == "spread"
        among_k = on_chip if mode == ON_CHIP else rows_at
        room = {k: limits[k].copy() for k in on}
        surcharge = {k: np.zeros(N_RES, dtype=np.int64) for k in on}
        folds: dict[int, int] = {}
        charged = {k: {"lag_use": np.zeros(N_RES)} for k in on}  # what each core's program charged for its lags
        for refit in range(REFITS):
            for k, idx in on.items():
                tables = [items[i].table for i in idx]
                if spread and surcharge[k].any():
                    tables = [replace(t, res=t.res + np.outer(t.ddr, surcharge[k])) for t in tables]
                pick = (fit_rows(tables, room[k], target, scale=limits[k], among=[among_k[i] for i in idx],
                                 prune=False, lags=lags[k], info=charged[k], pairs=pairs[k]) if idx else [])
                if pick is None:
                    if not refit and mode != ON_CHIP:
                        return None  # at the full limits: every mode's first programs are these
                    break
                folds.update(zip(idx, pick, strict=True))
            else:
                seg = _with_folds(seg0, items, folds, target)
                plan = build_plan(prob, seg, strategy, objective)
                over = violations(plan)
                if last is not None:
                    last["violations"] = over
                bad = {c for c, *_ in over}
                if not bad:
                    if hint is not None:
                        hint["mode"] = mode
                    return plan, seg
                stuck = False
                for cp in plan.cores:
                    if cp.id not in bad:
                        continue
                    rows = sum((items[i].table.res[folds[i]] for i in on[cp.id]), np.zeros(N_RES, dtype=np.int64))
                    rows = rows + np.floor(charged[cp.id]["lag_use"]).astype(np.int64)
                    extra = np.maximum(np.array([getattr(cp, r) for r in RES], dtype=np.int64) - rows, 0)
                    n_ddr = sum(int(items[i].table.ddr[folds[i]]) for i in on[cp.id])
                    if spread and n_ddr:
                        surcharge[cp.id] = surcharge[cp.id] + -(-extra // n_ddr)
                        continue
                    trade = mode in ("uram", "lutram")
                    free = room_to_free(plan.channels, cp.id, cp.bram18 - cp.bram18_limit, mode) if trade else 0
                    if free:  # leave URAM or LUTs for the FIFOs that would give the BRAM18 back
                        r = _URAM if mode == "uram" else _LUT
                        extra[_BRAM], extra[r] = 0, extra[r] + free
                    elif trade and cp.bram18 > cp.bram18_limit:
                        stuck = True  # no FIFO of it can: this mode would be the room mode again
                    room[cp.id] = np.minimum(room[cp.id], limits[cp.id] - extra)
                if stuck:
                    break
                continue
            break
    return None


ON_CHIP = "on chip"
"""`_at`'s last mode, where some block may use board memory: every block on its on-chip rows
(weights, frames and FIFOs on chip), the program the plan without off-chip weights solves.
The refits of the other modes charge what a built plan adds beyond its rows to the core as
a whole, and an off-chip row's lag FIFOs can keep them failing at a target that the on-chip
rows alone meet: RegNetY-400MF on u250 planned at 26,656 cycles with off-chip weights
allowed, 25,088 without (stop 48), on the same cores. With this mode a target that the
on-chip program meets with a fitting plan is met with board memory allowed too."""


def _in_board_memory(t: Table) -> np.ndarray:
    """Rows of ``t`` that use board memory: weights off chip or input FIFOs in it."""
    return t.ddr | t.fifo_ddr


def joint_plan(prob: Problem, strategy: str, objective: str, seg: Segmentation | None = None,
               below: int | None = None, last: dict | None = None) -> tuple[Plan, Segmentation] | None:
    """The plan of the least target (bisected over the rows' ii values, under ``below`` when
    given, to within `JOINT_TOLERANCE`) at which `_at` finds a fitting plan with ``seg``'s
    cores and splits (default: every block on the path's one core); None when none fits.
    ``last`` (when given) receives the violations of the last plan built at the first
    (slowest) target (`_at`)."""
    if seg is None:
        if len(prob.core_path) != 1:
            return None
        seg = Segmentation(core=[prob.core_path[0]] * prob.m, fold=[0] * prob.m)
    items = _items(prob, seg)
    if not items:
        return None
    floor = max(int(it.table.ii.min()) for it in items)
    iis = np.unique(np.concatenate([it.table.ii for it in items]))
    iis = iis[(iis >= floor) & (iis < (below if below is not None else np.inf))]
    if not len(iis):
        return None
    # the first target from all rows (`_rows_at` prunes them as it would `candidates`), which
    # are computed only if it fits: the bisection tries several targets
    hint: dict = {}  # the refit mode that fitted the last target (`_at`)
    best = _at(prob, seg, items, int(iis[-1]), strategy, objective, None, last=last, hint=hint)
    if best is None:
        return None
    pruned: dict[int, np.ndarray] = {}  # equal split parts share one table: prune it once
    for it in items:
        if id(it.table) not in pruned:
            pruned[id(it.table)] = candidates(it.table)
    among = [pruned[id(it.table)] for it in items]
    # iis[hi] fits: the least target at or above the best plan's ii (a plan fits every target
    # it meets, so the targets between are not tried)
    lo, hi = 0, _at_or_above(iis, best[0].ii_cycles)
    while lo < hi and iis[hi] > iis[lo] * (1.0 + JOINT_TOLERANCE):
        mid = (lo + hi) // 2
        got = _at(prob, seg, items, int(iis[mid]), strategy, objective, among, hint=hint)
        if got is None:
            lo = mid + 1
        else:
            hi, best = min(mid, _at_or_above(iis, got[0].ii_cycles)), got
    return best


JOINT_TOLERANCE = 0.001
"""`joint_plan` stops bisecting when the least target not yet ruled out is within this share
of the best plan's (at most 0.1 % of frames/s left; HiGHS itself stops at `MIP_GAP`). The
targets just under the least feasible one are the dearest to refuse: every refit mode of
`_at` runs its programs before it gives up (ResNet-50 on zcu104: 18 and 20 s for two
targets 0.004 % and 0.003 % under the plan found, of 96 s for the whole bisection). At 0.5 %
ResNet-18 on u280 stopped at 150,822 cycles instead of 150,528; at 0.1 % it does not."""


def _at_or_above(iis: np.ndarray, ii: int) -> int:
    """The index of the least of ``iis`` (ascending) that is at least ``ii`` (the last one
    when none is: the first target's plan can be slower than every target below ``below``
    only if it is the last target's)."""
    return min(int(np.searchsorted(iis, ii, side="left")), len(iis) - 1)


NAMES = ("DSP", "BRAM18", "URAM", "LUT", "bytes per 1,024 cycles of memory bandwidth")
"""`RES` as a refusal names them (`strategies.explain_infeasible`)."""


def explain(prob: Problem, last: dict) -> str | None:
    """Why no joint choice fits a one-core path, by integer programs over every row at the
    slowest target (None on more cores). Either no choice of rows fits even with nothing
    charged beyond the rows: each resource short by at least HiGHS' proved lower bound on its
    least use with the other limits kept (a lower bound for any plan: the FIFO lags `couplings.lags`
    bounds from above are left out). Or some choice of rows fits, and the plans built from
    the programs' choices need more: what the last one built at that target used beyond its
    limits, from ``last`` (`joint_plan`'s)."""
    if len(prob.core_path) != 1:
        return None
    k = prob.core_path[0]
    seg = Segmentation(core=[k] * prob.m, fold=[0] * prob.m)
    items = _items(prob, seg)
    if not items:
        return None
    target = max(int(it.table.ii.max()) for it in items)
    tables = [it.table.at_target(target) for it in items]
    among = [legal_rows(prob, seg, it, np.arange(len(it.table))) for it in items]
    kw = dict(among=among, pairs=couplings.pairs(prob, seg, items, list(range(len(items)))))
    limits = prob.limits(k)
    head = "over every folding and weight placement jointly (integer program, HiGHS)"
    if fit_rows(tables, limits, target, **kw) is not None:
        lags = couplings.lags(prob, items, list(range(len(items))), target)
        if lags and fit_rows(tables, limits, target, lags=lags, **kw) is None:
            short = _shortfalls(tables, limits, target, dict(kw, lags=lags))
            return (f"{head} some choice of rows fits, but none with the reconvergent FIFOs its off-chip blocks "
                    "lengthen (their frames of lag in BRAM18, URAM or board memory): "
                    + (", or ".join(short) if short else "not with any one resource unlimited"))
        over = [f"{used} / {limit} {NAMES[RES.index(r)]}" for _, r, used, limit in last.get("violations", [])]
        return (f"{head} some choice of rows fits, but the plans built from the programs' choices do "
                f"not (the last needs {', '.join(over) or 'more'}: the FIFOs around off-chip blocks, "
                "converters)")
    short = _shortfalls(tables, limits, target, kw)
    if not short:
        return f"{head} no choice of rows fits, and none would with any one resource unlimited"
    return f"{head} no choice of rows fits: with the other resources within limits, " + ", or ".join(short)


def _shortfalls(tables: list[Table], limits: np.ndarray, target: int, kw: dict) -> list[str]:
    """For each resource that alone could make a choice of rows fit: the least of it any choice
    needs with the other resources within ``limits`` (HiGHS' proved bound), where over its limit."""
    short = []
    for r in range(N_RES):
        info: dict = {}
        if fit_rows(tables, limits, target, least=r, info=info, **kw) is not None:
            need = int(np.ceil(info["bound"] - 1e-6))
            if need > limits[r]:
                short.append(f"{NAMES[r]} is short by at least {need - int(limits[r])} ({need} / {int(limits[r])})")
    return short
