"""bench/memory_bench.py --quick: the issue-12 table has its columns and at least one feasible row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_memory_bench_quick_markdown():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "memory_bench.py"), "--quick", "--markdown"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = next(ln for ln in lines if ln.startswith("| model |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    for c in ("model", "board", "feasible", "fps", "fps on-chip only", "compute", "memory", "memory all-weights",
              "input link", "roofline", "binds", "fps/roofline", "DPU fps"):
        assert c in cols, c
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines
            if ln.startswith("| ") and not ln.startswith("|---")]
    rows = [r for r in rows if r != cols]
    assert len(rows) == 2  # one model on two boards
    feasible = [dict(zip(cols, r, strict=True)) for r in rows if r[cols.index("feasible")] == "yes"]
    assert feasible, out.stdout
    for r in feasible:
        assert float(r["fps"].replace(",", "")) > 0
        assert r["binds"] in ("compute", "memory", "input link")
        assert r["fps/roofline"].endswith("%")
    # a DPU figure in the table always comes with its source below it
    assert any(r[cols.index("DPU fps")] != "-" for r in rows)
    assert "Vitis-AI" in out.stdout and "CRASH" not in out.stdout
