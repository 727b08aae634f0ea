"""Planner benchmark: models x multi-core boards -> predicted frames/s per strategy.

Prints, per instance, the fps of exact / search / single / even / greedy, the speed-ups of
search over each baseline, the gap of search to exact, and the search times; then the
summary figures of issue 4 (geometric-mean speed-ups, scaling on u250, DenseNet-121-sized
search time). Run: ``python bench/plan_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bbgrap_hls.board import load_board, parse_board  # noqa: E402
from bbgrap_hls.errors import InfeasibleError  # noqa: E402
from bbgrap_hls.frontend import load_model  # noqa: E402
from bbgrap_hls.passes import canonicalize  # noqa: E402
from bbgrap_hls.search import make_plan  # noqa: E402
from tests import models  # noqa: E402

TWO_CORE = """
name: u250-half
description: two SLRs of an Alveo U250 (bench-only 2-core board)
source: u250.yaml, first two SLRs
clock_mhz: 300
defaults: {device: xcu250, dsp: 3072, bram18: 1344, uram: 320, lut: 432000, cap: 0.8}
cores: [{id: 0, slr: 0}, {id: 1, slr: 1}]
links: [{a: 0, b: 1, width_bits: 512, latency_cycles: 4, kind: slr-crossing}]
memories: [{name: ddr0, kind: ddr4, bandwidth_gbps: 19.2, cores: [0], latency_cycles: 100}]
host: {kind: pcie-gen3x16, bandwidth_gbps: 12.0, latency_us: 2.0}
"""


def cnn_wide(seed: int = 0):
    """A compute-bound CNN: a cheap stem, then six 3x3 convs of 64-128 channels."""
    b = models.Builder(seed)
    x = b.conv_bn(b.input("x", (1, 3, 32, 32)), 16, 3, 2)
    for c in (64, 64, 128, 128, 128, 128):
        x = b.conv_bn(x, c, 3, 1)
    return models._rename_output(b, b.gemm(b.flatten(b.gap(x)), 10), "cnn_wide")


def densenet121(seed: int = 0, res: int = 224):
    """DenseNet-121-sized graph: blocks of 6/12/24/16 layers, growth 32."""
    b = models.Builder(seed)
    x = b.conv_bn(b.input("x", (1, 3, res, res)), 64, 7, 2)
    x = b.maxpool(x, 3, 2, 1)
    for i, n in enumerate((6, 12, 24, 16)):
        feats = [x]
        for _ in range(n):
            y = b.concat(feats) if len(feats) > 1 else feats[0]
            y = b.conv(b.act(b.bn(y)), 128, 1)
            y = b.conv(b.act(b.bn(y)), 32, 3)
            feats.append(y)
        x = b.concat(feats)
        if i < 3:
            x = b.conv(b.act(b.bn(x)), b.shapes[x][1] // 2, 1)
            x = b.node("AveragePool", [x], (1, b.shapes[x][1], b.shapes[x][2] // 2, b.shapes[x][3] // 2),
                       kernel_shape=[2, 2], strides=[2, 2])
    return models._rename_output(b, b.gemm(b.flatten(b.gap(b.act(b.bn(x)))), 1000), "densenet121")


def canonical(model):
    d = tempfile.mkdtemp()
    return canonicalize(load_model(models.save(model, f"{d}/m.onnx")))


def run(graph, board, strategy, time_limit=10.0):
    t = time.monotonic()
    try:
        p = make_plan(graph, board, strategy=strategy, time_limit=time_limit, baselines=False)
        return p.fps, time.monotonic() - t, p
    except InfeasibleError:
        return 0.0, time.monotonic() - t, None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the DenseNet-121 timing")
    args = ap.parse_args()
    boards = [parse_board(TWO_CORE, "bench:u250-half")] + [load_board(n) for n in
                                                          ("u280", "u55c", "u250", "vu9p-quad", "2x-u250")]
    nets = {"resnet8": models.resnet8(), "ds_cnn": models.ds_cnn(), "mobilenet_v1_0.25": models.mobilenet_v1(),
            "mlp_autoencoder": models.mlp_autoencoder(), "lenet": models.lenet(), "cnn_wide": cnn_wide()}
    print(f"{'model':<18} {'board':<10} {'exact':>12} {'search':>12} {'single':>12} {'even':>12} "
          f"{'greedy':>12} {'x even':>7} {'x greedy':>8} {'gap':>7} {'t_exact':>7} {'t_search':>8} opt")
    sp_even, sp_greedy, gaps, scaling = [], [], [], {}
    for mname, model in nets.items():
        g = canonical(model)
        for board in boards:
            ex, tex, pex = run(g, board, "exact")
            se, tse, _ = run(g, board, "search")
            si, _, _ = run(g, board, "single")
            ev, _, _ = run(g, board, "even")
            gr, _, _ = run(g, board, "greedy")
            gap = (ex - se) / ex if ex and tex < 60 else float("nan")
            xe = se / ev if ev else float("nan")
            xg = se / gr if gr else float("nan")
            if ev:
                sp_even.append(xe)
            if gr:
                sp_greedy.append(xg)
            if not math.isnan(gap):
                gaps.append(gap)
            if board.name == "u250" and si:
                scaling[mname] = se / si
            print(f"{mname:<18} {board.name:<10} {ex:>12,.0f} {se:>12,.0f} {si:>12,.0f} {ev:>12,.0f} "
                  f"{gr:>12,.0f} {xe:>7.2f} {xg:>8.2f} {100 * gap:>6.2f}% {tex:>7.2f} {tse:>8.2f} "
                  f"{pex.optimal if pex else '-'}")
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")  # noqa: E731
    print()
    print(f"geometric-mean speed-up of search over even:   {geo(sp_even):.2f}x over {len(sp_even)} instances")
    print(f"geometric-mean speed-up of search over greedy: {geo(sp_greedy):.2f}x over {len(sp_greedy)} instances")
    print(f"largest gap of search below exact: {100 * max(gaps):.3f}% over {len(gaps)} instances")
    print("scaling on u250 (search fps / single-core fps): "
          + ", ".join(f"{k} {v:.2f}x" for k, v in scaling.items()))
    if not args.quick:
        g = canonical(densenet121())
        print(f"densenet121-sized graph: {len(g.nodes)} canonical nodes")
        for name in ("u250", "2x-u250"):
            fps, t, p = run(g, load_board(name), "search")
            print(f"  search on {name}: {t:.1f} s, {fps:,.1f} frames/s"
                  + ("" if p else " (infeasible)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
