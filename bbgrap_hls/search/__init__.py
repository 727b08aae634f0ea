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

import time
from collections.abc import Callable
from functools import partial

from bbgrap_hls.board import Board
from bbgrap_hls.errors import BadInputError, BbgrapError, InfeasibleError
from bbgrap_hls.ir import Graph
from bbgrap_hls.model.blocks import LUT_CAPABLE, LUT_REQUANT_CAPABLE
from bbgrap_hls.plan import Plan
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.fallbacks import lean_buffers, lean_replan, lut_requantisers
from bbgrap_hls.search.ilp import JOINT, explain, joint_plan
from bbgrap_hls.search.narrow import narrow
from bbgrap_hls.search.parallel import Aside
from bbgrap_hls.search.problem import (
    DDR_FIFOS,
    DDR_STAGES,
    DSP_PACKING,
    LUT_MACS,
    PADDED_FOLDS,
    ROW_BANDS,
    Problem,
    build_problem,
    core_path,
)
from bbgrap_hls.search.rebalance import MOVED, move_hint, rebalance, underused
from bbgrap_hls.search.roofline import roofline
from bbgrap_hls.search.runs import _key, _portable, _run, _run_best, _variant
from bbgrap_hls.search.tables import ONCHIP
from bbgrap_hls.search.why import bottleneck_note

STRATEGIES = ("search", "exact", "single", "even", "greedy")
OBJECTIVES = ("throughput", "latency")
BASELINES = ("single", "even", "greedy")


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


def make_plan(graph: Graph, board: Board, strategy: str = "search", objective: str = "throughput",
              time_limit: float = 10.0, seed: int = 0, baselines: bool = True,
              progress: Callable[[str], None] | None = None, parallel_window: bool = True,
              narrow_folding: bool = True, pixel_copies: bool = True, offchip_weights: bool = False,
              dsp_packing: bool = DSP_PACKING, lut_macs: bool = LUT_MACS, space_to_depth: str = "off",
              lut_requant: bool | None = None, padded_folds: bool = PADDED_FOLDS,
              ddr_stages: bool = DDR_STAGES, ddr_fifos: bool = DDR_FIFOS, pixel_pairs: str | bool = "off",
              row_bands: bool = ROW_BANDS, short_rings: bool | None = None,
              out_slot: bool | None = None, move_boundaries: bool | None = None) -> Plan:
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
        pixel_pairs: ``"on"`` (or True) lets convs with a window generator and per-tensor
            Adds/Muls on images of even width stream two horizontally adjacent pixels a beat
            (`kinds.pair_modes`; docs/cost-model.md, "Two pixels a beat"); ``"auto"`` (the
            CLI's and gen's default) plans without and, when a conv that could take pairs has a
            padded input frame of at least the plan's ii (its window generator's one-pixel
            floor), plans with them too and keeps the faster plan; ``"off"`` (or False, this
            function's default, so that a library call plans as it always has) never.
        padded_folds: let conv/dense blocks with their weights on chip take a ``pe`` that
            does not divide ``Co``: ``ceil(Co/pe)`` neuron folds, the last one padded with zero
            rows whose outputs a trimming width converter drops (docs/cost-model.md, "Padded
            folds"); the plan's ``pe`` then does not divide the node's channels.
        ddr_stages: with ``offchip_weights``, let an off-chip conv/dense keep one input frame
            slot behind a DDR frame stage (its next frames in a scratch area of the board
            memory; docs/cost-model.md, "DDR frame stage"); the plan's ``in_stage``.
        ddr_fifos: with ``offchip_weights``, let a FIFO of a frame or more (a skip path around
            off-chip blocks) go to the core's board memory where the core is over its BRAM18
            (docs/cost-model.md, "Skip FIFOs in board memory"); the plan's channel ``kind``
            ``ddr_fifo`` (``bb::ddr_fifo`` in HLS, a ``ddr_stage`` in the RTL twin). On by
            default (`DDR_FIFOS`).
        row_bands: with ``offchip_weights``, let an off-chip conv compute a band of output rows
            at a time behind a band splitter, its frame buffers a band's and its weights read
            once per band (docs/cost-model.md, "Row bands"); the plan's ``bands``. On by
            default (`ROW_BANDS`).
        short_rings: let window blocks keep a short window ring, ``KH_eff + SH`` padded rows
            (fewer BRAM18, the writer waiting at each frame boundary: docs/cost-model.md,
            "Short window rings"), chosen per block, on a core with URAM also in URAM (the plan's
            ``ring_uram``, "Window rings in URAM"); the plan's ``short_ring``. None (the
            default): only when the plan without them is short of BRAM18 or URAM, or fills a
            core's BRAM18 or URAM with DSPs to spare (`fallbacks.memory_full`; the better plan
            is kept).
        out_slot: with ``offchip_weights``, let an off-chip block (without a DDR frame stage)
            keep one output frame slot instead of two (half its output frame memory, the next
            frame's first fold waiting for this one's outputs to have left: docs/cost-model.md,
            "One output slot"), chosen per block; the plan's ``out_slots``. None (the
            default): as ``short_rings``, only when the plan without them is short of BRAM18
            or URAM (both are then offered together).
        move_boundaries: with ``strategy="search"`` (throughput) on several cores, pack the
            blocks along the core path again, each core the longest run its program fits
            (`rebalance`; docs/plan.md, "Moved boundaries"), and keep that plan when faster.
            None (the default): only when a core of the plan uses under half its DSPs
            (`rebalance.underused`): the packing costs seconds to tens of seconds.

    Raises:
        InfeasibleError: no plan fits (message: core, resource, shortfall, smallest change).
        UnsupportedError: a node without a cost model.
    """
    from bbgrap_hls.passes.stem import SPACE_TO_DEPTH, pixel_floor, space_to_depth_stem, stem_conv

    if space_to_depth not in SPACE_TO_DEPTH:
        raise BadInputError(f"unknown space_to_depth '{space_to_depth}': expected one of {', '.join(SPACE_TO_DEPTH)}")
    pairs = ("on" if pixel_pairs else "off") if isinstance(pixel_pairs, bool) else pixel_pairs
    if pairs not in PIXEL_PAIRS:
        raise BadInputError(f"unknown pixel_pairs '{pixel_pairs}': expected one of {', '.join(PIXEL_PAIRS)}")
    kw = dict(strategy=strategy, objective=objective, time_limit=time_limit, seed=seed, baselines=baselines,
              progress=progress, parallel_window=parallel_window, narrow_folding=narrow_folding,
              pixel_copies=pixel_copies, offchip_weights=offchip_weights, dsp_packing=dsp_packing,
              lut_macs=lut_macs, lut_requant=lut_requant, padded_folds=padded_folds, ddr_stages=ddr_stages,
              ddr_fifos=ddr_fifos, row_bands=row_bands, short_rings=short_rings, out_slot=out_slot,
              move_boundaries=move_boundaries)

    how: list[tuple[Plan, tuple[Graph, bool, bool]]] = []  # each plan made, with (graph, pixel_pairs, row_bands)

    def made(plan: Plan, g: Graph, pixel_pairs: bool, bands: bool) -> Plan:
        how.append((plan, (g, pixel_pairs, bands)))
        return plan

    def plan_bands(g: Graph, pixel_pairs: bool) -> Plan:
        """`_make_plan`; with off-chip weights and row bands allowed, first the plan without
        band rows and, unless it fits without any board-memory traffic, then the plan with
        them, the better kept (ties to the banded). Band rows only shrink an off-chip conv's
        frame buffers, but they widen the search, which may land elsewhere: RegNetY-400MF on
        u250 118,580 cycles with them, 112,896 without; a plan whose weights and buffers all
        stay on chip is not planned twice (stop 36 planned both whenever no band was chosen,
        which doubled DenseNet-121's planning on u250: 7.9 -> 16.2 s)."""
        if not (offchip_weights and row_bands):
            return made(_make_plan(g, board, pixel_pairs=pixel_pairs, **kw), g, pixel_pairs, row_bands)
        try:
            plain = made(_make_plan(g, board, pixel_pairs=pixel_pairs, **{**kw, "row_bands": False}), g,
                         pixel_pairs, False)
        except InfeasibleError:
            plain = None
        if plain is not None and not any(c.offchip_bytes_per_frame for c in plain.cores):
            return plain
        if progress:
            progress(f"{strategy}: planning with row bands")
        try:
            got = made(_make_plan(g, board, pixel_pairs=pixel_pairs, **kw), g, pixel_pairs, True)
        except InfeasibleError:
            if plain is None:
                raise
            return plain
        return plain if plain is not None and _key(plain, objective) < _key(got, objective) else got

    def plan_pairs(g: Graph) -> Plan:  # `_make_plan` with the pixel_pairs mode
        if pairs != "auto":
            return plan_bands(g, pairs == "on")
        one = plan_bands(g, False)
        if not _pairs_may_help(g, one):
            return one
        if progress:
            progress(f"{strategy}: planning with two pixels a beat")
        try:
            two = plan_bands(g, True)
        except InfeasibleError:
            return one
        return two if _key(two, objective) < _key(one, objective) else one

    stem = None if space_to_depth == "off" else stem_conv(graph)
    t0 = time.monotonic()
    if stem is not None and space_to_depth == "on":
        plan = plan_pairs(space_to_depth_stem(graph))
    else:
        plan = plan_pairs(graph)
        if stem is not None and plan.ii_cycles <= pixel_floor(graph, stem[1]):
            # at one pixel a beat the stem's padded input frame is its floor: try blocks
            if progress:
                progress(f"{strategy}: planning with the input as {stem[2]}x{stem[2]} pixel blocks")
            try:
                blocked = plan_pairs(space_to_depth_stem(graph))
            except InfeasibleError:
                blocked = None
            if blocked is not None and _key(blocked, objective) < _key(plan, objective):
                plan = blocked
    plan = lean_replan(_make_plan, plan, next(h for p, h in how if p is plan), board, kw)
    plan.optimizer.update(space_to_depth=space_to_depth, pixel_pairs=pairs)
    plan.search_seconds = time.monotonic() - t0
    return plan



PIXEL_PAIRS = ("auto", "on", "off")
"""`make_plan`'s ``pixel_pairs`` modes (``--pixel-pairs``)."""


def _pairs_may_help(graph: Graph, plan: Plan) -> bool:
    """Whether a conv that could take two pixels a beat has a padded input frame of at least
    ``plan``'s ii: its window generator's floor at one pixel a beat, which pairs halve."""
    from bbgrap_hls.model import block_kind, node_geometry, pairable

    for n in graph.nodes:
        if n.op != "Conv" or n.host:
            continue
        try:
            kind, g = block_kind(n, graph), node_geometry(n, graph)
        except BbgrapError:
            continue
        if pairable(kind, g) and g.hp * g.wp >= plan.ii_cycles:
            return True
    return False


def _make_plan(graph: Graph, board: Board, short_rings: bool | None = None, out_slot: bool | None = None,
               **kw) -> Plan:
    """`make_plan` for one graph (its input layout as it is): its buffer and requantiser
    fallbacks (`fallbacks.lean_buffers`, `fallbacks.lut_requantisers`) around `_make_plan_with`."""
    return lean_buffers(partial(lut_requantisers, _make_plan_with), graph, board, short_rings, out_slot, **kw)


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
                    lut_macs: bool, lut_requant: bool, padded_folds: bool, ddr_stages: bool,
                    ddr_fifos: bool, pixel_pairs: bool = False, row_bands: bool = True,
                    short_rings: bool = False, out1: bool = False, move_boundaries: bool | None = None) -> Plan:
    """`_make_plan` with LUT requantisers, short window rings and one output slot allowed or not."""
    if strategy not in STRATEGIES:
        raise BadInputError(f"unknown strategy '{strategy}': expected one of {', '.join(STRATEGIES)}")
    if objective not in OBJECTIVES:
        raise BadInputError(f"unknown objective '{objective}': expected one of {', '.join(OBJECTIVES)}")
    t0 = time.monotonic()
    prob = build_problem(graph, board, parallel_window=parallel_window, pixel_copies=pixel_copies,
                         offchip_weights=offchip_weights, dsp_packing=dsp_packing, lut_macs=lut_macs,
                         lut_requant=lut_requant, padded_folds=padded_folds, ddr_stages=ddr_stages,
                         ddr_fifos=ddr_fifos, pixel_pairs=pixel_pairs, row_bands=row_bands,
                         short_rings=short_rings, out1=out1, extras=strategy == "search" and objective == "throughput")
    _needs_dsp(prob)
    # With DSP packing allowed, also plan without it and keep the better plan (ties: packed,
    # fewer DSPs): packing makes every packed row cheaper in DSPs, which can steer the
    # segmentation's cheapest-folding heuristic to BRAM-heavier rows and a worse plan
    # (MobileNetV2 on u250: 56,448 instead of 51,076 cycles); allowing it must never cost speed.
    best, err = None, None
    probs = [prob, _variant(prob, dsp_packing=False)] if dsp_packing else [prob]

    joint = strategy == "search" and objective == "throughput"

    def narrowed(p: Problem, plan: Plan, seg: Segmentation, progress) -> tuple[Plan, Segmentation]:
        if not narrow_folding:
            return plan, seg
        if progress:
            progress(f"{strategy}: narrowing foldings to the design ii")
        plan, seg, st = narrow(p, seg, plan, objective, strategy)
        plan.optimizer.update(narrowed_blocks=st.refolded, lanes_before=st.lanes_before,
                              lanes_after=st.lanes_after)
        return plan, seg

    def rules_one(p0: Problem, progress=progress) -> tuple:
        """The segmentation's plan of ``p0``, narrowed: (problem, plan, segmentation, None);
        on a one-core path where the joint choice follows, (p0, None, None, error) when it
        finds none (the integer program may still fit one)."""
        try:
            p, plan, seg = _run_best(p0, strategy, objective, time_limit, seed, progress)
            return (p, *narrowed(p, plan, seg, progress), None)
        except InfeasibleError as e:
            if not (joint and len(p0.core_path) == 1):
                raise
            return p0, None, None, e

    def joint_one(p0: Problem, got: tuple, below: int | None, progress=progress) -> tuple | None:
        """The foldings chosen jointly by an integer program per core (`ilp.py`), on one core
        over every row of ``p0``, else with the cores and splits of ``got``'s segmentation, at
        an ii below ``below``: (on p0 or not, plan, segmentation), or None.

        Raises:
            InfeasibleError: on one core when neither problem has a plan: the rules' message
                and what integer programs over every row prove (`ilp.explain`)."""
        p, plan, seg, _ = got
        one_core = len(p0.core_path) == 1
        if plan is None and not one_core:
            return None
        if progress:
            progress(f"{strategy}: choosing the foldings jointly (integer program)")
        q = p0 if one_core else p
        last: dict = {}
        found = joint_plan(q, strategy, objective, seg=None if one_core else seg, below=below, last=last)
        source = JOINT
        beat = found[0] if found is not None else plan  # the plan the moved boundaries must beat
        if not one_core and (move_boundaries if move_boundaries is not None else underused(beat)):
            if progress:
                progress(f"{strategy}: moving the segment boundaries (integer programs)")
            # (below the better problem's plan too, as the joint choice: a slower one cannot win)
            moved = rebalance(q, strategy, objective, seg, beat.ii_cycles if below is None else
                              min(beat.ii_cycles, below))
            if moved is not None:
                found, source = moved, MOVED
        if found is None:
            if plan is None and below is None:  # no plan at all: say what the programs prove
                why = explain(q, last)
                raise InfeasibleError(f"{got[3]}; {why}" if why else str(got[3])) from got[3]
            return None
        jplan, jseg = narrowed(q, *found, progress)
        jseg.source = source
        return one_core, jplan, jseg

    # The problem without packing is planned in a second process where one can be forked
    # (`parallel.Aside`); its result is taken exactly as if planned here, after the first.
    # The joint choice then runs on each problem below the better of the two plans (a slower
    # target could not win), the second again aside.
    aside = Aside(lambda: rules_one(probs[1], None), lambda g: (*_portable(g[:3]), g[3])) if len(probs) > 1 else None
    if aside is not None and aside.started and progress:
        progress(f"{strategy}: planning without DSP packing in a second process")
    got: list = []  # per problem: rules_one's tuple, or the InfeasibleError it raised
    try:
        for k, p0 in enumerate(probs):
            try:
                got.append(rules_one(p0) if k == 0 or aside is None else aside.result())
            except InfeasibleError as e:
                got.append(e)
    finally:
        if aside is not None:
            aside.close()
    # Packing the off-chip blocks too can steer the segmentation's heuristics to a slower plan
    # (ResNet-50 on u250: 1,118.9 fps, against 1,328.7 with the on-chip blocks packed alone):
    # where the packed plan packs an off-chip block, the problem that packs on-chip blocks only
    # (`tables.ONCHIP`) is planned too, so that packing them never costs speed.
    first = got[0] if dsp_packing and got else None
    if isinstance(first, tuple) and first[1] is not None and any(
            n.weights == "ddr" and n.pack == 2 for n in first[1].nodes):
        probs.append(_variant(prob, dsp_packing=ONCHIP))
        try:
            got.append(rules_one(probs[-1]))
        except InfeasibleError as e:
            got.append(e)
    ruled = [g[1] for g in got if isinstance(g, tuple) and g[1] is not None]
    below = min(pl.ii_cycles for pl in ruled) if ruled else None
    joined: list = [None] * len(probs)
    if joint:
        todo = [k for k, g in enumerate(got) if isinstance(g, tuple)]
        aside = (Aside(lambda: joint_one(probs[todo[1]], got[todo[1]], below, None))
                 if len(todo) > 1 else None)
        try:
            for n, k in enumerate(todo):
                try:
                    joined[k] = joint_one(probs[k], got[k], below) if n != 1 or aside is None else aside.result()
                except InfeasibleError as e:  # neither the rules nor the programs fit (one core)
                    got[k] = e
        finally:
            if aside is not None:
                aside.close()
    for k, g in enumerate(got):
        if isinstance(g, InfeasibleError):
            err = err or g
            continue
        p, plan, seg, failed = g
        err = err or failed
        tried = [] if plan is None else [(p, plan, seg)]
        if joined[k] is not None:
            on_p0, jplan, jseg = joined[k]
            tried.append((probs[k] if on_p0 else p, jplan, jseg))
        for t in tried:
            if best is None or _key(t[1], objective) < _key(best[1], objective):
                best = t
    if best is None:
        raise err
    chosen, plan, seg = best
    # the options of the problem the plan was made from (with packing or off-chip weights
    # allowed, make_plan may keep the plan made without them)
    plan.optimizer.update(dsp_packing=bool(chosen.dsp_packing), offchip_weights=chosen.offchip_memory is not None,
                          lut_macs=bool(chosen.lut_macs), lut_requant=bool(chosen.lut_requant),
                          padded_folds=bool(chosen.padded_folds),
                          ddr_stages=bool(chosen.ddr_stages and chosen.offchip_memory is not None),
                          ddr_fifos=bool(chosen.ddr_fifos and chosen.offchip_memory is not None),
                          row_bands=bool(chosen.row_bands and chosen.offchip_memory is not None),
                          short_rings=bool(chosen.short_rings),
                          out_slot=bool(chosen.out1 and chosen.offchip_memory is not None),
                          boundaries_moved=seg.source == MOVED)
    _check_capacity(board, plan)
    plan.input_blocks = dict(graph.input_blocks)
    plan.search_seconds = time.monotonic() - t0
    if objective == "latency":
        plan.optimality_note = (f"{strategy}, latency objective: not proved optimal (the exact "
                                "segmentation minimises the ii, not the latency)")
    elif seg.source in (JOINT, MOVED):
        plan.optimal = False
        plan.optimality_note = (
            "search chose the foldings jointly: per core an integer program (HiGHS) over the folding "
            "tables (on one core: every row; else "
            + ("with the segment boundaries moved: each core in turn given the longest run of the next "
               "blocks that its program fits" if seg.source == MOVED else "with the segmentation's cores and splits")
            + "), the "
            "least target at which the built plan fits found by bisection, the "
            "program re-solved with the limits less what the built plan uses beyond its rows (FIFOs, "
            "converters); faster than the segmentation's block-by-block folding rules; NOT proved optimal")
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
    if strategy == "search" and objective == "throughput" and move_boundaries is None and seg.source != MOVED:
        plan.bottleneck_note = "; ".join(s for s in (plan.bottleneck_note, move_hint(plan)) if s)
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
