"""One planning run of a problem (`_run`: a strategy, then the repair that makes its
segmentation fit what the plan charges), and the variants of the problem `make_plan` also
plans to keep the better plan (`_run_best`): without off-chip weight rows, with only the
least-reused blocks off chip, without depthwise LUT products, without padded folds, with
equal split parts only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.plan import Plan
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.narrow import segmentation_of
from bbgrap_hls.search.problem import Problem, build_problem
from bbgrap_hls.search.repair import repair, violations
from bbgrap_hls.search.strategies import boost, even, exact, explain_infeasible, greedy, refine, single


def _run(prob: Problem, strategy: str, objective: str, time_limit: float, seed: int,
         progress: Callable[[str], None] | None) -> tuple[Plan, Segmentation]:
    def finish(seg: Segmentation) -> tuple[Plan, Segmentation]:
        plan, seg = repair(prob, seg, strategy, objective)
        bad = violations(plan)
        if bad:
            k, r, use, lim = bad[0]
            raise InfeasibleError(f"{strategy}: core {k} needs {use} {r} with every block at its "
                                  f"lowest folding, limit {lim}: short by {use - lim}. "
                                  + explain_infeasible(prob))
        return plan, seg

    if strategy in ("single", "even", "greedy"):
        return finish({"single": single, "even": even, "greedy": greedy}[strategy](prob))
    n_options = [None] if objective == "throughput" else list(range(1, len(prob.core_path) + 1))
    best: tuple[Plan, Segmentation] | None = None
    err: InfeasibleError | None = None
    for n in n_options:
        if progress:
            progress(f"{strategy}: segmenting over {n or len(prob.core_path)} core(s)")
        try:
            seg = exact(prob, n)
        except InfeasibleError as e:
            err = err or e
            continue
        try:
            plan, seg = finish(seg)
        except InfeasibleError:
            if not seg.part_co:
                raise
            # Uneven split parts are not refolded by the repair; when what the plan charges
            # beyond the tables (FIFOs at the producers' lanes, the gather's FIFOs) does not
            # fit, segment again with equal parts only.
            seg = exact(_equal_splits_only(prob), n)
            plan, seg = finish(seg)
        if strategy == "search":
            if progress:
                progress("search: local refinement")
            ref = refine(prob, seg, time_limit, seed)
            if ref is not seg:
                p2, s2 = finish(ref)
                if _key(p2, objective) < _key(plan, objective):
                    plan, seg = p2, s2
            # The segmentation's folding rules and the repair are heuristics: where the repair
            # has to lower many foldings (FIFOs the tables did not charge), a baseline's
            # segmentation can end faster (ResNet-18 on zcu102 with off-chip weights: 1.7
            # frames/s after the repair, `even` 3.4). search never returns less than them.
            for base in (even, greedy):
                try:
                    p2, s2 = finish(base(prob))
                except InfeasibleError:
                    continue
                if _key(p2, objective) < _key(plan, objective):
                    plan, seg = p2, replace(s2, monotone=False, source=base.__name__)
        if best is None or _key(plan, objective) < _key(best[0], objective):
            best = (plan, seg)
    if objective == "latency" and best is not None:
        # Fold faster than the ii needs where cores have room, from this segmentation and
        # (search) from the baselines' ones: the least latency of all is kept.
        seeds = [best]
        if strategy == "search":
            for base in (even, greedy):
                try:
                    seeds.append(finish(base(prob)))
                except InfeasibleError:
                    continue
        for seed in seeds:
            try:
                boosted = finish(boost(prob, seed[1]))
            except InfeasibleError:
                boosted = seed
            best = min((best, seed, boosted), key=lambda x: _key(x[0], objective))
    if best is None:
        raise err or InfeasibleError(explain_infeasible(prob))
    return best


def _portable(got: tuple[Problem, Plan, Segmentation]) -> tuple[Problem, Plan, Segmentation]:
    """A planned problem's result without the caches its receiver rebuilds when it needs
    them (the tables' choosers, the problem's parts and stacked rows): what `Aside` sends
    back from its child."""
    p, plan, seg = got
    for u in p.units:
        for t in (u.table, *u.split_tables.values(), *u.part_tables.values()):
            t.choosers = {}
    p.parts.clear()
    p.unit_rows = None
    return p, plan, seg


def _run_best(prob: Problem, strategy: str, objective: str, time_limit: float, seed: int,
              progress: Callable[[str], None] | None) -> tuple[Problem, Plan, Segmentation]:
    """`_run`; with off-chip weights allowed, also without them, keeping the better plan: the
    segmentation's folding rules are heuristics over the resources, and more rows can steer
    them to a worse plan, but allowing off-chip weights must never cost speed. Likewise with
    depthwise convs that may take LUT products, also without those rows
    (`_without_depthwise_lut`); a plan made so is returned against ``prob`` itself (its
    tables hold every row of the variant's), so that narrowing still sees the LUT rows.
    Returns the problem the plan was made from (its segmentation indexes that problem's
    tables)."""
    best = _run_variants(prob, strategy, objective, time_limit, seed, progress)
    # Padded folds: the winning variant once more without their rows, the better plan kept.
    # The exact segmentation and the refinement are heuristics over the rows they see, and
    # the finer lane counts can steer them to a slower local optimum (EfficientNet-B0 on u250
    # with off-chip weights allowed: 47,040 cycles with them, 42,336 without); allowing them
    # must never cost speed. One more run, not one per variant.
    made = best[3]
    if any(u.table.padded.any() for u in made.units):
        try:
            plan, seg = _run(_without_padded(made), strategy, objective, time_limit, seed, progress)
        except InfeasibleError:
            pass
        else:
            if _key(plan, objective) < _key(best[1], objective):
                return best[0], plan, _reindexed(best[0], plan, seg)
    return best[:3]


def _run_variants(prob: Problem, strategy: str, objective: str, time_limit: float, seed: int,
                  progress: Callable[[str], None] | None) -> tuple[Problem, Plan, Segmentation, Problem]:
    """`_run_best` without its padded-fold rerun; also returns the variant the plan was made
    from (a row subset of the problem returned for the depthwise one)."""
    variants = [prob]
    if prob.offchip_memory:
        variants.append(_variant(prob, offchip_weights=False))
        least = _offchip_least_reused(prob)
        if least is not None:
            variants.append(least)
    dw = _without_depthwise_lut(prob)
    if dw is not None:
        variants.append(dw)
    best, err = None, None
    for p in variants:
        try:
            got = _run(p, strategy, objective, time_limit, seed, progress)
        except InfeasibleError as e:
            err = err or e
            continue
        made = p
        if p is dw:  # the same plan indexed into prob's tables (the variant's rows are a subset)
            got = (got[0], _reindexed(prob, *got))
            p = prob
        if best is None or _key(got[0], objective) < _key(best[1], objective):
            best = (p, *got, made)
    if best is None:
        raise err
    return best


def _reindexed(prob: Problem, plan: Plan, seg: Segmentation) -> Segmentation:
    """``seg`` (of a plan made from a row subset of ``prob``) indexed into ``prob``'s tables,
    its target, monotone flag and source kept."""
    return replace(segmentation_of(prob, plan), target=seg.target, monotone=seg.monotone, source=seg.source)


def _variant(prob: Problem, **options) -> Problem:
    """The same graph on the same board with some options changed (``offchip_weights``,
    ``dsp_packing``): a fresh problem, whose tables are built for those options."""
    kw = dict(parallel_window=prob.parallel_window, pixel_copies=prob.pixel_copies,
              offchip_weights=prob.offchip_memory is not None, dsp_packing=prob.dsp_packing,
              lut_macs=prob.lut_macs, lut_requant=prob.lut_requant, padded_folds=prob.padded_folds,
              ddr_stages=prob.ddr_stages, ddr_fifos=prob.ddr_fifos, pixel_pairs=prob.pixel_pairs,
              row_bands=prob.row_bands, short_rings=prob.short_rings, out1=prob.out1)
    return build_problem(prob.graph, prob.board, **{**kw, **options})


def _offchip_least_reused(prob: Problem) -> Problem | None:
    """``prob`` with the weights of the blocks of the fewest output pixels off chip and every
    other block's on chip (None when those are all the blocks that could go off chip).

    A weight read once per frame feeds ``Ho·Wo`` output pixels, so the blocks at the
    smallest map (a classifier: one pixel; ResNet-18's 7×7 layer 4: 49) need the least
    bandwidth per MAC and hold the most weight bytes per MAC: the DPU's case for streaming
    weights. The segmentation's folding rules choose per block independently: with off-chip
    rows open to every block the balanced rule moves early, busy blocks off chip too
    (unpacked DSPs, frame buffers) or keeps everything on chip (ResNet-18 on u250: 169,344
    cycles either way). With only its classifier off chip (512 KB per frame, the URAM it
    frees goes to layer 4) it plans at 150,528, as with all of layer 4 forced off chip. This
    variant is one more problem `_run_best` plans; the better plan is kept.
    """
    pixels = [u.geom.ho * u.geom.wo for u in prob.units if u.table.ddr.any()]
    if not pixels or min(pixels) == max(pixels):
        return None
    least = min(pixels)
    units = []
    for u in prob.units:
        if not u.table.ddr.any():
            units.append(u)
            continue
        off = u.geom.ho * u.geom.wo <= least

        def keep(t, off=off):
            rows = t.ddr if off else ~t.ddr
            return t.subset(rows) if rows.any() else None

        splits = {k: keep(t) for k, t in u.split_tables.items()}
        parts = {k: keep(t) for k, t in u.part_tables.items()}
        if any(t is None for t in parts.values()):  # uneven parts need every channel count
            parts, granule = {}, 0
        else:
            granule = u.granule
        units.append(replace(u, table=keep(u.table), split_tables={k: t for k, t in splits.items() if t is not None},
                             part_tables=parts, granule=granule))
    return replace(prob, units=units)


def _without_depthwise_lut(prob: Problem) -> Problem | None:
    """``prob`` without its depthwise convs' LUT-product rows (None when it has none).

    A folding rule weighs every block's rows alike, and every LUT-product row trades about
    `LUT_MUL` LUTs for one DSP, so under one rule either every block that may take LUT
    products takes them or none does. Before depthwise convs could, the DSP rule put the
    conv/dense products in LUTs and left the depthwise ones on DSPs, a mix that fitted where
    all-LUT and all-DSP did not (DS-CNN on pynq-z2: 16,000 cycles; with the depthwise LUT
    rows alone, 24,000). This variant is one more problem `_run_best` plans; the better plan
    is kept, so allowing depthwise LUT products never costs speed.
    """
    if not any(u.kind == "dwconv" and u.table.lut.any() for u in prob.units):
        return None
    units = [replace(u, table=u.table.subset(~u.table.lut)) if u.kind == "dwconv" and u.table.lut.any() else u
             for u in prob.units]
    return replace(prob, units=units)


def _without_padded(prob: Problem) -> Problem:
    """``prob`` without its padded-fold rows (`Table.padded`; split parts have none)."""
    return replace(prob, units=[replace(u, table=u.table.subset(~u.table.padded)) if u.table.padded.any() else u
                                for u in prob.units])


def _equal_splits_only(prob: Problem) -> Problem:
    """``prob`` without the tables of uneven split parts."""
    return replace(prob, units=[replace(u, part_tables={}, granule=0) for u in prob.units])


def _key(plan: Plan, objective: str) -> tuple:
    if objective == "latency":
        return (plan.latency_cycles, plan.ii_cycles)
    return (plan.ii_cycles, plan.latency_cycles)
