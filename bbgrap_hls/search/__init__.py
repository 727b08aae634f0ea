"""Search: map the blocks of a graph onto the cores of a board (docs/plan.md).

`make_plan` is the entry point. Strategies:

- ``exact``: least design ii over contiguous segments of the topological block order laid
  along the path of linked cores (`core_path`), each block at the cheapest folding meeting
  the target (best of four resource weightings), heavy conv/dense blocks optionally split
  along output channels over consecutive cores (`dp`).
- ``search`` (default): ``exact``, then a seeded local search that refolds each core on its
  own and moves boundary blocks between neighbouring cores while the ii drops.
- baselines ``single`` (one core), ``even`` (equal block counts, one parallelism for all),
  ``greedy`` (fill cores in order, then raise the slowest block's folding while it fits).

Whatever the strategy, a final pass (`narrow`) then gives every block the cheapest folding
(sum of its resources over its core's limits) that still meets the design ii, while every
core fits: the partition and the ii stay, the DSPs and LUTs that bought no speed go.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace

from bbgrap_hls.board import Board
from bbgrap_hls.errors import BadInputError, InfeasibleError
from bbgrap_hls.ir import Graph
from bbgrap_hls.model.blocks import LUT_CAPABLE, LUT_REQUANT_CAPABLE
from bbgrap_hls.plan import Plan
from bbgrap_hls.search.build import repair, violations
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.narrow import narrow, segmentation_of
from bbgrap_hls.search.parallel import Aside
from bbgrap_hls.search.problem import DSP_PACKING, LUT_MACS, PADDED_FOLDS, Problem, build_problem, core_path
from bbgrap_hls.search.roofline import roofline
from bbgrap_hls.search.strategies import boost, even, exact, explain_infeasible, greedy, refine, single
from bbgrap_hls.search.why import bottleneck_note

STRATEGIES = ("search", "exact", "single", "even", "greedy")
OBJECTIVES = ("throughput", "latency")
BASELINES = ("single", "even", "greedy")


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


def _check_capacity(board: Board, plan: Plan) -> None:
    """The off-chip weights of the cores that keep them in one memory must fit its capacity.

    Raises:
        InfeasibleError: names the memory, what the plan puts there and its capacity.
    """
    need: dict[str, int] = {}
    for c in plan.cores:
        if c.offchip_bytes_per_frame and c.memory:
            need[c.memory] = need.get(c.memory, 0) + c.offchip_bytes_per_frame
    for mem in board.memories:
        if mem.name in need and mem.capacity_gb is not None and need[mem.name] > mem.capacity_gb * 1e9:
            raise InfeasibleError(f"memory {mem.name}: the plan keeps {need[mem.name]:,} bytes of weights there, "
                                  f"its capacity is {mem.capacity_gb * 1e9:,.0f} bytes: short by "
                                  f"{need[mem.name] - mem.capacity_gb * 1e9:,.0f}")


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
              lut_macs=prob.lut_macs, lut_requant=prob.lut_requant, padded_folds=prob.padded_folds)
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


def make_plan(graph: Graph, board: Board, strategy: str = "search", objective: str = "throughput",
              time_limit: float = 10.0, seed: int = 0, baselines: bool = True,
              progress: Callable[[str], None] | None = None, parallel_window: bool = True,
              narrow_folding: bool = True, pixel_copies: bool = True, offchip_weights: bool = False,
              dsp_packing: bool = DSP_PACKING, lut_macs: bool = LUT_MACS, space_to_depth: str = "off",
              lut_requant: bool | None = None, padded_folds: bool = PADDED_FOLDS) -> Plan:
    """Plan ``graph`` (canonical) on ``board``.

    Args:
        graph: canonical float graph (shapes and kinds matter; tensors are int8 on chip).
        board: the board.
        strategy: one of `STRATEGIES`.
        objective: ``throughput`` (least ii) or ``latency`` (least latency_cycles).
        time_limit: seconds for the local search of ``search``.
        seed: seed of the local search.
        baselines: also run the baselines and record their fps in ``plan.baselines``.
        progress: called with a short message at each phase (the CLI's progress line).
        parallel_window: let a conv take ``simd = C·j`` with ``j | kh·kw`` (several window
            positions per cycle; docs/cost-model.md). On by default: the HLS kernels and
            the RTL twin implement it.
        narrow_folding: finish with the pass that refolds every block to its cheapest
            folding meeting the design ii (`bbgrap_hls.search.narrow`); off gives the
            strategy's own foldings (the bench compares both).
        pixel_copies: let a conv take up to `MAX_COPIES` copies of its matrix-vector unit
            behind its window generator (``mmv``; docs/cost-model.md, "Pixel copies").
        offchip_weights: let conv/dense blocks keep their weights in their core's board
            memory, read once per frame (docs/cost-model.md, "Off-chip weights"); the
            memory's bandwidth is then a planned resource of every core.
        dsp_packing: let conv/dense blocks with ``pe >= 2`` compute two output lanes per
            DSP48E2 (``ceil(pe/2)·simd`` multipliers; docs/cost-model.md, "DSP"); the plan
            says per node whether it packs (``pack``).
        lut_macs: let conv/dense blocks with their weights on chip and depthwise convs
            compute their products in LUTs (``lut_mul.sv``, `LUT_MUL` LUTs per product, no
            DSP; docs/cost-model.md, "LUT multipliers"), chosen per block; the plan says
            which (``pack`` 0).
        space_to_depth: ``auto``: when the
            plan's ii is at or under the strided stem conv's padded input frame
            (`passes.stem.pixel_floor`), also plan with the input held as s x s pixel blocks
            (s² pixels a beat; `passes.stem`) and keep the faster plan; ``on``: hold it in
            blocks whenever the stem allows; ``off`` (the default here, so that a plan is of
            the graph given; ``gen``, ``plan`` and the API default to ``auto`` and quantise
            the graph the plan was made for): never. ``plan.input_blocks`` says which;
            `passes.stem.as_planned` gives the graph a plan was made for, which the caller
            then quantises and generates (`codegen.project.generate` refuses a mismatch).
        lut_requant: let the requantisers (and add/mul lanes) build their products from LUTs
            (``rq_lane.sv``/``eltwise.sv`` ``RQ_LUT = 1``; docs/cost-model.md, "LUT
            requantisers"): on the LUT-product rows of conv/dense/dwconv (with ``lut_macs``)
            and every row of avgpool, gap, add and mul, so such blocks need no DSP. None (the
            default): only when the plan without them does not fit (a board whose cores have
            few or no DSPs); the plan says per node which it used (``requant``).
        padded_folds: let conv/dense blocks with their weights on chip take a ``pe`` that
            does not divide ``Co``: ``ceil(Co/pe)`` neuron folds, the last one padded with zero
            rows whose outputs a trimming width converter drops (docs/cost-model.md, "Padded
            folds"); the plan's ``pe`` then does not divide the node's channels.

    Raises:
        InfeasibleError: no plan fits (message: core, resource, shortfall, smallest change).
        UnsupportedError: a node without a cost model.
    """
    from bbgrap_hls.passes.stem import SPACE_TO_DEPTH, pixel_floor, space_to_depth_stem, stem_conv

    if space_to_depth not in SPACE_TO_DEPTH:
        raise BadInputError(f"unknown space_to_depth '{space_to_depth}': expected one of {', '.join(SPACE_TO_DEPTH)}")
    kw = dict(strategy=strategy, objective=objective, time_limit=time_limit, seed=seed, baselines=baselines,
              progress=progress, parallel_window=parallel_window, narrow_folding=narrow_folding,
              pixel_copies=pixel_copies, offchip_weights=offchip_weights, dsp_packing=dsp_packing,
              lut_macs=lut_macs, lut_requant=lut_requant, padded_folds=padded_folds)
    stem = None if space_to_depth == "off" else stem_conv(graph)
    t0 = time.monotonic()
    if stem is not None and space_to_depth == "on":
        plan = _make_plan(space_to_depth_stem(graph), board, **kw)
    else:
        plan = _make_plan(graph, board, **kw)
        if stem is not None and plan.ii_cycles <= pixel_floor(graph, stem[1]):
            # at one pixel a beat the stem's padded input frame is its floor: try blocks
            if progress:
                progress(f"{strategy}: planning with the input as {stem[2]}x{stem[2]} pixel blocks")
            try:
                blocked = _make_plan(space_to_depth_stem(graph), board, **kw)
            except InfeasibleError:
                blocked = None
            if blocked is not None and _key(blocked, objective) < _key(plan, objective):
                plan = blocked
    plan.optimizer.update(space_to_depth=space_to_depth)
    plan.search_seconds = time.monotonic() - t0
    return plan



def _make_plan(graph: Graph, board: Board, lut_requant: bool | None, **kw) -> Plan:
    """`make_plan` for one graph (its input layout as it is): with LUT requantisers when asked,
    and when auto (None) only if the plan without them does not fit."""
    if lut_requant is not None:
        return _make_plan_with(graph, board, lut_requant=lut_requant, **kw)
    try:
        return _make_plan_with(graph, board, lut_requant=False, **kw)
    except InfeasibleError as first:
        if not _dsp_short(str(first)):
            raise  # LUT requantisers only trade DSPs for LUTs: another resource short stays short
        if kw.get("progress"):
            kw["progress"](f"{kw['strategy']}: no plan with DSP requantisers; planning with LUT requantisers")
        try:
            return _make_plan_with(graph, board, lut_requant=True, **kw)
        except InfeasibleError as second:
            if str(second) == str(first):
                raise InfeasibleError(f"{first} (also with LUT requantisers)") from second
            raise InfeasibleError(f"{first}; with LUT requantisers: {second}") from second


_SHORT = re.compile(r"needs \d+ (\w+) (?:with every block|even at its lowest|at the lowest folding)"
                    r"|; (\w+) is short by")


def _dsp_short(message: str) -> bool:
    """Whether an `InfeasibleError` message (`explain_infeasible`, `_run`) names DSPs as the
    resource that runs short (True when it names none)."""
    named = [a or b for a, b in _SHORT.findall(message)]
    return not named or any(n.lower() == "dsp" for n in named)


def _needs_dsp(prob: Problem) -> None:
    """Raise `InfeasibleError` for the first block that needs more DSP48E2s at its cheapest
    folding than any core of the board has (a kind without a LUT-only variant on a board
    whose cores have few or no DSPs)."""
    most = max(c.dsp_limit for c in prob.board.cores)
    for u in prob.units:
        tables = [u.table, *u.split_tables.values(), *u.part_tables.values()]
        least = min(int(t.res[:, 0].min()) for t in tables if len(t))
        if least > most:
            lut_only = "" if least == 0 else (
                "; it has no LUT-only variant" if not prob.lut_requant or u.kind not in LUT_REQUANT_CAPABLE
                or (u.kind in LUT_CAPABLE and not prob.lut_macs) else "")
            raise InfeasibleError(
                f"node '{u.node.name}' ({u.node.op}, {u.kind} block) needs DSPs: at least {least} DSP48E2 at its "
                f"cheapest folding, and the cores of board '{prob.board.name}' have at most {most}{lut_only}")


def _make_plan_with(graph: Graph, board: Board, strategy: str, objective: str, time_limit: float, seed: int,
                    baselines: bool, progress: Callable[[str], None] | None, parallel_window: bool,
                    narrow_folding: bool, pixel_copies: bool, offchip_weights: bool, dsp_packing: bool,
                    lut_macs: bool, lut_requant: bool, padded_folds: bool) -> Plan:
    """`_make_plan` with LUT requantisers allowed or not."""
    if strategy not in STRATEGIES:
        raise BadInputError(f"unknown strategy '{strategy}': expected one of {', '.join(STRATEGIES)}")
    if objective not in OBJECTIVES:
        raise BadInputError(f"unknown objective '{objective}': expected one of {', '.join(OBJECTIVES)}")
    t0 = time.monotonic()
    prob = build_problem(graph, board, parallel_window=parallel_window, pixel_copies=pixel_copies,
                         offchip_weights=offchip_weights, dsp_packing=dsp_packing, lut_macs=lut_macs,
                         lut_requant=lut_requant, padded_folds=padded_folds)
    _needs_dsp(prob)
    # With DSP packing allowed, also plan without it and keep the better plan (ties: packed,
    # fewer DSPs): packing makes every packed row cheaper in DSPs, which can steer the
    # segmentation's cheapest-folding heuristic to BRAM-heavier rows and a worse plan
    # (MobileNetV2 on u250: 56,448 instead of 51,076 cycles); allowing it must never cost speed.
    best, err = None, None
    probs = [prob, _variant(prob, dsp_packing=False)] if dsp_packing else [prob]

    def plan_one(p: Problem, progress=progress) -> tuple[Problem, Plan, Segmentation]:
        p, plan, seg = _run_best(p, strategy, objective, time_limit, seed, progress)
        if narrow_folding:
            if progress:
                progress(f"{strategy}: narrowing foldings to the design ii")
            plan, seg, st = narrow(p, seg, plan, objective, strategy)
            plan.optimizer.update(narrowed_blocks=st.refolded, lanes_before=st.lanes_before,
                                  lanes_after=st.lanes_after)
        return p, plan, seg

    # The problem without packing is planned in a second process where one can be forked
    # (`parallel.Aside`); its result is taken exactly as if planned here, after the first.
    aside = Aside(lambda: plan_one(probs[1], None), _portable) if len(probs) > 1 else None
    if aside is not None and aside.started and progress:
        progress(f"{strategy}: planning without DSP packing in a second process")
    try:
        for k, p in enumerate(probs):
            try:
                p, plan, seg = plan_one(p) if k == 0 or aside is None else aside.result()
            except InfeasibleError as e:
                err = err or e
                continue
            if best is None or _key(plan, objective) < _key(best[1], objective):
                best = (p, plan, seg)
    finally:
        if aside is not None:
            aside.close()
    if best is None:
        raise err
    chosen, plan, seg = best
    # the options of the problem the plan was made from (with packing or off-chip weights
    # allowed, make_plan may keep the plan made without them)
    plan.optimizer.update(dsp_packing=bool(chosen.dsp_packing), offchip_weights=chosen.offchip_memory is not None,
                          lut_macs=bool(chosen.lut_macs), lut_requant=bool(chosen.lut_requant),
                          padded_folds=bool(chosen.padded_folds))
    _check_capacity(board, plan)
    plan.input_blocks = dict(graph.input_blocks)
    plan.search_seconds = time.monotonic() - t0
    if objective == "latency":
        plan.optimality_note = (f"{strategy}, latency objective: not proved optimal (the exact "
                                "segmentation minimises the ii, not the latency)")
    elif strategy in ("exact", "search"):
        # search keeps the exact segmentation unless its refinement beat it (then the
        # segmentation is marked not monotone): proved in the first case only.
        plan.optimal = bool(seg.monotone and plan.ii_cycles == seg.target and objective == "throughput")
        if seg.source:
            plan.optimality_note = (
                f"search took the {seg.source} baseline's segmentation: after the repair step (foldings "
                "lowered to fit what the tables did not charge, e.g. the FIFOs around off-chip blocks) it "
                "was faster than the exact segmentation; NOT proved optimal")
        else:
            plan.optimality_note = (
                ("search kept the exact segmentation: " if strategy == "search" else "")
                + "optimal ii over contiguous segments of the topological block order along the core path "
                f"{prob.core_path}, with each block at its cheapest folding (per resource weighting) meeting "
                "the target and splits of the heaviest conv/dense blocks over consecutive cores (equal parts, "
                "or uneven parts sized greedily: the first and middle parts as large as their cores allow)"
                + ("" if plan.optimal else "; NOT proved here (folding choice not monotone, or repaired)"))
    else:
        plan.optimality_note = f"{strategy}: not proved optimal"
    plan.bottleneck_note = bottleneck_note(chosen, plan)
    plan.roofline = roofline(prob, plan)  # what the options allow (two MACs per DSP with packing)
    if baselines:
        for b in BASELINES:
            if b == strategy:
                plan.baselines[b] = plan.fps
                continue
            try:
                plan.baselines[b] = _run(prob, b, objective, time_limit, seed, None)[0].fps
            except InfeasibleError:
                plan.baselines[b] = 0.0
    return plan


__all__ = ["BASELINES", "OBJECTIVES", "STRATEGIES", "Problem", "build_problem", "core_path", "make_plan"]
