"""Skip FIFOs in board memory on the planner's side (option ``ddr_fifos``, ``--ddr-fifos``;
`search.fifo_memory.fifos_to_ddr`; docs/cost-model.md, "Skip FIFOs in board memory").

`tests.test_sim_offchip.pair_res` (two 3x3 convs of 64 channels on 8x8 with the input added
back) on one core of 20 BRAM18: its skip FIFO holds the input for four frames while the convs
(off chip, behind DDR frame stages) compute, and with it on chip no folding fits. With
``ddr_fifos`` the FIFO goes to a ring of frame regions in the core's board memory: the plan
fits, its bandwidth and traffic charged. ``gen`` builds it as ``bb::ddr_fifo`` (the kernel is
hw/hls/ddr_fifo.h, tests/test_ddr_fifo_csim.py; the generated design: tests/test_ddr_fifo_gen.py)."""

from __future__ import annotations

import json
import math
import re

import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.cli import main
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model.stage import STAGE_ODEPTH, STAGE_WDEPTH, period_of, stage_beat_bytes, stage_bound
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import make_plan
from bbgrap_hls.search.fifo_memory import DDR_FIFO_MARGIN
from bbgrap_hls.search.problem import BW_CYCLES, offchip_memory
from tests import models
from tests.test_sim_offchip import board_yaml, pair_res

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddrfifo")
    model = models.save(pair_res(), d / "m.onnx")
    (d / "board.yaml").write_text(board_yaml(1, 20, 32, 12000))
    return model, d / "board.yaml"


def _plan(case, **kw):
    model, board = case
    return make_plan(canonicalize(load_model(model)), load_board(str(board)), baselines=False,
                     offchip_weights=True, padded_folds=False, **kw)


def test_the_skip_fifo_goes_to_board_memory_and_the_plan_fits(case):
    with pytest.raises(InfeasibleError, match="bram18"):
        _plan(case, ddr_fifos=False)
    plan = _plan(case, ddr_fifos=True)
    assert plan.optimizer["ddr_fifos"] is True
    core = plan.cores[0]
    assert core.bram18 <= core.bram18_limit and core.bw <= core.bw_limit
    fifos = [c for c in plan.channels if c.kind == "ddr_fifo"]
    assert len(fifos) == 1
    f = fifos[0]
    assert (f.src, f.bram18, f.uram) == ("@input", 0, 0)
    board = load_board(str(case[1]))
    rate, latency, _ = offchip_memory(board)
    frame = f.bits_per_frame // 8 // f.width_lanes
    # the rule: the reader asks for a frame's first beat no sooner than the memory gives it back
    assert f.depth >= math.ceil(frame * period_of(stage_beat_bytes(f.width_lanes), rate)) + 2 * latency \
        + DDR_FIFO_MARGIN
    # the ring holds every frame in flight (the lag and the stage's own FIFOs) and one more
    assert f.regions == max(3, -(-(f.depth + STAGE_WDEPTH + STAGE_ODEPTH) // frame) + 1)
    # its traffic (a frame written and read) and bandwidth at the core's ii are charged
    st = stage_bound(frame, f.width_lanes, rate, latency)
    off_blocks = sum(n.offchip_bytes_per_frame for n in plan.nodes if n.core == core.id)
    assert core.offchip_bytes_per_frame == off_blocks + st.bytes_per_frame
    assert core.bw >= -(-BW_CYCLES * st.bytes_per_frame // plan.ii_cycles)
    assert st.ii <= plan.ii_cycles and st.deliver <= plan.ii_cycles


def test_it_only_moves_fifos_where_the_core_is_short(case, tmp_path):
    """On 64 BRAM18 nothing is short: the same plan with and without the option (on 28 the
    option already finds a faster one, 294,912 cycles against 295,845)."""
    model, _ = case
    (tmp_path / "b.yaml").write_text(board_yaml(1, 64, 32, 12000))
    g, b = canonicalize(load_model(model)), load_board(str(tmp_path / "b.yaml"))
    kw = dict(baselines=False, offchip_weights=True, padded_folds=False)
    on, off = make_plan(g, b, **kw), make_plan(g, b, ddr_fifos=False, **kw)  # (on by default)
    assert on.ii_cycles == off.ii_cycles
    assert not [c for c in on.channels if c.kind == "ddr_fifo"]


def test_plan_json_and_table_name_it_and_gen_builds_it(case, tmp_path, capsys):
    model, board = case
    assert main(["plan", model, "--board", str(board), "--offchip-weights", "--no-padded-folds", "--ddr-fifos",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    fifo = [c for c in got["channels"] if c["kind"] == "ddr_fifo"]
    assert len(fifo) == 1 and fifo[0]["regions"] >= 3
    # on by default; --no-ddr-fifos refuses the board (exit 3, BRAM18 short)
    assert main(["plan", model, "--board", str(board), "--offchip-weights", "--no-padded-folds"]) == 0
    assert "FIFOs in board memory: @input -> add_" in capsys.readouterr().out
    assert main(["plan", model, "--board", str(board), "--offchip-weights", "--no-padded-folds", "--no-ddr-fifos"]) == 3
    assert "bram18" in capsys.readouterr().err.lower()
    out = tmp_path / "out"
    assert main(["gen", model, "--board", str(board), "-o", str(out), "--offchip-weights", "--no-padded-folds",
                 "--ddr-fifos"]) == 0
    cpp = (out / "hls" / "core0.cpp").read_text()
    assert f"REGIONS = {fifo[0]['regions']};" in cpp and len(re.findall(r"bb::ddr_fifo<F_\w+>\(", cpp)) == 1
