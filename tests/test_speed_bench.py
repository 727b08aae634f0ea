"""bench/speed_bench.py --quick: gen, csim and sim of ResNet-8 on u250 are timed and the sim is bit-exact.

Whether csim matches is test_csim's business; here only that the bench measured and reported it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.csim
@pytest.mark.sim
def test_speed_bench_quick():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "speed_bench.py"), "--quick", "--json"],
                         capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert [r["model"] for r in rows] == ["resnet8"]
    r = rows[0]
    assert r["gen_s"] > 0 and "csim_match" in r
    assert r["sim_frames"] == 2 and r["sim_match"] is True
    assert r["sim_cycles"] > 0 and r["sim_cycles_per_s"] > 0 and r["sim_cycles_per_s_with_startup"] > 0
    # the run stops at the last output frame (checked every <= 256 cycles), not a watchdog window later
    assert r["sim_latency"] + r["sim_ii"] <= r["sim_cycles"] <= r["sim_latency"] + r["sim_ii"] + 256 + 64, r
    assert all(r[k] >= 0 for k in ("gen_load", "csim_load", "sim_load"))
    assert "cycles/s" in out.stdout
