"""Benchmark: the layer engine on a full-size network, from plan to RTL twin.

Usage: ``python bench/engine_fullsize.py [--board kv260] [--frames 1] [--max-batch 4] [--no-sim]``
(about 3 minutes on 2 cores for ResNet-18 on kv260; the RTL simulation is most of it). A
batched plan (docs/engine.md, "Batched frames") simulates whole starts: ``--frames`` rounded up.

The full-size ResNet-18 (``tests/models.resnet18``, 224 x 224, seeded random weights) as a
layer engine (``--arch engine``; docs/engine.md):

1. ``bbgrap-hls gen``: the engine plan's frame cycles, fps and engine size;
2. ``bbgrap-hls csim``: the Vitis HLS kernel in g++ on two frames, bit-exact;
3. ``bbgrap-hls sim``: the RTL top in Verilator on ``--frames`` frames, bit-exact, and the
   measured frame cycles over the plan's (the ratio the tests check at small sizes).

Each line prints its figure and ``ok`` or ``FAILED``; the exit status is the number of failed
checks. A ratio off by more than 2 % fails (issue 12's bound for the twin's ii).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bbgrap_hls.cli import main as cli  # noqa: E402
from bbgrap_hls.commands.csim import csim_design  # noqa: E402
from bbgrap_hls.commands.sim import sim_design  # noqa: E402
from tests import models  # noqa: E402

TOLERANCE = 0.02


def _line(name: str, ok: bool, text: str, t0: float) -> bool:
    print(f"{name:<10} {'ok' if ok else 'FAILED':<7} {text} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return ok


def run(board: str, frames: int, sim: bool, max_batch: int = 4) -> int:
    failed = 0
    with tempfile.TemporaryDirectory(prefix="bbgrap-engine-fullsize-") as d:
        model = models.save(models.resnet18(), f"{d}/resnet18.onnx")
        out = Path(d) / "out"
        t0 = time.perf_counter()
        ok = cli(["gen", model, "--board", board, "--arch", "engine", "--max-batch", str(max_batch), "-o", str(out),
                  "--quiet"]) == 0
        plan = json.loads((out / "plan.json").read_text()) if ok else {}
        failed += not _line("gen", ok, f"ResNet-18 on {board}: {plan.get('cycles', 0):,} cycles a start of "
                            f"{plan.get('frames', 1)} frame(s), "
                            f"{plan.get('fps', 0):,.1f} fps, conv unit {plan.get('pe')} x {plan.get('simd')}, "
                            f"{plan.get('beat')}-byte beats, input blocks {plan.get('input_blocks')}, "
                            f"patches {plan.get('input_patches')}", t0)
        if not ok:
            return failed
        t0 = time.perf_counter()
        res = csim_design(out)
        failed += not _line("csim", res.match, res.message, t0)
        if sim:
            t0 = time.perf_counter()
            r = sim_design(out, frames=frames)
            ratio = r.measured_ii_cycles / plan["cycles"] if r.measured_ii_cycles else float("nan")
            ok = r.match and abs(ratio - 1) <= TOLERANCE
            failed += not _line("sim", ok, f"{r.message}; measured / plan {ratio:.4f}; build {r.build_seconds:.1f} s, "
                                f"run {r.run_seconds:.1f} s", t0)
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="kv260")
    ap.add_argument("--frames", type=int, default=1)
    ap.add_argument("--no-sim", action="store_true", help="gen and csim only")
    ap.add_argument("--max-batch", type=int, default=4, help="gen's --max-batch (1: one frame a call)")
    args = ap.parse_args(argv)
    return run(args.board, args.frames, not args.no_sim, args.max_batch)


if __name__ == "__main__":
    sys.exit(main())
