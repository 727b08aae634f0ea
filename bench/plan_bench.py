"""Planner benchmark: models x multi-core boards -> predicted frames/s per strategy.

Prints, per instance and with the parallel window off and on, the fps of exact / search /
single / even / greedy, the speed-ups of search over each baseline, the gap of search to
exact, and the search times; then the summary figures of issue 4 (geometric-mean
speed-ups, scaling on u250 against one of its cores with the best ii any plan could reach,
DenseNet-121 search time), and what the final narrowing pass saves (lanes, DSP, LUT
with the pass off and on, same ii). Run: ``python bench/plan_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bbgrap_hls.board import load_board  # noqa: E402
from bbgrap_hls.errors import InfeasibleError  # noqa: E402
from bbgrap_hls.frontend import load_model  # noqa: E402
from bbgrap_hls.ops import get_op  # noqa: E402
from bbgrap_hls.passes import canonicalize  # noqa: E402
from bbgrap_hls.search import build_problem, make_plan  # noqa: E402
from bbgrap_hls.search.dp import lower_bound  # noqa: E402
from tests import models  # noqa: E402


def cnn_wide(seed: int = 0):
    """A compute-bound CNN: a cheap stem, then six 3x3 convs of 64-128 channels."""
    b = models.Builder(seed)
    x = b.conv_bn(b.input("x", (1, 3, 32, 32)), 16, 3, 2)
    for c in (64, 64, 128, 128, 128, 128):
        x = b.conv_bn(x, c, 3, 1)
    return models._rename_output(b, b.gemm(b.flatten(b.gap(x)), 10), "cnn_wide")


def densenet121():
    """DenseNet-121 from the onnx package's light model zoo (shapes of the real network)."""
    import os

    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                        "light_densenet121.onnx")


def canonical(model):
    if isinstance(model, str):
        return canonicalize(load_model(model))
    d = tempfile.mkdtemp()
    return canonicalize(load_model(models.save(model, f"{d}/m.onnx")))


def run(graph, board, strategy, time_limit=10.0, parallel_window=False, pixel_copies=False):
    t = time.monotonic()
    try:
        p = make_plan(graph, board, strategy=strategy, time_limit=time_limit, baselines=False,
                      parallel_window=parallel_window, pixel_copies=pixel_copies)
        return p.fps, time.monotonic() - t, p
    except InfeasibleError:
        return 0.0, time.monotonic() - t, None


def best_possible_ii(graph, board, parallel_window, pixel_copies=False):
    """No plan on ``board`` beats this ii: the search's lower bound (each block at its
    fastest folding that fits a core alone) and the MACs over all DSP limits."""
    prob = build_problem(graph, board, parallel_window=parallel_window, pixel_copies=pixel_copies)
    macs = sum(get_op(n.op).macs(n, graph) for n in graph.nodes if not n.host)
    dsp = sum(c.dsp_limit for c in board.cores)
    return max(lower_bound(prob), math.ceil(macs / dsp))


CONFIGS = ((False, False), (True, False), (True, True))
"""(parallel window, pixel copies): both off, the window alone, both (the default)."""


def _config(pw: bool, pc: bool) -> str:
    return f"window {'on' if pw else 'off'}, copies {'on' if pc else 'off'}"


def table(nets, boards, parallel_window, pixel_copies=False):
    print(f"\n== {_config(parallel_window, pixel_copies)} ==")
    print(f"{'model':<18} {'board':<10} {'exact':>12} {'search':>12} {'single':>12} {'even':>12} "
          f"{'greedy':>12} {'x even':>7} {'x greedy':>8} {'gap':>7} {'t_exact':>7} {'t_search':>8} opt")
    sp_even, sp_greedy, gaps = [], [], []
    for mname, g in nets.items():
        for board in boards:
            kw = dict(parallel_window=parallel_window, pixel_copies=pixel_copies)
            ex, tex, pex = run(g, board, "exact", **kw)
            se, tse, _ = run(g, board, "search", **kw)
            si, _, _ = run(g, board, "single", **kw)
            ev, _, _ = run(g, board, "even", **kw)
            gr, _, _ = run(g, board, "greedy", **kw)
            gap = (ex - se) / ex if ex and tex < 60 else float("nan")
            xe = se / ev if ev else float("nan")
            xg = se / gr if gr else float("nan")
            if ev:
                sp_even.append(xe)
            if gr:
                sp_greedy.append(xg)
            if not math.isnan(gap):
                gaps.append(gap)
            print(f"{mname:<18} {board.name:<10} {ex:>12,.0f} {se:>12,.0f} {si:>12,.0f} {ev:>12,.0f} "
                  f"{gr:>12,.0f} {xe:>7.2f} {xg:>8.2f} {100 * gap:>6.2f}% {tex:>7.2f} {tse:>8.2f} "
                  f"{pex.optimal if pex else '-'}")
    print(f"geometric-mean speed-up of search over even:   {geo(sp_even):.2f}x over {len(sp_even)} instances")
    print(f"geometric-mean speed-up of search over greedy: {geo(sp_greedy):.2f}x over {len(sp_greedy)} instances")
    print(f"largest gap of search below exact: {100 * max(gaps):.3f}% over {len(gaps)} instances")


def geo(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def scaling(nets):
    u250 = load_board("u250")
    print("\n== scaling on u250: search over all 4 cores vs single (one core) ==")
    print(f"{'model':<18} {'options':<26} {'single ii':>10} {'search ii':>10} {'bound ii':>9} {'scaling':>8} "
          f"{'bound/1':>8}  bottleneck")
    for mname, g in nets.items():
        for pw, pc in CONFIGS:
            _, _, ps = run(g, u250, "single", parallel_window=pw, pixel_copies=pc)
            _, _, p4 = run(g, u250, "search", parallel_window=pw, pixel_copies=pc)
            bound = best_possible_ii(g, u250, pw, pc)
            print(f"{mname:<18} {_config(pw, pc):<26} {ps.ii_cycles:>10,} {p4.ii_cycles:>10,} {bound:>9,} "
                  f"{ps.ii_cycles / p4.ii_cycles:>7.2f}x {ps.ii_cycles / bound:>7.2f}x  {p4.bottleneck}")


def _total(plan, r):
    return sum(getattr(c, r) for c in plan.cores)


def narrowing(nets):
    """Each strategy's plan with the narrowing pass off and on: ii, latency, pe·simd lanes,
    DSP, LUT, BRAM18 (search and exact coincide on these instances)."""
    print("\n== narrowing pass: off -> on (defaults: window on, copies on) ==")
    print(f"{'model':<18} {'board':<10} {'strategy':<8} {'ii':>15} {'latency':>17} {'lanes':>13} "
          f"{'dsp':>13} {'lut':>17} {'bram18':>11} {'time':>6}")
    for mname, g in nets.items():
        for board in (load_board("u250"), load_board("vu9p-quad")):
            for strategy in ("search", "greedy", "even"):
                try:
                    a = make_plan(g, board, strategy=strategy, baselines=False, narrow_folding=False)
                    t = time.monotonic()
                    b = make_plan(g, board, strategy=strategy, baselines=False)
                    t = time.monotonic() - t
                except InfeasibleError:
                    continue
                o = b.optimizer
                print(f"{mname:<18} {board.name:<10} {strategy:<8} {a.ii_cycles:>7}->{b.ii_cycles:<7} "
                      f"{a.latency_cycles:>8}->{b.latency_cycles:<8} {o['lanes_before']:>6}->{o['lanes_after']:<6} "
                      f"{_total(a, 'dsp'):>6}->{_total(b, 'dsp'):<6} {_total(a, 'lut'):>8}->{_total(b, 'lut'):<8} "
                      f"{_total(a, 'bram18'):>5}->{_total(b, 'bram18'):<5} {t:>5.2f}s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the DenseNet-121 timing")
    args = ap.parse_args()
    boards = [load_board(n) for n in ("u50", "u280", "u55c", "u250", "vu9p-quad", "2x-u250")]
    nets = {"resnet8": models.resnet8(), "ds_cnn": models.ds_cnn(), "mobilenet_v1_0.25": models.mobilenet_v1(),
            "mlp_autoencoder": models.mlp_autoencoder(), "lenet": models.lenet(), "cnn_wide": cnn_wide()}
    nets = {k: canonical(m) for k, m in nets.items()}
    for pw, pc in CONFIGS:
        table(nets, boards, pw, pc)
    scaling(nets)
    narrowing(nets)
    if not args.quick:
        g = canonical(densenet121())
        print(f"\ndensenet121 (light zoo): {len(g.nodes)} canonical nodes")
        for name in ("u250", "vu9p-quad", "2x-u250"):
            for pw, pc in CONFIGS:
                fps, t, p = run(g, load_board(name), "search", parallel_window=pw, pixel_copies=pc)
                extra = (f", {sum(c.uram for c in p.cores)} URAM, FIFOs {sum(ch.bram18 for ch in p.channels)} "
                         f"BRAM18, weights in URAM on {sum(n.weights == 'uram' for n in p.nodes)} nodes"
                         if p else " (infeasible)")
                print(f"  search on {name:<9} {_config(pw, pc):<26}: {t:5.1f} s, {fps:,.1f} frames/s{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
