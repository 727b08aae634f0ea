"""bench/density_bench.py on ResNet-8 (the README's model): the issue-13 row is printed and
its MACs per DSP per cycle agree with the plan's own figures."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import density_bench  # noqa: E402


def test_density_row_of_resnet8():
    r = density_bench.row("resnet8", "u250")
    assert r["ii"] > 0 and r["fps"] == r["fps"]  # a plan, not NaN
    # at most two MACs per DSP per cycle, plus the LUT lanes' share: never above what packing allows
    assert 0 < r["macs_per_dsp"] <= 2 + r["lut_lanes"] / max(1, r["packed_lanes"])
    assert r["kind"] == "ii" and r["met"] == (r["ii"] <= 800)
    assert 0 < r["fraction"] <= 1


def test_density_bench_prints_a_table(capsys):
    assert density_bench.main(["--models", "resnet8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| model |") and out[2].startswith("| resnet8 | u250 |")
