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
from types import SimpleNamespace

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.cli import main
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model import in_lanes
from bbgrap_hls.model.links import fifo_cost, fifo_in_uram
from bbgrap_hls.model.memory import memory, uram_memory
from bbgrap_hls.model.stage import (
    DDR_FIFO_MARGIN,
    STAGE_ODEPTH,
    STAGE_WDEPTH,
    period_of,
    stage_beat_bytes,
    stage_bound,
)
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import build_problem, make_plan
from bbgrap_hls.search.couplings import (
    FRAME_BITS_PER_BRAM18,
    URAM_BEATS,
    Lag,
    ddr_lanes,
    lag_prices,
    lags,
    uram_per_bit,
)
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.ilp import _items
from bbgrap_hls.search.problem import BW_CYCLES, RES, Table, offchip_memory
from bbgrap_hls.search.program import fit_rows
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
    # (two output slots: with one allowed, `make_plan`'s retry fits the FIFO on chip)
    return make_plan(canonicalize(load_model(model)), load_board(str(board)), baselines=False,
                     offchip_weights=True, padded_folds=False, row_bands=False, **{"out_slot": False, **kw})


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
    kw = dict(baselines=False, offchip_weights=True, padded_folds=False, row_bands=False)
    on, off = make_plan(g, b, **kw), make_plan(g, b, ddr_fifos=False, **kw)  # (on by default)
    assert on.ii_cycles == off.ii_cycles
    assert not [c for c in on.channels if c.kind == "ddr_fifo"]


def test_plan_json_and_table_name_it_and_gen_builds_it(case, tmp_path, capsys):
    model, board = case
    assert main(["plan", model, "--board", str(board), "--offchip-weights", "--no-padded-folds", "--no-row-bands", "--no-one-output-slot", "--ddr-fifos",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    fifo = [c for c in got["channels"] if c["kind"] == "ddr_fifo"]
    assert len(fifo) == 1 and fifo[0]["regions"] >= 3
    # on by default; --no-ddr-fifos refuses the board (exit 3, BRAM18 short)
    assert main(["plan", model, "--board", str(board), "--offchip-weights", "--no-padded-folds", "--no-row-bands", "--no-one-output-slot"]) == 0
    assert "FIFOs in board memory: @input -> add_" in capsys.readouterr().out
    assert main(["plan", model, "--board", str(board), "--offchip-weights", "--no-padded-folds", "--no-row-bands", "--no-one-output-slot", "--no-ddr-fifos"]) == 3
    assert "bram18" in capsys.readouterr().err.lower()
    out = tmp_path / "out"
    assert main(["gen", model, "--board", str(board), "-o", str(out), "--offchip-weights", "--no-padded-folds", "--no-row-bands", "--no-one-output-slot",
                 "--ddr-fifos"]) == 0
    cpp = (out / "hls" / "core0.cpp").read_text()
    assert f"REGIONS = {fifo[0]['regions']}, CHUNKS = 1;" in cpp and len(re.findall(r"bb::ddr_fifo<F_\w+>\(", cpp)) == 1


def test_lag_prices_follow_the_fifo_width_and_the_option():
    """`couplings.lag_prices`, what the integer program charges a frame of a reconvergent
    FIFO's lag: URAM by the FIFO's lanes (one lane holds 4,096 × 8 bits a URAM288, 8x an
    8-lane FIFO's price), BRAM18 never below `model.memory`'s, and a board-memory kind only
    with the option, charging the stage's bandwidth and LUTs and no BRAM18 or URAM."""
    for lanes in range(1, 131):  # whole columns deep: the price is exact for URAM, a bound for BRAM
        for depth in (URAM_BEATS, 3 * URAM_BEATS):
            bits = 8 * lanes * depth
            assert uram_memory(8 * lanes, depth).uram == pytest.approx(bits * uram_per_bit(lanes))
            if fifo_in_uram(lanes, depth):  # (what the build charges a FIFO it moves to URAM)
                assert fifo_cost(lanes, depth, uram=True).uram == uram_memory(8 * lanes, depth).uram
            assert memory(8 * lanes, depth).bram18 <= bits / FRAME_BITS_PER_BRAM18
    assert memory(8, 2 * URAM_BEATS).bram18 == 8 * 2 * URAM_BEATS / FRAME_BITS_PER_BRAM18  # one lane: exact
    prob = SimpleNamespace(offchip_memory=(8.0, 20, 64))
    bits, target = 8 * 56 * 56 * 64, 200_000
    bram, uram, lut, bw = (RES.index(r) for r in ("bram18", "uram", "lut", "bw"))
    one, eight = (lag_prices(prob, bits, {n}, True, None, target) for n in (1, 8))
    assert one.shape == (2, len(RES)) and one[1, uram] == pytest.approx(8 * eight[1, uram])
    assert one[0, bram] == eight[0, bram] == bits / FRAME_BITS_PER_BRAM18
    assert one[1, uram] == pytest.approx(bits / (4096 * 8))
    # the width unknown or one of several: the dearest
    assert lag_prices(prob, bits, None, True, None, target)[1, uram] == one[1, uram]
    assert lag_prices(prob, bits, {8, 10}, True, None, target)[1, uram] == pytest.approx(bits * 2 / (80 * 4096))
    assert len(lag_prices(prob, bits, {8}, False, None, target)) == 1  # no URAM on the core
    ddr = lag_prices(prob, bits, {8}, True, {8}, target)
    assert len(ddr) == 3 and ddr[2, bram] == ddr[2, uram] == 0
    rate, latency, _ = prob.offchip_memory
    st = stage_bound(bits // 8 // 8, 8, rate, latency)
    assert st.bytes_per_frame == 2 * bits // 8  # a frame written and read
    assert ddr[2, bw] == pytest.approx(BW_CYCLES * st.bytes_per_frame / target) and ddr[2, lut] == st.lut
    # one lane: a 4-byte beat a byte, 8 frames of bytes a frame of lag (a frame of 200,704
    # beats: the stage needs a slower target)
    assert lag_prices(prob, bits, {1, 8}, True, {1, 8}, 2 * target)[2, bw] == pytest.approx(
        BW_CYCLES * 8 * bits / 8 / (2 * target))
    # the lanes a stage takes: at most 128, the stage within the target
    assert ddr_lanes(prob, bits, {1, 8, 256}, target) == {8}
    assert ddr_lanes(prob, bits, {1, 8, 256}, 2 * target) == {1, 8}
    assert ddr_lanes(prob, bits, {8}, st.ii - 1) == set()
    assert ddr_lanes(SimpleNamespace(offchip_memory=None), bits, {8}, target) == set()


def test_a_gated_lag_kind_needs_one_of_its_rows():
    """`fit_rows` with a `Lag.gate`: the lag's frames go to a cheap kind (board memory) only
    with a producer row that allows it. The producer's row 0 (cheap, say 256 lanes) does not;
    with BRAM18 short the program takes row 1 (dearer, 8 lanes) to put the lag off chip.
    Without the gate, row 0 with the lag off chip."""
    def table(ii, res, ddr):
        n = len(ii)
        z = np.zeros(n, dtype=bool)
        return Table(pe=np.ones(n, np.int64), simd=np.ones(n, np.int64), uram=z, ii=np.asarray(ii, np.int64),
                     res=np.asarray(res, np.int64).reshape(n, len(RES)), mmv=np.ones(n, np.int64),
                     ddr=np.asarray(ddr, bool), lut=z, lutw=z, lutrq=z, padded=z)

    producer = table([10, 10], [[1, 0, 0, 10, 0], [1, 0, 0, 20, 0]], [False, False])
    offchip = table([10], [[0, 1, 0, 0, 5]], [True])
    per_frame = np.array([[0, 4, 0, 0, 0], [0, 0, 0, 1, 3]], dtype=float)  # BRAM18; board memory
    weights = [(1, np.array([2.0]))]
    limits = np.array([9, 8, 0, 100, 100])
    free = Lag(per_frame, weights)
    gated = Lag(per_frame, weights, {1: (0, np.array([False, True]))})
    kw = dict(lags=[free], prune=False)  # (row 1 is dominated: pruned, the gate could not have it)
    assert fit_rows([producer, offchip], limits, 10, **kw) == [0, 0]
    kw["lags"] = [gated]
    assert fit_rows([producer, offchip], limits, 10, **kw) == [1, 0]
    # row 1 over the LUTs, BRAM18 for the lag's 2 frames (8) and the off-chip row: row 0, the lag in BRAM18
    info = {}
    assert fit_rows([producer, offchip], np.array([9, 9, 0, 15, 100]), 10, info=info, **kw) == [0, 0]
    assert info["lag_use"][1] == pytest.approx(8) and info["lag_use"][4] == pytest.approx(0)
    # no allowed row among the producer's: the kind is closed
    kw["lags"] = [Lag(per_frame, weights, {1: (0, np.array([False, False]))})]
    assert fit_rows([producer, offchip], limits, 10, **kw) is None


def test_the_program_prices_the_skip_fifo_in_board_memory_only_with_the_option(case):
    """`couplings.lags` on the case's one core, both convs on off-chip rows: the skip FIFO
    from the input has a board-memory kind with ``ddr_fifos``, priced at the reader's input
    lanes, and none without."""
    model, board = case
    g, b = canonicalize(load_model(model)), load_board(str(board))
    got = {}
    for opt in (False, True):
        prob = build_problem(g, b, offchip_weights=True, padded_folds=False, ddr_fifos=opt)
        seg = Segmentation(core=[0] * prob.m, fold=[0] * prob.m, split={})
        items = _items(prob, seg)
        target = 294_912  # (the plan's ii with the option)
        got[opt] = lags(prob, items, list(range(len(items))), target)
    assert len(got[False]) == len(got[True]) == 1
    off, on = got[False][0].per_frame, got[True][0].per_frame
    assert len(off) == 1 and len(on) == 2  # BRAM18 (no URAM on the board), and board memory
    assert (on[0] == off[0]).all() and on[1, 1] == 0 and on[1, 4] > 0 and on[1, 3] > 0
    add = next(u for u in prob.units if len(u.producers) == 2)
    k = add.producers.index(-1)
    lanes = {in_lanes(add.kind, add.geom, int(pe), int(sd)) for pe, sd, ii in
             zip(add.table.pe, add.table.simd, add.table.ii, strict=True) if ii <= target}
    bits = prob.tensor_bits[add.in_tensors[k]]
    assert ddr_lanes(prob, bits, lanes, target) == lanes  # every width a stage takes: no gate
    assert not got[True][0].gate
    assert (on == lag_prices(prob, bits, lanes, False, lanes, target)).all()
