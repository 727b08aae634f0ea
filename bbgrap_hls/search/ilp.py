"""Foldings chosen jointly per core by an integer program (HiGHS, `highspy`).

The segmentation's folding rules pick each block's cheapest row meeting a target under a
weighting of the resources, one block at a time (`fold.py`). Where several resources bind
at once (a Zynq part: BRAM18, URAM, LUTs and the memory bandwidth all short; an SLR whose
DSPs and LUTs are both nearly full), a choice made block by block can fail although some
combination of rows fits: ResNet-18 and MobileNetV2 on zcu104 were refused that way,
ResNet-18 on zcu102 planned at 7.2 M cycles a frame where rows fitting at 1.8 M existed, and
ResNet-18 on u250 at 112,896 where 102,312 fits the same segmentation.

`program.fit_rows` solves the choice exactly: one row per table with ``ii <= target``, the rows'
resources summed within a core's limits, minimising the sum of each row's resources over
the limits (the least-used design, which leaves the most room for what the tables do not
charge). Rows dominated in ii and every resource are dropped first (`program.candidates`).
`joint_plan` keeps a segmentation's cores and splits (on a one-core path: every block on
it) and searches the least target at which the built plan fits, each core's rows chosen
by its own program: the tables charge a block and its input FIFOs, not the FIFOs around
off-chip blocks, link endpoints or the converters the built plan adds, so at each target the
programs are solved again with a core's limits lowered by what its built plan used beyond
its rows (`REFITS` times at most), and targets are bisected over the rows' ii values (a
target that fails is taken to mean every lower one fails: not proved).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bbgrap_hls.plan import Plan
from bbgrap_hls.search import couplings
from bbgrap_hls.search.build import build_plan
from bbgrap_hls.search.couplings import Item, legal_rows, one_slot_rows
from bbgrap_hls.search.dp import Segmentation, part_tables
from bbgrap_hls.search.fifo_memory import room_to_free
from bbgrap_hls.search.problem import N_RES, RES, Problem
from bbgrap_hls.search.program import _rows_at, candidates, fit_rows
from bbgrap_hls.search.repair import violations
from bbgrap_hls.search.tables import Table

JOINT = "integer program"
"""`Segmentation.source` of a plan whose foldings `joint_plan` chose."""

REFITS = 4
"""Programs solved at one target, each with the limits less the built plan's extra use."""

_BRAM, _URAM, _LUT = RES.index("bram18"), RES.index("uram"), RES.index("lut")

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
    in_board = [_in_board_memory(it.table)[r] for it, r in zip(items, rows_at, strict=True)]
    on_chip = [r[~m] for r, m in zip(rows_at, in_board, strict=True)]
    if any(m.any() for m in in_board) and all(len(r) for r in on_chip):
        modes += (ON_CHIP,)
    if hint is not None and hint.get("mode") in modes:  # the mode that fitted the last target first
        modes = (hint["mode"],) + tuple(m for m in modes if m != hint["mode"])
    for mode in modes:
        spread = mode == "spread"
        mode_rows = on_chip if mode == ON_CHIP else rows_at
        room = {k: limits[k].copy() for k in on}
        surcharge = {k: np.zeros(N_RES, dtype=np.int64) for k in on}
        folds: dict[int, int] = {}
        charged = {k: {"lag_use": np.zeros(N_RES)} for k in on}  # what each core's program charged for its lags
        for refit in range(REFITS):
            for k, idx in on.items():
                tables = [items[i].table for i in idx]
                if spread and surcharge[k].any():
                    tables = [replace(t, res=t.res + np.outer(t.ddr, surcharge[k])) for t in tables]
                pick = (fit_rows(tables, room[k], target, scale=limits[k], among=[mode_rows[i] for i in idx],
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
