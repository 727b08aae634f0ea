"""Estimate: what two layer-engine levers would give (docs/engine.md, "What the levers are
worth"), against the one-frame engine. Not a plan and not a model of hardware that exists: a
ranking aid. The first lever, batched weights, is built since stop 56 (docs/engine.md,
"Batched frames"): each line ends with what the planner gives with it (``built``), so the
estimate can be checked against the plan.

For each (model, board) the layer engine is planned as `plan --arch engine --max-batch 1`
plans it (`search.arch.best_engine`). Each planned step has its unit's exact cycles and the beats it
moves on each AXI channel (feature read, feature write, weight read). A step's *bound* is the
largest of: its compute (useful MACs over ``PE·SIMD`` at 90 % of the unit, conv steps only)
and each channel's beats times that channel's period. A lever changes the bounds; each step's
planned cycles are scaled by ``bound after / bound before`` and summed.

- **Batched weights** (``B`` frames a conv step): a conv step whose ``B`` input maps fit the
  input buffer together (one band) reads its weights once for ``B`` frames: its weight
  beats a frame divided by ``B``.
- **An uneven split of the share**: integer periods ``(read, write, weights)`` whose rates
  (beat bytes over the period) sum to at most the core's share, none below a port's width
  (`engine_plan.memory_timing` gives every channel the same period today). The best split.
- **A pooled share** (stop 56): within a step the three channels share the core's share, a
  busy channel taking what the idle ones leave, each at most two ports' width (a channel
  striped over two AXI ports): a step's memory bound is the larger of its three channels'
  bytes over the share and its busiest channel's bytes over two ports' width.

Usage: ``python bench/engine_levers.py [--pairs resnet50:zcu102,...] [--quick]``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bbgrap_hls.board import load_board  # noqa: E402

PAIRS = ("resnet50:zcu102", "resnet50:kv260", "resnet18:zcu102", "resnet18:kv260", "mobilenet_v3_large:kv260",
         "efficientnet_b0:kv260")
QUICK = ("resnet8:kv260",)
COMPUTE_EFFICIENCY = 0.9
"""The share of the conv unit's ``PE·SIMD`` a compute-bound step is taken to use."""


def _graph(name: str):
    if name == "resnet8":  # the bundled example (quick mode): no zoo build
        from bbgrap_hls.frontend import load_model
        from bbgrap_hls.passes import canonicalize

        return canonicalize(load_model(str(ROOT / "examples" / "resnet8.onnx")))
    import zoo

    return zoo.canonical(zoo.ZOO[name]())


def estimate(eng, periods: tuple[int, int, int], batch: int = 1) -> float:
    """Frame cycles of ``eng`` (an `EnginePlan`) with channel ``periods`` (read, write, weights)
    and conv weights shared by ``batch`` frames where their maps fit the input buffer."""
    p = eng.period
    total = 0.0
    for st in eng.steps:
        conv = st.unit == "conv"
        comp = st.macs / (eng.pe * eng.simd) / COMPUTE_EFFICIENCY if conv else 0.0
        b = batch if conv and st.bands == 1 and st.f_read * eng.beat * batch <= eng.in_buffer else 1
        before = max(comp, st.f_read * p, st.f_write * p, st.w_read * p)
        after = max(comp, st.f_read * periods[0], st.f_write * periods[1], st.w_read * periods[2] / b)
        total += st.cycles * (after / before if before else 1.0)
    return total + (eng.cycles - sum(st.cycles for st in eng.steps))


def estimate_pool(eng, board, batch: int = 1) -> float:
    """Frame cycles of ``eng`` with the pooled share (see the module) and weights shared by
    ``batch`` frames as in `estimate`."""
    share = board.offchip_share(eng.core)
    most = 2 * board.home_memory(eng.core).port_width_bits / 8  # two ports' bytes a cycle
    p, total = eng.period, 0.0
    for st in eng.steps:
        conv = st.unit == "conv"
        comp = st.macs / (eng.pe * eng.simd) / COMPUTE_EFFICIENCY if conv else 0.0
        b = batch if conv and st.bands == 1 and st.f_read * eng.beat * batch <= eng.in_buffer else 1
        before = max(comp, st.f_read * p, st.f_write * p, st.w_read * p)
        beats = (st.f_read, st.f_write, st.w_read / b)
        after = max(comp, sum(beats) * eng.beat / share, max(beats) * eng.beat / most)
        total += st.cycles * (after / before if before else 1.0)
    return total + (eng.cycles - sum(st.cycles for st in eng.steps))


def best_split(eng, board) -> tuple[tuple[int, int, int], float]:
    """The integer periods (read, write, weights) with the fewest estimated cycles whose rates
    fit the core's share, each at least a port's width."""
    share = board.offchip_share(eng.core)
    lo = -(-8 * eng.beat // board.home_memory(eng.core).port_width_bits)
    fits = [q for q in itertools.product(range(lo, 4 * eng.period + 1), repeat=3)
            if sum(eng.beat / x for x in q) <= share + 1e-9]
    return min(((q, estimate(eng, q)) for q in fits), key=lambda t: (t[1], t[0]))


def row(pair: str) -> str:
    from bbgrap_hls.search.arch import best_engine

    model, board_name = pair.split(":")
    board = load_board(board_name)
    graph = _graph(model)
    eng = best_engine(graph, board, max_batch=1)
    built = best_engine(graph, board)
    p = (eng.period,) * 3
    hz = eng.clock_mhz * 1e6
    base = estimate(eng, p)  # the planned steps again (equal to the plan's cycles)
    batched = " ".join(f"B={b}: {eng.fps * base / estimate(eng, p, b):.1f}" for b in (2, 4, 8))
    q, c = best_split(eng, board)
    return (f"{model} on {board_name}: planned {eng.fps:.1f} fps ({eng.pe}x{eng.simd}, {hz / base:.1f} from the "
            f"steps); batched weights {batched}; best split {q} (today {p}): {eng.fps * base / c:.1f}; "
            f"built: {built.fps:.1f} fps at {built.frames} frame(s) a start; pooled share: "
            f"{eng.fps * base / estimate_pool(eng, board):.1f}, B=4: {eng.fps * base / estimate_pool(eng, board, 4):.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default=",".join(PAIRS), help="model:board,...")
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    a = ap.parse_args(argv)
    for pair in QUICK if a.quick else a.pairs.split(","):
        print(row(pair), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
