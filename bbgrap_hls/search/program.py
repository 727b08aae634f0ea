"""One integer program: a row of each block's cost table, the rows' resources within a core's
limits (`fit_rows`, HiGHS through `highspy`), and the dominance pruning of the rows it
chooses from (`candidates`, `_rows_at`).

`ilp.joint_plan` and `rebalance` pose these programs per core and target; what couples the
rows of different blocks (reconvergent FIFOs' lags, one-input-slot pairs) comes from
`couplings`.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from bbgrap_hls.search.couplings import Lag, Pair, pair_rows
from bbgrap_hls.search.problem import N_RES
from bbgrap_hls.search.tables import Table

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
