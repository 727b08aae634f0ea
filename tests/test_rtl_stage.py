"""The DDR frame stage (`hw/rtl/ddr_stage.sv`) in Verilator under cocotb against a simulated board
memory (`bbgrap_hls.rtlsim.axi_mem`: `AxiWriteMemory` + `AxiReadMemory` on one ``bytearray``), and
its cost model (`bbgrap_hls.model.stage`).

Each case builds once into ``build/sim/ddr_stage-<hash>`` (`sim.runner.run_module`) and runs three
modes (`sim/test_ddr_stage.py`): ``stream`` (every frame exact; ii and latency against
`ddr_stage`), ``deliver`` (a consumer pausing between frames: first to last beat of a prefetched
frame against ``deliver``) and ``stall`` (idle input, output back-pressure: every frame's first and
last beat in and out against `stage.simulate` with the same patterns).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the sim/ testbench package lives next to tests/

from bbgrap_hls.model import stage  # noqa: E402
from sim import cases, expect  # noqa: E402

SLOW = {"lanes5_frac", "latency100"}


@pytest.mark.sim
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else [])
                                  for n in cases.STAGE_PARAMS])
def test_ddr_stage_module(name: str) -> None:
    pytest.importorskip("cocotb")
    from sim.runner import run_module

    p = cases.STAGE_PARAMS[name]
    run = run_module("ddr_stage", p)
    assert run.tests == 3 and run.failed == 0, f"{name}: cocotb failed (see {run.folder}/test.log)"
    t, cost = run.timing, expect.stage(p)
    assert t is not None and set(t) == {"stream", "deliver", "stall"}, f"{name}: no timing (see {run.folder})"
    # ii: the mean interval (frames 1..5); the model rounds it up (two regions alternate a
    # short and a long interval: `fast` measures 40, 81, 40, 81 for 60.5, the model says 61)
    assert math.ceil(t["stream"]["ii"] - 1e-9) == cost.ii, f"{name}: ii {t['stream']['ii']}, model {cost.ii}"
    assert t["stream"]["latency"] == cost.latency
    assert t["deliver"]["deliver"][2] == cost.deliver
    db = p["DATA_W"] // 8
    model = stage.simulate(p["FRAME_BEATS"], db, stage.period_of(db, p["rate"]), p["lat"], p["BURST"], p["REGIONS"],
                           2 * p["BURST"], 2 * p["BURST"] + 128, p["frames"])
    assert [tuple(v) for v in t["stream"]["out"]] == model.outputs, f"{name}: frame ends differ from the model"


def test_stage_beat_bytes() -> None:
    assert [stage.stage_beat_bytes(n) for n in (1, 3, 4, 5, 8, 9, 24, 64, 65, 128)] == \
        [4, 4, 4, 8, 8, 16, 32, 64, 128, 128]
    for bad in (0, 129, 256):
        with pytest.raises(ValueError):
            stage.stage_beat_bytes(bad)
    assert stage.stage_region_bytes(150, 24) == 8192 and stage.stage_region_bytes(128, 24) == 4096


def test_burst_cuts() -> None:
    assert stage.burst_cuts(40, 4, 16) == [16, 16, 8]
    assert stage.burst_cuts(150, 32, 48) == [48, 48, 32, 22]   # 4 KB at beat 128
    assert stage.burst_cuts(1100, 4, 256) == [256] * 4 + [76]  # 4 KB at beat 1024, then 76
    assert sum(stage.burst_cuts(5000, 128, 64)) == 5000


def test_ddr_stage_edges() -> None:
    fast = stage.ddr_stage(40, 4, None, 20, burst=16)
    assert fast.deliver == 40 and fast.bytes_per_frame == 2 * 40 * 4
    assert fast.ii == 61 and fast.latency == 139  # the `fast` module case, measured
    # a slow memory: a frame's reads at 2 cycles a beat; the prefetched output FIFO goes first
    slow = stage.ddr_stage(600, 8, 4, 12, burst=8)
    assert 600 < slow.deliver < 2 * 600 and slow.ii >= 2 * 600
    # a long latency behind a too-small output FIFO shows in deliver, not behind the default one
    assert stage.ddr_stage(200, 4, None, 100, burst=16).deliver == 200
    assert stage.ddr_stage(200, 4, None, 100, burst=16, odepth=32).deliver > 200
    # more regions: the ring no longer binds at this latency
    assert stage.ddr_stage(40, 4, None, 20, burst=16, regions=4).ii == 40
    assert stage.ddr_stage(40, 4, None, 0, burst=16) == stage.ddr_stage(40, 4, None, 1, burst=16)
    assert stage.ddr_stage(1, 4, None, 20).deliver == 1
    for bad in [dict(frame_beats=0), dict(burst=0), dict(burst=257), dict(regions=0), dict(latency=-1),
                dict(lanes=200), dict(wdepth=4), dict(rate=-1.0)]:
        kw = dict(frame_beats=40, lanes=4, rate=None, latency=20, burst=16) | bad
        with pytest.raises(ValueError):
            stage.ddr_stage(**kw)


@pytest.mark.parametrize(("db", "period", "latency", "burst", "frame"), [
    (128, 1, 10, 8, 1000), (128, 2, 20, 16, 1300), (64, 1.5, 15, 16, 1500), (32, 1, 40, 32, 2100)])
def test_long_frames_extrapolate_exactly(monkeypatch, db, period, latency, burst, frame) -> None:
    """Frames past `SIM_BEATS` come from two shorter frames with the same burst cuts, page by page
    (`stage._cycles`): equal to stepping the whole frame (here with the threshold lowered)."""
    args = (db, period, latency, burst, 2, 2 * burst, 2 * burst + 128)
    want = stage.exact_cycles(frame, *args)
    monkeypatch.setattr(stage, "SIM_BEATS", 0)
    assert stage._cycles(frame, *args) == want
