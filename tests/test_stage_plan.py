"""The planner's DDR frame stages (docs/cost-model.md, "DDR frame stage"): the closed-form
bounds the tables use hold against the module's cycle model, a block whose producer holds no
frame takes one input slot only behind a stage, the plan's staged blocks are costed by the
exact model, and ``ddr_stages=False`` (``--no-ddr-stages``) plans without them."""

from __future__ import annotations

import random

import pytest

from bbgrap_hls.api import compile
from bbgrap_hls.model import block_cost
from bbgrap_hls.model.stage import built_stage, stage_bound
from bbgrap_hls.search.problem import offchip_memory
from tests import models
from tests.test_sim_offchip import board_yaml, pair_cnn


@pytest.mark.parametrize("seed", range(3))
def test_the_tables_bounds_hold(seed):
    """`stage_bound` (the tables' closed forms) is at or above `built_stage` (the module's
    cycles, equal to the RTL: tests/test_rtl_stage.py) in ii, deliver and latency, with the same
    resources and traffic, over frames, lane counts, memory rates and latencies."""
    rng = random.Random(seed)
    for _ in range(12):
        frame = rng.choice([1, 2, 7, 17, 64, 65, 333, 784, 2048, 4100])
        lanes = rng.choice([1, 3, 4, 5, 8, 16, 24, 64, 128])
        rate = rng.choice([None, 2.0, 4.0, 12.8, 16.0, 64.0])
        latency = rng.choice([0, 1, 20, 50, 100])
        e, b = built_stage(frame, lanes, rate, latency), stage_bound(frame, lanes, rate, latency)
        case = (frame, lanes, rate, latency, e, b)
        assert e.ii <= b.ii and e.deliver <= b.deliver and e.latency <= b.latency, case
        assert (e.bram18, e.lut, e.bytes_per_frame) == (b.bram18, b.lut, b.bytes_per_frame), case


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("stageplan")
    model = models.save(pair_cnn(), d / "pair.onnx")
    (d / "board.yaml").write_text(board_yaml(1, 16, 32, 12000))
    return str(model), str(d / "board.yaml")


def test_a_stage_lets_a_block_after_the_graph_input_take_one_slot(pair):
    """On 16 BRAM18 both convs of `pair_cnn` need one input slot to fit at pe 1, simd 8. The
    first reads the graph input and the second a producer the planner may keep on its row;
    with stages both take one, each behind its own stage; without, the first keeps two slots
    at half the lanes and the design is twice as slow."""
    model, board = pair
    lean = {"short_rings": False, "one_output_slot": False}  # (a full core would plan lean buffers too)
    staged = compile(model, board, offchip_weights=True, padded_folds=False, row_bands=False, **lean).plan
    plain = compile(model, board, offchip_weights=True, padded_folds=False, row_bands=False, ddr_stages=False,
                    **lean).plan
    convs = [n for n in staged.nodes if n.op == "Conv"]
    assert [(n.weights, n.in_slots, n.in_stage) for n in convs] == [("ddr", 1, True)] * 2
    assert not any(n.in_stage for n in plain.nodes)
    assert staged.ii_cycles < 0.6 * plain.ii_cycles, (staged.ii_cycles, plain.ii_cycles)
    assert staged.optimizer["ddr_stages"] and not plain.optimizer["ddr_stages"]


def test_a_staged_block_is_costed_by_the_module_model(pair):
    """The plan's staged node costs what `block_cost(..., stage=True)` says (the stage's exact
    cycles, its LUTRAM FIFOs and AXI control, two frames of traffic a frame), not the tables'
    bound."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.model import node_geometry

    model, board = pair
    design = compile(model, board, offchip_weights=True, padded_folds=False, row_bands=False)
    plan, g = design.plan, design.graph
    mem = offchip_memory(load_board(board))
    for n in (n for n in plan.nodes if n.in_stage):
        geo = node_geometry(g.node(n.name), g)
        exact = block_cost("conv", geo, n.pe, n.simd, ddr=True, memory=mem, in_slots=1, stage=True)
        bound = block_cost("conv", geo, n.pe, n.simd, ddr=True, memory=mem, in_slots=1, stage=True,
                           stage_bound=True)
        plain = block_cost("conv", geo, n.pe, n.simd, ddr=True, memory=mem, in_slots=1)
        assert (n.ii_cycles, n.lut, n.offchip_bytes_per_frame) == (exact.ii, exact.lut, exact.offchip_bytes)
        assert exact.in_stage and exact.ii <= bound.ii
        assert exact.offchip_bytes == plain.offchip_bytes + 2 * geo.h * geo.w * geo.c // n.simd * 8
        assert exact.ii > plain.ii  # the frame read back from memory, not from a FIFO beat a cycle


def test_rtl_kernels_refuse_a_stage_and_name_the_way_out(pair, tmp_path, capsys):
    """`--kernels rtl` does not wire a stage's read-write master to a kernel argument: gen
    refuses the design naming the options that avoid it, and plans without stages on request."""
    from bbgrap_hls.cli import main

    model, board = pair
    args = ["gen", model, "--board", board, "--offchip-weights", "--no-padded-folds", "--no-row-bands", "--kernels", "rtl",
            "--force"]
    assert main([*args, "-o", str(tmp_path / "a")]) != 0
    assert "--no-ddr-stages" in capsys.readouterr().err
    assert main([*args, "--no-ddr-stages", "-o", str(tmp_path / "b")]) == 0
