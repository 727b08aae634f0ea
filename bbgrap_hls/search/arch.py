"""Dataflow design or layer engine: `plan_arch` chooses (docs/plan.md, "Architecture").

- ``dataflow``: every layer its own block (`bbgrap_hls.search.make_plan`), as before.
- ``engine``: the layer engine (`bbgrap_hls.model.engine_plan.plan_engine`): three units
  time-shared over the layers, maps and weights in the board memory, one engine a core,
  frames in turn over the cores.
- ``auto`` (the default): the dataflow plan; the engine when the dataflow plan is infeasible,
  or when the engine's ceiling (`engine_ceiling`) is above the dataflow plan's fps and the
  engine plan is faster. The faster feasible plan is kept; ``why`` says what decided.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.ir import Graph

ARCHES = ("auto", "dataflow", "engine")


def engine_ceiling(graph: Graph, board, max_batch: int = 1) -> float:
    """An upper bound on any engine's frames/s on ``board``: per core, the conv unit's
    products at two a DSP (``PE·SIMD ≤ 2·DSP``) over the graph's MACs, and its weights read once
    for ``max_batch`` frames at the core's whole share of its memory; times the cores. Cheap (no plan)."""
    from bbgrap_hls.ops import get_op

    macs = sum(get_op(n.op).macs(n, graph) for n in graph.nodes)
    weights = sum(graph.tensors[t].size for n in graph.nodes if n.op in ("Conv", "Gemm", "MatMul")
                  for t in n.inputs[1:2] if t and graph.tensors[t].is_const)
    core = board.cores[0]
    per_frame = max(macs / max(2 * core.limit("dsp"), 1), weights / max_batch / max(board.offchip_share(0), 1e-9),
                    1.0)
    return board.clock_mhz * 1e6 / per_frame * len(board.cores)


def plan_arch(graph: Graph, board, arch: str, dataflow: Callable[[], Any], max_batch: int = 4):
    """The plan for ``arch`` (`ARCHES`); ``dataflow()`` makes the dataflow plan; ``max_batch``:
    the most frames a start an engine may take (`best_engine`).

    Raises:
        InfeasibleError: no architecture allowed fits (both refusals named under ``auto``).
        NotImplementedError: ``engine`` asked for a graph with an operator no unit runs.
    """
    if arch not in ARCHES:
        raise ValueError(f"arch {arch!r}: one of {ARCHES}")
    if arch == "engine":
        return best_engine(graph, board, "asked for (--arch engine)", max_batch=max_batch)
    try:
        plan = dataflow()
    except InfeasibleError as e:
        if arch == "dataflow":
            raise
        try:
            return best_engine(graph, board, f"the dataflow plan is infeasible: {e}", max_batch=max_batch)
        except (InfeasibleError, NotImplementedError) as e2:
            raise InfeasibleError(f"{e} (the layer engine does not fit either: {e2})") from None
    largest = max([1] + [n for n in BATCHES if n <= max_batch])  # the most frames a start best_engine tries
    if arch == "dataflow" or engine_ceiling(graph, board, largest) <= plan.fps:
        return plan
    try:
        eng = best_engine(graph, board, f"faster than the dataflow plan's {plan.fps:,.1f} frames/s", floor=plan.fps,
                          max_batch=max_batch)
    except (InfeasibleError, NotImplementedError):
        return plan
    return eng if eng.fps > plan.fps else plan


def _stem_free_fps(eng, graph: Graph) -> float:
    """The frames/s of engine plan ``eng`` were the steps of ``graph``'s stem conv free."""
    from bbgrap_hls.passes.stem import stem_reader

    found = stem_reader(graph)
    stem = found[1].name if found else None
    cycles = sum(st.cycles + st.overhead for st in eng.steps if stem in st.nodes)
    return eng.fps * eng.cycles / max(eng.cycles - cycles, 1)


BATCHES = (2, 4)
"""Frames a start `best_engine` tries beyond one (docs/engine.md, "Batched frames")."""

BATCH_GAIN = 1.05
"""A batched engine is kept only when it is this much faster than the best so far: a frame
waits for its start's others, so more frames a start multiply the latency; a gain of a few
per cent is not worth that."""


def batched_ceiling(eng, board) -> float:
    """An upper bound on the frames/s of ``eng``'s engine (a one-frame plan) with any number of
    frames a start: batching shares only the weight reads, so per frame each conv step still
    takes at least its useful MACs over ``PE·SIMD`` (a batched engine's unit is no larger: its
    input buffer holds more) and its feature beats on a channel at the period, and every
    other step its cycles."""
    per = 0.0
    for st in eng.steps:
        if st.unit == "conv":
            per += max(st.macs / (eng.pe * eng.simd), st.f_read * eng.period, st.f_write * eng.period)
        else:
            per += st.cycles
    return eng.clock_mhz * 1e6 / max(per, 1.0) * eng.cores


def best_engine(graph: Graph, board, why: str = "", floor: float = 0.0, max_batch: int = 4):
    """`plan_engine` on ``graph`` and, where its input feeds a stem conv (a float graph: gen
    rewrites only those), on the graph in each other input layout the host can write
    (`passes.stem`): the strided stem over ``s × s`` pixel blocks (`space_to_depth_stem`:
    ``s²·C`` channels fill the conv unit's blocks where ``C`` = 3 would leave most of a
    ``PE``-channel block empty), and the stem's window unfolded into channels, a kernel row's
    taps or all of them (`patches_stem`: ``kw·C`` or ``kh·kw·C`` channels, no zero taps). The
    fastest is kept, ties to the earlier in that order; a layout whose input the host link
    cannot deliver at the plan's frames/s (``host.bandwidth_gbps`` over the held input's
    bytes) is not. With ``floor`` (``--arch auto``: the dataflow plan's frames/s), the other
    layouts are not planned when the plain plan would stay at or under it even with its stem
    step taking no cycles (they change only the stem, and the sizes a core fits hardly depend
    on it): such an engine would not be kept anyway, and planning them cost DenseNet-121 on
    u250 about a second.

    Then, in the layout kept, `BATCHES` frames a start up to ``max_batch`` (`plan_engine`'s ``frames``: each conv
    step's weights read once for them), kept when `BATCH_GAIN` times faster than the best so
    far; not planned when `batched_ceiling` is at or under that (or ``floor``)."""
    from bbgrap_hls.model.engine_plan import plan_engine
    from bbgrap_hls.passes.stem import patch_conv, patches_stem, space_to_depth_stem, stem_conv

    t = time.perf_counter()
    eng = plan_engine(graph, board)
    kept = graph
    if not any("q" in n.attrs for n in graph.nodes):
        layouts = [space_to_depth_stem] if stem_conv(graph) is not None else []
        layouts += [lambda g, r=rows: patches_stem(g, r) for rows in (False, True) if patch_conv(graph, rows)]
        if layouts and floor and _stem_free_fps(eng, graph) <= floor:
            layouts = []
        link = board.host.bandwidth_gbps * 1e9
        for rewrite in layouts:
            held = rewrite(graph)
            try:
                alt = plan_engine(held, board)
            except (InfeasibleError, NotImplementedError):
                continue
            if alt.fps > eng.fps and link / sum(held.tensors[x].size for x in held.inputs) >= alt.fps:
                eng, kept = alt, held
    ceiling = batched_ceiling(eng, board)
    for n in (n for n in BATCHES if n <= max_batch):
        if ceiling <= max(BATCH_GAIN * eng.fps, floor):
            break
        try:
            alt = plan_engine(kept, board, frames=n)
        except (InfeasibleError, NotImplementedError):
            continue
        if alt.fps > BATCH_GAIN * eng.fps:
            eng = alt
    eng.input_blocks = dict(kept.input_blocks)
    eng.input_patches = {k: v.to_dict() for k, v in kept.input_patches.items()}
    eng.model, eng.why, eng.plan_seconds = graph.name, why, time.perf_counter() - t
    return eng
