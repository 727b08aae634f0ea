"""bench/engine_levers.py --quick: the estimate runs on the bundled example and its lines parse."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_engine_levers_quick():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "engine_levers.py"), "--quick"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    m = re.search(r"planned ([\d.]+) fps \(\d+x\d+, ([\d.]+) from the steps\); batched weights B=2: ([\d.]+) "
                  r"B=4: ([\d.]+) B=8: ([\d.]+); best split \((\d+), (\d+), (\d+)\) \(today \((\d+), \d+, \d+\)\): "
                  r"([\d.]+)", line)
    assert m, line
    planned, steps, b2, b4, b8 = (float(m.group(i)) for i in range(1, 6))
    assert steps == planned  # the planned steps add up to the plan's frame
    assert planned <= b2 and planned <= b4 and planned <= b8  # shared weights never cost cycles here
    assert float(m.group(10)) >= planned  # today's split is one of the splits tried
    built = re.search(r"built: ([\d.]+) fps at (\d+) frame\(s\) a start", line)
    assert built and float(built.group(1)) >= planned  # the planner batches only when it is faster
    pool = re.search(r"pooled share: ([\d.]+), B=4: ([\d.]+)", line)
    assert pool and planned <= float(pool.group(1)) <= float(pool.group(2))  # a pool never slows a step
