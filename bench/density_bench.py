"""Arithmetic-density bench (issue 13): how many int8 MACs the plans get out of the fabric.

For ResNet-8 (``examples/resnet8.onnx``, the README's main command), ResNet-18 and
MobileNetV2 (``bench/zoo.py``, torchvision shapes) on u250 it plans with the default options
(DSP packing and LUT multipliers on; ``--offchip-weights`` for the ImageNet models, as a
user deploying them would) and prints per model:

- ii (cycles) and frames/s at the board clock;
- MACs per DSP per cycle over the whole design: MACs per frame / ii / DSPs the plan uses
  (requantiser DSPs included), and on the bottleneck block's core;
- the products the plan puts in LUTs (MAC lanes of blocks with ``pack == 0``) and in packed DSPs;
- frames/s over the plan's roofline (two MACs per DSP plus one per `LUT_MUL + LUT_PER_MAC` LUTs
  of the cores' limits, `bbgrap_hls.search.roofline`);
- the issue's target and whether it is met, and the published Vitis AI DPU figure where one
  exists (ResNet-18 on U250: 2,422.5 fps, Vitis AI 1.3 model zoo, see docs/benchmarks.md).

Run: ``python bench/density_bench.py [--models resnet8,resnet18,mobilenet_v2] [--board u250]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bbgrap_hls.board import load_board  # noqa: E402
from bbgrap_hls.commands.inspect import summarize  # noqa: E402
from bbgrap_hls.frontend import load_model  # noqa: E402
from bbgrap_hls.passes import canonicalize  # noqa: E402
from bbgrap_hls.search import make_plan  # noqa: E402

#: model -> (target, "ii <=" or "fps >=", DPU fps on u250 with its source or None)
TARGETS = {
    "resnet8": (800, "ii", None),
    "resnet18": (2400, "fps", "2,422.5 (DPUCADX8G, Vitis AI 1.3 model zoo)"),
    "mobilenet_v2": (12000, "fps", None),
}


def graph_of(name: str):
    if name == "resnet8":
        return canonicalize(load_model(str(ROOT / "examples" / "resnet8.onnx")))
    import zoo

    return zoo.canonical(zoo.ZOO[name]())


def row(name: str, board_name: str, space_to_depth: str = "auto", pixel_pairs: str = "auto") -> dict:
    g = graph_of(name)
    board = load_board(board_name)
    t0 = time.perf_counter()
    plan = make_plan(g, board, baselines=False, offchip_weights=name != "resnet8",
                     space_to_depth=space_to_depth, pixel_pairs=pixel_pairs)
    secs = time.perf_counter() - t0
    macs = summarize(g, canonical=True)["macs"]
    dsp = sum(c.dsp for c in plan.cores)
    bott = next(n for n in plan.nodes if n.name == plan.bottleneck)
    core = next((c for c in plan.cores if c.id == bott.core), None)
    core_macs = sum(_node_macs(g, n.name) * _share(n, bott.core) for n in plan.nodes)
    pairs = sum(1 for n in plan.nodes if n.px > 1)
    lut_lanes = sum(n.pe * n.simd * max(1, n.mmv) for n in plan.nodes if n.pack == 0 and n.block in ("conv", "dense"))
    packed = sum(n.pe * n.simd * max(1, n.mmv) for n in plan.nodes if n.pack == 2)
    target, kind, dpu = TARGETS.get(name, (None, None, None))
    met = None
    if target is not None:
        met = plan.ii_cycles <= target if kind == "ii" else plan.fps >= target
    return {
        "model": name, "board": board_name, "ii": plan.ii_cycles, "fps": plan.fps,
        "macs_per_dsp": macs / plan.ii_cycles / dsp if dsp else float("nan"),
        "core_macs_per_dsp": core_macs / plan.ii_cycles / core.dsp if core and core.dsp else float("nan"),
        "lut_lanes": lut_lanes, "packed_lanes": packed, "roofline": plan.roofline.get("roofline_fps"),
        "fraction": plan.roofline.get("fraction"), "binds": plan.roofline.get("binds"),
        "bottleneck": plan.bottleneck, "target": target, "kind": kind, "met": met, "dpu": dpu,
        "offchip": sum(1 for n in plan.nodes if n.weights == "ddr"), "plan_s": secs, "pairs": pairs,
    }


def _share(n, core: int) -> float:
    """The share of node ``n``'s MACs computed on ``core``: a split node's parts by their channels."""
    if not n.split:
        return float(n.core == core)
    co = sum(p.co_end - p.co_begin for p in n.split)
    return sum(p.co_end - p.co_begin for p in n.split if p.core == core) / co


def _node_macs(g, name: str) -> int:
    from bbgrap_hls.ops import get_op

    node = g.node(name)
    return 0 if node.host else int(get_op(node.op).macs(node, g))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet8,resnet18,mobilenet_v2")
    ap.add_argument("--board", default="u250")
    ap.add_argument("--space-to-depth", choices=("auto", "on", "off"), default="auto",
                    help="the stem's input as pixel blocks (gen --space-to-depth; default auto, as gen)")
    ap.add_argument("--pixel-pairs", choices=("auto", "on", "off"), default="auto",
                    help="two pixels a beat into convs and Adds (gen --pixel-pairs; default auto, as gen)")
    args = ap.parse_args(argv)
    print("| model | board | ii | fps | MACs/DSP/cycle (design) | on the bottleneck's core | LUT MAC lanes | "
          "packed lanes | off-chip blocks | paired convs | fps / roofline | binds | target | met | DPU fps | plan s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        r = row(name, args.board, args.space_to_depth, args.pixel_pairs)
        tgt = "-" if r["target"] is None else (f"ii <= {r['target']:,}" if r["kind"] == "ii" else
                                               f"fps >= {r['target']:,}")
        print(f"| {r['model']} | {r['board']} | {r['ii']:,} | {r['fps']:,.1f} | {r['macs_per_dsp']:.2f} | "
              f"{r['core_macs_per_dsp']:.2f} | {r['lut_lanes']:,} | {r['packed_lanes']:,} | {r['offchip']} | {r['pairs']} | "
              f"{r['fraction']:.0%} of {r['roofline']:,.0f} | {r['binds']} | {tgt} | "
              f"{'-' if r['met'] is None else 'met' if r['met'] else 'missed'} | {r['dpu'] or '-'} | {r['plan_s']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
