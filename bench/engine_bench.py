"""Benchmark: what the layer engine, as planned by `model.engine_plan.plan_engine`, would give
on the bench models (a projection: no engine is generated or run at this size).

Usage: ``python bench/engine_bench.py [--models a,b] [--boards x,y] [--markdown]`` (seconds).

The layer engine (docs/engine.md) runs a network's layers one after the other on three
units and a sequencer, the feature maps and weights in board memory. Its units and the
sequencer are built and checked (module and design twins: cycles equal to their models), but
nothing generates a whole-network engine yet. This bench asks the library's planner
(`plan_engine`, docs/engine.md "Planning (library)") for each (model, board):

- the sizes: the largest conv unit ``PE x SIMD``, window ``TAPS`` (3 down to 1) and conv input
  buffer (the largest input map, else row bands) whose units and sequencer fit the core's
  DSP/BRAM18/URAM/LUT limits at its cap, the fastest of 64-, 32- and 16-byte beats (a
  narrower beat narrows the element-wise unit, a beat a cycle);
- the memory: the home memory's latency and ``P = max(ceil(8·beat/port_bits), ceil(3·beat/share))``
  cycles a beat (`engine_plan.memory_timing`);
- the frame: each step's unit's exact model plus the sequencer's cycles a step, as
  `model.engine_top.frame_cycles` counts them; fps at the board clock times the cores (one
  engine a core, frames in turn); write-bound conv bands charged by a bound (``approx``);
- a strided stem conv reads its input in space-to-depth blocks (`passes.stem`, as the
  dataflow plans do by default: the host holds the input so): 12 channels and a 4 x 4 kernel
  instead of 3 channels and 7 x 7, far less padding to ``SIMD``.

Printed per (model, board): the engine's projected fps, the conv unit's size, the MAC
efficiency (useful MACs over ``PE·SIMD`` a cycle of the frame), the cycles' split over the
units (the sequencer the rest), the input buffer against the on-chip memory, the dataflow
plan's fps from docs/benchmarks.md's stop-49 table for comparison (not re-planned here) and
the plan's bottleneck. An
engine that does not fit is printed as refused with the planner's reason.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from zoo import ZOO, measure  # noqa: E402

from bbgrap_hls.board import load_board  # noqa: E402
from bbgrap_hls.errors import InfeasibleError  # noqa: E402
from bbgrap_hls.model.engine_plan import plan_engine  # noqa: E402
from bbgrap_hls.passes.stem import space_to_depth_stem, stem_conv  # noqa: E402

MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "googlenet",
          "squeezenet1_1", "regnety_400mf", "vgg16")
BOARDS = ("zcu102", "kv260", "zcu104", "u250", "u280")

DATAFLOW_FPS = {  # docs/benchmarks.md, "memory hierarchy", stop 49's table (None: refused)
    ("resnet18", "zcu102"): 221.4, ("resnet18", "kv260"): 55.4, ("resnet18", "zcu104"): 142.4,
    ("resnet18", "u250"): 2932.2, ("resnet18", "u280"): 1993.0,
    ("resnet50", "zcu102"): 31.1, ("resnet50", "kv260"): None, ("resnet50", "zcu104"): 27.7,
    ("resnet50", "u250"): 1328.7, ("resnet50", "u280"): 747.4,
    ("mobilenet_v2", "zcu102"): 1295.6, ("mobilenet_v2", "kv260"): 146.4, ("mobilenet_v2", "zcu104"): 885.8,
    ("mobilenet_v2", "u250"): 15943.9, ("mobilenet_v2", "u280"): 11542.0,
    ("mobilenet_v3_large", "zcu102"): 868.1, ("mobilenet_v3_large", "kv260"): None,
    ("mobilenet_v3_large", "zcu104"): 675.9, ("mobilenet_v3_large", "u250"): 17936.1,
    ("mobilenet_v3_large", "u280"): 11957.9,
    ("efficientnet_b0", "zcu102"): 202.5, ("efficientnet_b0", "kv260"): None, ("efficientnet_b0", "zcu104"): 147.6,
    ("efficientnet_b0", "u250"): 8968.3, ("efficientnet_b0", "u280"): 6377.6,
    ("googlenet", "zcu102"): 221.4, ("googlenet", "kv260"): None, ("googlenet", "zcu104"): 147.6,
    ("googlenet", "u250"): 3543.1, ("googlenet", "u280"): 2989.5,
    ("squeezenet1_1", "zcu102"): 2029.1, ("squeezenet1_1", "kv260"): 591.7, ("squeezenet1_1", "zcu104"): 1369.7,
    ("squeezenet1_1", "u250"): 11019.3, ("squeezenet1_1", "u280"): 11019.3,
    ("regnety_400mf", "zcu102"): 337.3, ("regnety_400mf", "kv260"): None, ("regnety_400mf", "zcu104"): 271.4,
    ("regnety_400mf", "u250"): 11957.9, ("regnety_400mf", "u280"): 7971.9,
    ("vgg16", "zcu102"): 23.8, ("vgg16", "kv260"): None, ("vgg16", "zcu104"): 13.8,
    ("vgg16", "u250"): 186.8, ("vgg16", "u280"): 166.1,
}


def project(model: str, board_name: str) -> dict:
    """The planned engine's figures for one (model, board): `plan_engine` on the model's
    canonical graph (its stem in space-to-depth blocks), or ``refused`` with its reason."""
    board = load_board(board_name)
    graph, _ = measure(ZOO[model]())
    if stem_conv(graph) is not None:  # the host holds the input in blocks, as the dataflow plans do
        graph = space_to_depth_stem(graph)
    c = board.cores[0]
    onchip = (c.bram18 * 2304 + c.uram * 36864) * c.cap
    out = {"model": model, "board": board_name, "onchip": onchip, "dataflow": DATAFLOW_FPS.get((model, board_name), "-")}
    try:
        plan = plan_engine(graph, board)  # the fastest of 64-, 32- and 16-byte beats
    except (InfeasibleError, NotImplementedError) as e:
        return out | {"refused": str(e)}
    return out | {"plan": plan, "pe": plan.pe, "simd": plan.simd, "taps": plan.taps, "period": plan.period, "beat": plan.beat,
                  "fps": plan.fps, "cycles": plan.cycles, "by": plan.by_unit, "eff": plan.efficiency,
                  "approx": plan.approx, "in_buf": plan.in_buffer, "banded": sum(s.bands > 1 for s in plan.steps),
                  "bottleneck": plan.bottleneck}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    head = ("model", "board", "PE x SIMD", "beat, P", "engine fps (projected)", "MAC eff.", "conv / window / eltwise",
            "input buffer / on chip", "dataflow fps (stop 49)", "bottleneck (plan)")
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    for m in a.models.split(","):
        for b in a.boards.split(","):
            r = project(m, b)
            if "refused" in r:
                df = r["dataflow"]
                cells = (m, b, "-", "-", "refused: " + r["refused"], "-", "-", "-",
                         "refused" if df is None else (f"{df:,.1f}" if isinstance(df, float) else df), "-")
                print(("| " + " | ".join(cells) + " |") if a.markdown else "  ".join(cells), flush=True)
                continue
            tot = r["cycles"]
            split = " / ".join(f"{100 * r['by'][k] / tot:.0f}%" for k in ("conv", "window", "eltwise"))
            fits = f"{r['banded']} convs in bands" if r["banded"] else "whole maps"
            df = r["dataflow"]
            cells = (m, b, f"{r['pe']} x {r['simd']} (TAPS {r['taps']})", f"{r['beat']} B, {r['period']}",
                     f"{r['fps']:,.1f}" + (f" ({r['approx']} approx)" if r["approx"] else ""),
                     f"{r['eff']:.0%}", split,
                     f"{r['in_buf'] / 1024:,.0f} / {r['onchip'] / 1024:,.0f} KB {fits}",
                     "refused" if df is None else (f"{df:,.1f}" if isinstance(df, float) else df), r["bottleneck"])
            print(("| " + " | ".join(cells) + " |") if a.markdown else "  ".join(cells), flush=True)
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
