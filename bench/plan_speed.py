"""Planning time against issue 12's targets (as `bbgrap-hls plan` plans: `make_plan`,
throughput, no baselines, inside `search.arch.plan_arch` at ``--arch auto``, so the layer
engine's plan is counted where the dataflow plan leaves it a chance).

Each case plans in a fresh process (no table cache carried over), ``--runs`` times; the
script prints the least and the median wall time, and their ratio to the target (under 1:
met). Cases:

- DenseNet-121 (the light model zoo's ONNX, `plan_bench.densenet121`) on u250 with off-chip
  weights allowed (target 10 s) and on chip only;
- ResNet-50 (`zoo.resnet50`, torchvision shapes) on 2x-u250 with off-chip weights allowed
  (target 30 s) and on chip only.

``--jobs 1`` plans in one process (``BBGRAP_HLS_PLAN_JOBS=1``: the problem without DSP
packing is not planned in a second process, `bbgrap_hls.search.parallel`).

    python bench/plan_speed.py [--runs 3] [--jobs 1] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    # name: (model, board, offchip_weights, target seconds or None)
    "densenet121-u250-offchip": ("densenet121", "u250", True, 10.0),
    "densenet121-u250-onchip": ("densenet121", "u250", False, None),
    "resnet50-2x-u250-offchip": ("resnet50", "2x-u250", True, 30.0),
    "resnet50-2x-u250-onchip": ("resnet50", "2x-u250", False, None),
}
QUICK = ("densenet121-u250-offchip",)

_CHILD = """
import json, sys, time
sys.path[:0] = [{root!r}, {bench!r}]
from bbgrap_hls.board import load_board
from bbgrap_hls.search import make_plan
from bbgrap_hls.search.arch import plan_arch
model, board, offchip = {model!r}, {board!r}, {offchip!r}
if model == "densenet121":
    import plan_bench
    g = plan_bench.canonical(plan_bench.densenet121())
else:
    import zoo
    g = zoo.canonical(getattr(zoo, model)())
b = load_board(board)
t = time.perf_counter()
p = plan_arch(g, b, "auto", lambda: make_plan(g, b, baselines=False, offchip_weights=offchip))
print(json.dumps(dict(seconds=time.perf_counter() - t, ii=p.ii_cycles, fps=p.fps, arch=p.architecture)))
"""


def run_case(name: str, jobs: int | None) -> dict:
    model, board, offchip, _ = CASES[name]
    env = dict(os.environ)
    if jobs == 1:
        env["BBGRAP_HLS_PLAN_JOBS"] = "1"
    code = _CHILD.format(root=str(ROOT), bench=str(ROOT / "bench"), model=model, board=board, offchip=offchip)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None, help="1: plan in one process")
    ap.add_argument("--quick", action="store_true", help="DenseNet-121 with off-chip weights only")
    ap.add_argument("--cases", default=None, help=f"comma-separated, of: {', '.join(CASES)}")
    args = ap.parse_args(argv)
    names = args.cases.split(",") if args.cases else list(QUICK if args.quick else CASES)
    print(f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores, jobs {args.jobs or 'auto'}")
    print(f"{'case':<28} {'least':>7} {'median':>7} {'target':>7} {'least/target':>13}  plan")
    for name in names:
        got = [run_case(name, args.jobs) for _ in range(args.runs)]
        secs = [g["seconds"] for g in got]
        target = CASES[name][3]
        least, med = min(secs), statistics.median(secs)
        ratio = f"{least / target:.2f}" if target else "-"
        print(f"{name:<28} {least:6.1f}s {med:6.1f}s {(f'{target:.0f}s' if target else '-'):>7} {ratio:>13}  "
              f"{got[0]['arch']}, ii {got[0]['ii']:,}, {got[0]['fps']:,.1f} fps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
