"""Thousands of random models through plan and gen (and some through csim); counts failures.

Uses the generator of tests/test_properties.py with plain seeded draws (no shrinking), so
every failing example is counted and printed with what reproduces it: the example seed,
board and strategy, and the model's one-line description.

    python bench/property_bench.py --examples 1000 --csim 20 [--start 0] [--keep FOLDER]

Example k uses ``SeededDraw(start + k)``; the board and strategy cycle with k. Exit code 1
when any example fails.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bbgrap_hls.search import STRATEGIES  # noqa: E402
from tests.test_properties import BOARDS, SeededDraw, check_example, random_model  # noqa: E402

CSIM_BOARDS = ("u250", "vu9p-quad", "2x-u250", "zcu102")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=1000, help="examples through plan and gen")
    ap.add_argument("--csim", type=int, default=20, help="of which the first N also run csim")
    ap.add_argument("--start", type=int, default=0, help="first example seed")
    ap.add_argument("--keep", metavar="FOLDER", help="keep failing examples' folders here")
    args = ap.parse_args(argv)
    failures: list[str] = []
    infeasible = 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bbgrap-prop-") as tmp:
        for k in range(args.examples):
            seed = args.start + k
            csim = k < args.csim
            board = CSIM_BOARDS[k % len(CSIM_BOARDS)] if csim else BOARDS[k % len(BOARDS)]
            strategy = STRATEGIES[(k // len(BOARDS)) % len(STRATEGIES)]
            draw = SeededDraw(seed)
            model, desc = random_model(draw, max_blocks=3, max_hw=6, max_c=4) if csim else random_model(draw)
            folder = Path(args.keep or tmp) / f"ex{seed}"
            try:
                res = check_example(model, board, strategy, folder, csim=csim, seed=seed)
                infeasible += bool(res.get("infeasible"))
                shutil.rmtree(folder, ignore_errors=True)  # keep only failing examples
            except Exception as e:  # every failure is counted and described, not raised
                msg = str(e).splitlines()[0] if str(e) else ""
                failures.append(f"seed {seed} board {board} strategy {strategy} csim {csim}: "
                                f"{type(e).__name__}: {msg[:300]}\n    model: {desc}")
                if "--debug" in sys.argv:
                    traceback.print_exc()
            if (k + 1) % 100 == 0:
                print(f"  {k + 1} examples, {len(failures)} failures, {time.perf_counter() - t0:.0f} s", flush=True)
    for f in failures:
        print("FAIL", f)
    print(f"examples {args.examples} (csim {min(args.csim, args.examples)}), infeasible on pynq-z2 "
          f"{infeasible}, failures {len(failures)}, {time.perf_counter() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
